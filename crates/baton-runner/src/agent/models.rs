//! The models of an agent experiment: the simulated agent for `sim/...` (one provider
//! for all of them, knowing the run's tasks), else the first provider factory that
//! serves the kind; every model's price is checked before any call.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use baton_agent::{AgentTask, SimAgent, SimAgentSettings};
use baton_models::{Model, PriceCard, Provider, RetryBudget};

use super::{AgentRunOptions, AgentSpec};
use crate::RunError;
use crate::setup::{ModelContext, RetryEvents, build_model};

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
    let cx = ModelContext {
        providers: &options.providers,
        stop: &options.stop,
        budget,
        events: Arc::new(RetryEvents(options.observer.clone())),
    };
    let mut models = BTreeMap::new();
    for (name, m) in specs {
        let model = build_model(&name, &m, sim.as_ref(), card, &cx, |cap| {
            8_000 + u64::from(spec.step_limit) * (cap + OBSERVATION_BOUND + 32)
        })?;
        models.insert(name, Arc::new(model));
    }
    Ok(models)
}
