//! Python's notion of whitespace, which `str.split()`, `str.strip()` and `str.rstrip()` use.
//!
//! CPython treats a character as whitespace when its bidirectional class is `WS`, `B` or `S` or
//! its category is `Zs`. That is Rust's [`char::is_whitespace`] (the Unicode `White_Space`
//! property) plus the four ASCII information separators U+001C..U+001F. The set is spelled out
//! here rather than derived from `char::is_whitespace`, so a change in either Unicode table cannot
//! silently change tokenisation.

/// Whether CPython 3.11's `str.isspace()` is true for `c`, i.e. whether `str.split()` splits on it.
///
/// ```
/// assert!(baton_bleu::is_python_whitespace('\u{1f}'));
/// assert!(baton_bleu::is_python_whitespace('\u{3000}'));
/// assert!(!baton_bleu::is_python_whitespace('\u{200b}'));
/// ```
#[must_use]
pub fn is_python_whitespace(c: char) -> bool {
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

/// Python's `s.strip()`: `s` without leading and trailing Python whitespace.
///
/// Differs from [`str::trim`] only on U+001C..U+001F, which Python strips and Rust keeps.
///
/// ```
/// assert_eq!(baton_bleu::python_strip("\u{1e} a b \u{a0}"), "a b");
/// ```
#[must_use]
pub fn python_strip(s: &str) -> &str {
    s.trim_matches(is_python_whitespace)
}

/// Python's `s.rstrip()`.
pub(crate) fn python_rstrip(s: &str) -> &str {
    s.trim_end_matches(is_python_whitespace)
}

/// Length in bytes of the Python whitespace character starting at `bytes[i]`, or 0 when the
/// character there is not whitespace. `bytes` must be valid UTF-8 and `i` a character boundary.
#[inline]
pub(crate) fn whitespace_len(bytes: &[u8], i: usize) -> usize {
    let b = bytes[i];
    if b < 0x80 {
        return usize::from(matches!(b, b'\t'..=b'\r' | 0x1c..=0x20));
    }
    match b {
        // U+0085, U+00A0
        0xc2 => match bytes.get(i + 1) {
            Some(0x85 | 0xa0) => 2,
            _ => 0,
        },
        // U+1680
        0xe1 => usize::from(bytes.get(i + 1..i + 3) == Some(&[0x9a, 0x80])) * 3,
        // U+2000..U+200A, U+2028, U+2029, U+202F, U+205F
        0xe2 => match (bytes.get(i + 1), bytes.get(i + 2)) {
            (Some(0x80), Some(0x80..=0x8a | 0xa8 | 0xa9 | 0xaf)) | (Some(0x81), Some(0x9f)) => 3,
            _ => 0,
        },
        // U+3000
        0xe3 => usize::from(bytes.get(i + 1..i + 3) == Some(&[0x80, 0x80])) * 3,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The full list printed by CPython 3.11.7:
    /// `[hex(c) for c in range(0x110000) if chr(c).isspace()]`.
    const PYTHON_WHITESPACE: [u32; 29] = [
        0x9, 0xa, 0xb, 0xc, 0xd, 0x1c, 0x1d, 0x1e, 0x1f, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001,
        0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029,
        0x202f, 0x205f, 0x3000,
    ];

    #[test]
    fn whitespace_set_matches_cpython() {
        let ours: Vec<u32> = (0..=0x10ffff_u32)
            .filter_map(char::from_u32)
            .filter(|&c| is_python_whitespace(c))
            .map(u32::from)
            .collect();
        assert_eq!(ours, PYTHON_WHITESPACE);
    }

    #[test]
    fn byte_level_check_agrees_with_char_level() {
        for c in (0..=0x10ffff_u32).filter_map(char::from_u32) {
            let s = format!("{c}x");
            let expected = if is_python_whitespace(c) {
                c.len_utf8()
            } else {
                0
            };
            assert_eq!(
                whitespace_len(s.as_bytes(), 0),
                expected,
                "U+{:04X}",
                u32::from(c)
            );
        }
    }

    #[test]
    fn strip_removes_separators_that_trim_keeps() {
        assert_eq!(python_strip("\u{1c}\u{1d} x \u{1e}\u{1f}"), "x");
        assert_eq!(python_rstrip("  x \u{2028}"), "  x");
    }
}
