import unittest

from iniparse import ParseError, parse


class TestMore(unittest.TestCase):
    def test_semicolon_comments(self):
        self.assertEqual(parse("; comment\n[a]\n  ; another\nx = 1\n"), {"": {}, "a": {"x": "1"}})

    def test_equals_sign_inside_a_value(self):
        self.assertEqual(
            parse("[web]\nurl = http://example.com/?a=b&c=d\n")["web"],
            {"url": "http://example.com/?a=b&c=d"},
        )

    def test_inline_comments(self):
        got = parse("[t]\nname = baton   ; the tool\nmode = fast # or slow\ncolor=#ff0000\n")["t"]
        self.assertEqual(got, {"name": "baton", "mode": "fast", "color": "#ff0000"})

    def test_empty_key_is_an_error(self):
        with self.assertRaises(ParseError) as caught:
            parse("[a]\nok = 1\n= value\n")
        self.assertEqual(caught.exception.lineno, 3)


if __name__ == "__main__":
    unittest.main()
