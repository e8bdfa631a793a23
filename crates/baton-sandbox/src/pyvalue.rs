//! Plain Python values on the host side, parsed from text, compared under Python's `==`.
//!
//! Two inputs use this: the expected outputs of the test cases (JSON as Python's
//! `json.loads` reads it: big integers, `NaN`/`Infinity`, lone surrogate escapes, the
//! last of duplicate keys) and the records the guest returns (the same JSON plus `(...)` for
//! a tuple nested in the result, `<name>` for a value of any other type, and non-string
//! dict keys). Comparison is Python's `==` restricted to these types: `1 == 1.0`,
//! `True == 1`, a tuple never equals a list, NaN equals nothing, dicts compare as maps.

use std::fmt;

/// Python's default limit on the digits of an int parsed from text (`sys.int_info`).
const INT_MAX_STR_DIGITS: usize = 4300;
/// Deepest nesting accepted. Parsing, comparing, printing and dropping recurse on the
/// host's stack, so a value nested deeper (a hostile program can return one) is refused
/// instead of overflowing it; real test outputs nest a few levels.
pub(crate) const MAX_DEPTH: usize = 200;

/// A Python value of one of the types a grading record can hold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PyValue {
    None,
    Bool(bool),
    /// Sign and decimal magnitude without leading zeros (`"0"` for zero, never negative).
    Int {
        negative: bool,
        digits: String,
    },
    Float(f64),
    /// Code points in generalized UTF-8 (lone surrogates kept), compared bytewise.
    Str(Vec<u8>),
    List(Vec<PyValue>),
    Tuple(Vec<PyValue>),
    Dict(Vec<(PyValue, PyValue)>),
    /// A value of another type (a set, a custom object, a subclass): equal to nothing.
    Opaque(String),
}

/// Which grammar to accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// Python's `json.loads`.
    Json,
    /// The guest's records: JSON plus tuples, opaque markers and any dict keys.
    Record,
}

/// Parse `text` as one value.
pub(crate) fn parse(text: &str, syntax: Syntax) -> Result<PyValue, String> {
    let mut parser = Parser {
        bytes: text.as_bytes(),
        pos: 0,
        syntax,
    };
    parser.skip_ws();
    let value = parser.value(0)?;
    parser.skip_ws();
    if parser.pos != parser.bytes.len() {
        return Err(format!("extra data at byte {}", parser.pos));
    }
    Ok(value)
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
    syntax: Syntax,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, word: &str) -> bool {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.pos))
    }

    fn value(&mut self, depth: usize) -> Result<PyValue, String> {
        if depth >= MAX_DEPTH {
            return self.err("nesting too deep");
        }
        let record = self.syntax == Syntax::Record;
        match self.bytes.get(self.pos) {
            None => self.err("expecting a value"),
            Some(b'"') => Ok(PyValue::Str(self.string()?)),
            Some(b'[') => Ok(PyValue::List(self.sequence(b']', depth)?)),
            Some(b'(') if record => Ok(PyValue::Tuple(self.sequence(b')', depth)?)),
            Some(b'{') => self.dict(depth),
            Some(b'<') if record => {
                let end = self.bytes[self.pos..]
                    .iter()
                    .position(|&b| b == b'>')
                    .ok_or_else(|| format!("unterminated marker at byte {}", self.pos))?;
                let name =
                    String::from_utf8_lossy(&self.bytes[self.pos + 1..self.pos + end]).into_owned();
                self.pos += end + 1;
                Ok(PyValue::Opaque(name))
            }
            Some(_) => {
                if self.eat("null") {
                    Ok(PyValue::None)
                } else if self.eat("true") {
                    Ok(PyValue::Bool(true))
                } else if self.eat("false") {
                    Ok(PyValue::Bool(false))
                } else if self.eat("NaN") {
                    Ok(PyValue::Float(f64::NAN))
                } else if self.eat("Infinity") {
                    Ok(PyValue::Float(f64::INFINITY))
                } else if self.eat("-Infinity") {
                    Ok(PyValue::Float(f64::NEG_INFINITY))
                } else {
                    self.number()
                }
            }
        }
    }

    fn sequence(&mut self, close: u8, depth: usize) -> Result<Vec<PyValue>, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&close) {
            self.pos += 1;
            return Ok(items);
        }
        loop {
            self.skip_ws();
            items.push(self.value(depth + 1)?);
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(&b) if b == close => {
                    self.pos += 1;
                    return Ok(items);
                }
                _ => return self.err("expecting ',' or a closing bracket"),
            }
        }
    }

    fn dict(&mut self, depth: usize) -> Result<PyValue, String> {
        self.pos += 1;
        let mut entries: Vec<(PyValue, PyValue)> = Vec::new();
        self.skip_ws();
        if self.bytes.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(PyValue::Dict(entries));
        }
        loop {
            self.skip_ws();
            let key = match (self.syntax, self.bytes.get(self.pos)) {
                (Syntax::Json, Some(b'"')) => PyValue::Str(self.string()?),
                (Syntax::Json, _) => return self.err("expecting a property name in double quotes"),
                (Syntax::Record, _) => self.value(depth + 1)?,
            };
            self.skip_ws();
            if self.bytes.get(self.pos) != Some(&b':') {
                return self.err("expecting ':'");
            }
            self.pos += 1;
            self.skip_ws();
            let value = self.value(depth + 1)?;
            // json.loads keeps the last value of a repeated key (at the first key's place).
            match entries
                .iter_mut()
                .find(|(k, _)| *k == key && self.syntax == Syntax::Json)
            {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            }
            self.skip_ws();
            match self.bytes.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(PyValue::Dict(entries));
                }
                _ => return self.err("expecting ',' or '}'"),
            }
        }
    }

    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?`: an int without fraction or exponent.
    fn number(&mut self) -> Result<PyValue, String> {
        let start = self.pos;
        let digits_from = |p: &mut Self| {
            let s = p.pos;
            while p.bytes.get(p.pos).is_some_and(u8::is_ascii_digit) {
                p.pos += 1;
            }
            p.pos - s
        };
        let negative = self.bytes.get(self.pos) == Some(&b'-');
        if negative {
            self.pos += 1;
        }
        let int_start = self.pos;
        let n = digits_from(self);
        if n == 0 {
            self.pos = start;
            return self.err("expecting a value");
        }
        if n > 1 && self.bytes[int_start] == b'0' {
            // "01" is "0" followed by extra data.
            self.pos = int_start + 1;
            return Ok(PyValue::Int {
                negative: false,
                digits: "0".into(),
            });
        }
        let int_end = self.pos;
        let mut is_float = false;
        if self.bytes.get(self.pos) == Some(&b'.') {
            let dot = self.pos;
            self.pos += 1;
            if digits_from(self) == 0 {
                self.pos = dot;
            } else {
                is_float = true;
            }
        }
        if let Some(b'e' | b'E') = self.bytes.get(self.pos) {
            let e = self.pos;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.bytes.get(self.pos) {
                self.pos += 1;
            }
            if digits_from(self) == 0 {
                self.pos = e;
            } else {
                is_float = true;
            }
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).map_err(|e| e.to_string())?;
        if is_float {
            return text
                .parse::<f64>()
                .map(PyValue::Float)
                .map_err(|e| format!("bad float {text:?}: {e}"));
        }
        let digits =
            std::str::from_utf8(&self.bytes[int_start..int_end]).map_err(|e| e.to_string())?;
        if digits.len() > INT_MAX_STR_DIGITS {
            return self.err("integer string conversion exceeds the 4300-digit limit");
        }
        Ok(int_value(negative, digits))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let chunk = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| format!("invalid \\uXXXX escape at byte {}", self.pos))?;
        let text = std::str::from_utf8(chunk).map_err(|e| e.to_string())?;
        let code = u32::from_str_radix(text, 16)
            .map_err(|_| format!("invalid \\uXXXX escape at byte {}", self.pos))?;
        self.pos += 4;
        Ok(code)
    }

    fn string(&mut self) -> Result<Vec<u8>, String> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(&b) = self.bytes.get(self.pos) else {
                return self.err("unterminated string");
            };
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                b'\\' => {
                    self.pos += 1;
                    let Some(&esc) = self.bytes.get(self.pos) else {
                        return self.err("unterminated string");
                    };
                    self.pos += 1;
                    let simple = match esc {
                        b'"' => Some(b'"'),
                        b'\\' => Some(b'\\'),
                        b'/' => Some(b'/'),
                        b'b' => Some(0x08),
                        b'f' => Some(0x0c),
                        b'n' => Some(b'\n'),
                        b'r' => Some(b'\r'),
                        b't' => Some(b'\t'),
                        b'u' => None,
                        _ => return self.err("invalid escape"),
                    };
                    if let Some(byte) = simple {
                        out.push(byte);
                        continue;
                    }
                    let mut code = self.hex4()?;
                    if (0xD800..0xDC00).contains(&code)
                        && self.bytes[self.pos..].starts_with(b"\\u")
                    {
                        let save = self.pos;
                        self.pos += 2;
                        let low = self.hex4()?;
                        if (0xDC00..0xE000).contains(&low) {
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                        } else {
                            self.pos = save;
                        }
                    }
                    push_code_point(&mut out, code);
                }
                0..=0x1f => return self.err("invalid control character"),
                _ => {
                    out.push(b);
                    self.pos += 1;
                }
            }
        }
    }
}

/// Append a code point in generalized UTF-8 (surrogates encoded like any other).
fn push_code_point(out: &mut Vec<u8>, code: u32) {
    match code {
        0..=0x7f => out.push(code as u8),
        0x80..=0x7ff => out.extend([0xc0 | (code >> 6) as u8, 0x80 | (code & 0x3f) as u8]),
        0x800..=0xffff => out.extend([
            0xe0 | (code >> 12) as u8,
            0x80 | ((code >> 6) & 0x3f) as u8,
            0x80 | (code & 0x3f) as u8,
        ]),
        _ => out.extend([
            0xf0 | (code >> 18) as u8,
            0x80 | ((code >> 12) & 0x3f) as u8,
            0x80 | ((code >> 6) & 0x3f) as u8,
            0x80 | (code & 0x3f) as u8,
        ]),
    }
}

fn int_value(negative: bool, digits: &str) -> PyValue {
    let trimmed = digits.trim_start_matches('0');
    let digits = if trimmed.is_empty() { "0" } else { trimmed };
    PyValue::Int {
        negative: negative && digits != "0",
        digits: digits.to_string(),
    }
}

/// A number as Python's numeric tower sees it.
enum Num<'a> {
    Int(bool, &'a str),
    Float(f64),
}

impl PyValue {
    fn as_num(&self) -> Option<Num<'_>> {
        match self {
            PyValue::Bool(false) => Some(Num::Int(false, "0")),
            PyValue::Bool(true) => Some(Num::Int(false, "1")),
            PyValue::Int { negative, digits } => Some(Num::Int(*negative, digits)),
            PyValue::Float(f) => Some(Num::Float(*f)),
            _ => None,
        }
    }

    /// Python's `self == other` for these types.
    pub(crate) fn py_eq(&self, other: &PyValue) -> bool {
        if let (Some(a), Some(b)) = (self.as_num(), other.as_num()) {
            return num_eq(&a, &b);
        }
        match (self, other) {
            (PyValue::None, PyValue::None) => true,
            (PyValue::Str(a), PyValue::Str(b)) => a == b,
            (PyValue::List(a), PyValue::List(b)) | (PyValue::Tuple(a), PyValue::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.py_eq(y))
            }
            (PyValue::Dict(a), PyValue::Dict(b)) => {
                a.len() == b.len()
                    && a.iter().all(|(key, value)| {
                        b.iter()
                            .find(|(k, _)| key_eq(k, key))
                            .is_some_and(|(_, v)| value.py_eq(v))
                    })
            }
            _ => false,
        }
    }
}

/// Dict key lookup: equal and of hash-compatible kinds (numbers with numbers, strings with
/// strings, ...). NaN keys never match a lookup by value.
fn key_eq(a: &PyValue, b: &PyValue) -> bool {
    a.py_eq(b)
}

fn num_eq(a: &Num<'_>, b: &Num<'_>) -> bool {
    match (a, b) {
        (Num::Int(na, da), Num::Int(nb, db)) => na == nb && da == db,
        (Num::Float(x), Num::Float(y)) => x == y,
        (Num::Int(n, d), Num::Float(f)) | (Num::Float(f), Num::Int(n, d)) => {
            int_eq_float(*n, d, *f)
        }
    }
}

/// Exact comparison of an integer with a float, as Python does it.
fn int_eq_float(negative: bool, digits: &str, f: f64) -> bool {
    if !f.is_finite() || f.fract() != 0.0 {
        return false;
    }
    if f == 0.0 {
        return digits == "0";
    }
    if (f < 0.0) != negative {
        return false;
    }
    exact_integer_digits(f.abs()) == digits
}

/// The exact decimal digits of an integral, finite, positive f64.
fn exact_integer_digits(f: f64) -> String {
    if f < 9.007_199_254_740_992e15 {
        return format!("{}", f as u64);
    }
    let bits = f.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32 - 1075;
    let mantissa = (bits & ((1u64 << 52) - 1)) | (1u64 << 52);
    // mantissa * 2^exponent with exponent > 0 here; double a base-1e9 number.
    let mut limbs: Vec<u64> = vec![mantissa % 1_000_000_000, mantissa / 1_000_000_000];
    for _ in 0..exponent {
        let mut carry = 0;
        for limb in limbs.iter_mut() {
            let v = *limb * 2 + carry;
            *limb = v % 1_000_000_000;
            carry = v / 1_000_000_000;
        }
        if carry > 0 {
            limbs.push(carry);
        }
    }
    while limbs.len() > 1 && limbs.last() == Some(&0) {
        limbs.pop();
    }
    let mut out = format!("{}", limbs.last().copied().unwrap_or(0));
    for limb in limbs.iter().rev().skip(1) {
        out.push_str(&format!("{limb:09}"));
    }
    out
}

impl fmt::Display for PyValue {
    /// A Python-like rendering (for messages; strings are shown lossily).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PyValue::None => f.write_str("None"),
            PyValue::Bool(true) => f.write_str("True"),
            PyValue::Bool(false) => f.write_str("False"),
            PyValue::Int { negative, digits } => {
                write!(f, "{}{digits}", if *negative { "-" } else { "" })
            }
            PyValue::Float(x) => f.write_str(&baton_py::float_repr(*x)),
            PyValue::Str(bytes) => write!(f, "{:?}", String::from_utf8_lossy(bytes)),
            PyValue::List(items) => write_seq(f, "[", items, "]"),
            PyValue::Tuple(items) if items.len() == 1 => write_seq(f, "(", items, ",)"),
            PyValue::Tuple(items) => write_seq(f, "(", items, ")"),
            PyValue::Dict(entries) => {
                f.write_str("{")?;
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}: {v}")?;
                }
                f.write_str("}")
            }
            PyValue::Opaque(name) => write!(f, "<{name} object>"),
        }
    }
}

fn write_seq(
    f: &mut fmt::Formatter<'_>,
    open: &str,
    items: &[PyValue],
    close: &str,
) -> fmt::Result {
    f.write_str(open)?;
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    f.write_str(close)
}

/// Truncate a rendering for storage in verdict details.
pub(crate) fn short(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let head: String = text.chars().take(limit / 2).collect();
    let tail: Vec<char> = text.chars().rev().take(limit / 2).collect();
    let tail: String = tail.into_iter().rev().collect();
    format!("{head}...{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> PyValue {
        parse(text, Syntax::Json).unwrap()
    }

    fn record(text: &str) -> PyValue {
        parse(text, Syntax::Record).unwrap()
    }

    #[test]
    fn numbers_follow_python_equality() {
        assert!(record("1").py_eq(&json("1.0")));
        assert!(record("true").py_eq(&json("1")));
        assert!(record("false").py_eq(&json("0.0")));
        assert!(!record("1").py_eq(&json("1.5")));
        assert!(record("-0.0").py_eq(&json("0")));
        assert!(!record("NaN").py_eq(&json("NaN")));
        assert!(record("Infinity").py_eq(&json("1e400")));
        assert!(!record("Infinity").py_eq(&json("1")));
        assert!(record("0.1").py_eq(&json("0.1")));
        assert!(!record("0.30000000000000004").py_eq(&json("0.3")));
    }

    #[test]
    fn big_integers_compare_exactly() {
        let big = "123456789012345678901234567890123456789";
        assert!(record(big).py_eq(&json(big)));
        assert!(!record(big).py_eq(&json("123456789012345678901234567890123456788")));
        // 2**60 and 2**100 as floats equal the ints exactly; 2**100 + 1 does not.
        assert!(record("1.152921504606847e+18").py_eq(&json("1152921504606846976")));
        assert!(record("1.2676506002282294e+30").py_eq(&json("1267650600228229401496703205376")));
        assert!(!record("1.2676506002282294e+30").py_eq(&json("1267650600228229401496703205377")));
        assert!(record("-5").py_eq(&json("-5.0")));
        assert!(!record("-5").py_eq(&json("5")));
        assert_eq!(exact_integer_digits(1e22), "10000000000000000000000");
        assert_eq!(exact_integer_digits(1e23), "99999999999999991611392");
    }

    #[test]
    fn sequences_and_tuples() {
        assert!(record("[1, [2, 3]]").py_eq(&json("[1, [2.0, 3]]")));
        assert!(!record("[1, (2, 3)]").py_eq(&json("[1, [2, 3]]")));
        assert!(!record("[1, 2]").py_eq(&json("[1, 2, 3]")));
        assert!(!record("<set>").py_eq(&json("[]")));
        assert!(!record("[<cycle>]").py_eq(&json("[[]]")));
    }

    #[test]
    fn dicts_need_string_keys_to_match_json() {
        assert!(record(r#"{"a": 1, "b": [2]}"#).py_eq(&json(r#"{"b": [2], "a": 1.0}"#)));
        assert!(!record(r#"{1: "x"}"#).py_eq(&json(r#"{"1": "x"}"#)));
        assert!(!record(r#"{"a": 1}"#).py_eq(&json(r#"{"a": 1, "b": 2}"#)));
        // Duplicate keys: the last value wins, the size is that of the unique keys.
        assert!(record(r#"{"a": 2}"#).py_eq(&json(r#"{"a": 1, "a": 2}"#)));
    }

    #[test]
    fn strings_decode_like_json_loads() {
        assert!(record(r#""\u00e9""#).py_eq(&json("\"é\"")));
        assert!(record(r#""\ud83d\ude00""#).py_eq(&json("\"😀\"")));
        assert!(!record(r#""\ud83d""#).py_eq(&json("\"😀\"")));
        assert!(parse("\"a\nb\"", Syntax::Json).is_err());
        assert!(!record(r#""1""#).py_eq(&json("1")));
    }

    #[test]
    fn json_grammar_edges() {
        assert!(parse("", Syntax::Json).is_err());
        assert!(parse("[1,]", Syntax::Json).is_err());
        assert!(parse("01", Syntax::Json).is_err());
        assert!(parse("1 2", Syntax::Json).is_err());
        assert!(parse("(1)", Syntax::Json).is_err());
        assert!(parse("<x>", Syntax::Json).is_err());
        assert!(parse("{1: 2}", Syntax::Json).is_err());
        assert!(parse(&"9".repeat(4301), Syntax::Json).is_err());
        assert!(parse(&"9".repeat(4300), Syntax::Json).is_ok());
        assert_eq!(json(" [ ] "), PyValue::List(vec![]));
        assert_eq!(json("1E2"), PyValue::Float(100.0));
        assert_eq!(
            json("-0"),
            PyValue::Int {
                negative: false,
                digits: "0".into()
            }
        );
    }

    #[test]
    fn deep_nesting_is_refused_without_touching_the_host_stack() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let too_deep = format!("[{ok}]");
        // A small stack: what a value at the limit costs in a debug build must fit.
        std::thread::Builder::new()
            .stack_size(512 << 10)
            .spawn(move || {
                let a = parse(&ok, Syntax::Record).unwrap();
                let b = parse(&ok, Syntax::Json).unwrap();
                assert!(a.py_eq(&b));
                assert!(a.to_string().len() >= 2 * MAX_DEPTH);
                assert!(
                    parse(&too_deep, Syntax::Record)
                        .unwrap_err()
                        .contains("too deep")
                );
                assert!(parse(&"[".repeat(1_000_000), Syntax::Json).is_err());
            })
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn display_is_python_like() {
        assert_eq!(
            record("[1, (2), {\"a\": null}, 0.5, true, <set>]").to_string(),
            "[1, (2,), {\"a\": None}, 0.5, True, <set object>]"
        );
        assert_eq!(
            record("[1e16, 1e-7, -0.0, 2.675, NaN, -Infinity]").to_string(),
            "[1e+16, 1e-07, -0.0, 2.675, nan, -inf]"
        );
        assert_eq!(short("abcdefghij", 4), "ab...ij");
    }
}
