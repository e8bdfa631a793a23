"""Evaluate arithmetic expressions: numbers, + - * / **, and parentheses."""

import re

_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\.\d+|\d+)|(\*\*|[-+*/()]))")


class CalcError(Exception):
    """A malformed expression, or one that cannot be evaluated."""


def tokenize(text):
    """Split `text` into numbers (as floats) and operator strings."""
    tokens = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match:
            raise CalcError("unexpected character at %d: %r" % (pos, text[pos]))
        number, op = match.groups()
        tokens.append(float(number) if number is not None else op)
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self):
        token = self.peek()
        self.pos += 1
        return token

    def expression(self):
        value = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()
            rhs = self.term()
            value = value + rhs if op == "+" else value - rhs
        return value

    def term(self):
        value = self.power()
        while self.peek() in ("*", "/"):
            op = self.take()
            rhs = self.power()
            value = value * rhs if op == "*" else value / rhs
        return value

    def power(self):
        value = self.atom()
        while self.peek() == "**":
            self.take()
            value = value ** self.atom()
        return value

    def atom(self):
        token = self.take()
        if token == "(":
            value = self.expression()
            if self.take() != ")":
                raise CalcError("missing closing parenthesis")
            return value
        if isinstance(token, float):
            return token
        raise CalcError("unexpected token %r" % (token,))


def evaluate(text):
    """The value of the expression `text`, as a float."""
    parser = _Parser(tokenize(text))
    value = parser.expression()
    if parser.peek() is not None:
        raise CalcError("unexpected token %r" % (parser.peek(),))
    return value
