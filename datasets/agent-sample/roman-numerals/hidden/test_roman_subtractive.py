import unittest

from roman import to_roman


class TestSubtractive(unittest.TestCase):
    def test_four_and_nine(self):
        self.assertEqual(to_roman(4), "IV")
        self.assertEqual(to_roman(9), "IX")
        self.assertEqual(to_roman(14), "XIV")

    def test_tens(self):
        self.assertEqual(to_roman(40), "XL")
        self.assertEqual(to_roman(90), "XC")
        self.assertEqual(to_roman(49), "XLIX")

    def test_hundreds(self):
        self.assertEqual(to_roman(400), "CD")
        self.assertEqual(to_roman(900), "CM")
        self.assertEqual(to_roman(3999), "MMMCMXCIX")

    def test_years(self):
        self.assertEqual(to_roman(1994), "MCMXCIV")
        self.assertEqual(to_roman(2024), "MMXXIV")


if __name__ == "__main__":
    unittest.main()
