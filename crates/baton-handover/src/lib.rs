//! Handoff documents: parse, score, verify.
//!
//! Coding agents and people end a session with a handoff document that the next session
//! trusts: a YAML header (`handoff`, `iso_date`, `true_at_sha`, `shape`, `first_action`,
//! `verify_cmd`, `status`, …) and a markdown body with claims, negative knowledge and a next
//! action. This crate reads such documents the way Handover 0.4.1 defined them and checks them
//! without its holes:
//!
//! - **Parse** ([`Document`]): the header in two readings ([`header`]): Handover 0.4.1's flat
//!   line rules, which the `handover-0.4` rubric uses, and baton's, the same flat lines with
//!   trailing `# comments`, YAML quoting and block scalars, and never a YAML tag or alias (so
//!   `verify_cmd: ! grep -q x f` is the negated check it says); the body with `pulldown-cmark`
//!   and GFM tables, so `\|` and code spans in table cells read as GitHub renders them, and
//!   code blocks and quotes are masked.
//! - **Score** ([`Rubric`]): `handover-0.4` reproduces Handover 0.4.1's STRUCTURE score and
//!   subscores exactly (tested on all eight of its fixtures); `baton` (the default) gives the
//!   points to claims that carry checks, flags vacuous checks, ties `first_action` to the
//!   body's marked first step, charges for invalid optional keys and rejects impossible dates.
//!   Scoring is a pure function of the text.
//! - **Verify** ([`mod@verify`]): against the document's git repository, the anchor, its ancestry
//!   and drift as data, commit ids named in the text (read-only: `.git` stays byte-identical);
//!   `verify_cmd`; and each claim's check run at the anchor and now, each in the sandbox
//!   ([`sandbox`], on `baton-env`'s bubblewrap backend: read-only system, no network, an
//!   allow-list environment, limits, one deadline that staging counts against) on a staged
//!   tree ([`stage`]: tracked files, a private `.git`, ignored folders bound read-only, files
//!   that look like secrets left out), so a claim is held-and-holds, held-now-broken,
//!   never-held, fails-now, cannot-tell or not-run. Verification fails closed: a check that did
//!   not run (destructive, past the claim cap, out of time) fails the document unless
//!   unverified checks are allowed. Destructive checks are found by parsing the command
//!   ([`check::destructive`]); reports are redacted of credential-shaped strings and of every
//!   secret value found, in any common encoding ([`redact`]); documents are read bounded,
//!   regular files only, in UTF-8 or UTF-16 ([`input`]).
//! - **Write** ([`mod@write`]): a compliant document scaffolded from live git state, every claim
//!   checked before it is written.
//! - **CI** ([`changed`], [`agents`]): the documents a commit range touched, and checks of
//!   `AGENTS.md`/`CLAUDE.md` (the commands and paths they name exist; their tests pass).
//! - **Bench** ([`mod@bench`]): Handover's trap bench with negation-aware coverage.
//! - **Traps as tasks** ([`traps`]): the trap bench's scenarios as agent tasks: their
//!   repositories (two written here as replayed git histories), the documents under test
//!   (`good`, `bad`, `poisoned`, `none`) placed as `HANDOVER.md`, the `detect_fell_in` probes
//!   run in the sandbox on the tree an agent left, and the report's statistics; the bench
//!   run by agents (`baton-agent`'s loop, the simulated agent's document policy offline or a
//!   provider the caller's factories build), its resumable results and its report.
//! - **At an agent study's switch** ([`switch`]): the request for a Handover document, the
//!   commit that anchors it, and its lint with claims checked at that commit.
//!
//! Not here: printing (the `baton` binary's `handoff` command); no model call except
//! through the trap bench's agent loop, with the providers its caller hands it.
//!
//! Written by hand, because no crate does it: the top-level operator scan that decides
//! whether a check needs a shell and whether its exit code can fail ([`check`]; words are
//! split by `shlex`), the clause reading behind negation-aware trap coverage ([`mod@bench`]),
//! and the SARIF log ([`report`], a dozen `serde_json` fields). Processes are ended by process
//! group with `rustix`; dates are `jiff`'s.
//!
//! How it was checked: `--rubric handover-0.4` is compared with what handover-lint 0.4.1
//! printed for each of its eight fixtures (score, validity, subscores, cues, prose findings
//! and their lines) and with 0.4.1's verdicts on 17 one-line header variants of its example;
//! verification is tested in throwaway git repositories (branches, uncommitted changes,
//! fabricated anchors, timeouts, ignored dependencies at the anchor) and with hostile claims
//! in the real sandbox (deleting folders, writing outside the tree and into HOME, changing git
//! config, tags and branches, fork bombs, printing secrets), checking the host is unchanged.
//!
//! ```
//! use baton_handover::{Document, Rubric};
//!
//! let doc = Document::parse(
//!     "---\nhandoff: demo   # comments are comments\niso_date: 2026-02-30\n---\n# Notes\n",
//! );
//! assert_eq!(doc.field("handoff"), Some("demo"));
//! let structure = Rubric::Baton.score(&doc);
//! assert!(!structure.valid);
//! assert!(structure.findings.iter().any(|f| f.rule == "header-date"));
//! ```
#![deny(missing_docs)]

pub mod agents;
pub mod bench;
pub mod body;
pub mod changed;
pub mod check;
pub mod claims;
pub mod cues;
pub mod document;
mod error;
pub mod exec;
pub mod git;
pub mod header;
pub mod input;
pub mod redact;
pub mod report;
pub mod rubric;
pub mod sandbox;
pub mod stage;
pub mod structure;
pub mod switch;
pub mod traps;
pub mod verify;
pub mod write;

use std::path::Path;

pub use document::Document;
pub use error::Error;
pub use structure::{Finding, Rubric, Severity, Structure, Subscores};
pub use verify::{Verdict, Verification};

/// A document with its score and verification.
#[derive(Debug, Clone)]
pub struct Linted {
    /// The parsed document.
    pub document: Document,
    /// Its structure score.
    pub structure: Structure,
    /// Its verification ([`Verification::none`] when none was asked for).
    pub verification: Verification,
}

/// When a document fails.
#[derive(Debug, Clone, Copy, Default)]
pub struct Policy {
    /// The lowest passing score.
    pub min: Option<u32>,
    /// Whether warnings (findings or checks) fail the document too.
    pub strict: bool,
}

/// Score `text` (read from `path`) and, with `options`, verify it.
pub fn lint(text: &str, path: &Path, rubric: Rubric, options: Option<&verify::Options>) -> Linted {
    let document = Document::parse(text);
    let structure = rubric.score(&document);
    let verification = match options {
        Some(o) => verify::verify(&document, &structure, path, o),
        None => Verification::none(&structure),
    };
    Linted {
        document,
        structure,
        verification,
    }
}

impl Linted {
    /// Why the document fails under `policy`, or an empty list when it passes.
    pub fn failures(&self, policy: Policy) -> Vec<String> {
        let mut why = Vec::new();
        if !self.structure.valid {
            why.push("the header has errors".to_string());
        }
        if let Some(min) = policy.min
            && self.structure.score < min
        {
            why.push(format!(
                "score {} is below --min {min}",
                self.structure.score
            ));
        }
        if self.verification.verdict == Verdict::Failed {
            why.push("verification failed".into());
        }
        if policy.strict {
            let warned = self
                .structure
                .findings
                .iter()
                .any(|f| f.severity == Severity::Warning)
                || self
                    .verification
                    .checks
                    .iter()
                    .any(|c| c.status == verify::Status::Warn);
            if warned {
                why.push("--strict and there are warnings".into());
            }
        }
        why
    }
}
