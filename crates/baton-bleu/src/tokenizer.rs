//! sacreBLEU's tokenizers: `13a` (the default), `none`, `intl` and `char`.
//!
//! The `13a` tokenizer is sacreBLEU's `Tokenizer13a` followed by `TokenizerRegexp`. Its four
//! regular expressions are each a fixed two-character (or one-character) pattern applied with
//! Python's leftmost, non-overlapping `re.sub`, so each pass is written out as a byte loop that
//! consumes exactly what the regex would consume. Every character the patterns name is ASCII, and
//! a UTF-8 continuation byte can never start or end a match where a whole character would not, so
//! working on bytes gives the same result as working on characters. `intl` needs Unicode
//! general categories and uses the `regex` crate; it is not on any hot path.

use std::borrow::Cow;
use std::str::FromStr;
use std::sync::LazyLock;

use regex::Regex;

use crate::BleuError;
use crate::whitespace::{python_rstrip, split_spans};

/// Which sacreBLEU tokenizer to apply before counting n-grams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Tokenizer {
    /// `13a`: mteval-v13a.pl's tokenisation, sacreBLEU's default.
    #[default]
    #[cfg_attr(feature = "serde", serde(rename = "13a"))]
    V13a,
    /// `none`: no tokenisation; tokens are the whitespace-separated words of the line.
    #[cfg_attr(feature = "serde", serde(rename = "none"))]
    None,
    /// `intl`: mteval-v14.pl's international tokenisation (Unicode punctuation and symbols).
    #[cfg_attr(feature = "serde", serde(rename = "intl"))]
    Intl,
    /// `char`: every character is a token.
    #[cfg_attr(feature = "serde", serde(rename = "char"))]
    Char,
}

impl Tokenizer {
    /// sacreBLEU's name for the tokenizer, as used by `tokenize=` and in signatures.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::V13a => "13a",
            Self::None => "none",
            Self::Intl => "intl",
            Self::Char => "char",
        }
    }

    /// The tokenizer's output for `line`, exactly as sacreBLEU's tokenizer object returns it
    /// (sacreBLEU applies it after optional lowercasing and `rstrip()`).
    ///
    /// ```
    /// use baton_bleu::Tokenizer;
    /// assert_eq!(
    ///     Tokenizer::V13a.tokenize("He scored 1,234.5 points (a record)!"),
    ///     "He scored 1,234.5 points ( a record ) !"
    /// );
    /// ```
    #[must_use]
    pub fn tokenize(self, line: &str) -> String {
        if self == Self::None {
            return line.to_owned();
        }
        let mut scratch = Scratch::default();
        let bytes = scratch.run(self, line);
        let mut out = String::with_capacity(bytes.len());
        split_spans(bytes, |a, b| {
            if !out.is_empty() {
                out.push(' ');
            }
            // The passes only insert ASCII spaces at character boundaries, so every span is
            // valid UTF-8; `from_utf8_lossy` never allocates here.
            out.push_str(&String::from_utf8_lossy(&bytes[a..b]));
        });
        out
    }
}

impl std::fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Tokenizer {
    type Err = BleuError;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "13a" => Ok(Self::V13a),
            "none" => Ok(Self::None),
            "intl" => Ok(Self::Intl),
            "char" => Ok(Self::Char),
            _ => Err(BleuError::UnknownTokenizer {
                name: name.to_owned(),
            }),
        }
    }
}

/// Reusable buffers for tokenising one segment after another without allocating.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    a: Vec<u8>,
    b: Vec<u8>,
}

impl Scratch {
    /// sacreBLEU's `BLEU._preprocess_segment` (optional `lower()`, `rstrip()`, tokenizer) minus
    /// the final `' '.join(line.split())`: the returned bytes split on Python whitespace into
    /// the same tokens as sacreBLEU's output does.
    pub(crate) fn preprocess(
        &mut self,
        tokenizer: Tokenizer,
        lowercase: bool,
        line: &str,
    ) -> &[u8] {
        let line: Cow<'_, str> = if lowercase {
            Cow::Owned(line.to_lowercase())
        } else {
            Cow::Borrowed(line)
        };
        self.run(tokenizer, python_rstrip(&line))
    }

    /// The tokenizer alone (no lowercasing, no `rstrip()`).
    fn run(&mut self, tokenizer: Tokenizer, line: &str) -> &[u8] {
        match tokenizer {
            Tokenizer::V13a => self.v13a(line),
            Tokenizer::None => {
                self.a.clear();
                self.a.extend_from_slice(line.as_bytes());
            }
            Tokenizer::Intl => {
                let mut line = Cow::Borrowed(line);
                for (re, replacement) in INTL.iter() {
                    if let Cow::Owned(s) = re.replace_all(&line, *replacement) {
                        line = Cow::Owned(s);
                    }
                }
                self.a.clear();
                self.a.extend_from_slice(line.as_bytes());
            }
            Tokenizer::Char => {
                // `" ".join(line)`: the separators only matter through the later split.
                self.a.clear();
                let mut utf8 = [0; 4];
                for c in line.chars() {
                    if !self.a.is_empty() {
                        self.a.push(b' ');
                    }
                    self.a
                        .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                }
            }
        }
        &self.a
    }

    /// `Tokenizer13a.__call__` and `TokenizerRegexp.__call__`, leaving the result in `self.a`.
    fn v13a(&mut self, line: &str) {
        let mut line = Cow::Borrowed(line);
        if line.contains("<skipped>") {
            line = Cow::Owned(line.replace("<skipped>", ""));
        }
        if line.contains('\n') {
            line = Cow::Owned(line.replace("-\n", "").replace('\n', " "));
        }
        if line.contains('&') {
            line = Cow::Owned(
                line.replace("&quot;", "\"")
                    .replace("&amp;", "&")
                    .replace("&lt;", "<")
                    .replace("&gt;", ">"),
            );
        }

        // f' {line} ' and pass 1: `([\{-\~\[-\` -\&\(-\+\:-\@\/])` -> ` \1 `.
        let (a, b) = (&mut self.a, &mut self.b);
        a.clear();
        a.reserve(line.len() * 2 + 2);
        a.push(b' ');
        let mut dot_or_comma = false;
        let mut dash = false;
        for &c in line.as_bytes() {
            if PASS1[usize::from(c)] {
                a.extend_from_slice(&[b' ', c, b' ']);
            } else {
                dot_or_comma |= c == b'.' || c == b',';
                dash |= c == b'-';
                a.push(c);
            }
        }
        a.push(b' ');

        if dot_or_comma {
            // Pass 2: `([^0-9])([\.,])` -> `\1 \2 `.
            pair_pass(
                a,
                b,
                |x, y| !x.is_ascii_digit() && is_dot_or_comma(y),
                |x, y| [x, b' ', y, b' '],
            );
            // Pass 3: `([\.,])([^0-9])` -> ` \1 \2`.
            pair_pass(
                b,
                a,
                |x, y| is_dot_or_comma(x) && !y.is_ascii_digit(),
                |x, y| [b' ', x, b' ', y],
            );
        }
        if dash {
            // Pass 4: `([0-9])(-)` -> `\1 \2 `.
            pair_pass(
                a,
                b,
                |x, y| x.is_ascii_digit() && y == b'-',
                |x, y| [x, b' ', y, b' '],
            );
            std::mem::swap(a, b);
        }
    }
}

fn is_dot_or_comma(c: u8) -> bool {
    c == b'.' || c == b','
}

/// One `re.sub` of a two-character pattern: scanning left to right, wherever `matches(x, y)`
/// holds for the pair at the cursor, write `replace(x, y)` and step over both; otherwise copy
/// one byte.
#[inline]
fn pair_pass(
    from: &[u8],
    to: &mut Vec<u8>,
    matches: impl Fn(u8, u8) -> bool,
    replace: impl Fn(u8, u8) -> [u8; 4],
) {
    to.clear();
    to.reserve(from.len() + from.len() / 2);
    let mut i = 0;
    while i + 1 < from.len() {
        let (x, y) = (from[i], from[i + 1]);
        if matches(x, y) {
            to.extend_from_slice(&replace(x, y));
            i += 2;
        } else {
            to.push(x);
            i += 1;
        }
    }
    to.extend_from_slice(&from[i..]);
}

/// The byte set of the first 13a pattern: `{`..`~`, `[`..backtick, space..`&`, `(`..`+`,
/// `:`..`@` and `/`.
static PASS1: [bool; 256] = {
    let mut set = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        set[c] =
            matches!(b, b'{'..=b'~' | b'['..=b'`' | b' '..=b'&' | b'('..=b'+' | b':'..=b'@' | b'/');
        c += 1;
    }
    set
};

/// `TokenizerV14International`'s three substitutions, in order.
static INTL: LazyLock<[(Regex, &str); 3]> = LazyLock::new(|| {
    let re = |pattern: &str| Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
    [
        (re(r"(\P{N})(\p{P})"), "${1} ${2} "),
        (re(r"(\p{P})(\P{N})"), " ${1} ${2}"),
        (re(r"(\p{S})"), " ${1} "),
    ]
});

#[cfg(test)]
mod tests {
    use super::*;

    fn t13a(s: &str) -> String {
        Tokenizer::V13a.tokenize(s)
    }

    #[test]
    fn spec_vectors() {
        // lic-evaluators.md §6.4, checked against sacreBLEU 2.6.0.
        assert_eq!(
            t13a("The 2019 U.S. Open was won by Naomi Osaka, who beat Serena Williams 6-2, 6-4."),
            "The 2019 U . S . Open was won by Naomi Osaka , who beat Serena Williams 6 - 2 , 6 - 4 ."
        );
        assert_eq!(
            t13a("He scored 1,234.5 points (a record)!"),
            "He scored 1,234.5 points ( a record ) !"
        );
        assert_eq!(t13a("A &amp; B said \"hi\"."), "A & B said \" hi \" .");
    }

    /// Outputs of sacreBLEU 2.6.0's `Tokenizer13a()(line)` for lines that probe the order and
    /// overlap rules of its substitutions.
    #[test]
    fn substitution_order_and_overlap() {
        let cases = [
            ("a..b", "a . . b"),
            ("a.,b", "a . , b"),
            ("1.,2", "1 . , 2"),
            ("x.5 5.x 5.5 .5 5.", "x . 5 5 . x 5.5 . 5 5 ."),
            ("1-2 a-b 1--2 -1", "1 - 2 a-b 1 - -2 -1"),
            ("<skipped>a-\nb\nc", "ab c"),
            ("&amp;lt; &amp;quot; &quot;", "< & quot ; \""),
            ("'tis it's don't", "'tis it's don't"),
            ("é.ü,5 ü.5", "é . ü , 5 ü . 5"),
            (
                "{|}~[\\]^_`!\"#$%&()*+:;<=>?@/",
                "{ | } ~ [ \\ ] ^ _ ` ! \" # $ % & ( ) * + : ; < = > ? @ /",
            ),
            ("6–2, 6\u{a0}.4", "6–2 , 6 . 4"),
            ("", ""),
            ("   ", ""),
        ];
        for (line, expected) in cases {
            assert_eq!(t13a(line), expected, "{line:?}");
        }
    }

    #[test]
    fn other_tokenizers() {
        assert_eq!(Tokenizer::None.tokenize(" a  b "), " a  b ");
        assert_eq!(Tokenizer::Char.tokenize("ab c"), "a b c");
        assert_eq!(
            Tokenizer::Intl.tokenize("Hello, world! 1,000.5 €5."),
            "Hello , world ! 1,000.5 € 5."
        );
    }

    #[test]
    fn names_round_trip() {
        for t in [
            Tokenizer::V13a,
            Tokenizer::None,
            Tokenizer::Intl,
            Tokenizer::Char,
        ] {
            assert_eq!(t.name().parse::<Tokenizer>(), Ok(t));
        }
        assert!(matches!(
            "zh".parse::<Tokenizer>(),
            Err(BleuError::UnknownTokenizer { name }) if name == "zh"
        ));
    }
}
