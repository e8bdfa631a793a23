//! Which study an experiment belongs to.

use serde::{Deserialize, Serialize};

/// The kind of an experiment, stored with it: a chat study (LiC's sharded
/// instructions) or an agent study (coding agents in a sandbox).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExperimentKind {
    /// A chat experiment (the default when a file names no kind).
    #[default]
    Chat,
    /// A coding-agent experiment (`kind = "agent"`).
    Agent,
}

impl ExperimentKind {
    /// The name a file and the store use.
    pub fn as_str(self) -> &'static str {
        match self {
            ExperimentKind::Chat => "chat",
            ExperimentKind::Agent => "agent",
        }
    }

    /// The kind named `name`, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "chat" => Some(ExperimentKind::Chat),
            "agent" => Some(ExperimentKind::Agent),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in [ExperimentKind::Chat, ExperimentKind::Agent] {
            assert_eq!(ExperimentKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(ExperimentKind::parse("agents"), None);
    }
}
