//! The agent experiment file (TOML, `kind = "agent"`).
//!
//! ```toml
//! kind = "agent"
//! name = "agent-demo"
//! dataset = "agent-sample"     # the bundled set, a task folder or a folder of them,
//!                              # an Exercism/polyglot folder, or SWE-bench JSONL
//! limit = 6                    # at most this many tasks (in id order); default all
//! replicates = 1
//! seed = 7
//! concurrency = 2              # episodes in flight at once
//! interfaces = ["raw", "disclosure", "compact_pre", "compact_suf", "traj_drop"]
//!
//! [agent]                      # what only an agent experiment has
//! protocol = "tool_calls"      # or "text" (fenced commands)
//! step_limit = 150             # model calls per task (the handoff paper's)
//! cost_limit_usd = 3.0         # spend per task; no call starts once it is reached
//! agent_templates = "swebench.yaml"   # a mini-SWE-agent YAML; default baton's own
//! swebench_python = ".venv/bin/python" # scores SWE-bench submissions with the harness
//!
//! [[pairs]]                    # the handoff study (optional): switch at call s
//! low = "lc"                   # (low-cost, high-capability); both directions run
//! high = "hc"
//!
//! [handoff]                    # the study's own knobs, each with a default
//! percentiles = [5, 10, 15, 25, 35, 45, 50]   # of the prefix model's termination steps
//! independent = false          # run prefixes live instead of forking the anchors'
//! texts = "handoff.yaml"       # replace baton's handoff texts (key for key)
//!
//! [environment]                # baton_env::EnvConfig; default bwrap
//! backend = "bwrap"
//! network = false              # true: commands reach the network (mini's containers do)
//! env = { PAGER = "cat", BASH_ENV = "/root/.bashrc" }   # every command's variables, over
//!                              # the agent_templates file's environment.env
//! env_startup_command = "source /opt/miniconda3/bin/activate testbed"  # before each
//! [environment.limits]
//! episode_snapshot_bytes = 4294967296   # new snapshot bytes per episode (exit snapshot_limit)
//!
//! [models.lc]
//! model = "sim/lc"             # provider/model; every key of a chat model is allowed
//! [models.lc.sim]              # the simulated agent's knobs (skill, malformed, latency_ms)
//! skill = 0.45
//! ```
//!
//! The keys both kinds share are written as a chat experiment writes them (see
//! `crate::dialect`); the older spelling, agent keys at the top level and
//! `[handoff] pairs = [["lc", "hc"]]`, still reads, with a warning.
//!
//! What baton fills in itself: for `sim/` models without `[sim]`, the preset of that
//! name ([`SimAgentSettings::preset`]); the templates' version. Unlike a chat call, an
//! agent call sends no output cap unless `max_tokens` (or the templates' `model_kwargs`)
//! sets one. All of it is stored with the
//! run (the spec text, and the inputs' hashes).

use std::collections::BTreeMap;
use std::path::PathBuf;

use baton_agent::{DEFAULT_COST_LIMIT_USD, DEFAULT_STEP_LIMIT, Protocol, SimAgentSettings};
use baton_env::EnvConfig;
use baton_models::with_did_you_mean;
use baton_types::Interface;
use baton_types::agent::AgentCell;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::RunError;
use crate::spec::ModelSpec;

/// Why an agent experiment cannot batch (`batch`, a model's `batch`, `--batch`).
pub const BATCH_REFUSED: &str = "agent experiments do not use batch APIs: an agent's next call waits on the command its last one ran, so a batch round would hold every episode for the batch's turnaround (hours) per step; run it without batch (nothing was sent)";

/// The most model calls an agent experiment may allow per task.
pub const MAX_STEP_LIMIT: u32 = 10_000;

/// The `kind` that marks an agent experiment.
pub const AGENT_KIND: &str = "agent";

/// One agent experiment, as written in its TOML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// Always `agent`.
    pub kind: String,
    /// A name for the experiment, shown in reports.
    pub name: String,
    /// `agent-sample`, or a path (relative to the experiment file's folder).
    pub dataset: String,
    /// At most this many tasks, in id order; absent means all.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Run the valid tasks of a partly invalid dataset; the tasks left out are stored
    /// with why and listed in the report (`--skip-invalid` sets it too). Default false:
    /// one invalid task stops the run before any call.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_invalid: bool,
    /// Send every model's calls through its batch API (as `batch = true` in a chat
    /// experiment): refused for agent experiments, whose episodes wait on the sandbox
    /// between calls, before any call is made.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
    /// Only these task ids (empty: all).
    #[serde(default)]
    pub tasks: Vec<String>,
    /// Models by name; each runs every task.
    pub models: BTreeMap<String, toml::Table>,
    /// Episodes per (task, model), with distinct seeds; default 1.
    #[serde(default = "one")]
    pub replicates: u32,
    /// Base seed; default 0.
    #[serde(default)]
    pub seed: u64,
    /// Episodes in flight at once; default 2.
    #[serde(default = "two")]
    pub concurrency: usize,
    /// How commands travel: `tool_calls` (default) or `text`.
    #[serde(default)]
    pub protocol: Protocol,
    /// Model calls allowed per task; default 150.
    #[serde(default = "step_limit")]
    pub step_limit: u32,
    /// Spend allowed per task in US dollars; default 3.
    #[serde(default = "cost_limit")]
    pub cost_limit_usd: f64,
    /// A mini-SWE-agent YAML with the templates to use; default baton's own.
    #[serde(default)]
    pub agent_templates: Option<PathBuf>,
    /// A price card in LiteLLM's format laid over the embedded one.
    #[serde(default)]
    pub prices: Option<PathBuf>,
    /// Total time, in seconds, all retries of one run may spend waiting (default 3600).
    #[serde(default = "retry_budget")]
    pub retry_budget_secs: u64,
    /// The sandbox.
    #[serde(default)]
    pub environment: EnvConfig,
    /// The Python with the pinned `swebench` harness installed (a venv's `bin/python`;
    /// relative paths from this file's folder): SWE-bench submissions are scored with the
    /// official harness when their episode ends. Without it they are stored unscored, with
    /// the reason. A run-time setting: it does not change the experiment's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swebench_python: Option<PathBuf>,
    /// The handoff study: every pair in both directions, at each percentile's switch
    /// call, under each interface, after the anchors (every model's single runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<HandoffSpec>,
}

/// The `[handoff]` table of an agent experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoffSpec {
    /// Model pairs `[low-cost, high-capability]` (names from `[models]`): escalation hands
    /// the first's trajectory to the second, downshift the second's to the first.
    pub pairs: Vec<[String; 2]>,
    /// Percentiles (1..=100) of the prefix model's termination-step distribution per
    /// difficulty bucket (nearest rank, at least 1); default 5, 10, 15, 25, 35, 45, 50.
    #[serde(default = "percentiles")]
    pub percentiles: Vec<u32>,
    /// The interfaces to run; default all five.
    #[serde(default = "interfaces")]
    pub interfaces: Vec<Interface>,
    /// Run every prefix live (as the paper did) instead of forking the anchor's first s
    /// calls and its tree after them; `--independent` sets it too.
    #[serde(default)]
    pub independent: bool,
    /// A YAML file replacing baton's handoff texts key for key (relative to this file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub texts: Option<PathBuf>,
}

fn percentiles() -> Vec<u32> {
    baton_report::TERMINATION_PERCENTILES.to_vec()
}

fn interfaces() -> Vec<Interface> {
    vec![
        Interface::Raw,
        Interface::Disclosure,
        Interface::CompactPre,
        Interface::CompactSuf,
        Interface::TrajDrop,
    ]
}

impl HandoffSpec {
    /// Check the pairs against the models and the percentiles' range.
    pub fn check(&self, models: &BTreeMap<String, toml::Table>) -> Result<(), String> {
        if self.pairs.is_empty() {
            return Err("handoff.pairs: name at least one [\"lc\", \"hc\"] pair".into());
        }
        for [lc, hc] in &self.pairs {
            for m in [lc, hc] {
                if !models.contains_key(m) {
                    return Err(format!("handoff.pairs: no model {m:?} in [models]"));
                }
            }
            if lc == hc {
                return Err(format!(
                    "handoff.pairs: [{lc:?}, {hc:?}] pairs a model with itself"
                ));
            }
        }
        if self.percentiles.is_empty() {
            return Err("handoff.percentiles: name at least one".into());
        }
        if let Some(p) = self.percentiles.iter().find(|p| !(1..=100).contains(*p)) {
            return Err(format!("handoff.percentiles: {p} is outside 1..=100"));
        }
        if self.interfaces.is_empty() {
            return Err("handoff.interfaces: name at least one".into());
        }
        Ok(())
    }

    /// Every handoff cell the table describes, in plan order: pairs, then directions
    /// (escalation, the pair's first model sending, then downshift), percentiles and
    /// interfaces; each prefix live when `independent`. A cell's pair and direction are
    /// [`AgentCell::pair`].
    pub fn cells(&self, independent: bool) -> Vec<AgentCell> {
        let mut out = Vec::new();
        for [lc, hc] in &self.pairs {
            for (sender, receiver) in [(lc, hc), (hc, lc)] {
                for &p in &self.percentiles {
                    for &interface in &self.interfaces {
                        out.push(AgentCell::handoff(
                            sender,
                            receiver,
                            p,
                            interface,
                            independent,
                        ));
                    }
                }
            }
        }
        out
    }
}

/// One model of an agent experiment: a chat model's settings and the simulated agent's.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentModel {
    /// Everything but `[sim]`, read as a chat model.
    pub spec: ModelSpec,
    /// The simulated agent's settings, for `sim/` models.
    pub sim: Option<SimAgentSettings>,
}

fn one() -> u32 {
    1
}
fn two() -> usize {
    2
}
fn step_limit() -> u32 {
    DEFAULT_STEP_LIMIT
}
fn cost_limit() -> f64 {
    DEFAULT_COST_LIMIT_USD
}
fn retry_budget() -> u64 {
    3600
}

/// Whether the experiment text says `kind = "agent"` (a text that is not TOML is not).
pub fn is_agent_experiment(text: &str) -> bool {
    crate::experiment::kind_of(text) == baton_types::ExperimentKind::Agent
}

impl AgentSpec {
    /// Parse and check an agent experiment file's text; `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<Self, RunError> {
        let (spec, warnings) = Self::read(source, text)?;
        for w in warnings {
            tracing::warn!("{source}: {w}");
        }
        Ok(spec)
    }

    /// Parse and check `text`, with a line for each older spelling it uses.
    pub(crate) fn read(source: &str, text: &str) -> Result<(Self, Vec<String>), RunError> {
        let err = |message: String| RunError::Spec {
            source_name: source.to_string(),
            message,
        };
        let (spec, warnings): (AgentSpec, _) =
            crate::experiment::dialect::read(text, crate::experiment::dialect::agent)
                .map_err(err)?;
        spec.check().map_err(err)?;
        Ok((spec, warnings))
    }

    /// Check the fields and every model table.
    pub fn check(&self) -> Result<(), String> {
        if self.kind != AGENT_KIND {
            return Err(format!("kind = {:?}: expected \"agent\"", self.kind));
        }
        if self.models.is_empty() {
            return Err("no models: name at least one [models.NAME] with model = ...".into());
        }
        for name in self.models.keys() {
            if self.model(name)?.spec.batch {
                return Err(format!("models.{name}: {BATCH_REFUSED}"));
            }
        }
        if self.batch {
            return Err(format!("batch = true: {BATCH_REFUSED}"));
        }
        crate::spec::check_common(self.replicates, self.concurrency, self.limit)?;
        if !(1..=MAX_STEP_LIMIT).contains(&self.step_limit) {
            return Err(format!(
                "step_limit = {} is outside 1..={MAX_STEP_LIMIT}",
                self.step_limit
            ));
        }
        if let Some(h) = &self.handoff {
            h.check(&self.models)?;
        }
        if !(self.cost_limit_usd.is_finite() && self.cost_limit_usd > 0.0) {
            return Err(format!(
                "cost_limit_usd = {}: must be a positive number of dollars",
                self.cost_limit_usd
            ));
        }
        Ok(())
    }

    /// The model named `name`, read from its table (errors name `models.NAME.KEY`).
    pub fn model(&self, name: &str) -> Result<AgentModel, String> {
        let table = self
            .models
            .get(name)
            .ok_or_else(|| format!("no model {name:?} in [models]"))?;
        let mut rest = table.clone();
        let sim = rest.remove("sim");
        let spec: ModelSpec = rest.try_into().map_err(|e| {
            format!(
                "models.{name}: {}",
                with_did_you_mean(e.to_string().trim_end())
            )
        })?;
        let (provider, id) = spec.provider_and_id();
        if provider.is_empty() || id.is_empty() {
            return Err(format!(
                "models.{name}: model = {:?} is not of the form provider/model",
                spec.model
            ));
        }
        spec.check_settings(&format!("models.{name}"))?;
        let sim = match sim {
            None => None,
            Some(_) if provider != "sim" => {
                return Err(format!(
                    "models.{name}: [sim] settings given for a {provider} model"
                ));
            }
            // the table refines the preset of its id
            Some(v) => Some(
                crate::experiment::sim_table::refine(&SimAgentSettings::preset(id), v)
                    .map_err(|e| format!("models.{name}.sim: {e}"))?,
            ),
        };
        Ok(AgentModel { spec, sim })
    }

    /// The sha256 of the spec's canonical JSON form: what identifies the store. Knobs
    /// that do not change results (concurrency, the retry budget, simulated latency,
    /// per-model concurrency and rate limits) are left out.
    pub fn sha256(&self) -> String {
        let json = serde_json::to_vec(&self.canonical()).expect("a spec always serializes");
        hex::encode(Sha256::digest(json))
    }

    /// The spec as its identity sees it: the run-time settings (concurrency, the retry
    /// budget, rate limits, the harness's Python, a simulated model's latency) left out.
    pub(crate) fn canonical(&self) -> AgentSpec {
        let mut canonical = self.clone();
        canonical.concurrency = 0;
        canonical.retry_budget_secs = 0;
        canonical.swebench_python = None;
        for m in canonical.models.values_mut() {
            for key in [
                "concurrency",
                "requests_per_minute",
                "tokens_per_minute",
                "unusable_retries",
                "allow_http_with_key",
            ] {
                m.remove(key);
            }
            if let Some(toml::Value::Table(sim)) = m.get_mut("sim") {
                sim.remove("latency_ms");
            }
        }
        canonical
    }

    /// Whether any model is simulated.
    pub fn simulated(&self) -> bool {
        self.models
            .values()
            .filter_map(|m| m.get("model").and_then(|v| v.as_str()))
            .any(|m| m.starts_with("sim/"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_types::Direction;

    #[test]
    fn cells_cover_pairs_directions_percentiles_and_interfaces() {
        let spec: HandoffSpec = toml::from_str("pairs = [[\"lc\", \"hc\"]]").unwrap();
        let all = spec.cells(false);
        assert_eq!(all.len(), 2 * 7 * 5);
        assert_eq!(all[0].first_model(), "lc");
        assert_eq!(all[0].label(), "handoff(lc -> hc, p5, raw)");
        assert_eq!(
            all[0].pair(&spec.pairs),
            Some((&spec.pairs[0], Direction::Escalation))
        );
        assert_eq!(all[35].first_model(), "hc");
        assert_eq!(
            all[35].pair(&spec.pairs),
            Some((&spec.pairs[0], Direction::Downshift))
        );
        assert_eq!(
            spec.cells(true)[69].label(),
            "handoff(hc -> lc, p50, traj_drop, independent)"
        );
    }

    const MINIMAL: &str = r#"
        kind = "agent"
        name = "t"
        dataset = "agent-sample"
        [models.lc]
        model = "sim/lc"
        [models.hc]
        model = "sim/hc"
        [models.hc.sim]
        skill = 0.9
    "#;

    #[test]
    fn defaults_fill_the_limits() {
        assert!(is_agent_experiment(MINIMAL));
        let spec = AgentSpec::parse("t.toml", MINIMAL).unwrap();
        assert_eq!(spec.step_limit, 150);
        assert_eq!(spec.protocol, Protocol::ToolCalls);
        assert_eq!(spec.model("hc").unwrap().sim.unwrap().skill, 0.9);
        assert!(spec.model("lc").unwrap().sim.is_none());
        assert!(spec.simulated());
    }

    #[test]
    fn bad_keys_are_named_with_their_model() {
        let err = AgentSpec::parse("t.toml", &MINIMAL.replace("skill = 0.9", "skil = 0.9"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.toml") && err.contains("models.hc.sim"),
            "{err}"
        );
        let err = AgentSpec::parse("t.toml", &format!("{MINIMAL}\n[models.x]\nmodel = \"gpt\""))
            .unwrap_err()
            .to_string();
        assert!(err.contains("models.x"), "{err}");
        assert!(!is_agent_experiment("name = \"chat\""));
    }

    #[test]
    fn the_handoff_table_is_checked_against_the_models() {
        let spec = AgentSpec::parse(
            "t.toml",
            &format!("{MINIMAL}\n[handoff]\npairs = [[\"lc\", \"hc\"]]\n"),
        )
        .unwrap();
        let h = spec.handoff.unwrap();
        assert_eq!(h.percentiles, vec![5, 10, 15, 25, 35, 45, 50]);
        assert_eq!(h.interfaces.len(), 5);
        assert!(!h.independent);
        let err = AgentSpec::parse(
            "t.toml",
            &format!("{MINIMAL}\n[handoff]\npairs = [[\"lc\", \"xx\"]]\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("t.toml") && err.contains("handoff.pairs") && err.contains("xx"),
            "{err}"
        );
        let err = AgentSpec::parse(
            "t.toml",
            &format!("{MINIMAL}\n[handoff]\npairs = [[\"lc\", \"hc\"]]\npercentiles = [0]\n"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("handoff.percentiles"), "{err}");
        // no [handoff]: the identity of existing experiments is unchanged
        assert!(
            !serde_json::to_string(&AgentSpec::parse("t.toml", MINIMAL).unwrap())
                .unwrap()
                .contains("handoff")
        );
    }

    #[test]
    fn latency_does_not_change_the_identity() {
        let a = AgentSpec::parse("t.toml", MINIMAL).unwrap();
        let b = AgentSpec::parse(
            "t.toml",
            &MINIMAL.replace("skill = 0.9", "skill = 0.9\nlatency_ms = 5"),
        )
        .unwrap();
        assert_eq!(a.sha256(), b.sha256());
        let c = AgentSpec::parse("t.toml", &MINIMAL.replace("skill = 0.9", "skill = 0.8")).unwrap();
        assert_ne!(a.sha256(), c.sha256());
    }
}
