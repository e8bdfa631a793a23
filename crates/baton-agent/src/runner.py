"""baton's test runner for agent tasks (standard library only).

Usage: python3 - MARKER TEST_ID... (this file on standard input)

Runs each unittest id (a module, class or method, dotted from the repository root) with
unittest, writes unittest's verbose log to stderr, and finally prints one line to stdout:
MARKER followed by a JSON object {test_id: {"outcome", "tests", "detail"}}, where outcome
is "passed", "failed", "error" or "skipped". An id passes when at least one test ran,
none failed or errored, and not all were skipped.
"""

import json
import sys
import traceback
import unittest


def run_one(test_id):
    loader = unittest.TestLoader()
    try:
        suite = loader.loadTestsFromName(test_id)
    except BaseException as err:  # an import error, a missing attribute, a SystemExit
        detail = "".join(traceback.format_exception_only(type(err), err)).strip()
        return {"outcome": "error", "tests": 0, "detail": "cannot load: " + detail[-2000:]}
    if loader.errors:
        return {"outcome": "error", "tests": 0, "detail": loader.errors[0][-2000:]}
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(suite)
    ran = result.testsRun
    if result.errors:
        return {"outcome": "error", "tests": ran, "detail": result.errors[0][1][-2000:]}
    if result.failures:
        return {"outcome": "failed", "tests": ran, "detail": result.failures[0][1][-2000:]}
    if result.unexpectedSuccesses:
        return {"outcome": "failed", "tests": ran, "detail": "unexpected success"}
    if ran == 0:
        return {"outcome": "error", "tests": 0, "detail": "no tests found"}
    if len(result.skipped) == ran:
        return {"outcome": "skipped", "tests": ran, "detail": result.skipped[0][1][-2000:]}
    return {"outcome": "passed", "tests": ran, "detail": ""}


def main():
    marker, ids = sys.argv[1], sys.argv[2:]
    del sys.argv[1:]
    results = {}
    for test_id in ids:
        results[test_id] = run_one(test_id)
    sys.stderr.flush()
    sys.stdout.write("\n%s %s\n" % (marker, json.dumps(results)))
    sys.stdout.flush()


main()
