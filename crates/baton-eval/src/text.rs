//! Small helpers that reproduce Python string behaviour.

/// Python's `str.strip()` with no argument: Unicode whitespace plus the separators
/// U+001C..U+001F, which Python also counts as whitespace.
pub fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}
