//! Answer extraction and LiC's five evaluators behind one [`Evaluator`] trait.
//!
//! The `lic` profile returns LiC's verdict, quirks included (see the workspace's
//! conformance tests). Each family's evaluator lives in its own place:
//! math here (small), actions in `baton-bfcl`, database in `baton-spider`, data2text on
//! `baton-bleu`, code in `baton-sandbox` (opened on first use); [`Evaluators`] gathers whichever are available
//! and says plainly which family is not scored.
//!
//! Answers are read out of responses by fixed rules ([`extract`]): [`Rules::Baton`] (the
//! default) reads them the way models write them, [`Rules::Lic`] as LiC's code does; every
//! verdict of a response names the rule that fired, and a response with nothing to read is
//! a verdict with `no_answer` set, apart from a wrong answer.
//!
//! An evaluator distinguishes two failures: a bad *answer* is a [`Verdict`] with score 0
//! and a reason; a broken *setup* (a missing database folder, a sandbox that cannot
//! start) is an [`EvalError`], which the runner records as `errored`, never as 0.
//!
//! Hostile model output (deep nesting, megabytes of text, giant integers, SQL bombs,
//! programs that hang, fork, allocate or fill the disk) always ends in a verdict: every
//! evaluator bounds its recursion, sizes and time, and [`Evaluators`] scores on a thread
//! of its own with a known stack ([`SCORING_STACK`]), so that nothing a model writes can
//! take the process down. `tests/it/hostile.rs` feeds every family such answers.
#![deny(missing_docs)]

pub mod code;
pub mod data2text;
pub mod extract;
pub mod families;
pub mod math;
mod registry;

pub use extract::{Extracted, Rules};
pub use registry::{EvalConfig, Evaluators, PROFILE, SCORING_STACK, Scored, spawn_scoring_thread};

use baton_types::{Family, Verdict};
use serde_json::Value;

/// A setup failure that is not a score.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The evaluator could not run.
    #[error("{family} evaluator: {message}")]
    Setup {
        /// The family.
        family: Family,
        /// What is wrong, naming paths and keys.
        message: String,
    },
    /// No evaluator for this family is available.
    #[error("no {0} evaluator is available in this build")]
    Unavailable(Family),
}

/// One family's LiC evaluator.
pub trait Evaluator: Send + Sync {
    /// The family it scores.
    fn family(&self) -> Family;

    /// The deterministic answer extraction applied to the final response, under `rules`
    /// (see [`extract`]).
    fn extract(&self, response: &str, sample: &Value, rules: Rules)
    -> Result<Extracted, EvalError>;

    /// The verdict on an extracted answer.
    fn evaluate(&self, extracted: &str, sample: &Value) -> Result<Verdict, EvalError>;
}
