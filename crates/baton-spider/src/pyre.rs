//! Python `re` semantics that sqlparse's patterns depend on: `\w`, `\d`, `re.IGNORECASE`
//! classes and `re.sub(r"\s+", " ", s)`.
//!
//! sqlparse 0.6.1 compiles its lexer with `re.IGNORECASE | re.UNICODE`, whose classes differ
//! from Rust's (`char::is_alphanumeric` includes combining vowel signs that Python's `\w`
//! rejects; `[A-ZÀ-Ü]` under IGNORECASE also matches the Kelvin sign). The `str` rules these
//! build on (whitespace, strip, case) come from `baton-py`.

use std::sync::LazyLock;

use regex::Regex;

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

/// Python `re.sub(r"\s+", " ", s)`.
pub(crate) fn collapse_space(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_space = false;
    for c in s.chars() {
        if baton_py::is_space(c) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn collapse_uses_python_whitespace() {
        assert_eq!(collapse_space("a \t\n b\u{1c}c\u{3000}"), "a b c ");
    }
}
