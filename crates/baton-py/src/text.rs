//! The `str` methods whose Unicode rules differ from Rust's: whitespace (`isspace`, `strip`,
//! `rstrip`, `split`), case (`lower`, `upper`) and `bytes.decode("utf-8", "ignore")`.

use crate::printable::is_assigned;

/// Python's `str.isspace()` for one character, which is also what `str.split()`, `str.strip()`
/// and `re`'s `\s` (for str patterns) treat as whitespace.
///
/// CPython counts a character when its bidirectional class is `WS`, `B` or `S` or its category
/// is `Zs`: Rust's [`char::is_whitespace`] plus the information separators U+001C..U+001F. The
/// set is spelled out rather than derived from `char::is_whitespace`, so a change in Rust's
/// Unicode tables cannot silently change it.
///
/// ```
/// assert!(baton_py::is_space('\u{1f}') && baton_py::is_space('\u{3000}'));
/// assert!(!baton_py::is_space('\u{200b}'));
/// ```
#[must_use]
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t'..='\r'
            | '\u{1c}'..='\u{20}'
            | '\u{85}'
            | '\u{a0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200a}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202f}'
            | '\u{205f}'
            | '\u{3000}'
    )
}

/// Python's `s.strip()` with no argument. Differs from [`str::trim`] on U+001C..U+001F.
///
/// ```
/// assert_eq!(baton_py::strip("\u{1e} a b \u{a0}"), "a b");
/// ```
#[must_use]
pub fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Python's `s.rstrip()` with no argument.
#[must_use]
pub fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_space)
}

/// Python's `s.split()` with no argument: the runs of non-whitespace, no empty pieces.
///
/// ```
/// let words: Vec<&str> = baton_py::split(" a\u{1c}b\u{3000}c ").collect();
/// assert_eq!(words, ["a", "b", "c"]);
/// ```
pub fn split(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_space).filter(|piece| !piece.is_empty())
}

/// Python 3.11's `s.lower()`: full case mapping (`İ` becomes `i̇`) and the final sigma.
///
/// Rust's [`str::to_lowercase`] follows the same rules on a newer Unicode version; the case
/// pairs added since Unicode 14.0 (Garay, Kirat Rai, new Latin letters) are left unchanged, as
/// CPython 3.11 leaves them.
///
/// ```
/// assert_eq!(baton_py::lower("ΟΔΟΣ Σ"), "οδος σ");
/// assert_eq!(baton_py::lower("\u{a7dc}"), "\u{a7dc}"); // Unicode 16; Rust gives U+019B
/// ```
#[must_use]
pub fn lower(s: &str) -> String {
    if !s.chars().any(keeps_lower) {
        return s.to_lowercase();
    }
    // Lower the runs between the characters CPython 3.11 keeps. A kept character is unassigned
    // in Unicode 14.0 (or maps to one that is), so to Python's final-sigma rule it is neither
    // cased nor case-ignorable and ends the search for a cased neighbour, as the end of a run
    // does for Rust's.
    let mut out = String::with_capacity(s.len());
    let mut run_start = 0;
    for (i, c) in s.char_indices() {
        if keeps_lower(c) {
            out.push_str(&s[run_start..i].to_lowercase());
            out.push(c);
            run_start = i + c.len_utf8();
        }
    }
    out.push_str(&s[run_start..].to_lowercase());
    out
}

/// Python 3.11's `s.upper()`: full case mapping (`ß` becomes `SS`), with the case pairs added
/// since Unicode 14.0 left unchanged as in [`lower`].
///
/// ```
/// assert_eq!(baton_py::upper("straße"), "STRASSE");
/// assert_eq!(baton_py::upper("\u{264}"), "\u{264}"); // Unicode 16; Rust gives U+A7CB
/// ```
#[must_use]
pub fn upper(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c.to_ascii_uppercase());
        } else if !is_assigned(c) || c.to_uppercase().any(|m| !is_assigned(m)) {
            out.push(c);
        } else {
            out.extend(c.to_uppercase());
        }
    }
    out
}

/// Whether [`lower`] leaves `c` as it is where Rust's tables, newer than CPython 3.11's, would
/// treat it as a letter: `c`, or a character it lowers to, is unassigned in Unicode 14.0.
fn keeps_lower(c: char) -> bool {
    !c.is_ascii() && (!is_assigned(c) || c.to_lowercase().any(|m| !is_assigned(m)))
}

/// Python's `b.decode("utf-8", errors="ignore")`: the bytes of every invalid sequence dropped,
/// where an invalid sequence is the longest prefix of a valid encoding (as CPython and
/// [`std::str::from_utf8`] both delimit them).
///
/// ```
/// assert_eq!(baton_py::decode_utf8_ignore(b"a\xe2\x82b\xc3\xa9\xff"), "abé");
/// ```
#[must_use]
pub fn decode_utf8_ignore(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(valid) => {
                out.push_str(valid);
                return out;
            }
            Err(err) => {
                let (valid, rest) = bytes.split_at(err.valid_up_to());
                // `from_utf8` has just checked `valid`.
                out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match err.error_len() {
                    Some(bad) => bytes = &rest[bad..],
                    None => return out,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_is_pythons() {
        for c in [
            '\t', '\n', '\u{b}', '\u{c}', '\r', '\u{1c}', '\u{1f}', ' ', '\u{85}', '\u{a0}',
        ] {
            assert!(is_space(c), "{c:?}");
        }
        for c in ['\u{200b}', 'a', '\u{180e}', '\u{feff}'] {
            assert!(!is_space(c), "{c:?}");
        }
        assert_eq!(strip("\u{a0} x \n"), "x");
        assert_eq!(rstrip(" x \u{2028}"), " x");
        assert_eq!(split("").count(), 0);
    }

    #[test]
    fn case_follows_unicode_14() {
        assert_eq!(lower("İ"), "i\u{307}");
        assert_eq!(lower("ΑΣ ΣΑ Σ"), "ας σα σ");
        assert_eq!(upper("ﬁ ŉ"), "FI ʼN");
        // U+0264 and U+A7CB became a pair in Unicode 16; Python 3.11 maps neither.
        assert_eq!(upper("\u{264}"), "\u{264}");
        assert_eq!(lower("\u{a7cb}Σ"), "\u{a7cb}σ");
        assert_eq!(lower("Σ\u{10d50}"), "σ\u{10d50}");
        assert_eq!(lower("AΣ\u{10d50}"), "aς\u{10d50}");
    }

    #[test]
    fn decoding_drops_invalid_sequences() {
        assert_eq!(decode_utf8_ignore(b"ok\xff"), "ok");
        assert_eq!(decode_utf8_ignore(b"\xf0\x9f\x98"), "");
        assert_eq!(decode_utf8_ignore(b"\xed\xa0\x80x"), "x");
    }
}
