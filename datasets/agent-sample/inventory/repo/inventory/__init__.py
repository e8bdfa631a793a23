"""A tiny stock keeper."""

from .store import OutOfStock, Store

__all__ = ["OutOfStock", "Store"]
