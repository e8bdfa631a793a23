import unittest

from chunks import chunked


class TestEdges(unittest.TestCase):
    def test_last_chunk_may_be_short(self):
        self.assertEqual(chunked([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])

    def test_strings_and_tuples(self):
        self.assertEqual(chunked("abcde", 3), [["a", "b", "c"], ["d", "e"]])
        self.assertEqual(chunked((1, 2, 3), 2), [[1, 2], [3]])

    def test_size_larger_than_input(self):
        self.assertEqual(chunked([1], 5), [[1]])

    def test_size_must_be_positive(self):
        for bad in (0, -1):
            with self.assertRaisesRegex(ValueError, "positive"):
                chunked([1, 2, 3], bad)


if __name__ == "__main__":
    unittest.main()
