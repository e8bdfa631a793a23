import unittest

from justify import justify


class TestBasics(unittest.TestCase):
    def test_single_short_line(self):
        self.assertEqual(justify("hello", 10), ["hello     "])

    def test_even_lines(self):
        self.assertEqual(justify("aa bb cc", 5), ["aa bb", "cc   "])

    def test_no_words(self):
        self.assertEqual(justify("", 8), [])
        self.assertEqual(justify("   \n ", 8), [])


if __name__ == "__main__":
    unittest.main()
