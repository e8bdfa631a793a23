//! A trap-bench trial's identity: what decides what the trial sends and how it is judged,
//! so that a rerun on an existing output folder keeps every stored trial that would come
//! out the same and runs again the ones whose inputs changed.
//!
//! A trial's identity is the sha256 of a small JSON object built here from an explicit
//! list (never a serialized internal type, which would freeze that type):
//!
//! * `v`: [`IDENTITY_VERSION`]; bump it only when the list below changes meaning;
//! * `scenario`, `condition`, `model` (its name in the experiment), `trial`, and the
//!   experiment's `seed` (the trial's calls carry `hash(seed, scenario, model, trial)`);
//! * `scenario_files`: the sha256 of the scenario's content ([`scenario_sha256`]): baton's
//!   bundled `scenario.toml` (the task prompt and the repository's history) and `sim.toml`
//!   (the simulated agent's branches), and every file of the scenario's folder in the
//!   Handover checkout (`traps.json` with its probes, `repo/`) except its two documents;
//!   the code that builds the repository is covered by [`IDENTITY_VERSION`];
//! * `document`: the sha256 of the condition's document text (`null` for `none`; baton's
//!   bundled `poisoned` document for `poisoned`), so a changed document re-runs its
//!   condition only;
//! * `settings`: the model's effective request settings ([`request_settings`]): the model,
//!   temperature and output cap when set, and a simulated model's effective settings (its
//!   preset refined by `[models.NAME.sim]`) with the experiment's `base_rate`. Not its
//!   price, base URL, key or the run's concurrency: those change what a call costs or how it
//!   is sent, never what it asks;
//! * `agent`: the `[agent]` table (step limit, cost limit, protocol).
//!
//! The rubric is not in it: the documents' lints are computed again on every run, and no
//! trial depends on them. The price card is not in it either: a changed price re-prices
//! the stored tokens of the kept trials ([`crate::traps::experiment`]).
//!
//! The inputs come from the same place for a trial of this run and for one stored before
//! identities existed: the experiment (the new one, or the one stored in `results.json`)
//! and the scenario files on disk now. So a `results.json` of an older version adopts the
//! identity its trials would have had and an unchanged rerun runs nothing.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::fmt;

use crate::error::Error;
use crate::traps::experiment::{ModelEntry, TrapExperiment, TrialId};
use crate::traps::{Condition, TrapTask};

pub use baton_types::diff::{KeyChange, diff};

/// The version of the identity's list of fields.
pub const IDENTITY_VERSION: u32 = 1;

fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The sha256 of a scenario's content (see the module docs): a JSON object of each file's
/// sha256 by its name (`baton/scenario.toml`, `handover/traps.json`, `handover/repo/…`).
pub fn scenario_sha256(task: &TrapTask) -> Result<String, Error> {
    let mut files = BTreeMap::new();
    if let Some(text) = super::bundled_spec(task.name()) {
        files.insert("baton/scenario.toml".to_string(), sha256(text.as_bytes()));
    }
    if let Some(text) = super::sim::sim_file(task.name()) {
        files.insert("baton/sim.toml".to_string(), sha256(text.as_bytes()));
    }
    let dir = &task.scenario.dir;
    let mut stack = vec![dir.clone()];
    while let Some(folder) = stack.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|source| Error::Read {
            path: folder.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| Error::Read {
                path: folder.clone(),
                source,
            })?;
            let path = entry.path();
            let rel = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            if rel == "good.handover.md" || rel == "bad.handover.md" {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).map_err(|source| Error::Read {
                    path: path.clone(),
                    source,
                })?;
                files.insert(format!("handover/{rel}"), sha256(&bytes));
            }
        }
    }
    let text = serde_json::to_string(&files).expect("json always serializes");
    Ok(sha256(text.as_bytes()))
}

/// A model's effective request settings, as its trials' identity counts them: the fields
/// that change what is asked, each only when set (so a new optional setting leaves every
/// stored identity as it was), and for a simulated model its effective settings and the
/// experiment's `base_rate`.
pub fn request_settings(m: &ModelEntry, base_rate: f64) -> Value {
    let mut v = Map::new();
    v.insert("model".into(), json!(m.model));
    if let Some(t) = m.temperature {
        v.insert("temperature".into(), json!(t));
    }
    if let Some(t) = m.max_tokens {
        v.insert("max_tokens".into(), json!(t));
    }
    if m.model.starts_with("sim/") {
        // the effective settings: a preset's default written out changes nothing
        let sim = m
            .sim_settings()
            .ok()
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or(Value::Null);
        v.insert("sim".into(), sim);
        v.insert("base_rate".into(), json!(base_rate));
    }
    Value::Object(v)
}

/// What the trials of one experiment share, from which each one's identity is computed:
/// the scenarios' and documents' hashes (read once from disk).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    /// `scenario <name>` and `document <scenario>/<condition>` → sha256.
    pub hashes: BTreeMap<String, String>,
}

impl Inputs {
    /// Hash every scenario's files and each condition's document of `tasks`.
    pub fn read(tasks: &[TrapTask]) -> Result<Inputs, Error> {
        let mut hashes = BTreeMap::new();
        for task in tasks {
            hashes.insert(format!("scenario {}", task.name()), scenario_sha256(task)?);
            for c in Condition::ALL {
                if let Some(text) = task.document(c)? {
                    hashes.insert(
                        format!("document {}/{}", task.name(), c),
                        sha256(text.as_bytes()),
                    );
                }
            }
        }
        Ok(Inputs { hashes })
    }

    /// The fields of trial `id`'s identity under experiment `exp` (keys sorted:
    /// `serde_json`'s map is ordered). `None` when `exp` has no such model.
    pub fn json(&self, exp: &TrapExperiment, id: &TrialId) -> Option<Value> {
        let model = exp.models.get(&id.model)?;
        let get = |k: String| self.hashes.get(&k).cloned();
        Some(json!({
            "v": IDENTITY_VERSION,
            "scenario": id.scenario,
            "condition": id.condition.name(),
            "model": id.model,
            "trial": id.trial,
            "seed": exp.seed,
            "scenario_files": get(format!("scenario {}", id.scenario)),
            "document": get(format!("document {}/{}", id.scenario, id.condition)),
            "settings": request_settings(model, exp.base_rate),
            "agent": {
                "step_limit": exp.agent.step_limit,
                "cost_limit_usd": exp.agent.cost_limit_usd,
                "protocol": serde_json::to_value(exp.agent.protocol).unwrap_or(Value::Null),
            },
        }))
    }

    /// The identity of trial `id` under `exp`: the sha256 of its canonical JSON
    /// ([`Self::json`]). `None` when `exp` has no such model.
    pub fn of(&self, exp: &TrapExperiment, id: &TrialId) -> Option<String> {
        let text = serde_json::to_string(&self.json(exp, id)?).expect("json always serializes");
        Some(sha256(text.as_bytes()))
    }
}

/// What a run on an existing output folder will do, said before any trial runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// Whether the folder held a `results.json` (else every trial is new).
    pub stored: bool,
    /// The experiment's keys that changed since it was stored, then the scenario files
    /// and documents whose hash changed (when the stored results had hashes).
    pub keys: Vec<KeyChange>,
    /// Stored finished trials whose identity is unchanged: kept, nothing runs.
    pub kept: usize,
    /// Planned trials with nothing stored.
    pub new: usize,
    /// Stored trials that did not finish: run again.
    pub unfinished: usize,
    /// Stored finished trials whose identity changed: run again, their record replaced.
    pub rerun: Vec<TrialId>,
    /// Stored trials the experiment no longer plans (a removed scenario, condition, model
    /// or trial): dropped from `results.json` and the report.
    pub removed: usize,
    /// Models whose price changed: `(model, kept trials' cost before, after)` in US
    /// dollars, re-priced from their stored tokens; nothing runs for it.
    pub repriced: Vec<(String, f64, f64)>,
}

impl Changes {
    /// Trials this run runs.
    pub fn to_run(&self) -> usize {
        self.new + self.unfinished + self.rerun.len()
    }
}

impl fmt::Display for Changes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.stored {
            return writeln!(f, "new output folder: {} trials to run", self.new);
        }
        if self.keys.is_empty() {
            writeln!(f, "the experiment is unchanged since it was stored")?;
        } else {
            writeln!(f, "the experiment changed since it was stored:")?;
            for k in &self.keys {
                writeln!(f, "  {k}")?;
            }
        }
        for (model, before, after) in &self.repriced {
            writeln!(
                f,
                "price of {model} changed: its kept trials re-priced from their stored tokens (${before:.6} → ${after:.6}); nothing runs for it"
            )?;
        }
        writeln!(
            f,
            "trials: {} kept, {} new, {} unfinished run again, {} re-run (identity changed), {} removed (out of the report); to run: {}",
            self.kept,
            self.new,
            self.unfinished,
            self.rerun.len(),
            self.removed,
            self.to_run()
        )?;
        for id in &self.rerun {
            writeln!(
                f,
                "  re-run: {} {} {} #{}",
                id.scenario, id.condition, id.model, id.trial
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn exp(extra_lc: &str, top: &str) -> TrapExperiment {
        TrapExperiment::parse(
            Path::new("e.toml"),
            &format!(
                "name = \"x\"\nhandover = \"h\"\n{top}\n[models.lc]\nmodel = \"sim/lc\"\n{extra_lc}\n[models.api]\nmodel = \"openai/gpt-4.1-mini\"\n"
            ),
        )
        .unwrap()
    }

    fn id(model: &str) -> TrialId {
        TrialId {
            scenario: "reverted-feature".into(),
            condition: Condition::Good,
            model: model.into(),
            trial: 0,
        }
    }

    #[test]
    fn a_setting_changes_only_the_trials_that_depend_on_it() {
        let inputs = Inputs {
            hashes: BTreeMap::from([
                ("scenario reverted-feature".to_string(), "s1".to_string()),
                (
                    "document reverted-feature/good".to_string(),
                    "d1".to_string(),
                ),
            ]),
        };
        let before = exp("", "");
        let of = |e: &TrapExperiment, m: &str| inputs.of(e, &id(m)).unwrap();
        // the sim model's skill: only its trials
        let skill = exp("[models.lc.sim]\nskill = 0.6", "");
        assert_ne!(of(&before, "lc"), of(&skill, "lc"));
        assert_eq!(of(&before, "api"), of(&skill, "api"));
        // its preset's own value written out is the same effective setting
        let same = exp("[models.lc.sim]\nskill = 0.45", "");
        assert_eq!(of(&before, "lc"), of(&same, "lc"));
        // base_rate: only the simulated agents
        let rate = exp("", "base_rate = 0.3");
        assert_ne!(of(&before, "lc"), of(&rate, "lc"));
        assert_eq!(of(&before, "api"), of(&rate, "api"));
        // seed and the agent table: every trial
        for top in ["seed = 7", "[agent]\nstep_limit = 10"] {
            let e = exp("", top);
            assert_ne!(of(&before, "api"), of(&e, "api"), "{top}");
        }
        // what changes the cost or the transport only is not identity
        let transport = exp(
            "",
            "concurrency = 4\nrubric = \"handover-0.4\"\nprices = \"p.json\"",
        );
        assert_eq!(of(&before, "lc"), of(&transport, "lc"));
        // a changed document re-runs its condition
        let mut changed = inputs.clone();
        changed
            .hashes
            .insert("document reverted-feature/good".into(), "d2".into());
        assert_ne!(of(&before, "lc"), changed.of(&before, &id("lc")).unwrap());
        // the model's temperature
        let warm = exp("temperature = 0.5", "");
        assert_ne!(of(&before, "lc"), of(&warm, "lc"));
    }
}
