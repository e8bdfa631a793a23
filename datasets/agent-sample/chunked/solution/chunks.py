"""Splitting sequences into chunks."""


def chunked(items, size):
    """Split `items` into lists of `size` elements; the last one may be shorter."""
    if size <= 0:
        raise ValueError("size must be positive, got %d" % size)
    return [list(items[start:start + size]) for start in range(0, len(items), size)]
