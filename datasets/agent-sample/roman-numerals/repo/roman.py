"""Roman numerals."""

_VALUES = [
    (1000, "M"),
    (500, "D"),
    (100, "C"),
    (50, "L"),
    (10, "X"),
    (5, "V"),
    (1, "I"),
]


def to_roman(number):
    """Return the Roman numeral for an integer from 1 to 3999."""
    if not 1 <= number <= 3999:
        raise ValueError("number out of range: %d" % number)
    out = []
    for value, letters in _VALUES:
        while number >= value:
            out.append(letters)
            number -= value
    return "".join(out)
