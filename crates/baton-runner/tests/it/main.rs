//! Runner behaviour on real stores, with the simulated models; and the simulated
//! models on the sample set.

mod agent_study;
mod answer_key;
mod baselines;
mod errors;
mod extraction;
mod forking;
mod interfaces;
mod results;
mod sim;

use std::path::Path;

use baton_runner::{ExperimentSpec, RunOptions, RunSummary, Runner};

/// A small experiment on the sample set: `limit` tasks per family, every switch point,
/// both directions.
pub fn spec_text(limit: usize, replicates: u32, fork: bool) -> String {
    format!(
        r#"
name = "it"
dataset = "sample"
limit = {limit}
replicates = {replicates}
seed = 11
fork_prefixes = {fork}
[models.lc]
model = "sim/lc"
[models.hc]
model = "sim/hc"
[[pairs]]
low = "lc"
high = "hc"
"#
    )
}

pub async fn run(out: &Path, text: &str) -> RunSummary {
    let spec = ExperimentSpec::parse("it.toml", text).expect("valid spec");
    let runner = Runner::prepare(spec, RunOptions::new(out, ".", text))
        .await
        .expect("prepared");
    runner.run().await.expect("run finished")
}
