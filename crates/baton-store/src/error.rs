//! The store's error type.

use std::path::PathBuf;

/// Errors from the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite failed.
    #[error("store {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// The file was written by a newer baton.
    #[error(
        "store {path} has schema version {found}, newer than this baton understands ({supported}); upgrade baton"
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// The newest version this build reads and writes.
        supported: i64,
    },
    /// An existing file holds no baton store (zero bytes, not SQLite, or SQLite without
    /// a baton schema version). It is refused, never started afresh, and left as it is.
    #[error(
        "{path} is not a baton store ({why}); it was left unchanged: move it away or use another results folder"
    )]
    NotAStore {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// The file belongs to a different experiment spec.
    #[error(
        "store {path} was created for a different experiment (spec sha256 {stored}, now {current}); use another --out folder or restore the original experiment file"
    )]
    SpecMismatch {
        /// The database file.
        path: PathBuf,
        /// The stored spec hash.
        stored: String,
        /// The current spec hash.
        current: String,
    },
    /// A task's schedule changed between runs: resuming would mix two protocols.
    #[error(
        "task {task_id:?}: schedule sha256 changed from {stored} to {current}; the stored episodes were run with other prompts"
    )]
    ScheduleMismatch {
        /// The task.
        task_id: String,
        /// The stored hash.
        stored: String,
        /// The current hash.
        current: String,
    },
    /// A call to record carries a request hash that is not the sha256 of its request.
    #[error(
        "episode {episode_id} turn {turn} ({phase}): request_sha256 {given} is not the sha256 of the request ({actual}); not stored"
    )]
    RequestHash {
        /// The episode.
        episode_id: i64,
        /// The turn.
        turn: u32,
        /// The phase.
        phase: &'static str,
        /// The hash given.
        given: String,
        /// The request's hash.
        actual: String,
    },
    /// Inputs a stored result depends on changed since it was stored.
    #[error(
        "store {path}: inputs changed since the stored results were made: {}; restore them, use another --out folder, or pass --allow-changed to continue deliberately (the change is recorded)",
        .changed.join(", ")
    )]
    InputsChanged {
        /// The database file.
        path: PathBuf,
        /// What changed, each as `name (stored sha256 → current sha256)`.
        changed: Vec<String>,
    },
    /// A paid reply could not be committed: the disk is full, failing or read-only. The
    /// store takes no further work (so the run stops before its next call); the reply
    /// was kept in the spool file beside the store, which the next open imports.
    #[error(
        "store {path}: cannot write the reply of {call} ({cause}); {kept}; free space and resume"
    )]
    WriteFailed {
        /// The database file.
        path: PathBuf,
        /// The call: `episode <id> turn <t> (<phase>)`.
        call: String,
        /// The SQLite error.
        cause: String,
        /// Where the reply was kept, or why it could not be.
        kept: String,
        /// Whether it was kept in the spool (so the next open imports it).
        spooled: bool,
    },
    /// The spool could not be grown to hold the reply of a call about to be sent (the
    /// disk is full): the call is not sent.
    #[error(
        "spool {path}: no room to hold {bytes} more bytes for the reply of a call about to be sent ({cause}); the call was not sent: free space and resume"
    )]
    SpoolFull {
        /// The spool file.
        path: PathBuf,
        /// The room the call needed.
        bytes: u64,
        /// The I/O error.
        cause: String,
    },
    /// An earlier write failed on the disk: the store refuses further work, so that
    /// nothing more is paid for that it might not keep.
    #[error("store {path} stopped after a failed write ({why}); free space and resume")]
    Stopped {
        /// The database file.
        path: PathBuf,
        /// The failure that stopped it.
        why: String,
    },
    /// A stored reply's text no longer matches the sha256 stored with it: it was
    /// changed on disk, and replaying it would send a corrupted conversation on.
    #[error(
        "store {path}: the stored reply of episode {episode_id} turn {turn} ({phase}) is corrupted: its text has sha256 {actual}, but {stored} was stored; the resume stops rather than send it on"
    )]
    ReplyChecksum {
        /// The database file.
        path: PathBuf,
        /// The episode.
        episode_id: i64,
        /// The turn (an agent call's index).
        turn: u32,
        /// The phase.
        phase: &'static str,
        /// The stored checksum (`none` when there is none).
        stored: String,
        /// The checksum of the stored text.
        actual: String,
    },
    /// The writer thread is gone (it failed earlier).
    #[error("store writer stopped")]
    WriterGone,
    /// A stored value could not be decoded, or a stored request no longer matches its
    /// sha256.
    #[error("store {path}: bad value in {what}: {message}")]
    Decode {
        /// The database file.
        path: PathBuf,
        /// Where: the table, row id and column.
        what: String,
        /// What is wrong.
        message: String,
    },
}

/// The store's result type.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
