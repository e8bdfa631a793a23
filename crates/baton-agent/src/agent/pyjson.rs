//! Tool-call arguments read as CPython 3.11's `json.loads` reads them (its C scanner),
//! so a malformed reply is answered with the message mini-SWE-agent shows
//! (`Expecting ',' delimiter: line 1 column 17 (char 16)`), and a value that parses is
//! typed as Python would type it (an `int`, a `NoneType`), which decides what mini does
//! with a command that is not a string.
//!
//! Not a JSON library: it keeps only what the bash tool needs (the shape of the value and
//! its strings). Positions count code points, as Python's do. `NaN`, `Infinity` and
//! `-Infinity` parse (Python accepts them); a lone surrogate escape, which Python keeps in
//! its string, becomes U+FFFD.

/// A parsed JSON value, typed as Python's `json` module returns it.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    /// `str`
    Str(String),
    /// `int` (its digits are not kept)
    Int,
    /// `float`
    Float,
    /// `bool`
    Bool,
    /// `None`
    None,
    /// `list`
    List(Vec<PyValue>),
    /// `dict`, keys in order; a repeated key keeps its last value in the first key's
    /// place, as a Python dict does
    Dict(Vec<(String, PyValue)>),
}

impl PyValue {
    /// Python's name of the value's type (`type(v).__name__`).
    pub fn type_name(&self) -> &'static str {
        match self {
            PyValue::Str(_) => "str",
            PyValue::Int => "int",
            PyValue::Float => "float",
            PyValue::Bool => "bool",
            PyValue::None => "NoneType",
            PyValue::List(_) => "list",
            PyValue::Dict(_) => "dict",
        }
    }

    /// The value under `key` when this is a dict.
    pub fn get(&self, key: &str) -> Option<&PyValue> {
        match self {
            PyValue::Dict(items) => items.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// `json.loads(text)`, or the `JSONDecodeError`'s text
/// (`"{msg}: line {l} column {c} (char {pos})"`).
pub fn loads(text: &str) -> Result<PyValue, String> {
    let chars: Vec<char> = text.chars().collect();
    let error = |msg: &str, pos: usize| {
        let before = &chars[..pos.min(chars.len())];
        let line = before.iter().filter(|c| **c == '\n').count() + 1;
        let column = match before.iter().rposition(|c| *c == '\n') {
            Some(nl) => pos - nl,
            None => pos + 1,
        };
        format!("{msg}: line {line} column {column} (char {pos})")
    };
    if chars.first() == Some(&'\u{feff}') {
        return Err(error("Unexpected UTF-8 BOM (decode using utf-8-sig)", 0));
    }
    let s = Scanner { c: &chars };
    let start = s.ws(0);
    let (value, end) = s.value(start).map_err(|(m, p)| error(m, p))?;
    let end = s.ws(end);
    if end != chars.len() {
        return Err(error("Extra data", end));
    }
    Ok(value)
}

/// A failure: the message and the position it names.
type Fail = (&'static str, usize);

struct Scanner<'a> {
    c: &'a [char],
}

impl Scanner<'_> {
    fn at(&self, i: usize) -> Option<char> {
        self.c.get(i).copied()
    }

    /// The first position at or after `i` that is not JSON whitespace.
    fn ws(&self, mut i: usize) -> usize {
        while matches!(self.at(i), Some(' ' | '\t' | '\n' | '\r')) {
            i += 1;
        }
        i
    }

    fn starts(&self, i: usize, word: &str) -> bool {
        word.chars()
            .enumerate()
            .all(|(k, w)| self.at(i + k) == Some(w))
    }

    /// One value at `i` (`scan_once`); a failure at `i` itself is "Expecting value".
    fn value(&self, i: usize) -> Result<(PyValue, usize), Fail> {
        const EXPECTING: &str = "Expecting value";
        match self.at(i) {
            None => Err((EXPECTING, i)),
            Some('"') => self.string(i + 1).map(|(s, e)| (PyValue::Str(s), e)),
            Some('{') => self.object(i + 1),
            Some('[') => self.array(i + 1),
            Some('n') if self.starts(i, "null") => Ok((PyValue::None, i + 4)),
            Some('t') if self.starts(i, "true") => Ok((PyValue::Bool, i + 4)),
            Some('f') if self.starts(i, "false") => Ok((PyValue::Bool, i + 5)),
            Some('N') if self.starts(i, "NaN") => Ok((PyValue::Float, i + 3)),
            Some('I') if self.starts(i, "Infinity") => Ok((PyValue::Float, i + 8)),
            Some('-') if self.starts(i, "-Infinity") => Ok((PyValue::Float, i + 9)),
            Some(_) => self.number(i).ok_or((EXPECTING, i)),
        }
    }

    /// `_match_number`: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`.
    fn number(&self, start: usize) -> Option<(PyValue, usize)> {
        let digit = |i: usize| self.at(i).is_some_and(|c| c.is_ascii_digit());
        let mut i = start;
        if self.at(i) == Some('-') {
            i += 1;
        }
        match self.at(i) {
            Some('1'..='9') => {
                while digit(i) {
                    i += 1;
                }
            }
            Some('0') => i += 1,
            _ => return None,
        }
        let mut float = false;
        if self.at(i) == Some('.') && digit(i + 1) {
            i += 1;
            while digit(i) {
                i += 1;
            }
            float = true;
        }
        if matches!(self.at(i), Some('e' | 'E')) {
            let mut e = i + 1;
            if matches!(self.at(e), Some('-' | '+')) {
                e += 1;
            }
            if digit(e) {
                while digit(e) {
                    e += 1;
                }
                i = e;
                float = true;
            }
        }
        Some((if float { PyValue::Float } else { PyValue::Int }, i))
    }

    /// The string whose opening quote is at `end - 1` (`scanstring`, strict).
    fn string(&self, mut end: usize) -> Result<(String, usize), Fail> {
        let begin = end - 1;
        let len = self.c.len();
        let mut out = String::new();
        loop {
            let mut next = end;
            let mut c = None;
            while next < len {
                let d = self.c[next];
                if d == '"' || d == '\\' {
                    c = Some(d);
                    break;
                }
                if (d as u32) <= 0x1f {
                    return Err(("Invalid control character at", next));
                }
                next += 1;
            }
            out.extend(&self.c[end..next]);
            match c {
                Some('"') => return Ok((out, next + 1)),
                None => return Err(("Unterminated string starting at", begin)),
                _ => {}
            }
            next += 1;
            let Some(e) = self.at(next) else {
                return Err(("Unterminated string starting at", begin));
            };
            if e != 'u' {
                end = next + 1;
                out.push(match e {
                    '"' => '"',
                    '\\' => '\\',
                    '/' => '/',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    _ => return Err(("Invalid \\escape", end - 2)),
                });
                continue;
            }
            next += 1;
            end = next + 4;
            if end >= len {
                return Err(("Invalid \\uXXXX escape", next - 1));
            }
            let hex = |from: usize| -> Result<u32, Fail> {
                let mut v = 0;
                for k in from..from + 4 {
                    let d = self.c[k]
                        .to_digit(16)
                        .ok_or(("Invalid \\uXXXX escape", from - 1))?;
                    v = v * 16 + d;
                }
                Ok(v)
            };
            let mut code = hex(next)?;
            if (0xd800..0xdc00).contains(&code)
                && end + 6 < len
                && self.c[end] == '\\'
                && self.c[end + 1] == 'u'
            {
                let low = hex(end + 2)?;
                if (0xdc00..0xe000).contains(&low) {
                    code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
                    end += 6;
                }
            }
            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
        }
    }

    /// The object after its `{` at `i - 1`.
    fn object(&self, i: usize) -> Result<(PyValue, usize), Fail> {
        let mut items: Vec<(String, PyValue)> = Vec::new();
        let mut i = self.ws(i);
        if self.at(i) == Some('}') {
            return Ok((PyValue::Dict(items), i + 1));
        }
        loop {
            if self.at(i) != Some('"') {
                return Err(("Expecting property name enclosed in double quotes", i));
            }
            let (key, next) = self.string(i + 1)?;
            i = self.ws(next);
            if self.at(i) != Some(':') {
                return Err(("Expecting ':' delimiter", i));
            }
            i = self.ws(i + 1);
            let (value, next) = self.value(i)?;
            match items.iter_mut().find(|(k, _)| *k == key) {
                Some(item) => item.1 = value,
                None => items.push((key, value)),
            }
            i = self.ws(next);
            match self.at(i) {
                Some('}') => return Ok((PyValue::Dict(items), i + 1)),
                Some(',') => i = self.ws(i + 1),
                _ => return Err(("Expecting ',' delimiter", i)),
            }
        }
    }

    /// The array after its `[` at `i - 1`.
    fn array(&self, i: usize) -> Result<(PyValue, usize), Fail> {
        let mut items = Vec::new();
        let mut i = self.ws(i);
        if self.at(i) == Some(']') {
            return Ok((PyValue::List(items), i + 1));
        }
        loop {
            let (value, next) = self.value(i)?;
            items.push(value);
            i = self.ws(next);
            match self.at(i) {
                Some(']') => return Ok((PyValue::List(items), i + 1)),
                Some(',') => i = self.ws(i + 1),
                _ => return Err(("Expecting ',' delimiter", i)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each message checked against CPython 3.11's `json.loads` (the C scanner).
    #[test]
    fn errors_read_as_cpythons() {
        for (text, want) in [
            (
                r#"{"command": "ls""#,
                "Expecting ',' delimiter: line 1 column 17 (char 16)",
            ),
            (
                "{'command': 'ls'}",
                "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
            ),
            (
                r#"{"command": "ls"} x"#,
                "Extra data: line 1 column 19 (char 18)",
            ),
            (
                r#"{"command": "a\qb"}"#,
                "Invalid \\escape: line 1 column 15 (char 14)",
            ),
            ("", "Expecting value: line 1 column 1 (char 0)"),
            (
                r#"{"command": "ls",}"#,
                "Expecting property name enclosed in double quotes: line 1 column 18 (char 17)",
            ),
            ("[1, 2", "Expecting ',' delimiter: line 1 column 6 (char 5)"),
            (r#"{"a": }"#, "Expecting value: line 1 column 7 (char 6)"),
            (
                r#"{"a" 1}"#,
                "Expecting ':' delimiter: line 1 column 6 (char 5)",
            ),
            (
                "{\n\"a\": \"x",
                "Unterminated string starting at: line 2 column 6 (char 7)",
            ),
            (
                "\"a\tb\"",
                "Invalid control character at: line 1 column 3 (char 2)",
            ),
            (
                r#""\u12"#,
                "Invalid \\uXXXX escape: line 1 column 3 (char 2)",
            ),
            (
                r#""\u12zz""#,
                "Invalid \\uXXXX escape: line 1 column 3 (char 2)",
            ),
            ("[1,]", "Expecting value: line 1 column 4 (char 3)"),
            ("-", "Expecting value: line 1 column 1 (char 0)"),
            ("1.", "Extra data: line 1 column 2 (char 1)"),
            ("\u{e9}\u{e9}x", "Expecting value: line 1 column 1 (char 0)"),
            (
                "[\"\u{e9}\", x]",
                "Expecting value: line 1 column 7 (char 6)",
            ),
        ] {
            assert_eq!(loads(text).unwrap_err(), want, "{text:?}");
        }
    }

    #[test]
    fn values_are_typed_as_pythons() {
        let v = loads(
            r#" {"command": "ls\n\u00e9\ud83d\ude00", "n": 1e3, "k": -0, "x": [true, null, NaN]} "#,
        )
        .unwrap();
        assert_eq!(
            v.get("command"),
            Some(&PyValue::Str("ls\n\u{e9}\u{1f600}".into()))
        );
        assert_eq!(v.get("n").unwrap().type_name(), "float");
        assert_eq!(v.get("k").unwrap().type_name(), "int");
        assert_eq!(
            v.get("x"),
            Some(&PyValue::List(vec![
                PyValue::Bool,
                PyValue::None,
                PyValue::Float
            ]))
        );
        let dup = loads(r#"{"a": 1, "b": 2, "a": "x"}"#).unwrap();
        assert_eq!(
            dup,
            PyValue::Dict(vec![
                ("a".into(), PyValue::Str("x".into())),
                ("b".into(), PyValue::Int)
            ])
        );
    }
}
