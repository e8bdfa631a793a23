//! The coding agent's nouns that cross layers: how a run ended ([`AgentExit`]), a task's
//! difficulty bucket ([`Difficulty`]), how one command (a *step*'s action) ended
//! ([`CommandStatus`]), an episode's cell ([`AgentCell`]: an anchor or a handoff) and a
//! handoff's switch ([`AgentSwitch`]).
//!
//! The agent loop (`baton-agent`), the sandbox (`baton-env`), the runner, the store and
//! the report all speak these; each has one spelling here (`name`, `FromStr`, serde), so
//! a stored `exit` or `bucket` column parses back into the same value, and a stored
//! `cell_json` into the same cell.
//!
//! ```
//! use baton_types::agent::{AgentCell, AgentExit, CommandStatus, Difficulty};
//! use baton_types::{Direction, Interface};
//! assert_eq!("error".parse::<AgentExit>(), Ok(AgentExit::Error));
//! assert_eq!(Difficulty::from_exercism(5), Difficulty::Medium);
//! assert_eq!(CommandStatus::Signaled(9).return_code(), Some(137));
//! let cell = AgentCell::handoff("hc", "lc", 25, Interface::CompactPre, false);
//! assert_eq!(cell.label(), "handoff(hc -> lc, p25, compact_pre)");
//! let pairs = [["lc".to_string(), "hc".to_string()]];
//! assert_eq!(cell.pair(&pairs), Some((&pairs[0], Direction::Downshift)));
//! ```

use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Direction, Interface};

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

/// The cell of an agent episode: who makes its calls. The one type the runner plans,
/// the store keeps (`episodes.cell_json`, in every episode's identity) and the report
/// groups by; the experiment's `[handoff]` table describes the set of them.
///
/// Its serde form is stored, so it never changes: `{"kind":"single","model":"lc"}` (as
/// the chat side writes a single-model cell) and `{"kind":"agent_handoff","sender":…,
/// "receiver":…,"p":…,"interface":…,"independent":…}`, fields in that order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentCell {
    /// One model makes every call (an anchor).
    Single {
        /// The model's name in the experiment.
        model: String,
    },
    /// The sender makes calls `0..s`, the receiver the rest, s the sender's p-th
    /// percentile termination step in the task's bucket.
    AgentHandoff {
        /// The prefix model.
        sender: String,
        /// The suffix model.
        receiver: String,
        /// The percentile the switch call comes from.
        p: u32,
        /// What the receiver is shown.
        interface: Interface,
        /// Whether the prefix is run live (else forked from the sender's anchor).
        independent: bool,
    },
}

impl AgentCell {
    /// An anchor of `model`.
    pub fn single(model: impl Into<String>) -> Self {
        AgentCell::Single {
            model: model.into(),
        }
    }

    /// A handoff from `sender` to `receiver` at the `p`-th percentile, through
    /// `interface`, its prefix live when `independent`.
    pub fn handoff(
        sender: impl Into<String>,
        receiver: impl Into<String>,
        p: u32,
        interface: Interface,
        independent: bool,
    ) -> Self {
        AgentCell::AgentHandoff {
            sender: sender.into(),
            receiver: receiver.into(),
            p,
            interface,
            independent,
        }
    }

    /// The cell's key in the store: `single(m)` or `handoff(a -> b, p25, raw)` (with
    /// `, independent` when the prefix runs live).
    pub fn label(&self) -> String {
        match self {
            AgentCell::Single { model } => format!("single({model})"),
            AgentCell::AgentHandoff {
                sender,
                receiver,
                p,
                interface,
                independent,
            } => format!(
                "handoff({sender} -> {receiver}, p{p}, {}{})",
                interface.as_str(),
                if *independent { ", independent" } else { "" }
            ),
        }
    }

    /// The model that makes the first call (a handoff's sender).
    pub fn first_model(&self) -> &str {
        match self {
            AgentCell::Single { model } => model,
            AgentCell::AgentHandoff { sender, .. } => sender,
        }
    }

    /// The model that makes the last calls (a handoff's receiver).
    pub fn last_model(&self) -> &str {
        match self {
            AgentCell::Single { model } => model,
            AgentCell::AgentHandoff { receiver, .. } => receiver,
        }
    }

    /// Whether the cell's episodes call model `m`.
    pub fn uses(&self, m: &str) -> bool {
        self.first_model() == m || self.last_model() == m
    }

    /// A handoff's interface.
    pub fn interface(&self) -> Option<Interface> {
        match self {
            AgentCell::Single { .. } => None,
            AgentCell::AgentHandoff { interface, .. } => Some(*interface),
        }
    }

    /// Whether a handoff's prefix runs live in its own episode (else it is forked from
    /// the sender's anchor).
    pub fn independent(&self) -> bool {
        matches!(
            self,
            AgentCell::AgentHandoff {
                independent: true,
                ..
            }
        )
    }

    /// A handoff's pair among `pairs` (`[low-cost, high-capability]`, as the experiment
    /// lists them) and which way it hands over: escalation when the sender is the pair's
    /// first model, downshift when it is the second. The first pair that has both
    /// models; `None` for an anchor or a handoff of no listed pair.
    pub fn pair<'a>(&self, pairs: &'a [[String; 2]]) -> Option<(&'a [String; 2], Direction)> {
        let AgentCell::AgentHandoff {
            sender, receiver, ..
        } = self
        else {
            return None;
        };
        pairs.iter().find_map(|pair| {
            let [lc, hc] = pair;
            if (lc, hc) == (sender, receiver) {
                Some((pair, Direction::Escalation))
            } else if (hc, lc) == (sender, receiver) {
                Some((pair, Direction::Downshift))
            } else {
                None
            }
        })
    }
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

    /// The stored form of a cell (`episodes.cell_json`, hashed into every agent
    /// episode's identity) is pinned: the text stores of schema 13 hold.
    #[test]
    fn a_cell_keeps_its_stored_form() {
        let anchor = AgentCell::single("lc");
        let handoff = AgentCell::handoff("lc", "hc", 10, Interface::CompactPre, false);
        let texts = [
            r#"{"kind":"single","model":"lc"}"#,
            r#"{"kind":"agent_handoff","sender":"lc","receiver":"hc","p":10,"interface":"compact_pre","independent":false}"#,
        ];
        for (cell, text) in [&anchor, &handoff].into_iter().zip(texts) {
            assert_eq!(serde_json::to_string(cell).unwrap(), text);
            assert_eq!(&serde_json::from_str::<AgentCell>(text).unwrap(), cell);
        }
        assert_eq!(anchor.label(), "single(lc)");
        assert_eq!(
            AgentCell::handoff("hc", "lc", 5, Interface::Raw, true).label(),
            "handoff(hc -> lc, p5, raw, independent)"
        );
        assert!(handoff.uses("hc") && handoff.uses("lc") && !anchor.uses("hc"));
        assert_eq!((handoff.first_model(), handoff.last_model()), ("lc", "hc"));
        assert_eq!(handoff.interface(), Some(Interface::CompactPre));
        assert_eq!(anchor.interface(), None);
        assert!(!handoff.independent());
    }

    #[test]
    fn a_handoff_finds_its_pair_and_direction() {
        let pairs = [
            ["lc".to_string(), "hc".to_string()],
            ["lc".to_string(), "xc".to_string()],
        ];
        let up = AgentCell::handoff("lc", "xc", 5, Interface::Raw, false);
        assert_eq!(up.pair(&pairs), Some((&pairs[1], Direction::Escalation)));
        let down = AgentCell::handoff("hc", "lc", 5, Interface::Raw, false);
        assert_eq!(down.pair(&pairs), Some((&pairs[0], Direction::Downshift)));
        assert_eq!(
            AgentCell::handoff("hc", "xc", 5, Interface::Raw, false).pair(&pairs),
            None
        );
        assert_eq!(AgentCell::single("lc").pair(&pairs), None);
    }
}
