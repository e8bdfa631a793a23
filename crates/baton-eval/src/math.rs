//! Math (GSM8K): LiC's `TaskMath.evaluator_function`, quirks included (the answer is read
//! by [`crate::extract::math`]).

use std::borrow::Cow;

use baton_py::{lower, strip};
use baton_types::{Family, Verdict};
use serde_json::Value;

use crate::{EvalError, Evaluator, Extracted, Rules};

/// The math evaluator (`lic` profile).
#[derive(Debug, Default, Clone, Copy)]
pub struct MathEvaluator;

// LiC reads the number with `re.findall(r"(-?[$0-9.,]{2,})|(-?[0-9]+)", s)[-1]` and
// normalizes with `re.sub` over `[",", "\$", "(?s).*#### ", "\.$"]`. Both are written out
// by hand below (the classes are ASCII, so bytes can be scanned): a compiled regex costs a
// search per pattern and a fresh string per substitution, several times what the whole
// verdict costs otherwise, and this runs once per answer. The unit tests check them against
// the regexes they replace.

/// `[$0-9.,]`
fn in_money_class(b: u8) -> bool {
    matches!(b, b'$' | b'0'..=b'9' | b'.' | b',')
}

/// The end of the match of `(-?[$0-9.,]{2,})|(-?[0-9]+)` starting at `i`, if one does.
fn number_at(b: &[u8], i: usize) -> Option<usize> {
    let j = if b[i] == b'-' { i + 1 } else { i };
    let run = |class: fn(u8) -> bool| b[j..].iter().take_while(|&&c| class(c)).count();
    let money = run(in_money_class);
    if money >= 2 {
        return Some(j + money);
    }
    let digits = run(|c| c.is_ascii_digit());
    (digits > 0).then_some(j + digits)
}

/// The last of `re.findall`'s non-overlapping matches of the number pattern, scanned left
/// to right as Python's `re` does.
fn last_number(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let (mut i, mut last) = (0, None);
    while i < b.len() {
        match number_at(b, i) {
            Some(end) => {
                last = Some((i, end));
                i = end;
            }
            None => i += 1,
        }
    }
    // A match starts and ends at ASCII bytes, so both ends are char boundaries.
    last.map(|(start, end)| &s[start..end])
}

/// The four substitutions in order: drop `,`, drop `$`, drop everything through the last
/// `"#### "` (a greedy `(?s).*`), drop one `.` at the very end (no input here ends in a
/// newline, where Python's `$` would also match). Borrowed when nothing is removed but the
/// final `.` (the common case), so a verdict allocates no copy of its number.
fn normalize(s: &str) -> Cow<'_, str> {
    let mut out: Cow<'_, str> = if s.bytes().any(|b| b == b',' || b == b'$') {
        Cow::Owned(s.chars().filter(|&c| c != ',' && c != '$').collect())
    } else {
        Cow::Borrowed(s)
    };
    // Looking for `#` first: a substring search is set up per call, and numbers have none.
    if out.contains('#')
        && let Some(at) = out.rfind("#### ")
    {
        out = match out {
            Cow::Borrowed(b) => Cow::Borrowed(&b[at + 5..]),
            Cow::Owned(mut o) => {
                o.drain(..at + 5);
                Cow::Owned(o)
            }
        };
    }
    if out.ends_with('.') {
        out = match out {
            Cow::Borrowed(b) => Cow::Borrowed(&b[..b.len() - 1]),
            Cow::Owned(mut o) => {
                o.pop();
                Cow::Owned(o)
            }
        };
    }
    out
}

/// Python's `s.lower()`, borrowed when `s` has no character it would change (every gold
/// answer is digits).
fn lower_cow(s: &str) -> Cow<'_, str> {
    if s.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(lower(s))
    }
}

/// Where `"####"` first occurs in `s`. A hand-written search: `str::find` and `str::split`
/// set up a two-way searcher for the pattern on every call, which cost a quarter of a
/// verdict's instructions on a gold solution of a few hundred bytes.
fn find_hashes(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i + 4 <= b.len() {
        let at = i + b[i..b.len() - 3].iter().position(|&c| c == b'#')?;
        if &b[at..at + 4] == b"####" {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

/// Python's `str.split("####")[1]`: the text between the first `"####"` and the next one
/// (or the end).
fn second_part(s: &str) -> Option<&str> {
    let rest = &s[find_hashes(s)? + 4..];
    Some(find_hashes(rest).map_or(rest, |end| &rest[..end]))
}

/// Python's `s.strip()`: ASCII whitespace is trimmed byte by byte, and when both ends are
/// then plain ASCII (every conformance answer; the gold has a space after `####`) that is
/// the result; [`strip`] decodes a character at each end to ask.
fn strip_fast(s: &str) -> &str {
    // Python's ASCII whitespace: `\t`..`\r` and `\x1c`..` `.
    let space = |b: &u8| matches!(b, b'\t'..=b'\r' | 0x1c..=b' ');
    let b = s.as_bytes();
    let start = b.iter().position(|c| !space(c)).unwrap_or(b.len());
    let end = b.iter().rposition(|c| !space(c)).map_or(start, |e| e + 1);
    // Both ends are ASCII bytes, so char boundaries.
    let t = &s[start..end];
    match t.as_bytes() {
        [] => t,
        [first, .., last] if first.is_ascii() && last.is_ascii() => t,
        [only] if only.is_ascii() => t,
        _ => strip(t),
    }
}

/// The sample's `answer`, found by comparing keys rather than by hashing: a sample has a
/// handful of keys, and its map hashes with a randomly seeded SipHash.
fn answer_of(sample: &Value) -> Option<&str> {
    sample
        .as_object()?
        .iter()
        .find(|(k, _)| k.as_str() == "answer")?
        .1
        .as_str()
}

/// LiC's math verdict on an extracted answer.
pub fn evaluate(extracted: &str, sample: &Value) -> Verdict {
    let Some(answer) = answer_of(sample) else {
        return Verdict::fail(None, "sample has no string \"answer\" (upstream raises)");
    };
    let Some(gold) = second_part(answer) else {
        return Verdict::fail(
            None,
            "gold answer has no \"####\" (upstream raises IndexError)",
        );
    };
    let gold = lower_cow(strip_fast(gold));
    let stripped = strip_fast(extracted);
    let Some(mut candidate) = last_number(stripped) else {
        let shown: String = stripped.chars().take(200).collect();
        let more = if shown.len() < stripped.len() {
            "…"
        } else {
            ""
        };
        return Verdict::fail(None, format!("no number found in {shown:?}{more}"));
    };
    if candidate.contains('$') && candidate.ends_with(".00") {
        // Python's rstrip(".00") strips characters, not a suffix: "$10.00" -> "$1".
        candidate = candidate.trim_end_matches(['.', '0']);
    }
    let (c, g) = (normalize(candidate), normalize(&gold));
    let correct = c == g;
    Verdict::new(if correct { 1.0 } else { 0.0 }, None).with_details(details(c, g))
}

/// The verdict's details, `{"candidate": …, "gold": …}` in that order, as the store and the
/// viewer show them.
///
/// Copied from a map built once rather than built key by key: `serde_json`'s map (kept in
/// insertion order) hashes every key it inserts with a randomly seeded SipHash, and the two
/// inserts were a fifth of a verdict's instructions; a copy takes the table as it is and
/// the values are set in place, in the map's order.
fn details(candidate: Cow<'_, str>, gold: Cow<'_, str>) -> Value {
    static TEMPLATE: std::sync::LazyLock<serde_json::Map<String, Value>> =
        std::sync::LazyLock::new(|| {
            let mut m = serde_json::Map::with_capacity(2);
            m.insert("candidate".into(), Value::Null);
            m.insert("gold".into(), Value::Null);
            m
        });
    let mut map = TEMPLATE.clone();
    let mut values = map.values_mut();
    if let (Some(c), Some(g)) = (values.next(), values.next()) {
        *c = Value::String(candidate.into_owned());
        *g = Value::String(gold.into_owned());
    }
    Value::Object(map)
}

impl Evaluator for MathEvaluator {
    fn family(&self) -> Family {
        Family::Math
    }

    /// baton's rules under both rule sets (LiC used an LLM): [`crate::extract::math`].
    fn extract(
        &self,
        response: &str,
        _sample: &Value,
        _rules: Rules,
    ) -> Result<Extracted, EvalError> {
        Ok(crate::extract::math::extract(response))
    }

    fn evaluate(&self, extracted: &str, sample: &Value) -> Result<Verdict, EvalError> {
        Ok(evaluate(extracted, sample))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(extracted: &str, gold: &str) -> f64 {
        evaluate(
            extracted,
            &serde_json::json!({ "answer": format!("work #### {gold}") }),
        )
        .score
    }

    #[test]
    fn lic_vectors_from_the_spec() {
        let cases = [
            ("The answer is $18.", "18", 1.0),
            ("$18.00", "18", 1.0),
            ("$10.00", "10", 0.0),
            ("$100.00", "100", 0.0),
            ("$1,000.00", "1000", 0.0),
            ("18.0", "18", 0.0),
            ("0.50", "0.5", 0.0),
            ("3.", "3", 1.0),
            ("12.", "12", 1.0),
            ("It costs $5,000", "5000", 1.0),
            ("2024", "2,024", 1.0),
            ("Answer: 3 hours", "3", 1.0),
            ("The total is 5 apples and 3 pears so 8", "8", 1.0),
            ("$30.00.", "30", 0.0),
            ("no number", "3", 0.0),
        ];
        for (extracted, gold, want) in cases {
            assert_eq!(score(extracted, gold), want, "{extracted:?} vs {gold:?}");
        }
    }

    /// The hand-written scanner and substitutions against the regexes LiC uses (Rust's
    /// `regex` agrees with Python's `re` on these ASCII patterns), on every string of up
    /// to five characters over an alphabet that exercises every branch.
    #[test]
    fn scanner_agrees_with_lics_regexes() {
        let number = regex::Regex::new(r"(-?[$0-9.,]{2,})|(-?[0-9]+)").unwrap();
        let subs = [",", r"\$", r"(?s).*#### ", r"\.$"].map(|p| regex::Regex::new(p).unwrap());
        let alphabet = ['-', '$', '1', '0', '.', ',', 'x', '#', ' ', 'é'];
        let mut strings = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = strings
                .iter()
                .filter(|s| s.chars().count() == strings.last().map_or(0, |l| l.chars().count()))
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            strings.extend(longer);
        }
        strings.push("#### 12.".into());
        strings.push("a #### b #### 3,4$.".into());
        assert!(strings.len() > 100_000);
        for s in &strings {
            let want = number.captures_iter(s).last().map(|c| {
                c.get(1)
                    .filter(|m| !m.as_str().is_empty())
                    .or_else(|| c.get(2))
                    .map_or("", |m| m.as_str())
            });
            assert_eq!(last_number(s), want, "{s:?}");
            let want = subs
                .iter()
                .fold(s.clone(), |acc, re| re.replace_all(&acc, "").into_owned());
            assert_eq!(normalize(s), want, "{s:?}");
            assert_eq!(lower_cow(s), lower(s), "{s:?}");
            assert_eq!(strip_fast(s), strip(s), "{s:?}");
            let mut parts = s.split("####");
            parts.next();
            assert_eq!(second_part(s), parts.next(), "{s:?}");
        }
    }

    /// The hand-written `split("####")[1]` and `strip()` against the library ones on strings
    /// of runs of `#` and whitespace of every kind at both ends.
    #[test]
    fn issue_37_gold_split_and_strip_agree() {
        let pieces = [
            "", "#", "##", "###", "####", "#####", "a", " ", "\u{1c}", "\u{a0}", "\n",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let s = format!("{a}{b}x{c}{a}");
                    let mut parts = s.split("####");
                    parts.next();
                    assert_eq!(second_part(&s), parts.next(), "{s:?}");
                    assert_eq!(strip_fast(&s), strip(&s), "{s:?}");
                }
            }
        }
        let sample = serde_json::json!({ "task": "math", "answer": "w #### 7", "x": 1 });
        assert_eq!(answer_of(&sample), Some("w #### 7"));
        assert_eq!(answer_of(&serde_json::json!({ "answer": 7 })), None);
        assert_eq!(answer_of(&serde_json::json!(["answer"])), None);
    }

    /// The details as stored: the same bytes as the map built key by key, in its order.
    #[test]
    fn issue_37_details_serialize_as_before() {
        for (extracted, answer) in [
            ("The answer is $18.", "x #### 18"),
            ("$1,000", "x #### 1,000"),
            ("-3", "x #### É3"),
        ] {
            let v = evaluate(extracted, &serde_json::json!({ "answer": answer }));
            let gold = normalize(&lower(strip(answer.split("####").nth(1).unwrap()))).into_owned();
            let candidate = normalize(last_number(extracted).unwrap()).into_owned();
            let mut want = serde_json::Map::new();
            want.insert("candidate".into(), Value::String(candidate));
            want.insert("gold".into(), Value::String(gold));
            let want = Verdict::new(v.score, None).with_details(Value::Object(want));
            assert_eq!(v, want);
            assert_eq!(
                serde_json::to_string(&v).unwrap(),
                serde_json::to_string(&want).unwrap()
            );
        }
        let v = evaluate(
            "It costs $5,000",
            &serde_json::json!({ "answer": "w #### 5000" }),
        );
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"score":1.0,"is_correct":null,"details":{"candidate":"5000","gold":"5000"}}"#
        );
    }

    #[test]
    fn missing_hashes_is_a_zero_with_a_reason() {
        let v = evaluate("18", &serde_json::json!({ "answer": "18" }));
        assert_eq!(v.score, 0.0);
        assert!(v.error.unwrap().contains("####"));
    }
}
