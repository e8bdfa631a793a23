import os
import subprocess
import sys
import tempfile
import unittest

from tabjoin import left_join

PEOPLE = "id,name\n1,Ada\n2,Brian\n"
CITIES = "id,city\n1,London\n2,Toronto\n"


class TestJoin(unittest.TestCase):
    def test_all_rows_match(self):
        self.assertEqual(left_join(PEOPLE, CITIES, "id").splitlines(), ["id,name,city", "1,Ada,London", "2,Brian,Toronto"])


class TestCommandLine(unittest.TestCase):
    def test_prints_the_join(self):
        with tempfile.TemporaryDirectory() as tmp:
            left, right = os.path.join(tmp, "l.csv"), os.path.join(tmp, "r.csv")
            with open(left, "w") as f:
                f.write(PEOPLE)
            with open(right, "w") as f:
                f.write(CITIES)
            out = subprocess.run(
                [sys.executable, "-m", "tabjoin", left, right, "--key", "id"],
                capture_output=True, text=True, check=True,
            )
        self.assertEqual(out.stdout.splitlines()[0], "id,name,city")


if __name__ == "__main__":
    unittest.main()
