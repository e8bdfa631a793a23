//! The agent handoff study's report, in the paper's shapes: the switch calls, every
//! (pair, direction, p, interface) cell with its fired counts, the Table-1 aggregate
//! (equal weight over switch points), Early (p ≤ 15) and Late (p ≥ 25) windows, per
//! difficulty bucket, the restart controls, the step-cost decomposition relative to
//! `compact_pre`, and paired task-level bootstrap intervals for interface differences.
//!
//! Rules:
//! - A cell's *matched fired subset* is its (task, replicate) units where the handoff
//!   fired, the handoff episode finished with a verdict, and both anchors of the pair did
//!   too. Pass rate, mean cost, QRec and CSRet are over that subset, with the anchors'
//!   means on the same units: `QRec = 100·(R_m − R_LC)/(R_HC − R_LC)`,
//!   `CSRet = 100·(C_HC − C_m)/(C_HC − C_LC)` (omitted when the denominator is 0).
//! - Aggregates (Table 1, windows, buckets) average the six means (R and C of the cell
//!   and both anchors) with equal weight over the switch points that have matched units,
//!   then apply the formulas.
//! - Restart controls, composed from matched runs (no new calls): `abort+hc_fresh` costs
//!   the prefix through s (the escalation handoff's own prefix cost) plus the HC-only run;
//!   `lc_full+hc_full` the LC-only run plus the HC-only run; both score as HC-only.
//! - The audit: every finished episode's prefix + handoff + suffix cost equals its total
//!   (attributed) cost, exactly in picodollars. [`build_study`] fails when it does not:
//!   no table is printed over an unreconciled store.
//! - The bootstrap draws tasks with replacement (all replicates of a drawn task; a task
//!   drawn twice weighs twice under every interface and switch point), recomputes Table 1
//!   per draw, and reports the 2.5 and 97.5 percentiles of each interface's pass-rate and
//!   cost difference from `compact_pre`.

use std::collections::{BTreeMap, BTreeSet};

use baton_types::{Cost, Direction, Interface};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::ReportError;
use crate::agent::{html_escape, html_table, md_table};

/// The cell of a study episode.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum StudyCell {
    /// An anchor.
    Single(String),
    /// A handoff.
    Handoff {
        /// Prefix model.
        sender: String,
        /// Suffix model.
        receiver: String,
        /// Percentile of the switch call.
        p: u32,
        /// The interface.
        interface: Interface,
    },
}

/// One episode as the study sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyEpisode {
    /// Task id.
    pub task_id: String,
    /// Difficulty bucket.
    pub bucket: String,
    /// Replicate.
    pub replicate: u32,
    /// Its cell.
    pub cell: StudyCell,
    /// Whether it finished (an end is stored and it is not incomplete).
    pub finished: bool,
    /// Whether it resolved the task, when finished and scored.
    pub resolved: Option<bool>,
    /// Model calls made in total (prefix ones included).
    pub steps: u32,
    /// Suffix calls (steps after the switch).
    pub suffix_steps: u32,
    /// Total (attributed) cost: what the task's run cost, forked prefix included.
    pub cost: Cost,
    /// Cost per phase: prefix (a forked one included), handoff, suffix.
    pub phases: [Cost; 3],
    /// A handoff's switch call.
    pub s: Option<u32>,
    /// Whether a handoff fired (none before its switch is settled).
    pub fired: Option<bool>,
}

/// A switch call, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StudyThreshold {
    /// `lc/hc`.
    pub pair: String,
    /// `escalation` or `downshift`.
    pub direction: String,
    /// Difficulty bucket.
    pub bucket: String,
    /// Percentile.
    pub p: u32,
    /// Switch call.
    pub s: u32,
}

/// What the study report is built from.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyInput {
    /// Pairs `(lc, hc)`.
    pub pairs: Vec<(String, String)>,
    /// The stored switch calls.
    pub thresholds: Vec<StudyThreshold>,
    /// Every episode, anchors included.
    pub episodes: Vec<StudyEpisode>,
    /// Bootstrap replicates (0: none); the paper uses 10,000.
    pub bootstrap: usize,
    /// Bootstrap seed.
    pub seed: u64,
}

/// The reconciliation audit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Audit {
    /// Whether every finished episode reconciled.
    pub reconciled: bool,
    /// Episodes checked.
    pub tasks: usize,
    /// The largest |prefix + handoff + suffix − total|, in dollars.
    pub max_abs_diff_usd: f64,
}

/// One (pair, direction, p, interface) cell, or an aggregate of them (`p` none).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyRow {
    /// `lc/hc`.
    pub pair: String,
    /// Direction.
    pub direction: String,
    /// Interface, or a restart control's name.
    pub interface: String,
    /// Percentile (cells only).
    pub p: Option<u32>,
    /// `all`, `early`, `late`, or a bucket.
    pub window: String,
    /// Handoff episodes planned and stored.
    pub n: usize,
    /// Fired ones.
    pub n_fired: usize,
    /// Unfired ones (the prefix ended before call s).
    pub n_unfired: usize,
    /// Fired ones not finished yet.
    pub n_incomplete: usize,
    /// Matched fired units the numbers are over.
    pub n_matched: usize,
    /// Pass rate, %.
    pub pass_rate: Option<f64>,
    /// Mean cost per task, dollars.
    pub mean_cost_usd: Option<f64>,
    /// LC-only pass rate on the same units, %.
    pub lc_pass_rate: Option<f64>,
    /// HC-only pass rate on the same units, %.
    pub hc_pass_rate: Option<f64>,
    /// LC-only mean cost on the same units, dollars.
    pub lc_cost_usd: Option<f64>,
    /// HC-only mean cost on the same units, dollars.
    pub hc_cost_usd: Option<f64>,
    /// QRec, %.
    pub qrec: Option<f64>,
    /// CSRet, %.
    pub csret: Option<f64>,
}

/// The step-cost decomposition of one (pair, direction, interface).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decomposition {
    /// `lc/hc`.
    pub pair: String,
    /// Direction.
    pub direction: String,
    /// Interface.
    pub interface: String,
    /// Mean post-handoff cost (handoff call folded into the first suffix step) per suffix step, dollars.
    pub usd_per_suffix_step: Option<f64>,
    /// Mean suffix steps.
    pub suffix_steps: Option<f64>,
    /// The two relative to `compact_pre`.
    pub usd_per_step_vs_compact_pre: Option<f64>,
    /// Suffix steps relative to `compact_pre`.
    pub steps_vs_compact_pre: Option<f64>,
}

/// A bootstrap interval of an interface's difference from `compact_pre` (Table 1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interval {
    /// `lc/hc`.
    pub pair: String,
    /// Direction.
    pub direction: String,
    /// Interface.
    pub interface: String,
    /// Pass-rate difference (points): estimate, 2.5 and 97.5 percentiles.
    pub pass_rate_diff: [f64; 3],
    /// Mean-cost difference (dollars): estimate, 2.5 and 97.5 percentiles.
    pub cost_diff_usd: [f64; 3],
    /// Replicates.
    pub replicates: usize,
}

/// The study report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StudyReport {
    /// The switch calls.
    pub thresholds: Vec<StudyThreshold>,
    /// The audit.
    pub audit: Audit,
    /// Every cell.
    pub cells: Vec<StudyRow>,
    /// Table 1: per pair, direction and interface, equal weight over switch points.
    pub table1: Vec<StudyRow>,
    /// Early (p ≤ 15) and late (p ≥ 25) windows.
    pub windows: Vec<StudyRow>,
    /// Per difficulty bucket.
    pub buckets: Vec<StudyRow>,
    /// Restart controls.
    pub restart_controls: Vec<StudyRow>,
    /// Step-cost decomposition.
    pub decomposition: Vec<Decomposition>,
    /// Bootstrap intervals.
    pub intervals: Vec<Interval>,
}

type Unit = (String, u32);

/// One matched unit: R and C of the cell, of the LC anchor and of the HC anchor.
type Obs = [f64; 6];

/// A cell's matched units with their task ids.
type Matched<'a> = (Vec<Obs>, Vec<&'a str>);

/// The six means of a matched subset: R, C of the cell and of both anchors.
#[derive(Debug, Clone, Copy, Default)]
struct Means([f64; 6]);

impl Means {
    fn of(units: &[Obs], weights: Option<&BTreeMap<String, f64>>, ids: &[&str]) -> Option<Means> {
        let mut acc = [0.0; 6];
        let mut n = 0.0;
        for (u, id) in units.iter().zip(ids) {
            let w = weights.map_or(1.0, |w| w.get(*id).copied().unwrap_or(0.0));
            if w == 0.0 {
                continue;
            }
            for (a, v) in acc.iter_mut().zip(u) {
                *a += w * v;
            }
            n += w;
        }
        (n > 0.0).then(|| Means(acc.map(|a| a / n)))
    }

    fn mean(items: &[Means]) -> Option<Means> {
        if items.is_empty() {
            return None;
        }
        let mut acc = [0.0; 6];
        for m in items {
            for (a, v) in acc.iter_mut().zip(m.0) {
                *a += v;
            }
        }
        Some(Means(acc.map(|a| a / items.len() as f64)))
    }

    fn qrec(&self) -> Option<f64> {
        let [r, _, rl, _, rh, _] = self.0;
        ((rh - rl).abs() > 1e-12).then(|| 100.0 * (r - rl) / (rh - rl))
    }

    fn csret(&self) -> Option<f64> {
        let [_, c, _, cl, _, ch] = self.0;
        ((ch - cl).abs() > 1e-15).then(|| 100.0 * (ch - c) / (ch - cl))
    }
}

fn score(e: &StudyEpisode) -> Option<f64> {
    e.resolved
        .filter(|_| e.finished)
        .map(|r| if r { 1.0 } else { 0.0 })
}

/// Index of the episodes.
struct Index<'a> {
    anchors: BTreeMap<(&'a str, Unit), &'a StudyEpisode>,
    handoffs: BTreeMap<(&'a str, &'a str, u32, Interface), Vec<&'a StudyEpisode>>,
}

impl<'a> Index<'a> {
    fn new(input: &'a StudyInput) -> Self {
        let mut anchors = BTreeMap::new();
        let mut handoffs: BTreeMap<_, Vec<_>> = BTreeMap::new();
        for e in &input.episodes {
            match &e.cell {
                StudyCell::Single(m) => {
                    anchors.insert((m.as_str(), (e.task_id.clone(), e.replicate)), e);
                }
                StudyCell::Handoff {
                    sender,
                    receiver,
                    p,
                    interface,
                } => handoffs
                    .entry((sender.as_str(), receiver.as_str(), *p, *interface))
                    .or_default()
                    .push(e),
            }
        }
        Index { anchors, handoffs }
    }

    fn anchor(&self, model: &str, e: &StudyEpisode) -> Option<&'a StudyEpisode> {
        self.anchors
            .get(&(model, (e.task_id.clone(), e.replicate)))
            .copied()
    }
}

/// The matched fired units of a cell: (R_m, C_m, R_lc, C_lc, R_hc, C_hc) with the task id.
fn matched<'a>(
    idx: &Index<'a>,
    eps: &[&'a StudyEpisode],
    lc: &str,
    hc: &str,
    bucket: Option<&str>,
) -> Matched<'a> {
    let mut units = Vec::new();
    let mut ids = Vec::new();
    for e in eps {
        if e.fired != Some(true) || bucket.is_some_and(|b| b != e.bucket) {
            continue;
        }
        let (Some(a), Some(b)) = (idx.anchor(lc, e), idx.anchor(hc, e)) else {
            continue;
        };
        if let (Some(r), Some(rl), Some(rh)) = (score(e), score(a), score(b)) {
            units.push([r, e.cost.usd(), rl, a.cost.usd(), rh, b.cost.usd()]);
            ids.push(e.task_id.as_str());
        }
    }
    (units, ids)
}

/// A row over `eps` with the means `m` of its `n_matched` units; the first five name it.
#[allow(clippy::too_many_arguments)]
fn row(
    pair: &str,
    dir: Direction,
    interface: &str,
    p: Option<u32>,
    window: &str,
    eps: &[&StudyEpisode],
    n_matched: usize,
    m: Option<Means>,
) -> StudyRow {
    let fired = eps.iter().filter(|e| e.fired == Some(true)).count();
    StudyRow {
        pair: pair.to_string(),
        direction: dir.as_str().to_string(),
        interface: interface.to_string(),
        p,
        window: window.to_string(),
        n: eps.len(),
        n_fired: fired,
        n_unfired: eps.iter().filter(|e| e.fired == Some(false)).count(),
        n_incomplete: eps
            .iter()
            .filter(|e| e.fired == Some(true) && !e.finished)
            .count(),
        n_matched,
        pass_rate: m.map(|m| 100.0 * m.0[0]),
        mean_cost_usd: m.map(|m| m.0[1]),
        lc_pass_rate: m.map(|m| 100.0 * m.0[2]),
        hc_pass_rate: m.map(|m| 100.0 * m.0[4]),
        lc_cost_usd: m.map(|m| m.0[3]),
        hc_cost_usd: m.map(|m| m.0[5]),
        qrec: m.and_then(|m| m.qrec()),
        csret: m.and_then(|m| m.csret()),
    }
}

const INTERFACES: [Interface; 5] = [
    Interface::Raw,
    Interface::Disclosure,
    Interface::CompactPre,
    Interface::CompactSuf,
    Interface::TrajDrop,
];

fn audit(input: &StudyInput) -> Result<Audit, ReportError> {
    let mut max = 0i64;
    let mut bad: Vec<(&StudyEpisode, i64)> = Vec::new();
    let mut n = 0;
    for e in input.episodes.iter().filter(|e| e.finished) {
        n += 1;
        let sum: Cost = e.phases.iter().copied().sum();
        let diff = (sum.0 - e.cost.0).abs();
        max = max.max(diff);
        if diff != 0 {
            bad.push((e, diff));
        }
    }
    if let Some((e, diff)) = bad.first() {
        return Err(ReportError::AuditFailed {
            count: bad.len(),
            task_id: e.task_id.clone(),
            cell: format!("{:?}", e.cell),
            diff_usd: Cost(*diff).usd(),
        });
    }
    Ok(Audit {
        reconciled: true,
        tasks: n,
        max_abs_diff_usd: Cost(max).usd(),
    })
}

/// Build the study report; fails when the cost audit does not reconcile.
pub fn build_study(input: &StudyInput) -> Result<StudyReport, ReportError> {
    let audit = audit(input)?;
    let idx = Index::new(input);
    let mut report = StudyReport {
        thresholds: input.thresholds.clone(),
        audit,
        cells: Vec::new(),
        table1: Vec::new(),
        windows: Vec::new(),
        buckets: Vec::new(),
        restart_controls: Vec::new(),
        decomposition: Vec::new(),
        intervals: Vec::new(),
    };
    let buckets: BTreeSet<&str> = input.episodes.iter().map(|e| e.bucket.as_str()).collect();
    for (lc, hc) in &input.pairs {
        let pair = format!("{lc}/{hc}");
        for (dir, sender, receiver) in [
            (Direction::Escalation, lc, hc),
            (Direction::Downshift, hc, lc),
        ] {
            let ps: BTreeSet<u32> = idx
                .handoffs
                .keys()
                .filter(|k| k.0 == sender && k.1 == receiver)
                .map(|k| k.2)
                .collect();
            let interfaces: Vec<Interface> = INTERFACES
                .into_iter()
                .filter(|i| {
                    idx.handoffs
                        .keys()
                        .any(|k| k.0 == sender && k.1 == receiver && k.3 == *i)
                })
                .collect();
            for &interface in &interfaces {
                let agg = |window: &str,
                           keep: &dyn Fn(u32) -> bool,
                           bucket: Option<&str>,
                           weights: Option<&BTreeMap<String, f64>>| {
                    let mut per_p = Vec::new();
                    let mut eps_all = Vec::new();
                    let mut n_matched = 0;
                    for &p in ps.iter().filter(|p| keep(**p)) {
                        let eps: Vec<&StudyEpisode> = idx
                            .handoffs
                            .get(&(sender.as_str(), receiver.as_str(), p, interface))
                            .map(|v| {
                                v.iter()
                                    .copied()
                                    .filter(|e| bucket.is_none_or(|b| e.bucket == b))
                                    .collect()
                            })
                            .unwrap_or_default();
                        let (units, ids) = matched(&idx, &eps, lc, hc, bucket);
                        n_matched += units.len();
                        if let Some(m) = Means::of(&units, weights, &ids) {
                            per_p.push(m);
                        }
                        eps_all.extend(eps);
                    }
                    (
                        row(
                            &pair,
                            dir,
                            interface.as_str(),
                            None,
                            window,
                            &eps_all,
                            n_matched,
                            Means::mean(&per_p),
                        ),
                        Means::mean(&per_p),
                    )
                };
                for &p in &ps {
                    let eps = idx
                        .handoffs
                        .get(&(sender.as_str(), receiver.as_str(), p, interface))
                        .cloned()
                        .unwrap_or_default();
                    let (units, ids) = matched(&idx, &eps, lc, hc, None);
                    report.cells.push(row(
                        &pair,
                        dir,
                        interface.as_str(),
                        Some(p),
                        "all",
                        &eps,
                        units.len(),
                        Means::of(&units, None, &ids),
                    ));
                }
                report.table1.push(agg("all", &|_| true, None, None).0);
                report
                    .windows
                    .push(agg("early", &|p| p <= 15, None, None).0);
                report.windows.push(agg("late", &|p| p >= 25, None, None).0);
                for b in &buckets {
                    report.buckets.push(agg(b, &|_| true, Some(b), None).0);
                }
                // decomposition
                let eps: Vec<&StudyEpisode> = ps
                    .iter()
                    .flat_map(|p| {
                        idx.handoffs
                            .get(&(sender.as_str(), receiver.as_str(), *p, interface))
                            .cloned()
                            .unwrap_or_default()
                    })
                    .filter(|e| e.fired == Some(true) && e.finished)
                    .collect();
                let post: f64 = eps.iter().map(|e| (e.phases[1] + e.phases[2]).usd()).sum();
                let steps: u64 = eps.iter().map(|e| u64::from(e.suffix_steps)).sum();
                report.decomposition.push(Decomposition {
                    pair: pair.clone(),
                    direction: dir.as_str().to_string(),
                    interface: interface.as_str().to_string(),
                    usd_per_suffix_step: (steps > 0).then(|| post / steps as f64),
                    suffix_steps: (!eps.is_empty()).then(|| steps as f64 / eps.len() as f64),
                    usd_per_step_vs_compact_pre: None,
                    steps_vs_compact_pre: None,
                });
            }
            // decomposition relative to compact_pre
            let base = report
                .decomposition
                .iter()
                .find(|d| {
                    d.pair == pair && d.direction == dir.as_str() && d.interface == "compact_pre"
                })
                .cloned();
            if let Some(base) = base {
                for d in report
                    .decomposition
                    .iter_mut()
                    .filter(|d| d.pair == pair && d.direction == dir.as_str())
                {
                    d.usd_per_step_vs_compact_pre = d
                        .usd_per_suffix_step
                        .zip(base.usd_per_suffix_step)
                        .filter(|(_, b)| *b > 0.0)
                        .map(|(a, b)| a / b);
                    d.steps_vs_compact_pre = d
                        .suffix_steps
                        .zip(base.suffix_steps)
                        .filter(|(_, b)| *b > 0.0)
                        .map(|(a, b)| a / b);
                }
            }
            if dir == Direction::Escalation {
                report
                    .restart_controls
                    .extend(restart(&idx, &pair, lc, hc, &ps));
            }
            if input.bootstrap > 0 && interfaces.contains(&Interface::CompactPre) {
                report.intervals.extend(bootstrap(
                    input,
                    &idx,
                    &pair,
                    dir,
                    lc,
                    hc,
                    sender,
                    receiver,
                    &ps,
                    &interfaces,
                ));
            }
        }
    }
    Ok(report)
}

/// The restart controls of a pair, composed from the escalation handoffs' prefixes and
/// the anchors.
fn restart(idx: &Index<'_>, pair: &str, lc: &str, hc: &str, ps: &BTreeSet<u32>) -> Vec<StudyRow> {
    let mut abort = Vec::new();
    let mut full = Vec::new();
    let (mut n_abort, mut n_full) = (0, 0);
    let mut fired_eps = Vec::new();
    for &p in ps {
        // the prefix through s is the same under every interface of a forked run; take
        // each unit once, from the first interface that has it
        let mut units: BTreeMap<Unit, Obs> = BTreeMap::new();
        let mut full_units: BTreeMap<Unit, Obs> = BTreeMap::new();
        for interface in INTERFACES {
            for e in idx
                .handoffs
                .get(&(lc, hc, p, interface))
                .into_iter()
                .flatten()
            {
                if e.fired != Some(true) {
                    continue;
                }
                let (Some(a), Some(b)) = (idx.anchor(lc, e), idx.anchor(hc, e)) else {
                    continue;
                };
                let (Some(rl), Some(rh)) = (score(a), score(b)) else {
                    continue;
                };
                let key = (e.task_id.clone(), e.replicate);
                if !units.contains_key(&key) {
                    fired_eps.push(*e);
                }
                units.entry(key.clone()).or_insert([
                    rh,
                    e.phases[0].usd() + b.cost.usd(),
                    rl,
                    a.cost.usd(),
                    rh,
                    b.cost.usd(),
                ]);
                full_units.entry(key).or_insert([
                    rh,
                    a.cost.usd() + b.cost.usd(),
                    rl,
                    a.cost.usd(),
                    rh,
                    b.cost.usd(),
                ]);
            }
        }
        let u: Vec<_> = units.values().copied().collect();
        let ids: Vec<&str> = units.keys().map(|k| k.0.as_str()).collect();
        n_abort += u.len();
        if let Some(m) = Means::of(&u, None, &ids) {
            abort.push(m);
        }
        let u: Vec<_> = full_units.values().copied().collect();
        n_full += u.len();
        if let Some(m) = Means::of(&u, None, &ids) {
            full.push(m);
        }
    }
    vec![
        row(
            pair,
            Direction::Escalation,
            "abort+hc_fresh",
            None,
            "all",
            &fired_eps,
            n_abort,
            Means::mean(&abort),
        ),
        row(
            pair,
            Direction::Escalation,
            "lc_full+hc_full",
            None,
            "all",
            &fired_eps,
            n_full,
            Means::mean(&full),
        ),
    ]
}

/// Paired task-level bootstrap of each interface's Table-1 pass rate and cost minus
/// `compact_pre`'s.
#[allow(clippy::too_many_arguments)]
fn bootstrap(
    input: &StudyInput,
    idx: &Index<'_>,
    pair: &str,
    dir: Direction,
    lc: &str,
    hc: &str,
    sender: &str,
    receiver: &str,
    ps: &BTreeSet<u32>,
    interfaces: &[Interface],
) -> Vec<Interval> {
    let tasks: Vec<String> = input
        .episodes
        .iter()
        .map(|e| e.task_id.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if tasks.is_empty() {
        return Vec::new();
    }
    // per interface and p: the matched units with their task ids
    let data: BTreeMap<(Interface, u32), Matched<'_>> = interfaces
        .iter()
        .flat_map(|i| ps.iter().map(move |p| (*i, *p)))
        .map(|(i, p)| {
            let eps = idx
                .handoffs
                .get(&(sender, receiver, p, i))
                .cloned()
                .unwrap_or_default();
            ((i, p), matched(idx, &eps, lc, hc, None))
        })
        .collect();
    let table1 = |i: Interface, w: Option<&BTreeMap<String, f64>>| {
        let per_p: Vec<Means> = ps
            .iter()
            .filter_map(|p| data.get(&(i, *p)).and_then(|(u, ids)| Means::of(u, w, ids)))
            .collect();
        Means::mean(&per_p)
    };
    let mut rng = ChaCha8Rng::seed_from_u64(input.seed);
    let mut draws: BTreeMap<Interface, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for _ in 0..input.bootstrap {
        let mut w: BTreeMap<String, f64> = BTreeMap::new();
        for _ in 0..tasks.len() {
            *w.entry(tasks[rng.gen_range(0..tasks.len())].clone())
                .or_default() += 1.0;
        }
        let Some(base) = table1(Interface::CompactPre, Some(&w)) else {
            continue;
        };
        for &i in interfaces {
            if let Some(m) = table1(i, Some(&w)) {
                let d = draws.entry(i).or_default();
                d.0.push(100.0 * (m.0[0] - base.0[0]));
                d.1.push(m.0[1] - base.0[1]);
            }
        }
    }
    let Some(base) = table1(Interface::CompactPre, None) else {
        return Vec::new();
    };
    interfaces
        .iter()
        .filter(|i| **i != Interface::CompactPre)
        .filter_map(|&i| {
            let m = table1(i, None)?;
            let (mut r, mut c) = draws.remove(&i)?;
            let q = |v: &mut Vec<f64>, p: f64| {
                v.sort_by(|a, b| a.total_cmp(b));
                v[((p * (v.len() - 1) as f64).round() as usize).min(v.len() - 1)]
            };
            Some(Interval {
                pair: pair.to_string(),
                direction: dir.as_str().to_string(),
                interface: i.as_str().to_string(),
                pass_rate_diff: [
                    100.0 * (m.0[0] - base.0[0]),
                    q(&mut r, 0.025),
                    q(&mut r, 0.975),
                ],
                cost_diff_usd: [m.0[1] - base.0[1], q(&mut c, 0.025), q(&mut c, 0.975)],
                replicates: r.len(),
            })
        })
        .collect()
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "–".to_string(), f)
}

const ROW_HEAD: [&str; 13] = [
    "pair",
    "direction",
    "interface",
    "p",
    "window",
    "n",
    "fired",
    "unfired",
    "matched",
    "pass rate",
    "$ / task",
    "QRec",
    "CSRet",
];

impl StudyRow {
    fn cells(&self) -> Vec<String> {
        vec![
            self.pair.clone(),
            self.direction.clone(),
            self.interface.clone(),
            self.p.map_or_else(|| "avg".into(), |p| format!("p{p}")),
            self.window.clone(),
            self.n.to_string(),
            self.n_fired.to_string(),
            self.n_unfired.to_string(),
            self.n_matched.to_string(),
            opt(self.pass_rate, |r| format!("{r:.1}%")),
            opt(self.mean_cost_usd, |c| format!("${c:.4}")),
            opt(self.qrec, |q| format!("{q:.1}")),
            opt(self.csret, |q| format!("{q:.1}")),
        ]
    }
}

type Section = (String, Vec<String>, Vec<Vec<String>>);

impl StudyReport {
    fn sections(&self) -> Vec<Section> {
        let head: Vec<String> = ROW_HEAD.iter().map(|s| s.to_string()).collect();
        let rows = |v: &[StudyRow]| v.iter().map(StudyRow::cells).collect::<Vec<_>>();
        vec![
            (
                "Handoff switch calls s_b(p) (nearest rank of the prefix model's termination steps)".into(),
                ["pair", "direction", "bucket", "p", "s"].iter().map(|s| s.to_string()).collect(),
                self.thresholds
                    .iter()
                    .map(|t| vec![t.pair.clone(), t.direction.clone(), t.bucket.clone(), format!("p{}", t.p), t.s.to_string()])
                    .collect(),
            ),
            (
                "Table 1: per interface, matched fired subsets, equal weight over switch points".into(),
                head.clone(),
                rows(&self.table1),
            ),
            ("Early (p5–p15) and late (p25–p50) windows".into(), head.clone(), rows(&self.windows)),
            ("Per difficulty bucket".into(), head.clone(), rows(&self.buckets)),
            ("Restart controls (composed from matched runs, no new calls)".into(), head.clone(), rows(&self.restart_controls)),
            (
                "Step-cost decomposition (post-handoff cost per suffix step, relative to compact_pre)".into(),
                ["pair", "direction", "interface", "$ / suffix step", "suffix steps", "$/step ÷ compact_pre", "steps ÷ compact_pre"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                self.decomposition
                    .iter()
                    .map(|d| {
                        vec![
                            d.pair.clone(),
                            d.direction.clone(),
                            d.interface.clone(),
                            opt(d.usd_per_suffix_step, |c| format!("${c:.5}")),
                            opt(d.suffix_steps, |s| format!("{s:.1}")),
                            opt(d.usd_per_step_vs_compact_pre, |r| format!("{r:.2}")),
                            opt(d.steps_vs_compact_pre, |r| format!("{r:.2}")),
                        ]
                    })
                    .collect(),
            ),
            (
                "Interface minus compact_pre, paired task-level bootstrap (95%)".into(),
                ["pair", "direction", "interface", "Δ pass rate (pts)", "95% interval", "Δ $ / task", "95% interval", "replicates"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect(),
                self.intervals
                    .iter()
                    .map(|i| {
                        vec![
                            i.pair.clone(),
                            i.direction.clone(),
                            i.interface.clone(),
                            format!("{:+.1}", i.pass_rate_diff[0]),
                            format!("[{:+.1}, {:+.1}]", i.pass_rate_diff[1], i.pass_rate_diff[2]),
                            format!("{:+.4}", i.cost_diff_usd[0]),
                            format!("[{:+.4}, {:+.4}]", i.cost_diff_usd[1], i.cost_diff_usd[2]),
                            i.replicates.to_string(),
                        ]
                    })
                    .collect(),
            ),
            ("Every cell".into(), head, rows(&self.cells)),
        ]
    }

    fn audit_line(&self) -> String {
        format!(
            "Cost audit: prefix + handoff + suffix reconcile with the total of all {} finished episodes (largest difference ${:.12}).",
            self.audit.tasks, self.audit.max_abs_diff_usd
        )
    }

    /// The study as Markdown sections (to follow the agent report).
    pub fn to_markdown(&self) -> String {
        let mut s = format!("# Handoff study\n\n{}\n\n", self.audit_line());
        for (title, head, rows) in self.sections() {
            s.push_str(&format!("## {title}\n\n"));
            s.push_str(&md_table(&head, rows.into_iter()));
            s.push('\n');
        }
        s
    }

    /// The study as HTML sections (to go inside the agent report's page).
    pub fn to_html(&self) -> String {
        let mut s = format!(
            "<h1>Handoff study</h1>\n<p>{}</p>\n",
            html_escape(&self.audit_line())
        );
        for plot in self.plots() {
            s.push_str(&format!(
                "<h2>{}</h2>\n{}\n",
                html_escape(&plot.title),
                plot.svg
            ));
        }
        for (title, head, rows) in self.sections() {
            s.push_str(&format!("<h2>{}</h2>\n", html_escape(&title)));
            s.push_str(&html_table(&head, rows.into_iter()));
        }
        s
    }

    /// The study's JSON keys (`thresholds`, `audit`, `cells`, `table1`, `windows`,
    /// `buckets`, `restart_controls`, `decomposition`, `intervals`), to merge into the
    /// agent report's object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a study always serializes")
    }
}
