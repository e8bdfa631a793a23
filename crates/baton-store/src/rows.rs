//! What is written to the store and what is read back.
//!
//! Each read type nests its write type ([`CallRow`] holds the [`NewCall`] it was
//! written from, [`EpisodeRow`] the [`EpisodeInit`] and [`Outcome`]), plus the
//! columns the store fills in itself (ids, timestamps), so reading never drops a
//! column that was written.

use baton_types::{Cost, EpisodeStatus, Family, Phase, Usage, Verdict};
use serde::{Deserialize, Serialize};

/// Run metadata stored once per experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentMeta {
    /// Experiment name.
    pub name: String,
    /// The experiment file's text, as run.
    pub spec_toml: String,
    /// Its sha256 (of the normalized spec): what identifies the experiment's store.
    pub spec_sha256: String,
    /// The price card's sha256.
    pub price_card_sha256: String,
    /// Evaluator profile (`lic`).
    pub eval_profile: String,
    /// Evaluator implementation version.
    pub eval_version: String,
    /// baton's version.
    pub baton_version: String,
    /// The git revision baton was built from, when known.
    pub git_revision: Option<String>,
    /// Whether any model is simulated.
    pub simulated: bool,
    /// Which study it is.
    pub kind: baton_types::ExperimentKind,
}

/// The stored experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentRow {
    /// What was recorded when the experiment was first run.
    pub meta: ExperimentMeta,
    /// When that was (UTC, ISO 8601).
    pub created_at: String,
}

/// A task as recorded with an experiment; written and read back alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskMeta {
    /// Task id.
    pub task_id: String,
    /// Its family.
    pub family: Family,
    /// Number of user turns (shards).
    pub n_turns: u32,
    /// The sha256 of its turn schedule; a changed schedule refuses to resume.
    pub schedule_sha256: String,
    /// The sample as JSON.
    pub sample_json: String,
}

/// Identity and set-up of an episode, used to find or create it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeInit {
    /// Task id.
    pub task_id: String,
    /// The cell's stable label.
    pub cell_key: String,
    /// The cell as JSON.
    pub cell_json: String,
    /// Replicate index.
    pub replicate: u32,
    /// The sampling seed of the (task, replicate).
    pub seed: u64,
    /// Sender turns, for handoff cells.
    pub k: Option<u32>,
    /// The anchor episode whose first K calls are this episode's prefix.
    pub forked_from: Option<i64>,
    /// The schedule hash.
    pub schedule_sha256: String,
}

/// How an episode ended, to store. A new episode reads back as
/// [`Outcome::unfinished`] until its outcome is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Final status.
    pub status: EpisodeStatus,
    /// The last reply, when every turn was answered.
    pub final_response: Option<String>,
    /// The extracted answer.
    pub extracted: Option<String>,
    /// The verdict, when scored.
    pub verdict: Option<Verdict>,
    /// Why it is incomplete, errored or unscored.
    pub reason: Option<String>,
    /// Attributed cost (prefix at the sender's rates, even when forked).
    pub cost_attributed: Cost,
    /// Money this episode actually spent.
    pub cost_paid: Cost,
}

impl Outcome {
    /// The outcome of an episode that has not ended: incomplete, nothing spent.
    pub fn unfinished() -> Self {
        Outcome {
            status: EpisodeStatus::Incomplete,
            final_response: None,
            extracted: None,
            verdict: None,
            reason: None,
            cost_attributed: Cost::ZERO,
            cost_paid: Cost::ZERO,
        }
    }
}

/// A stored episode.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeRow {
    /// Row id.
    pub id: i64,
    /// The task's family (from the task row).
    pub family: Family,
    /// The task's number of turns (from the task row).
    pub n_turns: u32,
    /// How the episode was set up.
    pub init: EpisodeInit,
    /// How it ended, so far.
    pub outcome: Outcome,
    /// When it last changed (UTC, ISO 8601).
    pub updated_at: String,
}

impl EpisodeRow {
    /// Its status.
    pub fn status(&self) -> EpisodeStatus {
        self.outcome.status
    }

    /// Its score (0..=1), when scored.
    pub fn score(&self) -> Option<f64> {
        self.outcome.verdict.as_ref().map(|v| v.score)
    }
}

/// A completed call to store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewCall {
    /// The episode.
    pub episode_id: i64,
    /// The user turn it answers (1-based); a handoff call carries the turn after which
    /// it was made.
    pub turn: u32,
    /// Prefix, handoff or suffix.
    pub phase: Phase,
    /// The model's name in the experiment.
    pub model: String,
    /// The model id the provider reported.
    pub model_served: String,
    /// The exact request (messages and settings) as JSON. The store keeps its messages
    /// once each and gives these bytes back exactly (see [`crate::schema`]).
    pub request_json: String,
    /// The sha256 (lowercase hex) of `request_json`; checked when written and when read.
    pub request_sha256: String,
    /// The reply's visible text.
    pub response_text: String,
    /// The raw response body, when there is one.
    pub raw_response: Option<String>,
    /// Normalized usage.
    pub usage: Usage,
    /// Exact cost (0 when `unpriced` is set).
    pub cost: Cost,
    /// Why the cost could not be computed, when it could not: the reply was paid for
    /// and is kept, but its cost is unknown.
    pub unpriced: Option<String>,
    /// Latency of the successful attempt, in milliseconds.
    pub latency_ms: u64,
    /// Attempts made.
    pub attempts: u32,
    /// The finish reason.
    pub finish_reason: Option<String>,
    /// The provider batch the reply came from (`None` for a direct call).
    pub batch_id: Option<String>,
    /// The batch item (`custom_id`) it answered (schema version 10; `None` for a
    /// direct call and for batched calls stored before).
    pub batch_item: Option<String>,
    /// A batched reply's cost at the card's direct rates (`None` for a direct call, or
    /// when it cannot be computed).
    pub cost_direct: Option<Cost>,
}

/// A stored call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallRow {
    /// Row id.
    pub id: i64,
    /// The call as it was written.
    pub call: NewCall,
    /// When it was stored (UTC, ISO 8601).
    pub created_at: String,
}

/// An answered (billed) attempt whose reply could not be used, to store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewAttempt {
    /// The episode.
    pub episode_id: i64,
    /// The turn of the call it was an attempt of.
    pub turn: u32,
    /// The phase of that call.
    pub phase: Phase,
    /// The model's name in the experiment.
    pub model: String,
    /// Its number among the call's attempts in the run that made it (1-based).
    pub attempt: u32,
    /// Why the reply could not be used.
    pub reason: String,
    /// The body as received (capped), when there is one.
    pub raw_response: Option<String>,
    /// The usage the reply stated, when it could be read.
    pub usage: Option<Usage>,
    /// Its cost, or why it has none (a missing rate). With no `usage` (it could not be
    /// read), a cost is an estimate: the call's upper bound, which the run counted
    /// against its cap (`reason` says so).
    pub cost: Result<Cost, String>,
    /// Latency in milliseconds.
    pub latency_ms: u64,
    /// The provider batch the reply came from (`None` for a direct call).
    pub batch_id: Option<String>,
    /// The batch item (`custom_id`) it answered (schema version 10; `None` for a
    /// direct call and for batched calls stored before).
    pub batch_item: Option<String>,
    /// A batched reply's cost at the card's direct rates (`None` for a direct call, or
    /// when it cannot be computed).
    pub cost_direct: Option<Cost>,
}
