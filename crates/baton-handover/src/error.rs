//! The crate's error type.

use std::path::PathBuf;

/// What can go wrong reading documents and scenarios. Verification problems are not errors:
/// they are checks in the [`crate::verify::Verification`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file or folder could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A document is not a regular file (a FIFO, a device such as `/dev/zero`, a folder).
    #[error("{}: {what}, not a document file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// A document is larger than any handoff.
    #[error("{}: larger than {limit} bytes, not a handoff document", path.display())]
    TooLarge {
        /// The path.
        path: PathBuf,
        /// The limit.
        limit: u64,
    },
    /// A `traps.json` is not what the trap bench expects.
    #[error("{}: not a trap file: {message}", path.display())]
    Traps {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A trap's `guard_pattern` is not a regular expression this crate can run.
    #[error("{}: trap \"{trap}\": guard_pattern is not a valid regular expression", path.display())]
    Pattern {
        /// The file.
        path: PathBuf,
        /// The trap's id.
        trap: String,
        /// The parse error.
        #[source]
        source: Box<regex::Error>,
    },
    /// A folder holds no scenario.
    #[error("no scenarios in {} (a scenario is a folder with a traps.json)", path.display())]
    NoScenarios {
        /// The folder.
        path: PathBuf,
    },
    /// A file or folder could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A trap scenario's bundled description (`traps/<scenario>/scenario.toml`) is not what
    /// the trap tasks expect.
    #[error("trap scenario \"{scenario}\": {message}")]
    TrapScenario {
        /// The scenario.
        scenario: String,
        /// What is wrong, naming the key or file.
        message: String,
    },
    /// git failed while building a scenario's repository.
    #[error("trap scenario \"{scenario}\": `git {args}` failed in {}: {message}", dir.display())]
    Git {
        /// The scenario.
        scenario: String,
        /// The repository.
        dir: PathBuf,
        /// git's arguments.
        args: String,
        /// Its standard error, or why it did not start.
        message: String,
    },
    /// The handoff document at an agent study's switch could not be committed or linted.
    #[error("handoff at the switch: {message}")]
    Switch {
        /// What went wrong.
        message: String,
    },
    /// A trap-bench experiment or its results are not what the bench expects.
    #[error("trap bench: {message}")]
    TrapBench {
        /// What is wrong, naming the file and key.
        message: String,
    },
    /// Another run holds the trap bench's output folder.
    #[error(
        "trap bench: the output folder {} is in use by {holder} (lock {}); wait for that run to end or choose another --out",
        folder.display(),
        lock.display()
    )]
    Busy {
        /// The output folder.
        folder: std::path::PathBuf,
        /// Its lock file.
        lock: std::path::PathBuf,
        /// `process N`, or `another process` when the lock file does not say.
        holder: String,
    },
    /// The sandbox the trap probes run in could not start or be reset.
    #[error("trap probes of \"{scenario}\": the sandbox failed")]
    ProbeSandbox {
        /// The scenario.
        scenario: String,
        /// Why.
        #[source]
        source: baton_env::EnvError,
    },
}
