"""Stock levels and prices per SKU."""


class OutOfStock(Exception):
    """More of an item was removed than the store holds."""


class Store:
    """Quantities and unit prices, keyed by SKU."""

    def __init__(self):
        self._items = {}  # sku -> [quantity, unit_price]

    def add(self, sku, quantity, unit_price):
        """Add `quantity` items of `sku` at `unit_price` (the latest price wins)."""
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        entry = self._items.setdefault(sku, [0, unit_price])
        entry[0] += quantity
        entry[1] = unit_price

    def remove(self, sku, quantity):
        """Take `quantity` items of `sku` out of the store."""
        entry = self._items[sku]
        entry[0] -= quantity

    def quantity(self, sku):
        """How many of `sku` the store holds."""
        return self._items.get(sku, [0, 0])[0]

    def items(self):
        """(sku, quantity, unit_price) for every item held."""
        return [(sku, q, p) for sku, (q, p) in self._items.items()]

    def total_value(self):
        """The value of all stock."""
        return sum(q * p for q, p in self._items.values())
