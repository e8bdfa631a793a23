//! `--dry-run`: what a run would do and the most it could cost, before anything is paid.

use std::collections::BTreeMap;
use std::fmt;

use baton_data::Schedule;
use baton_eval::extract::llm;
use baton_models::Model;
use baton_types::{Cell, Cost, ExtractionStrategy, Message};

use crate::RunError;
use crate::ledger::{output_cap, prompt_tokens_upper_bound};
use crate::plan::Plan;
use crate::run::RunOptions;
use crate::setup::Setup;
use crate::spec::ExperimentSpec;

/// The estimate for one cell.
#[derive(Debug, Clone, Default)]
pub struct CellEstimate {
    /// Episodes of this cell in the plan.
    pub episodes: usize,
    /// Calls this cell pays for.
    pub calls: usize,
    /// Upper bound of what it pays.
    pub paid_upper: Cost,
    /// Upper bound of its attributed cost (forked prefixes included).
    pub attributed_upper: Cost,
    /// When a model of the cell is batched (its bounds are then at the card's batch
    /// rates): the turn rounds until the cell's last episode can finish, counted from
    /// the start of the run. Anchors take the longest task's turns; handoff cells start
    /// once their group's anchors are done, so they add their own turns after those.
    pub batch_rounds: Option<usize>,
}

/// The whole estimate.
#[derive(Debug, Clone, Default)]
pub struct DryRun {
    /// By cell label.
    pub cells: BTreeMap<String, CellEstimate>,
    /// Tasks the run would cover.
    pub tasks: usize,
}

impl DryRun {
    /// Calls in total.
    pub fn calls(&self) -> usize {
        self.cells.values().map(|c| c.calls).sum()
    }

    /// Upper bound of money paid in total.
    pub fn paid_upper(&self) -> Cost {
        self.cells.values().map(|c| c.paid_upper).sum()
    }
}

impl DryRun {
    /// The turn rounds a run with batched models needs at least: the most any cell needs.
    pub fn batch_rounds(&self) -> Option<usize> {
        self.cells.values().filter_map(|c| c.batch_rounds).max()
    }
}

impl fmt::Display for DryRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let batched = self.batch_rounds().is_some();
        if batched {
            writeln!(
                f,
                "| cell | episodes | calls | paid ≤ | attributed ≤ | batch rounds |"
            )?;
            writeln!(f, "|---|---:|---:|---:|---:|---:|")?;
        } else {
            writeln!(f, "| cell | episodes | calls | paid ≤ | attributed ≤ |")?;
            writeln!(f, "|---|---:|---:|---:|---:|")?;
        }
        for (label, c) in &self.cells {
            let rounds = match (batched, c.batch_rounds) {
                (false, _) => String::new(),
                (true, Some(n)) => format!(" {n} |"),
                (true, None) => " direct |".to_string(),
            };
            writeln!(
                f,
                "| {label} | {} | {} | {} | {} |{rounds}",
                c.episodes, c.calls, c.paid_upper, c.attributed_upper
            )?;
        }
        let episodes: usize = self.cells.values().map(|c| c.episodes).sum();
        writeln!(
            f,
            "| **total** | {episodes} | {} | {} | |",
            self.calls(),
            self.paid_upper()
        )?;
        if let Some(rounds) = self.batch_rounds() {
            writeln!(
                f,
                "\nBatched models are bounded at the card's batch rates. The run needs at least {rounds} batch rounds \
                 (anchors' turns, then their handoff cells'); each round waits for its batch (OpenAI: up to 24 hours; \
                 Anthropic: most within an hour)."
            )?;
        }
        writeln!(
            f,
            "\n{} tasks. Upper bounds assume every prompt token at the dearest input rate (one token per byte), \
             every reply at the model's max_tokens, and nothing stored yet.",
            self.tasks
        )
    }
}

/// Plan an experiment and bound its cost without calling any model or opening a store.
pub fn dry_run(spec: ExperimentSpec, options: &RunOptions) -> Result<DryRun, RunError> {
    let setup = Setup::load(spec, options)?;
    let plan = Plan::new(&setup.spec, &setup.tasks);
    let fork = setup.spec.fork_prefixes;
    let batched = |names: &[&str]| {
        names
            .iter()
            .any(|n| setup.spec.models.get(*n).is_some_and(|m| m.batch))
    };
    let most = |slot: &mut Option<usize>, rounds: usize| {
        *slot = Some(slot.map_or(rounds, |r| r.max(rounds)));
    };
    let mut out = DryRun {
        tasks: setup.tasks.len(),
        ..DryRun::default()
    };
    for g in &plan.groups {
        let schedule = &setup.schedules[g.task];
        let n = setup.tasks[g.task].n_turns();
        for m in &g.anchors {
            let model = &setup.models[m];
            let costs = turn_costs(schedule, |_| model.as_ref());
            let total: Cost = costs.iter().copied().sum();
            let e = out.cells.entry(Cell::single(m).label()).or_default();
            e.episodes += 1;
            e.calls += n;
            e.paid_upper += total;
            e.attributed_upper += total;
            if batched(&[m.as_str()]) {
                most(&mut e.batch_rounds, n);
            }
        }
        for cell in &g.baselines {
            let Cell::Baseline { model, mode } = cell else {
                continue;
            };
            let prompt = setup.baselines[g.task]
                .iter()
                .find(|(b, _)| b == mode)
                .map(|(_, p)| p.clone())
                .unwrap_or_default();
            let single = Schedule {
                system: schedule.system.clone(),
                user_turns: vec![prompt],
                sha256: String::new(),
            };
            let model = &setup.models[model];
            let cost: Cost = turn_costs(&single, |_| model.as_ref()).into_iter().sum();
            let e = out.cells.entry(cell.label()).or_default();
            e.episodes += 1;
            e.calls += 1;
            e.paid_upper += cost;
            e.attributed_upper += cost;
            if batched(&[model.name()]) {
                most(&mut e.batch_rounds, 1);
            }
        }
        for (cell, k) in &g.handoffs {
            let Cell::Handoff {
                sender,
                receiver,
                interface,
                ..
            } = cell
            else {
                continue;
            };
            let compacts = matches!(
                interface,
                baton_types::Interface::CompactPre | baton_types::Interface::CompactSuf
            );
            let (s, r) = (&setup.models[sender], &setup.models[receiver]);
            let costs = turn_costs(schedule, |t| if t <= *k { s.as_ref() } else { r.as_ref() });
            let prefix: Cost = costs[..*k].iter().copied().sum();
            let suffix: Cost = costs[*k..].iter().copied().sum();
            let e = out.cells.entry(cell.label()).or_default();
            e.episodes += 1;
            e.calls += if fork { n - k } else { n };
            e.paid_upper += if fork { suffix } else { prefix + suffix };
            e.attributed_upper += prefix + suffix;
            if batched(&[sender.as_str(), receiver.as_str()]) {
                // after the group's anchors (n rounds): its own turns, and a summary call
                let own = if fork { n - k } else { n };
                most(&mut e.batch_rounds, n + own + usize::from(compacts));
            }
        }
        // LiC's answer extraction: up to three calls after each math or database final
        // reply, shown as their own row (they are not any cell's cost)
        if let Some(x) = &setup.extractor
            && let Some(strategy) = ExtractionStrategy::of(setup.tasks[g.task].family)
        {
            let finals = g
                .anchors
                .iter()
                .chain(g.baselines.iter().filter_map(|c| match c {
                    Cell::Baseline { model, .. } => Some(model),
                    _ => None,
                }))
                .chain(g.handoffs.iter().filter_map(|(c, _)| match c {
                    Cell::Handoff { receiver, .. } => Some(receiver),
                    _ => None,
                }));
            for m in finals {
                let reply = "x".repeat(output_cap(&setup.models[m]) as usize * 4);
                let prompt = format!("{}{reply}", x.prompts.template(strategy));
                let one = x.model.billed_upper_bound(
                    prompt_tokens_upper_bound(&[Message::user(prompt)]),
                    output_cap(&x.model),
                );
                let e = out.cells.entry(EXTRACTION_ROW.to_string()).or_default();
                e.episodes += 1;
                e.calls += llm::MAX_ATTEMPTS as usize;
                for _ in 0..llm::MAX_ATTEMPTS {
                    e.paid_upper += one;
                }
            }
        }
    }
    Ok(out)
}

/// The dry run's row for LiC's answer-extraction calls (`extraction = "lic"`): its
/// episodes are the math and database episodes extracted, three calls each at most.
pub const EXTRACTION_ROW: &str = "extraction (LiC answer extraction)";

/// Upper bound of each turn's call when `who(t)` answers turn t: earlier replies are
/// taken as `max_tokens` tokens of at most four bytes each.
fn turn_costs<'a>(schedule: &Schedule, who: impl Fn(usize) -> &'a Model) -> Vec<Cost> {
    let mut messages = vec![Message::system(schedule.system.clone())];
    let mut costs = Vec::with_capacity(schedule.user_turns.len());
    for (i, turn) in schedule.user_turns.iter().enumerate() {
        messages.push(Message::user(turn.clone()));
        let model = who(i + 1);
        let max_out = output_cap(model);
        costs.push(model.billed_upper_bound(prompt_tokens_upper_bound(&messages), max_out));
        messages.push(Message::assistant("x".repeat(max_out as usize * 4)));
    }
    costs
}
