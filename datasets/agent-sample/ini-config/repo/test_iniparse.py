import unittest

from iniparse import ParseError, parse


class TestParse(unittest.TestCase):
    def test_sections_and_pairs(self):
        text = "top = 1\n[server]\nhost = localhost\nport=8080\n[client]\nretries = 3\n"
        self.assertEqual(
            parse(text),
            {"": {"top": "1"}, "server": {"host": "localhost", "port": "8080"}, "client": {"retries": "3"}},
        )

    def test_blank_lines_and_hash_comments(self):
        text = "\n# a comment\n[a]\n\n  # indented comment\nx = y\n"
        self.assertEqual(parse(text), {"": {}, "a": {"x": "y"}})

    def test_garbage_line_names_its_number(self):
        with self.assertRaises(ParseError) as caught:
            parse("[a]\nx = 1\njust some words\n")
        self.assertEqual(caught.exception.lineno, 3)


if __name__ == "__main__":
    unittest.main()
