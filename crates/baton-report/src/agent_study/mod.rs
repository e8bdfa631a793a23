//! The agent handoff study's report, in the paper's shapes: the switch calls, every
//! (pair, direction, p, interface) cell with its fired counts, the Table-1 aggregate
//! (equal weight over switch points), Early (p ≤ 15) and Late (p ≥ 25) windows, per
//! difficulty bucket, the restart controls, the step-cost decomposition relative to
//! `compact_pre`, and paired task-level bootstrap intervals for interface differences.
//!
//! Rules:
//! Every number goes through the metrics core the chat study's tables use
//! (`metrics.rs`, `bootstrap.rs`, `percentile.rs`): a row is a plan row, per-task sums of
//! matched units or the equal-weight mean of other rows, and one resampling loop gives
//! every interval.
//!
//! - A cell's *matched fired subset* is its (task, replicate) units where the handoff
//!   fired, the handoff episode finished with a verdict, and both anchors of the pair did
//!   too. Pass rate, mean cost, QRec and CSRet are over that subset, with the anchors'
//!   means on the same units: `QRec = 100·(R_m − R_LC)/(R_HC − R_LC)`,
//!   `CSRet = 100·(C_HC − C_m)/(C_HC − C_LC)`, kept outside [0, 100]. The study's tables
//!   are one family's (its coding tasks), so QRec is omitted when `|R_HC − R_LC| < 5`
//!   points, as in the chat study's per-family tables; a missing value says why
//!   (`qrec_omitted_reason`, `csret_omitted_reason`).
//! - Aggregates (Table 1, windows, buckets) average the six means (R and C of the cell
//!   and both anchors) with equal weight over the switch points that have matched units,
//!   then apply the formulas.
//! - Restart controls, composed from matched runs (no new calls) by the core's restart
//!   unit: `abort+hc_fresh` costs the prefix through s (the escalation handoff's own
//!   prefix cost) plus the HC-only run; `lc_full+hc_full` the LC-only run plus the HC-only
//!   run; both score as HC-only.
//! - The audit: every finished episode's prefix + handoff + suffix cost equals its total
//!   (attributed) cost, exactly in picodollars. [`build_study`] fails when it does not:
//!   no table is printed over an unreconciled store.
//! - The bootstrap draws tasks with replacement (all replicates of a drawn task; a task
//!   drawn twice weighs twice under every interface and switch point; the study's tasks are
//!   one stratum), recomputes every row per draw, and reports percentile 95% intervals
//!   (linear interpolation between order statistics) of each row's pass rate, QRec and
//!   CSRet, and of each interface's Table-1 pass-rate and cost difference from
//!   `compact_pre`. `StudyInput::bootstrap` draws (0: none) with `StudyInput::seed`.

mod build;
mod render;

use baton_types::agent::{AgentCell, AgentSwitch, Difficulty};
use baton_types::{Cost, Direction};
use serde::Serialize;

use crate::metrics::Omission;

pub use build::{build_study, handover_relation};

/// One episode as the study sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyEpisode {
    /// Task id.
    pub task_id: String,
    /// Difficulty bucket.
    pub bucket: Difficulty,
    /// Replicate.
    pub replicate: u32,
    /// Its cell (a handoff's `independent` does not split the study's cells: a study
    /// runs every prefix one way).
    pub cell: AgentCell,
    /// Whether it finished (an end is stored and it is not incomplete).
    pub finished: bool,
    /// Whether it resolved the task, when finished and scored.
    pub resolved: Option<bool>,
    /// Model calls made in total (prefix ones included).
    pub steps: u32,
    /// Suffix calls (steps after the switch).
    pub suffix_steps: u32,
    /// Total (attributed) cost: what the task's run cost, forked prefix included.
    pub cost: Cost,
    /// Cost per phase: prefix (a forked one included), handoff, suffix.
    pub phases: [Cost; 3],
    /// A handoff's switch (its call s, the bucket and whether it fired), once settled.
    pub switch: Option<AgentSwitch>,
    /// A `handover` handoff's document lint at the switch, once stored.
    pub handover: Option<HandoverLint>,
}

impl StudyEpisode {
    /// Whether a handoff fired (none before its switch is settled, and for an anchor).
    pub fn fired(&self) -> Option<bool> {
        self.switch.map(|s| s.fired)
    }
}

/// A `handover` document's lint at the switch, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandoverLint {
    /// The structure score, 0–100.
    pub score: u32,
    /// Whether the header is valid.
    pub valid: bool,
    /// The verification's verdict (`verified`, `failed`, …).
    pub verdict: String,
    /// Each claim's verdict (`held-and-holds`, `never-held`, …), in the document's order.
    pub claims: Vec<String>,
}

/// One `handover` handoff episode: its document's lint beside its resolution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandoverEpisode {
    /// Task id.
    pub task_id: String,
    /// Replicate.
    pub replicate: u32,
    /// `lc/hc`.
    pub pair: String,
    /// Direction.
    pub direction: String,
    /// Percentile of the switch call.
    pub p: u32,
    /// The document's lint score, 0–100.
    pub score: u32,
    /// Whether its header is valid.
    pub valid: bool,
    /// The verification's verdict.
    pub verdict: String,
    /// Claims that held at the commit and hold now.
    pub claims_held: usize,
    /// Claims in all.
    pub claims: usize,
    /// Whether the episode resolved the task (none until it finished with a verdict).
    pub resolved: Option<bool>,
}

/// How the `handover` documents' lint scores relate to their episodes' resolution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandoverRelation {
    /// Every linted `handover` episode, by pair, direction, p, task and replicate.
    pub episodes: Vec<HandoverEpisode>,
    /// Episodes with a lint and a resolution: what the correlation is over.
    pub n: usize,
    /// The fewest episodes the correlation is given for ([`HANDOVER_MIN_EPISODES`]).
    pub min_n: usize,
    /// Spearman's ρ of score against resolution (1 or 0), average ranks for ties.
    pub spearman: Option<f64>,
    /// Its 95 % interval.
    pub ci: Option<[f64; 2]>,
    /// How the interval is computed.
    pub method: String,
    /// Why there is no correlation (too few episodes, a constant side).
    pub note: Option<String>,
}

/// The fewest scored `handover` episodes the report gives a rank correlation for: below
/// it, "too few episodes". Fisher's z interval is rough under about ten pairs.
pub const HANDOVER_MIN_EPISODES: usize = 10;

/// A switch call, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StudyThreshold {
    /// `lc/hc`.
    pub pair: String,
    /// `escalation` or `downshift`.
    pub direction: Direction,
    /// Difficulty bucket.
    pub bucket: Difficulty,
    /// Percentile.
    pub p: u32,
    /// Switch call.
    pub s: u32,
}

/// What the study report is built from.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyInput {
    /// Pairs `(lc, hc)`.
    pub pairs: Vec<(String, String)>,
    /// The stored switch calls.
    pub thresholds: Vec<StudyThreshold>,
    /// Every episode, anchors included.
    pub episodes: Vec<StudyEpisode>,
    /// Bootstrap replicates (0: none); the paper uses 10,000.
    pub bootstrap: usize,
    /// Bootstrap seed.
    pub seed: u64,
}

/// The reconciliation audit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Audit {
    /// Whether every finished episode reconciled.
    pub reconciled: bool,
    /// Episodes checked.
    pub tasks: usize,
    /// The largest |prefix + handoff + suffix − total|, in dollars.
    pub max_abs_diff_usd: f64,
}

/// One (pair, direction, p, interface) cell, or an aggregate of them (`p` none).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyRow {
    /// `lc/hc`.
    pub pair: String,
    /// Direction.
    pub direction: String,
    /// Interface, or a restart control's name.
    pub interface: String,
    /// Percentile (cells only).
    pub p: Option<u32>,
    /// `all`, `early`, `late`, or a bucket.
    pub window: String,
    /// Handoff episodes planned and stored.
    pub n: usize,
    /// Fired ones.
    pub n_fired: usize,
    /// Unfired ones (the prefix ended before call s).
    pub n_unfired: usize,
    /// Fired ones not finished yet.
    pub n_incomplete: usize,
    /// Matched fired units the numbers are over.
    pub n_matched: usize,
    /// Pass rate, %.
    pub pass_rate: Option<f64>,
    /// Mean cost per task, dollars.
    pub mean_cost_usd: Option<f64>,
    /// LC-only pass rate on the same units, %.
    pub lc_pass_rate: Option<f64>,
    /// HC-only pass rate on the same units, %.
    pub hc_pass_rate: Option<f64>,
    /// LC-only mean cost on the same units, dollars.
    pub lc_cost_usd: Option<f64>,
    /// HC-only mean cost on the same units, dollars.
    pub hc_cost_usd: Option<f64>,
    /// QRec, %.
    pub qrec: Option<f64>,
    /// CSRet, %.
    pub csret: Option<f64>,
    /// Why QRec is missing (the anchors differ by less than 5 points, no matched unit).
    pub qrec_omitted_reason: Option<Omission>,
    /// Why CSRet is missing.
    pub csret_omitted_reason: Option<Omission>,
    /// 95% bootstrap interval of the pass rate, when the bootstrap ran.
    pub pass_rate_ci: Option<[f64; 2]>,
    /// 95% bootstrap interval of QRec.
    pub qrec_ci: Option<[f64; 2]>,
    /// 95% bootstrap interval of CSRet.
    pub csret_ci: Option<[f64; 2]>,
}

/// The step-cost decomposition of one (pair, direction, interface).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decomposition {
    /// `lc/hc`.
    pub pair: String,
    /// Direction.
    pub direction: String,
    /// Interface.
    pub interface: String,
    /// Mean post-handoff cost (handoff call folded into the first suffix step) per suffix step, dollars.
    pub usd_per_suffix_step: Option<f64>,
    /// Mean suffix steps.
    pub suffix_steps: Option<f64>,
    /// The two relative to `compact_pre`.
    pub usd_per_step_vs_compact_pre: Option<f64>,
    /// Suffix steps relative to `compact_pre`.
    pub steps_vs_compact_pre: Option<f64>,
}

/// A bootstrap interval of an interface's difference from `compact_pre` (Table 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// `lc/hc`.
    pub pair: String,
    /// Direction.
    pub direction: String,
    /// Interface.
    pub interface: String,
    /// Pass-rate difference (points): estimate, 2.5 and 97.5 percentiles.
    pub pass_rate_diff: [f64; 3],
    /// Mean-cost difference (dollars): estimate, 2.5 and 97.5 percentiles.
    pub cost_diff_usd: [f64; 3],
    /// Replicates.
    pub replicates: usize,
}

/// The study report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyReport {
    /// The switch calls.
    pub thresholds: Vec<StudyThreshold>,
    /// The audit.
    pub audit: Audit,
    /// Every cell.
    pub cells: Vec<StudyRow>,
    /// Table 1: per pair, direction and interface, equal weight over switch points.
    pub table1: Vec<StudyRow>,
    /// Early (p ≤ 15) and late (p ≥ 25) windows.
    pub windows: Vec<StudyRow>,
    /// Per difficulty bucket.
    pub buckets: Vec<StudyRow>,
    /// Restart controls.
    pub restart_controls: Vec<StudyRow>,
    /// Step-cost decomposition.
    pub decomposition: Vec<Decomposition>,
    /// Bootstrap intervals.
    pub intervals: Vec<Interval>,
    /// The `handover` interface's document lint scores against resolution (when the study
    /// has `handover` episodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handover: Option<HandoverRelation>,
}
