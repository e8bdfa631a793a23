//! `baton sim-server`: the simulated models behind real HTTP APIs.

use anyhow::{Context, Result};
use baton_http::{FaultList, SimServerConfig};

use crate::Outcome;
use crate::cli::SimServerArgs;
use crate::commands::data::load;
use crate::printer::Printer;

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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = baton_http::serve(config).await.context("starting the simulated server")?;
        printer.line(&format!(
            "simulated models at {} (OpenAI: /chat/completions and /responses; Anthropic: /messages); Ctrl-C stops",
            server.base_url()
        ))?;
        server.run_until_ctrl_c().await.context("serving")?;
        anyhow::Ok(())
    })?;
    Ok(Outcome::Success)
}
