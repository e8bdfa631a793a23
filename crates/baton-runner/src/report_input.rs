//! From a store to the report's input: the adapter between `baton-store` and
//! `baton-report`.
//!
//! It lives here because the rules it applies are the runner's: which pairs the
//! experiment file names, and how forking splits an episode's cost. `baton-report` stays
//! pure (it reads no store), and the binary only prints.

use std::path::Path;

use baton_report::{BootstrapConfig, EpisodeRecord, PairSpec, ReportInput};
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
    let episodes = reader
        .episodes()?
        .into_iter()
        .map(|e| {
            let own = paid
                .get(&(e.id, Phase::Prefix))
                .copied()
                .unwrap_or_default();
            record(path, e, own)
        })
        .collect::<Result<_, _>>()?;
    Ok(ReportInput {
        title: exp.name,
        simulated: exp.simulated || reader.served_by_simulated_model()?,
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
    })
}

/// The cost of a handoff episode's sender turns: its own prefix calls (an independent
/// prefix) plus the forked part of its attributed cost (attributed − paid), which is
/// exactly what the anchor paid for turns 1..=K. `None` for an anchor.
pub fn prefix_cost(cell: &Cell, own_prefix: Cost, attributed: Cost, paid: Cost) -> Option<Cost> {
    match cell {
        Cell::Single { .. } => None,
        Cell::Handoff { .. } => Some(own_prefix + (attributed - paid)),
    }
}

fn record(path: &Path, e: EpisodeRow, own_prefix: Cost) -> Result<EpisodeRecord, RunError> {
    let cell: Cell = serde_json::from_str(&e.init.cell_json).map_err(|err| StoreError::Decode {
        path: path.to_path_buf(),
        what: format!("episodes.cell_json of episode {}", e.id),
        message: err.to_string(),
    })?;
    let o = e.outcome;
    let no_answer = o.verdict.as_ref().is_some_and(|v| v.no_answer);
    Ok(EpisodeRecord {
        no_answer,
        prefix_cost: prefix_cost(&cell, own_prefix, o.cost_attributed, o.cost_paid),
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
