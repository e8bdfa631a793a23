import unittest
from datetime import date

from ranges import merge


def d(day):
    return date(2024, 3, day)


class TestRanges(unittest.TestCase):
    def test_overlapping_sorted_ranges(self):
        self.assertEqual(merge([(d(1), d(5)), (d(3), d(8)), (d(20), d(22))]), [(d(1), d(8)), (d(20), d(22))])

    def test_nothing_to_merge(self):
        self.assertEqual(merge([]), [])
        self.assertEqual(merge([(d(1), d(2)), (d(10), d(12))]), [(d(1), d(2)), (d(10), d(12))])


if __name__ == "__main__":
    unittest.main()
