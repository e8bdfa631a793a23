import unittest

from inventory import OutOfStock, Store
from inventory.report import value_report


class TestRemove(unittest.TestCase):
    def test_removing_too_many_raises_and_changes_nothing(self):
        store = Store()
        store.add("apple", 3, 0.5)
        with self.assertRaises(OutOfStock):
            store.remove("apple", 4)
        self.assertEqual(store.quantity("apple"), 3)
        store.remove("apple", 2)
        self.assertEqual(store.quantity("apple"), 1)

    def test_removing_an_unknown_item_raises(self):
        with self.assertRaises(OutOfStock):
            Store().remove("pear", 1)


class TestReport(unittest.TestCase):
    def test_sold_out_items_leave_the_report(self):
        store = Store()
        store.add("apple", 2, 1.0)
        store.add("melon", 1, 3.0)
        store.remove("apple", 2)
        self.assertEqual(value_report(store), ["melon: 1 x 3.00 = 3.00"])

    def test_highest_value_first_ties_by_sku(self):
        store = Store()
        store.add("apple", 10, 0.5)
        store.add("kiwi", 1, 5.0)
        store.add("melon", 2, 4.0)
        store.add("banana", 5, 1.0)
        self.assertEqual(
            value_report(store),
            [
                "melon: 2 x 4.00 = 8.00",
                "apple: 10 x 0.50 = 5.00",
                "banana: 5 x 1.00 = 5.00",
                "kiwi: 1 x 5.00 = 5.00",
            ],
        )


if __name__ == "__main__":
    unittest.main()
