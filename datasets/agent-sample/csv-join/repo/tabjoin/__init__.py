"""Join two CSV tables on a key column."""

from .join import left_join

__all__ = ["left_join"]
