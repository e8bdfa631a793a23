"""Counting words in text."""

import re

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def count_words(text):
    """Return a dict mapping each word of `text` to how often it occurs."""
    counts = {}
    for word in _WORD.findall(text.lower()):
        counts[word] = counts.get(word, 0) + 1
    return counts
