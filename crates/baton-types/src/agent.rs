//! The coding agent's nouns that cross layers: how a run ended ([`AgentExit`]), a task's
//! difficulty bucket ([`Difficulty`]), how one command (a *step*'s action) ended
//! ([`CommandStatus`]), and a handoff's switch ([`AgentSwitch`]).
//!
//! The agent loop (`baton-agent`), the sandbox (`baton-env`), the runner, the store and
//! the report all speak these; each has one spelling here (`name`, `FromStr`, serde), so
//! a stored `exit` or `bucket` column parses back into the same value.
//!
//! ```
//! use baton_types::agent::{AgentExit, CommandStatus, Difficulty};
//! assert_eq!("error".parse::<AgentExit>(), Ok(AgentExit::Error));
//! assert_eq!(Difficulty::from_exercism(5), Difficulty::Medium);
//! assert_eq!(CommandStatus::Signaled(9).return_code(), Some(137));
//! ```

use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How an agent run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentExit {
    /// A command printed the submission marker.
    Submitted,
    /// The step limit was reached.
    StepLimit,
    /// The cost limit was reached.
    CostLimit,
    /// Three format errors in a row.
    FormatErrors,
    /// The model side ended the run: a call the provider refused for good (HTTP 400, 413
    /// or 422, e.g. the context is too long) or kept answering unusably. It counts as
    /// unresolved, like any finished run without a submission.
    Error,
    /// The working tree's snapshots passed the episode's snapshot cap.
    SnapshotLimit,
}

impl AgentExit {
    /// Every status, in report order.
    pub const ALL: [AgentExit; 6] = [
        AgentExit::Submitted,
        AgentExit::StepLimit,
        AgentExit::CostLimit,
        AgentExit::FormatErrors,
        AgentExit::Error,
        AgentExit::SnapshotLimit,
    ];

    /// `submitted`, `step_limit`, `cost_limit`, `format_errors`, `error` or
    /// `snapshot_limit`.
    pub const fn name(self) -> &'static str {
        match self {
            AgentExit::Submitted => "submitted",
            AgentExit::StepLimit => "step_limit",
            AgentExit::CostLimit => "cost_limit",
            AgentExit::FormatErrors => "format_errors",
            AgentExit::Error => "error",
            AgentExit::SnapshotLimit => "snapshot_limit",
        }
    }

    /// Parse a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        AgentExit::ALL.into_iter().find(|e| e.name() == s)
    }
}

impl std::fmt::Display for AgentExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AgentExit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AgentExit::parse(s).ok_or_else(|| {
            let names: Vec<_> = AgentExit::ALL.iter().map(|e| e.name()).collect();
            format!("unknown exit status {s:?} (expected {})", names.join(", "))
        })
    }
}

/// A difficulty bucket. The handoff study computes switch points per bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Difficulty {
    /// Easy.
    Easy,
    /// Medium.
    Medium,
    /// Hard.
    Hard,
}

impl Difficulty {
    /// Every bucket, easiest first.
    pub const ALL: [Difficulty; 3] = [Difficulty::Easy, Difficulty::Medium, Difficulty::Hard];

    /// Exercism's 1-10 rating: 3 or less is easy, 4-5 medium, 6 or more hard.
    pub fn from_exercism(rating: u32) -> Self {
        match rating {
            0..=3 => Difficulty::Easy,
            4..=5 => Difficulty::Medium,
            _ => Difficulty::Hard,
        }
    }

    /// SWE-bench Verified's annotated fix time: `<15 min fix` is easy, `15 min - 1 hour`
    /// medium, `1-4 hours` and `>4 hours` (the two longest, merged) hard.
    pub fn from_swebench(label: &str) -> Option<Self> {
        match label.trim() {
            "<15 min fix" => Some(Difficulty::Easy),
            "15 min - 1 hour" => Some(Difficulty::Medium),
            "1-4 hours" | ">4 hours" => Some(Difficulty::Hard),
            _ => None,
        }
    }

    /// `easy`, `medium` or `hard`.
    pub const fn name(self) -> &'static str {
        match self {
            Difficulty::Easy => "easy",
            Difficulty::Medium => "medium",
            Difficulty::Hard => "hard",
        }
    }
}

impl std::fmt::Display for Difficulty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Difficulty {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Difficulty::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| format!("unknown difficulty {s:?} (expected easy, medium or hard)"))
    }
}

/// How one command of an agent step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum CommandStatus {
    /// It exited with this code (a shell reports a command killed by signal `n` as
    /// `128 + n`).
    Exited(i32),
    /// The process baton started was killed by this signal.
    Signaled(i32),
    /// It ran past the timeout and its whole process tree was killed.
    TimedOut,
}

impl CommandStatus {
    /// The shell-style return code: the exit code, or `128 + signal`; `None` after a
    /// timeout.
    pub fn return_code(self) -> Option<i32> {
        match self {
            CommandStatus::Exited(c) => Some(c),
            CommandStatus::Signaled(s) => Some(128 + s),
            CommandStatus::TimedOut => None,
        }
    }

    /// Exited with code 0.
    pub fn success(self) -> bool {
        self == CommandStatus::Exited(0)
    }
}

impl std::fmt::Display for CommandStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandStatus::Exited(c) => write!(f, "return code {c}"),
            CommandStatus::Signaled(s) => write!(f, "killed by signal {s}"),
            CommandStatus::TimedOut => f.write_str("timed out (killed)"),
        }
    }
}

/// A handoff's switch: the call s the receiver takes over at, the bucket whose
/// percentile chose it, and whether the prefix reached it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSwitch {
    /// The switch call (the receiver makes calls s, s+1, …).
    pub s: u32,
    /// The task's difficulty bucket.
    pub bucket: Difficulty,
    /// Whether the prefix made call s (else the prefix's own run is the episode's).
    pub fired: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_parse_and_serde() {
        for e in AgentExit::ALL {
            assert_eq!(e.name().parse::<AgentExit>(), Ok(e));
            assert_eq!(
                serde_json::to_value(e).unwrap(),
                serde_json::json!(e.name())
            );
        }
        for d in Difficulty::ALL {
            assert_eq!(d.name().parse::<Difficulty>(), Ok(d));
            assert_eq!(
                serde_json::to_value(d).unwrap(),
                serde_json::json!(d.name())
            );
        }
        assert!(
            "errored"
                .parse::<AgentExit>()
                .unwrap_err()
                .contains("snapshot_limit")
        );
        assert_eq!(
            serde_json::to_value(CommandStatus::Exited(3)).unwrap(),
            serde_json::json!({"kind": "exited", "value": 3})
        );
        assert_eq!(CommandStatus::TimedOut.return_code(), None);
    }
}
