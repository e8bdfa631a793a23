use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A task family, named as in LiC's `task` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// HumanEval and LiveCodeBench functions, graded by running tests.
    Code,
    /// Spider text-to-SQL, graded by test-suite execution match.
    Database,
    /// BFCL parallel function calling, graded by the AST checker.
    Actions,
    /// GSM8K word problems, graded by exact match.
    Math,
    /// ToTTo table descriptions, graded by multi-reference BLEU.
    #[serde(rename = "data2text")]
    Data2Text,
}

impl Family {
    /// Every family, in a fixed order used for tables.
    pub const ALL: [Family; 5] = [
        Family::Code,
        Family::Database,
        Family::Actions,
        Family::Math,
        Family::Data2Text,
    ];

    /// The name LiC uses in the `task` key.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Code => "code",
            Family::Database => "database",
            Family::Actions => "actions",
            Family::Math => "math",
            Family::Data2Text => "data2text",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Family {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Family::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| format!("unknown task family {s:?} (expected one of code, database, actions, math, data2text)"))
    }
}

/// One piece of a sharded instruction, revealed as one user turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// The shard's id as stored in the dataset (LiC starts at 1).
    pub shard_id: i64,
    /// The text of the user turn, verbatim.
    pub shard: String,
}

/// One sharded task: the shards in reveal order plus the family's payload.
///
/// `sample` is the whole JSON object as loaded, unknown keys included; evaluators
/// read their keys (`answer`, `db_id`, `function`, ...) from it with LiC's names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Unique id, e.g. `sharded-GSM8K/1246`.
    pub task_id: String,
    /// The task family.
    pub family: Family,
    /// Shards in reveal order; the first is the opening user message.
    pub shards: Vec<Shard>,
    /// The full sample object, as loaded.
    pub sample: serde_json::Value,
}

impl Task {
    /// Number of shards, which is the number of user turns.
    pub fn n_turns(&self) -> usize {
        self.shards.len()
    }
}
