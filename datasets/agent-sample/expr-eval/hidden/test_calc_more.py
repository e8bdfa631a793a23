import unittest

from calc import CalcError, evaluate


class TestUnary(unittest.TestCase):
    def test_unary_minus_and_plus(self):
        self.assertEqual(evaluate("-3"), -3)
        self.assertEqual(evaluate("2 * -3"), -6)
        self.assertEqual(evaluate("-(1 + 2)"), -3)
        self.assertEqual(evaluate("+4 - -1"), 5)

    def test_unary_binds_looser_than_power(self):
        self.assertEqual(evaluate("-2 ** 2"), -4)
        self.assertEqual(evaluate("(-2) ** 2"), 4)


class TestPower(unittest.TestCase):
    def test_power_is_right_associative(self):
        self.assertEqual(evaluate("2 ** 3 ** 2"), 512)

    def test_negative_exponent(self):
        self.assertEqual(evaluate("2 ** -1"), 0.5)
        self.assertEqual(evaluate("2 ** -1 ** 2"), 0.5)


class TestErrors(unittest.TestCase):
    def test_division_by_zero_is_a_calc_error(self):
        with self.assertRaises(CalcError):
            evaluate("1 / (2 - 2)")


if __name__ == "__main__":
    unittest.main()
