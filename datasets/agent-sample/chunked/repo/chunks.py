"""Splitting sequences into chunks."""


def chunked(items, size):
    """Split `items` into lists of `size` elements; the last one may be shorter."""
    result = []
    for start in range(0, len(items) - size + 1, size):
        result.append(list(items[start:start + size]))
    return result
