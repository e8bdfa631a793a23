import unittest

from lru import LRUCache


class TestBasics(unittest.TestCase):
    def test_get_and_put_within_capacity(self):
        cache = LRUCache(2)
        cache.put("a", 1)
        cache.put("b", 2)
        self.assertEqual(cache.get("a"), 1)
        self.assertEqual(cache.get("b"), 2)
        self.assertEqual(len(cache), 2)
        self.assertIn("a", cache)

    def test_default_for_missing_keys(self):
        cache = LRUCache(1)
        self.assertIsNone(cache.get("x"))
        self.assertEqual(cache.get("x", 7), 7)


if __name__ == "__main__":
    unittest.main()
