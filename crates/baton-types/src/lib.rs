//! Shared domain types for baton.
//!
//! This crate holds the nouns every other crate talks about: a [`Task`] with its
//! [`Shard`]s and [`Family`], the chat [`Message`]s sent to a model, the experiment
//! [`Cell`]s (single-model anchors, handoffs and LiC's single-turn [`Baseline`]s) and the
//! [`Phase`] of a call, how answers are found ([`Extraction`]), normalized token [`Usage`], money as exact integer picodollars
//! ([`Cost`]) and what an experiment paid for ([`Spend`]), the [`Verdict`] an evaluator returns and an episode's
//! [`EpisodeStatus`]; for agents, the [`ToolCall`]s an assistant message makes and the
//! [`ToolSpec`] of a tool, and in [`agent`] the coding agent's exit status, difficulty,
//! command status, cell and switch; [`diff`], what changed between a stored experiment and the
//! one given now. It does no I/O but two rules every study shares: [`input`] reads a user's
//! file whole only when it is a regular file under its size bound, and [`folder_lock`] lets
//! one process at a time write an output folder. It
//! depends on serde (and serde_json, for a tool's argument schema) and thiserror.
//!
//! It is not the place for behaviour: loading lives in `baton-data`, model calls in
//! `baton-models`, scoring in `baton-eval`.
//!
//! ```
//! use baton_types::{Cell, Interface, SwitchPoint};
//! let cell = Cell::handoff("sim/lc", "sim/hc", SwitchPoint::Early, Interface::Raw);
//! assert_eq!(cell.label(), "handoff(sim/lc -> sim/hc, early, raw)");
//! assert_eq!(SwitchPoint::Middle.k(5), Some(2));
//! ```
#![deny(missing_docs)]

pub mod agent;
mod cell;
mod cost;
pub mod diff;
mod extraction;
pub mod folder_lock;
pub mod input;
mod kind;
mod message;
mod spend;
mod status;
mod task;
mod usage;
mod verdict;

pub use cell::{Baseline, Cell, Direction, Interface, Phase, SwitchPoint};
pub use cost::Cost;
pub use extraction::{Extraction, ExtractionStrategy, answer_description};
pub use kind::ExperimentKind;
pub use message::{Message, Role, ToolCall, ToolSpec};
pub use spend::Spend;
pub use status::EpisodeStatus;
pub use task::{Family, Shard, Task};
pub use usage::Usage;
pub use verdict::Verdict;
