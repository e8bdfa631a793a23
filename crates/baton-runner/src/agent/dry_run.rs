//! An agent experiment's `--dry-run`: every cell it will run, the anchors and each
//! handoff cell, with an upper bound on its calls and cost, before anything is paid.
//!
//! An agent episode is bounded by its limits: at most `step_limit` model calls, and its
//! spend stops at `cost_limit` (plus the call in flight when the limit is reached,
//! which the call's own bound caps). A handoff cell's switch call s is read from the
//! anchors, so it is not known before they run: the bound takes the worst s, the step
//! limit. A forked prefix is paid by its anchor; a live one (`independent`) is the
//! cell's own, so it pays two trajectories. A `compact_pre` or `compact_suf` cell also
//! makes one summary call, and a `handover` cell one call for its document (the sender's,
//! as `compact_pre`'s summary), bounded by the writer's own cost limit.

use std::fmt;

use baton_types::Cost;
use baton_types::agent::AgentCell;

use crate::RunError;
use crate::agent::{AgentSpec, price_card, select_dataset};
use crate::run::RunOptions;

/// One row of the estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCellEstimate {
    /// The cell's label (`single(lc)`, `handoff(lc -> hc, p25, compact_pre)`).
    pub cell: String,
    /// Episodes of the cell.
    pub episodes: usize,
    /// Model calls at most.
    pub calls: usize,
    /// What its episodes pay at most.
    pub paid_upper: Cost,
}

/// The whole estimate of an agent experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDryRun {
    /// The experiment's name.
    pub name: String,
    /// Tasks, by difficulty bucket (`3 easy, 1 hard`).
    pub buckets: String,
    /// Tasks in all.
    pub tasks: usize,
    /// Where they come from (`agent-sample (baton)`).
    pub source: String,
    /// Every cell, anchors first.
    pub cells: Vec<AgentCellEstimate>,
    /// The limits the bounds come from (`protocol ..., step limit 40, sandbox ...`).
    pub limits: String,
}

impl AgentDryRun {
    /// Calls at most, every cell.
    pub fn calls(&self) -> usize {
        self.cells.iter().map(|c| c.calls).sum()
    }

    /// Money at most, every cell.
    pub fn paid_upper(&self) -> Cost {
        self.cells.iter().map(|c| c.paid_upper).sum()
    }
}

impl fmt::Display for AgentDryRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "agent experiment {:?}: {} tasks from {}; buckets: {}",
            self.name, self.tasks, self.source, self.buckets
        )?;
        writeln!(f, "| cell | episodes | calls ≤ | paid ≤ |")?;
        writeln!(f, "|---|---:|---:|---:|")?;
        for c in &self.cells {
            writeln!(
                f,
                "| {} | {} | {} | {} |",
                c.cell, c.episodes, c.calls, c.paid_upper
            )?;
        }
        let episodes: usize = self.cells.iter().map(|c| c.episodes).sum();
        writeln!(
            f,
            "| **total** | {episodes} | {} | {} |",
            self.calls(),
            self.paid_upper()
        )?;
        writeln!(
            f,
            "\n{}. Each episode stops at its step limit and cost limit (plus the call in flight when the cost limit \
             is reached); a handoff cell's switch call is read from the anchors, so before they run it is bounded \
             by the step limit. No call was made.",
            self.limits
        )
    }
}

/// Plan an agent experiment and bound every cell without a key, a call or a store; a
/// part (`--part I/N`) bounds its own tasks. The file is checked as the run checks it,
/// in the run's order (templates, price card, then each model: its table, output cap,
/// provider and price), so both meet the same first mistake: `options.providers` are
/// the run's, with keys optional (an estimate makes no call).
pub fn dry_run(spec: &AgentSpec, options: &RunOptions) -> Result<AgentDryRun, RunError> {
    let mut dataset = select_dataset(spec, options)?;
    let config = super::agent_config(spec, options)?;
    let card = price_card(spec, options)?;
    // models are built on the whole sample, as the run builds them
    super::models::build(
        spec,
        &dataset.tasks,
        &card,
        options,
        &config.templates.model_kwargs,
    )?;
    if let Some(part) = options.part {
        dataset.tasks.retain(|t| part.contains(&t.id));
    }
    estimate(spec, options, &dataset)
}

/// [`dry_run`] of the tasks of `dataset`.
pub(crate) fn estimate(
    spec: &AgentSpec,
    options: &RunOptions,
    dataset: &baton_agent::AgentDataset,
) -> Result<AgentDryRun, RunError> {
    let card = price_card(spec, options)?;
    let mut buckets = std::collections::BTreeMap::new();
    for t in &dataset.tasks {
        *buckets.entry(t.difficulty.name()).or_insert(0) += 1;
    }
    let buckets: Vec<String> = buckets.iter().map(|(b, n)| format!("{n} {b}")).collect();
    let episodes = dataset.tasks.len() * spec.replicates as usize;
    let steps = spec.step_limit as usize;
    // one trajectory: its cost limit (the call in flight when it is reached comes on
    // top, as the table's note says); its model must have a price
    let trajectory = |name: &str| -> Result<Cost, RunError> {
        // its errors name the key (`models.NAME`) already
        let m = spec.model(name).map_err(|message| RunError::Spec {
            source_name: options.source_name.clone(),
            message,
        })?;
        card.get(&m.spec.price_key()).map_err(|e| {
            super::models::keyed(
                options,
                RunError::Model {
                    name: name.to_string(),
                    message: e.to_string(),
                },
            )
        })?;
        Ok(Cost::from_usd(spec.cost_limit_usd))
    };
    let mut out = Vec::new();
    for name in spec.models.keys() {
        let one = trajectory(name)?;
        out.push(AgentCellEstimate {
            cell: format!("single({name})"),
            episodes,
            calls: episodes * steps,
            paid_upper: (0..episodes).map(|_| one).sum(),
        });
    }
    if let Some(h) = &spec.handoff {
        let independent = options.independent || h.independent;
        for c in h.cells(independent) {
            let AgentCell::AgentHandoff {
                sender,
                receiver,
                p,
                interface,
                ..
            } = &c
            else {
                continue;
            };
            let (sender_bound, receiver_bound) = (trajectory(sender)?, trajectory(receiver)?);
            // the handoff call: compact_pre's summary and handover's document are the
            // sender's, compact_suf's summary the receiver's
            let summary = match *interface {
                i if !baton_agent::summarises(i) => Cost::ZERO,
                i if baton_agent::sender_writes(i) => sender_bound,
                _ => receiver_bound,
            };
            let summaries = usize::from(summary > Cost::ZERO);
            // the suffix is the receiver's; a live prefix is the cell's own too
            let (calls, one) = if independent {
                (
                    2 * steps + summaries,
                    sender_bound + receiver_bound + summary,
                )
            } else {
                (steps + summaries, receiver_bound + summary)
            };
            out.push(AgentCellEstimate {
                // without `, independent`: the table's note says how prefixes run
                cell: format!(
                    "handoff({sender} -> {receiver}, p{p}, {})",
                    interface.as_str()
                ),
                episodes,
                calls: episodes * calls,
                paid_upper: (0..episodes).map(|_| one).sum(),
            });
        }
    }
    Ok(AgentDryRun {
        name: spec.name.clone(),
        buckets: buckets.join(", "),
        tasks: dataset.tasks.len(),
        source: format!("{} ({})", dataset.name, dataset.format.name()),
        cells: out,
        limits: format!(
            "protocol {}, step limit {}, cost limit {} per trajectory, sandbox {}",
            spec.protocol.name(),
            spec.step_limit,
            Cost::from_usd(spec.cost_limit_usd),
            spec.environment.backend.name()
        ),
    })
}
