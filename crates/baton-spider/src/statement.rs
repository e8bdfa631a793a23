//! sqlparse's statement splitting, `parse` and `format(keyword_case='upper')`.
//!
//! LiC's evaluator calls `sqlparse.parse(s)[0]`, i.e. it keeps the first
//! statement only, which is why `gold; DROP TABLE t` is scored like `gold`.
//! The splitter below follows sqlparse's `StatementSplitter` (a `;` ends a
//! statement outside parentheses and `BEGIN … END` blocks; trailing spaces and
//! `--` comments stay with the statement; an upper-case `GO` also ends one).
//!
//! `parse` also groups tokens into a tree, and sqlparse's grouping refuses
//! statements with more than 10,000 top-level tokens or nesting deeper than
//! 100 levels (`SQLParseError`). The token limit is reproduced exactly. The
//! depth limit is reproduced for plain parentheses (101 levels fail); sqlparse
//! counts its own group levels, which reach the limit at about 50 levels for
//! nested function calls and subqueries, and that finer count is not copied.

use crate::lexer::{Kind, Token, tokenize};
use baton_py::{rstrip, split as py_split, upper};

/// Why sqlparse would raise while parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// `sqlparse.parse(s)` returned no statement, so `[0]` raised `IndexError`.
    NoStatement,
    /// `SQLParseError: Maximum number of tokens exceeded (10000)`.
    TooManyTokens,
    /// `SQLParseError: Maximum grouping depth exceeded (100)`.
    TooDeep,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ParseError::NoStatement => "no SQL statement",
            ParseError::TooManyTokens => "more than 10000 tokens in one statement",
            ParseError::TooDeep => "nesting deeper than 100 levels",
        })
    }
}

const MAX_GROUPING_TOKENS: usize = 10_000;
const MAX_PAREN_DEPTH: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    Begin,
    Declare,
    For,
    While,
    Loop,
    If,
    Case,
}

/// sqlparse's `StatementSplitter` state.
#[derive(Default)]
struct Splitter {
    block_stack: Vec<Block>,
    unconfirmed_start: Option<Block>,
    is_create: bool,
    seen_begin: bool,
    consume_ws: bool,
    level: i64,
}

impl Splitter {
    fn change_level(&mut self, token: &Token) -> i64 {
        let kind = token.kind;
        let value = token.value.as_str();
        if kind == Kind::Punctuation && value == ";" {
            self.unconfirmed_start = None;
            if self.seen_begin {
                self.seen_begin = false;
                if self.block_stack.last() == Some(&Block::Begin) {
                    self.block_stack.pop();
                    return -1;
                }
            }
            return 0;
        }
        if kind == Kind::Punctuation && value == "(" {
            return 1;
        }
        if kind == Kind::Punctuation && value == ")" {
            return -1;
        }
        if !kind.is_keyword() {
            return 0;
        }
        let unified = upper(value);
        if kind == Kind::KeywordDdl && unified.starts_with("CREATE") {
            self.is_create = true;
            return 0;
        }
        if unified == "DECLARE" && self.is_create && self.block_stack.is_empty() {
            self.block_stack.push(Block::Declare);
            return 1;
        }
        if unified == "BEGIN" {
            self.seen_begin = true;
            if self.block_stack.last() == Some(&Block::Declare) {
                self.block_stack.pop();
                self.block_stack.push(Block::Begin);
                return 0;
            }
            self.block_stack.push(Block::Begin);
            return 1;
        }
        if self.seen_begin
            && kind == Kind::Keyword
            && matches!(
                unified.as_str(),
                "TRANSACTION"
                    | "WORK"
                    | "TRAN"
                    | "DISTRIBUTED"
                    | "DEFERRED"
                    | "IMMEDIATE"
                    | "EXCLUSIVE"
            )
        {
            self.seen_begin = false;
            if self.block_stack.last() == Some(&Block::Begin) {
                self.block_stack.pop();
                return -1;
            }
            return 0;
        }
        if self.block_stack.contains(&Block::Begin)
            && let Some(delta) = self.nested_block(&unified)
        {
            return delta;
        }
        self.closing_keyword(&unified)
    }

    fn nested_block(&mut self, unified: &str) -> Option<i64> {
        match unified {
            "FOR" => {
                self.unconfirmed_start = Some(Block::For);
                return Some(0);
            }
            "WHILE" => {
                self.unconfirmed_start = Some(Block::While);
                return Some(0);
            }
            "LOOP" | "DO" => {
                if let Some(start @ (Block::For | Block::While)) = self.unconfirmed_start {
                    self.block_stack.push(start);
                    self.unconfirmed_start = None;
                    return Some(1);
                }
                if unified == "LOOP" {
                    self.block_stack.push(Block::Loop);
                    return Some(1);
                }
            }
            "IF" => {
                self.block_stack.push(Block::If);
                return Some(1);
            }
            "CASE" => {
                self.block_stack.push(Block::Case);
                return Some(1);
            }
            _ => {}
        }
        None
    }

    fn closing_keyword(&mut self, unified: &str) -> i64 {
        let top = self.block_stack.last().copied();
        let closes = match unified {
            "END IF" => top == Some(Block::If),
            "END FOR" => top == Some(Block::For),
            "END WHILE" => top == Some(Block::While),
            "END LOOP" => matches!(top, Some(Block::Loop | Block::For | Block::While)),
            "END CASE" => top == Some(Block::Case),
            "END" => {
                self.block_stack.pop();
                return -1;
            }
            _ => false,
        };
        if closes {
            self.block_stack.pop();
            -1
        } else {
            0
        }
    }
}

/// Split a token stream into statements the way `StatementSplitter.process`
/// does. Statements made only of whitespace are dropped at the end.
pub(crate) fn split(tokens: Vec<Token>) -> Vec<Vec<Token>> {
    let mut statements = Vec::new();
    let mut state = Splitter::default();
    let mut current: Vec<Token> = Vec::new();
    for token in tokens {
        if state.consume_ws && !matches!(token.kind, Kind::Whitespace | Kind::CommentSingle) {
            statements.push(std::mem::take(&mut current));
            state = Splitter::default();
        }
        state.level += state.change_level(&token);
        let kind = token.kind;
        if kind == Kind::Punctuation && token.value == ";" {
            state.seen_begin = false;
            if state.level <= 0 && !state.block_stack.contains(&Block::Begin) {
                state.consume_ws = true;
            }
        } else if kind == Kind::Keyword && py_split(&token.value).next() == Some("GO") {
            state.consume_ws = true;
        } else {
            let quiet = matches!(
                kind,
                Kind::Whitespace | Kind::Newline | Kind::CommentSingle | Kind::CommentMultiline
            );
            let begin = kind == Kind::Keyword && upper(&token.value) == "BEGIN";
            if !quiet && !begin {
                state.seen_begin = false;
            }
        }
        current.push(token);
    }
    if !current.is_empty() && !current.iter().all(|t| t.kind.is_whitespace()) {
        statements.push(current);
    }
    statements
}

/// The checks sqlparse's grouping makes before it raises.
fn check_grouping_limits(statement: &[Token]) -> Result<(), ParseError> {
    // group_comments merges each run of comments and newlines that starts with
    // a comment and is followed by some other token.
    let mut count = statement.len();
    let mut i = 0;
    while i < statement.len() {
        if !statement[i].kind.is_comment() {
            i += 1;
            continue;
        }
        let run_end = statement[i..]
            .iter()
            .position(|t| !(t.kind.is_comment() || t.kind == Kind::Newline))
            .map(|offset| i + offset);
        match run_end {
            None => break,
            Some(end) => {
                count -= end - 1 - i;
                i = end;
            }
        }
    }
    if count > MAX_GROUPING_TOKENS {
        return Err(ParseError::TooManyTokens);
    }
    let mut depth = 0usize;
    for token in statement {
        if token.kind == Kind::Punctuation {
            match token.value.as_str() {
                "(" => {
                    depth += 1;
                    if depth > MAX_PAREN_DEPTH {
                        return Err(ParseError::TooDeep);
                    }
                }
                ")" => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
    }
    Ok(())
}

/// `sqlparse.parse(text)[0]`, flattened: the tokens of the first statement.
pub(crate) fn parse_first(text: &str) -> Result<Vec<Token>, ParseError> {
    let statements = split(tokenize(text));
    for statement in &statements {
        check_grouping_limits(statement)?;
    }
    statements.into_iter().next().ok_or(ParseError::NoStatement)
}

/// `sqlparse.format(text, reindent=False, keyword_case='upper')`.
pub(crate) fn format_keywords_upper(text: &str) -> String {
    let mut tokens = tokenize(text);
    for token in &mut tokens {
        if token.kind.is_keyword() {
            token.value = upper(&token.value);
        }
    }
    let mut out = String::with_capacity(text.len());
    for statement in split(tokens) {
        let joined: String = statement.iter().map(|t| t.value.as_str()).collect();
        let lines = split_unquoted_newlines(&joined);
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            out.push_str(rstrip(line));
        }
    }
    out
}

/// sqlparse's `split_unquoted_newlines`: split on `\r\n`, `\r` and `\n` outside
/// `'…'` and `"…"` strings (a backslash escapes the next character except a
/// newline; an unclosed quote is plain text).
fn split_unquoted_newlines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let mut lines = Vec::new();
    let mut line_start = 0;
    let mut pos = 0;
    let mut unclosed_before_double = 0;
    let mut unclosed_before_single = 0;
    while pos < len {
        let b = bytes[pos];
        if b == b'\r' || b == b'\n' {
            lines.push(&text[line_start..pos]);
            pos += if bytes[pos..].starts_with(b"\r\n") {
                2
            } else {
                1
            };
            line_start = pos;
        } else if b == b'"' || b == b'\'' {
            let unclosed_before = if b == b'"' {
                &mut unclosed_before_double
            } else {
                &mut unclosed_before_single
            };
            if pos >= *unclosed_before {
                let end = string_content_end(bytes, pos + 1, b);
                if end < len && bytes[end] == b {
                    pos = end + 1;
                    continue;
                }
                *unclosed_before = end;
            }
            pos += 1;
        } else {
            while pos < len && !matches!(bytes[pos], b'\r' | b'\n' | b'\'' | b'"') {
                pos += 1;
            }
        }
    }
    lines.push(&text[line_start..]);
    lines
}

/// `(?:[^q\\]|\\.)*` from `pos`: where the string content stops.
fn string_content_end(bytes: &[u8], mut pos: usize, quote: u8) -> usize {
    while pos < bytes.len() {
        match bytes[pos] {
            b if b == quote => break,
            b'\\' => {
                if pos + 1 < bytes.len() && bytes[pos + 1] != b'\n' {
                    // `.` consumes one whole character; continuation bytes of a
                    // multi-byte character are skipped by the loop below.
                    pos += 2;
                    while pos < bytes.len() && (bytes[pos] & 0xC0) == 0x80 {
                        pos += 1;
                    }
                } else {
                    break;
                }
            }
            _ => pos += 1,
        }
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(text: &str) -> Vec<String> {
        split(tokenize(text))
            .into_iter()
            .map(|s| s.iter().map(|t| t.value.as_str()).collect())
            .collect()
    }

    #[test]
    fn splits_like_sqlparse() {
        assert_eq!(
            statements("select 1; -- c\n /* x */ select 2;;"),
            ["select 1; -- c\n ", "/* x */ select 2;", ";"]
        );
        assert_eq!(
            statements("select 1;\nselect 2"),
            ["select 1;", "\nselect 2"]
        );
        assert_eq!(statements("select 1; \n"), ["select 1; "]);
        assert_eq!(statements("SELECT begin FROM t; DROP TABLE t").len(), 1);
        assert_eq!(statements("select 1 GO select 2").len(), 2);
        assert_eq!(statements("select 1 go select 2").len(), 1);
        assert!(statements("  \n ").is_empty());
    }

    #[test]
    fn parse_limits() {
        assert_eq!(parse_first(""), Err(ParseError::NoStatement));
        assert_eq!(parse_first(" \n"), Err(ParseError::NoStatement));
        let ok = format!("SELECT {}", vec!["1"; 2500].join(" , "));
        assert!(parse_first(&ok).is_ok());
        let too_many = format!("SELECT {}", vec!["1"; 2501].join(" , "));
        assert_eq!(parse_first(&too_many), Err(ParseError::TooManyTokens));
        let deep = format!("{}1{}", "(".repeat(100), ")".repeat(100));
        assert!(parse_first(&deep).is_ok());
        let deeper = format!("{}1{}", "(".repeat(101), ")".repeat(101));
        assert_eq!(parse_first(&deeper), Err(ParseError::TooDeep));
        // The second statement is grouped too.
        assert_eq!(
            parse_first(&format!("SELECT 1; {too_many}")),
            Err(ParseError::TooManyTokens)
        );
    }

    #[test]
    fn format_upper_cases_keywords_and_trims_lines() {
        assert_eq!(
            format_keywords_upper("select a from t where x in ( 1 ) order by a"),
            "select a FROM t where x IN ( 1 ) ORDER BY a"
        );
        assert_eq!(
            format_keywords_upper("a  \n b 'x  \n' c"),
            "a\n b 'x  \n' c"
        );
        assert_eq!(format_keywords_upper("x go y"), "x GOy");
    }
}
