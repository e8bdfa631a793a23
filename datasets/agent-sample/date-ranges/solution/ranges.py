"""Ranges of dates, inclusive at both ends."""

from datetime import timedelta

_ONE_DAY = timedelta(days=1)


def merge(ranges):
    """Merge overlapping or touching (start, end) ranges into a sorted list of disjoint ranges."""
    for start, end in ranges:
        if end < start:
            raise ValueError("range ends before it starts: %s > %s" % (start, end))
    merged = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + _ONE_DAY:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def total_days(ranges):
    """How many days the ranges cover, each day counted once."""
    return sum((end - start).days + 1 for start, end in merge(ranges))
