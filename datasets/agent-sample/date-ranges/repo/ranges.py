"""Ranges of dates, inclusive at both ends."""


def merge(ranges):
    """Merge overlapping (start, end) ranges into a sorted list of disjoint ranges."""
    merged = []
    for start, end in ranges:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def total_days(ranges):
    """How many days the ranges cover, each day counted once."""
    return sum((end - start).days for start, end in merge(ranges))
