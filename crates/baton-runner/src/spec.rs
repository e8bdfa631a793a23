//! The experiment file (TOML).
//!
//! ```toml
//! name = "escalation-demo"
//! dataset = "sample"                 # or a path to LiC JSON/JSONL, relative to this file
//! families = ["math", "code"]        # default: all five
//! replicates = 1
//! seed = 7
//! concurrency = 8                     # episodes in flight at once
//! switch_points = ["early", "middle", "late"]   # or explicit K: 2
//! directions = ["escalation", "downshift"]
//! interfaces = ["raw"]
//! baselines = ["full", "concat"]      # LiC's single-turn cells; need templates = "lic"
//!
//! [models.lc]
//! model = "sim/lc"                    # provider/model
//! [models.lc.sim]                     # settings of a simulated model
//! skill = 0.45
//!
//! [models.hc]
//! model = "sim/hc"
//!
//! [[pairs]]
//! low = "lc"
//! high = "hc"
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use baton_models::{BatchRetry, GenerateConfig, SimSettings, defaults};
use baton_types::{Baseline, Direction, Extraction, Family, Interface, SwitchPoint};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The most calls or task groups in flight an experiment may ask for.
pub const MAX_CONCURRENCY: usize = 4096;
/// The most replicates an experiment may ask for.
pub const MAX_REPLICATES: u32 = 1000;
/// The most billed-but-unusable retries a model may be given per call.
pub const MAX_UNUSABLE_RETRIES: u32 = 20;
/// `extra` keys that change how many tokens (or replies) a call is billed for: the cap
/// and the dry run bound a call from the model's own settings, so these are refused.
pub const BILLED_AMOUNT_KEYS: &[&str] = &[
    "n",
    "best_of",
    "num_return_sequences",
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
];

/// One experiment, as written in its TOML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentSpec {
    /// A name for the experiment, shown in reports.
    pub name: String,
    /// The dataset: `sample` for the bundled sample set, or a path to LiC JSON or JSONL
    /// (relative paths are taken from the experiment file's folder).
    pub dataset: String,
    /// Families to run; empty means all five.
    #[serde(default)]
    pub families: Vec<Family>,
    /// At most this many tasks per family; absent means all. A family with more is
    /// sampled with the experiment's `seed`, stratified by `source` for code (HumanEval,
    /// LiveCodeBench) and by Spider difficulty for database, each stratum keeping its
    /// share; the kept tasks run in dataset order.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Run the valid tasks of a partly invalid dataset (and the database tasks whose
    /// databases exist); the tasks left out are stored with why and listed in every
    /// report. Default false: such a dataset stops the run before any call (exit 2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub skip_invalid: bool,
    /// Models by the name pairs use.
    pub models: BTreeMap<String, ModelSpec>,
    /// (low-cost, high-capability) pairs.
    pub pairs: Vec<PairSpec>,
    /// Switch points; default early, middle, late.
    #[serde(default = "default_switch_points")]
    pub switch_points: Vec<SwitchPoint>,
    /// Directions; default both.
    #[serde(default = "default_directions")]
    pub directions: Vec<Direction>,
    /// Handoff interfaces; default `raw`.
    #[serde(default = "default_interfaces")]
    pub interfaces: Vec<Interface>,
    /// LiC's single-turn baselines to run for every model of every pair, e.g.
    /// `["full", "concat"]`: cells `full(M)` and `concat(M)`, one call each with the
    /// family's system prompt and LiC's fully specified or concatenated prompt. They
    /// need `templates = "lic"` (LiC's `*_full_prompt.txt` from `lic_dir`); default none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baselines: Vec<Baseline>,
    /// Episodes per (task, cell), with distinct seeds; default 1.
    #[serde(default = "one")]
    pub replicates: u32,
    /// Base seed; default 0.
    #[serde(default)]
    pub seed: u64,
    /// Task groups in flight at once; default 8. Each model also has its own limit.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Total time, in seconds, all retries of one run may spend waiting (default 3600);
    /// past it a call fails and its episode stays `incomplete`, to be resumed later.
    #[serde(default = "default_retry_budget")]
    pub retry_budget_secs: u64,
    /// Fork handoff prefixes from the matched single-sender episode (default true).
    #[serde(default = "yes")]
    pub fork_prefixes: bool,
    /// The prompt templates: absent for baton's own (`evaluators/`, compiled in), a
    /// folder with an edited copy of them, or `"lic"` for LiC's own system prompts read
    /// from `lic_dir` (final-turn instructions and interface texts stay baton's).
    #[serde(default)]
    pub templates: Option<PathBuf>,
    /// The user's `lost_in_conversation` checkout (the folder holding `prompts/`), read
    /// when `templates = "lic"`; relative to this file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lic_dir: Option<PathBuf>,
    /// How final answers are read: `"rules"` (the default, baton's deterministic
    /// extraction) or `"lic"`, LiC's LLM extraction for math and database: after each
    /// final reply, a JSON-mode call to the `[extractor]` model with LiC's prompt from
    /// `lic_dir`, at temperature 0 unless the extractor sets one (LiC's setting, and the
    /// one temperature baton sends unasked; it is stored with every extraction call). The
    /// other families keep LiC's deterministic extraction. E.g. `extraction = "lic"`.
    #[serde(default, skip_serializing_if = "is_rules")]
    pub extraction: Extraction,
    /// The model that extracts answers under `extraction = "lic"`, a table with the keys
    /// of a `[models.NAME]` table, e.g. `[extractor]` `model = "openai/gpt-4o-mini"` (LiC's
    /// choice) or `model = "sim/hc"`. Its calls are phase `extraction`: stored, priced and
    /// counted in budgets, and reported apart from the episodes' own cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extractor: Option<ModelSpec>,
    /// A price card in LiteLLM's format laid over the embedded one.
    #[serde(default)]
    pub prices: Option<PathBuf>,
    /// Batched models (`batch = true`) send a round once no new call has arrived for
    /// this many milliseconds; default 2,000 ([`defaults::BATCH_GATHER_MS`]), stored with
    /// every batch. E.g. `batch_gather_ms = 500`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_gather_ms: Option<u64>,
    /// The first poll of a submitted batch after this many milliseconds, doubling up to
    /// a minute; default 1,000 ([`defaults::BATCH_POLL_MS`]); never under 10 (0 would be a
    /// busy loop). E.g. `batch_poll_ms = 5000`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_poll_ms: Option<u64>,
    /// Where a batched model retries a call whose batch item failed, expired or was
    /// cancelled: `"round"` (the default, [`BatchRetry::Round`]: in a later round, at batch
    /// rates) or `"direct"` ([`BatchRetry::Direct`]: one direct request, stored without a
    /// batch id and priced at the card's direct rates, which a batched model then needs).
    /// The mode a batch ran under is stored with it. E.g. `batch_retry = "direct"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_retry: Option<BatchRetry>,
    /// How long a batch may run before baton asks the provider to cancel it and, if it
    /// still has not ended, stops polling it with an error (the batch stays recorded, so
    /// a resume collects it): a number with `ms`, `s`, `m` or `h`; default `"24h"`
    /// ([`defaults::BATCH_DEADLINE`]), the providers' own window. E.g.
    /// `batch_deadline = "2h"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_deadline: Option<String>,
    /// The Spider test-suite folder (`<db_id>/*.sqlite`); default
    /// `datasets/spider/databases`, or the bundled sample databases for `dataset = "sample"`.
    #[serde(default)]
    pub spider_dir: Option<PathBuf>,
}

/// One model role.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// `provider/model`, e.g. `sim/lc`, `openai/gpt-4o-mini`, `anthropic/claude-haiku-4-5`.
    pub model: String,
    /// The price-card key; default: the model string for `sim/`, else the part after
    /// the provider.
    #[serde(default)]
    pub price: Option<String>,
    /// Base URL for HTTP providers.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Sampling temperature; default none sent (the provider's default). LiC used 1.0,
    /// the paper 0 for Claude Haiku 4.5: write it to get it.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Nucleus sampling mass; default none sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Output token cap; default LiC's rule: 1000, or 10,000 when the model sets a
    /// `reasoning_effort` or `thinking_budget` ([`defaults::max_tokens`]).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Reasoning effort, for models that take one: sent as OpenAI Chat's
    /// `reasoning_effort` (with `max_completion_tokens`), Responses' `reasoning.effort`
    /// (with `max_output_tokens`), Anthropic's `output_config.effort` (with adaptive
    /// thinking on the models that have it, see `baton-http`'s Anthropic wire docs).
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// Anthropic only: extended thinking with this budget (`thinking: {type: "enabled",
    /// budget_tokens: N}`), at least 1,024 and below `max_tokens`; checked before the
    /// first call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// Keys merged into every request body as given, after baton's own (so they win),
    /// for parameters baton does not know: `extra = { service_tier = "flex" }`.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// A sampling seed to send (OpenAI Chat and compatible servers); default none sent.
    /// The experiment's own `seed` drives replicates and simulated models and is never
    /// sent to a provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Calls in flight at once for this model; default 8 ([`defaults::CONCURRENCY`];
    /// halved on a 429, regained after a window of successes).
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// Requests per minute this model may make; default unlimited.
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    /// Prompt plus output tokens per minute; default unlimited.
    #[serde(default)]
    pub tokens_per_minute: Option<u64>,
    /// Retries of a call whose reply was answered (so billed) but unusable: empty,
    /// truncated, not JSON; default 2 ([`defaults::UNUSABLE_RETRIES`]). Attempts stored
    /// by earlier runs count, so a resume does not pay for them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unusable_retries: Option<u32>,
    /// Send the API key over plain `http://` to a host that is not a loopback address
    /// (default false: such a base URL is refused when the model has a key).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_http_with_key: bool,
    /// Send this model's calls through its provider's batch API (OpenAI's Batch API,
    /// Anthropic's Message Batches) at the card's `*_batches` rates: each turn round of
    /// every episode waiting on the model goes out as one batch. Default false;
    /// `baton run --batch` sets it for every model. E.g. `batch = true`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub batch: bool,
    /// Settings of a simulated model (only for `sim/...`).
    #[serde(default)]
    pub sim: Option<SimSettings>,
}

impl ModelSpec {
    /// The provider kind and the provider-side model id.
    pub fn provider_and_id(&self) -> (&str, &str) {
        self.model
            .split_once('/')
            .unwrap_or(("", self.model.as_str()))
    }

    /// Whether the model is asked to reason (an effort or a thinking budget).
    pub fn reasons(&self) -> bool {
        self.reasoning_effort.is_some() || self.thinking_budget.is_some()
    }

    /// The generation settings sent with every call: exactly the file's, plus the one
    /// value baton fills in, the output cap by LiC's rule ([`defaults::max_tokens`]).
    pub fn generate_config(&self) -> GenerateConfig {
        GenerateConfig {
            temperature: self.temperature,
            max_tokens: Some(defaults::max_tokens(self.max_tokens, self.reasons())),
            reasoning_effort: self.reasoning_effort.clone(),
            seed: self.seed,
            top_p: self.top_p,
            thinking_budget: self.thinking_budget,
            extra: self.extra.clone(),
            json_object: false,
        }
    }

    /// Settings the model's provider would refuse, found before any call: a thinking
    /// budget below 1,024, not below the output cap, or on a provider without it; an
    /// effort Anthropic does not know; `extra` keys that would overwrite the messages or
    /// the model.
    pub(crate) fn check_settings(&self, name: &str) -> Result<(), String> {
        let (provider, _) = self.provider_and_id();
        let cap = defaults::max_tokens(self.max_tokens, self.reasons());
        if let Some(budget) = self.thinking_budget {
            if provider != "anthropic" && provider != "sim" {
                return Err(format!(
                    "{name}: thinking_budget is an Anthropic setting; for {provider} use reasoning_effort (or extra)"
                ));
            }
            if budget < 1024 {
                return Err(format!(
                    "{name}: thinking_budget = {budget} is below Anthropic's minimum of 1024"
                ));
            }
            if budget >= cap {
                return Err(format!(
                    "{name}: thinking_budget = {budget} must be below max_tokens ({cap}); Anthropic refuses a budget that is not"
                ));
            }
        }
        if provider == "anthropic"
            && let Some(e) = &self.reasoning_effort
            && !["low", "medium", "high", "xhigh", "max"].contains(&e.as_str())
        {
            return Err(format!(
                "{name}: reasoning_effort = {e:?} is not one of Anthropic's low, medium, high, xhigh, max"
            ));
        }
        if provider == "anthropic" {
            let (_, id) = self.provider_and_id();
            for (key, set) in [
                ("temperature", self.temperature.is_some()),
                ("top_p", self.top_p.is_some()),
            ] {
                if set && !baton_models::claude::takes_temperature(id) {
                    return Err(format!(
                        "{name}: {id} takes no {key} in the current Anthropic API; leave it out"
                    ));
                }
            }
        }
        if let Some(t) = self.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(format!("{name}: temperature = {t} is outside 0..=2"));
        }
        if let Some(p) = self.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return Err(format!("{name}: top_p = {p} is outside (0, 1]"));
        }
        for (key, value) in [
            ("max_tokens", self.max_tokens.map(u64::from)),
            (
                "requests_per_minute",
                self.requests_per_minute.map(u64::from),
            ),
            ("tokens_per_minute", self.tokens_per_minute),
            ("concurrency", self.concurrency.map(|c| c as u64)),
        ] {
            if value == Some(0) {
                return Err(format!("{name}: {key} = 0 must be at least 1"));
            }
        }
        if let Some(c) = self.concurrency
            && c > MAX_CONCURRENCY
        {
            return Err(format!(
                "{name}: concurrency = {c} is more than {MAX_CONCURRENCY} calls in flight"
            ));
        }
        if let Some(r) = self.unusable_retries
            && r > MAX_UNUSABLE_RETRIES
        {
            return Err(format!(
                "{name}: unusable_retries = {r} is more than {MAX_UNUSABLE_RETRIES}; each is a billed reply"
            ));
        }
        for key in BILLED_AMOUNT_KEYS {
            if self.extra.contains_key(*key) {
                return Err(format!(
                    "{name}: extra.{key} changes what a call is billed, which the spending cap and --dry-run bound from the model's own settings; {}",
                    match *key {
                        "max_tokens" | "max_completion_tokens" | "max_output_tokens" =>
                            "set max_tokens in the model's table instead",
                        _ => "baton asks for one reply per call and cannot take it",
                    }
                ));
            }
        }
        if let Some(tier) = self.extra.get("service_tier")
            && tier.as_str() == Some("priority")
        {
            return Err(format!(
                "{name}: extra.service_tier = \"priority\" is billed above the price card's rates; price it with a card entry of its own (prices = ...) and a model of its own"
            ));
        }
        for key in [
            "model",
            "messages",
            "input",
            "system",
            "instructions",
            "stream",
        ] {
            if self.extra.contains_key(key) {
                return Err(format!(
                    "{name}: extra.{key} would replace what baton sends; it cannot be set there"
                ));
            }
        }
        Ok(())
    }

    /// Calls in flight at once for this model: unbounded in effect when batched
    /// ([`defaults::BATCH_CONCURRENCY`]).
    pub fn concurrency(&self) -> usize {
        if self.batch {
            return defaults::BATCH_CONCURRENCY;
        }
        self.concurrency.unwrap_or(defaults::CONCURRENCY)
    }

    /// The price-card key.
    pub fn price_key(&self) -> String {
        match &self.price {
            Some(p) => p.clone(),
            None => match self.provider_and_id() {
                ("sim", _) => self.model.clone(),
                (_, id) => id.to_string(),
            },
        }
    }
}

/// A low-cost / high-capability pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairSpec {
    /// A name for tables; default `low->high`.
    #[serde(default)]
    pub name: Option<String>,
    /// The low-cost model's name.
    pub low: String,
    /// The high-capability model's name.
    pub high: String,
}

impl PairSpec {
    /// The pair's name.
    pub fn label(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{}->{}", self.low, self.high))
    }
}

fn default_switch_points() -> Vec<SwitchPoint> {
    vec![SwitchPoint::Early, SwitchPoint::Middle, SwitchPoint::Late]
}
fn default_directions() -> Vec<Direction> {
    vec![Direction::Escalation, Direction::Downshift]
}
fn default_interfaces() -> Vec<Interface> {
    vec![Interface::Raw]
}
fn one() -> u32 {
    1
}
fn yes() -> bool {
    true
}
fn is_rules(e: &Extraction) -> bool {
    *e == Extraction::Rules
}
fn default_concurrency() -> usize {
    8
}
fn default_retry_budget() -> u64 {
    3600
}

/// The bounds both kinds of experiment share: `replicates` and `concurrency` in
/// 1..=their maximum, and a `limit` of at least one task.
pub(crate) fn check_common(
    replicates: u32,
    concurrency: usize,
    limit: Option<usize>,
) -> Result<(), String> {
    if !(1..=MAX_REPLICATES).contains(&replicates) {
        return Err(format!(
            "replicates = {replicates} is outside 1..={MAX_REPLICATES}"
        ));
    }
    if !(1..=MAX_CONCURRENCY).contains(&concurrency) {
        return Err(format!(
            "concurrency = {concurrency} is outside 1..={MAX_CONCURRENCY}"
        ));
    }
    if limit == Some(0) {
        return Err("limit = 0 keeps no task; leave it out to run them all".into());
    }
    Ok(())
}

impl ExperimentSpec {
    /// Parse and check an experiment file's text; `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<Self, crate::RunError> {
        let (mut spec, _): (ExperimentSpec, _) =
            crate::experiment::dialect::read(text, crate::experiment::dialect::chat).map_err(
                |message| crate::RunError::Spec {
                    source_name: source.to_string(),
                    message,
                },
            )?;
        // a `sim` table refines its model's preset rather than replacing it
        for (name, table) in crate::experiment::sim_table::chat_sim_tables(text) {
            let m = match name.as_str() {
                "extractor" => spec.extractor.as_mut(),
                _ => spec.models.get_mut(&name),
            };
            let Some(m) = m else { continue };
            let preset = SimSettings::preset(m.provider_and_id().1);
            m.sim = Some(
                crate::experiment::sim_table::refine(&preset, table)
                    .and_then(|s: SimSettings| s.check().map(|()| s))
                    .map_err(|e| crate::RunError::Spec {
                        source_name: source.to_string(),
                        message: match name.as_str() {
                            "extractor" => format!("extractor.sim: {e}"),
                            _ => format!("models.{name}.sim: {e}"),
                        },
                    })?,
            );
        }
        spec.check().map_err(|message| crate::RunError::Spec {
            source_name: source.to_string(),
            message,
        })?;
        Ok(spec)
    }

    /// Check references between fields.
    pub fn check(&self) -> Result<(), String> {
        if self.pairs.is_empty() {
            return Err("no pairs: name at least one [[pairs]] with low and high".into());
        }
        for p in &self.pairs {
            for (role, m) in [("low", &p.low), ("high", &p.high)] {
                if !self.models.contains_key(m) {
                    return Err(format!(
                        "pair {}: {role} = {m:?} is not a key of [models]",
                        p.label()
                    ));
                }
            }
            if p.low == p.high {
                return Err(format!(
                    "pair {}: low and high are the same model",
                    p.label()
                ));
            }
        }
        let named = self.models.iter().map(|(n, m)| (format!("models.{n}"), m));
        let extractor = self.extractor.iter().map(|m| ("extractor".to_string(), m));
        for (name, m) in named.chain(extractor) {
            let (provider, id) = m.provider_and_id();
            if provider.is_empty() || id.is_empty() {
                return Err(format!(
                    "{name}: model = {:?} is not of the form provider/model",
                    m.model
                ));
            }
            if m.sim.is_some() && provider != "sim" {
                return Err(format!(
                    "{name}: [sim] settings given for a {provider} model"
                ));
            }
            m.check_settings(&name)?;
        }
        match (self.extraction, &self.extractor, &self.lic_dir) {
            (Extraction::Lic, None, _) => {
                return Err("extraction = \"lic\" needs an [extractor] table with model = \"provider/model\" (LiC used openai/gpt-4o-mini)".into());
            }
            (Extraction::Lic, _, None) => {
                return Err("extraction = \"lic\" needs lic_dir = PATH: your lost_in_conversation checkout (the folder with prompts/), for LiC's answer-extraction prompts".into());
            }
            (Extraction::Rules, Some(_), _) => {
                return Err("[extractor] is used only with extraction = \"lic\"".into());
            }
            _ => {}
        }
        let lic =
            self.templates.as_deref() == Some(std::path::Path::new(baton_data::lic::LIC_TEMPLATES));
        match (lic, &self.lic_dir) {
            (true, None) => {
                return Err(
                    "templates = \"lic\" needs lic_dir = PATH: your lost_in_conversation checkout (the folder with prompts/)".into(),
                );
            }
            (false, Some(_)) if self.extraction != Extraction::Lic => {
                return Err(
                    "lic_dir is read only with templates = \"lic\" or extraction = \"lic\"".into(),
                );
            }
            _ => {}
        }
        check_common(self.replicates, self.concurrency, self.limit)?;
        for sp in &self.switch_points {
            if *sp == SwitchPoint::At(0) {
                return Err(
                    "switch_points: K = 0 leaves the sender no turn; K counts the sender's turns, from 1"
                        .into(),
                );
            }
        }
        for (key, empty) in [
            ("switch_points", self.switch_points.is_empty()),
            ("directions", self.directions.is_empty()),
            ("interfaces", self.interfaces.is_empty()),
        ] {
            if empty {
                return Err(format!(
                    "{key} = [] leaves no handoff cell to run; leave the key out for its default"
                ));
            }
        }
        if self.interfaces.contains(&Interface::Handover) {
            return Err(
                "interfaces = [.., \"handover\"]: the handover interface commits and lints a working tree at the switch, and a chat experiment has none; it is the agent study's (kind = \"agent\"). Use raw, disclosure, compact_pre, compact_suf or traj_drop here".into(),
            );
        }
        self.batch_deadline()?;
        Ok(())
    }

    /// The experiment's `batch_deadline`, or the default; an error names the key.
    pub fn batch_deadline(&self) -> Result<std::time::Duration, String> {
        match &self.batch_deadline {
            None => Ok(defaults::BATCH_DEADLINE),
            Some(text) => parse_deadline(text).ok_or_else(|| {
                format!(
                    "batch_deadline = {text:?}: not a duration above zero; write a number with ms, s, m or h, e.g. \"24h\""
                )
            }),
        }
    }

    /// The sha256 of the spec's canonical JSON form: what identifies an experiment's
    /// store. Run-time knobs that do not change results (concurrency, rate limits, the
    /// retry budget, simulated latency) are left out.
    pub fn sha256(&self) -> String {
        let mut canonical = self.clone();
        canonical.concurrency = 0;
        canonical.retry_budget_secs = 0;
        canonical.batch_gather_ms = None;
        canonical.batch_poll_ms = None;
        canonical.batch_retry = None;
        canonical.batch_deadline = None;
        if let Some(e) = canonical.extractor.as_mut() {
            e.batch = false;
        }
        for m in canonical.models.values_mut() {
            // batching changes what a call costs, never its reply; each call stores its
            // batch and cost
            m.batch = false;
            m.concurrency = None;
            m.requests_per_minute = None;
            m.tokens_per_minute = None;
            m.unusable_retries = None;
            m.allow_http_with_key = false;
            if let Some(s) = m.sim.as_mut() {
                s.latency_ms = 0;
            }
        }
        let json = serde_json::to_vec(&canonical).expect("a spec always serializes");
        hex::encode(Sha256::digest(json))
    }

    /// Whether any model is simulated.
    pub fn simulated(&self) -> bool {
        self.models
            .values()
            .chain(&self.extractor)
            .any(|m| m.provider_and_id().0 == "sim")
    }
}

/// A duration written as a number with `ms`, `s`, `m` or `h` (`"24h"`, `"90s"`,
/// `"1.5h"`), above zero and at most a year.
fn parse_deadline(text: &str) -> Option<std::time::Duration> {
    let text = text.trim();
    let (number, scale) = [("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)]
        .iter()
        .find_map(|(unit, scale)| {
            let number = text.strip_suffix(unit)?;
            // "ms" also ends in "s"
            (!number.ends_with('m')).then_some((number, *scale))
        })?;
    let seconds = number.trim().parse::<f64>().ok()? * scale;
    (seconds.is_finite() && seconds > 0.0 && seconds <= 366.0 * 86400.0)
        .then(|| std::time::Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        name = "t"
        dataset = "sample"
        [models.lc]
        model = "sim/lc"
        [models.hc]
        model = "sim/hc"
        [models.hc.sim]
        skill = 0.9
        [[pairs]]
        low = "lc"
        high = "hc"
    "#;

    #[test]
    fn defaults_fill_the_protocol() {
        let spec = ExperimentSpec::parse("t.toml", MINIMAL).unwrap();
        assert_eq!(spec.switch_points.len(), 3);
        assert_eq!(spec.directions.len(), 2);
        assert_eq!(spec.interfaces, vec![Interface::Raw]);
        assert!(spec.fork_prefixes);
        assert_eq!(spec.models["lc"].price_key(), "sim/lc");
        assert!(spec.simulated());
    }

    #[test]
    fn unknown_keys_and_bad_references_are_named() {
        let err =
            ExperimentSpec::parse("t.toml", &MINIMAL.replace("high = \"hc\"", "high = \"xx\""))
                .unwrap_err()
                .to_string();
        assert!(err.contains("t.toml") && err.contains("\"xx\""), "{err}");
        let err = ExperimentSpec::parse("t.toml", &format!("{MINIMAL}\nbogus = 1"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("bogus"), "{err}");
    }

    #[test]
    fn concurrency_does_not_change_the_identity() {
        let a = ExperimentSpec::parse("t.toml", MINIMAL).unwrap();
        let mut b = a.clone();
        b.concurrency = 99;
        assert_eq!(a.sha256(), b.sha256());
        b.seed = 3;
        assert_ne!(a.sha256(), b.sha256());
    }
}
