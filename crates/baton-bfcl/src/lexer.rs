//! A tokenizer reproducing CPython 3.11's for one `eval`-mode source string.
//!
//! It follows `Parser/tokenizer.c` where acceptance depends on it: newline translation,
//! the "unexpected indent" of an indented first line, bracket matching, numeric literal
//! rules (underscores, leading zeros, the keyword-after-number allowance), string prefixes
//! and escapes, identifier validation (XID) and NFKC normalisation of non-ASCII names.

use std::borrow::Cow;

use num_bigint::BigInt;
use unicode_normalization::UnicodeNormalization;

use crate::ast::Constant;
use crate::error::BfclError;
use crate::value::Int;

/// Python's hard keywords.
const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Operators, longest first so that the first match is the longest. The tokenizer finds
/// them by their first character ([`operators_starting_with`], tested against this list).
#[cfg(test)]
const OPERATORS: [&str; 47] = [
    "**=", "//=", ">>=", "<<=", "...", "->", ":=", "**", "//", "<<", ">>", "<=", ">=", "==", "!=",
    "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "@=", "(", ")", "[", "]", "{", "}", ",", ":",
    ".", ";", "+", "-", "*", "/", "%", "&", "|", "^", "~", "<", ">", "=", "@",
];

/// The operators of [`OPERATORS`] that start with `c`, in their order there (longest
/// first). Scanning all 47 for each bracket and comma was a sixth of the tokenizer's time.
fn operators_starting_with(c: char) -> &'static [&'static str] {
    match c {
        '*' => &["**=", "**", "*=", "*"],
        '/' => &["//=", "//", "/=", "/"],
        '>' => &[">>=", ">>", ">=", ">"],
        '<' => &["<<=", "<<", "<=", "<"],
        '.' => &["...", "."],
        '-' => &["->", "-=", "-"],
        ':' => &[":=", ":"],
        '=' => &["==", "="],
        '!' => &["!="],
        '+' => &["+=", "+"],
        '%' => &["%=", "%"],
        '&' => &["&=", "&"],
        '|' => &["|=", "|"],
        '^' => &["^=", "^"],
        '@' => &["@=", "@"],
        '(' => &["("],
        ')' => &[")"],
        '[' => &["["],
        ']' => &["]"],
        '{' => &["{"],
        '}' => &["}"],
        ',' => &[","],
        ';' => &[";"],
        '~' => &["~"],
        _ => &[],
    }
}

/// CPython's `MAXLEVEL` for bracket nesting.
const MAX_NESTING: usize = 200;

/// CPython 3.11's `sys.int_info.default_max_str_digits`: a decimal literal with more
/// significant digits is a `SyntaxError` (converting one would take quadratic time).
pub(crate) const INT_MAX_STR_DIGITS: usize = 4300;

/// Most tokens one answer may have. CPython has no such limit; this one keeps the token
/// list and the tree of a hostile answer (megabytes of `1,1,1,…`) to tens of megabytes.
/// No answer this long can match a BFCL reference, whose calls take a few dozen tokens.
pub const MAX_TOKENS: usize = 1 << 20;

/// One string literal piece, before implicit concatenation.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StrPiece<'a> {
    /// A `str` literal; `u` records a `u` prefix. Without escapes in an ASCII source, its
    /// text is borrowed, like a name's.
    Str { value: Cow<'a, str>, u: bool },
    /// A `bytes` literal.
    Bytes(Vec<u8>),
    /// An f-string: its raw body (between the quotes) and whether it is raw.
    FStr { body: Vec<char>, raw: bool },
}

/// Token kinds; a name borrows its text from the source where it can.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok<'a> {
    /// A (normalised) identifier that is not a keyword: borrowed from an ASCII source,
    /// so that the names of an answer that fails to parse (most of prose, say) are never
    /// copied, and a name is copied only when it becomes a node.
    Name(Cow<'a, str>),
    /// A hard keyword.
    Kw(&'static str),
    /// A numeric literal.
    Num(Constant),
    /// A string literal piece.
    Str(StrPiece<'a>),
    /// An operator or delimiter.
    Op(&'static str),
    /// End of a logical line.
    Newline,
    /// End of input.
    End,
}

/// A token and its character offset.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token<'a> {
    pub tok: Tok<'a>,
    pub pos: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c as u32 >= 128
}

fn is_ident_char(c: char) -> bool {
    is_ident_start(c) || c.is_ascii_digit()
}

fn is_string_prefix(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "b" | "r" | "u" | "f" | "br" | "rb" | "fr" | "rf"
    )
}

/// Tokenize `src` as CPython does for `compile(src, ..., "eval")`.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token<'_>>, BfclError> {
    if memchr::memchr(0, src.as_bytes()).is_some() {
        return Err(BfclError::syntax(
            0,
            "source code string cannot contain null bytes",
        ));
    }
    let mut ascii = None;
    let chars: Vec<char> = if memchr::memchr(b'\r', src.as_bytes()).is_some() {
        src.replace("\r\n", "\n")
            .replace('\r', "\n")
            .chars()
            .collect()
    } else if src.is_ascii() {
        // Known length and no decoding: the common case, in a third of the time.
        ascii = Some(src);
        src.bytes().map(char::from).collect()
    } else {
        src.chars().collect()
    };
    // About one token per four characters in a call list; one allocation in the common case.
    let tokens = Vec::with_capacity(chars.len() / 4 + 4);
    Lexer {
        chars,
        ascii,
        pos: 0,
        tokens,
        brackets: Vec::new(),
    }
    .run()
}

struct Lexer<'a> {
    chars: Vec<char>,
    /// The source, where `chars` are its bytes (ASCII without a CR): a name's or a str's
    /// text is sliced from it instead of encoded back char by char.
    ascii: Option<&'a str>,
    pos: usize,
    tokens: Vec<Token<'a>>,
    brackets: Vec<(char, usize)>,
}

impl<'a> Lexer<'a> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).copied()
    }

    /// The text of `chars[from..to]`, borrowed from an ASCII source.
    fn text(&self, from: usize, to: usize) -> Cow<'a, str> {
        match self.ascii {
            Some(src) => Cow::Borrowed(&src[from..to]),
            None => Cow::Owned(self.chars[from..to].iter().collect()),
        }
    }

    fn push(&mut self, tok: Tok<'a>, pos: usize) {
        self.tokens.push(Token { tok, pos });
    }

    fn run(mut self) -> Result<Vec<Token<'a>>, BfclError> {
        let mut at_line_start = true;
        let mut ended_line = false;
        loop {
            if at_line_start && self.brackets.is_empty() {
                let mut col = 0usize;
                while let Some(c) = self.peek(0) {
                    match c {
                        ' ' => col += 1,
                        '\t' => col = (col / 8 + 1) * 8,
                        '\x0c' => col = 0,
                        _ => break,
                    }
                    self.pos += 1;
                }
                match self.peek(0) {
                    None => {}
                    Some('#') | Some('\n') => {
                        while self.peek(0).is_some_and(|c| c != '\n') {
                            self.pos += 1;
                        }
                        if self.peek(0).is_some() {
                            self.pos += 1;
                        }
                        continue;
                    }
                    Some(_) => {
                        if ended_line {
                            return Err(BfclError::syntax(self.pos, "invalid syntax"));
                        }
                        if col != 0 {
                            return Err(BfclError::syntax(self.pos, "unexpected indent"));
                        }
                        at_line_start = false;
                    }
                }
            }
            while matches!(self.peek(0), Some(' ' | '\t' | '\x0c')) {
                self.pos += 1;
            }
            let start = self.pos;
            if self.tokens.len() >= MAX_TOKENS {
                return Err(BfclError::not_reproduced(format!(
                    "an answer of more than {MAX_TOKENS} tokens"
                )));
            }
            let Some(c) = self.peek(0) else {
                if let Some(&(open, at)) = self.brackets.last() {
                    return Err(BfclError::syntax(at, format!("'{open}' was never closed")));
                }
                if !at_line_start {
                    self.push(Tok::Newline, start);
                }
                self.push(Tok::End, start);
                return Ok(self.tokens);
            };
            match c {
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.pos += 1;
                    }
                }
                '\n' => {
                    self.pos += 1;
                    if self.brackets.is_empty() {
                        self.push(Tok::Newline, start);
                        at_line_start = true;
                        ended_line = true;
                    }
                }
                '\\' => {
                    if self.peek(1) == Some('\n') {
                        self.pos += 2;
                        if self.peek(0).is_none() {
                            return Err(BfclError::syntax(start, "unexpected EOF while parsing"));
                        }
                    } else {
                        return Err(BfclError::syntax(
                            start,
                            "unexpected character after line continuation character",
                        ));
                    }
                }
                c if is_ident_start(c) => self.word()?,
                c if c.is_ascii_digit() => self.number()?,
                '.' if self.peek(1).is_some_and(|d| d.is_ascii_digit()) => self.number()?,
                '\'' | '"' => {
                    let piece = self.string(false, false, false, false)?;
                    self.push(Tok::Str(piece), start);
                }
                _ => self.operator()?,
            }
        }
    }

    fn word(&mut self) -> Result<(), BfclError> {
        let start = self.pos;
        while self.peek(0).is_some_and(is_ident_char) {
            self.pos += 1;
        }
        let word = self.text(start, self.pos);
        if matches!(self.peek(0), Some('\'' | '"')) && is_string_prefix(&word) {
            let lower = word.to_ascii_lowercase();
            let piece = self.string(
                lower.contains('r'),
                lower.contains('b'),
                lower.contains('f'),
                lower.contains('u'),
            )?;
            self.push(Tok::Str(piece), start);
            return Ok(());
        }
        if !word.is_ascii() {
            let mut chars = word.chars();
            let first_ok = chars
                .next()
                .is_some_and(|c| c == '_' || unicode_ident::is_xid_start(c));
            if !first_ok || !chars.all(unicode_ident::is_xid_continue) {
                return Err(BfclError::syntax(
                    start,
                    format!("invalid character in identifier {word:?}"),
                ));
            }
        }
        // Most words are no keyword, which a match on the text tells at once; a keyword's
        // static text is then found in the list.
        let keyword = crate::fast::is_keyword(&word)
            .then(|| KEYWORDS.iter().find(|k| **k == word))
            .flatten();
        if let Some(kw) = keyword {
            self.push(Tok::Kw(kw), start);
        } else if word.is_ascii() {
            self.push(Tok::Name(word), start);
        } else {
            self.push(Tok::Name(Cow::Owned(word.nfkc().collect())), start);
        }
        Ok(())
    }

    /// Digits of `radix` with single underscores between them; returns the digits read.
    fn digits(&mut self, radix: u32, kind: &str) -> Result<String, BfclError> {
        let mut out = String::new();
        loop {
            match self.peek(0) {
                Some(c) if c.is_digit(radix) => {
                    out.push(c);
                    self.pos += 1;
                }
                Some('_') if !out.is_empty() => {
                    if self.peek(1).is_some_and(|d| d.is_digit(radix)) {
                        self.pos += 1;
                    } else {
                        return Err(BfclError::syntax(
                            self.pos,
                            format!("invalid {kind} literal"),
                        ));
                    }
                }
                _ => return Ok(out),
            }
        }
    }

    /// CPython's `verify_end_of_number`.
    fn verify_end_of_number(&self, kind: &str) -> Result<(), BfclError> {
        let Some(c) = self.peek(0) else {
            return Ok(());
        };
        // Compared in place: a number is followed by `,` or `)` far more often than by a
        // keyword, and spelling out what follows cost an allocation per number.
        let follows = |word: &str| {
            let rest = &self.chars[self.pos..];
            rest.len() >= word.len() && word.chars().zip(rest).all(|(w, &c)| w == c)
        };
        let keyword_follows = match c {
            'a' => follows("and"),
            'e' => follows("else"),
            'f' => follows("for"),
            'i' => matches!(self.peek(1), Some('f' | 'n' | 's')),
            'o' => follows("or"),
            'n' => follows("not"),
            _ => false,
        };
        if !keyword_follows && is_ident_char(c) {
            return Err(BfclError::syntax(
                self.pos,
                format!("invalid {kind} literal"),
            ));
        }
        Ok(())
    }

    fn number(&mut self) -> Result<(), BfclError> {
        let start = self.pos;
        if self.peek(0) == Some('0') {
            let radix = match self.peek(1) {
                Some('x' | 'X') => Some((16, "hexadecimal")),
                Some('o' | 'O') => Some((8, "octal")),
                Some('b' | 'B') => Some((2, "binary")),
                _ => None,
            };
            if let Some((radix, kind)) = radix {
                self.pos += 2;
                if self.peek(0) == Some('_') {
                    self.pos += 1;
                }
                let digits = self.digits(radix, kind)?;
                if digits.is_empty() {
                    return Err(BfclError::syntax(
                        self.pos,
                        format!("invalid {kind} literal"),
                    ));
                }
                if let Some(d) = self.peek(0).filter(|d| d.is_ascii_digit()) {
                    return Err(BfclError::syntax(
                        self.pos,
                        format!("invalid digit '{d}' in {kind} literal"),
                    ));
                }
                self.verify_end_of_number(kind)?;
                let value = BigInt::parse_bytes(digits.as_bytes(), radix)
                    .ok_or_else(|| BfclError::syntax(start, "invalid number"))?;
                self.push(Tok::Num(Constant::Int(value.into())), start);
                return Ok(());
            }
        }
        // A plain decimal int of up to 19 digits (nearly every number in an answer) is read
        // where it lies: no digit text is built. Anything else (`_`, a fraction, an
        // exponent, `j`, a leading zero, more digits) goes the general way below.
        let rest = &self.chars[self.pos..];
        let n = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        if (1..=19).contains(&n)
            && (n == 1 || rest[0] != '0')
            && !matches!(rest.get(n), Some('.' | 'e' | 'E' | 'j' | 'J' | '_'))
        {
            let value = rest[..n]
                .iter()
                .fold(0u64, |acc, &c| acc * 10 + u64::from(c as u8 - b'0'));
            self.pos += n;
            self.verify_end_of_number("decimal")?;
            self.push(Tok::Num(Constant::Int(value.into())), start);
            return Ok(());
        }
        let int_part = if self.peek(0) == Some('.') {
            String::new()
        } else {
            self.digits(10, "decimal")?
        };
        // The float's text is spelled out only for a float (most numbers are integers).
        let mut is_float = false;
        let mut text = String::new();
        if self.peek(0) == Some('.') {
            is_float = true;
            self.pos += 1;
            text.push_str(&int_part);
            text.push('.');
            if self.peek(0).is_some_and(|d| d.is_ascii_digit()) {
                text.push_str(&self.digits(10, "decimal")?);
            }
        }
        if matches!(self.peek(0), Some('e' | 'E')) {
            let save = self.pos;
            self.pos += 1;
            let mut exp = String::from("e");
            if let Some(sign @ ('+' | '-')) = self.peek(0) {
                exp.push(sign);
                self.pos += 1;
            }
            if self.peek(0).is_some_and(|d| d.is_ascii_digit()) {
                exp.push_str(&self.digits(10, "decimal")?);
                if !is_float {
                    text.push_str(&int_part);
                }
                text.push_str(&exp);
                is_float = true;
            } else {
                // Not an exponent after all: the 'e' is checked as what follows the number.
                self.pos = save;
            }
        }
        if matches!(self.peek(0), Some('j' | 'J')) {
            self.pos += 1;
            self.verify_end_of_number("imaginary")?;
            let text = if is_float { &text } else { &int_part };
            let imag: f64 = text.parse().unwrap_or(f64::INFINITY);
            self.push(Tok::Num(Constant::Imag(imag)), start);
            return Ok(());
        }
        if is_float {
            self.verify_end_of_number("decimal")?;
            let value: f64 = text.parse().unwrap_or(f64::INFINITY);
            self.push(Tok::Num(Constant::Float(value)), start);
            return Ok(());
        }
        if int_part.len() > 1 && int_part.starts_with('0') && int_part.chars().any(|c| c != '0') {
            return Err(BfclError::syntax(
                start,
                "leading zeros in decimal integer literals are not permitted",
            ));
        }
        self.verify_end_of_number("decimal")?;
        let significant = int_part.trim_start_matches('0').len();
        if significant > INT_MAX_STR_DIGITS {
            return Err(BfclError::syntax(
                start,
                format!(
                    "Exceeds the limit ({INT_MAX_STR_DIGITS} digits) for integer string \
                     conversion: value has {significant} digits; use \
                     sys.set_int_max_str_digits() to increase the limit - Consider \
                     hexadecimal for huge integer literals to avoid decimal conversion limits."
                ),
            ));
        }
        // Up to 19 digits fit a u64: converted directly, without the digit buffers of a
        // general big-integer parse (nearly every literal in an answer is this small).
        let small = if int_part.len() <= 19 {
            int_part.parse::<u64>().ok().map(Int::from)
        } else {
            None
        };
        let value = match small {
            Some(value) => value,
            None => BigInt::parse_bytes(int_part.as_bytes(), 10)
                .ok_or_else(|| BfclError::syntax(start, "invalid number"))?
                .into(),
        };
        self.push(Tok::Num(Constant::Int(value)), start);
        Ok(())
    }

    fn string(
        &mut self,
        raw: bool,
        bytes: bool,
        fstr: bool,
        u: bool,
    ) -> Result<StrPiece<'a>, BfclError> {
        let start = self.pos;
        let quote = self.chars[self.pos];
        let triple = self.peek(1) == Some(quote) && self.peek(2) == Some(quote);
        self.pos += if triple { 3 } else { 1 };
        let body_start = self.pos;
        let body_end;
        loop {
            let Some(c) = self.peek(0) else {
                let what = if triple {
                    "unterminated triple-quoted string literal"
                } else {
                    "unterminated string literal"
                };
                return Err(BfclError::syntax(start, what));
            };
            if c == '\n' && !triple {
                return Err(BfclError::syntax(start, "unterminated string literal"));
            }
            if c == '\\' {
                self.pos += 2;
                continue;
            }
            if c == quote
                && (!triple || (self.peek(1) == Some(quote) && self.peek(2) == Some(quote)))
            {
                body_end = self.pos;
                self.pos += if triple { 3 } else { 1 };
                break;
            }
            self.pos += 1;
        }
        let body = &self.chars[body_start..body_end];
        if bytes && body.iter().any(|c| !c.is_ascii()) {
            return Err(BfclError::syntax(
                start,
                "bytes can only contain ASCII literal characters",
            ));
        }
        if fstr {
            return Ok(StrPiece::FStr {
                body: body.to_vec(),
                raw,
            });
        }
        // A body without a backslash decodes to itself: it is read as a raw one is, without
        // copying it twice on the way (most strings in an answer have no escape).
        if raw || !body.contains(&'\\') {
            return Ok(if bytes {
                StrPiece::Bytes(body.iter().map(|&c| c as u8).collect())
            } else {
                StrPiece::Str {
                    value: self.text(body_start, body_end),
                    u,
                }
            });
        }
        let decoded = decode_escapes(body, bytes, start)?;
        Ok(if bytes {
            StrPiece::Bytes(decoded.iter().map(|&c| c as u8).collect())
        } else {
            StrPiece::Str {
                value: Cow::Owned(decoded.into_iter().collect()),
                u,
            }
        })
    }

    fn operator(&mut self) -> Result<(), BfclError> {
        let start = self.pos;
        let c = self.chars[self.pos];
        // The first operator in OPERATORS' order (longest first) that the input spells out,
        // among those that start with this character.
        let Some(op) = operators_starting_with(c).iter().find(|op| {
            op.bytes()
                .enumerate()
                .skip(1)
                .all(|(i, ob)| self.peek(i) == Some(char::from(ob)))
        }) else {
            let message = if c.is_ascii_graphic() {
                format!("invalid character '{c}'")
            } else {
                format!("invalid non-printable character U+{:04X}", c as u32)
            };
            return Err(BfclError::syntax(start, message));
        };
        self.pos += op.len();
        match *op {
            "(" | "[" | "{" => {
                if self.brackets.len() >= MAX_NESTING {
                    return Err(BfclError::syntax(start, "too many nested parentheses"));
                }
                self.brackets.push((c, start));
            }
            ")" | "]" | "}" => {
                let Some((open, _)) = self.brackets.pop() else {
                    return Err(BfclError::syntax(start, format!("unmatched '{c}'")));
                };
                let expected = match open {
                    '(' => ')',
                    '[' => ']',
                    _ => '}',
                };
                if expected != c {
                    return Err(BfclError::syntax(
                        start,
                        format!(
                            "closing parenthesis '{c}' does not match opening parenthesis '{open}'"
                        ),
                    ));
                }
            }
            _ => {}
        }
        self.push(Tok::Op(op), start);
        Ok(())
    }
}

/// Decode the backslash escapes of a non-raw literal body (`bytes` limits them to bytes escapes).
///
/// Returns characters (for bytes, each is below U+0100); `\N{name}` is looked up in the
/// Unicode name table (aliases included); a lone surrogate escape becomes U+FFFD.
pub(crate) fn decode_escapes(
    body: &[char],
    bytes: bool,
    at: usize,
) -> Result<Vec<char>, BfclError> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    let hex = |from: usize, n: usize| -> Option<u32> {
        let digits: String = body.get(from..from + n)?.iter().collect();
        if digits.chars().all(|c| c.is_ascii_hexdigit()) {
            u32::from_str_radix(&digits, 16).ok()
        } else {
            None
        }
    };
    while i < body.len() {
        let c = body[i];
        if c != '\\' || i + 1 >= body.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let e = body[i + 1];
        i += 2;
        match e {
            '\n' => {}
            '\\' | '\'' | '"' => out.push(e),
            'a' => out.push('\x07'),
            'b' => out.push('\x08'),
            'f' => out.push('\x0c'),
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'v' => out.push('\x0b'),
            '0'..='7' => {
                let mut value = e.to_digit(8).unwrap_or(0);
                let mut n = 1;
                while n < 3 && i < body.len() && ('0'..='7').contains(&body[i]) {
                    value = value * 8 + body[i].to_digit(8).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                if bytes {
                    out.push(char::from((value & 0xff) as u8));
                } else {
                    out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
                }
            }
            'x' => {
                let Some(value) = hex(i, 2) else {
                    return Err(BfclError::syntax(at, "truncated \\xXX escape"));
                };
                i += 2;
                out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
            }
            'u' | 'U' if !bytes => {
                let n = if e == 'u' { 4 } else { 8 };
                let Some(value) = hex(i, n) else {
                    return Err(BfclError::syntax(at, format!("truncated \\{e} escape")));
                };
                i += n;
                if value > 0x10ffff {
                    return Err(BfclError::syntax(at, "illegal Unicode character"));
                }
                out.push(char::from_u32(value).unwrap_or('\u{fffd}'));
            }
            'N' if !bytes => {
                let close = (body.get(i) == Some(&'{'))
                    .then(|| body[i..].iter().position(|&c| c == '}'))
                    .flatten();
                let Some(close) = close.filter(|&n| n > 1) else {
                    return Err(BfclError::syntax(at, "malformed \\N character escape"));
                };
                let name: String = body[i + 1..i + close].iter().collect();
                let Some(ch) = unicode_names2::character(&name) else {
                    return Err(BfclError::syntax(at, "unknown Unicode character name"));
                };
                out.push(ch);
                i += close + 1;
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Result<Vec<Tok<'_>>, BfclError> {
        tokenize(src).map(|t| t.into_iter().map(|t| t.tok).collect())
    }

    #[test]
    fn numbers() {
        let num = |s: &str| match toks(s).unwrap().remove(0) {
            Tok::Num(c) => c,
            other => panic!("{other:?}"),
        };
        assert_eq!(num("0x14"), Constant::Int(20.into()));
        assert_eq!(num("2_0"), Constant::Int(20.into()));
        assert_eq!(num("0b_101"), Constant::Int(5.into()));
        assert_eq!(num("1e3"), Constant::Float(1000.0));
        assert_eq!(num(".5"), Constant::Float(0.5));
        assert_eq!(num("1_000j"), Constant::Imag(1000.0));
        assert_eq!(num("00"), Constant::Int(0.into()));
        assert_eq!(num("7"), Constant::Int(7.into()));
        assert_eq!(
            num("9999999999999999999"),
            Constant::Int(9_999_999_999_999_999_999u64.into())
        );
        assert_eq!(
            num("12345678901234567890"),
            Constant::Int(12_345_678_901_234_567_890u128.into())
        );
        assert_eq!(num("12.5"), Constant::Float(12.5));
        assert_eq!(num("12e1"), Constant::Float(120.0));
        assert_eq!(num("12j"), Constant::Imag(12.0));
        assert!(toks("012").is_err());
        assert!(toks("1__0").is_err());
        assert!(toks("1abc").is_err());
        assert!(toks("1.real").is_err());
        assert!(toks("0b12").is_err());
        assert!(toks("1if x else y").is_ok());
    }

    #[test]
    fn strings() {
        fn s(src: &str) -> StrPiece<'_> {
            match toks(src).unwrap().remove(0) {
                Tok::Str(p) => p,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            s(r"'a\tb'"),
            StrPiece::Str {
                value: "a\tb".into(),
                u: false
            }
        );
        assert_eq!(
            s(r"r'a\tb'"),
            StrPiece::Str {
                value: "a\\tb".into(),
                u: false
            }
        );
        assert_eq!(
            s(r"u'\x41\u00e9'"),
            StrPiece::Str {
                value: "Aé".into(),
                u: true
            }
        );
        assert_eq!(
            s(r"b'\x00\u1234'"),
            StrPiece::Bytes(b"\x00\\u1234".to_vec())
        );
        assert_eq!(
            s(r"'\d'"),
            StrPiece::Str {
                value: "\\d".into(),
                u: false
            }
        );
        assert_eq!(
            s("'''a'b'''"),
            StrPiece::Str {
                value: "a'b".into(),
                u: false
            }
        );
        assert!(toks(r"'\x4'").is_err());
        assert!(toks("b'é'").is_err());
        assert!(toks("'abc").is_err());
        assert!(toks("'a\rb'").is_err());
        assert_eq!(
            s(r"'\N{EM DASH}\N{degree sign}'"),
            StrPiece::Str {
                value: "—°".into(),
                u: false
            }
        );
        assert!(toks(r"'\N{NO SUCH NAME}'").is_err());
        assert!(toks(r"'\N{}'").is_err());
    }

    #[test]
    fn lines_and_brackets() {
        assert!(toks(" f(a=1)").is_err(), "unexpected indent");
        assert!(toks("f(a=1)\rg()").is_err());
        assert!(toks("\rf(a=1)").is_ok());
        assert!(toks("f(\r  a=1)").is_ok());
        assert!(toks("f(a=1))").is_err());
        assert!(toks("f(a=1]").is_err());
        assert!(toks("f(a=1").is_err());
        assert!(toks("f(a=1) # note").is_ok());
        assert!(toks("f(a=1)\x0b").is_err());
        assert_eq!(toks("ｆ").unwrap()[0], Tok::Name("f".into()));
        assert!(toks("a×b").is_err());
    }

    /// Each character's operators are those of OPERATORS starting with it, in its order.
    #[test]
    fn operators_by_first_character_are_operators_in_order() {
        for b in 0u8..128 {
            let c = char::from(b);
            let want: Vec<&str> = OPERATORS
                .iter()
                .copied()
                .filter(|op| op.as_bytes()[0] == b)
                .collect();
            assert_eq!(operators_starting_with(c), want.as_slice(), "{c:?}");
        }
        assert!(operators_starting_with('é').is_empty());
    }

    /// The fast decoder's keyword test, which the tokenizer asks first, knows exactly the
    /// tokenizer's keywords.
    #[test]
    fn keyword_test_agrees_with_the_keyword_list() {
        for kw in KEYWORDS {
            assert!(crate::fast::is_keyword(kw), "{kw}");
            assert!(!crate::fast::is_keyword(&kw.to_uppercase()), "{kw}");
        }
        for word in [
            "match",
            "case",
            "type",
            "_",
            "print",
            "self",
            "nonlocals",
            "Tru",
        ] {
            assert!(!crate::fast::is_keyword(word), "{word}");
        }
    }
}
