"""The Python side of baton's sandbox, built into a WASI component by componentize-py.

Two exports:

* `wasi:cli/run` -- a tiny interpreter front end: `-c CODE` runs CODE, otherwise the program
  is read from stdin. The exit status is ok or err (WASI 0.2 carries nothing else).
* `baton:sandbox/grader` -- LiC's code grading (`TaskCode.extract_answer`, then
  `evaluator_function` with LiveCodeBench's call-based harness), split into steps the host
  drives one at a time so that it owns every deadline and every verdict:
  `extract(response)`, `load(code, fn_name, prompt)`, then `call(input)` once per test.

Why the host can trust the result: the guest never sees an expected output. `call` returns
the function's return value serialized by `_encode`, which was captured when the component
was built, before any candidate code existed, and which accepts only exact builtin types
(through saved references, so patched builtins do not matter). Anything else becomes an
opaque `<name>` marker that equals nothing. The host parses the text as plain values and
compares them with the expected JSON itself. A program that tampers with this module can
only make `call` report some other value -- one it could have returned honestly -- so
lying buys nothing.

Everything below runs once at build time (the component is a pre-initialised snapshot):
every module imported here is bundled and already imported when a run starts.
"""

import sys
import importlib

# ---------------------------------------------------------------------------------------------
# Bundled modules. Only modules imported at build time exist at run time.
# ---------------------------------------------------------------------------------------------

_SKIP = {
    "antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "ensurepip", "venv",
    "__phello__", "_tkinter", "pydoc_data", "lib2to3", "msilib", "winreg", "winsound",
    "_winapi", "nt", "msvcrt", "_msi", "_overlapped", "_wmi", "_scproxy", "ctypes", "curses",
    "_ctypes", "readline", "_curses", "_curses_panel",
}
_EXTRA = """collections.abc concurrent.futures urllib.parse urllib.request urllib.error
xml.etree.ElementTree xml.dom.minidom xml.sax email.message email.mime.text email.utils
importlib.resources importlib.metadata importlib.util logging.handlers unittest.mock
html.parser http.client json.decoder json.encoder os.path asyncio sqlite3 dbm.dumb
_pylong _strptime _pydatetime _pydecimal
""".split()


def _preload():
    names = sorted(getattr(sys, "stdlib_module_names", ())) + _EXTRA
    for name in names:
        if name in _SKIP:
            continue
        try:
            importlib.import_module(name)
        except BaseException:
            pass
    # Text codecs are imported lazily by str.encode/bytes.decode; bundle them all.
    try:
        import encodings
        import pkgutil

        for info in pkgutil.iter_modules(encodings.__path__):
            try:
                importlib.import_module("encodings." + info.name)
            except BaseException:
                pass
    except BaseException:
        pass


_preload()

# ---------------------------------------------------------------------------------------------
# Waits take the time they take natively.
# ---------------------------------------------------------------------------------------------
#
# This CPython has no threads, so its C lock returns at once from a timed `acquire` on a
# lock that is held, where a native CPython waits out the timeout (no other thread can
# release it). Every wait in `threading` and `queue` is built on that acquire, so
# `Event().wait(120)`, `Condition().wait(120)`, `Semaphore(0).acquire(timeout=120)` and
# `SimpleQueue().get(timeout=120)` all returned at once, and an answer that waits two
# minutes passed where LiC's time limit fails it. The lock below waits as a native lock
# in a single-threaded program does: the whole timeout, or forever when there is none.
# `time.sleep` and `select.select` already block in the host, where the host's deadline
# cuts them like any other wait.

import time as _time  # noqa: E402
import threading as _threading  # noqa: E402
import _thread  # noqa: E402
import queue as _queue  # noqa: E402

_sleep = _time.sleep
_TIMEOUT_MAX = _threading.TIMEOUT_MAX


def _wait_forever():
    """A deadlock: only the host's deadline ends it."""
    while True:
        _sleep(3600.0)


class _Lock:
    """`_thread.lock` for a program that has one thread: a held lock is never released
    while `acquire` waits, so a blocking `acquire` sleeps out its timeout (or forever)."""

    __slots__ = ("_held", "__weakref__")

    def __init__(self):
        self._held = False

    def acquire(self, blocking=True, timeout=-1):
        if not blocking and timeout != -1:
            raise ValueError("can't specify a timeout for a non-blocking call")
        if timeout < 0 and timeout != -1:
            raise ValueError("timeout value must be a non-negative number")
        if timeout > _TIMEOUT_MAX:
            raise OverflowError("timeout value is too large")
        if not self._held:
            self._held = True
            return True
        if not blocking:
            return False
        if timeout == -1:
            _wait_forever()
        _sleep(timeout)
        return False

    def release(self):
        if not self._held:
            raise RuntimeError("release unlocked lock")
        self._held = False

    def locked(self):
        return self._held

    def _at_fork_reinit(self):
        self._held = False

    acquire_lock = acquire
    release_lock = release
    locked_lock = locked

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()

    def __repr__(self):
        state = "locked" if self._held else "unlocked"
        return "<%s _thread.lock object at %#x>" % (state, id(self))


_thread.allocate_lock = _Lock
_threading.Lock = _Lock
_threading._allocate_lock = _Lock
_queue.SimpleQueue = getattr(_queue, "_PySimpleQueue", _queue.SimpleQueue)

import ast  # noqa: E402
import builtins  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402
from _json import encode_basestring_ascii as _quote  # noqa: E402

import componentize_py_types  # noqa: E402
from componentize_py_types import Err  # noqa: E402
from wit_world import exports  # noqa: E402

# ---------------------------------------------------------------------------------------------
# References captured now, before any candidate code can patch anything.
# ---------------------------------------------------------------------------------------------

_type = type
_id = id
_len = len
_isinstance = isinstance
_BaseException = BaseException
_Exception = Exception
_NoneType = type(None)
_bool, _int, _float, _str, _list, _tuple, _dict = bool, int, float, str, list, tuple, dict
_int_repr = int.__repr__
_int_bit_length = int.bit_length
_float_repr = float.__repr__
_dict_items = dict.items
_str_replace = str.replace
_str_split = str.split
_str_join = str.join
_list_append = list.append
_list_pop = list.pop
_set_digits = sys.set_int_max_str_digits
_get_digits = sys.get_int_max_str_digits
_json_loads = json.loads
_set = set
_range = range
_exec = exec
_getattr = getattr
_hasattr = hasattr
_ModuleType = types.ModuleType
_sys = sys
_real_stdout = sys.stdout
_real_stderr = sys.stderr

# LiveCodeBench's `import_string`, byte for byte.
PRELUDE = (
    "from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
    "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\n"
    "from random import *\nfrom statistics import *\nfrom itertools import *\n"
    "from functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\n"
    "import datetime\nimport collections\nimport heapq\nimport bisect\nimport copy\nimport math\n"
    "import random\nimport statistics\nimport itertools\nimport functools\nimport operator\n"
    "import io\nimport sys\nimport json\nsys.setrecursionlimit(50000)\n"
)

_FLOAT_SPECIAL = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}

# The host's cap on a serialized return value (`baton_sandbox::MAX_RESULT_BYTES`).
_MAX_RECORD = 16 << 20


def _too_large():
    return OverflowError(
        "the return value is longer than %d bytes when serialized" % _MAX_RECORD
    )


def _type_name(value):
    """A short, printable type name for an opaque marker (display only)."""
    try:
        name = _type.__dict__["__name__"].__get__(_type(value))
        if _type(name) is not _str:
            return "object"
    except _BaseException:
        return "object"
    keep = []
    for ch in name[:48]:
        if ch.isascii() and (ch.isalnum() or ch in "_."):
            _list_append(keep, ch)
    return _str_join("", keep) or "object"


def _encode(value):
    """Serialize a return value for the host.

    Grammar (JSON plus two extensions): null, true, false, integers in decimal, floats in
    `repr` form (NaN, Infinity, -Infinity for the specials), ASCII-escaped strings, `[...]`
    lists, `{key: value, ...}` dicts (keys may be any encoded value), `(...)` for a tuple
    nested inside the result, and `<name>` for anything else (never equal to anything).
    Only exact builtin types are looked at, through references saved at build time.
    A top-level tuple becomes a list, as in LiveCodeBench's harness.
    """
    if _type(value) is _tuple:
        value = _list(value)
    parts = []
    size = 0
    active = _set()
    stack = [(0, value)]
    digits = _get_digits()
    _set_digits(0)
    try:
        while stack:
            if size > _MAX_RECORD:
                raise _too_large()
            kind, v = _list_pop(stack)
            if kind == 1:
                _list_append(parts, v)
                size += _len(v)
                continue
            if kind == 2:
                active.discard(v)
                continue
            t = _type(v)
            if v is None:
                _list_append(parts, "null")
                size += 4
            elif t is _bool:
                _list_append(parts, "true" if v else "false")
                size += 5
            elif t is _int:
                # A decimal digit holds log2(10) > 3.32 bits: refuse before the repr.
                if _int_bit_length(v) > (_MAX_RECORD - size) * 10 // 3:
                    raise _too_large()
                text = _int_repr(v)
                _list_append(parts, text)
                size += _len(text)
            elif t is _float:
                text = _float_repr(v)
                _list_append(parts, _FLOAT_SPECIAL.get(text, text))
                size += _len(text)
            elif t is _str:
                # The quoted form is at least two bytes longer than the string.
                if _len(v) + 2 > _MAX_RECORD - size:
                    raise _too_large()
                text = _quote(v)
                _list_append(parts, text)
                size += _len(text)
            elif t is _list or t is _tuple or t is _dict:
                key = _id(v)
                if key in active:
                    _list_append(parts, "<cycle>")
                    size += 7
                    continue
                # Every item takes a byte and a ", " (a dict item `k: v, ` six): refuse
                # before copying the items.
                if _len(v) * (6 if t is _dict else 3) > _MAX_RECORD - size:
                    raise _too_large()
                active.add(key)
                if t is _dict:
                    opening, closing = "{", "}"
                    children = []
                    for k, item in _dict_items(v):
                        _list_append(children, (k, item))
                else:
                    opening, closing = ("[", "]") if t is _list else ("(", ")")
                    children = [(None, item) for item in v]
                _list_append(parts, opening)
                _list_append(stack, (2, key))
                _list_append(stack, (1, closing))
                for index in _range(_len(children) - 1, -1, -1):
                    k, item = children[index]
                    _list_append(stack, (0, item))
                    if t is _dict:
                        _list_append(stack, (1, ": "))
                        _list_append(stack, (0, k))
                    if index:
                        _list_append(stack, (1, ", "))
            else:
                text = "<" + _type_name(v) + ">"
                _list_append(parts, text)
                size += _len(text)
    finally:
        _set_digits(digits)
    if size > _MAX_RECORD:
        raise _too_large()
    return _str_join("", parts)


def _describe(exc):
    """`TypeName: message`, without trusting the exception's own methods too far."""
    name = _type_name(exc)
    try:
        text = _str(exc)
        if _type(text) is not _str:
            text = ""
    except _BaseException:
        text = ""
    text = text[:400]
    return name + (": " + text if text else "")


# ---------------------------------------------------------------------------------------------
# TaskCode.extract_answer (deterministic, rule-based).
# ---------------------------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:python)?\s*(.*?)\s*```", re.DOTALL)


def _visit(node):
    """A recursive walk over the tree, as LiC's extractor does one (so a tree too deep for
    the recursion limit fails here the way it fails there)."""
    for child in ast.iter_child_nodes(node):
        _visit(child)


def _last_top_level_function(code):
    """The last top-level `def` with every import of the module hoisted in front, or ""."""
    try:
        tree = ast.parse(code)
        _visit(tree)
        imports = [
            ast.unparse(node)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
        ]
        chosen = None
        for node in tree.body:
            if isinstance(node, ast.FunctionDef):
                chosen = node
        if chosen is None:
            return ""
        first = chosen.decorator_list[0].lineno if chosen.decorator_list else chosen.lineno
        lines = code.splitlines()
        body = "\n".join(lines[first - 1 : chosen.end_lineno])
        if imports:
            return "\n".join(imports) + "\n\n" + body
        return body
    except Exception:
        return ""


def extract_answer(text):
    blocks = _FENCE.findall(text)
    if "class Solution" in text:
        with_class = [block for block in blocks if "class Solution" in block]
        if not with_class:
            raise LookupError("'class Solution' appears outside every code block")
        return with_class[-1]
    if blocks:
        for block in reversed(blocks):
            found = _last_top_level_function(block)
            if found:
                return found
        return ""
    text = text.strip()
    if text.startswith("`"):
        text = text[text.find("\n") :].strip()
    start = text.rfind("import")
    if start < 0:
        start = text.rfind("def")
    if start >= 0:
        text = text[start:]
    return _last_top_level_function(text)


# ---------------------------------------------------------------------------------------------
# baton's code extraction (rules "baton"): the solution with what it needs, never a test block.
#
# LiC's extractor keeps only the last top-level `def` of the last block that has one, so a
# module constant (`MOD = 10**9 + 7`) or a helper the function calls is dropped, and a
# trailing block of tests or example calls is chosen over the solution. Here:
#
# * Blocks are the same fences as LiC's. The chosen block is the last one with a top-level
#   `def` named as the task's function, else the last one with a top-level `def` that is not
#   a test (`test*`, `check`, `main`); the chosen function is that `def`.
# * Kept with it: the block's imports, functions and classes that are not tests, constants
#   (assignments to names that do not call the chosen function, `input` or `print`) and
#   `sys.setrecursionlimit(...)`; then whatever else the kept code names and an earlier block
#   defines. Example calls, prints, asserts, loops and `if __name__ == "__main__":` are not.
# * Order: imports; the statements the function needs when it is defined (names in its
#   decorators and defaults); the function; the rest in their original order. The function
#   is thus the first `def` in the code, which is the one LiC's evaluator renames.
# * `class Solution` answers keep the class (first) with the same company.
# * Without fences: the longest tail of the text that parses, starting at a line that opens
#   an import, a `def`, a class, a decorator or an assignment; else LiC's rule.
# ---------------------------------------------------------------------------------------------

_CODE_START = re.compile(r"^(?:import |from |def |class |@|[A-Za-z_][A-Za-z0-9_]*\s*(?::[^=]*)?=[^=])")
_STARTS_TRIED = 16


def _parse(code):
    try:
        tree = ast.parse(code)
        _visit(tree)
        return tree
    except Exception:
        return None


def _is_test(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        name = node.name.lower()
        return name.startswith("test") or name in ("check", "main")
    if isinstance(node, ast.ClassDef):
        if node.name.startswith("Test"):
            return True
        return any(
            (isinstance(base, ast.Attribute) and base.attr == "TestCase")
            or (isinstance(base, ast.Name) and base.id == "TestCase")
            for base in node.bases
        )
    return False


def _called(node):
    names = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            func = child.func
            if isinstance(func, ast.Name):
                names.add(func.id)
            elif isinstance(func, ast.Attribute):
                names.add(func.attr)
    return names


def _targets_are_names(targets):
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            if not _targets_are_names(target.elts):
                return False
        elif not isinstance(target, ast.Name):
            return False
    return True


def _keepable(node, chosen):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return not _is_test(node)
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is None or not _targets_are_names(targets):
            return False
        return not (_called(node.value) & {chosen, "input", "print"})
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        return isinstance(func, ast.Attribute) and func.attr == "setrecursionlimit"
    return False


def _defined(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    names = set()
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for child in ast.walk(target):
                if isinstance(child, ast.Name):
                    names.add(child.id)
    return names


def _loaded(nodes):
    names = set()
    for node in nodes:
        for child in ast.walk(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                names.add(child.id)
    return names


def _definition_time(node):
    """What a `def` or `class` evaluates when it is defined (annotations are lazy in 3.14)."""
    parts = list(node.decorator_list)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        parts += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
    else:
        parts += node.bases + [keyword.value for keyword in node.keywords]
    return _loaded(parts)


def _source(code, node):
    lines = code.splitlines()
    first = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno
    return "\n".join(lines[first - 1 : node.end_lineno])


def _choose(blocks, fn_name):
    """(block index, chosen node) or None."""
    if fn_name:
        for index in range(len(blocks) - 1, -1, -1):
            named = [
                node
                for node in blocks[index][1].body
                if isinstance(node, ast.FunctionDef) and node.name == fn_name
            ]
            if named:
                return index, named[-1], "code.named"
    for index in range(len(blocks) - 1, -1, -1):
        defs = [
            node
            for node in blocks[index][1].body
            if isinstance(node, ast.FunctionDef) and not _is_test(node)
        ]
        if defs:
            return index, defs[-1], "code.last_def"
    return None


def _assemble(blocks, index, chosen):
    code, tree = blocks[index]
    name = chosen.name
    kept = [(code, node) for node in tree.body if node is not chosen and _keepable(node, name)]
    # Names the kept code uses that its own block does not define, from earlier blocks.
    defined = {name}
    for _, node in kept:
        defined |= _defined(node)
    needed = _loaded([chosen] + [node for _, node in kept]) - defined
    borrowed = []
    for earlier in range(index - 1, -1, -1):
        if not needed:
            break
        earlier_code, earlier_tree = blocks[earlier]
        for node in reversed(earlier_tree.body):
            provides = _defined(node) & needed
            if provides and _keepable(node, name) and not isinstance(node, (ast.Import, ast.ImportFrom)):
                borrowed.insert(0, (earlier_code, node))
                needed -= provides
                needed |= _loaded([node]) - defined - _defined(node)
                defined |= _defined(node)
    # Imports from anywhere in the kept code come first (a block's later imports too).
    imports, rest = [], []
    for item in borrowed + kept:
        (imports if isinstance(item[1], (ast.Import, ast.ImportFrom)) else rest).append(item)
    # What the chosen definition evaluates must exist before it, transitively.
    before = set()
    wanted = _definition_time(chosen)
    while wanted:
        found = set()
        for position, (_, node) in enumerate(rest):
            if position not in before and _defined(node) & wanted:
                before.add(position)
                found |= _loaded([node])
        wanted = found - {name}
        if not found:
            break
    parts = []
    seen = set()
    for item_code, node in imports:
        text = ast.unparse(node)
        if text not in seen:
            seen.add(text)
            parts.append(text)
    head = "\n".join(parts)
    pieces = [_source(c, n) for position, (c, n) in enumerate(rest) if position in before]
    pieces.append(_source(code, chosen))
    pieces += [_source(c, n) for position, (c, n) in enumerate(rest) if position not in before]
    body = "\n\n".join(pieces)
    return head + "\n\n" + body if head else body


def _unfenced_blocks(text):
    """The longest parsing tail of an unfenced reply, as a one-block list (or [])."""
    lines = text.strip().splitlines()
    tried = 0
    for start, line in enumerate(lines):
        if not _CODE_START.match(line):
            continue
        tried += 1
        if tried > _STARTS_TRIED:
            break
        code = "\n".join(lines[start:])
        tree = _parse(code)
        if tree is not None:
            return [(code, tree)]
    return []


def _class_solution(blocks):
    for index in range(len(blocks) - 1, -1, -1):
        for node in blocks[index][1].body:
            if isinstance(node, ast.ClassDef) and node.name == "Solution":
                return index, node
    return None


def extract_kept(text, fn_name):
    """baton's extraction: (rule, code); the code is "" when there is nothing to take."""
    fenced = [block for block in _FENCE.findall(text)]
    blocks = [(block, tree) for block in fenced for tree in [_parse(block)] if tree is not None]
    rule_prefix = ""
    if not fenced:
        blocks = _unfenced_blocks(text)
        rule_prefix = "unfenced_"
    if "class Solution" in text:
        found = _class_solution(blocks)
        if found is not None:
            index, node = found
            return "code." + rule_prefix + "class", _assemble(blocks, index, node)
    chosen = _choose(blocks, fn_name)
    if chosen is not None:
        index, node, rule = chosen
        if rule_prefix:
            rule = "code." + rule_prefix + rule[len("code."):]
        return rule, _assemble(blocks, index, node)
    if not fenced:
        return "code.lic", extract_answer(text) if "class Solution" not in text else ""
    return "code.none", ""


# ---------------------------------------------------------------------------------------------
# evaluator_function + LiveCodeBench call-based grading, one step at a time.
# ---------------------------------------------------------------------------------------------


class _NullRaw(io.RawIOBase):
    """A raw stream that accepts and drops every byte."""

    def writable(self):
        return True

    def write(self, data):
        return len(data)


def _discard_stream():
    """Where the candidate's prints go: LiC lets a program print freely, so they cost nothing
    and count against no cap here (only raw writes to fd 1/2 reach the capped pipes)."""
    return io.TextIOWrapper(io.BufferedWriter(_NullRaw()), encoding="utf-8", errors="replace")


def _reliability_guard():
    """LiveCodeBench's `reliability_guard()` (no memory limit), as LiC calls it."""
    import os
    import shutil
    import subprocess

    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in (
        "kill system putenv remove removedirs rmdir fchdir setuid fork forkpty killpg rename "
        "renames truncate replace unlink fchmod fchown chmod chown chroot fchdir lchflags "
        "lchmod lchown getcwd chdir"
    ).split():
        setattr(os, name, None)
    shutil.rmtree = None
    shutil.move = None
    shutil.chown = None
    subprocess.Popen = None
    builtins.help = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None


def prepare(code, fn_name, prompt):
    """evaluator_function's rewriting of the extracted answer, before it is executed."""
    code = code.replace("```python", "").replace("```", "")
    if "def " not in code:
        raise Err("nodef: no 'def ' in the answer")
    if prompt is not None:
        try:
            tree = ast.parse(prompt)
        except Exception as exc:
            raise Err("prompt: the HumanEval prompt does not parse: " + _describe(exc))
        imports = [
            ast.unparse(node)
            for node in tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom))
        ]
        if imports:
            code = "\n".join(imports) + "\n\n" + code
    old = code.split("def ")[1].split("(")[0].strip()
    return code.replace(old, fn_name)


_STATE = {"fn": None}


class Grader(exports.Grader):
    def extract(self, response):
        try:
            return extract_answer(response)
        except LookupError as exc:
            raise Err("raises: " + str(exc))

    def extract_kept(self, response, fn_name):
        return extract_kept(response, fn_name)

    def load(self, code, fn_name, prompt):
        source = PRELUDE + "\n\n" + prepare(code, fn_name, prompt)
        _reliability_guard()
        _sys.stdout = _discard_stream()
        _sys.stderr = _discard_stream()
        try:
            module = _ModuleType("tmp_sol", "")
            _exec(source, module.__dict__)
            if "class Solution" in source:
                target = module.Solution()
            else:
                target = module
            if target is None:
                raise Err("missing: the solution object is None")
            if not _hasattr(target, fn_name):
                raise Err("missing: no function named " + _quote(fn_name))
            _STATE["fn"] = _getattr(target, fn_name)
        except Err:
            raise
        except SyntaxError as exc:
            raise Err("compile: " + _describe(exc))
        except _Exception as exc:
            raise Err("exception: " + _describe(exc))
        except _BaseException as exc:
            raise Err("exit: " + _describe(exc))

    def call(self, input):
        fn = _STATE["fn"]
        try:
            args = [_json_loads(line) for line in _str_split(input, "\n")]
        except _BaseException as exc:
            raise Err("input: " + _describe(exc))
        try:
            result = fn(*args)
        except _Exception as exc:
            raise Err("exception: " + _describe(exc))
        except _BaseException as exc:
            raise Err("exit: " + _describe(exc))
        try:
            return _encode(result)
        except _BaseException as exc:
            raise Err("encode: " + _describe(exc))


# ---------------------------------------------------------------------------------------------
# wasi:cli/run -- `-c CODE`, or the program on stdin.
# ---------------------------------------------------------------------------------------------


class Run(exports.Run):
    def run(self):
        argv = list(sys.argv)
        if len(argv) > 2 and argv[1] == "-c":
            source, name = argv[2], "<string>"
            sys.argv = ["-c"] + argv[3:]
        else:
            source, name = sys.stdin.read(), "<stdin>"
            sys.argv = [""]
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        status = 0
        try:
            exec(compile(source, name, "exec"), namespace)
        except SystemExit as exc:
            code = exc.code
            if code is None:
                status = 0
            elif isinstance(code, int):
                status = code
            else:
                print(code, file=sys.stderr)
                status = 1
        except BaseException:
            traceback.print_exc()
            status = 1
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except BaseException:
                pass
        if status != 0:
            raise componentize_py_types.Err(None)
