"""python -m tabjoin LEFT RIGHT --key COLUMN"""

import argparse
import sys

from .join import MissingKey, left_join


def main(argv=None):
    parser = argparse.ArgumentParser(prog="tabjoin", description=__doc__)
    parser.add_argument("left")
    parser.add_argument("right")
    parser.add_argument("--key", required=True)
    args = parser.parse_args(argv)
    with open(args.left, newline="") as f:
        left = f.read()
    with open(args.right, newline="") as f:
        right = f.read()
    try:
        sys.stdout.write(left_join(left, right, args.key, args.left, args.right))
    except MissingKey as err:
        sys.stderr.write("tabjoin: key column %r not found in %s\n" % (err.key, err.which))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
