//! Math (GSM8K): LiC's `TaskMath.evaluator_function`, quirks included (the answer is read
//! by [`crate::extract::math`]).

use std::sync::LazyLock;

use baton_py::{lower, strip};
use baton_types::{Family, Verdict};
use regex::Regex;
use serde_json::Value;

use crate::{EvalError, Evaluator, Extracted, Rules};

/// The math evaluator (`lic` profile).
#[derive(Debug, Default, Clone, Copy)]
pub struct MathEvaluator;

static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(-?[$0-9.,]{2,})|(-?[0-9]+)").expect("valid regex"));
static NORMALIZE: LazyLock<[Regex; 4]> = LazyLock::new(|| {
    [",", r"\$", r"(?s).*#### ", r"\.$"].map(|p| Regex::new(p).expect("valid regex"))
});

fn normalize(s: &str) -> String {
    NORMALIZE.iter().fold(s.to_string(), |acc, re| {
        re.replace_all(&acc, "").into_owned()
    })
}

/// LiC's math verdict on an extracted answer.
pub fn evaluate(extracted: &str, sample: &Value) -> Verdict {
    let Some(answer) = sample.get("answer").and_then(Value::as_str) else {
        return Verdict::fail(None, "sample has no string \"answer\" (upstream raises)");
    };
    let mut parts = answer.split("####");
    parts.next();
    let Some(gold) = parts.next() else {
        return Verdict::fail(
            None,
            "gold answer has no \"####\" (upstream raises IndexError)",
        );
    };
    let gold = lower(strip(gold));
    let stripped = strip(extracted);
    let Some(last) = NUMBER.captures_iter(stripped).last() else {
        let shown: String = stripped.chars().take(200).collect();
        let more = if shown.len() < stripped.len() {
            "…"
        } else {
            ""
        };
        return Verdict::fail(None, format!("no number found in {shown:?}{more}"));
    };
    let mut candidate = last
        .get(1)
        .filter(|m| !m.as_str().is_empty())
        .or_else(|| last.get(2))
        .map_or("", |m| m.as_str())
        .to_string();
    if candidate.contains('$') && candidate.ends_with(".00") {
        // Python's rstrip(".00") strips characters, not a suffix: "$10.00" -> "$1".
        candidate = candidate.trim_end_matches(['.', '0']).to_string();
    }
    let (c, g) = (normalize(&candidate), normalize(&gold));
    let correct = c == g;
    Verdict::new(if correct { 1.0 } else { 0.0 }, None)
        .with_details(serde_json::json!({ "candidate": c, "gold": g }))
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

    #[test]
    fn missing_hashes_is_a_zero_with_a_reason() {
        let v = evaluate("18", &serde_json::json!({ "answer": "18" }));
        assert_eq!(v.score, 0.0);
        assert!(v.error.unwrap().contains("####"));
    }
}
