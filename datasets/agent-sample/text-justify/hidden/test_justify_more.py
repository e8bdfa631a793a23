import unittest

from justify import justify


class TestJustify(unittest.TestCase):
    def test_extra_spaces_go_to_the_left_gaps(self):
        self.assertEqual(
            justify("This is an example of text justification.", 16),
            ["This    is    an", "example  of text", "justification.  "],
        )

    def test_last_line_is_left_aligned(self):
        self.assertEqual(
            justify("What must be acknowledgment shall be", 16),
            ["What   must   be", "acknowledgment  ", "shall be        "],
        )

    def test_every_line_has_the_width(self):
        text = "the quick brown fox jumps over the lazy dog " * 5
        for width in (9, 12, 20, 31):
            lines = justify(text, width)
            self.assertTrue(all(len(line) == width for line in lines), (width, lines))
            self.assertEqual(" ".join(" ".join(lines).split()), " ".join(text.split()))

    def test_a_word_longer_than_the_width_is_an_error(self):
        with self.assertRaises(ValueError):
            justify("tiny enormousword", 6)


if __name__ == "__main__":
    unittest.main()
