import unittest

from roman import to_roman


class TestRoman(unittest.TestCase):
    def test_additive_numbers(self):
        self.assertEqual(to_roman(1), "I")
        self.assertEqual(to_roman(3), "III")
        self.assertEqual(to_roman(8), "VIII")
        self.assertEqual(to_roman(2023), "MMXXIII")

    def test_out_of_range(self):
        for bad in (0, -1, 4000):
            with self.assertRaises(ValueError):
                to_roman(bad)


if __name__ == "__main__":
    unittest.main()
