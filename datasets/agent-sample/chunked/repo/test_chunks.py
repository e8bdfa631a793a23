import unittest

from chunks import chunked


class TestChunks(unittest.TestCase):
    def test_even_split(self):
        self.assertEqual(chunked([1, 2, 3, 4], 2), [[1, 2], [3, 4]])

    def test_empty_input(self):
        self.assertEqual(chunked([], 3), [])


if __name__ == "__main__":
    unittest.main()
