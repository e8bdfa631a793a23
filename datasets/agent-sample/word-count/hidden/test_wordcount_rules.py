import unittest

from wordcount import count_words


class TestRules(unittest.TestCase):
    def test_case_is_ignored(self):
        self.assertEqual(count_words("Go go GO"), {"go": 3})

    def test_any_whitespace_separates(self):
        self.assertEqual(
            count_words("one,two\tthree\nfour  five"),
            {"one": 1, "two": 1, "three": 1, "four": 1, "five": 1},
        )

    def test_punctuation_is_stripped(self):
        self.assertEqual(count_words("Hello, world! Hello."), {"hello": 2, "world": 1})

    def test_apostrophes_inside_words_stay(self):
        self.assertEqual(count_words("Don't stop, 'quoted'"), {"don't": 1, "stop": 1, "quoted": 1})

    def test_empty_text(self):
        self.assertEqual(count_words(""), {})
        self.assertEqual(count_words("  ... !! "), {})


if __name__ == "__main__":
    unittest.main()
