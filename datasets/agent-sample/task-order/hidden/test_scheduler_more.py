import unittest

from scheduler import CycleError, order


class TestOrder(unittest.TestCase):
    def test_smallest_valid_order(self):
        self.assertEqual(order({"b": [], "a": [], "c": ["b"]}), ["a", "b", "c"])

    def test_ties_are_broken_alphabetically_at_every_step(self):
        deps = {"deploy": ["test", "build"], "test": ["build"], "build": ["fetch"], "docs": [], "fetch": []}
        self.assertEqual(order(deps), ["docs", "fetch", "build", "test", "deploy"])


class TestCycles(unittest.TestCase):
    def test_two_task_cycle(self):
        with self.assertRaises(CycleError) as caught:
            order({"b": ["a"], "a": ["b"]})
        self.assertEqual(caught.exception.cycle, ["a", "b", "a"])

    def test_self_dependency(self):
        with self.assertRaises(CycleError) as caught:
            order({"ok": [], "t": ["t"]})
        self.assertEqual(caught.exception.cycle, ["t", "t"])

    def test_cycle_behind_a_chain_starts_at_its_first_task(self):
        deps = {"x": ["q"], "q": ["r"], "r": ["p"], "p": ["q"], "z": []}
        with self.assertRaises(CycleError) as caught:
            order(deps)
        self.assertEqual(caught.exception.cycle, ["p", "q", "r", "p"])


if __name__ == "__main__":
    unittest.main()
