import csv
import io
import os
import subprocess
import sys
import tempfile
import unittest

from tabjoin import left_join


def rows(text):
    return list(csv.reader(io.StringIO(text)))


class TestJoin(unittest.TestCase):
    def test_quoted_fields_with_commas(self):
        left = 'id,name\n1,"Smith, Jane"\n'
        right = 'id,note\n1,"says ""hi"", twice"\n'
        self.assertEqual(rows(left_join(left, right, "id")), [["id", "name", "note"], ["1", "Smith, Jane", 'says "hi", twice']])

    def test_unmatched_left_rows_are_kept(self):
        left = "id,name\n1,Ada\n2,Brian\n"
        right = "id,city,zip\n2,Toronto,M5V\n"
        self.assertEqual(
            rows(left_join(left, right, "id")),
            [["id", "name", "city", "zip"], ["1", "Ada", "", ""], ["2", "Brian", "Toronto", "M5V"]],
        )

    def test_every_right_match_gives_a_row(self):
        left = "id,name\n1,Ada\n"
        right = "id,pet\n1,cat\n1,owl\n"
        self.assertEqual(rows(left_join(left, right, "id")), [["id", "name", "pet"], ["1", "Ada", "cat"], ["1", "Ada", "owl"]])


class TestCommandLine(unittest.TestCase):
    def test_missing_key_column_exits_2_with_a_message(self):
        with tempfile.TemporaryDirectory() as tmp:
            left, right = os.path.join(tmp, "l.csv"), os.path.join(tmp, "r.csv")
            with open(left, "w") as f:
                f.write("id,name\n1,Ada\n")
            with open(right, "w") as f:
                f.write("person,city\n1,London\n")
            out = subprocess.run(
                [sys.executable, "-m", "tabjoin", left, right, "--key", "id"],
                capture_output=True, text=True,
            )
        self.assertEqual(out.returncode, 2, out.stderr)
        self.assertIn("tabjoin: key column 'id' not found in %s" % right, out.stderr)
        self.assertNotIn("Traceback", out.stderr)


if __name__ == "__main__":
    unittest.main()
