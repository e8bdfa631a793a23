import unittest
from datetime import date

from ranges import merge, total_days


def d(day):
    return date(2024, 3, day)


class TestMerge(unittest.TestCase):
    def test_unsorted_input(self):
        self.assertEqual(merge([(d(20), d(22)), (d(3), d(8)), (d(1), d(5))]), [(d(1), d(8)), (d(20), d(22))])

    def test_adjacent_ranges_merge(self):
        self.assertEqual(merge([(d(1), d(3)), (d(4), d(6)), (d(8), d(9))]), [(d(1), d(6)), (d(8), d(9))])

    def test_reversed_range_is_an_error(self):
        with self.assertRaises(ValueError):
            merge([(d(5), d(1))])


class TestDays(unittest.TestCase):
    def test_both_ends_count(self):
        self.assertEqual(total_days([(d(1), d(1))]), 1)
        self.assertEqual(total_days([(d(1), d(3)), (d(2), d(5)), (d(10), d(10))]), 6)
        self.assertEqual(total_days([]), 0)


if __name__ == "__main__":
    unittest.main()
