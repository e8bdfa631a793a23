//! Agent episodes in the store: tasks, each model call with the actions read from it,
//! each command with its observation and working-tree snapshot, and how the episode
//! ended ([`schema`](crate::schema) documents the tables).
//!
//! The visible conversation is never copied: each call and each command records the
//! `message_lists` node of the conversation after it, built on the node before it, so an
//! observation is one `messages` row shared with every later request, and 150 steps add
//! about 150 list nodes. A resume reads the last node back ([`AgentProgress::context`])
//! with the commands of the last call that have no stored step; a handoff can fork at
//! call s from the last step before it (its context node and snapshot). A verdict reached
//! after an episode ended (`baton swebench eval`) replaces only the episode's verdict
//! columns ([`AgentVerdict`]).
//!
//! By concept: `rows` (what is written and read back), `command` (the writer's agent
//! commands and the [`Store`](crate::Store) methods that send them), `write` (how the
//! writer thread stores them) and `read` (reading episodes back, for a resume and for
//! [`Reader`](crate::Reader)).

mod command;
mod read;
mod rows;
mod write;

pub(crate) use command::{AgentAnswer, AgentCommand};
pub use rows::{
    AGENT_FAMILY, AgentAttempt, AgentCallRow, AgentCell, AgentEnd, AgentEpisodeInit,
    AgentEpisodeRow, AgentProgress, AgentStepRow, AgentSwitchRow, AgentTaskMeta, AgentVerdict,
    HandoverClaimRow, HandoverLintRow, NewAgentCall, NewAgentStep, NewAgentSwitch, ThresholdRow,
};
