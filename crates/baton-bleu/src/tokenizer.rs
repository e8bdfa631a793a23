//! sacreBLEU's tokenizers: `13a` (the default), `none`, `intl` and `char`.
//!
//! The `13a` tokenizer is sacreBLEU's `Tokenizer13a` followed by `TokenizerRegexp`. Its four
//! regular expressions each match a fixed one- or two-character pattern and are applied with
//! Python's leftmost, non-overlapping `re.sub`, so each is written out as a loop over bytes that
//! takes exactly the matches the regex would take (see [`Scratch::v13a`]). Every character the
//! patterns name is ASCII, and a UTF-8 continuation byte can never start or end a match where
//! a whole character would not, so working on bytes gives the same result as working on
//! characters. The tests check this against a literal rendering of the regexes. `intl` needs
//! Unicode general categories and uses the `regex` crate; it is not on any hot path.

use std::borrow::Cow;
use std::str::FromStr;
use std::sync::LazyLock;

use regex::Regex;

use crate::BleuError;
use crate::whitespace::{is_python_whitespace, python_rstrip, whitespace_len};

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
        let mut out = String::with_capacity(line.len() + line.len() / 4);
        Scratch::default().tokens_raw(self, line, |token| {
            if !out.is_empty() {
                out.push(' ');
            }
            // Tokens are split at character boundaries, so each one is valid UTF-8 and
            // `from_utf8_lossy` never has to replace anything.
            out.push_str(&String::from_utf8_lossy(token));
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
    /// Calls `token` for each token of sacreBLEU's `BLEU._preprocess_segment(line)` (optional
    /// `lower()`, `rstrip()`, the tokenizer) as `extract_all_word_ngrams` splits it.
    #[inline]
    pub(crate) fn tokens(
        &mut self,
        tokenizer: Tokenizer,
        lowercase: bool,
        line: &str,
        token: impl FnMut(&[u8]),
    ) {
        let line: Cow<'_, str> = if lowercase {
            Cow::Owned(line.to_lowercase())
        } else {
            Cow::Borrowed(line)
        };
        self.tokens_raw(tokenizer, python_rstrip(&line), token);
    }

    /// The tokenizer alone (no lowercasing, no `rstrip()`), split into tokens.
    fn tokens_raw(&mut self, tokenizer: Tokenizer, line: &str, mut token: impl FnMut(&[u8])) {
        match tokenizer {
            Tokenizer::V13a => {
                self.v13a(line);
                split(&self.a, &CLASS_13A, token);
            }
            Tokenizer::None => split(line.as_bytes(), &CLASS_PLAIN, token),
            Tokenizer::Intl => {
                let mut line = Cow::Borrowed(line);
                for (re, replacement) in INTL.iter() {
                    if let Cow::Owned(s) = re.replace_all(&line, *replacement) {
                        line = Cow::Owned(s);
                    }
                }
                split(line.as_bytes(), &CLASS_PLAIN, token);
            }
            Tokenizer::Char => {
                // `" ".join(line)`, then split: every non-whitespace character is a token.
                let bytes = line.as_bytes();
                for (i, c) in line.char_indices() {
                    if !is_python_whitespace(c) {
                        token(&bytes[i..i + c.len_utf8()]);
                    }
                }
            }
        }
    }

    /// `Tokenizer13a.__call__` and `TokenizerRegexp.__call__`, leaving in `self.a` a text that
    /// splits into the same tokens once every byte of the first pattern's set is also split off
    /// on its own (see [`CLASS_13A`]).
    ///
    /// The first substitution, `` ([\{-\~\[-\` -\&\(-\+\:-\@\/]) `` -> `` \1 ``, is left to the split:
    /// it only surrounds those bytes with spaces, and the later patterns cannot tell such a byte
    /// from the space next to it (both are non-digits other than `.`, `,` and `-`), so applying
    /// it first or last makes no difference to the tokens. The other three substitutions run
    /// in order; each copies the text in chunks between the few places where it matches.
    fn v13a(&mut self, line: &str) {
        // One scan says which of the rules can apply at all.
        let present = line
            .bytes()
            .fold(0, |acc, b| acc | TRIGGERS[usize::from(b)]);
        let mut line = Cow::Borrowed(line);
        if present & LT != 0 && line.contains("<skipped>") {
            line = Cow::Owned(line.replace("<skipped>", ""));
        }
        if present & NEWLINE != 0 {
            line = Cow::Owned(line.replace("-\n", "").replace('\n', " "));
        }
        if present & AMP != 0 {
            line = Cow::Owned(
                line.replace("&quot;", "\"")
                    .replace("&amp;", "&")
                    .replace("&lt;", "<")
                    .replace("&gt;", ">"),
            );
        }

        // f' {line} '
        let (a, b) = (&mut self.a, &mut self.b);
        a.clear();
        a.reserve(line.len() + 2);
        a.push(b' ');
        a.extend_from_slice(line.as_bytes());
        a.push(b' ');

        // The replacements above can only remove `.`, `,` and `-` (or add `"`, `&`, `<`, `>`),
        // so `present` still tells whether the substitutions below can match.
        if present & DOT_OR_COMMA != 0 {
            // `([^0-9])([\.,])` -> `\1 \2 `, then `([\.,])([^0-9])` -> ` \1 \2`.
            substitute(a, b, 1, |from, j| {
                !from[j - 1].is_ascii_digit() && is_dot_or_comma(from[j])
            });
            substitute(b, a, 0, |from, j| {
                is_dot_or_comma(from[j]) && !from[j + 1].is_ascii_digit()
            });
        }
        if present & DASH != 0 {
            // `([0-9])(-)` -> `\1 \2 `.
            substitute(a, b, 1, |from, j| {
                from[j - 1].is_ascii_digit() && from[j] == b'-'
            });
            std::mem::swap(a, b);
        }
    }
}

const LT: u8 = 1;
const NEWLINE: u8 = 2;
const AMP: u8 = 4;
const DOT_OR_COMMA: u8 = 8;
const DASH: u8 = 16;

/// For each byte, the rules of [`Scratch::v13a`] it can trigger.
static TRIGGERS: [u8; 256] = {
    let mut table = [0; 256];
    table[b'<' as usize] = LT;
    table[b'\n' as usize] = NEWLINE;
    table[b'&' as usize] = AMP;
    table[b'.' as usize] = DOT_OR_COMMA;
    table[b',' as usize] = DOT_OR_COMMA;
    table[b'-' as usize] = DASH;
    table
};

fn is_dot_or_comma(c: u8) -> bool {
    c == b'.' || c == b','
}

/// One `re.sub` of a two-character pattern whose replacement puts a space on both sides of the
/// pattern's character number `isolated` (0 or 1) and nowhere else, e.g. `\1 \2 ` with
/// `isolated = 1` and ` \1 \2` with `isolated = 0`. `matches(from, j)` says whether the pattern
/// matches with its isolated character at `from[j]`.
///
/// Python scans left to right and resumes after each match, so a character consumed by one
/// match cannot start the next one; `resume` tracks that. A match whose pattern starts at
/// `j - isolated` is taken when that position has not been consumed.
#[inline]
fn substitute(
    from: &[u8],
    to: &mut Vec<u8>,
    isolated: usize,
    matches: impl Fn(&[u8], usize) -> bool,
) {
    to.clear();
    to.reserve(from.len() + 16);
    let (mut copied, mut resume) = (0, 0);
    // `j` runs over every position where the isolated character of a two-character match
    // could be.
    for j in isolated..from.len() + isolated - 1 {
        if j - isolated >= resume && matches(from, j) {
            to.extend_from_slice(&from[copied..j]);
            to.extend_from_slice(&[b' ', from[j], b' ']);
            copied = j + 1;
            resume = j - isolated + 2;
        }
    }
    to.extend_from_slice(&from[copied..]);
}

/// How the splitter treats each byte.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Part of a token.
    Word,
    /// ASCII Python whitespace: ends a token.
    Space,
    /// A token on its own (13a's first pattern).
    Alone,
    /// A lead byte of a multi-byte character that may be Python whitespace.
    MaybeSpace,
}

const fn classes(alone: bool) -> [Class; 256] {
    let mut table = [Class::Word; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        table[c] = if matches!(b, b'\t'..=b'\r' | 0x1c..=0x20) {
            Class::Space
        } else if alone
            && matches!(b, b'{'..=b'~' | b'['..=b'`' | b'!'..=b'&' | b'('..=b'+' | b':'..=b'@' | b'/')
        {
            Class::Alone
        } else if matches!(b, 0xc2 | 0xe1 | 0xe2 | 0xe3) {
            Class::MaybeSpace
        } else {
            Class::Word
        };
        c += 1;
    }
    table
}

/// Python's `str.split()`, plus, for 13a, every byte of the set
/// `{`..`~`, `[`..backtick, `!`..`&`, `(`..`+`, `:`..`@`, `/` as a token of its own.
static CLASS_13A: [Class; 256] = classes(true);
/// Python's `str.split()`.
static CLASS_PLAIN: [Class; 256] = classes(false);

/// Calls `token` for every token of `bytes` (valid UTF-8) under `class`.
#[inline]
fn split(bytes: &[u8], class: &[Class; 256], mut token: impl FnMut(&[u8])) {
    let mut start = None;
    let mut i = 0;
    while i < bytes.len() {
        let step = match class[usize::from(bytes[i])] {
            Class::Word => 0,
            Class::Space => 1,
            Class::Alone => {
                if let Some(s) = start.take() {
                    token(&bytes[s..i]);
                }
                token(&bytes[i..=i]);
                i += 1;
                continue;
            }
            Class::MaybeSpace => whitespace_len(bytes, i),
        };
        if step == 0 {
            start.get_or_insert(i);
            i += 1;
        } else {
            if let Some(s) = start.take() {
                token(&bytes[s..i]);
            }
            i += step;
        }
    }
    if let Some(s) = start {
        token(&bytes[s..]);
    }
}

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

    /// The 13a tokenizer written the slow, obvious way: each substitution as a literal
    /// character-level `re.sub` (leftmost match, resume after it), then `' '.join(split())`.
    fn oracle_13a(line: &str) -> String {
        fn sub(
            s: &[char],
            width: usize,
            m: impl Fn(&[char]) -> bool,
            r: impl Fn(&[char]) -> String,
        ) -> Vec<char> {
            let mut out = String::new();
            let mut i = 0;
            while i < s.len() {
                if i + width <= s.len() && m(&s[i..i + width]) {
                    out.push_str(&r(&s[i..i + width]));
                    i += width;
                } else {
                    out.push(s[i]);
                    i += 1;
                }
            }
            out.chars().collect()
        }
        let digit = |c: char| c.is_ascii_digit();
        let dc = |c: char| c == '.' || c == ',';
        let set1 =
            |c: char| matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/');
        let mut line = line
            .replace("<skipped>", "")
            .replace("-\n", "")
            .replace('\n', " ");
        if line.contains('&') {
            line = line
                .replace("&quot;", "\"")
                .replace("&amp;", "&")
                .replace("&lt;", "<")
                .replace("&gt;", ">");
        }
        let s: Vec<char> = format!(" {line} ").chars().collect();
        let s = sub(&s, 1, |w| set1(w[0]), |w| format!(" {} ", w[0]));
        let s = sub(
            &s,
            2,
            |w| !digit(w[0]) && dc(w[1]),
            |w| format!("{} {} ", w[0], w[1]),
        );
        let s = sub(
            &s,
            2,
            |w| dc(w[0]) && !digit(w[1]),
            |w| format!(" {} {}", w[0], w[1]),
        );
        let s = sub(
            &s,
            2,
            |w| digit(w[0]) && w[1] == '-',
            |w| format!("{} {} ", w[0], w[1]),
        );
        let s: String = s.into_iter().collect();
        s.split(crate::is_python_whitespace)
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn oracle_agrees_with_sacrebleu_outputs() {
        assert_eq!(oracle_13a("1.,2"), "1 . , 2");
        assert_eq!(oracle_13a("&amp;lt; &amp;quot; &quot;"), "< & quot ; \"");
    }

    /// Every string of up to 4 characters over an alphabet that covers each rule, and random
    /// longer ones, tokenise as the literal substitutions do.
    #[test]
    fn fast_13a_matches_literal_substitutions() {
        let alphabet: Vec<char> = "a1.,-( \n&é\u{a0}\u{1f};".chars().collect();
        let check = |line: &str| assert_eq!(t13a(line), oracle_13a(line), "{line:?}");
        let k = alphabet.len();
        for len in 0..=4_u32 {
            for mut code in 0..k.pow(len) {
                let mut line = String::new();
                for _ in 0..len {
                    line.push(alphabet[code % k]);
                    code /= k;
                }
                check(&line);
            }
        }
        let pieces = [
            "a",
            "Ab",
            "1",
            "42",
            ".",
            ",",
            "-",
            "--",
            " ",
            "  ",
            "\n",
            "-\n",
            "&amp;",
            "&quot;",
            "&lt;",
            "&gt;",
            "&",
            ";",
            "<skipped>",
            "<",
            "(",
            ")",
            "'",
            "\"",
            "é",
            "\u{a0}",
            "\u{3000}",
            "\u{1c}",
            "–",
            "$",
            "%",
            "/",
            "\t",
            "\u{85}",
            "x.5",
            "5.x",
            "1,000.5",
        ];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..50_000 {
            let mut line = String::new();
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut r = state;
            for _ in 0..(r % 24) {
                r = r.rotate_left(7).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                line.push_str(pieces[(r >> 40) as usize % pieces.len()]);
            }
            check(&line);
        }
    }

    #[test]
    fn splitting_follows_python_whitespace() {
        let mut tokens = Vec::new();
        split(
            "\u{1f} a\u{a0}b\u{3000}\u{2009}cé  d\u{200b}e \u{85}".as_bytes(),
            &CLASS_PLAIN,
            |t| {
                tokens.push(String::from_utf8_lossy(t).into_owned());
            },
        );
        assert_eq!(tokens, ["a", "b", "cé", "d\u{200b}e"]);
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
