//! What a run on an existing folder changes, said before any call: the experiment's
//! keys that differ from the stored experiment (`key: old → new`), and how many
//! episodes are reused, resumed, new and re-run, with the upper bound of what the
//! episodes still to run can cost.
//!
//! The experiment is compared in its normalized form ([`normalized`]): the spec after
//! the command line's overrides, as JSON under a version number, stored in the store
//! (`experiment.experiment_json`). A store written before it had one is compared
//! through its stored TOML text, read by the same experiment reader.

use std::fmt;

use baton_types::Cost;
use serde_json::{Value, json};

use crate::spec::ExperimentSpec;

pub use baton_types::diff::{KeyChange, diff};

/// The version of the stored normalized experiment's layout.
pub(crate) const EXPERIMENT_JSON_VERSION: u32 = 1;

/// The normalized, versioned form of a chat experiment, as stored.
pub(crate) fn normalized(spec: &ExperimentSpec) -> Value {
    json!({
        "version": EXPERIMENT_JSON_VERSION,
        "kind": "chat",
        "experiment": serde_json::to_value(spec).expect("a spec always serializes"),
    })
}

/// The experiment inside a stored normalized form, when its version is one this build
/// reads.
pub(crate) fn stored_experiment(json: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(json).ok()?;
    (v.get("version")?.as_u64()? == u64::from(EXPERIMENT_JSON_VERSION))
        .then(|| v.get("experiment").cloned())
        .flatten()
}

/// What a run on an existing folder will do, before any call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// Whether the folder held a stored experiment (else everything is new).
    pub stored: bool,
    /// The experiment's keys that changed.
    pub keys: Vec<KeyChange>,
    /// Stored episodes whose identity is unchanged and that finished: nothing is sent.
    pub reused: usize,
    /// Stored episodes whose identity is unchanged but that did not finish: their
    /// stored calls replay and the rest is sent.
    pub resumed: usize,
    /// Episodes with nothing stored.
    pub new: usize,
    /// Stored episodes whose identity changed: run again as new episodes, the stored
    /// ones kept and retired.
    pub rerun: usize,
    /// Current stored episodes of cells or tasks the experiment no longer has: kept,
    /// retired, out of the report.
    pub removed: usize,
    /// Upper bound of what the new and re-run episodes cost (resumed ones at their
    /// whole bound too).
    pub upper_bound: Cost,
    /// Calls the new and re-run episodes make at most (before unusable retries).
    pub calls_upper: usize,
    /// When the price card changed: what every stored call was priced at before, and
    /// now (stored usage re-priced; nothing is sent again for it).
    pub repriced: Option<(Cost, Cost)>,
}

impl Changes {
    /// Whether the run sends anything for episodes that were stored with another
    /// identity.
    pub fn reruns(&self) -> bool {
        self.rerun > 0
    }
}

impl fmt::Display for Changes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.stored {
            return writeln!(
                f,
                "new experiment: {} episodes, at most {} calls, at most {}",
                self.new, self.calls_upper, self.upper_bound
            );
        }
        if self.keys.is_empty() {
            writeln!(f, "the experiment is unchanged since it was stored")?;
        } else {
            writeln!(f, "the experiment changed since it was stored:")?;
            for k in &self.keys {
                writeln!(f, "  {k}")?;
            }
        }
        if let Some((before, after)) = self.repriced {
            writeln!(
                f,
                "price card changed: stored usage re-priced ({before} → {after}); no call is sent again for it"
            )?;
        }
        writeln!(
            f,
            "episodes: {} reused, {} resumed, {} new, {} re-run (identity changed), {} removed (kept in the store, out of the report); to run: at most {} calls, at most {}",
            self.reused,
            self.resumed,
            self.new,
            self.rerun,
            self.removed,
            self.calls_upper,
            self.upper_bound
        )
    }
}
