//! From a store to the report's input: the adapter between `baton-store` and
//! `baton-report`.
//!
//! It lives here because the rules it applies are the runner's: which pairs the
//! experiment file names, and how forking splits an episode's cost. `baton-report` stays
//! pure (it reads no store), and the binary only prints.

use std::path::Path;

use baton_report::{
    BootstrapConfig, EpisodeCalls, EpisodeRecord, PairSpec, ReportInput, SkippedTask,
};
use baton_store::{EpisodeRow, Reader, StoreError};
use baton_types::{Cell, Cost, Phase};

use crate::RunError;
use crate::spec::ExperimentSpec;

/// Read the store at `path` into a [`ReportInput`]: the stored experiment's name and
/// pairs, and every episode in any status, with `bootstrap` as given. The report is
/// marked simulated when the experiment named a `sim/...` model or any stored reply was
/// served by one (an HTTP provider pointed at `baton sim-server`).
///
/// A handoff episode's `prefix_cost` (what the sender's turns 1..=K cost at the
/// sender's rates) is [`prefix_cost`] of what it paid in its own prefix calls and what
/// it was attributed for a forked prefix. No request is read.
pub fn report_input(
    path: &Path,
    bootstrap: Option<BootstrapConfig>,
) -> Result<ReportInput, RunError> {
    if !path.exists() {
        return Err(RunError::NoResults(path.to_path_buf()));
    }
    let reader = Reader::open(path)?;
    let exp = reader.experiment()?.meta;
    let spec = ExperimentSpec::parse(
        &format!("{} (stored experiment)", path.display()),
        &exp.spec_toml,
    )?;
    let paid = reader.paid_by_phase()?;
    let figures = reader.call_figures()?;
    let episodes = reader
        .episodes()?
        .into_iter()
        .map(|e| {
            let own = paid
                .get(&(e.id, Phase::Prefix))
                .copied()
                .unwrap_or_default();
            let f = figures.get(&e.id).copied().unwrap_or_default();
            let failed = e
                .outcome
                .verdict
                .as_ref()
                .is_some_and(|v| crate::is_failed_extraction(v.rule.as_deref()));
            let calls = EpisodeCalls {
                input_tokens: f.input_tokens,
                cache_read_tokens: f.cache_read_tokens,
                empty_replies: f.empty_replies,
                cut_replies: f.cut_replies,
                extraction_calls: f.extraction_calls,
                extraction_cost: paid
                    .get(&(e.id, Phase::Extraction))
                    .copied()
                    .unwrap_or_default(),
                extraction_failed: u64::from(failed),
            };
            record(path, e, own, calls)
        })
        .collect::<Result<_, _>>()?;
    let simulated = exp.simulated || reader.served_by_simulated_model()?;
    let mut notes = Vec::new();
    if simulated {
        let without: usize = reader
            .tasks()?
            .iter()
            .filter(|t| {
                t.family == baton_types::Family::Code
                    && serde_json::from_str::<serde_json::Value>(&t.sample_json)
                        .map(|v| v.get(baton_models::REFERENCE_SOLUTION_KEY).is_none())
                        .unwrap_or(true)
            })
            .count();
        if without > 0 {
            notes.push(format!(
                "{without} code task(s) have no reference solution (LiC's own code items): simulated models can only answer them wrongly, so the code family's simulated scores are uninformative."
            ));
        }
    }
    Ok(ReportInput {
        title: exp.name,
        simulated,
        notes,
        pairs: spec
            .pairs
            .iter()
            .map(|p| PairSpec {
                name: p.label(),
                lc: p.low.clone(),
                hc: p.high.clone(),
            })
            .collect(),
        episodes,
        bootstrap,
        spend: Some(reader.spend()?),
        skipped_tasks: reader
            .skipped_tasks()?
            .into_iter()
            .map(|(task_id, reason)| SkippedTask { task_id, reason })
            .collect(),
    })
}

/// The cost of a handoff episode's sender turns: its own prefix calls (an independent
/// prefix) plus the forked part of its attributed cost (attributed − paid), which is
/// exactly what the anchor paid for turns 1..=K. `None` for an anchor or a baseline.
pub fn prefix_cost(cell: &Cell, own_prefix: Cost, attributed: Cost, paid: Cost) -> Option<Cost> {
    match cell {
        Cell::Single { .. } | Cell::Baseline { .. } => None,
        Cell::Handoff { .. } => Some(own_prefix + (attributed - paid)),
    }
}

fn record(
    path: &Path,
    e: EpisodeRow,
    own_prefix: Cost,
    calls: EpisodeCalls,
) -> Result<EpisodeRecord, RunError> {
    let cell: Cell = serde_json::from_str(&e.init.cell_json).map_err(|err| StoreError::Decode {
        path: path.to_path_buf(),
        what: format!("episodes.cell_json of episode {}", e.id),
        message: err.to_string(),
    })?;
    let o = e.outcome;
    let no_answer = o.verdict.as_ref().is_some_and(|v| v.no_answer);
    Ok(EpisodeRecord {
        no_answer,
        rule: o.verdict.as_ref().and_then(|v| v.rule.clone()),
        prefix_cost: prefix_cost(&cell, own_prefix, o.cost_attributed, o.cost_paid),
        calls,
        task_id: e.init.task_id,
        family: e.family,
        cell,
        replicate: e.init.replicate,
        status: o.status,
        score: o.verdict.as_ref().map(|v| v.score),
        cost_attributed: o.cost_attributed,
        cost_paid: o.cost_paid,
        n_turns: e.n_turns as usize,
        k: e.init.k.map(|k| k as usize),
        reason: o.reason.or(o.verdict.and_then(|v| v.error)),
    })
}

#[cfg(test)]
mod tests {
    use baton_types::{Interface, SwitchPoint};

    use super::*;

    #[test]
    fn a_prefix_costs_what_was_paid_for_it_here_or_in_the_anchor() {
        let handoff = Cell::handoff("lc", "hc", SwitchPoint::Early, Interface::Raw);
        // forked: nothing paid here for the prefix, 30 attributed on top of 50 paid
        assert_eq!(
            prefix_cost(&handoff, Cost::ZERO, Cost(80), Cost(50)),
            Some(Cost(30))
        );
        // independent: the prefix calls were paid here, attributed = paid
        assert_eq!(
            prefix_cost(&handoff, Cost(30), Cost(80), Cost(80)),
            Some(Cost(30))
        );
        assert_eq!(
            prefix_cost(&Cell::single("lc"), Cost(30), Cost(30), Cost(30)),
            None
        );
    }
}
