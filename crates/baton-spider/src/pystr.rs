//! Python 3 string semantics the evaluator depends on.
//!
//! LiC's evaluator is Python: `str.split()`, `str.strip()`, `re`'s `\s`, `\w` and
//! `\d`, and `re.IGNORECASE` all use Unicode rules that differ in small ways from
//! Rust's (`char::is_whitespace` misses U+001C..U+001F; `char::is_alphanumeric`
//! includes combining vowel signs that Python's `\w` rejects). These functions copy
//! the Python definitions so tokenization and value extraction agree on every
//! character, not only on ASCII.

use std::sync::LazyLock;

use regex::Regex;

/// Python `str.isspace()`, which is also `re`'s `\s` for `str` patterns.
pub(crate) fn is_space(c: char) -> bool {
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

static WORD: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[\p{L}\p{N}_]$").expect("valid word class"));
static DIGIT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\p{Nd}$").expect("valid digit class"));

/// `re`'s `\w` for `str` patterns: letters (`L*`), numbers (`N*`) and `_`.
pub(crate) fn is_word(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    let mut buf = [0u8; 4];
    WORD.is_match(c.encode_utf8(&mut buf))
}

/// `re`'s `\d` for `str` patterns: decimal digits (`Nd`).
pub(crate) fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_digit();
    }
    let mut buf = [0u8; 4];
    DIGIT.is_match(c.encode_utf8(&mut buf))
}

/// The class `[A-ZÀ-Ü]` compiled with `re.IGNORECASE | re.UNICODE`, as sqlparse
/// uses it for identifier starts. Python also matches the characters whose simple
/// case mapping lands in the range (dotless/dotted i, long s, Kelvin and Ångström
/// signs); U+00D7 `×` sits inside `À-Ü` and matches too.
pub(crate) fn is_name_start(c: char) -> bool {
    matches!(
        c,
        'A'..='Z'
            | 'a'..='z'
            | '\u{c0}'..='\u{dc}'
            | '\u{e0}'..='\u{f6}'
            | '\u{f8}'..='\u{fc}'
            | '\u{130}'
            | '\u{131}'
            | '\u{17f}'
            | '\u{212a}'
            | '\u{212b}'
    )
}

/// Does `c` match the ASCII letter or symbol `lit` under `re.IGNORECASE`?
pub(crate) fn ci_char(c: char, lit: char) -> bool {
    if c == lit || c.eq_ignore_ascii_case(&lit) {
        return true;
    }
    match lit.to_ascii_lowercase() {
        'i' => matches!(c, '\u{130}' | '\u{131}'),
        'k' => c == '\u{212a}',
        's' => c == '\u{17f}',
        _ => false,
    }
}

/// Python `str.strip()` with no argument.
pub(crate) fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// Python `str.split()` with no argument.
pub(crate) fn split(s: &str) -> impl Iterator<Item = &str> {
    s.split(is_space).filter(|t| !t.is_empty())
}

/// Python `str.rstrip()` with no argument.
pub(crate) fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_space)
}

/// Python `str.lower()` (full Unicode case mapping, final sigma included).
pub(crate) fn lower(s: &str) -> String {
    s.to_lowercase()
}

/// Python `str.upper()`.
pub(crate) fn upper(s: &str) -> String {
    s.to_uppercase()
}

/// Python `re.sub(r"\s+", " ", s)`.
pub(crate) fn collapse_space(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_space = false;
    for c in s.chars() {
        if is_space(c) {
            if !in_space {
                out.push(' ');
            }
            in_space = true;
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

/// `bytes.decode("utf-8", errors="ignore")`: invalid bytes are dropped.
pub(crate) fn decode_utf8_ignore(mut bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    loop {
        match std::str::from_utf8(bytes) {
            Ok(valid) => {
                out.push_str(valid);
                return out;
            }
            Err(err) => {
                let (valid, rest) = bytes.split_at(err.valid_up_to());
                // `valid` was checked by `from_utf8` just above.
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
    fn whitespace_matches_python_isspace() {
        for c in [
            '\t', '\n', '\u{b}', '\u{c}', '\r', '\u{1c}', '\u{1f}', ' ', '\u{85}',
        ] {
            assert!(is_space(c), "{c:?}");
        }
        for c in ['\u{200b}', 'a', '\u{180e}', '\u{feff}'] {
            assert!(!is_space(c), "{c:?}");
        }
        assert_eq!(
            split(" a\u{1c}b\u{3000}c ").collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert_eq!(strip("\u{a0} x \n"), "x");
    }

    #[test]
    fn word_and_digit_classes() {
        assert!(is_word('é') && is_word('_') && is_word('٣') && is_word('²'));
        assert!(!is_word('-') && !is_word('×') && !is_word('\u{93e}'));
        assert!(is_digit('٣') && !is_digit('²') && !is_digit('a'));
    }

    #[test]
    fn ignorecase_class_and_literals() {
        assert!(is_name_start('×') && is_name_start('ſ') && is_name_start('ü'));
        assert!(!is_name_start('÷') && !is_name_start('ß') && !is_name_start('_'));
        assert!(ci_char('ſ', 'S') && ci_char('K', 'k') && ci_char('ı', 'I'));
        assert!(!ci_char('é', 'E'));
    }

    #[test]
    fn collapse_and_decode() {
        assert_eq!(collapse_space("a \t\n b\u{1c}c"), "a b c");
        assert_eq!(decode_utf8_ignore(b"ok\xff"), "ok");
        assert_eq!(decode_utf8_ignore(b"a\xe2\x82b\xc3\xa9"), "abé");
    }
}
