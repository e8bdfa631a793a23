//! The common answer shape decoded without the tokenizer, the parser and the tree:
//! `name(kw=literal, ...)`, alone or several separated by commas.
//!
//! Most answers are calls with keyword arguments whose values are plain literals
//! (`spotify.play(artist='Taylor Swift', duration=20)`). For those, building CPython's token
//! list and expression tree only to turn each argument straight back into a value was most
//! of the actions evaluator's work. [`parse_calls`] reads this subset of Python directly
//! into the calls LiC's `ast_parse` returns, and answers `None` for anything outside it, so
//! that the full decoder (which reproduces CPython's acceptance and LiC's resolution rules)
//! decides every other answer, its errors included.
//!
//! The subset is chosen so that everything it accepts CPython accepts with the same meaning:
//!
//! - the text starts with the first call's name (an indented first line is CPython's
//!   "unexpected indent") and holds no control character (tabs, form feeds, NUL, `\r` each
//!   have tokenizer rules of their own), outside strings as inside;
//! - names are ASCII identifiers that are not hard keywords (a non-ASCII name is
//!   NFKC-normalised by CPython) and dotted only without spaces around the dots;
//! - a call has keyword arguments, possibly after positional ones that are scalar values
//!   (which LiC drops), and no `*` or `**`;
//! - a value is a string in single or double quotes without a backslash and not
//!   triple-quoted, a decimal `int` of at most 18 digits without a leading zero or
//!   underscore, a `float` spelled `digits.digits`, either number after one `-` or `+`
//!   (which LiC's `resolve_ast_by_type` negates alike), `True`, `False`, `None`, a bare
//!   name (resolved to its text), or a list or dict of values (dict keys of the scalar
//!   kinds above), nested at most [`MAX_DEPTH`] deep;
//! - after a value comes only a `,`, a closing bracket or a dict's `:`, so that no operator,
//!   implicit string concatenation, call, attribute or subscript follows it.

use std::borrow::Cow;

use crate::decode::CallParts;
use crate::value::{Value, dict_insert, spend};

/// Deepest list or dict nesting the fast path reads.
const MAX_DEPTH: usize = 32;

/// Longest text the fast path reads (far below the full decoder's token limit).
const MAX_LEN: usize = 1 << 16;

/// The bytes that continue an ASCII identifier (letters, digits, `_`), by value.
static IDENTIFIER_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || c == b'_';
        b += 1;
    }
    table
};

/// Whether `name` is one of Python's hard keywords, which cannot be names.
pub(crate) fn is_keyword(name: &str) -> bool {
    matches!(
        name,
        "False"
            | "None"
            | "True"
            | "and"
            | "as"
            | "assert"
            | "async"
            | "await"
            | "break"
            | "class"
            | "continue"
            | "def"
            | "del"
            | "elif"
            | "else"
            | "except"
            | "finally"
            | "for"
            | "from"
            | "global"
            | "if"
            | "import"
            | "in"
            | "is"
            | "lambda"
            | "nonlocal"
            | "not"
            | "or"
            | "pass"
            | "raise"
            | "return"
            | "try"
            | "while"
            | "with"
            | "yield"
    )
}

/// The calls of `cleaned` (the text after LiC's pre-strip and `strip("[]'")`), or `None`
/// when it is not of the common shape.
pub(crate) fn parse_calls(cleaned: &str) -> Option<Vec<CallParts<'_>>> {
    let bytes = cleaned.as_bytes();
    // Folded without an early exit, so that it compiles to a vector loop: answers hold no
    // control character but rarely.
    if bytes.len() > MAX_LEN || bytes.iter().fold(false, |any, &b| any | (b < 0x20)) {
        return None;
    }
    let mut r = Reader {
        text: cleaned,
        bytes,
        pos: 0,
    };
    let mut calls = Vec::new();
    loop {
        calls.push(r.call()?);
        r.spaces();
        match r.peek() {
            None => return Some(calls),
            Some(b',') => {
                r.pos += 1;
                r.spaces();
                if r.peek().is_none() {
                    return Some(calls);
                }
            }
            Some(_) => return None,
        }
    }
}

/// `args[keyword] = value` on a call's keyword arguments, whose keys are all strs: as
/// [`dict_insert`] does it (the same lookup budget spent), comparing texts.
fn insert_keyword<'a>(args: &mut Vec<(Value<'a>, Value<'a>)>, keyword: &'a str, value: Value<'a>) {
    let found = if spend(args.len()) {
        args.iter_mut()
            .find(|(k, _)| matches!(k, Value::Str(s) if s == keyword))
    } else {
        None
    };
    match found {
        Some(slot) => slot.1 = value,
        None => args.push((Value::Str(Cow::Borrowed(keyword)), value)),
    }
}

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }

    /// An ASCII identifier that is not a keyword ("True", "False" and "None" included).
    fn name(&mut self) -> Option<&'a str> {
        let start = self.pos;
        match self.peek() {
            Some(b) if b.is_ascii_alphabetic() || b == b'_' => self.pos += 1,
            _ => return None,
        }
        let rest = &self.bytes[self.pos..];
        self.pos += rest
            .iter()
            .position(|&b| !IDENTIFIER_BYTE[usize::from(b)])
            .unwrap_or(rest.len());
        if self.peek().is_some_and(|b| b >= 0x80) {
            return None;
        }
        self.text.get(start..self.pos)
    }

    fn call(&mut self) -> Option<CallParts<'a>> {
        let start = self.pos;
        loop {
            let part = self.name()?;
            if is_keyword(part) {
                return None;
            }
            if self.peek() != Some(b'.') {
                break;
            }
            self.pos += 1;
        }
        let name = Cow::Borrowed(self.text.get(start..self.pos)?);
        self.spaces();
        if self.peek() != Some(b'(') {
            return None;
        }
        self.pos += 1;
        self.spaces();
        let mut args: Vec<(Value<'a>, Value<'a>)> = Vec::new();
        loop {
            if self.peek() == Some(b')') {
                self.pos += 1;
                break;
            }
            let start = self.pos;
            let keyword = self.name().filter(|_| {
                self.spaces();
                self.peek() == Some(b'=')
            });
            match keyword {
                Some(keyword) => {
                    if is_keyword(keyword) {
                        return None;
                    }
                    self.pos += 1;
                    self.spaces();
                    let value = self.value(0)?;
                    insert_keyword(&mut args, keyword, value);
                }
                None => {
                    // A positional argument, which `resolve_ast_call` drops: only before
                    // the keywords (after one, CPython refuses it) and only a scalar, so
                    // that reading it spends nothing from the lookup budget, which the
                    // full decoder never spends on it.
                    self.pos = start;
                    if !args.is_empty() || matches!(self.peek(), Some(b'[' | b'{')) {
                        return None;
                    }
                    self.value(0)?;
                }
            }
            self.spaces();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.spaces();
                }
                b')' => {}
                _ => return None,
            }
        }
        Some(CallParts::new(name, args))
    }

    /// One value, followed by nothing but spaces before the next delimiter.
    fn value(&mut self, depth: usize) -> Option<Value<'a>> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let value = match self.peek()? {
            b'\'' | b'"' => self.string()?,
            b'-' | b'+' => {
                self.pos += 1;
                self.spaces();
                match self.number()? {
                    Value::Int(i) => Value::Int(-i),
                    Value::Float(f) => Value::Float(-f),
                    _ => return None,
                }
            }
            b'0'..=b'9' => self.number()?,
            b'[' => {
                self.pos += 1;
                self.spaces();
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        break;
                    }
                    items.push(self.value(depth + 1)?);
                    self.spaces();
                    match self.peek()? {
                        b',' => {
                            self.pos += 1;
                            self.spaces();
                        }
                        b']' => {}
                        _ => return None,
                    }
                }
                Value::List(items)
            }
            b'{' => {
                self.pos += 1;
                self.spaces();
                let mut items: Vec<(Value<'a>, Value<'a>)> = Vec::new();
                loop {
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        break;
                    }
                    let key = self.value(depth + 1)?;
                    if matches!(key, Value::List(_) | Value::Dict(_)) {
                        return None;
                    }
                    self.spaces();
                    if self.peek() != Some(b':') {
                        return None;
                    }
                    self.pos += 1;
                    self.spaces();
                    let value = self.value(depth + 1)?;
                    dict_insert(&mut items, key, value);
                    self.spaces();
                    match self.peek()? {
                        b',' => {
                            self.pos += 1;
                            self.spaces();
                        }
                        b'}' => {}
                        _ => return None,
                    }
                }
                Value::Dict(items)
            }
            _ => match self.name()? {
                "True" => Value::Bool(true),
                "False" => Value::Bool(false),
                "None" => Value::None,
                name if is_keyword(name) => return None,
                name => Value::Str(Cow::Borrowed(name)),
            },
        };
        self.spaces();
        matches!(self.peek(), Some(b',' | b')' | b']' | b'}' | b':')).then_some(value)
    }

    /// A quoted string without a backslash, not triple-quoted.
    fn string(&mut self) -> Option<Value<'a>> {
        let quote = self.peek()?;
        let start = self.pos + 1;
        let end = start + memchr::memchr2(quote, b'\\', &self.bytes[start..])?;
        if self.bytes[end] != quote || (end == start && self.bytes.get(end + 1) == Some(&quote)) {
            return None;
        }
        self.pos = end + 1;
        // The quotes are ASCII, so both ends are character boundaries.
        Some(Value::Str(Cow::Borrowed(self.text.get(start..end)?)))
    }

    /// A decimal `int` of at most 18 digits without a leading zero, or `digits.digits`.
    fn number(&mut self) -> Option<Value<'a>> {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        let int_end = self.pos;
        if int_end == start {
            return None;
        }
        let value = if self.peek() == Some(b'.') {
            self.pos += 1;
            let frac = self.pos;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
            if self.pos == frac {
                return None;
            }
            Value::Float(self.text.get(start..self.pos)?.parse().ok()?)
        } else {
            let digits = &self.bytes[start..int_end];
            if digits.len() > 18 || (digits.len() > 1 && digits[0] == b'0') {
                return None;
            }
            let n = digits
                .iter()
                .fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
            Value::int(n)
        };
        // What follows a number: nothing that would continue or qualify it.
        match self.peek() {
            Some(b' ' | b',' | b')' | b']' | b'}' | b':') => Some(value),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path's calls wherever it reads the text, checked against the full decoder.
    fn same(src: &str) -> bool {
        let fast = parse_calls(src);
        if let Some(calls) = &fast {
            let full = crate::decode::parse_calls_fully(src)
                .unwrap_or_else(|e| panic!("{src}: the fast path reads what CPython refuses: {e}"));
            assert_eq!(calls.len(), full.len(), "{src}");
            for (a, b) in calls.iter().zip(&full) {
                assert_eq!(a.name, b.name, "{src}");
                let items = |c: &CallParts| -> Vec<_> {
                    let Value::Dict(args) = &c.params else {
                        panic!("{src}: parameters that are not a dict")
                    };
                    args.iter()
                        .map(|(k, v)| (k.repr(), v.repr(), v.py_type()))
                        .collect()
                };
                assert_eq!(items(a), items(b), "{src}: values differ");
            }
        }
        fast.is_some()
    }

    #[test]
    fn reads_the_common_shape_as_the_full_decoder_does() {
        for src in [
            "spotify.play(artist='Taylor Swift', duration=20), spotify.play(artist='Maroon 5', duration=15)",
            "f(a=1, b=2, a=3)",
            "calculate_em_force(5, 2, 4), calculate_em_force(5, 2, 10)",
            "f(1, 'x', -2.5, None, y, b=2)",
            "f()",
            "f(a=1),",
            "f(a=1) , g(b = -2.50 ,)",
            "f(a=+5, b=- 0.0, c=-0)",
            "f(a=[1, [2, 'x'], {}], b={'k': [1.5], 2: None, 2.0: True, True: 'y'})",
            "f(a=meters, b=True, c=False, d=None, e=match)",
            "f(a=\"it's\", b='say \"hi\"', c='', d=\"\")",
            "f(a='naïve – ok', b=123456789012345678)",
            "a.b.c(x=[1,],)",
            "f(a={'x': 1, 'x': 2})",
        ] {
            assert!(same(src), "{src} should take the fast path");
        }
    }

    /// Every conformance answer, and variants of each cut short or with one character
    /// replaced, decode alike on both paths wherever the fast path reads them.
    #[test]
    fn conformance_answers_and_their_variants_decode_alike() {
        let Some(dir) = baton_fixture::shared_dir("conformance") else {
            return;
        };
        let text = std::fs::read_to_string(dir.join("actions.jsonl")).unwrap();
        let (mut read, mut total) = (0, 0);
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let case: serde_json::Value = serde_json::from_str(line).unwrap();
            let input = case["input"].as_str().unwrap();
            let stripped = crate::decode::pre_strip(input);
            let cleaned = stripped.trim_matches(['[', ']', '\'']);
            total += 1;
            read += usize::from(same(cleaned));
            let chars: Vec<char> = cleaned.chars().collect();
            let step = (chars.len() / 7).max(1);
            for at in (0..chars.len()).step_by(step) {
                same(&chars[..at].iter().collect::<String>());
                for c in [
                    ' ', '(', ')', ',', '=', '\'', '-', '.', '1', 'x', '[', '{', ':',
                ] {
                    let mut variant = chars.clone();
                    variant[at] = c;
                    same(&variant.into_iter().collect::<String>());
                }
            }
        }
        assert!(
            read * 2 > total,
            "the fast path read {read} of {total} answers"
        );
    }

    #[test]
    fn leaves_everything_else_to_the_full_decoder() {
        for src in [
            "  f(a=1)",
            "f(a=2, 1)",
            "f([1], a=2)",
            "f({'k': 1}, a=2)",
            "f(1 + 2, a=2)",
            "f(x y, a=2)",
            "f(if, a=2)",
            "f(a == 1)",
            "f(**{'a': 1})",
            "f(a='x' 'y')",
            "f(a='''x''')",
            "f(a='a\\nb')",
            "f(a=r'x')",
            "f(a=1+2)",
            "f(a=-(-5))",
            "f(a=--5)",
            "f(a=-'x')",
            "f(a=1.)",
            "f(a=.5)",
            "f(a=1e5)",
            "f(a=1_000)",
            "f(a=0x14)",
            "f(a=01)",
            "f(a=1j)",
            "f(a=1if 1 else 2)",
            "f(a=1234567890123456789)",
            "f(a=(1, 2))",
            "f(a={1, 2})",
            "f(a={[1]: 2})",
            "f(a=g(b=1))",
            "f(a=x.y)",
            "f(a=x[0])",
            "f(a=...)",
            "f(a=not True)",
            "f(a=lambda: 1)",
            "f(a=1)\tg(b=2)",
            "f(a=1); g(b=2)",
            "f(a=1) g(b=2)",
            "f(a=1)(b=2)",
            "if(a=1)",
            "f(if=1)",
            "f(a=1",
            "f(a=[1, 2)",
            "naïve(a=1)",
            "f . g(a=1)",
            "",
            "f(a=1) # note",
            "f(a=True.real)",
        ] {
            assert!(!same(src), "{src} should be left to the full decoder");
        }
    }
}
