//! Running handoff experiments.
//!
//! An [`ExperimentSpec`] (the TOML file) expands into *task groups*: one per (task,
//! replicate). A group runs every anchor `single(M)` episode of the pairs' models, then
//! every handoff cell. With forked prefixes (the default) a handoff episode's sender
//! turns 1..K are the first K turns of the matched `single(sender)` episode: paid once,
//! priced to the handoff cell at the sender's rates, and the comparison becomes paired.
//!
//! A run holds an exclusive lock on its results folder (`baton.lock`, with its pid), so
//! a second run on the same folder is refused at once. Each chat episode is stored with
//! its identity (`identity`: what decides what it sends and how it is scored), so an
//! experiment grows on its folder: a run reuses every stored episode whose identity is
//! unchanged, runs the new ones, and says before any call what changed and what it will
//! run ([`Changes`], from `growth`). Re-running episodes whose identity changed needs
//! [`RunOptions::allow_changed`]; a changed price card re-prices stored usage.
//!
//! Every completed call is committed to the store before the next one starts, so a run
//! that is killed at any point resumes where it stopped: stored turns are replayed from
//! the store, never requested again. An episode that cannot finish (retries exhausted,
//! the run stopped) is `incomplete`, never scored 0.
//!
//! Main types: [`ExperimentSpec`], [`Runner`], [`RunOptions`], [`RunSummary`],
//! [`Observer`]. What the run uses is injected through [`RunOptions`]: providers by
//! [`ProviderFactory`] (`sim` is built in), evaluators by [`EvaluatorFactory`]
//! (default [`LicEvaluators`]). [`report_input`] reads a finished store into
//! `baton-report`'s input, applying the runner's cost rules ([`prefix_cost`]).
//!
//! Modules by job: `setup` (dataset, schedules, templates, price card, models), `run`
//! (the public API, the group loop, the anchor and handoff episodes and the end they
//! share), `episode` (the turn loop: replay what is stored, call for the rest; the
//! user side is a trait, so a later environment can supply the next user message in
//! place of the schedule), `scoring`, `budget` (the spending cap), `dry_run` (each
//! episode's bound, summed over the plan), `plan`, `identity` (what an episode's identity
//! is made of), `growth` (a run on an existing folder: adopt, compare, re-price),
//! `changes` (what it says before any call), `interface`, `control` (observer and stop
//! signal), `report_input`, [`spec`], [`part`] (one of N parts: its tasks, its share of
//! the cap and of rate limits), `merge` (checking parts and merging their stores:
//! [`merge()`]; the agent study's barrier is `agent::barrier`).
//! Model defaults (temperature, output cap, concurrency) are `baton_models::defaults`.
//!
//! Agent experiments (`kind = "agent"`) have their own driver in [`agent`]: the same
//! store, lock, budget, stop signal and providers, with the agent loop of `baton-agent`
//! in place of the turn loop.
//!
//! Not here: HTTP providers (`baton-http`), metrics (`baton-report`), the CLI (`baton`).
#![deny(missing_docs)]

pub mod agent;
mod batch;
mod budget;
mod changes;
mod control;
mod dry_run;
mod episode;
pub mod experiment;
mod extraction;
mod growth;
mod identity;
mod interface;
mod ledger;
mod lock;
mod merge;
pub mod part;
mod plan;
mod report_input;
mod run;
mod schedule;
mod scoring;
mod setup;
pub mod spec;

pub use baton_models::ProviderFactory;
pub use changes::{Changes, KeyChange};
pub use control::{Observer, SilentObserver, StopSignal};
pub use dry_run::{CellEstimate, DryRun, EXTRACTION_ROW, dry_run};
pub use experiment::dialect::{AGENT_KEYS, CHAT_KEYS};
pub use experiment::{Experiment, ExperimentReport, Finished, Kernel, Note, Prepared, Study};
pub use extraction::is_failed_extraction;
pub use interface::{InterfaceTemplates, SUMMARY_PLACEHOLDER};
pub use lock::{LOCK_FILE, lock_path};
pub use merge::{Difference, MergeError, MergeSummary, merge};
pub use part::{Part, PartPhase};
pub use plan::{Plan, TaskGroup};
pub use report_input::{prefix_cost, report_input};
pub use run::{RunOptions, RunSummary, Runner};
pub use scoring::{EvaluatorFactory, LicEvaluators};
pub use spec::{ExperimentSpec, ModelSpec, PairSpec};

use std::path::PathBuf;

/// The file name of an experiment's store inside its output folder.
pub const STORE_FILE: &str = "results.sqlite";

/// Errors that stop a run (as opposed to an episode).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The experiment file is malformed.
    #[error("experiment {source_name}: {message}")]
    Spec {
        /// The file.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// A setting of the experiment file could not be honoured: its dataset, price card,
    /// templates or a model. The message carries the cause's; the cause itself is kept
    /// typed in `cause` for callers that match on it.
    #[error("experiment {source_name}: {key}: {cause}")]
    Setting {
        /// The experiment file.
        source_name: String,
        /// The key, with its value where that helps (`dataset = "tasks.json"`).
        key: String,
        /// Why it could not be honoured.
        cause: Box<RunError>,
    },
    /// What the store holds cannot be resumed from (a stored episode that does not
    /// replay); nothing was changed.
    #[error("{what} cannot be resumed: {message}")]
    Corrupt {
        /// What was read (`the stored episode of task "t1"`).
        what: String,
        /// What is wrong with it.
        message: String,
    },
    /// The price card (the experiment's `prices` override) could not be read.
    #[error(transparent)]
    Prices(baton_models::ModelError),
    /// The dataset or templates could not be loaded.
    #[error(transparent)]
    Data(#[from] baton_data::DataError),
    /// The dataset file is not there: LiC's file is downloaded, not shipped.
    #[error(
        "{0}; LiC's sharded instructions are downloaded, not shipped: datasets/README.md says where from and gives the file's sha256 (dataset = \"sample\" runs the bundled sample set)"
    )]
    MissingDataset(baton_data::DataError),
    /// A model could not be set up (no price, unknown provider, missing key). The
    /// message is the cause alone: the [`RunError::Setting`] around it names the key
    /// (`models.NAME`), so the model is named once.
    #[error("{message}")]
    Model {
        /// The model's name in the experiment.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] baton_store::StoreError),
    /// Another run holds the results folder.
    #[error("the results folder is in use: {} is locked by {holder}; wait for that run to end or use another --out folder", .lock.display())]
    Busy {
        /// The lock file.
        lock: PathBuf,
        /// Who holds it (`process <pid>`).
        holder: String,
    },
    /// The lock file could not be made.
    #[error("cannot lock {}: {message}", .path.display())]
    Lock {
        /// The lock file.
        path: PathBuf,
        /// The operating system's reason.
        message: String,
    },
    /// `--resume` was asked for, but there is nothing to resume.
    #[error("nothing to resume: {0} does not exist")]
    NothingToResume(PathBuf),
    /// A reply was paid for and stored, but its cost cannot be computed; the model
    /// made no further call.
    #[error(
        "{0}; the reply is stored and the episode incomplete: add the rate to a price card the experiment's `prices` key names and resume"
    )]
    Unpriced(String),
    /// Database tasks name `db_id`s with no `*.sqlite` file: checked before any call.
    #[error(
        "no Spider databases for {missing} in {}: install them (or set spider_dir), or run with --skip-invalid to leave those tasks out",
        .dir.display()
    )]
    MissingDatabases {
        /// The Spider test-suite folder that was searched.
        dir: PathBuf,
        /// The missing `db_id`s, each with its number of tasks.
        missing: String,
    },
    /// A report was asked for, but there is no store.
    #[error("no results at {}", .0.display())]
    NoResults(PathBuf),
    /// Docker or the SWE-bench harness, which the agent experiment needs, is not
    /// usable: checked before any call, nothing stored.
    #[error("{0}")]
    Preflight(String),
    /// A run on an existing folder would run again stored episodes whose identity
    /// changed (a model setting, a task's data, a template): refused before any call
    /// unless `--allow-changed` ([`RunOptions::allow_changed`]).
    #[error(
        "experiment {source_name}: {rerun} stored episode(s) would be run again because what they depend on changed; nothing was sent\n{changes}run with --allow-changed to run them again (the stored ones are kept, out of the report), or undo the change"
    )]
    Changed {
        /// The experiment file.
        source_name: String,
        /// What changed, as printed before a run ([`Changes`]).
        changes: String,
        /// Stored episodes that would be run again.
        rerun: usize,
    },
    /// A command-line option the experiment's study has no use for (`--phase` for a
    /// chat experiment, `--batch` for an agent one); refused before anything is read.
    #[error("{0}")]
    Flag(String),
    /// The experiment file could not be read.
    #[error("cannot read the experiment file {}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: baton_types::input::InputError,
    },
    /// An agent input could not be read: its dataset, a task's files, the agent
    /// templates or the handoff texts (`what` names which and where; the cause follows).
    #[error("{what}")]
    AgentInput {
        /// What was being read (`agent_templates = "t.yaml"`, `task "t1"`).
        what: String,
        /// Why it could not be.
        #[source]
        source: Box<baton_agent::AgentError>,
    },
    /// The sandbox failed outside any episode (removing a killed run's containers).
    #[error("{what}")]
    Environment {
        /// What was being done.
        what: String,
        /// Why it failed.
        #[source]
        source: Box<baton_env::EnvError>,
    },
    /// A file the run reads could not be read.
    #[error("cannot read {}", .path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The results folder holds an experiment of the other kind.
    #[error("{} holds {} experiment, not {} one{}", .store.display(), article(.stored), article(.given), .hint)]
    OtherKind {
        /// The store.
        store: PathBuf,
        /// The kind it holds.
        stored: baton_types::ExperimentKind,
        /// The kind wanted.
        given: baton_types::ExperimentKind,
        /// What to do (`; use another --out folder`).
        hint: &'static str,
    },
    /// A store's report could not be built from what it holds.
    #[error(transparent)]
    Report(#[from] baton_report::ReportError),
    /// An agent experiment changed on its folder in a way the run cannot take as
    /// growth (`agent::growth`): refused before any call, with what changed and why.
    #[error(
        "experiment {source_name}: the stored agent experiment cannot grow into this one; nothing was sent\n{changes}{}\nundo the change, or run it with another --out folder",
        .why.iter().map(|w| format!("  {w}")).collect::<Vec<_>>().join("\n")
    )]
    AgentChanged {
        /// The experiment file.
        source_name: String,
        /// What changed, as printed before a run ([`Changes`]).
        changes: String,
        /// Why each refused change cannot be run as growth.
        why: Vec<String>,
    },
    /// Something inside baton failed that no input explains (a runtime task was
    /// cancelled); the store keeps everything committed before it.
    #[error("internal error: {0}")]
    Internal(String),
    /// A results folder holds one part of an experiment and the run asks for another
    /// (or for the whole experiment).
    #[error("{}: this folder holds part {} of the experiment, and the run asks for {}; run that part's command or use another --out folder", .folder.display(), .stored.as_deref().unwrap_or("none"), .given.as_deref().map_or("the whole experiment".to_string(), |g| format!("part {g}")))]
    PartFolder {
        /// The results folder.
        folder: PathBuf,
        /// The part its store holds.
        stored: Option<String>,
        /// The part asked for (none: the whole experiment).
        given: Option<String>,
    },
    /// A part's `--phase handoffs` cannot use its thresholds file: it was computed
    /// for another experiment or part count, or from anchors that are not this part's.
    #[error("--thresholds {}: {message}", .file.display())]
    Thresholds {
        /// The thresholds file.
        file: PathBuf,
        /// What does not match.
        message: String,
    },
    /// A file the run writes beside its store could not be written.
    #[error("cannot write {}: {message}", .path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// The operating system's reason.
        message: String,
    },
}

/// "a chat" or "an agent".
fn article(kind: &baton_types::ExperimentKind) -> String {
    match kind {
        baton_types::ExperimentKind::Agent => "an agent".into(),
        _ => format!("a {}", kind.as_str()),
    }
}
