//! Reading an agent store into `baton-report`'s agent report input.

use std::path::Path;

use baton_report::{AgentEpisodeRecord, AgentReportInput};
use baton_store::Reader;
use baton_types::EpisodeStatus;

use crate::RunError;

/// The agent report's input from the store at `store_path`. An episode is finished
/// when its end is stored; a finished one without a verdict (`unscored`, `errored`
/// scoring) has no `resolved`.
pub fn agent_report_input(store_path: &Path) -> Result<AgentReportInput, RunError> {
    if !store_path.exists() {
        return Err(RunError::NoResults(store_path.to_path_buf()));
    }
    let reader = Reader::open(store_path)?;
    let experiment = reader.experiment()?;
    let simulated = experiment.meta.simulated || reader.served_by_simulated_model()?;
    let episodes = reader
        .agent_episodes()?
        .into_iter()
        .map(|e| {
            let finished = e.end.is_some() && e.outcome.status != EpisodeStatus::Incomplete;
            AgentEpisodeRecord {
                task_id: e.task_id,
                model: e.model,
                bucket: e.difficulty,
                replicate: e.replicate,
                exit: e.end.filter(|_| finished).map(|end| end.exit),
                resolved: e
                    .outcome
                    .verdict
                    .as_ref()
                    .filter(|_| finished)
                    .and_then(|v| v.is_correct),
                steps: e.calls,
                paid: e.paid,
                reason: e.outcome.reason,
            }
        })
        .collect();
    Ok(AgentReportInput {
        title: experiment.meta.name,
        simulated,
        episodes,
    })
}
