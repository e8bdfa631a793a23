import unittest

from calc import CalcError, evaluate


class TestCalc(unittest.TestCase):
    def test_precedence(self):
        self.assertEqual(evaluate("1 + 2 * 3"), 7)
        self.assertEqual(evaluate("2 * 3 ** 2"), 18)
        self.assertEqual(evaluate("10 - 4 - 3"), 3)

    def test_parentheses_and_division(self):
        self.assertEqual(evaluate("(1 + 2) * 3"), 9)
        self.assertEqual(evaluate("7 / 2"), 3.5)
        self.assertEqual(evaluate(" 1.5 + .5 "), 2)

    def test_malformed_input(self):
        for bad in ("", "1 +", "2 3", "1 $ 2", "(1 + 2", "*"):
            with self.assertRaises(CalcError, msg=bad):
                evaluate(bad)


if __name__ == "__main__":
    unittest.main()
