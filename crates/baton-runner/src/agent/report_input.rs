//! Reading an agent store into `baton-report`'s agent report input.

use std::path::Path;

use baton_report::{
    AgentEpisodeRecord, AgentReportInput, HandoverLint, StudyEpisode, StudyInput, StudyThreshold,
};
use baton_store::{AgentCell, AgentEpisodeRow, Reader};
use baton_types::EpisodeStatus;

use crate::agent::AgentSpec;

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
    let episodes = in_report_order(reader.agent_episodes()?)
        .into_iter()
        .filter(|e| matches!(e.cell, AgentCell::Single { .. }))
        .map(|e| {
            let finished = e.end.is_some() && e.outcome.status != EpisodeStatus::Incomplete;
            AgentEpisodeRecord {
                task_id: e.task_id,
                model: e.model,
                bucket: e.difficulty.name().to_string(),
                replicate: e.replicate,
                exit: e
                    .end
                    .filter(|_| finished)
                    .map(|end| end.exit.name().to_string()),
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

/// Episodes by task, cell and replicate: the report's sums (floating point, so their
/// order shows in the last digits) and bootstrap draws never depend on the order the
/// episodes were stored in, which concurrency decides, and which differs between a
/// whole run and the merge of its parts.
fn in_report_order(mut episodes: Vec<AgentEpisodeRow>) -> Vec<AgentEpisodeRow> {
    episodes.sort_by_cached_key(|e| (e.task_id.clone(), e.cell.label(), e.replicate));
    episodes
}

/// The bootstrap replicates of the study report (the paper's).
pub const STUDY_BOOTSTRAP: usize = 10_000;

/// The handoff study's input from the store at `store_path`, when its experiment has a
/// `[handoff]` table. Costs per phase come from the store: a forked prefix is the
/// anchor's calls `0..s` and their billed attempts, the rest the episode's own calls and
/// attempts by phase; the total is the episode's attributed cost, as the run stored it.
pub fn study_input(store_path: &Path, bootstrap: usize) -> Result<Option<StudyInput>, RunError> {
    if !store_path.exists() {
        return Err(RunError::NoResults(store_path.to_path_buf()));
    }
    let reader = Reader::open(store_path)?;
    let experiment = reader.experiment()?;
    let spec = AgentSpec::parse("the stored experiment", &experiment.meta.spec_toml)?;
    let Some(handoff) = spec.handoff else {
        return Ok(None);
    };
    // the switch calls of the pairs and percentiles the experiment has (a removed
    // pair's or percentile's stay stored beside its retired episodes)
    let pairs: std::collections::BTreeSet<String> = handoff
        .pairs
        .iter()
        .map(|[lc, hc]| super::handoff::pair_label(lc, hc))
        .collect();
    let thresholds = reader
        .agent_thresholds()?
        .into_iter()
        .filter(|t| pairs.contains(&t.pair) && handoff.percentiles.contains(&t.p))
        .map(|t| StudyThreshold {
            pair: t.pair,
            direction: t.direction,
            bucket: t.bucket,
            p: t.p,
            s: t.s,
        })
        .collect();
    let mut lints: std::collections::HashMap<i64, baton_store::HandoverLintRow> = reader
        .agent_handover_lints()?
        .into_iter()
        .map(|l| (l.episode_id, l))
        .collect();
    let episodes = in_report_order(reader.agent_episodes()?)
        .into_iter()
        .map(|e| {
            let finished = e.end.is_some() && e.outcome.status != EpisodeStatus::Incomplete;
            let handover = lints.remove(&e.id).map(|l| HandoverLint {
                score: l.score,
                valid: l.valid,
                verdict: l.verdict,
                claims: l.claims.into_iter().map(|c| c.class).collect(),
            });
            let k = e.k.unwrap_or(0);
            let steps = if e.forked_from.is_some() {
                k + e.calls
            } else {
                e.calls
            };
            let switch = e.switch.as_ref().map(|r| r.switch);
            let fired = switch.map(|s| s.fired);
            StudyEpisode {
                task_id: e.task_id,
                bucket: e.difficulty,
                replicate: e.replicate,
                cell: e.cell,
                finished,
                resolved: e
                    .outcome
                    .verdict
                    .as_ref()
                    .filter(|_| finished)
                    .and_then(|v| v.is_correct),
                steps,
                suffix_steps: if fired == Some(true) {
                    steps.saturating_sub(k)
                } else {
                    0
                },
                cost: e.outcome.cost_attributed,
                phases: [
                    e.forked_prefix + e.phase_paid[0],
                    e.phase_paid[1],
                    e.phase_paid[2],
                ],
                switch,
                handover,
            }
        })
        .collect();
    Ok(Some(StudyInput {
        pairs: handoff.pairs.into_iter().map(|[lc, hc]| (lc, hc)).collect(),
        thresholds,
        episodes,
        bootstrap,
        seed: spec.seed,
    }))
}
