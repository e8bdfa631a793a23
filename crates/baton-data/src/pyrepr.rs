//! Python's `repr()` for JSON values.
//!
//! LiC fills the actions system prompt with `str(sample["function"])`, i.e. the
//! Python repr of a list of dicts, not JSON. Reproducing the prompt byte for byte
//! needs Python's rules: quote choice and escapes for strings, `True`/`False`/
//! `None`, the shortest round-trip float repr with `.0` and exponent forms, keys
//! in insertion order, and `, ` / `: ` separators.
//!
//! JSON integers map to Python ints and JSON numbers with a fraction or an
//! exponent map to floats, as `json.loads` does. (An integer too large for
//! `u64` is read by serde_json as a float and prints as one; Python would keep
//! it an int. No LiC sample has such a number.)

use std::fmt::Write as _;

use serde_json::Value;

use crate::nonprintable::NON_PRINTABLE;

/// Python `repr()` of the value `json.loads` would produce for `value`.
///
/// ```
/// use serde_json::json;
/// let v = json!([{"name": "f", "ok": true, "x": 1.0, "tags": ["it's"], "none": null}]);
/// assert_eq!(
///     baton_data::py_repr(&v),
///     r#"[{'name': 'f', 'ok': True, 'x': 1.0, 'tags': ["it's"], 'none': None}]"#
/// );
/// ```
pub fn py_repr(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else {
                // serde_json numbers are finite; a non-f64 number cannot occur
                // without `arbitrary_precision`, which the workspace does not enable.
                out.push_str(&py_float_repr(n.as_f64().unwrap_or(f64::NAN)));
            }
        }
        Value::String(s) => out.push_str(&py_str_repr(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&py_str_repr(key));
                out.push_str(": ");
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

/// Python `repr()` of a float: shortest round-trip digits, `.0` on integral
/// values, exponent form (`1e-05`, `1.5e+16`) when the decimal exponent is
/// below -4 or at least 16, and `inf` / `-inf` / `nan`.
pub fn py_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "nan".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0.0" } else { "0.0" }.to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip digits in scientific form,
    // e.g. `1.5e16`, `-2.5e-7`, `3e0`.
    let sci = format!("{x:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !(-4..16).contains(&exp) {
        let mut out = String::from(sign);
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let exp_sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{exp_sign}{:02}", exp.abs());
        return out;
    }
    // Fixed notation: the decimal point sits after `exp + 1` digits.
    let point = exp + 1;
    let mut out = String::from(sign);
    if point <= 0 {
        out.push_str("0.");
        for _ in 0..(-point) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let point = point as usize;
        if digits.len() <= point {
            out.push_str(&digits);
            for _ in digits.len()..point {
                out.push('0');
            }
            out.push_str(".0");
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
    out
}

/// Python `repr()` of a str: single quotes unless the text contains `'` and no
/// `"`; backslash, the chosen quote, `\t`, `\n`, `\r` escaped; other
/// non-printable characters as `\xNN`, `\uNNNN` or `\UNNNNNNNN`; printable
/// non-ASCII characters kept as they are.
pub fn py_str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let cp = u32::from(c);
                let _ = if cp < 0x100 {
                    write!(out, "\\x{cp:02x}")
                } else if cp < 0x1_0000 {
                    write!(out, "\\u{cp:04x}")
                } else {
                    write!(out, "\\U{cp:08x}")
                };
            }
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable()` for one character (CPython 3.11 tables).
fn is_printable(c: char) -> bool {
    let cp = u32::from(c);
    if (0x20..0x7f).contains(&cp) {
        return true;
    }
    let idx = NON_PRINTABLE.partition_point(|&(_, last)| last < cp);
    NON_PRINTABLE.get(idx).is_none_or(|&(first, _)| first > cp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_match_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
            (123_456_789.125, "123456789.125"),
            (1.0 / 3.0, "0.3333333333333333"),
            (-0.0, "-0.0"),
            (2.5e-7, "2.5e-07"),
            (1e300, "1e+300"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (100.0, "100.0"),
            (0.00012, "0.00012"),
        ];
        for (x, want) in cases {
            assert_eq!(py_float_repr(x), want, "repr of {x:?}");
        }
    }

    #[test]
    fn strings_pick_quotes_and_escapes_like_python() {
        let cases = [
            ("plain", "'plain'"),
            ("it's", "\"it's\""),
            ("say \"hi\"", "'say \"hi\"'"),
            ("both ' and \"", "'both \\' and \"'"),
            ("tab\tnl\ncr\r", "'tab\\tnl\\ncr\\r'"),
            ("back\\slash", "'back\\\\slash'"),
            ("bell\u{7}del\u{7f}", "'bell\\x07del\\x7f'"),
            ("café – naïve", "'café – naïve'"),
            ("nbsp\u{a0}x", "'nbsp\\xa0x'"),
            ("zw\u{200b}j", "'zw\\u200bj'"),
            ("emoji 🎉", "'emoji 🎉'"),
            ("private \u{f0000}", "'private \\U000f0000'"),
        ];
        for (s, want) in cases {
            assert_eq!(py_str_repr(s), want, "repr of {s:?}");
        }
    }

    #[test]
    fn values_nest_with_python_separators() {
        let v = json!({"b": [1, 2.0, -3], "a": {"t": true, "f": false, "n": null}, "e": []});
        assert_eq!(
            py_repr(&v),
            "{'b': [1, 2.0, -3], 'a': {'t': True, 'f': False, 'n': None}, 'e': []}"
        );
        assert_eq!(py_repr(&json!(u64::MAX)), "18446744073709551615");
    }
}
