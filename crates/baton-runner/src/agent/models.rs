//! The models of an agent experiment: the simulated agent for `sim/...` (one provider
//! for all of them, knowing the run's tasks), else the first provider factory that
//! serves the kind; every model's price is checked before any call.
//!
//! # Generation settings
//!
//! An agent call carries exactly what the experiment (and the templates file's
//! `model.model_kwargs`) configure, and nothing baton makes up: unlike a chat call it has
//! no default output cap, since a cap the user did not ask for turns every longer reply
//! into a format error. The keys of `model_kwargs` fill what the model's own table leaves
//! unset (`temperature`, `top_p`, `max_tokens` / `max_completion_tokens`,
//! `reasoning_effort`, `seed`); LiteLLM's own switches (`drop_params`, …) are not request
//! parameters and are not sent; every other key goes into the request body as given
//! (`parallel_tool_calls`). Anthropic's API requires an output cap, so an Anthropic
//! model must set `max_tokens` (refused before any call otherwise). For the spending cap
//! an uncapped call is reserved at [`defaults::UNCAPPED_OUTPUT_BOUND`] output tokens
//! (the ledger's rule, `crate::ledger::output_cap`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use baton_agent::{AgentTask, SimAgent, SimAgentSettings};
use baton_models::{GenerateConfig, Model, PriceCard, Provider, RetryBudget, defaults};
use serde_json::{Map, Value};

use super::AgentSpec;
use crate::RunError;
use crate::RunOptions;
use crate::setup::{ModelContext, RetryEvents, build_model};
use crate::spec::ModelSpec;

/// Characters of one observation an agent's prompt can hold at most (mini-SWE-agent's
/// truncation keeps about ten thousand), for the price-tier check.
const OBSERVATION_BOUND: u64 = 12_000;

/// `model_kwargs` keys that configure LiteLLM itself, not the request.
const LITELLM_ONLY: [&str; 6] = [
    "drop_params",
    "num_retries",
    "api_base",
    "api_key",
    "custom_llm_provider",
    "timeout",
];

/// The settings an agent call of `m` sends: the model table's, `kwargs` (a templates
/// file's `model.model_kwargs`) for what it leaves unset, and no output cap unless one
/// of them sets it.
pub(crate) fn agent_generate_config(m: &ModelSpec, kwargs: &Map<String, Value>) -> GenerateConfig {
    let mut c = m.generate_config();
    c.max_tokens = m.max_tokens;
    for (key, value) in kwargs {
        let int = || value.as_u64();
        match key.as_str() {
            k if LITELLM_ONLY.contains(&k) => {}
            "temperature" => c.temperature = c.temperature.or(value.as_f64()),
            "top_p" => c.top_p = c.top_p.or(value.as_f64()),
            "max_tokens" | "max_completion_tokens" => {
                c.max_tokens = c.max_tokens.or(int().and_then(|n| u32::try_from(n).ok()))
            }
            "reasoning_effort" => {
                c.reasoning_effort = c
                    .reasoning_effort
                    .take()
                    .or(value.as_str().map(str::to_string))
            }
            "seed" => c.seed = c.seed.or(int()),
            _ => {
                c.extra.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    c
}

/// One [`Model`] per name.
pub(crate) fn build(
    spec: &AgentSpec,
    tasks: &[AgentTask],
    card: &PriceCard,
    options: &RunOptions,
    kwargs: &Map<String, Value>,
) -> Result<BTreeMap<String, Arc<Model>>, RunError> {
    let budget = RetryBudget::new(Duration::from_secs(spec.retry_budget_secs));
    let mut sims = BTreeMap::new();
    let mut specs = BTreeMap::new();
    for name in spec.models.keys() {
        // its errors name the key (`models.NAME`) already
        let mut m = spec.model(name).map_err(|message| RunError::Spec {
            source_name: options.source_name.clone(),
            message,
        })?;
        // a part's models send under its share of each rate limit
        options.part_model_limits(&mut m.spec);
        let (kind, id) = m.spec.provider_and_id();
        if kind == "sim" {
            sims.insert(
                id.to_string(),
                m.sim.unwrap_or_else(|| SimAgentSettings::preset(id)),
            );
        }
        specs.insert(name.clone(), m.spec);
    }
    let sim: Option<Arc<dyn Provider>> = if sims.is_empty() {
        None
    } else {
        let agent = SimAgent::new(tasks, sims).map_err(|e| {
            keyed(
                options,
                RunError::Model {
                    name: "sim".into(),
                    message: format!("{e:#}"),
                },
            )
        })?;
        Some(Arc::new(agent))
    };
    let cx = ModelContext {
        providers: &options.providers,
        stop: &options.stop,
        budget,
        events: Arc::new(RetryEvents(options.observer.clone())),
    };
    let mut models = BTreeMap::new();
    for (name, m) in specs {
        let config = agent_generate_config(&m, kwargs);
        if m.provider_and_id().0 == "anthropic" && config.max_tokens.is_none() {
            return Err(keyed(
                options,
                RunError::Model {
                    name: name.clone(),
                    message: "Anthropic's API requires an output cap and an agent call sends none unless configured; set max_tokens (e.g. 64000)".into(),
                },
            ));
        }
        let cap = config
            .max_tokens
            .map_or(defaults::UNCAPPED_OUTPUT_BOUND, u64::from);
        let model = build_model(&name, &m, sim.as_ref(), card, &cx, |_| {
            8_000 + u64::from(spec.step_limit) * (cap + OBSERVATION_BOUND + 32)
        })
        .map_err(|e| keyed(options, e))?
        .with_config(config);
        models.insert(name, Arc::new(model));
    }
    Ok(models)
}

/// A model's setup error under the experiment file's key it is about (`models.NAME`; the
/// simulated provider's, under `models`): the one layer that names the model.
pub(crate) fn keyed(options: &RunOptions, e: RunError) -> RunError {
    match &e {
        RunError::Model { name, .. } if name == "sim" => options.setting("models".into(), e),
        RunError::Model { name, .. } => {
            let key = format!("models.{name}");
            options.setting(key, e)
        }
        _ => e,
    }
}
