//! `baton sim-server`: the simulated models behind real HTTP APIs.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context, Result};
use baton_agent::{SimAgent, SimAgentSettings};
use baton_http::{FaultList, ServedProvider, SimServerConfig};

use crate::Outcome;
use crate::cli::SimServerArgs;
use crate::commands::data::load;
use crate::printer::Printer;

/// The simulated coding agents' presets; each is served as `agent-<preset>`.
const AGENT_PRESETS: [&str; 2] = ["lc", "hc"];

pub fn sim_server(args: SimServerArgs, printer: &Printer) -> Result<Outcome> {
    let dataset = load(&args.dataset)?;
    let mut config = SimServerConfig::new(dataset.tasks);
    config.port = args.port;
    config.latency_ms = args.latency_ms;
    config.fault_rate = args.fault_rate;
    config.seed = args.seed;
    if let Some(list) = &args.faults {
        let faults: FaultList = list.parse().map_err(|e| anyhow::anyhow!("--faults: {e}"))?;
        config.faults = faults.0;
    }
    // The simulated coding agents, served beside the chat sims under their own ids.
    let agent_tasks = baton_agent::load_dataset(&args.agent_dataset)
        .with_context(|| format!("--agent-dataset {}", args.agent_dataset))?
        .tasks;
    let agents: BTreeMap<String, SimAgentSettings> = AGENT_PRESETS
        .iter()
        .map(|p| (format!("agent-{p}"), SimAgentSettings::preset(p)))
        .collect();
    let agent = Arc::new(SimAgent::new(&agent_tasks, agents.clone())?);
    for id in agents.keys() {
        config
            .providers
            .insert(id.clone(), ServedProvider(agent.clone()));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = baton_http::serve(config).await.context("starting the simulated server")?;
        printer.line(&format!(
            "simulated models at {} (OpenAI: /chat/completions and /responses; Anthropic: /messages; coding agents: agent-lc, agent-hc); Ctrl-C stops",
            server.base_url()
        ))?;
        server.run_until_ctrl_c().await.context("serving")?;
        anyhow::Ok(())
    })?;
    Ok(Outcome::Success)
}
