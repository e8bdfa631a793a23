//! Agent tasks and their scoring: what a coding agent is asked to do, the repository it
//! works in, the hidden tests that decide whether it succeeded, and the bundled sample.
//!
//! It also holds the agent loop ([`agent`]: one bash tool or fenced commands, templates
//! comparable with mini-SWE-agent v2, limits and exit statuses) and the simulated agent
//! that runs it offline ([`SimAgent`]); the sandbox it drives is `baton-env`, a crate of
//! its own because it is a security boundary. Tasks and the loop share one crate because
//! the loop is the only consumer of tasks and both speak the same nouns (instruction,
//! repository, working directory, submission). Storing runs is `baton-runner`'s and
//! `baton-store`'s job: the loop reports every call and command to an [`AgentSink`].
//!
//! # Task sources
//!
//! * baton's own format, a folder per task ([`own`] documents it); the bundled
//!   `datasets/agent-sample/` ([`sample_tasks`]) uses it and is compiled in.
//! * The Aider polyglot benchmark / Exercism layout ([`polyglot`]), with difficulty from a
//!   `difficulty.json` beside the exercises.
//! * SWE-bench Verified JSONL ([`swebench`]), run in each instance's Docker image and
//!   scored by the pinned official harness ([`SweBenchHarness`]).
//!
//! [`load_dataset`] picks the right one from what the user names.
//!
//! # Scoring
//!
//! [`LocalScorer`] scores baton and polyglot tasks: the submitted unified diff is applied
//! to a pristine copy in a fresh sandbox (`git apply`, then `patch --fuzz=5`), the test
//! files are restored, and baton's unittest runner reports each `fail_to_pass` /
//! `pass_to_pass` id; resolved means all of them pass. A patch that does not apply, a test
//! run that times out, and a run that ends without results are [`Verdict`]s, never errors
//! or crashes. [`check_tasks`] runs that path on each task's unchanged repository (must
//! fail) and its reference solution (must pass).
//!
//! Main types: [`AgentTask`], [`Difficulty`], [`Repository`], [`HiddenTests`],
//! [`Reference`], [`LocalScorer`], [`Verdict`], [`SweBenchHarness`], [`AgentError`].
//!
//! Written by hand: the unified diff of a reference solution uses `similar`; the unittest
//! runner is 60 lines of Python kept in `src/runner.py`; the SWE-bench harness is the
//! official one, only invoked and read here.
//!
//! ```no_run
//! use baton_agent::{LocalScorer, load_dataset};
//! let dataset = load_dataset("agent-sample")?;
//! let task = &dataset.tasks[0];
//! let scorer = LocalScorer::default();
//! let reference = task.reference_patch()?.unwrap_or_default();
//! assert!(scorer.score(task, &reference)?.resolved);
//! # Ok::<(), baton_agent::AgentError>(())
//! ```
#![deny(missing_docs)]

pub mod agent;
mod check;
mod dataset;
mod diff;
mod error;
pub mod own;
pub mod polyglot;
mod sample;
mod score;
pub mod swebench;
mod task;

pub use agent::handoff::{
    DEFAULT_HANDOFF_TEXTS_VERSION, HandoffTexts, handoff_call_messages,
    rewrite as rewrite_trajectory, sender_writes, summarises, summary_messages,
};
pub use agent::protocol::{Action, BASH_TOOL, FormatError, Protocol, bash_tool, parse_actions};
pub use agent::run::{
    ActionEvent, AgentConfig, AgentExit, AgentLoop, AgentOutcome, AgentSink, AgentState, CallEvent,
    DEFAULT_COST_LIMIT_USD, DEFAULT_STEP_LIMIT, GIT_BASELINE, MAX_FORMAT_ERRORS, NoSink,
    model_side_terminal, submission_of,
};
pub use agent::sim::{
    DocumentReader, DocumentTask, HANDOVER_REQUEST_CUE, SimAgent, SimAgentSettings, SimTrap,
    Stance, document_choices,
};
pub use agent::templates::{
    AgentTemplates, DEFAULT_FENCE, DEFAULT_SUBMIT_MARKER, DEFAULT_TEMPLATES_VERSION,
};
pub use agent::workspace::start_task_env;
pub use check::{CheckTasksReport, TaskCheck, check_tasks};
pub use dataset::{AgentDataset, SkippedTask, load_dataset, load_dataset_lenient};
pub use diff::unified_diff;
pub use error::AgentError;
pub use sample::{SAMPLE_NAME, sample_tasks};
pub use score::{Expectation, LocalScorer, PatchOutcome, TestOutcome, TestResult, Verdict};
pub use swebench::{
    HARNESS_KEYS, HarnessStatus, HarnessVerdict, InstanceImage, Prediction, SWEBENCH_VERSION,
    SweBenchHarness, SweBenchSummary, TestLists, summarize_swebench,
};
pub use task::{AgentTask, Difficulty, HiddenTests, Reference, Repository, TaskFormat, TreeFile};
