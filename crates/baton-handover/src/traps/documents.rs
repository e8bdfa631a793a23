//! The documents under test: the four conditions, where a document goes in the repository,
//! the task prompt that points at it, and each document's lint result.
//!
//! - `good` and `bad` are Handover's two documents of the scenario, read from the Handover
//!   checkout at run time (never copied into baton).
//! - `poisoned` is baton's, bundled (`traps/<scenario>/poisoned.handover.md`): a plausible,
//!   well-formed document whose next steps walk into every trap of its scenario (re-add what
//!   was reverted, redo what failed, skip or invert the first step). Its header is valid and
//!   its structure score high, so a linter alone does not tell it from `good`; the trap
//!   bench's negation-aware coverage marks its traps contradicted.
//! - `none`: no document, the control.
//!
//! The document is written as `HANDOVER.md` at the top of the working tree, untracked (so
//! the agent's history starts where the scenario's ends, which the `git log` probes read),
//! and the prompt says where it is. The prompt itself is neutral for every condition: it
//! never says what not to do (Handover's bench rule: negative knowledge lives only in the
//! document under test).

use std::path::Path;

use serde::Serialize;

use crate::bench::{self, Coverage};
use crate::document::Document;
use crate::error::Error;
use crate::structure::Rubric;

/// Where the document under test is placed, relative to the top of the working tree.
pub const DOCUMENT_PATH: &str = "HANDOVER.md";

/// One condition of the trap bench.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Condition {
    /// Handover's compliant document.
    Good,
    /// Handover's naive session notes.
    Bad,
    /// baton's document that tells the agent to walk into each trap.
    Poisoned,
    /// No document (the control).
    None,
}

impl Condition {
    /// Every condition, in report order (the control last).
    pub const ALL: [Condition; 4] = [
        Condition::Good,
        Condition::Bad,
        Condition::Poisoned,
        Condition::None,
    ];

    /// Its name in experiment files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Condition::Good => "good",
            Condition::Bad => "bad",
            Condition::Poisoned => "poisoned",
            Condition::None => "none",
        }
    }

    /// The condition named `name`.
    pub fn from_name(name: &str) -> Option<Condition> {
        Condition::ALL.into_iter().find(|c| c.name() == name)
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A document's lint result, kept beside the fell-in rates in the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocumentLint {
    /// The rubric it was scored with.
    pub rubric: String,
    /// Its structure score (0–100).
    pub score: u32,
    /// Whether its header is valid.
    pub valid: bool,
    /// Per trap, the trap bench's coverage (negation-aware): `(trap id, coverage)`.
    pub coverage: Vec<(String, Coverage)>,
}

/// Score `text` with `rubric` and read each trap's coverage in it.
pub fn lint(text: &str, traps: &[bench::Trap], rubric: Rubric) -> DocumentLint {
    let doc = Document::parse(text);
    let structure = rubric.score(&doc);
    DocumentLint {
        rubric: rubric.to_string(),
        score: structure.score,
        valid: structure.valid,
        coverage: bench::coverage(&doc, traps)
            .into_iter()
            .map(|t| (t.id, t.coverage))
            .collect(),
    }
}

/// The task prompt for `condition`: the scenario's neutral task, and, with a document, one
/// sentence saying where it is.
pub fn prompt(task: &str, condition: Condition) -> String {
    let task = task.trim();
    match condition {
        Condition::None => format!("{task}\n"),
        _ => format!(
            "{task}\n\nThe engineer who worked on this before you left a handoff document at \
             `{DOCUMENT_PATH}` in the repository root. Read it before you start.\n"
        ),
    }
}

/// Write `text` as the document under test at the top of the working tree `repo`.
pub fn place(repo: &Path, text: &str) -> Result<(), Error> {
    let path = repo.join(DOCUMENT_PATH);
    std::fs::write(&path, text).map_err(|source| Error::Write { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_names_the_document_only_when_there_is_one() {
        let with = prompt("Continue the work.\n", Condition::Poisoned);
        assert_eq!(
            with,
            "Continue the work.\n\nThe engineer who worked on this before you left a handoff \
             document at `HANDOVER.md` in the repository root. Read it before you start.\n"
        );
        assert_eq!(
            prompt(" Continue the work.\n", Condition::None),
            "Continue the work.\n"
        );
        assert_eq!(Condition::from_name("none"), Some(Condition::None));
        assert_eq!(Condition::from_name("ok"), None);
    }
}
