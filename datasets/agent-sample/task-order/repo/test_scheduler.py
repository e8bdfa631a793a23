import unittest

from scheduler import order


class TestScheduler(unittest.TestCase):
    def test_chain(self):
        self.assertEqual(order({"c": ["b"], "b": ["a"], "a": []}), ["a", "b", "c"])

    def test_dependencies_only_named_as_such_are_included(self):
        self.assertEqual(order({"app": ["lib"]}), ["lib", "app"])


if __name__ == "__main__":
    unittest.main()
