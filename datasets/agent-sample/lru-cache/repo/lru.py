"""A least-recently-used cache."""


class LRUCache:
    """A mapping of at most `capacity` entries that evicts the least recently used one."""

    def __init__(self, capacity):
        self.capacity = capacity
        self._data = {}

    def get(self, key, default=None):
        """The value for `key`, or `default`."""
        return self._data.get(key, default)

    def put(self, key, value):
        """Store `value` under `key`, evicting if the cache is over capacity."""
        self._data[key] = value
        if len(self._data) > self.capacity:
            newest = list(self._data)[-1]
            del self._data[newest]

    def __len__(self):
        return len(self._data)

    def __contains__(self, key):
        return key in self._data
