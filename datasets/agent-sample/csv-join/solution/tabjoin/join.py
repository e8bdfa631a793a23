"""The join itself."""

import csv
import io


class MissingKey(Exception):
    """The key column is not in a table's header."""

    def __init__(self, key, which):
        super().__init__(key, which)
        self.key = key
        self.which = which


def read_table(text, key, which):
    """(header, rows as dicts) of CSV `text`; `which` names the table in errors."""
    reader = csv.reader(io.StringIO(text))
    records = [r for r in reader if r]
    if not records or key not in records[0]:
        raise MissingKey(key, which)
    header = records[0]
    return header, [dict(zip(header, r)) for r in records[1:]]


def left_join(left_text, right_text, key, left_name="left", right_name="right"):
    """Left-join two CSV texts on the column `key`; returns CSV text."""
    left_header, left_rows = read_table(left_text, key, left_name)
    right_header, right_rows = read_table(right_text, key, right_name)
    index = {}
    for row in right_rows:
        index.setdefault(row.get(key, ""), []).append(row)
    extra = [c for c in right_header if c != key]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(left_header + extra)
    for row in left_rows:
        left_values = [row.get(c, "") for c in left_header]
        matches = index.get(row.get(key, ""), [])
        if not matches:
            writer.writerow(left_values + [""] * len(extra))
        for match in matches:
            writer.writerow(left_values + [match.get(c, "") for c in extra])
    return out.getvalue()
