//! What the report is built from: finished and unfinished episode records.

use std::collections::{HashMap, HashSet};

use baton_types::{Cell, Cost, EpisodeStatus, Family, Spend};
use serde::{Deserialize, Serialize};

use crate::ReportError;

/// Everything a report needs; `baton-runner` fills it from the store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportInput {
    /// The experiment's name, used as the report title.
    pub title: String,
    /// Whether any simulated (`sim/...`) model took part. When set, the report says
    /// plainly that its numbers come from simulated models and show the pipeline,
    /// not a finding about real LLMs.
    pub simulated: bool,
    /// The LC/HC pairs to report on.
    pub pairs: Vec<PairSpec>,
    /// Every episode of the experiment, in any status.
    pub episodes: Vec<EpisodeRecord>,
    /// Paired bootstrap settings; `None` reports no intervals.
    #[serde(default)]
    pub bootstrap: Option<BootstrapConfig>,
    /// What the experiment paid for over every answered attempt, when known (a report
    /// read from a store always knows it).
    #[serde(default)]
    pub spend: Option<Spend>,
    /// Tasks the run left out (`--skip-invalid`: invalid items, missing databases), with
    /// why; every report lists them.
    #[serde(default)]
    pub skipped_tasks: Vec<SkippedTask>,
    /// Remarks the caller adds to the report's notes (e.g. that simulated code scores
    /// on items without a reference solution say nothing).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// A task a run left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedTask {
    /// The task's id (or the item's position when it had none).
    pub task_id: String,
    /// Why it was left out.
    pub reason: String,
}

/// A low-cost / high-capability model pair.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairSpec {
    /// The pair's name in tables, e.g. `mini-vs-4o`.
    pub name: String,
    /// The low-cost model's name (as it appears in cells).
    pub lc: String,
    /// The high-capability model's name (as it appears in cells).
    pub hc: String,
}

/// One episode: a (task, cell, replicate) and how it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeRecord {
    /// The task's id.
    pub task_id: String,
    /// The task's family.
    pub family: Family,
    /// The experimental condition.
    pub cell: Cell,
    /// The replicate index (0-based or 1-based, only equality matters).
    pub replicate: u32,
    /// Where the episode stands; only `Scored` episodes enter metrics.
    pub status: EpisodeStatus,
    /// The final answer's score in 0..=1, present only when `Scored`.
    pub score: Option<f64>,
    /// Attributed cost: the prefix is priced at the sender's rates even when it was
    /// forked rather than paid again.
    pub cost_attributed: Cost,
    /// Money this episode actually spent.
    pub cost_paid: Cost,
    /// Number of assistant turns answered.
    pub n_turns: usize,
    /// Sender turns (K) for handoff episodes.
    pub k: Option<usize>,
    /// Why the episode is incomplete or errored, when known.
    pub reason: Option<String>,
    /// Attributed cost of the sender's turns 1..=K of a handoff episode (priced at
    /// the sender's rates); feeds the `abort+HC` restart control.
    #[serde(default)]
    pub prefix_cost: Option<Cost>,
    /// The final reply held no extractable answer (a `Scored` episode with score 0,
    /// counted apart from a wrong answer as "no answer").
    #[serde(default)]
    pub no_answer: bool,
    /// The extraction rule that read the final reply (`math.boxed`, `code.named`,
    /// `math.lic_llm`, …), when the episode was scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// What the episode's own calls carried (zero when not known).
    #[serde(default)]
    pub calls: EpisodeCalls,
}

/// Token and reply figures of one episode's own calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EpisodeCalls {
    /// Input tokens, cached or not.
    pub input_tokens: u64,
    /// Of them, read from a prompt cache.
    pub cache_read_tokens: u64,
    /// Replies with no text.
    pub empty_replies: u64,
    /// Replies cut at the output cap.
    pub cut_replies: u64,
    /// LiC answer-extraction calls made for the episode's final reply (`extraction =
    /// "lic"`); not among the figures above, and their cost is not the episode's.
    #[serde(default)]
    pub extraction_calls: u64,
    /// What those calls cost.
    #[serde(default)]
    pub extraction_cost: Cost,
    /// 1 when the extraction gave no answer after its attempts, else 0.
    #[serde(default)]
    pub extraction_failed: u64,
}

impl EpisodeCalls {
    /// Add another episode's figures.
    pub fn add(&mut self, other: &EpisodeCalls) {
        self.input_tokens += other.input_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.empty_replies += other.empty_replies;
        self.cut_replies += other.cut_replies;
        self.extraction_calls += other.extraction_calls;
        self.extraction_cost += other.extraction_cost;
        self.extraction_failed += other.extraction_failed;
    }
}

/// Paired task-level bootstrap settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootstrapConfig {
    /// Number of resamples (default 10,000).
    #[serde(default = "default_replicates")]
    pub replicates: usize,
    /// Seed of the ChaCha generator; the same seed gives the same intervals.
    #[serde(default)]
    pub seed: u64,
}

fn default_replicates() -> usize {
    10_000
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig {
            replicates: default_replicates(),
            seed: 0,
        }
    }
}

impl EpisodeRecord {
    /// The score to use in metrics: `Some` only for a `Scored` episode carrying a
    /// finite score.
    pub(crate) fn usable_score(&self) -> Option<f64> {
        match (self.status, self.score) {
            (EpisodeStatus::Scored, Some(s)) if s.is_finite() => Some(s),
            _ => None,
        }
    }
}

impl ReportInput {
    /// Checks what [`crate::build`] assumes but does not enforce: one record per
    /// (task, cell, replicate), one family per task, scores present and in 0..=1 exactly
    /// when scored, non-negative costs, distinct pair names with two distinct
    /// models, and a positive bootstrap size.
    pub fn validate(&self) -> Result<(), ReportError> {
        let mut names = HashSet::new();
        for pair in &self.pairs {
            if !names.insert(pair.name.as_str()) {
                return Err(ReportError::DuplicatePair {
                    pair: pair.name.clone(),
                });
            }
            if pair.lc == pair.hc {
                return Err(ReportError::SameModelPair {
                    pair: pair.name.clone(),
                    model: pair.lc.clone(),
                });
            }
        }
        if let Some(b) = self.bootstrap
            && b.replicates == 0
        {
            return Err(ReportError::NoBootstrapReplicates);
        }
        let mut families: HashMap<&str, Family> = HashMap::new();
        let mut seen = HashSet::new();
        for e in &self.episodes {
            let id = || EpisodeId {
                task_id: e.task_id.clone(),
                cell: e.cell.label(),
                replicate: e.replicate,
            };
            if let Some(&first) = families.get(e.task_id.as_str()) {
                if first != e.family {
                    return Err(ReportError::FamilyMismatch {
                        task_id: e.task_id.clone(),
                        first,
                        second: e.family,
                    });
                }
            } else {
                families.insert(&e.task_id, e.family);
            }
            if !seen.insert((&e.task_id, &e.cell, e.replicate)) {
                return Err(ReportError::DuplicateEpisode(id()));
            }
            match (e.status, e.score) {
                (EpisodeStatus::Scored, None) => return Err(ReportError::MissingScore(id())),
                (EpisodeStatus::Scored, Some(s)) if !(0.0..=1.0).contains(&s) => {
                    return Err(ReportError::ScoreOutOfRange { id: id(), score: s });
                }
                (EpisodeStatus::Scored, Some(_)) | (_, None) => {}
                (status, Some(_)) => {
                    return Err(ReportError::ScoreWithoutScoredStatus { id: id(), status });
                }
            }
            for (what, v) in [
                ("cost_attributed", Some(e.cost_attributed)),
                ("cost_paid", Some(e.cost_paid)),
                ("prefix_cost", e.prefix_cost),
            ] {
                if let Some(v) = v
                    && v < Cost::ZERO
                {
                    return Err(ReportError::BadCost {
                        id: id(),
                        what,
                        value: v,
                    });
                }
            }
        }
        Ok(())
    }
}

/// Names one episode in error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpisodeId {
    /// The task's id.
    pub task_id: String,
    /// The cell's label.
    pub cell: String,
    /// The replicate index.
    pub replicate: u32,
}

impl std::fmt::Display for EpisodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "task {:?}, cell {:?}, replicate {}",
            self.task_id, self.cell, self.replicate
        )
    }
}
