//! The experiment store: one SQLite file per experiment.
//!
//! Every completed model call, and every answered attempt that could not be used (it
//! is billed all the same), is committed the moment it completes, by a single writer
//! thread that owns the connection (WAL mode; a rollback journal on a network file
//! system such as NFS, Lustre or GPFS, where WAL is unsupported: `filesystem`), so a crash loses at most the call in
//! flight and never a paid result. Resuming reads back what is stored and repeats
//! nothing. The schema is documented and versioned in [`schema`]; older files are
//! migrated forward when opened, and a file from a newer baton is refused.
//!
//! A request is stored by reference: each chat message once (content-addressed by
//! sha256), the message list as a node of a prefix tree shared by every call that
//! continues the same conversation, and the call's own parameters. The file grows
//! linearly with the transcript, not with its square, and the exact request bytes
//! come back on read, checked against their sha256 ([`schema`] has the details).
//!
//! Main types: [`Store`] (the async handle used while running), [`Reader`] (read-only
//! access for reports), and the rows: what is written ([`ExperimentMeta`],
//! [`TaskMeta`], [`EpisodeInit`], [`Outcome`], [`NewCall`], [`NewAttempt`]) and what is read back
//! ([`ExperimentRow`], [`EpisodeRow`], [`CallRow`]), each read type holding its write
//! type whole so that no column is dropped on the way back. Money is
//! [`baton_types::Cost`] throughout.
//!
//! Agent experiments use the same tables with turn = model call index, plus their own
//! for actions, commands, observations (by reference), snapshots and exits: the `agent`
//! module ([`AgentProgress`], [`NewAgentCall`], [`NewAgentStep`], [`AgentEpisodeRow`]).
//!
//! Batched models record each provider batch they submit ([`NewBatch`], [`BatchRow`])
//! before polling it, and their calls and attempts carry its id.
//!
//! A write the disk refuses (full, failing, read-only) loses no paid reply: the writer
//! retries the commit, else keeps the reply in a spool file reserved beside the store,
//! and stops taking work ([`StoreError::WriteFailed`], [`StoreError::Stopped`],
//! [`Store::failure`]); the next [`Store::open`] imports it. Each stored reply carries
//! the sha256 of its text, checked whenever it is read back
//! ([`StoreError::ReplyChecksum`]). An existing file that is not a baton store is
//! refused and left unchanged ([`StoreError::NotAStore`]), never started afresh.
//!
//! Modules by job: `writer` (the thread and its commands), `filesystem` (the journal
//! mode a store's folder allows), `parts` (a part's label, merging parts' stores), `agent` (its rows, commands,
//! writes and reads), `batch`, `reader`, `rows`, `request` (splitting and rebuilding
//! requests), `spool` (keeping replies through a failed write), `connect` (pragmas,
//! version check, migrations), [`schema`] (the DDL).
//!
//! Not here: deciding what to run (`baton-runner`) or computing metrics (`baton-report`).
#![deny(missing_docs)]

mod agent;
mod batch;
mod connect;
mod error;
mod filesystem;
mod identity;
mod parts;
mod reader;
mod request;
mod rows;
pub mod schema;
mod spool;
mod writer;

pub use agent::{
    AGENT_FAMILY, AgentAttempt, AgentCallRow, AgentCell, AgentEnd, AgentEpisodeInit,
    AgentEpisodeRow, AgentProgress, AgentStepRow, AgentSwitchRow, AgentTaskMeta, AgentVerdict,
    HandoverClaimRow, HandoverLintRow, NewAgentCall, NewAgentStep, NewAgentSwitch, ThresholdRow,
};
pub use batch::{BatchRow, NewBatch, NewSubmission, SubmissionRow};
pub use error::{Result, StoreError};
pub use filesystem::{network_filesystem, network_filesystem_of};
pub use identity::{
    AttemptCost, CallCost, EpisodeCosts, OpenEpisode, RETIRED_CHANGED, RETIRED_REMOVED, Repricing,
    StoredIdentity, StoredUsage,
};
pub use parts::{MergeCounts, merge_into, merged_parts, record_part, spool_pending, stored_part};
pub use reader::{CallFigures, Reader};
pub use rows::{
    CallRow, EpisodeInit, EpisodeRow, ExperimentMeta, ExperimentRow, NewAttempt, NewCall, Outcome,
    TaskMeta,
};
pub use spool::SpoolClaim;
pub use writer::Store;
