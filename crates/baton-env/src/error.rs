//! The crate's one error type.

use std::path::PathBuf;

/// What can go wrong when starting, driving or snapshotting an environment.
///
/// A command that fails, times out or prints too much is *not* an error: it is an
/// [`ExecOutput`](crate::ExecOutput). Errors are failures of the machinery itself (a missing
/// executable, a sandbox that cannot start, an unreadable tree, a missing blob).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EnvError {
    /// An executable the backend needs is not installed.
    #[error("{program} not found ({hint})")]
    MissingProgram {
        /// The executable, as configured.
        program: String,
        /// How to install it.
        hint: String,
    },
    /// A process could not be started.
    #[error("cannot start {program}")]
    Spawn {
        /// The executable.
        program: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The backend's own command failed (bwrap setup, a docker subcommand).
    #[error("{backend} backend: {what} failed with {status}: {stderr}")]
    Backend {
        /// `bwrap`, `docker` or `local`.
        backend: &'static str,
        /// What was attempted (`docker run`, `sandbox setup`).
        what: String,
        /// The exit status.
        status: String,
        /// The tail of its error output.
        stderr: String,
    },
    /// A file or folder of a working tree could not be read or written.
    #[error("{path}: {what}")]
    Io {
        /// The path on the host.
        path: PathBuf,
        /// What was attempted.
        what: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The setup asks for something the backend cannot do.
    #[error("{backend} backend: {message}")]
    Unsupported {
        /// The backend.
        backend: &'static str,
        /// What is missing.
        message: String,
    },
    /// A path in a tree or a request escapes the working tree or is not a plain relative path.
    #[error("path {path:?} is not a relative path inside the working tree")]
    BadPath {
        /// The offending path.
        path: String,
    },
    /// A snapshot or blob is not in the blob store.
    #[error("blob {digest} is not in the snapshot store at {store}")]
    MissingBlob {
        /// The sha256 hex digest.
        digest: String,
        /// Where the store lives.
        store: PathBuf,
    },
    /// A stored snapshot manifest does not parse or does not match its digest.
    #[error("snapshot {id}: {message}")]
    BadSnapshot {
        /// The snapshot id.
        id: String,
        /// What is wrong.
        message: String,
    },
    /// The working tree is larger than the snapshot limit.
    #[error("working tree holds more than {limit} bytes; snapshot refused")]
    TreeTooLarge {
        /// The configured limit.
        limit: u64,
    },
    /// An episode's snapshots would store more new bytes than its cap allows.
    #[error(
        "the episode's snapshots reached their cap of {cap} bytes (limits.episode_snapshot_bytes); snapshot refused"
    )]
    SnapshotCap {
        /// The configured cap.
        cap: u64,
    },
    /// A tar stream from a container did not parse.
    #[error("{backend} backend: malformed tar stream from the container: {message}")]
    Tar {
        /// The backend.
        backend: &'static str,
        /// What was wrong.
        message: String,
    },
    /// The Docker client cannot reach a running engine ([`docker_preflight`](crate::docker_preflight)).
    #[error("docker is not usable: `{program} version` {what}; fix: {fix}")]
    DockerUnavailable {
        /// The client, as configured (`BATON_DOCKER` overrides it).
        program: String,
        /// What failed, with what the client said.
        what: String,
        /// What to do about it.
        fix: String,
    },
    /// The environment was used after `close`.
    #[error("environment is closed")]
    Closed,
}

impl EnvError {
    pub(crate) fn io(path: impl Into<PathBuf>, what: &'static str, source: std::io::Error) -> Self {
        EnvError::Io {
            path: path.into(),
            what,
            source,
        }
    }
}
