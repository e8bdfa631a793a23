"""A small INI reader: sections, key = value pairs and comments."""

import re

_INLINE_COMMENT = re.compile(r"\s[#;].*$")


class ParseError(Exception):
    """A line that is neither a section, a pair, a comment nor blank."""

    def __init__(self, lineno, line):
        super().__init__("line %d: cannot parse %r" % (lineno, line))
        self.lineno = lineno


def parse(text):
    """Parse INI text into {section: {key: value}}; pairs before any section go under ""."""
    result = {"": {}}
    section = ""
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            result.setdefault(section, {})
            continue
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ParseError(lineno, raw)
        result[section][key] = _INLINE_COMMENT.sub("", value).strip()
    return result
