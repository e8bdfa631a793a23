//! The crate's one error type.

use std::path::PathBuf;

/// What can go wrong loading, materializing or scoring agent tasks.
///
/// A patch that does not apply, a test that fails or a test run that never reports are
/// *verdicts*, not errors ([`Verdict`](crate::Verdict)). Errors are bad input (named by
/// file, task and key) and failures of the machinery.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A dataset file or folder is malformed.
    #[error("{}", invalid_message(.path, .task.as_deref(), .key.as_deref(), .message))]
    Invalid {
        /// The file (or folder) at fault.
        path: String,
        /// The task or instance id, when known.
        task: Option<String>,
        /// The key at fault, when there is one.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// An input file is not a regular file, or is past its size bound.
    #[error(transparent)]
    Input(#[from] baton_types::input::InputError),
    /// A file could not be read or written.
    #[error("{path}: {what}")]
    Io {
        /// The path.
        path: PathBuf,
        /// What was attempted.
        what: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The environment failed (not the task's code: the sandbox itself).
    #[error("task {task_id:?}: environment: {source}")]
    Env {
        /// The task being scored.
        task_id: String,
        /// The cause.
        #[source]
        source: baton_env::EnvError,
    },
    /// A reply (used or not) was paid for but its cost cannot be computed: the run
    /// stops after the reply was handed to the sink, since the cost limit can no longer
    /// be checked.
    #[error(
        "task {task_id:?}, call {call}: the cost of a billed reply cannot be computed: {reason}"
    )]
    Unpriced {
        /// The task.
        task_id: String,
        /// The call's index.
        call: u32,
        /// Why (the missing rate).
        reason: String,
    },
    /// The sink asked the run to stop before the next call (a stop request, a spending
    /// cap); what ran so far is stored and the run can continue from it.
    #[error("task {task_id:?}: stopped before call {call}: {reason}")]
    Stopped {
        /// The task.
        task_id: String,
        /// The call that was not made.
        call: u32,
        /// Why.
        reason: String,
    },
    /// A model call failed in a way a later run may not repeat (retries exhausted on a
    /// connection, a rate limit or a server error, a stop, a missing key): the run stops
    /// with what is stored, and a resume makes the call again.
    #[error("task {task_id:?}, call {call}: {message}")]
    Model {
        /// The task.
        task_id: String,
        /// The call's index.
        call: u32,
        /// The model's error.
        message: String,
    },
    /// The sink could not record an event (the store failed).
    #[error("task {task_id:?}: cannot record the run: {message}")]
    Sink {
        /// The task.
        task_id: String,
        /// What failed.
        message: String,
    },
    /// A SWE-bench task was given to the local scorer.
    #[error(
        "task {task_id:?} is a SWE-bench instance: it is scored by the official harness (SweBenchHarness), not locally"
    )]
    NeedsHarness {
        /// The instance id.
        task_id: String,
    },
    /// The installed `swebench` is not the pinned version.
    #[error(
        "the SWE-bench harness at {python} is swebench {found}, baton needs {wanted}: `{python} -m pip install swebench=={wanted}`"
    )]
    HarnessVersion {
        /// The Python that was asked.
        python: String,
        /// What it has (or `not installed`).
        found: String,
        /// The pinned version.
        wanted: String,
    },
    /// The harness ran but did not produce what baton reads.
    #[error("SWE-bench harness: {message} (log: {})", .log.display())]
    Harness {
        /// What went wrong.
        message: String,
        /// The harness's combined output.
        log: PathBuf,
    },
}

fn invalid_message(path: &str, task: Option<&str>, key: Option<&str>, message: &str) -> String {
    let mut s = path.to_string();
    if let Some(t) = task {
        s.push_str(&format!(": task {t:?}"));
    }
    if let Some(k) = key {
        s.push_str(&format!(": key {k:?}"));
    }
    s.push_str(": ");
    s.push_str(message);
    s
}

impl AgentError {
    pub(crate) fn io(path: impl Into<PathBuf>, what: &'static str, source: std::io::Error) -> Self {
        AgentError::Io {
            path: path.into(),
            what,
            source,
        }
    }

    pub(crate) fn invalid(
        path: impl std::fmt::Display,
        task: Option<&str>,
        key: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        AgentError::Invalid {
            path: path.to_string(),
            task: task.map(str::to_string),
            key: key.map(str::to_string),
            message: message.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_names_file_task_and_key() {
        let e = AgentError::invalid(
            "tasks/a/task.toml",
            Some("a"),
            Some("difficulty"),
            "expected easy, medium or hard",
        );
        assert_eq!(
            e.to_string(),
            "tasks/a/task.toml: task \"a\": key \"difficulty\": expected easy, medium or hard"
        );
    }
}
