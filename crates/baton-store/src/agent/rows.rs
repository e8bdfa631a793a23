//! The agent rows: what an agent episode stores and what is read back of it.

use baton_types::agent::{AgentExit, AgentSwitch, Difficulty};
use baton_types::{Cost, EpisodeStatus, Phase, Verdict};
use serde::{Deserialize, Serialize};

use crate::request::EMPTY_LIST;
use crate::rows::{CallRow, NewCall, Outcome};

/// The family agent tasks carry in the `tasks` table.
pub const AGENT_FAMILY: &str = "agent";

/// An agent task as recorded with an experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTaskMeta {
    /// Task id.
    pub task_id: String,
    /// Where it was loaded from (a folder, a JSONL line, the bundled sample).
    pub origin: String,
    /// Difficulty bucket.
    pub difficulty: Difficulty,
    /// Task format (`baton`, `polyglot`, `swebench`).
    pub format: String,
    /// The sha256 of what the task is; a changed task refuses to resume.
    pub task_sha256: String,
}

/// The cell of an agent episode, as `episodes.cell_json` holds it (its serde form);
/// re-exported here beside the rows that carry it.
pub use baton_types::agent::AgentCell;

/// Identity of an agent episode: one per (task, cell, replicate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEpisodeInit {
    /// Task id.
    pub task_id: String,
    /// The cell.
    pub cell: AgentCell,
    /// A handoff's switch call s (`episodes.k`).
    pub k: Option<u32>,
    /// The anchor a forked handoff takes its prefix from (`episodes.forked_from`).
    pub forked_from: Option<i64>,
    /// Replicate index.
    pub replicate: u32,
    /// The seed of the (task, replicate).
    pub seed: u64,
    /// The task's sha256 (checked against the stored episode).
    pub task_sha256: String,
}

/// A model call of an agent episode, to store with its `calls` row in one transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewAgentCall {
    /// The call (`turn` is the call index, from 0).
    pub call: NewCall,
    /// The actions read from the reply, as JSON.
    pub actions_json: String,
    /// Why the reply had no runnable command, when it had none.
    pub format_error: Option<String>,
    /// The messages the call added to the conversation (the reply and any answer to a
    /// format error), each as the JSON text a request carries.
    pub added: Vec<String>,
}

/// A stored model call of an agent episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCallRow {
    /// The `calls` row (its request rebuilt and checked).
    pub call: CallRow,
    /// The actions read from the reply, as JSON.
    pub actions_json: String,
    /// Why the reply had no runnable command, when it had none.
    pub format_error: Option<String>,
    /// The conversation node after the call (its added messages are the last ones).
    pub context: i64,
}

impl AgentCallRow {
    /// The call index q (from 0).
    pub fn index(&self) -> u32 {
        self.call.call.turn
    }
}

/// A command that ran, to store once it ran and the tree was snapshotted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAgentStep {
    /// The episode.
    pub episode_id: i64,
    /// The call whose reply asked for it.
    pub call_index: u32,
    /// Its position among that reply's actions.
    pub action_index: u32,
    /// The command.
    pub command: String,
    /// The tool call it came from, under the tool-call protocol.
    pub tool_call_id: Option<String>,
    /// How it ended, as JSON (`baton_env::ExitStatus`).
    pub status_json: String,
    /// The shell-style return code (none after a timeout).
    pub return_code: Option<i32>,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// Bytes of output it produced (before truncation).
    pub output_bytes: u64,
    /// The observation message as JSON, unless it submitted.
    pub observation: Option<String>,
    /// The submission, when it submitted.
    pub submission: Option<String>,
    /// The snapshot of the working tree after it.
    pub snapshot: Option<String>,
    /// New bytes the episode's snapshots had added to the snapshot store once this one
    /// was taken (the running count its cap is checked against); none in a step stored
    /// before schema 13.
    pub snapshot_bytes: Option<u64>,
}

/// A stored command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentStepRow {
    /// The step as written.
    pub step: NewAgentStep,
    /// The conversation node after it.
    pub context: i64,
    /// When it was stored (UTC, ISO 8601).
    pub created_at: String,
}

/// How an agent episode ended (beside the episode's own outcome and verdict).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEnd {
    /// How the run ended.
    pub exit: AgentExit,
    /// Model calls made.
    pub calls: u32,
    /// What went wrong, for `error`.
    pub error: Option<String>,
}

/// A verdict reached after an agent episode ended (`baton swebench eval` judging a
/// stored patch): the status, verdict and reason replace the stored ones; the
/// submission, the costs and how the episode ended are kept as they are.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentVerdict {
    /// The episode (it must have ended: an incomplete one is refused).
    pub episode_id: i64,
    /// `scored` with a verdict, or `unscored` with the reason.
    pub status: EpisodeStatus,
    /// The verdict, when there is one.
    pub verdict: Option<Verdict>,
    /// Why there is no verdict.
    pub reason: Option<String>,
}

/// An unusable billed attempt of an agent episode: its call and its cost (or why none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentAttempt {
    /// The call index it was an attempt of.
    pub call_index: u32,
    /// The phase of that call (`handoff` for a compaction summary's attempts).
    pub phase: Phase,
    /// Its cost, or why it has none.
    pub cost: std::result::Result<Cost, String>,
}

/// Everything stored of one agent episode, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProgress {
    /// Episode id.
    pub episode_id: i64,
    /// Its status.
    pub status: EpisodeStatus,
    /// Its calls, by index.
    pub calls: Vec<AgentCallRow>,
    /// Its commands, by (call, action).
    pub steps: Vec<AgentStepRow>,
    /// Its unusable billed attempts.
    pub unusable: Vec<AgentAttempt>,
    /// How it ended, once it did.
    pub end: Option<AgentEnd>,
    /// A handoff's switch, once its prefix is settled.
    pub switch: Option<AgentSwitchRow>,
    /// A compaction's handoff call (the summary, or `handover`'s document), once made.
    pub handoff_call: Option<CallRow>,
    /// A `handover` handoff's document lint at the switch, once stored.
    pub handover_lint: Option<HandoverLintRow>,
}

/// A `handover` handoff's document as linted at the switch (`agent_handover_lints`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoverLintRow {
    /// The episode.
    pub episode_id: i64,
    /// The commit of the working tree at the switch (the document's `true_at_sha`).
    pub commit_sha: String,
    /// The tree after that commit, where the suffix starts.
    pub snapshot: Option<String>,
    /// The rubric (`baton`, `handover-0.4`).
    pub rubric: String,
    /// The structure score, 0–100.
    pub score: u32,
    /// Whether the header is valid.
    pub valid: bool,
    /// The verification's verdict (`verified`, `failed`, `stale-or-unproven`, …).
    pub verdict: String,
    /// Each claim's verdict, in the document's order.
    pub claims: Vec<HandoverClaimRow>,
}

/// One claim of a linted Handover document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoverClaimRow {
    /// The claim's text.
    pub label: String,
    /// Its check.
    pub command: String,
    /// Its verdict (`held-and-holds`, `never-held`, …).
    pub class: String,
}

/// A handoff episode's switch, to store once its prefix is settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAgentSwitch {
    /// The episode.
    pub episode_id: i64,
    /// The switch call s, the task's bucket, and whether the prefix reached call s
    /// (else the prefix's run is the episode's).
    pub switch: AgentSwitch,
    /// The conversation node before the switch.
    pub prefix_context: Option<i64>,
    /// The conversation the suffix model starts from, as JSON messages (fired only).
    pub messages: Option<Vec<String>>,
    /// The working tree at the switch.
    pub snapshot: Option<String>,
    /// The texts the interface used: (sha256, version, JSON).
    pub texts: Option<(String, String, String)>,
}

impl NewAgentSwitch {
    /// The switch of a handoff whose prefix ended before call `s`: not fired, nothing
    /// carried over.
    pub fn unfired(episode_id: i64, s: u32, bucket: Difficulty) -> Self {
        NewAgentSwitch {
            episode_id,
            switch: AgentSwitch {
                s,
                bucket,
                fired: false,
            },
            prefix_context: None,
            messages: None,
            snapshot: None,
            texts: None,
        }
    }
}

/// A stored switch (`agent_switches`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSwitchRow {
    /// The switch call s, the task's bucket (a name no baton writes fails to read, named
    /// as `agent_switches.bucket`) and whether it fired.
    pub switch: AgentSwitch,
    /// The conversation node before the switch (for `traj_drop`, the removed
    /// trajectory's audit record).
    pub prefix_context: Option<i64>,
    /// The conversation node the suffix model starts from.
    pub context: Option<i64>,
    /// The working tree at the switch.
    pub snapshot: Option<String>,
    /// The sha256 of the texts used.
    pub texts_sha256: Option<String>,
}

/// A switch call s, per (pair, direction, bucket, p).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThresholdRow {
    /// The pair, `lc/hc`.
    pub pair: String,
    /// Which way the pair hands over (stored as `escalation` or `downshift`).
    pub direction: baton_types::Direction,
    /// The prefix model, whose termination steps it comes from.
    pub prefix_model: String,
    /// The difficulty bucket.
    pub bucket: Difficulty,
    /// The percentile.
    pub p: u32,
    /// The switch call.
    pub s: u32,
    /// The anchors it was computed from.
    pub n_anchors: u32,
}

impl AgentProgress {
    /// The conversation node after the last stored event (0 before the first call).
    pub fn context(&self) -> i64 {
        let last_call = self.calls.last();
        let last_step = self
            .steps
            .last()
            .filter(|s| Some(s.step.call_index) == last_call.map(AgentCallRow::index));
        match (last_step, last_call) {
            (Some(s), _) => s.context,
            (None, Some(c)) => c.context,
            (None, None) => EMPTY_LIST,
        }
    }

    /// The last snapshot stored (the tree after the last command that ran).
    pub fn last_snapshot(&self) -> Option<&str> {
        self.steps
            .iter()
            .rev()
            .find_map(|s| s.step.snapshot.as_deref())
    }

    /// What every stored answered attempt cost, or the first reason one has no cost.
    pub fn paid(&self) -> std::result::Result<Cost, String> {
        let mut total = Cost::ZERO;
        for c in &self.calls {
            match &c.call.call.unpriced {
                Some(why) => return Err(why.clone()),
                None => total += c.call.call.cost,
            }
        }
        for a in &self.unusable {
            total += a.cost.clone()?;
        }
        Ok(total)
    }
}

/// An agent episode as the report reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEpisodeRow {
    /// Episode id.
    pub id: i64,
    /// Task id.
    pub task_id: String,
    /// The task's difficulty bucket.
    pub difficulty: Difficulty,
    /// The first call's model (the prefix model of a handoff).
    pub model: String,
    /// The cell.
    pub cell: AgentCell,
    /// A handoff's switch call s.
    pub k: Option<u32>,
    /// The anchor a forked handoff takes its prefix from.
    pub forked_from: Option<i64>,
    /// A handoff's switch, once settled.
    pub switch: Option<AgentSwitchRow>,
    /// What the episode's own answered attempts cost per phase (prefix, handoff,
    /// suffix; unpriced ones count 0).
    pub phase_paid: [Cost; 3],
    /// A forked handoff's prefix cost: the anchor's calls `0..s` and their attempts; for
    /// one that did not fire, the anchor's whole run (what it takes as its outcome).
    pub forked_prefix: Cost,
    /// Replicate index.
    pub replicate: u32,
    /// Status, outcome, verdict and costs.
    pub outcome: Outcome,
    /// How it ended, once it did.
    pub end: Option<AgentEnd>,
    /// Calls stored (steps).
    pub calls: u32,
    /// Commands stored.
    pub commands: u32,
    /// What every answered attempt of the episode cost (unpriced ones left out).
    pub paid: Cost,
}
