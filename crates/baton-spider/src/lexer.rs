//! A SQL lexer that reproduces sqlparse 0.6.1's tokenization.
//!
//! sqlparse tries an ordered list of regular expressions (`SQL_REGEX`) at each
//! position, compiled with `re.IGNORECASE | re.UNICODE`, and emits one `Error`
//! token per character nothing matches. Dollar-quoted literals and `/* */`
//! comments are resolved first from precomputed delimiter positions. Each rule
//! below is written out by hand, including the places where Python's
//! backtracking decides the match (`1.5abc` lexes as `1.` then `5abc`, `123abc`
//! as `12` then `3abc`). Rules without look-around use the `regex` crate, which
//! reports the same leftmost-first match as Python's backtracking engine.
//!
//! Keywords: sqlparse looks every word up in a large keyword table. Only the
//! words its statement splitter reacts to are classified here ([`Kind::Keyword`]);
//! every other word is a [`Kind::Word`]. The difference is invisible to the
//! evaluator for ASCII text, because the only other use of the table is
//! upper-casing keywords before everything is lower-cased again.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use baton_py::{is_space, upper};

use crate::pyre::{ci_char, is_digit, is_name_start, is_word};

/// Token types, named after the sqlparse token types they stand for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `Text.Whitespace`: exactly one non-newline whitespace character.
    Whitespace,
    /// `Text.Whitespace.Newline`.
    Newline,
    /// `Comment.Single` (`-- …` or `# …` up to and including the line end).
    CommentSingle,
    /// `Comment.Single.Hint` (`--+ …`).
    CommentSingleHint,
    /// `Comment.Multiline`.
    CommentMultiline,
    /// `Comment.Multiline.Hint` (`/*+ … */`).
    CommentMultilineHint,
    /// Exactly `Keyword`.
    Keyword,
    /// `Keyword.DDL` (`CREATE`, `CREATE OR REPLACE`).
    KeywordDdl,
    /// Other `Keyword.*` subtypes (`Keyword.Order`, `Keyword.TZCast`).
    KeywordOther,
    /// A word sqlparse would look up in its keyword table; see the module docs.
    Word,
    /// `Name` (quoted names, `@var`, names before `.` or `(`).
    Name,
    /// `Name.Builtin` (`DOUBLE PRECISION`).
    NameBuiltin,
    /// `Name.Placeholder`.
    Placeholder,
    /// `Generic.Command` (`\cmd`).
    Command,
    /// `Punctuation`.
    Punctuation,
    /// `Assignment` (`:=`).
    Assignment,
    /// `Wildcard` (`*`).
    Wildcard,
    /// `Operator`.
    Operator,
    /// `Operator.Comparison`.
    Comparison,
    /// `Literal.Number.Hexadecimal`.
    Hex,
    /// `Literal.Number.Float`.
    Float,
    /// `Literal.Number.Integer`.
    Integer,
    /// `Literal.String.Single` (`'…'`).
    StringSingle,
    /// `Literal.String.Symbol` (`"…"`).
    StringSymbol,
    /// `Literal` (dollar-quoted text).
    Literal,
    /// `Error`: a character no rule matched.
    Error,
}

impl Kind {
    /// `ttype in T.Keyword`.
    pub(crate) fn is_keyword(self) -> bool {
        matches!(self, Kind::Keyword | Kind::KeywordDdl | Kind::KeywordOther)
    }

    /// `ttype in T.Comment`.
    pub(crate) fn is_comment(self) -> bool {
        matches!(
            self,
            Kind::CommentSingle
                | Kind::CommentSingleHint
                | Kind::CommentMultiline
                | Kind::CommentMultilineHint
        )
    }

    /// `Token.is_whitespace` (`ttype in T.Whitespace`, newlines included).
    pub(crate) fn is_whitespace(self) -> bool {
        matches!(self, Kind::Whitespace | Kind::Newline)
    }
}

/// One token: its type and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) kind: Kind,
    pub(crate) value: String,
}

/// Words sqlparse types as exactly `Keyword` and that its statement splitter
/// inspects (block starts and ends, transaction words, `GO`).
const SPLITTER_KEYWORDS: &[&str] = &[
    "BEGIN",
    "DECLARE",
    "DEFERRED",
    "DO",
    "EXCLUSIVE",
    "FOR",
    "GO",
    "IF",
    "IMMEDIATE",
    "LOOP",
    "TRANSACTION",
    "WHILE",
    "WORK",
];

fn anchored(pattern: &str) -> Regex {
    Regex::new(&format!("^(?:{pattern})")).expect("valid lexer pattern")
}

static BACKTICK_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(r"`(?:``|[^`])*`"));
static ACUTE_NAME: LazyLock<Regex> = LazyLock::new(|| anchored(r"´(?:´´|[^´])*´"));
static SINGLE_STRING: LazyLock<Regex> = LazyLock::new(|| anchored(r"'(?:''|\\'|[^'])*'"));
static SYMBOL_STRING: LazyLock<Regex> = LazyLock::new(|| anchored(r#""(?:""|\\"|[^"])*""#));
static SYMBOL_STRING_LAZY: LazyLock<Regex> = LazyLock::new(|| anchored(r#"""|"[^\n]*?[^\\]""#));

/// Positions of dollar-quote and block-comment delimiters, found in one pass
/// the way sqlparse's `find_delimited_spans` does.
struct Spans {
    /// start -> (end of the opener, tag, token kind)
    openers: HashMap<usize, (usize, String, Kind)>,
    /// tag -> ascending (closer start, closer end)
    closers: HashMap<String, Vec<(usize, usize)>>,
}

const COMMENT_TAG: &str = "/*";

impl Spans {
    fn find(text: &str) -> Spans {
        let mut openers = HashMap::new();
        let mut closers: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        let bytes = text.as_bytes();
        if text.contains('$') {
            for (start, _) in text.match_indices('$') {
                let Some(end) = dollar_delimiter_end(text, start) else {
                    continue;
                };
                let tag = &text[start..end];
                closers
                    .entry(tag.to_owned())
                    .or_default()
                    .push((start, end));
                let opener_ok = match prev_char(text, start) {
                    None => true,
                    Some(p) => !(is_word(p) || p == '"' || p == '$'),
                };
                if opener_ok {
                    openers.insert(start, (end, tag.to_owned(), Kind::Literal));
                }
            }
        }
        if text.contains("/*") {
            for (start, _) in text.match_indices("/*") {
                if bytes.get(start + 2) == Some(&b'+') {
                    openers.insert(
                        start,
                        (
                            start + 3,
                            COMMENT_TAG.to_owned(),
                            Kind::CommentMultilineHint,
                        ),
                    );
                } else {
                    openers.insert(
                        start,
                        (start + 2, COMMENT_TAG.to_owned(), Kind::CommentMultiline),
                    );
                }
            }
            let list = closers.entry(COMMENT_TAG.to_owned()).or_default();
            for (start, _) in text.match_indices("*/") {
                list.push((start, start + 2));
            }
        }
        Spans { openers, closers }
    }

    /// `DelimitedSpans.resolve`: the first closer with the same tag that starts
    /// at or after the end of the opener.
    fn resolve(&self, pos: usize) -> Option<(usize, Kind)> {
        let (opener_end, tag, kind) = self.openers.get(&pos)?;
        let list = self.closers.get(tag)?;
        let idx = list.partition_point(|&(start, _)| start < *opener_end);
        list.get(idx).map(|&(_, end)| (end, *kind))
    }
}

/// `\$(?:[_A-ZÀ-Ü]\w*)?\$` at `start` (which holds a `$`): the end of the tag.
fn dollar_delimiter_end(text: &str, start: usize) -> Option<usize> {
    let rest = &text[start + 1..];
    let mut chars = rest.char_indices();
    match chars.next() {
        Some((_, '$')) => Some(start + 2),
        Some((_, c)) if c == '_' || is_name_start(c) => {
            let word_end = rest[c.len_utf8()..]
                .find(|ch: char| !is_word(ch))
                .map_or(rest.len(), |i| i + c.len_utf8());
            (rest[word_end..].starts_with('$')).then_some(start + 1 + word_end + 1)
        }
        _ => None,
    }
}

fn prev_char(text: &str, pos: usize) -> Option<char> {
    text[..pos].chars().next_back()
}

fn char_at(text: &str, pos: usize) -> Option<char> {
    text.get(pos..)?.chars().next()
}

/// End of the run of characters satisfying `pred` starting at `pos`.
fn run_end(text: &str, pos: usize, pred: impl Fn(char) -> bool) -> usize {
    text[pos..]
        .find(|c: char| !pred(c))
        .map_or(text.len(), |i| pos + i)
}

/// Case-insensitive (`re.IGNORECASE`) match of an ASCII literal at `pos`.
fn ci_literal(text: &str, pos: usize, lit: &str) -> Option<usize> {
    let mut chars = text[pos..].char_indices();
    for l in lit.chars() {
        let (_, c) = chars.next()?;
        if !ci_char(c, l) {
            return None;
        }
    }
    Some(chars.next().map_or(text.len(), |(i, _)| pos + i))
}

/// Python `\b` after a match that ends with a word character.
fn word_boundary(text: &str, pos: usize) -> bool {
    char_at(text, pos).is_none_or(|c| !is_word(c))
}

/// A keyword phrase: words separated by `\s+`, optionally followed by `\b`.
/// `alternatives` are tried in the order Python's backtracking tries them.
fn phrase(text: &str, pos: usize, alternatives: &[&[&str]], boundary: bool) -> Option<usize> {
    'alt: for words in alternatives {
        let mut at = pos;
        for (i, word) in words.iter().enumerate() {
            if i > 0 {
                let ws_end = run_end(text, at, is_space);
                if ws_end == at {
                    continue 'alt;
                }
                at = ws_end;
            }
            match ci_literal(text, at, word) {
                Some(end) => at = end,
                None => continue 'alt,
            }
        }
        if !boundary || word_boundary(text, at) {
            return Some(at);
        }
    }
    None
}

/// The rule list, in sqlparse's order. Each returns the end of its match.
fn match_rule(text: &str, pos: usize) -> Option<(usize, Kind)> {
    let c = char_at(text, pos)?;
    let rest = &text[pos..];

    // (--|# )\+.*?(\r\n|\r|\n|$) and (--|# ).*?(\r\n|\r|\n|$)
    if rest.starts_with("--") || rest.starts_with("# ") {
        let body = pos + 2;
        let kind = if text[body..].starts_with('+') {
            Kind::CommentSingleHint
        } else {
            Kind::CommentSingle
        };
        let end = match text[body..].find(['\r', '\n']) {
            None => text.len(),
            Some(i) if text[body + i..].starts_with("\r\n") => body + i + 2,
            Some(i) => body + i + 1,
        };
        return Some((end, kind));
    }
    // (\r\n|\r|\n)
    if rest.starts_with("\r\n") {
        return Some((pos + 2, Kind::Newline));
    }
    if c == '\r' || c == '\n' {
        return Some((pos + 1, Kind::Newline));
    }
    // \s+?
    if is_space(c) {
        return Some((pos + c.len_utf8(), Kind::Whitespace));
    }
    if rest.starts_with(":=") {
        return Some((pos + 2, Kind::Assignment));
    }
    if rest.starts_with("::") {
        return Some((pos + 2, Kind::Punctuation));
    }
    if c == '*' {
        return Some((pos + 1, Kind::Wildcard));
    }
    if c == '`'
        && let Some(m) = BACKTICK_NAME.find(rest)
    {
        return Some((pos + m.end(), Kind::Name));
    }
    if c == '´'
        && let Some(m) = ACUTE_NAME.find(rest)
    {
        return Some((pos + m.end(), Kind::Name));
    }
    if c == '?' {
        return Some((pos + 1, Kind::Placeholder));
    }
    // %(\(\w+\))?s
    if c == '%'
        && let Some(end) = percent_placeholder(text, pos)
    {
        return Some((end, Kind::Placeholder));
    }
    // (?<!\w)[$:?]\w+
    if matches!(c, '$' | ':') && !prev_char(text, pos).is_some_and(is_word) {
        let end = run_end(text, pos + 1, is_word);
        if end > pos + 1 {
            return Some((end, Kind::Placeholder));
        }
    }
    // \\\w+
    if c == '\\' {
        let end = run_end(text, pos + 1, is_word);
        if end > pos + 1 {
            return Some((end, Kind::Command));
        }
    }
    // (CASE|IN|VALUES|USING|FROM|AS)\b
    if let Some(end) = phrase(
        text,
        pos,
        &[
            &["CASE"],
            &["IN"],
            &["VALUES"],
            &["USING"],
            &["FROM"],
            &["AS"],
        ],
        true,
    ) {
        return Some((end, Kind::Keyword));
    }
    // (@|##|#)[A-ZÀ-Ü]\w+
    if (c == '@' || c == '#')
        && let Some(end) = sigil_name(text, pos)
    {
        return Some((end, Kind::Name));
    }
    if is_name_start(c) {
        let word_end = run_end(text, pos + c.len_utf8(), is_word);
        // [A-ZÀ-Ü]\w*(?=\s*\.(?!\d))
        let after_ws = run_end(text, word_end, is_space);
        if text[after_ws..].starts_with('.') && !char_at(text, after_ws + 1).is_some_and(is_digit) {
            return Some((word_end, Kind::Name));
        }
        // (?<=\.)[A-ZÀ-Ü]\w*
        if prev_char(text, pos) == Some('.') {
            return Some((word_end, Kind::Name));
        }
        // [A-ZÀ-Ü]\w*(?=\()
        if text[word_end..].starts_with('(') {
            return Some((word_end, Kind::Name));
        }
    }
    if (c == '-' || c == '.' || is_digit(c))
        && let Some(found) = number(text, pos)
    {
        return Some(found);
    }
    if c == '\''
        && let Some(m) = SINGLE_STRING.find(rest)
    {
        return Some((pos + m.end(), Kind::StringSingle));
    }
    if c == '"' {
        if let Some(m) = SYMBOL_STRING.find(rest) {
            return Some((pos + m.end(), Kind::StringSymbol));
        }
        if let Some(m) = SYMBOL_STRING_LAZY.find(rest) {
            return Some((pos + m.end(), Kind::StringSymbol));
        }
    }
    // (?<![\w\])])(\[[^\]\[]+\])
    if c == '[' && !prev_char(text, pos).is_some_and(|p| is_word(p) || p == ']' || p == ')') {
        let inner_end = run_end(text, pos + 1, |ch| ch != ']' && ch != '[');
        if inner_end > pos + 1 && text[inner_end..].starts_with(']') {
            return Some((inner_end + 1, Kind::Name));
        }
    }
    if let Some(found) = keyword_phrase(text, pos) {
        return Some(found);
    }
    // \w[$#\w]*
    if is_word(c) {
        let end = run_end(text, pos, |ch| is_word(ch) || ch == '$' || ch == '#');
        let word = &text[pos..end];
        let kind = if SPLITTER_KEYWORDS.contains(&upper(word).as_str()) {
            Kind::Keyword
        } else {
            Kind::Word
        };
        return Some((end, kind));
    }
    if matches!(c, ';' | ':' | '(' | ')' | '[' | ']' | ',' | '.') {
        return Some((pos + 1, Kind::Punctuation));
    }
    // (\->>?|#>>?|@>|<@|\?\|?|\?&|\-|#\-)
    if rest.starts_with("->>") || rest.starts_with("#>>") {
        return Some((pos + 3, Kind::Operator));
    }
    if rest.starts_with("->")
        || rest.starts_with("#>")
        || rest.starts_with("@>")
        || rest.starts_with("<@")
    {
        return Some((pos + 2, Kind::Operator));
    }
    if c == '-' {
        return Some((pos + 1, Kind::Operator));
    }
    if rest.starts_with("#-") {
        return Some((pos + 2, Kind::Operator));
    }
    // [<>=~!]+
    let end = run_end(text, pos, |ch| matches!(ch, '<' | '>' | '=' | '~' | '!'));
    if end > pos {
        return Some((end, Kind::Comparison));
    }
    // [+/@#%^&|^-]+
    let end = run_end(text, pos, |ch| {
        matches!(ch, '+' | '/' | '@' | '#' | '%' | '^' | '&' | '|' | '-')
    });
    if end > pos {
        return Some((end, Kind::Operator));
    }
    None
}

/// `%(\(\w+\))?s`.
fn percent_placeholder(text: &str, pos: usize) -> Option<usize> {
    let after = pos + 1;
    if text[after..].starts_with('(') {
        let word_end = run_end(text, after + 1, is_word);
        if word_end > after + 1
            && text[word_end..].starts_with(')')
            && let Some(c) = char_at(text, word_end + 1)
            && ci_char(c, 's')
        {
            return Some(word_end + 1 + c.len_utf8());
        }
        return None;
    }
    let c = char_at(text, after)?;
    ci_char(c, 's').then_some(after + c.len_utf8())
}

/// `(@|##|#)[A-ZÀ-Ü]\w+`.
fn sigil_name(text: &str, pos: usize) -> Option<usize> {
    let try_from = |start: usize| -> Option<usize> {
        let c = char_at(text, start)?;
        if !is_name_start(c) {
            return None;
        }
        let body = start + c.len_utf8();
        let end = run_end(text, body, is_word);
        (end > body).then_some(end)
    };
    if text[pos..].starts_with('@') {
        return try_from(pos + 1);
    }
    if text[pos..].starts_with("##")
        && let Some(end) = try_from(pos + 2)
    {
        return Some(end);
    }
    try_from(pos + 1)
}

/// Not `[_A-ZÀ-Ü]`: the look-arounds around sqlparse's number rules.
fn not_name_char(c: Option<char>) -> bool {
    c.is_none_or(|c| c != '_' && !is_name_start(c))
}

/// End of a non-empty run of `\d` starting at `pos`, with the byte offsets of
/// each digit boundary (for backtracking one digit).
fn digits(text: &str, pos: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    for (i, c) in text[pos..].char_indices() {
        if !is_digit(c) {
            break;
        }
        ends.push(pos + i + c.len_utf8());
    }
    ends
}

/// Pick the longest digit run end (from `ends`, at least `min` digits) whose
/// next character passes `(?![_A-ZÀ-Ü])`; Python backtracks one digit at a time
/// and any shorter run is followed by a digit, which always passes.
fn longest_passing(text: &str, ends: &[usize], min: usize, base: usize) -> Option<usize> {
    let full = if ends.is_empty() {
        base
    } else {
        ends[ends.len() - 1]
    };
    if ends.len() >= min && not_name_char(char_at(text, full)) {
        return Some(full);
    }
    if ends.len() > min {
        let shorter = if ends.len() >= 2 {
            ends[ends.len() - 2]
        } else {
            base
        };
        return Some(shorter);
    }
    None
}

/// sqlparse's hexadecimal, float and integer rules, in order.
fn number(text: &str, pos: usize) -> Option<(usize, Kind)> {
    let signed = text[pos..].starts_with('-');
    let q = if signed { pos + 1 } else { pos };
    // -?0x[\dA-F]+
    if text[q..].starts_with('0')
        && let Some(x) = char_at(text, q + 1)
        && ci_char(x, 'x')
    {
        let hex_start = q + 1 + x.len_utf8();
        let end = run_end(text, hex_start, |c| is_digit(c) || c.is_ascii_hexdigit());
        if end > hex_start {
            return Some((end, Kind::Hex));
        }
    }
    let int_digits = digits(text, q);
    // -?\d+(\.\d+)?E-?\d+
    if let Some(&int_end) = int_digits.last() {
        let mut at = int_end;
        if text[at..].starts_with('.')
            && let Some(&frac_end) = digits(text, at + 1).last()
        {
            at = frac_end;
        }
        if let Some(e) = char_at(text, at)
            && ci_char(e, 'e')
        {
            let mut exp = at + 1;
            if text[exp..].starts_with('-') && digits(text, exp + 1).last().is_some() {
                exp += 1;
            }
            if let Some(&exp_end) = digits(text, exp).last() {
                return Some((exp_end, Kind::Float));
            }
        }
    }
    // (?![_A-ZÀ-Ü])-?(\d+(\.\d*)|\.\d+)(?![_A-ZÀ-Ü])
    if let Some(&int_end) = int_digits.last() {
        if text[int_end..].starts_with('.') {
            let frac = digits(text, int_end + 1);
            if let Some(end) = longest_passing(text, &frac, 0, int_end + 1) {
                return Some((end, Kind::Float));
            }
        }
    } else if text[q..].starts_with('.') {
        let frac = digits(text, q + 1);
        if let Some(end) = longest_passing(text, &frac, 1, q + 1) {
            return Some((end, Kind::Float));
        }
    }
    // (?![_A-ZÀ-Ü])-?\d+(?![_A-ZÀ-Ü])
    if !int_digits.is_empty()
        && let Some(end) = longest_passing(text, &int_digits, 1, q)
    {
        return Some((end, Kind::Integer));
    }
    None
}

/// The multi-word keyword rules between the bracket-name rule and the plain
/// word rule.
fn keyword_phrase(text: &str, pos: usize) -> Option<(usize, Kind)> {
    let c = char_at(text, pos)?;
    if !(c.is_ascii_alphabetic() || matches!(c, '\u{130}' | '\u{131}' | '\u{17f}' | '\u{212a}')) {
        return None;
    }
    const JOIN: &[&[&str]] = &[
        &["LEFT", "INNER", "JOIN"],
        &["LEFT", "OUTER", "JOIN"],
        &["LEFT", "STRAIGHT", "JOIN"],
        &["LEFT", "JOIN"],
        &["RIGHT", "INNER", "JOIN"],
        &["RIGHT", "OUTER", "JOIN"],
        &["RIGHT", "STRAIGHT", "JOIN"],
        &["RIGHT", "JOIN"],
        &["FULL", "INNER", "JOIN"],
        &["FULL", "OUTER", "JOIN"],
        &["FULL", "STRAIGHT", "JOIN"],
        &["FULL", "JOIN"],
        &["INNER", "JOIN"],
        &["OUTER", "JOIN"],
        &["STRAIGHT", "JOIN"],
        &["JOIN"],
        &["CROSS", "JOIN"],
        &["NATURAL", "JOIN"],
    ];
    let rules: &[(&[&[&str]], bool, Kind)] = &[
        (JOIN, true, Kind::Keyword),
        (
            &[
                &["END", "IF"],
                &["END", "LOOP"],
                &["END", "WHILE"],
                &["END", "FOR"],
                &["END", "CASE"],
                &["END"],
            ],
            true,
            Kind::Keyword,
        ),
        (
            &[&["IF", "NOT", "EXISTS"], &["IF", "EXISTS"]],
            true,
            Kind::Keyword,
        ),
        (&[&["NOT", "NULL"]], true, Kind::Keyword),
        (
            &[
                &["ASC", "NULLS", "FIRST"],
                &["ASC", "NULLS", "LAST"],
                &["ASC"],
                &["DESC", "NULLS", "FIRST"],
                &["DESC", "NULLS", "LAST"],
                &["DESC"],
            ],
            true,
            Kind::KeywordOther,
        ),
        (
            &[&["NULLS", "FIRST"], &["NULLS", "LAST"]],
            true,
            Kind::KeywordOther,
        ),
        (&[&["UNION", "ALL"]], true, Kind::Keyword),
        (
            &[&["CREATE", "OR", "REPLACE"], &["CREATE"]],
            true,
            Kind::KeywordDdl,
        ),
        (&[&["DOUBLE", "PRECISION"]], true, Kind::NameBuiltin),
        (&[&["GROUP", "BY"]], true, Kind::Keyword),
        (&[&["ORDER", "BY"]], true, Kind::Keyword),
        (&[&["PRIMARY", "KEY"]], true, Kind::Keyword),
        (&[&["HANDLER", "FOR"]], true, Kind::Keyword),
    ];
    for (alternatives, boundary, kind) in rules {
        if let Some(end) = phrase(text, pos, alternatives, *boundary) {
            return Some((end, *kind));
        }
    }
    // GO(\s\d+)\b
    if let Some(after_go) = ci_literal(text, pos, "GO")
        && let Some(ws) = char_at(text, after_go).filter(|&w| is_space(w))
    {
        let num = digits(text, after_go + ws.len_utf8());
        if let Some(&end) = num.last()
            && word_boundary(text, end)
        {
            return Some((end, Kind::Keyword));
        }
    }
    // (LATERAL\s+VIEW\s+)(EXPLODE|INLINE|PARSE_URL_TUPLE|POSEXPLODE|STACK)\b
    if let Some(end) = phrase(
        text,
        pos,
        &[
            &["LATERAL", "VIEW", "EXPLODE"],
            &["LATERAL", "VIEW", "INLINE"],
            &["LATERAL", "VIEW", "PARSE_URL_TUPLE"],
            &["LATERAL", "VIEW", "POSEXPLODE"],
            &["LATERAL", "VIEW", "STACK"],
        ],
        true,
    ) {
        return Some((end, Kind::Keyword));
    }
    // (AT|WITH')\s+TIME\s+ZONE\s+'[^']+'
    if let Some(end) = phrase(
        text,
        pos,
        &[&["AT", "TIME", "ZONE"], &["WITH'", "TIME", "ZONE"]],
        false,
    ) {
        let ws_end = run_end(text, end, is_space);
        if ws_end > end && text[ws_end..].starts_with('\'') {
            let body_end = run_end(text, ws_end + 1, |ch| ch != '\'');
            if body_end > ws_end + 1 && text[body_end..].starts_with('\'') {
                return Some((body_end + 1, Kind::KeywordOther));
            }
        }
    }
    // (NOT\s+)?(LIKE|ILIKE|RLIKE)\b
    if let Some(end) = phrase(
        text,
        pos,
        &[
            &["NOT", "LIKE"],
            &["NOT", "ILIKE"],
            &["NOT", "RLIKE"],
            &["LIKE"],
            &["ILIKE"],
            &["RLIKE"],
        ],
        true,
    ) {
        return Some((end, Kind::Comparison));
    }
    // (NOT\s+)?(REGEXP)(\s+(BINARY))?\b
    if let Some(end) = phrase(
        text,
        pos,
        &[
            &["NOT", "REGEXP", "BINARY"],
            &["NOT", "REGEXP"],
            &["REGEXP", "BINARY"],
            &["REGEXP"],
        ],
        true,
    ) {
        return Some((end, Kind::Comparison));
    }
    None
}

/// Tokenize `text` exactly as `sqlparse.lexer.tokenize` does (token types are
/// reduced to [`Kind`]; token texts are identical and concatenate to `text`).
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
    let spans = Spans::find(text);
    let mut tokens = Vec::new();
    let mut pos = 0;
    while pos < text.len() {
        if let Some((end, kind)) = spans.resolve(pos) {
            tokens.push(Token {
                kind,
                value: text[pos..end].to_owned(),
            });
            pos = end;
            continue;
        }
        let (end, kind) = match match_rule(text, pos) {
            Some(found) => found,
            None => {
                let c = char_at(text, pos).expect("pos is inside the text");
                (pos + c.len_utf8(), Kind::Error)
            }
        };
        tokens.push(Token {
            kind,
            value: text[pos..end].to_owned(),
        });
        pos = end;
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(text: &str) -> Vec<(Kind, &str)> {
        let tokens = tokenize(text);
        let mut out = Vec::new();
        let mut pos = 0;
        for t in &tokens {
            let end = pos + t.value.len();
            assert_eq!(&text[pos..end], t.value);
            out.push((t.kind, &text[pos..end]));
            pos = end;
        }
        assert_eq!(pos, text.len());
        out
    }

    #[test]
    fn numbers_backtrack_like_python() {
        use Kind::*;
        assert_eq!(lex("1.5abc"), [(Float, "1."), (Word, "5abc")]);
        assert_eq!(lex("123abc"), [(Integer, "12"), (Word, "3abc")]);
        assert_eq!(
            lex("1.abc"),
            [(Integer, "1"), (Punctuation, "."), (Name, "abc")]
        );
        assert_eq!(
            lex("-1.x"),
            [(Integer, "-1"), (Punctuation, "."), (Name, "x")]
        );
        assert_eq!(lex(".55abc"), [(Float, ".5"), (Word, "5abc")]);
        assert_eq!(lex("a.5"), [(Word, "a"), (Float, ".5")]);
        assert_eq!(lex("-5"), [(Integer, "-5")]);
        assert_eq!(lex("1.5e-3"), [(Float, "1.5e-3")]);
        assert_eq!(lex("0x1F"), [(Hex, "0x1F")]);
    }

    #[test]
    fn names_strings_and_comments() {
        use Kind::*;
        assert_eq!(
            lex("t1.name"),
            [(Name, "t1"), (Punctuation, "."), (Name, "name")]
        );
        assert_eq!(lex("'it''s'"), [(StringSingle, "'it''s'")]);
        assert_eq!(lex("'a\\'b"), [(StringSingle, "'a\\'"), (Word, "b")]);
        assert_eq!(lex("\"a\"\"b\""), [(StringSymbol, "\"a\"\"b\"")]);
        assert_eq!(lex("`a``b`"), [(Name, "`a``b`")]);
        assert_eq!(lex("[a b]"), [(Name, "[a b]")]);
        assert_eq!(lex("$$a$$ x")[0], (Literal, "$$a$$"));
        assert_eq!(lex("/* x */"), [(CommentMultiline, "/* x */")]);
        assert_eq!(lex("/* x")[..2], [(Operator, "/"), (Wildcard, "*")]);
        assert_eq!(lex("# c\n"), [(CommentSingle, "# c\n")]);
        assert_eq!(lex("'abc"), [(Error, "'"), (Word, "abc")]);
        assert_eq!(lex("×a"), [(Error, "×"), (Word, "a")]);
    }

    #[test]
    fn keyword_phrases() {
        use Kind::*;
        assert_eq!(lex("END IFX")[0], (Keyword, "END"));
        assert_eq!(lex("END  IF"), [(Keyword, "END  IF")]);
        assert_eq!(lex("go 2"), [(Keyword, "go 2")]);
        assert_eq!(lex("left  outer join"), [(Keyword, "left  outer join")]);
        assert_eq!(lex("ORDER\nBY"), [(Keyword, "ORDER\nBY")]);
        assert_eq!(lex("not like"), [(Comparison, "not like")]);
        assert_eq!(lex("x->>y")[1], (Operator, "->>"));
        assert_eq!(lex("a<>b")[1], (Comparison, "<>"));
        assert_eq!(lex("ſelect"), [(Word, "ſelect")]);
    }
}
