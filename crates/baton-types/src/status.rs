use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where an episode stands.
///
/// Only `Scored` episodes enter metrics. `Incomplete` (a budget stop, exhausted
/// retries, an interrupted run) is never a score of 0: it is counted and listed.
///
/// The order (`Ord`) is the declaration order; it only serves as a map key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EpisodeStatus {
    /// Not every turn has a stored response yet.
    Incomplete,
    /// Every turn answered and the final answer scored.
    Scored,
    /// Every turn answered, but the family has no evaluator in this build.
    Unscored,
    /// Every turn answered, but scoring failed for a reason outside the answer
    /// (a missing database folder, a sandbox that could not start).
    Errored,
}

impl EpisodeStatus {
    /// Every status, in declaration order.
    pub const ALL: [EpisodeStatus; 4] = [
        EpisodeStatus::Incomplete,
        EpisodeStatus::Scored,
        EpisodeStatus::Unscored,
        EpisodeStatus::Errored,
    ];

    /// The lowercase name used in the store and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            EpisodeStatus::Incomplete => "incomplete",
            EpisodeStatus::Scored => "scored",
            EpisodeStatus::Unscored => "unscored",
            EpisodeStatus::Errored => "errored",
        }
    }
}

impl fmt::Display for EpisodeStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EpisodeStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "incomplete" => Ok(EpisodeStatus::Incomplete),
            "scored" => Ok(EpisodeStatus::Scored),
            "unscored" => Ok(EpisodeStatus::Unscored),
            "errored" => Ok(EpisodeStatus::Errored),
            other => Err(format!("unknown episode status {other:?}")),
        }
    }
}
