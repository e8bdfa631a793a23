import unittest

from temperature import celsius_to_fahrenheit, kelvin_to_celsius


class TestTemperature(unittest.TestCase):
    def test_celsius_to_fahrenheit(self):
        self.assertAlmostEqual(celsius_to_fahrenheit(100), 212)
        self.assertAlmostEqual(celsius_to_fahrenheit(0), 32)

    def test_kelvin_to_celsius(self):
        self.assertAlmostEqual(kelvin_to_celsius(0), -273.15)
        self.assertAlmostEqual(kelvin_to_celsius(273.15), 0)


if __name__ == "__main__":
    unittest.main()
