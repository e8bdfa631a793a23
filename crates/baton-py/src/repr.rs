//! `repr(str)`, `repr(bytes)` and the `unicode_escape` codec.

use std::fmt::Write as _;

use crate::printable::is_printable;

/// Python's `repr(s)` for a str.
///
/// Single quotes unless `s` contains `'` and no `"`; backslash, the chosen quote, `\t`, `\n`
/// and `\r` escaped; every other character that [`is_printable`] rejects as `\xNN`, `\uNNNN`
/// or `\UNNNNNNNN`; printable non-ASCII characters kept as they are.
///
/// ```
/// assert_eq!(baton_py::str_repr("it's"), r#""it's""#);
/// assert_eq!(baton_py::str_repr("tab\t\u{a0}é\u{378}"), r"'tab\t\xa0é\u0378'");
/// ```
#[must_use]
pub fn str_repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            c if let Some(escape) = short_escape(c) => out.push_str(escape),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => push_hex_escape(&mut out, c),
        }
    }
    out.push(quote);
    out
}

/// Python's `repr(b)` for a bytes object: `b'...'` with the quote chosen as for
/// [`str_repr`], printable ASCII kept, `\t`, `\n`, `\r`, `\\` and the quote escaped, and
/// every other byte as `\xNN`.
///
/// ```
/// assert_eq!(baton_py::bytes_repr(b"a'\x00\xff"), r#"b"a'\x00\xff""#);
/// ```
#[must_use]
pub fn bytes_repr(bytes: &[u8]) -> String {
    let quote = if bytes.contains(&b'\'') && !bytes.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    let mut out = String::with_capacity(bytes.len() + 3);
    out.push('b');
    out.push(char::from(quote));
    for &b in bytes {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            _ if b == quote => {
                out.push('\\');
                out.push(char::from(b));
            }
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push(char::from(quote));
    out
}

/// Python's `s.encode("unicode_escape").decode("ascii")`.
///
/// Unlike [`str_repr`] it escapes every non-ASCII character, printable or not, and leaves
/// quotes alone: `\\`, `\t`, `\n`, `\r`; `\xNN` below U+0020, from U+007F to U+00FF; ASCII
/// kept; `\uNNNN` and `\UNNNNNNNN` above.
///
/// ```
/// assert_eq!(baton_py::unicode_escape("é'\u{1f600}"), r"\xe9'\U0001f600");
/// ```
#[must_use]
pub fn unicode_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            c if let Some(escape) = short_escape(c) => out.push_str(escape),
            ' '..='~' => out.push(c),
            c => push_hex_escape(&mut out, c),
        }
    }
    out
}

/// The escapes `repr` and `unicode_escape` write for backslash, tab, newline and return.
fn short_escape(c: char) -> Option<&'static str> {
    match c {
        '\\' => Some("\\\\"),
        '\t' => Some("\\t"),
        '\n' => Some("\\n"),
        '\r' => Some("\\r"),
        _ => None,
    }
}

/// `\xNN`, `\uNNNN` or `\UNNNNNNNN`, the shortest of the three that holds `c`.
fn push_hex_escape(out: &mut String, c: char) {
    let cp = u32::from(c);
    let _ = if cp < 0x100 {
        write!(out, "\\x{cp:02x}")
    } else if cp < 0x1_0000 {
        write!(out, "\\u{cp:04x}")
    } else {
        write!(out, "\\U{cp:08x}")
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_pick_quotes_and_escapes_like_python() {
        let cases = [
            ("", "''"),
            ("plain", "'plain'"),
            ("it's", "\"it's\""),
            ("say \"hi\"", "'say \"hi\"'"),
            ("both ' and \"", "'both \\' and \"'"),
            ("tab\tnl\ncr\r", "'tab\\tnl\\ncr\\r'"),
            ("back\\slash", "'back\\\\slash'"),
            ("bell\u{7}del\u{7f}", "'bell\\x07del\\x7f'"),
            ("café – naïve", "'café – naïve'"),
            ("nbsp\u{a0}shy\u{ad}", "'nbsp\\xa0shy\\xad'"),
            ("zw\u{200b}j", "'zw\\u200bj'"),
            // Unassigned in Unicode 14.0, so not printable.
            ("\u{378}", "'\\u0378'"),
            ("emoji 🎉", "'emoji 🎉'"),
            ("private \u{f0000}", "'private \\U000f0000'"),
        ];
        for (s, want) in cases {
            assert_eq!(str_repr(s), want, "repr of {s:?}");
        }
    }

    #[test]
    fn bytes_escape_everything_outside_printable_ascii() {
        assert_eq!(bytes_repr(b""), "b''");
        assert_eq!(bytes_repr(b"a\x00'"), "b\"a\\x00'\"");
        assert_eq!(bytes_repr(b"'\""), "b'\\'\"'");
        assert_eq!(
            bytes_repr(b"\t\n\r\\\x7f\x80"),
            "b'\\t\\n\\r\\\\\\x7f\\x80'"
        );
    }

    #[test]
    fn unicode_escape_leaves_quotes_and_escapes_non_ascii() {
        assert_eq!(unicode_escape("a'\"\\\t\u{1}"), "a'\"\\\\\\t\\x01");
        assert_eq!(
            unicode_escape("\u{7f}\u{ff}\u{100}é"),
            "\\x7f\\xff\\u0100\\xe9"
        );
        assert_eq!(unicode_escape("\u{10ffff}"), "\\U0010ffff");
    }
}
