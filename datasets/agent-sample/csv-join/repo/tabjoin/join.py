"""The join itself."""


class MissingKey(Exception):
    """The key column is not in a table's header."""


def read_table(text):
    """(header, rows as dicts) of CSV `text`."""
    lines = [line for line in text.splitlines() if line]
    header = lines[0].split(",")
    return header, [dict(zip(header, line.split(","))) for line in lines[1:]]


def left_join(left_text, right_text, key):
    """Left-join two CSV texts on the column `key`; returns CSV text."""
    left_header, left_rows = read_table(left_text)
    right_header, right_rows = read_table(right_text)
    index = {row[key]: row for row in right_rows}
    header = left_header + [c for c in right_header if c != key]
    out = [",".join(header)]
    for row in left_rows:
        match = index.get(row[key])
        if match is None:
            continue
        merged = dict(row)
        merged.update(match)
        out.append(",".join(merged[c] for c in header))
    return "\n".join(out) + "\n"
