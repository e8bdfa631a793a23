//! `baton sim-server`: the simulated models behind real HTTP APIs.

use std::collections::BTreeMap;
use std::sync::Arc;

use std::time::Duration;

use anyhow::{Context, Result};
use axum::http::{HeaderMap, HeaderValue};
use baton_agent::{SimAgent, SimAgentSettings};
use baton_batch::{BatchApi, BatchService, ServiceConfig};
use baton_http::{FaultList, ServedProvider, SimAnswerer, SimServerConfig};

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
    for (name, rate) in [
        ("--batch-fail-rate", args.batch_fail_rate),
        ("--batch-expire-rate", args.batch_expire_rate),
    ] {
        anyhow::ensure!(
            (0.0..=1.0).contains(&rate),
            "{name} {rate} is outside 0..=1"
        );
    }
    let batches = ServiceConfig {
        turnaround: Duration::from_millis(args.batch_turnaround_ms),
        fail_rate: args.batch_fail_rate,
        expire_rate: args.batch_expire_rate,
        seed: args.seed,
        create_latency: Duration::from_millis(args.batch_create_latency_ms),
        faults: match &args.batch_faults {
            Some(faults) => faults
                .parse()
                .map_err(|e: String| anyhow::anyhow!("--batch-faults: {e}"))?,
            None => Default::default(),
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = baton_http::serve_with(config, |answerer| batch_routes(answerer, batches))
            .await
            .context("starting the simulated server")?;
        printer.line(&format!(
            "simulated models at {} (OpenAI: /chat/completions and /responses, batches at /files and /batches; Anthropic: /messages and /messages/batches; coding agents: agent-lc, agent-hc); Ctrl-C stops",
            server.base_url()
        ))?;
        server.run_until_ctrl_c().await.context("serving")?;
        anyhow::Ok(())
    })?;
    Ok(Outcome::Success)
}

/// Both batch APIs in memory, each item answered as the direct route would answer it
/// (an Anthropic item with the `anthropic-version` its batch request carried).
fn batch_routes(answerer: SimAnswerer, config: ServiceConfig) -> axum::Router {
    let service = BatchService::new(
        config,
        Arc::new(move |api, body| {
            let mut headers = HeaderMap::new();
            if api == BatchApi::Anthropic {
                headers.insert("anthropic-version", HeaderValue::from_static("2023-06-01"));
            }
            answerer.answer(api.endpoint(), &headers, body)
        }),
    );
    service.router()
}
