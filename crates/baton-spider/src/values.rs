//! DISTINCT removal and value plugging (`plug_value=True`).
//!
//! These are the test-suite evaluator's string manipulations, kept as they are:
//! `remove_distinct`, `reformat_query`, `replace_values` and `strip_query`, and
//! the enumeration of every way to put the gold query's literal values into the
//! prediction's value slots.
//!
//! Enumeration order: upstream iterates a Python `set` of gold values, whose
//! order depends on the per-process string hash seed, so which fillings fall
//! under the 100-candidate cap is random there. Here the gold values are taken
//! in first-seen order (string literals in query order, then float literals,
//! then integer literals, as `strip_query` collects them, duplicates dropped),
//! and fillings follow `itertools.product` order over that list: the first
//! slot varies slowest.

use std::sync::LazyLock;

use regex::Regex;

use crate::lexer::Kind;
use crate::statement::{ParseError, format_keywords_upper, parse_first};
use baton_py::{lower, split, strip};

/// The slot marker `strip_query` leaves where a value was.
const VALUE_SYMBOL: &str = "VALUERARE";
/// The slot marker after lower-casing, as `plugin` looks for it.
const SLOT: &str = "valuerare";

/// Python's `\s`, spelled out for the `regex` crate (which lacks U+001C..U+001F).
const PY_SPACE_CLASS: &str = r"[\t\n\x0B\x0C\r\x1C-\x1F \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]";

static TABLE_DOT_SPACE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"(T\p{{Nd}}+\.){PY_SPACE_CLASS}")).expect("valid regex"));
static FLOAT_NUM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[-+]?\p{Nd}*\.\p{Nd}+").expect("valid regex"));
static INT_NUM: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[^tT]\p{Nd}+").expect("valid regex"));
static TABLE_DOT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[Tt]\p{Nd}+\.").expect("valid regex"));

/// `remove_distinct`: drop every token of the first statement whose lower-case
/// text is `distinct`, keeping the rest (and its whitespace) as is. Statements
/// after the first are dropped.
pub(crate) fn remove_distinct(sql: &str) -> Result<String, ParseError> {
    let tokens = parse_first(sql)?;
    Ok(tokens
        .iter()
        .filter(|t| lower(&t.value) != "distinct")
        .map(|t| t.value.as_str())
        .collect())
}

/// `reformat_query`: strip, delete every `;` and tab, re-join the first
/// statement's tokens (except plain whitespace) with single spaces, and turn
/// `t1.*`..`T3.*` into `*`.
fn reformat_query(sql: &str) -> Result<String, ParseError> {
    let cleaned = strip(sql).replace([';', '\t'], "");
    let tokens = parse_first(&cleaned)?;
    let mut query = tokens
        .iter()
        .filter(|t| t.kind != Kind::Whitespace)
        .map(|t| t.value.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    for star in ["t1.*", "t2.*", "t3.*", "T1.*", "T2.*", "T3.*"] {
        query = query.replace(star, "*");
    }
    Ok(query)
}

/// A query with its literal values replaced by slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ValueSlots {
    /// Lower-cased tokens; `valuerare` marks a slot.
    pub(crate) tokens: Vec<String>,
    /// The values in the order `strip_query` collects them (duplicates kept).
    pub(crate) values: Vec<String>,
}

impl ValueSlots {
    /// Number of value slots.
    pub(crate) fn slot_count(&self) -> usize {
        self.tokens.iter().filter(|t| *t == SLOT).count()
    }

    /// The distinct values, first-seen order.
    pub(crate) fn distinct_values(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for value in &self.values {
            if !out.contains(value) {
                out.push(value.clone());
            }
        }
        out
    }
}

/// `strip_query` on an already formatted query.
fn strip_query(query: &str) -> Result<ValueSlots, ParseError> {
    let mut values = Vec::new();
    let strings: Vec<String> = parse_first(query)?
        .into_iter()
        .filter(|t| matches!(t.kind, Kind::StringSingle | Kind::StringSymbol))
        .map(|t| t.value)
        .collect();
    let mut query = query.to_owned();
    for value in strings {
        query = query.replace(strip(&value), VALUE_SYMBOL);
        values.push(value);
    }

    let float_nums: Vec<&str> = FLOAT_NUM.find_iter(&query).map(|m| m.as_str()).collect();
    let mut tokens: Vec<String> = Vec::new();
    for token in split(&query) {
        if float_nums.contains(&token) {
            values.push(token.to_owned());
            tokens.push(VALUE_SYMBOL.to_owned());
        } else {
            tokens.push(token.to_owned());
        }
    }

    let joined = tokens.join(" ");
    let int_nums: Vec<&str> = INT_NUM
        .find_iter(&joined)
        .map(|m| strip(m.as_str()))
        .collect();
    for token in &mut tokens {
        if int_nums.contains(&token.as_str()) {
            values.push(std::mem::replace(token, VALUE_SYMBOL.to_owned()));
        }
    }

    let mut keywords = Vec::with_capacity(tokens.len());
    for token in &tokens {
        if token.contains('.') && TABLE_DOT.is_match(token) {
            keywords.extend(split(&token.replace('.', " . ")).map(lower));
        } else {
            keywords.push(lower(token));
        }
    }
    Ok(ValueSlots {
        tokens: keywords,
        values,
    })
}

/// `extract_query_values`: `reformat_query`, `format(keyword_case='upper')`,
/// the `(T\d+\.)\s` fix-up, then `strip_query`.
pub(crate) fn extract_query_values(sql: &str) -> Result<ValueSlots, ParseError> {
    let reformatted = reformat_query(sql)?;
    let formatted = format_keywords_upper(&reformatted);
    let fixed = TABLE_DOT_SPACE.replace_all(&formatted, "${1}");
    strip_query(&fixed)
}

/// Every filling of `slots`' value slots with `values`, in `itertools.product`
/// order, lazily. With no slots there is exactly one filling; with slots and
/// no values there is none.
pub(crate) struct Fillings<'a> {
    tokens: &'a [String],
    slot_positions: Vec<usize>,
    values: &'a [String],
    odometer: Vec<usize>,
    done: bool,
}

impl<'a> Fillings<'a> {
    pub(crate) fn new(slots: &'a ValueSlots, values: &'a [String]) -> Self {
        let slot_positions: Vec<usize> = slots
            .tokens
            .iter()
            .enumerate()
            .filter(|(_, t)| *t == SLOT)
            .map(|(i, _)| i)
            .collect();
        let done = !slot_positions.is_empty() && values.is_empty();
        Fillings {
            tokens: &slots.tokens,
            odometer: vec![0; slot_positions.len()],
            slot_positions,
            values,
            done,
        }
    }
}

impl Iterator for Fillings<'_> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        if self.done {
            return None;
        }
        let mut filled: Vec<&str> = self.tokens.iter().map(String::as_str).collect();
        for (slot, &position) in self.slot_positions.iter().enumerate() {
            filled[position] = &self.values[self.odometer[slot]];
        }
        let query = filled.join(" ");
        // Advance the odometer; the last slot turns fastest.
        self.done = true;
        for digit in self.odometer.iter_mut().rev() {
            *digit += 1;
            if *digit < self.values.len() {
                self.done = false;
                break;
            }
            *digit = 0;
        }
        Some(query)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extract(sql: &str) -> (String, Vec<String>) {
        let slots = extract_query_values(sql).expect("parses");
        (slots.tokens.join(" "), slots.values)
    }

    #[test]
    fn spec_value_extraction_vectors() {
        assert_eq!(
            extract("SELECT name FROM singer WHERE country = 'France' AND age > 40"),
            (
                "select name from singer where country = valuerare and age > valuerare".into(),
                vec!["'France'".into(), "40".into()]
            )
        );
        assert_eq!(
            extract(
                "SELECT T1.name FROM singer AS T1 WHERE T1.name LIKE '%Jo%' AND T1.age BETWEEN 20 AND 30.5;"
            ),
            (
                "select t1 . name from singer as t1 where t1 . name like valuerare and t1 . age \
                 between valuerare and valuerare"
                    .into(),
                vec!["'%Jo%'".into(), "30.5".into(), "20".into()]
            )
        );
        assert_eq!(
            extract(
                "select count(*) from a where b in (1, 2, 3) and c != -5 and d<>'x y' order by e desc limit 1"
            ),
            (
                "select count ( * ) from a where b in ( valuerare , valuerare , valuerare ) and c != \
                 valuerare and d <> valuerare order by e desc limit valuerare"
                    .into(),
                vec![
                    "'x y'".into(),
                    "1".into(),
                    "2".into(),
                    "3".into(),
                    "-5".into(),
                    "1".into()
                ]
            )
        );
        assert_eq!(
            extract("SELECT name FROM course_1 WHERE year = 2010 AND t2 = \"It's\""),
            (
                "select name from course_1 where year = valuerare and t2 = valuerare".into(),
                vec!["\"It's\"".into(), "2010".into()]
            )
        );
    }

    #[test]
    fn value_quirks() {
        // `[^tT]\d+` makes `a12` a value but not `t12`; a string's text is
        // replaced everywhere it occurs.
        let (tokens, values) = extract("SELECT a12, t12 FROM x WHERE y = 'ab' OR z = 'ab'");
        assert_eq!(
            tokens,
            "select valuerare , t12 from x where y = valuerare or z = valuerare"
        );
        assert_eq!(values, ["'ab'", "'ab'", "a12"]);
        // `reformat_query` deletes every `;`, even inside literals.
        assert_eq!(extract("SELECT 'a;b'").1, ["'ab'"]);
        assert_eq!(reformat_query(";"), Err(ParseError::NoStatement));
        assert_eq!(
            remove_distinct("SELECT count(DISTINCT x) FROM t; DROP TABLE t").as_deref(),
            Ok("SELECT count( x) FROM t; ")
        );
    }

    #[test]
    fn fillings_follow_product_order() {
        let slots = extract_query_values("SELECT a FROM t WHERE b = 1 AND c = 2").unwrap();
        let values = vec!["'x'".to_owned(), "7".to_owned()];
        let all: Vec<String> = Fillings::new(&slots, &values).collect();
        assert_eq!(
            all,
            [
                "select a from t where b = 'x' and c = 'x'",
                "select a from t where b = 'x' and c = 7",
                "select a from t where b = 7 and c = 'x'",
                "select a from t where b = 7 and c = 7",
            ]
        );
        let none = extract_query_values("SELECT a FROM t").unwrap();
        assert_eq!(
            Fillings::new(&none, &[]).collect::<Vec<_>>(),
            ["select a from t"]
        );
        assert_eq!(Fillings::new(&slots, &[]).count(), 0);
    }
}
