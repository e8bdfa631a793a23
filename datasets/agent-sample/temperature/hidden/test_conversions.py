import unittest

from temperature import fahrenheit_to_celsius, kelvin_to_celsius


class TestBack(unittest.TestCase):
    def test_fahrenheit_to_celsius(self):
        self.assertAlmostEqual(fahrenheit_to_celsius(212), 100)
        self.assertAlmostEqual(fahrenheit_to_celsius(32), 0)
        self.assertAlmostEqual(fahrenheit_to_celsius(98.6), 37)

    def test_minus_forty_is_the_same(self):
        self.assertAlmostEqual(fahrenheit_to_celsius(-40), -40)


class TestKelvin(unittest.TestCase):
    def test_below_absolute_zero(self):
        with self.assertRaises(ValueError):
            kelvin_to_celsius(-0.5)


if __name__ == "__main__":
    unittest.main()
