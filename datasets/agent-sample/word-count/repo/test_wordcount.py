import unittest

from wordcount import count_words


class TestCount(unittest.TestCase):
    def test_simple_sentence(self):
        self.assertEqual(count_words("one fish two fish"), {"one": 1, "fish": 2, "two": 1})


if __name__ == "__main__":
    unittest.main()
