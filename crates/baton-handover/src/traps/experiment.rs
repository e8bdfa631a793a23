//! The trap bench run by agents: scenarios × conditions × models × trials, each trial an
//! agent episode in the sandbox on a freshly built repository, judged by the scenario's
//! probes on the tree the agent left.
//!
//! # The experiment file
//!
//! ```toml
//! name = "trap-bench-sim"
//! handover = "../../shared/handover"   # the Handover checkout, relative to this file
//! trials = 3                           # per scenario × condition × model
//! seed = 2026
//! # scenarios = [...]                  # default: all three, in report order
//! # conditions = [...]                 # default: good, bad, poisoned, none
//! base_rate = 0.5                      # the simulated agent's fall-in chance without a document
//! concurrency = 2                      # trials at a time
//! rubric = "baton"                     # the documents' lint rubric
//! # prices = "prices.json"             # a price-card override, relative to this file
//!
//! [agent]
//! step_limit = 40
//! cost_limit_usd = 1.0
//! protocol = "tool_calls"              # or "text"
//!
//! [models.lc]
//! model = "sim/lc"                     # any provider kind the caller's factories serve
//! # [models.lc.sim] skill = 0.45       # a simulated agent's settings (its preset refined)
//! # base_url, api_key_env, max_tokens, temperature: for real providers
//! ```
//!
//! # A trial
//!
//! [`TrapTask::prepare`] builds the repository in a fresh folder and places the condition's
//! document; the sandbox (`baton-env`'s bubblewrap backend, no network, 60 s per command)
//! starts on it with [`TrapTask::sandbox_env`]; the agent loop ([`baton_agent::AgentLoop`])
//! runs the model from the prepared prompt with seed `hash(seed, scenario, model, trial)`
//! (the condition is left out so that conditions of one trial share the simulated agent's
//! draws); then every trap's probe runs in the same sandbox. The record
//! ([`TrialRecord`]) keeps the per-trap outcome (fell in, clear, no answer), steps, tokens
//! and cost priced by the price card as the agent study prices calls, and the exit status.
//! A trial whose episode failed on the infrastructure's side (a model call that kept
//! failing, a sandbox that did not start) is recorded unfinished with no answers and
//! runs again on the next run.
//!
//! # Results and resume
//!
//! Everything goes to `OUT/results.json` ([`BenchResults`]), rewritten (to a temporary
//! file, then renamed) after every trial: the experiment's name and file, each document's
//! lint, the hashes of the files the trials read, each model's price, and the trials.
//!
//! Each trial record carries its identity ([`crate::traps::identity`]): the sha256 of what
//! decides what it sends and how it is judged (the scenario's files, the condition's
//! document, the model's effective request settings, the `[agent]` table, the seed, the
//! simulated agents' `base_rate`). A rerun with the same `OUT` keeps a finished trial only
//! when the experiment still plans it and its identity is unchanged; a changed one runs
//! again and its record is replaced; one the experiment no longer plans (a removed
//! scenario, condition, model or trial) leaves `results.json` and the report. Before any
//! trial it says what changed ([`Changes`], through [`RunOptions::on_changes`]): the
//! experiment's keys, old → new, compared with the experiment stored in `results.json`,
//! the scenario files or documents whose hash changed, and the counts kept, new,
//! unfinished, re-run (each listed) and removed. A changed price re-prices the kept
//! trials' stored tokens (input, cached, output) and runs nothing; the rubric only
//! re-lints the documents. A `results.json` written before identities (no `identity`
//! field) is adopted: each trial's identity is computed from the experiment stored with
//! it and the files on disk now, so an unchanged rerun runs nothing.
//!
//! # One writer per folder
//!
//! A run holds an exclusive OS lock on `OUT` and on `OUT/baton.lock` ([`super::lock`])
//! from before it reads `results.json` until it returns; a second run on the same folder
//! fails at once with [`Error::Busy`], naming the folder and the holding process.
//! Reading (`traps report`, [`read_results`]) takes no lock.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use baton_agent::{
    ActionEvent, AgentConfig, AgentError, AgentLoop, AgentSink, AgentState, CallEvent, Protocol,
    SimAgent, SimAgentSettings,
};
use baton_env::{BackendKind, EnvConfig, Limits, Setup};
use baton_models::{Model, Price, PriceCard, Provider, ProviderConfig, ProviderFactory};
use baton_types::{Cost, Usage};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::structure::Rubric;
use crate::traps::identity::{self, Changes, Inputs, KeyChange};
use crate::traps::lock::FolderLock;
use crate::traps::{self, Condition, DocumentLint, Outcome, ProbeOptions, TrapTask};

/// The results file in the output folder.
pub const RESULTS_FILE: &str = "results.json";

fn default_trials() -> u32 {
    3
}
fn default_base_rate() -> f64 {
    0.5
}
fn default_concurrency() -> usize {
    1
}

/// The `[agent]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSection {
    /// Model calls per episode.
    pub step_limit: u32,
    /// Spend per episode, in US dollars.
    pub cost_limit_usd: f64,
    /// How commands travel.
    pub protocol: Protocol,
}

impl Default for AgentSection {
    fn default() -> Self {
        AgentSection {
            step_limit: 40,
            cost_limit_usd: 1.0,
            protocol: Protocol::ToolCalls,
        }
    }
}

/// One `[models.NAME]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelEntry {
    /// `provider/model-id` (`sim/lc`, `openai/gpt-4.1-mini`); also the price card's key.
    pub model: String,
    /// A simulated agent's settings, refining its preset.
    #[serde(default)]
    pub sim: Option<toml::Table>,
    /// The provider's base URL.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Output cap per call.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
}

impl ModelEntry {
    fn kind_and_id(&self) -> (&str, &str) {
        self.model.split_once('/').unwrap_or(("", &self.model))
    }
}

/// A trap-bench experiment file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrapExperiment {
    /// Its name.
    pub name: String,
    /// The Handover checkout (relative paths: to the experiment file's folder).
    pub handover: PathBuf,
    /// Trials per scenario × condition × model.
    #[serde(default = "default_trials")]
    pub trials: u32,
    /// The base seed.
    #[serde(default)]
    pub seed: u64,
    /// Scenarios, by name (default: all, in report order).
    #[serde(default)]
    pub scenarios: Vec<String>,
    /// Conditions, by name (default: all).
    #[serde(default)]
    pub conditions: Vec<String>,
    /// The simulated agent's fall-in chance without a document.
    #[serde(default = "default_base_rate")]
    pub base_rate: f64,
    /// Trials at a time.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// The lint rubric (`baton` or `handover-0.4`).
    #[serde(default)]
    pub rubric: Option<String>,
    /// A price-card override file (relative: to the experiment file's folder).
    #[serde(default)]
    pub prices: Option<PathBuf>,
    /// The agent loop's settings.
    #[serde(default)]
    pub agent: AgentSection,
    /// The models, by name.
    pub models: BTreeMap<String, ModelEntry>,
}

fn spec_error(path: &Path, message: impl Into<String>) -> Error {
    Error::TrapBench {
        message: format!("{}: {}", path.display(), message.into()),
    }
}

impl TrapExperiment {
    /// Read and check the experiment file at `path`; relative paths in it are resolved
    /// against its folder.
    pub fn load(path: &Path) -> Result<Self, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let mut exp = Self::parse(path, &text)?;
        let base = path.parent().unwrap_or(Path::new("."));
        if exp.handover.is_relative() {
            exp.handover = base.join(&exp.handover);
        }
        if let Some(p) = exp.prices.as_mut().filter(|p| p.is_relative()) {
            *p = base.join(&*p);
        }
        Ok(exp)
    }

    /// Parse and check an experiment's text (`path` names it in errors; paths stay as
    /// written).
    pub fn parse(path: &Path, text: &str) -> Result<Self, Error> {
        let exp: TrapExperiment =
            toml::from_str(text).map_err(|e| spec_error(path, e.message().to_string()))?;
        if exp.trials == 0 {
            return Err(spec_error(path, "trials: must be at least 1"));
        }
        if exp.models.is_empty() {
            return Err(spec_error(path, "models: name at least one model"));
        }
        if !(0.0..=1.0).contains(&exp.base_rate) {
            return Err(spec_error(path, "base_rate: must be within 0..=1"));
        }
        for s in &exp.scenarios {
            if !traps::scenario_names().contains(&s.as_str()) {
                return Err(spec_error(
                    path,
                    format!(
                        "scenarios: unknown scenario {s:?} (known: {})",
                        traps::scenario_names().join(", ")
                    ),
                ));
            }
        }
        for c in &exp.conditions {
            if Condition::from_name(c).is_none() {
                return Err(spec_error(
                    path,
                    format!(
                        "conditions: unknown condition {c:?} (known: good, bad, poisoned, none)"
                    ),
                ));
            }
        }
        exp.rubric()
            .map_err(|e| spec_error(path, format!("rubric: {e}")))?;
        for (name, m) in &exp.models {
            if !m.model.contains('/') {
                return Err(spec_error(
                    path,
                    format!(
                        "models.{name}.model: write it as provider/model-id, got {:?}",
                        m.model
                    ),
                ));
            }
            m.sim_settings()
                .map_err(|e| spec_error(path, format!("models.{name}.sim: {e}")))?;
        }
        Ok(exp)
    }

    /// The lint rubric.
    pub fn rubric(&self) -> Result<Rubric, String> {
        self.rubric.as_deref().unwrap_or("baton").parse()
    }

    /// The scenarios to run, in report order.
    pub fn scenario_names(&self) -> Vec<String> {
        traps::scenario_names()
            .iter()
            .filter(|n| self.scenarios.is_empty() || self.scenarios.iter().any(|s| s == *n))
            .map(|n| n.to_string())
            .collect()
    }

    /// The conditions to run, in report order.
    pub fn condition_list(&self) -> Vec<Condition> {
        Condition::ALL
            .into_iter()
            .filter(|c| self.conditions.is_empty() || self.conditions.iter().any(|s| s == c.name()))
            .collect()
    }

    /// Every trial the experiment plans, in order.
    pub fn plan(&self) -> Vec<TrialId> {
        let mut out = Vec::new();
        for scenario in self.scenario_names() {
            for condition in self.condition_list() {
                for model in self.models.keys() {
                    for trial in 0..self.trials {
                        out.push(TrialId {
                            scenario: scenario.clone(),
                            condition,
                            model: model.clone(),
                            trial,
                        });
                    }
                }
            }
        }
        out
    }
}

impl ModelEntry {
    /// The simulated agent's settings: its preset (`sim/lc`, `sim/hc`), refined by the
    /// `sim` table.
    pub fn sim_settings(&self) -> Result<SimAgentSettings, String> {
        let preset = SimAgentSettings::preset(self.kind_and_id().1);
        let Some(table) = &self.sim else {
            return Ok(preset);
        };
        let mut base = toml::Table::try_from(preset).map_err(|e| e.to_string())?;
        for (k, v) in table {
            base.insert(k.clone(), v.clone());
        }
        toml::Value::Table(base)
            .try_into()
            .map_err(|e: toml::de::Error| e.message().to_string())
    }
}

/// A trial's identity: what a resume matches on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TrialId {
    /// The scenario.
    pub scenario: String,
    /// The condition.
    pub condition: Condition,
    /// The model's name in the experiment.
    pub model: String,
    /// The trial's index (from 0).
    pub trial: u32,
}

/// One trap's outcome in a trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrapOutcome {
    /// The trap's id.
    pub trap: String,
    /// Fell in, clear, or no answer.
    pub outcome: Outcome,
    /// Why there is no answer, or what the probe printed when it fell in (cut short).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Tokens of a trial's calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Prompt tokens (cached or not).
    pub input: u64,
    /// Of those, the ones read from the provider's prompt cache.
    #[serde(default)]
    pub cached: u64,
    /// Completion tokens.
    pub output: u64,
}

/// One trial's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// Which trial.
    #[serde(flatten)]
    pub id: TrialId,
    /// The seed its calls carried.
    pub seed: u64,
    /// Its identity ([`crate::traps::identity`]): the sha256 of what decides what it sent
    /// and how it was judged. Absent in a `results.json` written before identities; such
    /// a trial adopts the identity computed from the experiment stored with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<String>,
    /// Whether it ran to the end (an unfinished one runs again on a rerun).
    pub finished: bool,
    /// The agent's exit status (`submitted`, `step_limit`, …), or `not_run`.
    pub exit: String,
    /// What went wrong, when something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per trap, in the scenario's order.
    pub outcomes: Vec<TrapOutcome>,
    /// Model calls made.
    pub steps: u32,
    /// Their tokens.
    pub tokens: Tokens,
    /// Their cost in US dollars (the price card's).
    pub cost_usd: f64,
    /// The commands the agent ran, first line of each.
    pub commands: Vec<String>,
    /// Wall time of the trial in milliseconds.
    pub millis: u64,
}

/// `results.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResults {
    /// The experiment's name.
    pub name: String,
    /// The experiment file as read.
    pub experiment: TrapExperiment,
    /// Each scenario's traps, in order: `(scenario, [trap id])`.
    pub traps: Vec<(String, Vec<String>)>,
    /// Each document's lint (none for `none`).
    pub documents: Vec<DocumentRecord>,
    /// The trials, in plan order.
    pub trials: Vec<TrialRecord>,
    /// The hashes of the files the trials read (`scenario NAME`, `document
    /// SCENARIO/CONDITION`), to say on a rerun which changed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, String>,
    /// Each model's price as the trials were priced, to re-price their stored tokens on a
    /// rerun when the price card changed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, Price>,
}

/// One document's lint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentRecord {
    /// The scenario.
    pub scenario: String,
    /// The condition.
    pub condition: Condition,
    /// Its lint: score, validity, per-trap coverage.
    pub lint: DocumentLintRecord,
}

/// A [`DocumentLint`] as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentLintRecord {
    /// The rubric.
    pub rubric: String,
    /// The structure score (0–100).
    pub score: u32,
    /// Whether its header is valid.
    pub valid: bool,
    /// Per trap: `(trap id, covered | contradicted | missing)`.
    pub coverage: Vec<(String, String)>,
}

impl From<DocumentLint> for DocumentLintRecord {
    fn from(l: DocumentLint) -> Self {
        DocumentLintRecord {
            rubric: l.rubric,
            score: l.score,
            valid: l.valid,
            coverage: l
                .coverage
                .into_iter()
                .map(|(id, c)| {
                    let c = serde_json::to_value(c)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    (id, c)
                })
                .collect(),
        }
    }
}

/// Read `DIR/results.json`.
pub fn read_results(dir: &Path) -> Result<BenchResults, Error> {
    let path = dir.join(RESULTS_FILE);
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
        path: path.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| Error::TrapBench {
        message: format!("{}: {e}", path.display()),
    })
}

fn write_results(dir: &Path, results: &BenchResults) -> Result<(), Error> {
    let path = dir.join(RESULTS_FILE);
    let tmp = dir.join(format!("{RESULTS_FILE}.tmp"));
    let text = serde_json::to_string_pretty(results).expect("results serialize");
    std::fs::write(&tmp, text + "\n").map_err(|source| Error::Write {
        path: tmp.clone(),
        source,
    })?;
    std::fs::rename(&tmp, &path).map_err(|source| Error::Write { path, source })
}

/// What [`run`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Trials planned.
    pub planned: usize,
    /// Finished trials kept from an earlier run.
    pub kept: usize,
    /// Trials run now.
    pub ran: usize,
    /// Of those, the ones that did not finish.
    pub unfinished: usize,
    /// What the run found changed before it ran anything (also given to
    /// [`RunOptions::on_changes`]).
    pub changes: Changes,
}

/// A progress callback, called with each trial's record as it ends.
pub type OnTrial = Box<dyn Fn(&TrialRecord) + Send + Sync>;

/// Called once, before any trial runs, with what the run found changed.
pub type OnChanges = Box<dyn Fn(&Changes) + Send + Sync>;

/// How [`run`] runs.
#[derive(Default)]
pub struct RunOptions {
    /// Factories for the providers of models that are not `sim/…`.
    pub providers: Vec<Arc<dyn ProviderFactory>>,
    /// Called after each trial with its record (progress).
    pub on_trial: Option<OnTrial>,
    /// Called before any trial with the changes found (what is kept, new, re-run).
    pub on_changes: Option<OnChanges>,
}

/// The seed of a trial's calls: (seed, scenario, model, trial), not the condition.
pub fn trial_seed(seed: u64, id: &TrialId) -> u64 {
    let u = baton_models::sim::draw_from(
        seed,
        &[
            id.scenario.as_str(),
            id.model.as_str(),
            &id.trial.to_string(),
        ],
        &[],
    );
    (u * (1u64 << 53) as f64) as u64
}

/// Run the experiment file at `experiment` into the folder `out` (created if missing),
/// keeping the finished trials already there.
pub fn run(experiment: &Path, out: &Path, options: &RunOptions) -> Result<RunSummary, Error> {
    let exp = TrapExperiment::load(experiment)?;
    run_experiment(&exp, out, options)
}

/// [`run`] for an experiment already read.
pub fn run_experiment(
    exp: &TrapExperiment,
    out: &Path,
    options: &RunOptions,
) -> Result<RunSummary, Error> {
    std::fs::create_dir_all(out).map_err(|source| Error::Write {
        path: out.to_path_buf(),
        source,
    })?;
    // one writer per folder, for the whole run (released when this returns)
    let _lock = FolderLock::acquire(out)?;
    let all = traps::tasks(&exp.handover.join("bench/scenarios"))?;
    let names = exp.scenario_names();
    let tasks: Vec<TrapTask> = all
        .into_iter()
        .filter(|t| names.iter().any(|n| n == t.name()))
        .collect();
    let rubric = exp
        .rubric()
        .map_err(|message| Error::TrapBench { message })?;
    let mut documents = Vec::new();
    for task in &tasks {
        for condition in exp.condition_list() {
            if let Some(lint) = task.lint(condition, rubric)? {
                documents.push(DocumentRecord {
                    scenario: task.name().to_string(),
                    condition,
                    lint: lint.into(),
                });
            }
        }
    }
    let (models, prices) = build_models(exp, &tasks, options)?;
    let inputs = Inputs::read(&tasks)?;
    let plan = exp.plan();
    let identities: BTreeMap<&TrialId, String> = plan
        .iter()
        .map(|id| {
            let identity = inputs
                .of(exp, id)
                .expect("planned models are the experiment's");
            (id, identity)
        })
        .collect();
    let stored = match read_results(out) {
        Ok(r) => Some(r),
        Err(Error::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let (kept, changes) = sort_stored(exp, stored, &identities, &inputs, &prices)?;
    if let Some(f) = &options.on_changes {
        f(&changes);
    }
    let done: BTreeSet<TrialId> = kept.iter().map(|t| t.id.clone()).collect();
    let todo: Vec<TrialId> = plan.iter().filter(|t| !done.contains(t)).cloned().collect();
    let summary_kept = kept.len();
    let state = Mutex::new(BenchResults {
        name: exp.name.clone(),
        experiment: exp.clone(),
        traps: tasks
            .iter()
            .map(|t| {
                (
                    t.name().to_string(),
                    t.scenario.traps.iter().map(|x| x.id.clone()).collect(),
                )
            })
            .collect(),
        documents,
        trials: kept,
        inputs: inputs.hashes.clone(),
        prices,
    });
    let order: BTreeMap<&TrialId, usize> = plan.iter().enumerate().map(|(i, t)| (t, i)).collect();
    let save = |results: &mut BenchResults| -> Result<(), Error> {
        results
            .trials
            .sort_by_key(|t| order.get(&t.id).copied().unwrap_or(usize::MAX));
        write_results(out, results)
    };
    save(&mut state.lock().expect("results lock"))?;
    let queue = Mutex::new(todo.iter().collect::<std::collections::VecDeque<_>>());
    let failure: Mutex<Option<Error>> = Mutex::new(None);
    let workers = exp.concurrency.clamp(1, todo.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a tokio runtime starts");
                loop {
                    if failure.lock().expect("failure lock").is_some() {
                        return;
                    }
                    let Some(id) = queue.lock().expect("queue lock").pop_front() else {
                        return;
                    };
                    let task = tasks
                        .iter()
                        .find(|t| t.name() == id.scenario)
                        .expect("planned scenarios are loaded");
                    let model = &models[&id.model];
                    let mut record = rt.block_on(run_trial(exp, task, model, id));
                    record.identity = identities.get(id).cloned();
                    if let Some(f) = &options.on_trial {
                        f(&record);
                    }
                    let mut results = state.lock().expect("results lock");
                    results.trials.push(record);
                    if let Err(e) = save(&mut results) {
                        *failure.lock().expect("failure lock") = Some(e);
                        return;
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().expect("failure lock") {
        return Err(e);
    }
    let results = state.into_inner().expect("results lock");
    let ran_ids: BTreeSet<&TrialId> = todo.iter().collect();
    let unfinished = results
        .trials
        .iter()
        .filter(|t| ran_ids.contains(&t.id) && !t.finished)
        .count();
    Ok(RunSummary {
        planned: plan.len(),
        kept: summary_kept,
        ran: todo.len(),
        unfinished,
        changes,
    })
}

/// Sort the stored trials: the finished ones whose identity is unchanged are kept (and
/// re-priced when their model's price changed), the others counted as unfinished, re-run
/// or removed; with the experiment's changed keys.
fn sort_stored(
    exp: &TrapExperiment,
    stored: Option<BenchResults>,
    identities: &BTreeMap<&TrialId, String>,
    inputs: &Inputs,
    prices: &BTreeMap<String, Price>,
) -> Result<(Vec<TrialRecord>, Changes), Error> {
    let mut changes = Changes {
        stored: stored.is_some(),
        ..Changes::default()
    };
    let mut kept = Vec::new();
    if let Some(r) = stored {
        let old = serde_json::to_value(&r.experiment).expect("an experiment serializes");
        let new = serde_json::to_value(exp).expect("an experiment serializes");
        changes.keys = identity::diff(&old, &new);
        for (key, now) in &inputs.hashes {
            if let Some(before) = r.inputs.get(key).filter(|b| *b != now) {
                changes.keys.push(KeyChange {
                    key: format!("{key} (sha256)"),
                    old: before.clone(),
                    new: now.clone(),
                });
            }
        }
        let mut repriced: BTreeMap<String, (f64, f64)> = BTreeMap::new();
        for mut t in r.trials {
            let Some(now) = identities.get(&t.id) else {
                changes.removed += 1;
                continue;
            };
            if !t.finished {
                changes.unfinished += 1;
                continue;
            }
            // a trial stored before identities adopts the one its stored experiment gives
            let before = t
                .identity
                .clone()
                .or_else(|| inputs.of(&r.experiment, &t.id));
            if before.as_ref() != Some(now) {
                changes.rerun.push(t.id.clone());
                continue;
            }
            t.identity = Some(now.clone());
            let old_price = r.prices.get(&t.id.model);
            let new_price = prices.get(&t.id.model);
            if let (Some(old_price), Some(price)) = (old_price, new_price)
                && old_price != price
            {
                let model = &exp.models[&t.id.model].model;
                let usage = Usage {
                    uncached_in: t.tokens.input.saturating_sub(t.tokens.cached),
                    cache_read: t.tokens.cached,
                    output: t.tokens.output,
                    ..Usage::default()
                };
                let cost = price
                    .cost(model, &usage)
                    .map_err(|e| Error::TrapBench {
                        message: format!("re-pricing {}: {e}", t.id.model),
                    })?
                    .usd();
                let sums = repriced.entry(t.id.model.clone()).or_default();
                sums.0 += t.cost_usd;
                sums.1 += cost;
                t.cost_usd = cost;
            }
            kept.push(t);
        }
        changes.repriced = repriced
            .into_iter()
            .map(|(m, (before, after))| (m, before, after))
            .collect();
    }
    changes.kept = kept.len();
    changes.new = identities.len() - changes.kept - changes.unfinished - changes.rerun.len();
    Ok((kept, changes))
}

/// Each model by name, and its price.
type ModelsAndPrices = (BTreeMap<String, Model>, BTreeMap<String, Price>);

/// One [`Model`] per name: the simulated agents through one [`SimAgent`] that knows the
/// scenarios as document tasks, the others through the first factory serving their kind.
fn build_models(
    exp: &TrapExperiment,
    tasks: &[TrapTask],
    options: &RunOptions,
) -> Result<ModelsAndPrices, Error> {
    let bad = |name: &str, message: String| Error::TrapBench {
        message: format!("models.{name}: {message}"),
    };
    let mut card = PriceCard::embedded();
    if let Some(p) = &exp.prices {
        card = card.with_override_file(p).map_err(|e| Error::TrapBench {
            message: format!("prices: {e}"),
        })?;
    }
    let mut sims = BTreeMap::new();
    for m in exp.models.values() {
        let (kind, id) = m.kind_and_id();
        if kind == "sim" {
            sims.insert(
                id.to_string(),
                m.sim_settings()
                    .map_err(|message| Error::TrapBench { message })?,
            );
        }
    }
    let sim: Option<Arc<dyn Provider>> = if sims.is_empty() {
        None
    } else {
        let docs = tasks
            .iter()
            .map(|t| t.document_task(exp.base_rate))
            .collect::<Result<Vec<_>, _>>()?;
        let agent = SimAgent::new(&[], sims)
            .and_then(|a| a.with_document_tasks(docs))
            .map_err(|e| bad("sim", e.to_string()))?;
        Some(Arc::new(agent))
    };
    let mut out = BTreeMap::new();
    let mut prices = BTreeMap::new();
    for (name, m) in &exp.models {
        let (kind, id) = m.kind_and_id();
        let price = card
            .get(&m.model)
            .map_err(|e| bad(name, format!("no price for {:?}: {e}", m.model)))?;
        let provider = if kind == "sim" {
            sim.clone()
                .expect("a simulated model makes the sim provider")
        } else {
            let factory = options
                .providers
                .iter()
                .find(|f| f.kinds().iter().any(|k| k == kind))
                .ok_or_else(|| bad(name, format!("no provider serves the kind {kind:?}")))?;
            factory
                .make(&ProviderConfig {
                    name: name.clone(),
                    kind: kind.to_string(),
                    model_id: id.to_string(),
                    base_url: m.base_url.clone(),
                    api_key_env: m.api_key_env.clone(),
                    allow_http_with_key: false,
                })
                .map_err(|e| bad(name, e))?
        };
        let mut model = Model::new(name.clone(), provider, id, m.model.clone(), price, 4);
        let mut config = model.config().clone();
        config.max_tokens = m.max_tokens;
        config.temperature = m.temperature;
        model = model.with_config(config);
        out.insert(name.clone(), model);
        prices.insert(name.clone(), price);
    }
    Ok((out, prices))
}

/// Counts a trial's calls and keeps its commands.
#[derive(Default)]
struct TrialSink {
    tokens: Tokens,
    commands: Vec<String>,
}

#[async_trait]
impl AgentSink for TrialSink {
    async fn call(&mut self, event: &CallEvent<'_>) -> Result<(), AgentError> {
        let u = &event.completion.response.usage;
        self.tokens.input += u.total_input();
        self.tokens.cached += u.cache_read;
        self.tokens.output += u.output;
        Ok(())
    }
    async fn action(&mut self, event: &ActionEvent<'_>) -> Result<(), AgentError> {
        let first = event.action.command.lines().next().unwrap_or("");
        self.commands.push(first.to_string());
        Ok(())
    }
}

/// The sandbox an episode runs in.
fn agent_config() -> EnvConfig {
    let mut config = EnvConfig::for_backend(BackendKind::Bwrap);
    config.network = false;
    config.limits = Limits {
        timeout_secs: 60.0,
        ..Limits::default()
    };
    config
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Run one trial (see the module docs). Never fails: what went wrong is in the record.
async fn run_trial(
    exp: &TrapExperiment,
    task: &TrapTask,
    model: &Model,
    id: &TrialId,
) -> TrialRecord {
    let started = Instant::now();
    let seed = trial_seed(exp.seed, id);
    let mut record = TrialRecord {
        id: id.clone(),
        seed,
        identity: None,
        finished: false,
        exit: "not_run".into(),
        error: None,
        outcomes: task
            .scenario
            .traps
            .iter()
            .map(|t| TrapOutcome {
                trap: t.id.clone(),
                outcome: Outcome::NoAnswer,
                note: Some("the episode did not run to the end".into()),
            })
            .collect(),
        steps: 0,
        tokens: Tokens::default(),
        cost_usd: 0.0,
        commands: Vec::new(),
        millis: 0,
    };
    let result = episode(exp, task, model, id, seed, &mut record).await;
    if let Err(e) = result {
        record.error = Some(format!("{e:#}"));
    }
    record.millis = millis(started);
    record
}

async fn episode(
    exp: &TrapExperiment,
    task: &TrapTask,
    model: &Model,
    id: &TrialId,
    seed: u64,
    record: &mut TrialRecord,
) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::Builder::new()
        .prefix("baton-trap-")
        .tempdir()
        .map_err(|e| format!("no temporary folder: {e}"))?;
    // the sandbox may run as another user: the folder must be readable
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot open the temporary folder: {e}"))?;
    let prepared = task
        .prepare(id.condition, &dir.path().join("repo"))
        .map_err(|e| e.to_string())?;
    let mut setup = Setup::tree(&prepared.repo);
    setup.env = TrapTask::sandbox_env();
    let env = baton_env::start(&agent_config(), &setup)
        .map_err(|e| format!("the sandbox did not start: {e}"))?;
    let mut env = Some(env);
    let config = AgentConfig {
        protocol: exp.agent.protocol,
        step_limit: exp.agent.step_limit,
        cost_limit: Cost::from_usd(exp.agent.cost_limit_usd),
        ..AgentConfig::default()
    };
    let task_id = format!("{}/{}/{}#{}", id.scenario, id.condition, id.model, id.trial);
    let mut state = AgentState::start_with(&config, &prepared.prompt).map_err(|e| e.to_string())?;
    let agent = AgentLoop {
        config: &config,
        task_id: &task_id,
        seed: Some(seed),
        blobs: None,
        prior_unusable: 0,
    };
    let mut sink = TrialSink::default();
    let outcome = agent.run(model, &mut env, &mut state, &mut sink).await;
    record.steps = state.calls;
    record.cost_usd = state.cost.usd();
    record.tokens = sink.tokens;
    record.commands = sink.commands;
    let outcome = outcome.map_err(|e| format!("{e:#}"))?;
    record.exit = outcome.exit.name().to_string();
    record.error = outcome.error;
    let mut env = env.expect("the loop hands the environment back");
    let probes = task
        .probe(env.as_mut(), &ProbeOptions::default())
        .map_err(|e| e.to_string());
    let _ = env.close();
    record.outcomes = probes?
        .into_iter()
        .map(|p| TrapOutcome {
            note: match p.outcome {
                Outcome::NoAnswer => p.note,
                Outcome::FellIn => Some(p.stdout.chars().take(200).collect()),
                Outcome::Clear => None,
            },
            trap: p.trap,
            outcome: p.outcome,
        })
        .collect();
    record.finished = true;
    Ok(())
}
