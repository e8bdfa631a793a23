import unittest

from inventory import Store


class TestStore(unittest.TestCase):
    def test_add_and_quantity(self):
        store = Store()
        store.add("apple", 3, 0.5)
        store.add("apple", 2, 0.6)
        self.assertEqual(store.quantity("apple"), 5)
        self.assertEqual(store.quantity("pear"), 0)

    def test_total_value(self):
        store = Store()
        store.add("apple", 4, 0.5)
        store.add("melon", 1, 3.0)
        self.assertAlmostEqual(store.total_value(), 5.0)

    def test_quantity_must_be_positive(self):
        with self.assertRaises(ValueError):
            Store().add("apple", 0, 1.0)


if __name__ == "__main__":
    unittest.main()
