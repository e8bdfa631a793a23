"""A least-recently-used cache."""

from collections import OrderedDict


class LRUCache:
    """A mapping of at most `capacity` entries that evicts the least recently used one."""

    def __init__(self, capacity):
        if capacity < 1:
            raise ValueError("capacity must be at least 1, got %r" % (capacity,))
        self.capacity = capacity
        self._data = OrderedDict()

    def get(self, key, default=None):
        """The value for `key`, or `default`."""
        if key not in self._data:
            return default
        self._data.move_to_end(key)
        return self._data[key]

    def put(self, key, value):
        """Store `value` under `key`, evicting if the cache is over capacity."""
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.capacity:
            self._data.popitem(last=False)

    def __len__(self):
        return len(self._data)

    def __contains__(self, key):
        return key in self._data
