use baton_types::{Cost, EpisodeStatus, Family};

use crate::EpisodeId;

/// Why a [`crate::ReportInput`] cannot be reported on as given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// An agent handoff study's costs do not reconcile: no table is printed.
    #[error(
        "the cost audit failed: {count} episodes do not reconcile (prefix + handoff + suffix != total), first task {task_id:?} ({cell}) off by {diff_usd:.12} USD"
    )]
    AuditFailed {
        /// Episodes that do not reconcile.
        count: usize,
        /// The first one's task.
        task_id: String,
        /// Its cell.
        cell: String,
        /// Its difference, dollars.
        diff_usd: f64,
    },
    /// A report asked for in a format it is not written in.
    #[error("the {report} report has no {format} export; it is written as {formats}")]
    UnsupportedFormat {
        /// Which report (`agent`).
        report: &'static str,
        /// The format asked for.
        format: crate::ExportFormat,
        /// The formats it is written in.
        formats: &'static str,
    },
    /// Two pairs share a name.
    #[error("pair {pair:?} is declared twice")]
    DuplicatePair {
        /// The pair's name.
        pair: String,
    },
    /// A pair names the same model as LC and HC.
    #[error("pair {pair:?} uses model {model:?} as both lc and hc")]
    SameModelPair {
        /// The pair's name.
        pair: String,
        /// The model named twice.
        model: String,
    },
    /// The bootstrap asks for zero resamples.
    #[error("bootstrap replicates must be at least 1")]
    NoBootstrapReplicates,
    /// One task appears under two families.
    #[error("task {task_id:?} appears as family {first} and as family {second}")]
    FamilyMismatch {
        /// The task's id.
        task_id: String,
        /// The family seen first.
        first: Family,
        /// The other family.
        second: Family,
    },
    /// Two records share (task, cell, replicate).
    #[error("more than one record for {0}")]
    DuplicateEpisode(EpisodeId),
    /// A scored episode without a score.
    #[error("episode ({0}) is scored but has no score")]
    MissingScore(EpisodeId),
    /// A score outside 0..=1.
    #[error("episode ({id}) has score {score}, outside 0..=1")]
    ScoreOutOfRange {
        /// The episode.
        id: EpisodeId,
        /// The offending score.
        score: f64,
    },
    /// A score on an episode whose status is not `scored`.
    #[error("episode ({id}) carries a score but its status is {status}")]
    ScoreWithoutScoredStatus {
        /// The episode.
        id: EpisodeId,
        /// Its status.
        status: EpisodeStatus,
    },
    /// A negative cost.
    #[error("episode ({id}) has {what} = {value}, expected a non-negative amount")]
    BadCost {
        /// The episode.
        id: EpisodeId,
        /// Which cost field.
        what: &'static str,
        /// Its value.
        value: Cost,
    },
}
