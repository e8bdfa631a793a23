//! Episode identity: what decides what a chat episode sends and how it is scored, so
//! that a run on an existing folder reuses every stored episode that would come out the
//! same and runs only what is new or changed.
//!
//! An episode's identity is the sha256 of a small JSON object built here from an
//! explicit list (never a serialized internal type, which would freeze that type):
//!
//! * `v`: [`IDENTITY_VERSION`]; bump it only when the list below changes meaning;
//! * `task`: the sha256 of the task's data, and `schedule`: of its turn schedule (the
//!   templates it was built with);
//! * `cell`, `replicate`, `seed`, `k`;
//! * `models`: each model the cell uses, by its name in the experiment, with its
//!   effective request settings ([`request_settings`]): the model, temperature, output
//!   cap, reasoning effort, thinking budget, top_p, seed, `extra`, and a simulated
//!   model's skill. Not its price, base URL, key, batching, limits or retries: those
//!   change what a call costs or how it is sent, never what it asks;
//! * `interfaces` (handoffs): the sha256 of the interface texts, and `fork`: whether the
//!   prefix is forked from the anchor;
//! * `evaluator`: the evaluator profile and version;
//! * `extraction` (math and database under `extraction = "lic"`): the extractor's
//!   settings and the sha256 of every LiC prompt file read.
//!
//! The inputs come from the same place for a new episode and for one stored before
//! identities existed (schema 13): the spec, the `inputs` table's hashes, and the
//! episode's own row. So a store of an older version adopts the identity its episodes
//! would have had, computed from the experiment stored with them, and resumes without
//! sending anything again.

use std::collections::BTreeMap;

use baton_types::{Cell, ExtractionStrategy, Family};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::spec::{ExperimentSpec, ModelSpec};

/// The version of the identity's list of fields.
pub(crate) const IDENTITY_VERSION: u32 = 1;

/// What an experiment's episodes share, from which each one's identity is computed.
pub(crate) struct Identities {
    models: BTreeMap<String, Value>,
    extraction: Option<Value>,
    fork: bool,
    interfaces: String,
    evaluator: String,
    inputs: BTreeMap<String, String>,
}

/// One episode, as its identity sees it.
pub(crate) struct EpisodeKey<'a> {
    pub task_id: &'a str,
    pub family: Family,
    pub cell: &'a Cell,
    pub replicate: u32,
    pub seed: u64,
    pub k: Option<u32>,
    pub schedule_sha256: &'a str,
}

impl Identities {
    /// From the experiment `spec`, the input hashes by name (as the `inputs` table holds
    /// them: `interfaces`, `task <id>`, `lic <path>`) and the evaluator (`profile
    /// version`).
    pub(crate) fn new(
        spec: &ExperimentSpec,
        inputs: BTreeMap<String, String>,
        evaluator: String,
    ) -> Identities {
        let models = spec
            .models
            .iter()
            .map(|(name, m)| (name.clone(), request_settings(m)))
            .collect();
        let extraction = match spec.extraction {
            baton_types::Extraction::Lic => {
                let prompts: Map<String, Value> = inputs
                    .iter()
                    .filter(|(name, _)| name.starts_with("lic "))
                    .map(|(name, sha)| (name.clone(), Value::from(sha.as_str())))
                    .collect();
                let mut extractor = spec
                    .extractor
                    .as_ref()
                    .map(request_settings)
                    .unwrap_or(Value::Null);
                if let Some(m) = spec.extractor.as_ref() {
                    // the extractor's own temperature rule (`setup::extractor_config`)
                    let c = crate::setup::extractor_config(m);
                    extractor["temperature"] = json!(c.temperature);
                    extractor["json_object"] = json!(true);
                }
                Some(json!({"extractor": extractor, "prompts": prompts}))
            }
            baton_types::Extraction::Rules => None,
        };
        Identities {
            models,
            extraction,
            fork: spec.fork_prefixes,
            interfaces: inputs.get("interfaces").cloned().unwrap_or_default(),
            evaluator,
            inputs,
        }
    }

    /// The identity of episode `e`: the sha256 of its canonical JSON ([`Self::json`]).
    pub(crate) fn of(&self, e: &EpisodeKey<'_>) -> String {
        let text = serde_json::to_string(&self.json(e)).expect("json always serializes");
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    /// The fields of `e`'s identity (keys sorted: `serde_json`'s map is ordered).
    pub(crate) fn json(&self, e: &EpisodeKey<'_>) -> Value {
        let names: Vec<&str> = match e.cell {
            Cell::Single { model } | Cell::Baseline { model, .. } => vec![model],
            Cell::Handoff {
                sender, receiver, ..
            } => vec![sender, receiver],
        };
        let models: Map<String, Value> = names
            .iter()
            .map(|n| {
                (
                    n.to_string(),
                    self.models.get(*n).cloned().unwrap_or(Value::Null),
                )
            })
            .collect();
        let mut v = json!({
            "v": IDENTITY_VERSION,
            "task": self.inputs.get(&format!("task {}", e.task_id)).cloned().unwrap_or_default(),
            "schedule": e.schedule_sha256,
            "cell": e.cell.label(),
            "replicate": e.replicate,
            "seed": e.seed,
            "k": e.k,
            "models": models,
            "evaluator": self.evaluator,
        });
        if matches!(e.cell, Cell::Handoff { .. }) {
            v["interfaces"] = json!(self.interfaces);
            v["fork"] = json!(self.fork);
        }
        if ExtractionStrategy::of(e.family).is_some()
            && let Some(x) = &self.extraction
        {
            v["extraction"] = x.clone();
        }
        v
    }
}

/// A model's effective request settings, as its episodes' identity counts them: the
/// fields that change what is asked, each only when set (so a new optional setting
/// leaves every stored identity as it was).
pub(crate) fn request_settings(m: &ModelSpec) -> Value {
    let c = m.generate_config();
    let mut v = Map::new();
    v.insert("model".into(), json!(m.model));
    let mut put = |k: &str, val: Value| {
        if !val.is_null() {
            v.insert(k.into(), val);
        }
    };
    put("temperature", json!(c.temperature));
    put("max_tokens", json!(c.max_tokens));
    put("reasoning_effort", json!(c.reasoning_effort));
    put("thinking_budget", json!(c.thinking_budget));
    put("top_p", json!(c.top_p));
    put("seed", json!(c.seed));
    if !c.extra.is_empty() {
        put("extra", Value::Object(c.extra.clone()));
    }
    if let Some(s) = &m.sim {
        put(
            "sim",
            json!({"skill": s.skill, "anchoring": s.anchoring, "carry": s.carry}),
        );
    }
    Value::Object(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(extra: &str) -> ExperimentSpec {
        ExperimentSpec::parse(
            "t",
            &format!(
                r#"
name = "t"
dataset = "sample"
[models.lc]
model = "sim/lc"
{extra}
[models.hc]
model = "sim/hc"
[[pairs]]
low = "lc"
high = "hc"
"#
            ),
        )
        .unwrap()
    }

    fn key<'a>(cell: &'a Cell) -> EpisodeKey<'a> {
        EpisodeKey {
            task_id: "t1",
            family: Family::Math,
            cell,
            replicate: 0,
            seed: 9,
            k: None,
            schedule_sha256: "abc",
        }
    }

    #[test]
    fn a_model_setting_changes_only_the_episodes_that_use_the_model() {
        let inputs = BTreeMap::from([("task t1".to_string(), "s1".to_string())]);
        let before = Identities::new(&spec(""), inputs.clone(), "lic 1".into());
        let after = Identities::new(&spec("temperature = 0.5"), inputs, "lic 1".into());
        let (lc, hc) = (Cell::single("lc"), Cell::single("hc"));
        assert_ne!(before.of(&key(&lc)), after.of(&key(&lc)));
        assert_eq!(before.of(&key(&hc)), after.of(&key(&hc)));
        // what changes the cost or the transport only is not identity
        let batched = Identities::new(
            &spec("concurrency = 2\nunusable_retries = 5\nrequests_per_minute = 9"),
            BTreeMap::from([("task t1".to_string(), "s1".to_string())]),
            "lic 1".into(),
        );
        assert_eq!(before.of(&key(&lc)), batched.of(&key(&lc)));
    }
}
