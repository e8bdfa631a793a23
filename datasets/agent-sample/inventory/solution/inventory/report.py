"""Reports over a store."""


def value_report(store):
    """One line per item, 'sku: quantity x price = value', most valuable first."""
    rows = [(sku, qty, price, qty * price) for sku, qty, price in store.items()]
    rows.sort(key=lambda row: (-row[3], row[0]))
    return ["%s: %d x %.2f = %.2f" % row for row in rows]
