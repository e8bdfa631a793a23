//! f-string bodies, parsed as CPython 3.11's `Parser/string_parser.c` does.
//!
//! LiC never accepts an f-string as an argument value (an unsupported node), but an f-string
//! elsewhere must still parse for the answer to be decoded, and one inside a keyword-less
//! nested call is turned back into text by `ast.unparse`, so the pieces are kept.

use crate::ast::{FPart, FormattedValue};
use crate::error::BfclError;
use crate::lexer::decode_escapes;
use crate::parser::parse_fstring_expr;

/// Accumulates pieces the way CPython's `FstringParser` does: adjacent literal text is
/// merged and empty literal text is dropped.
#[derive(Debug, Default)]
pub(crate) struct Pieces {
    parts: Vec<FPart>,
    last: String,
}

impl Pieces {
    pub(crate) fn push_literal(&mut self, text: &str) {
        self.last.push_str(text);
    }

    fn push_field(&mut self, field: FormattedValue) {
        if !self.last.is_empty() {
            self.parts
                .push(FPart::Literal(std::mem::take(&mut self.last)));
        }
        self.parts.push(FPart::Field(Box::new(field)));
    }

    pub(crate) fn finish(mut self) -> Vec<FPart> {
        if !self.last.is_empty() {
            self.parts.push(FPart::Literal(self.last));
        }
        self.parts
    }
}

/// Parse the body of one f-string literal (the characters between the quotes) into `into`.
pub(crate) fn parse_fstring(
    body: &[char],
    raw: bool,
    at: usize,
    into: &mut Pieces,
) -> Result<(), BfclError> {
    let mut i = 0;
    walk(body, &mut i, raw, 0, at, into)?;
    if i < body.len() {
        return Err(BfclError::syntax(at, "f-string: single '}' is not allowed"));
    }
    Ok(())
}

/// Walk literal text and replacement fields until the end, or (when `depth > 0`, inside a
/// format spec) until the `}` that closes the enclosing field, which is left unconsumed.
fn walk(
    body: &[char],
    i: &mut usize,
    raw: bool,
    depth: usize,
    at: usize,
    into: &mut Pieces,
) -> Result<(), BfclError> {
    let mut literal_start = *i;
    while *i < body.len() {
        let c = body[*i];
        if c == '\\' && !raw {
            if body.get(*i + 1) == Some(&'N') && body.get(*i + 2) == Some(&'{') {
                match body[*i + 2..].iter().position(|&x| x == '}') {
                    Some(close) => *i += 2 + close + 1,
                    None => *i += 2,
                }
            } else {
                *i += 2;
            }
            continue;
        }
        if c == '{' || c == '}' {
            if depth == 0 && body.get(*i + 1) == Some(&c) {
                literal(&body[literal_start..=*i], raw, at, into)?;
                *i += 2;
                literal_start = *i;
                continue;
            }
            literal(&body[literal_start..*i], raw, at, into)?;
            if c == '}' {
                if depth == 0 {
                    return Err(BfclError::syntax(at, "f-string: single '}' is not allowed"));
                }
                return Ok(());
            }
            *i += 1;
            let field = field(body, i, raw, depth, at, into)?;
            into.push_field(field);
            literal_start = *i;
            continue;
        }
        *i += 1;
    }
    literal(&body[literal_start..body.len().min(*i)], raw, at, into)
}

fn literal(text: &[char], raw: bool, at: usize, into: &mut Pieces) -> Result<(), BfclError> {
    let decoded: String = if raw {
        text.iter().collect()
    } else {
        decode_escapes(text, false, at)?.into_iter().collect()
    };
    into.push_literal(&decoded);
    Ok(())
}

/// One replacement field, after its `{`; consumes through the closing `}`. The text of a
/// `{expr=}` field goes into `into` as literal text, as CPython does.
fn field(
    body: &[char],
    i: &mut usize,
    raw: bool,
    depth: usize,
    at: usize,
    into: &mut Pieces,
) -> Result<FormattedValue, BfclError> {
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
        .trim_matches([' ', '\t', '\n', '\x0c', '\r', '\x0b'])
        .is_empty()
    {
        return Err(BfclError::syntax(
            at,
            "f-string: empty expression not allowed",
        ));
    }
    let value =
        parse_fstring_expr(&text).map_err(|_| BfclError::syntax(at, "f-string: invalid syntax"))?;
    let mut debug_text = None;
    if body[*i] == '=' {
        *i += 1;
        while body.get(*i).is_some_and(|c| c.is_ascii_whitespace()) {
            *i += 1;
        }
        debug_text = Some(body[start..*i].iter().collect::<String>());
    }
    let mut conversion = None;
    if body.get(*i) == Some(&'!') {
        *i += 1;
        match body.get(*i) {
            Some(&c @ ('s' | 'r' | 'a')) => conversion = Some(c),
            _ => {
                return Err(BfclError::syntax(
                    at,
                    "f-string: invalid conversion character: expected 's', 'r', or 'a'",
                ));
            }
        }
        *i += 1;
    }
    let mut format_spec = None;
    if body.get(*i) == Some(&':') {
        *i += 1;
        let mut spec = Pieces::default();
        walk(body, i, raw, depth + 1, at, &mut spec)?;
        format_spec = Some(spec.finish());
    }
    if body.get(*i) != Some(&'}') {
        return Err(BfclError::syntax(at, "f-string: expecting '}'"));
    }
    *i += 1;
    if let Some(text) = debug_text {
        into.push_literal(&text);
        if format_spec.is_none() && conversion.is_none() {
            conversion = Some('r');
        }
    }
    Ok(FormattedValue {
        value,
        conversion,
        format_spec,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Vec<FPart>, BfclError> {
        let chars: Vec<char> = s.chars().collect();
        let mut pieces = Pieces::default();
        parse_fstring(&chars, false, 0, &mut pieces)?;
        Ok(pieces.finish())
    }

    fn ok(s: &str) -> bool {
        parse(s).is_ok()
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
        assert!(ok("\\N{EM DASH}{x}"));
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

    #[test]
    fn pieces_follow_cpython() {
        let parts = parse("a{{b{x=}").unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0], FPart::Literal("a{bx=".into()));
        match &parts[1] {
            FPart::Field(f) => assert_eq!(f.conversion, Some('r')),
            other => panic!("{other:?}"),
        }
        assert_eq!(parse("").unwrap(), vec![]);
    }
}
