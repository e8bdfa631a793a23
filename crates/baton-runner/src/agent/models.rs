//! The models of an agent experiment: the simulated agent for `sim/...` (one provider
//! for all of them, knowing the run's tasks), else the first provider factory that
//! serves the kind; every model's price is checked before any call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use baton_agent::{AgentTask, SimAgent, SimAgentSettings};
use baton_models::{
    Model, PriceCard, Provider, ProviderConfig, RateLimits, RetryBudget, RetryPolicy, defaults,
};

use super::{AgentRunOptions, AgentSpec};
use crate::RunError;

/// Characters of one observation an agent's prompt can hold at most (mini-SWE-agent's
/// truncation keeps about ten thousand), for the price-tier check.
const OBSERVATION_BOUND: u64 = 12_000;

/// One [`Model`] per name.
pub(crate) fn build(
    spec: &AgentSpec,
    tasks: &[AgentTask],
    card: &PriceCard,
    options: &AgentRunOptions,
) -> Result<BTreeMap<String, Arc<Model>>, RunError> {
    let budget = RetryBudget::new(Duration::from_secs(spec.retry_budget_secs));
    let mut sims = BTreeMap::new();
    let mut specs = BTreeMap::new();
    for name in spec.models.keys() {
        let m = spec.model(name).map_err(|message| RunError::Model {
            name: name.clone(),
            message,
        })?;
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
        let agent = SimAgent::new(tasks, sims).map_err(|e| RunError::Model {
            name: "sim".into(),
            message: format!("{e:#}"),
        })?;
        Some(Arc::new(agent))
    };
    let mut models = BTreeMap::new();
    for (name, m) in specs {
        let err = |message: String| RunError::Model {
            name: name.clone(),
            message,
        };
        let (kind, id) = m.provider_and_id();
        let price_key = m.price_key();
        let price = card.get(&price_key).map_err(|e| err(e.to_string()))?;
        let provider: Arc<dyn Provider> = match (kind, &sim) {
            ("sim", Some(p)) => p.clone(),
            _ => {
                let factory = options
                    .providers
                    .iter()
                    .find(|f| f.kinds().iter().any(|k| k == kind))
                    .ok_or_else(|| err(format!("unknown provider {kind:?} in {:?}", m.model)))?;
                factory
                    .make(&ProviderConfig {
                        name: name.clone(),
                        kind: kind.to_string(),
                        model_id: id.to_string(),
                        base_url: m.base_url.clone(),
                        api_key_env: m.api_key_env.clone(),
                        allow_http_with_key: m.allow_http_with_key,
                    })
                    .map_err(err)?
            }
        };
        let cap = u64::from(m.generate_config().max_tokens.unwrap_or(0));
        let prompt = 8_000 + u64::from(spec.step_limit) * (cap + OBSERVATION_BOUND + 32);
        price
            .check(&price_key, provider.token_classes(), prompt)
            .map_err(|e| err(format!("{e} (checked before any call)")))?;
        let model = Model::new(&name, provider, id, price_key, price, m.concurrency())
            .with_config(m.generate_config())
            .with_retry(RetryPolicy {
                max_unusable_retries: m.unusable_retries.unwrap_or(defaults::UNUSABLE_RETRIES),
                ..RetryPolicy::default()
            })
            .with_interrupt(options.stop.interrupt())
            .with_budget(budget.clone())
            .with_rate_limits(RateLimits {
                requests_per_minute: m.requests_per_minute,
                tokens_per_minute: m.tokens_per_minute,
                adaptive_concurrency: true,
            });
        models.insert(name, Arc::new(model));
    }
    Ok(models)
}
