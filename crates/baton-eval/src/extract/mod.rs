//! Reading the answer out of a final response, and which rule did it.
//!
//! LiC extracts deterministically for three families (code: `TaskCode.extract_answer`;
//! actions and data2text: the whole response) and with an LLM for math and database.
//! baton has two rule sets ([`Rules`]):
//!
//! * [`Rules::Baton`] (the default for runs) reads answers the way models write them: math
//!   from `\boxed{}`, `####`, an `Answer:` line or the concluding sentence ([`math`]); SQL
//!   without comments, the final query over alternatives and checks
//!   (`baton_spider::extract_sql`); actions calls from prose or fences ([`actions`]); code as
//!   the chosen function with the module-level constants, helpers and imports it needs, never
//!   a block of tests (`baton_sandbox::CodeGrader::extract_kept`); data2text as LiC.
//! * [`Rules::Lic`] is LiC's own deterministic extraction where LiC has one (actions, code,
//!   data2text) and baton's rules where LiC used an LLM (math, database). The conformance
//!   vectors of the `response` stage are checked under it, since they record what LiC's
//!   code does with a response (a call after "Sure! Here are the calls:" scores 0 there).
//!
//! Every extraction names the rule that fired ([`Extracted::rule`], e.g. `math.boxed`,
//! `database.fence`, `actions.prose`), and a response with nothing to extract is
//! [`Extracted::answer`] `None`: the runner stores and reports it as "no answer", apart from
//! a wrong answer.
//!
//! With `extraction = "lic"` the runner asks an LLM for math and database answers instead,
//! as LiC does; [`llm`] holds the prompt filling and the acceptance rule it applies.

pub mod actions;
pub mod llm;
pub mod math;

use serde::{Deserialize, Serialize};

/// Which extraction rules a run uses (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rules {
    /// Answers read the way models write them (the default).
    #[default]
    Baton,
    /// LiC's own deterministic extraction where it has one.
    Lic,
}

/// What an extraction took from a response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The answer handed to the evaluator; `None` when the response holds none.
    pub answer: Option<String>,
    /// The rule that fired (`<family>.<rule>`), or the one that looked last and found nothing.
    pub rule: &'static str,
}

impl Extracted {
    /// An answer found by `rule`.
    pub fn found(rule: &'static str, answer: impl Into<String>) -> Self {
        Extracted {
            answer: Some(answer.into()),
            rule,
        }
    }

    /// Nothing to extract; `rule` names the last rule tried.
    pub fn none(rule: &'static str) -> Self {
        Extracted { answer: None, rule }
    }

    /// An answer, or none when it is empty after trimming.
    pub fn unless_empty(rule: &'static str, answer: String, none_rule: &'static str) -> Self {
        if answer.trim().is_empty() {
            Extracted::none(none_rule)
        } else {
            Extracted::found(rule, answer)
        }
    }
}
