use serde::{Deserialize, Serialize};

/// What an evaluator says about one answer, normalized across families.
///
/// LiC's evaluators return different shapes (`score` only for math, database and
/// data2text; `is_correct` too for actions and code). `score` is on a 0..=1 scale
/// (BLEU / 100 for data2text); `is_correct` is `None` where LiC's evaluator returns
/// no such key. Where LiC raises, the verdict is a score of 0 with `error` set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Score in 0..=1.
    pub score: f64,
    /// The evaluator's own `is_correct`, where it returns one.
    pub is_correct: Option<bool>,
    /// Why the answer failed to score, when a reason is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Evaluator-specific details (BLEU counts, checker reasons, test results).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub details: serde_json::Value,
    /// The extraction rule that read the answer out of the response (`math.boxed`,
    /// `database.fence`, `actions.prose`, …); `None` when the answer was given already
    /// extracted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The response held no extractable answer: scored 0 like a wrong answer, but counted
    /// apart from one ("no answer").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_answer: bool,
}

impl Verdict {
    /// A verdict with a score and LiC's `is_correct`, no error.
    pub fn new(score: f64, is_correct: Option<bool>) -> Self {
        Verdict {
            score,
            is_correct,
            error: None,
            details: serde_json::Value::Null,
            rule: None,
            no_answer: false,
        }
    }

    /// A failing verdict with a reason (`is_correct` as the family reports it).
    pub fn fail(is_correct: Option<bool>, error: impl Into<String>) -> Self {
        Verdict {
            score: 0.0,
            is_correct,
            error: Some(error.into()),
            details: serde_json::Value::Null,
            rule: None,
            no_answer: false,
        }
    }

    /// Attach evaluator-specific details.
    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = details;
        self
    }
}
