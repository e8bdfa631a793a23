//! Syntax validation of f-string bodies, after CPython 3.11's `Parser/string_parser.c`.
//!
//! LiC never accepts an f-string as an argument value (an unsupported node), but an f-string
//! elsewhere (a dropped positional argument) must still parse for the answer to be decoded,
//! so only acceptance is reproduced here, not the `JoinedStr` contents.

use crate::error::BfclError;
use crate::lexer::decode_escapes;
use crate::parser::parse_fstring_expr;

/// Check that `body` (the characters between the quotes) is a valid f-string.
pub(crate) fn validate_fstring(body: &[char], raw: bool, at: usize) -> Result<(), BfclError> {
    let mut i = 0;
    walk(body, &mut i, raw, 0, at)?;
    if i < body.len() {
        return Err(BfclError::syntax(at, "f-string: single '}' is not allowed"));
    }
    Ok(())
}

/// Walk literal text and replacement fields until the end, or (when `depth > 0`, inside a
/// format spec) until the `}` that closes the enclosing field, which is left unconsumed.
fn walk(body: &[char], i: &mut usize, raw: bool, depth: usize, at: usize) -> Result<(), BfclError> {
    let mut literal_start = *i;
    while *i < body.len() {
        let c = body[*i];
        if c == '\\' && !raw {
            *i += 2;
            continue;
        }
        if c == '{' || c == '}' {
            if depth == 0 && body.get(*i + 1) == Some(&c) {
                check_literal(&body[literal_start..*i], raw, at)?;
                *i += 2;
                literal_start = *i;
                continue;
            }
            check_literal(&body[literal_start..*i], raw, at)?;
            if c == '}' {
                if depth == 0 {
                    return Err(BfclError::syntax(at, "f-string: single '}' is not allowed"));
                }
                return Ok(());
            }
            *i += 1;
            field(body, i, raw, depth, at)?;
            literal_start = *i;
            continue;
        }
        *i += 1;
    }
    check_literal(&body[literal_start..body.len().min(*i)], raw, at)
}

fn check_literal(text: &[char], raw: bool, at: usize) -> Result<(), BfclError> {
    if raw {
        return Ok(());
    }
    decode_escapes(text, false, at).map(|_| ())
}

/// One replacement field, after its `{`; consumes through the closing `}`.
fn field(
    body: &[char],
    i: &mut usize,
    raw: bool,
    depth: usize,
    at: usize,
) -> Result<(), BfclError> {
    if depth >= 2 {
        return Err(BfclError::syntax(
            at,
            "f-string: expressions nested too deeply",
        ));
    }
    let start = *i;
    let mut stack: Vec<char> = Vec::new();
    let mut quote: Option<(char, bool)> = None;
    while *i < body.len() {
        let c = body[*i];
        if c == '\\' {
            return Err(BfclError::syntax(
                at,
                "f-string expression part cannot include a backslash",
            ));
        }
        if let Some((q, triple)) = quote {
            if c == q {
                if !triple {
                    quote = None;
                } else if body.get(*i + 1) == Some(&q) && body.get(*i + 2) == Some(&q) {
                    quote = None;
                    *i += 2;
                }
            }
            *i += 1;
            continue;
        }
        match c {
            '\'' | '"' => {
                let triple = body.get(*i + 1) == Some(&c) && body.get(*i + 2) == Some(&c);
                quote = Some((c, triple));
                *i += if triple { 3 } else { 1 };
                continue;
            }
            '[' | '(' | '{' => {
                if stack.len() >= 200 {
                    return Err(BfclError::syntax(
                        at,
                        "f-string: too many nested parenthesis",
                    ));
                }
                stack.push(c);
            }
            '#' => {
                return Err(BfclError::syntax(
                    at,
                    "f-string expression part cannot include '#'",
                ));
            }
            ']' | ')' | '}' if !stack.is_empty() => {
                let open = stack.pop().unwrap_or('(');
                let expected = match open {
                    '[' => ']',
                    '(' => ')',
                    _ => '}',
                };
                if expected != c {
                    return Err(BfclError::syntax(
                        at,
                        "f-string: closing parenthesis does not match",
                    ));
                }
            }
            ']' | ')' => return Err(BfclError::syntax(at, format!("f-string: unmatched '{c}'"))),
            '!' | '=' | '<' | '>' if stack.is_empty() && body.get(*i + 1) == Some(&'=') => {
                *i += 2;
                continue;
            }
            '<' | '>' => {}
            '!' | ':' | '}' | '=' if stack.is_empty() => break,
            _ => {}
        }
        *i += 1;
    }
    if quote.is_some() {
        return Err(BfclError::syntax(at, "f-string: unterminated string"));
    }
    if !stack.is_empty() {
        return Err(BfclError::syntax(at, "f-string: unmatched '('"));
    }
    if *i >= body.len() {
        return Err(BfclError::syntax(at, "f-string: expecting '}'"));
    }
    let text: String = body[start..*i].iter().collect();
    if text
        .trim_matches([' ', '\t', '\n', '\x0c', '\r'])
        .is_empty()
    {
        return Err(BfclError::syntax(
            at,
            "f-string: empty expression not allowed",
        ));
    }
    parse_fstring_expr(&text).map_err(|_| BfclError::syntax(at, "f-string: invalid syntax"))?;
    if body[*i] == '=' {
        *i += 1;
        while body.get(*i).is_some_and(|c| c.is_ascii_whitespace()) {
            *i += 1;
        }
    }
    if body.get(*i) == Some(&'!') {
        *i += 1;
        if !matches!(body.get(*i), Some('s' | 'r' | 'a')) {
            return Err(BfclError::syntax(
                at,
                "f-string: invalid conversion character: expected 's', 'r', or 'a'",
            ));
        }
        *i += 1;
    }
    if body.get(*i) == Some(&':') {
        *i += 1;
        walk(body, i, raw, depth + 1, at)?;
    }
    if body.get(*i) != Some(&'}') {
        return Err(BfclError::syntax(at, "f-string: expecting '}'"));
    }
    *i += 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> bool {
        let chars: Vec<char> = s.chars().collect();
        validate_fstring(&chars, false, 0).is_ok()
    }

    #[test]
    fn accepts_and_rejects_like_cpython() {
        assert!(ok("a{x}b"));
        assert!(ok("{x!r:>{w}}"));
        assert!(ok("{x=}"));
        assert!(ok("{x = !r}"));
        assert!(ok("{{}}"));
        assert!(ok("{a:=1}"));
        assert!(ok("{(lambda x:1)}"));
        assert!(ok("{x!=y}"));
        assert!(!ok("{}"));
        assert!(!ok("{ }"));
        assert!(!ok("}"));
        assert!(!ok("{a b}"));
        assert!(!ok("{a!}"));
        assert!(!ok("{a!r }"));
        assert!(!ok("{lambda x:1}"));
        assert!(!ok("{a:{b:{c}}}"));
        assert!(!ok("{a#}"));
        assert!(!ok("{x"));
    }
}
