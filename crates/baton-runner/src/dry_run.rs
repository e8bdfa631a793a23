//! `--dry-run`: what a run would do and the most it could cost, before anything is paid.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use baton_data::Schedule;
use baton_eval::extract::llm;
use baton_models::Model;
use baton_types::{Baseline, Cell, Cost, ExtractionStrategy, Family, Interface, Message};

use crate::RunError;
use crate::interface::InterfaceTemplates;
use crate::ledger::{call_upper_bound, output_cap};
use crate::plan::{Plan, TaskGroup};
use crate::run::RunOptions;
use crate::setup::{Extractor, Setup};
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
             every reply at the model's max_tokens, every call answered unusably as often as the model's \
             unusable_retries allow (each attempt is billed), a summary call for each compact_pre and compact_suf \
             episode, and nothing stored yet.",
            self.tasks
        )
    }
}

/// Plan an experiment and bound its cost without calling any model or opening a store:
/// the sum over the plan of [`Bounds`], each episode's bound.
pub fn dry_run(spec: ExperimentSpec, options: &RunOptions) -> Result<DryRun, RunError> {
    let setup = Setup::load_for_estimate(spec, options)?;
    let plan = Plan::new(&setup.spec, &setup.tasks);
    let families: Vec<Family> = setup.tasks.iter().map(|t| t.family).collect();
    let bounds = Bounds::of(&setup, &families);
    let mut out = DryRun {
        tasks: setup.tasks.len(),
        ..DryRun::default()
    };
    for g in &plan.groups {
        for (cell, k) in g.cells() {
            let b = bounds.episode(g, &cell, k);
            let e = out.cells.entry(cell.label()).or_default();
            e.episodes += 1;
            e.calls += b.calls;
            e.paid_upper += b.paid;
            e.attributed_upper += b.attributed;
            if let Some(rounds) = b.batch_rounds {
                e.batch_rounds = Some(e.batch_rounds.map_or(rounds, |r| r.max(rounds)));
            }
            if let Some(x) = bounds.extraction(g, &cell) {
                let e = out.cells.entry(EXTRACTION_ROW.to_string()).or_default();
                e.episodes += 1;
                e.calls += x.calls;
                e.paid_upper += x.paid;
                e.attributed_upper += x.attributed;
            }
        }
    }
    Ok(out)
}

/// The bound of one episode (or of its answer extraction).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct EpisodeBound {
    /// Calls it makes at most (each may be answered unusably `unusable_retries` times
    /// more, which `paid` counts).
    pub calls: usize,
    /// What it pays at most: every call's every billed attempt.
    pub paid: Cost,
    /// Its attributed cost at most (a forked prefix's turns included).
    pub attributed: Cost,
    /// Turn rounds until it can finish, when a model of it is batched.
    pub batch_rounds: Option<usize>,
}

/// Each planned episode's upper bound, from what setup built: the one rule the dry run
/// sums and a run on an existing folder states for the episodes it will run.
///
/// A call's bound is the ledger's (every prompt token at the dearest input rate, one
/// token per byte, every earlier reply at the output cap), times the attempts it may
/// be billed for (`1 + unusable_retries`). A handoff through `compact_pre` or
/// `compact_suf` adds its summary call; an interface text is counted in every prompt
/// after the switch.
pub(crate) struct Bounds<'a> {
    pub spec: &'a ExperimentSpec,
    pub schedules: &'a [Schedule],
    pub baselines: &'a [Vec<(Baseline, String)>],
    pub models: &'a BTreeMap<String, Arc<Model>>,
    pub extractor: Option<&'a Extractor>,
    pub families: &'a [Family],
    pub interfaces: &'a InterfaceTemplates,
    /// Turn bounds already computed ([`Bounds::turns`]), shared by the episodes whose
    /// conversations are the same: a task's replicates, the handoff cells that send the
    /// same text across the same switch, each anchor's turns for the prefixes before it.
    pub memo: TurnMemo,
}

impl<'a> Bounds<'a> {
    /// The bounds of `setup`'s experiment, `families` being its tasks' families in order.
    pub fn of(setup: &'a Setup, families: &'a [Family]) -> Self {
        Bounds {
            spec: &setup.spec,
            schedules: &setup.schedules,
            baselines: &setup.baselines,
            models: &setup.models,
            extractor: setup.extractor.as_deref(),
            families,
            interfaces: &setup.interfaces,
            memo: TurnMemo::default(),
        }
    }
}

/// [`Bounds`]' computed turn bounds, keyed by what decides a turn's prompt: the task,
/// the switch, the text crossing it, the sender and the receiver.
#[derive(Default)]
pub(crate) struct TurnMemo {
    turns: Mutex<HashMap<TurnKey, Arc<[Cost]>>>,
    /// One extraction call's bound by family and the model whose reply it reads.
    extraction: Mutex<HashMap<(Family, String), Cost>>,
}

type TurnKey = (usize, usize, Option<String>, String, String);

impl Bounds<'_> {
    /// One call of `model` with `messages`: the ledger's bound, every billed attempt.
    fn call(&self, model: &Model, messages: &[Message]) -> Cost {
        call_upper_bound(model, messages)
    }

    fn batched(&self, names: &[&str]) -> bool {
        names
            .iter()
            .any(|n| self.spec.models.get(*n).is_some_and(|m| m.batch))
    }

    /// The bound of episode `cell` (K `k` for a handoff) of group `g`.
    pub(crate) fn episode(&self, g: &TaskGroup, cell: &Cell, k: Option<usize>) -> EpisodeBound {
        let schedule = &self.schedules[g.task];
        let n = schedule.user_turns.len();
        match cell {
            Cell::Single { model } => {
                let paid: Cost = self
                    .memo_turns(g.task, 0, None, model, model)
                    .iter()
                    .copied()
                    .sum();
                EpisodeBound {
                    calls: n,
                    paid,
                    attributed: paid,
                    batch_rounds: self.batched(&[model]).then_some(n),
                }
            }
            Cell::Baseline { model, mode } => {
                let prompt = self.baselines[g.task]
                    .iter()
                    .find(|(b, _)| b == mode)
                    .map(|(_, p)| p.clone())
                    .unwrap_or_default();
                let single = Schedule {
                    system: schedule.system.clone(),
                    user_turns: vec![prompt],
                    sha256: String::new(),
                };
                let m = &self.models[model];
                let paid: Cost = self
                    .turns(&single, 0, None, Vec::new(), |_| m)
                    .into_iter()
                    .sum();
                EpisodeBound {
                    calls: 1,
                    paid,
                    attributed: paid,
                    batch_rounds: self.batched(&[model]).then_some(1),
                }
            }
            Cell::Handoff {
                sender,
                receiver,
                interface,
                ..
            } => {
                let k = k.unwrap_or(0);
                let fork = self.spec.fork_prefixes;
                let (s, r) = (&self.models[sender], &self.models[receiver]);
                let compacts = matches!(interface, Interface::CompactPre | Interface::CompactSuf);
                // what crosses the switch, counted in every prompt after it
                let crossing = match interface {
                    Interface::Raw | Interface::TrajDrop => None,
                    Interface::Handover => {
                        unreachable!("Spec::check refuses handover in a chat experiment")
                    }
                    Interface::Disclosure => Some(self.interfaces.disclosure.clone()),
                    Interface::CompactPre | Interface::CompactSuf => {
                        let summarizer = if *interface == Interface::CompactPre {
                            s
                        } else {
                            r
                        };
                        Some(format!(
                            "{}{}",
                            self.interfaces.compact_handoff,
                            "x".repeat(output_cap(summarizer) as usize * 4)
                        ))
                    }
                };
                let costs = self.memo_turns(g.task, k, crossing, sender, receiver);
                let prefix: Cost = costs[..k.min(costs.len())].iter().copied().sum();
                let suffix: Cost = costs[k.min(costs.len())..].iter().copied().sum();
                let summary = if compacts {
                    let summarizer = if *interface == Interface::CompactPre {
                        s
                    } else {
                        r
                    };
                    let mut messages = self.transcript(schedule, k, |t| if t <= k { s } else { r });
                    messages.push(Message::user(self.interfaces.compact_request.clone()));
                    self.call(summarizer, &messages)
                } else {
                    Cost::ZERO
                };
                let own_calls = if fork { n - k } else { n } + usize::from(compacts);
                let paid = if fork { suffix } else { prefix + suffix } + summary;
                EpisodeBound {
                    calls: own_calls,
                    paid,
                    attributed: prefix + suffix + summary,
                    // after the group's anchors (n rounds): its own turns and summary
                    batch_rounds: self.batched(&[sender, receiver]).then_some(n + own_calls),
                }
            }
        }
    }

    /// The bound of LiC's answer extraction after episode `cell`'s final reply, when
    /// the run extracts (`extraction = "lic"`, a math or database task): up to three
    /// calls, every billed attempt.
    pub(crate) fn extraction(&self, g: &TaskGroup, cell: &Cell) -> Option<EpisodeBound> {
        let x = self.extractor?;
        let strategy = ExtractionStrategy::of(self.families[g.task])?;
        let last = match cell {
            Cell::Single { model } | Cell::Baseline { model, .. } => model,
            Cell::Handoff { receiver, .. } => receiver,
        };
        let key = (self.families[g.task], last.clone());
        let known = self
            .memo
            .extraction
            .lock()
            .expect("the memo is never poisoned")
            .get(&key)
            .copied();
        let one = known.unwrap_or_else(|| {
            let reply = "x".repeat(output_cap(&self.models[last]) as usize * 4);
            let prompt = format!("{}{reply}", x.prompts.template(strategy));
            let one = self.call(&x.model, &[Message::user(prompt)]);
            self.memo
                .extraction
                .lock()
                .expect("the memo is never poisoned")
                .insert(key, one);
            one
        });
        let paid: Cost = (0..llm::MAX_ATTEMPTS).map(|_| one).sum();
        Some(EpisodeBound {
            calls: llm::MAX_ATTEMPTS as usize,
            paid,
            attributed: paid,
            batch_rounds: None,
        })
    }

    /// The conversation after turn `upto` when `who(t)` answers turn t: earlier replies
    /// taken as the output cap of at most four bytes a token.
    fn transcript<'m>(
        &self,
        schedule: &Schedule,
        upto: usize,
        who: impl Fn(usize) -> &'m Arc<Model>,
    ) -> Vec<Message> {
        let mut messages = vec![Message::system(schedule.system.clone())];
        for (i, turn) in schedule.user_turns.iter().take(upto).enumerate() {
            messages.push(Message::user(turn.clone()));
            let max_out = output_cap(who(i + 1));
            messages.push(Message::assistant("x".repeat(max_out as usize * 4)));
        }
        messages
    }

    /// [`Bounds::turns`] of task `task`'s schedule when `sender` answers the turns up to
    /// `switch` and `receiver` the rest (one model throughout: both the same, switch 0),
    /// computed once per key. The turns before the switch are the sender's anchor's,
    /// taken from it.
    fn memo_turns(
        &self,
        task: usize,
        switch: usize,
        crossing: Option<String>,
        sender: &str,
        receiver: &str,
    ) -> Arc<[Cost]> {
        let key = (
            task,
            switch,
            crossing,
            sender.to_string(),
            receiver.to_string(),
        );
        if let Some(hit) = self
            .memo
            .turns
            .lock()
            .expect("the memo is never poisoned")
            .get(&key)
        {
            return hit.clone();
        }
        let schedule = &self.schedules[task];
        let (s, r) = (&self.models[sender], &self.models[receiver]);
        let known = if switch > 0 {
            let anchor = self.memo_turns(task, 0, None, sender, sender);
            anchor[..switch.min(anchor.len())].to_vec()
        } else {
            Vec::new()
        };
        let costs: Arc<[Cost]> = self
            .turns(schedule, switch, key.2.clone(), known, |t| {
                if t <= switch { s } else { r }
            })
            .into();
        self.memo
            .turns
            .lock()
            .expect("the memo is never poisoned")
            .insert(key, costs.clone());
        costs
    }

    /// Each turn's call bound when `who(t)` answers turn t, with `crossing` (an
    /// interface's text) in every prompt after turn `switch`.
    fn turns<'m>(
        &self,
        schedule: &Schedule,
        switch: usize,
        crossing: Option<String>,
        known: Vec<Cost>,
        who: impl Fn(usize) -> &'m Arc<Model>,
    ) -> Vec<Cost> {
        let mut messages = vec![Message::system(schedule.system.clone())];
        let mut costs = known;
        costs.reserve(schedule.user_turns.len().saturating_sub(costs.len()));
        for (i, turn) in schedule.user_turns.iter().enumerate() {
            if i == switch
                && let Some(text) = &crossing
            {
                messages.push(Message::user(text.clone()));
            }
            messages.push(Message::user(turn.clone()));
            let model = who(i + 1);
            if i >= costs.len() {
                costs.push(self.call(model, &messages));
            }
            messages.push(Message::assistant(
                "x".repeat(output_cap(model) as usize * 4),
            ));
        }
        costs
    }
}

/// The dry run's row for LiC's answer-extraction calls (`extraction = "lic"`): its
/// episodes are the math and database episodes extracted, three calls each at most.
pub const EXTRACTION_ROW: &str = "extraction (LiC answer extraction)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ExperimentSpec;

    /// Every turn's bound by the rule itself, the prompt built and serialized from
    /// scratch at each turn: what the memo must give back.
    fn from_scratch(
        schedule: &Schedule,
        switch: usize,
        crossing: Option<&str>,
        s: &Model,
        r: &Model,
    ) -> Vec<Cost> {
        let mut messages = vec![Message::system(schedule.system.clone())];
        let mut costs = Vec::new();
        for (i, turn) in schedule.user_turns.iter().enumerate() {
            if i == switch
                && let Some(text) = crossing
            {
                messages.push(Message::user(text.to_string()));
            }
            messages.push(Message::user(turn.clone()));
            let model = if i < switch { s } else { r };
            costs.push(call_upper_bound(model, &messages));
            messages.push(Message::assistant(
                "x".repeat(output_cap(model) as usize * 4),
            ));
        }
        costs
    }

    #[test]
    fn memoized_turn_bounds_are_the_bounds_computed_from_scratch() {
        let text = r#"
name = "memo"
dataset = "sample"
limit = 3
replicates = 2
seed = 5
switch_points = ["early", "middle", "late"]
directions = ["escalation", "downshift"]
interfaces = ["raw", "disclosure", "traj_drop", "compact_pre", "compact_suf"]
[models.lc]
model = "sim/lc"
[models.hc]
model = "sim/hc"
[[pairs]]
low = "lc"
high = "hc"
"#;
        let dir = tempfile::tempdir().unwrap();
        let spec = ExperimentSpec::parse("memo.toml", text).unwrap();
        let setup =
            Setup::load_for_estimate(spec, &RunOptions::new(dir.path(), ".", text)).unwrap();
        let plan = Plan::new(&setup.spec, &setup.tasks);
        let families: Vec<Family> = setup.tasks.iter().map(|t| t.family).collect();
        let bounds = Bounds::of(&setup, &families);
        let mut total = Cost::ZERO;
        let mut episodes = 0;
        for g in &plan.groups {
            for (cell, k) in g.cells() {
                total += bounds.episode(g, &cell, k).paid;
                episodes += 1;
            }
        }
        // 3 tasks × 2 replicates × (2 anchors + 3 switches × 2 directions × 5 interfaces)
        // every task twice (replicates), each with 2 anchors + 3 switches × 2 directions
        // × 5 interfaces
        let tasks = setup.tasks.len();
        assert_eq!(plan.groups.len(), 2 * tasks);
        assert_eq!(episodes, 2 * tasks * 32);
        assert!(total > Cost::ZERO);
        let memo = bounds.memo.turns.lock().unwrap();
        // per task at most 2 anchors and, per switch and direction, 4 distinct crossings
        // (raw and traj_drop send nothing across); replicates share theirs
        assert!(memo.len() <= tasks * (2 + 3 * 2 * 4), "{}", memo.len());
        assert!(memo.len() > tasks * 2);
        for ((task, switch, crossing, sender, receiver), costs) in memo.iter() {
            let schedule = &setup.schedules[*task];
            let expected = from_scratch(
                schedule,
                *switch,
                crossing.as_deref(),
                &setup.models[sender],
                &setup.models[receiver],
            );
            assert_eq!(&costs[..], &expected[..], "task {task}, switch {switch}");
            assert_eq!(costs.len(), schedule.user_turns.len());
        }
    }
}
