use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Where the conversation is handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SwitchPoint {
    /// K = 1.
    Early,
    /// K = floor(N / 2).
    Middle,
    /// K = N - 1.
    Late,
    /// An explicit K.
    #[serde(untagged)]
    At(u32),
}

impl SwitchPoint {
    /// The number of sender turns for a task with `n` shards, or `None` when the
    /// switch point leaves the sender or the receiver with no turn (K < 1 or K >= N).
    pub fn k(self, n: usize) -> Option<usize> {
        let k = match self {
            SwitchPoint::Early => 1,
            SwitchPoint::Middle => n / 2,
            SwitchPoint::Late => n.saturating_sub(1),
            SwitchPoint::At(k) => k as usize,
        };
        (k >= 1 && k < n).then_some(k)
    }

    /// A short label: `early`, `middle`, `late` or `k3`.
    pub fn label(self) -> String {
        match self {
            SwitchPoint::Early => "early".into(),
            SwitchPoint::Middle => "middle".into(),
            SwitchPoint::Late => "late".into(),
            SwitchPoint::At(k) => format!("k{k}"),
        }
    }
}

impl fmt::Display for SwitchPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label())
    }
}

impl FromStr for SwitchPoint {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "early" => Ok(SwitchPoint::Early),
            "middle" => Ok(SwitchPoint::Middle),
            "late" => Ok(SwitchPoint::Late),
            other => other
                .trim_start_matches('k')
                .parse()
                .map(SwitchPoint::At)
                .map_err(|_| {
                    format!(
                        "unknown switch point {other:?} (expected early, middle, late or a number)"
                    )
                }),
        }
    }
}

/// Which way a pair's models are handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Low-cost sender, high-capability receiver.
    Escalation,
    /// High-capability sender, low-cost receiver.
    Downshift,
}

impl Direction {
    /// `escalation` or `downshift`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Escalation => "escalation",
            Direction::Downshift => "downshift",
        }
    }
}

impl FromStr for Direction {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "escalation" => Ok(Direction::Escalation),
            "downshift" => Ok(Direction::Downshift),
            other => Err(format!(
                "unknown direction {other:?} (expected escalation or downshift)"
            )),
        }
    }
}

/// What crosses the switch from sender to receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interface {
    /// The receiver inherits the full visible history, unannounced.
    Raw,
    /// Raw plus a fixed note that earlier replies came from another model.
    Disclosure,
    /// The sender summarises; the receiver continues from the summary.
    CompactPre,
    /// The receiver summarises; it continues from its own summary.
    CompactSuf,
    /// The receiver sees the shards so far but none of the sender's replies.
    TrajDrop,
    /// Agent study only: the sender writes a Handover document at the switch (the
    /// working tree committed, the document linted with its claims checked there); the
    /// receiver continues from it as from a `compact_pre` summary. A chat experiment has
    /// no working tree and refuses it.
    Handover,
}

impl Interface {
    /// The snake_case name used in files and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Interface::Raw => "raw",
            Interface::Disclosure => "disclosure",
            Interface::CompactPre => "compact_pre",
            Interface::CompactSuf => "compact_suf",
            Interface::TrajDrop => "traj_drop",
            Interface::Handover => "handover",
        }
    }
}

impl FromStr for Interface {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            Interface::Raw,
            Interface::Disclosure,
            Interface::CompactPre,
            Interface::CompactSuf,
            Interface::TrajDrop,
            Interface::Handover,
        ]
        .into_iter()
        .find(|i| i.as_str() == s)
        .ok_or_else(|| format!("unknown interface {s:?} (expected raw, disclosure, compact_pre, compact_suf, traj_drop or handover)"))
    }
}

/// Which part of a handoff episode a call belongs to, in the order calls of one turn
/// are made (a turn's prefix call, then the handoff call after it, then suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// A sender turn (every turn of a single-model episode is a prefix turn).
    Prefix,
    /// An extra call made at the switch (a compaction summary).
    Handoff,
    /// A receiver turn.
    Suffix,
    /// LiC's LLM answer extraction after an episode's final reply (`extraction = "lic"`,
    /// math and database): its calls are stored with `turn` = the attempt, 1 to 3.
    Extraction,
}

impl Phase {
    /// `prefix`, `handoff`, `suffix` or `extraction`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Prefix => "prefix",
            Phase::Handoff => "handoff",
            Phase::Suffix => "suffix",
            Phase::Extraction => "extraction",
        }
    }
}

impl FromStr for Phase {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "prefix" => Ok(Phase::Prefix),
            "handoff" => Ok(Phase::Handoff),
            "suffix" => Ok(Phase::Suffix),
            "extraction" => Ok(Phase::Extraction),
            other => Err(format!(
                "unknown phase {other:?} (expected prefix, handoff, suffix or extraction)"
            )),
        }
    }
}

/// LiC's single-turn baselines: the whole instruction in one user message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Baseline {
    /// LiC's fully specified prompt (`populate_fully_specific_prompt`): the original,
    /// unsharded instruction in the family's template.
    Full,
    /// LiC's concatenated shards (`populate_concat_prompt`): every shard at once, as a
    /// bullet list in the same template.
    Concat,
}

impl Baseline {
    /// Both baselines, in table order.
    pub const ALL: [Baseline; 2] = [Baseline::Full, Baseline::Concat];

    /// `full` or `concat`.
    pub fn as_str(self) -> &'static str {
        match self {
            Baseline::Full => "full",
            Baseline::Concat => "concat",
        }
    }
}

impl FromStr for Baseline {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "full" => Ok(Baseline::Full),
            "concat" => Ok(Baseline::Concat),
            other => Err(format!(
                "unknown baseline {other:?} (expected full or concat)"
            )),
        }
    }
}

/// One experimental condition.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Cell {
    /// One model answers every turn (an anchor).
    Single {
        /// The model's name in the experiment.
        model: String,
    },
    /// The sender answers turns 1..=K, the receiver K+1..=N.
    Handoff {
        /// The model answering the first K turns.
        sender: String,
        /// The model answering the rest.
        receiver: String,
        /// Where the switch happens.
        switch: SwitchPoint,
        /// What crosses the switch.
        interface: Interface,
    },
    /// One model answers the whole instruction in a single turn (LiC's `full` or
    /// `concat`); label `full(M)` or `concat(M)`.
    Baseline {
        /// The model's name in the experiment.
        model: String,
        /// Which single-turn prompt.
        mode: Baseline,
    },
}

impl Cell {
    /// A single-model anchor.
    pub fn single(model: impl Into<String>) -> Self {
        Cell::Single {
            model: model.into(),
        }
    }

    /// A single-turn baseline cell.
    pub fn baseline(model: impl Into<String>, mode: Baseline) -> Self {
        Cell::Baseline {
            model: model.into(),
            mode,
        }
    }

    /// A handoff cell.
    pub fn handoff(
        sender: impl Into<String>,
        receiver: impl Into<String>,
        switch: SwitchPoint,
        interface: Interface,
    ) -> Self {
        Cell::Handoff {
            sender: sender.into(),
            receiver: receiver.into(),
            switch,
            interface,
        }
    }

    /// A stable, human-readable label, also used as the cell's key in the store.
    pub fn label(&self) -> String {
        match self {
            Cell::Single { model } => format!("single({model})"),
            Cell::Baseline { model, mode } => format!("{}({model})", mode.as_str()),
            Cell::Handoff {
                sender,
                receiver,
                switch,
                interface,
            } => {
                format!(
                    "handoff({sender} -> {receiver}, {switch}, {})",
                    interface.as_str()
                )
            }
        }
    }

    /// The model answering the first turn.
    pub fn first_model(&self) -> &str {
        match self {
            Cell::Single { model } | Cell::Baseline { model, .. } => model,
            Cell::Handoff { sender, .. } => sender,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_points_follow_the_protocol() {
        assert_eq!(SwitchPoint::Early.k(4), Some(1));
        assert_eq!(SwitchPoint::Middle.k(7), Some(3));
        assert_eq!(SwitchPoint::Late.k(7), Some(6));
        assert_eq!(
            SwitchPoint::At(3).k(3),
            None,
            "K must leave the receiver a turn"
        );
        assert_eq!(SwitchPoint::Middle.k(1), None);
        assert_eq!("k3".parse::<SwitchPoint>(), Ok(SwitchPoint::At(3)));
        assert_eq!("2".parse::<SwitchPoint>(), Ok(SwitchPoint::At(2)));
    }

    #[test]
    fn baselines_label_and_serialize_apart_from_anchors() {
        let cell = Cell::baseline("lc", Baseline::Concat);
        assert_eq!(cell.label(), "concat(lc)");
        let json = serde_json::to_string(&cell).expect("serializes");
        assert_eq!(json, r#"{"kind":"baseline","model":"lc","mode":"concat"}"#);
        assert_eq!(serde_json::from_str::<Cell>(&json).expect("parses"), cell);
        assert_eq!("full".parse::<Baseline>(), Ok(Baseline::Full));
        assert!("Full".parse::<Baseline>().is_err());
    }

    #[test]
    fn phases_parse_their_own_names_only() {
        for p in [
            Phase::Prefix,
            Phase::Handoff,
            Phase::Suffix,
            Phase::Extraction,
        ] {
            assert_eq!(p.as_str().parse::<Phase>(), Ok(p));
        }
        let err = "Suffix".parse::<Phase>().unwrap_err();
        assert!(err.contains("\"Suffix\""), "{err}");
    }
}
