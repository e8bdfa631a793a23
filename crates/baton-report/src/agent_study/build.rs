//! Building the study report: indexing the episodes, one plan row per table row (and per
//! hidden component of an aggregate), then the metrics core's evaluation and bootstrap.

use std::collections::{BTreeMap, BTreeSet};

use baton_types::agent::{AgentCell, Difficulty};
use baton_types::{Cost, Direction, Interface};

use super::{
    Audit, Decomposition, HANDOVER_MIN_EPISODES, HandoverEpisode, HandoverRelation, Interval,
    StudyEpisode, StudyInput, StudyReport, StudyRow,
};
use crate::ReportError;
use crate::input::BootstrapConfig;
use crate::metrics::{
    Means, Plan, Recovery, RestartUnit, RowIntervals, Source, Sums, add_sums, unit_sums,
};
use crate::percentile::percentile_interval;

/// The interfaces in report order.
const INTERFACES: [Interface; 6] = [
    Interface::Raw,
    Interface::Disclosure,
    Interface::CompactPre,
    Interface::Handover,
    Interface::CompactSuf,
    Interface::TrajDrop,
];

/// A (task, replicate) unit.
type Unit = (String, u32);

/// A handoff cell's key: sender, receiver, percentile, interface.
type HandoffKey<'a> = (&'a str, &'a str, u32, Interface);

/// A verdict as a score: 1 resolved, 0 not; `None` unless finished with a verdict.
fn score(e: &StudyEpisode) -> Option<f64> {
    e.resolved
        .filter(|_| e.finished)
        .map(|r| if r { 1.0 } else { 0.0 })
}

/// The episodes by cell, and the study's tasks numbered (its one bootstrap stratum).
struct Index<'a> {
    anchors: BTreeMap<(&'a str, Unit), &'a StudyEpisode>,
    handoffs: BTreeMap<HandoffKey<'a>, Vec<&'a StudyEpisode>>,
    tasks: BTreeMap<&'a str, usize>,
}

impl<'a> Index<'a> {
    fn new(input: &'a StudyInput) -> Self {
        let mut anchors = BTreeMap::new();
        let mut handoffs: BTreeMap<_, Vec<_>> = BTreeMap::new();
        let mut tasks: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &input.episodes {
            tasks.insert(&e.task_id, 0);
            match &e.cell {
                AgentCell::Single { model } => {
                    anchors.insert((model.as_str(), (e.task_id.clone(), e.replicate)), e);
                }
                AgentCell::AgentHandoff {
                    sender,
                    receiver,
                    p,
                    interface,
                    ..
                } => handoffs
                    .entry((sender.as_str(), receiver.as_str(), *p, *interface))
                    .or_default()
                    .push(e),
            }
        }
        for (i, t) in tasks.values_mut().enumerate() {
            *t = i;
        }
        Index {
            anchors,
            handoffs,
            tasks,
        }
    }

    fn anchor(&self, model: &str, e: &StudyEpisode) -> Option<&'a StudyEpisode> {
        self.anchors
            .get(&(model, (e.task_id.clone(), e.replicate)))
            .copied()
    }

    fn cell(&self, sender: &str, receiver: &str, p: u32, i: Interface) -> Vec<&'a StudyEpisode> {
        self.handoffs
            .get(&(sender, receiver, p, i))
            .cloned()
            .unwrap_or_default()
    }

    /// The switch percentiles of the handoffs from `sender` to `receiver`.
    fn percentiles(&self, sender: &str, receiver: &str) -> BTreeSet<u32> {
        self.handoffs
            .keys()
            .filter(|k| k.0 == sender && k.1 == receiver)
            .map(|k| k.2)
            .collect()
    }

    /// Their interfaces, in report order.
    fn interfaces(&self, sender: &str, receiver: &str) -> Vec<Interface> {
        INTERFACES
            .into_iter()
            .filter(|i| {
                self.handoffs
                    .keys()
                    .any(|k| k.0 == sender && k.1 == receiver && k.3 == *i)
            })
            .collect()
    }

    /// Per-task sums of `units`, as a plan source.
    fn source(&self, units: impl IntoIterator<Item = (&'a str, Sums)>) -> Source {
        let mut by_task: BTreeMap<usize, Sums> = BTreeMap::new();
        for (task, sums) in units {
            add_sums(by_task.entry(self.tasks[task]).or_default(), &sums);
        }
        Source::Tasks {
            family: 0,
            sums: by_task.into_iter().collect(),
        }
    }

    /// The matched fired units of `eps` (in `bucket`, if given), with their count.
    fn matched(
        &self,
        eps: &[&'a StudyEpisode],
        lc: &str,
        hc: &str,
        bucket: Option<Difficulty>,
    ) -> (Source, usize) {
        let mut units = Vec::new();
        for e in eps {
            if e.fired() != Some(true) || bucket.is_some_and(|b| b != e.bucket) {
                continue;
            }
            let (Some(a), Some(b)) = (self.anchor(lc, e), self.anchor(hc, e)) else {
                continue;
            };
            if let (Some(r), Some(rl), Some(rh)) = (score(e), score(a), score(b)) {
                let sums = unit_sums((r, e.cost.usd()), (rl, a.cost.usd()), (rh, b.cost.usd()));
                units.push((e.task_id.as_str(), sums));
            }
        }
        let n = units.len();
        (self.source(units), n)
    }
}

/// Which table a plan row's result goes to; `Hidden` rows only feed aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Table {
    Cells,
    Table1,
    Windows,
    Buckets,
    Restart,
    Hidden,
}

/// Rows under construction: the plan, and per plan row its table and skeleton.
struct Builder {
    plan: Plan,
    rows: Vec<(Table, StudyRow)>,
}

impl Builder {
    fn push(&mut self, table: Table, row: StudyRow, source: Source) -> usize {
        self.rows.push((table, row));
        self.plan.push(source, true, true)
    }

    fn mean(&mut self, table: Table, mut row: StudyRow, children: Vec<usize>) -> usize {
        row.n_matched = children.iter().map(|&c| self.rows[c].1.n_matched).sum();
        self.push(table, row, Source::Mean(children))
    }
}

/// A row's name and counts over `eps`, before its numbers.
fn skeleton(
    pair: &str,
    dir: Direction,
    interface: &str,
    p: Option<u32>,
    window: &str,
    eps: &[&StudyEpisode],
    n_matched: usize,
) -> StudyRow {
    StudyRow {
        pair: pair.to_string(),
        direction: dir.as_str().to_string(),
        interface: interface.to_string(),
        p,
        window: window.to_string(),
        n: eps.len(),
        n_fired: eps.iter().filter(|e| e.fired() == Some(true)).count(),
        n_unfired: eps.iter().filter(|e| e.fired() == Some(false)).count(),
        n_incomplete: eps
            .iter()
            .filter(|e| e.fired() == Some(true) && !e.finished)
            .count(),
        n_matched,
        pass_rate: None,
        mean_cost_usd: None,
        lc_pass_rate: None,
        hc_pass_rate: None,
        lc_cost_usd: None,
        hc_cost_usd: None,
        qrec: None,
        csret: None,
        qrec_omitted_reason: None,
        csret_omitted_reason: None,
        pass_rate_ci: None,
        qrec_ci: None,
        csret_ci: None,
    }
}

/// A row's numbers from its means and intervals.
fn fill(row: &mut StudyRow, means: Option<&Means>, ci: Option<&RowIntervals>) {
    // one family's tables: the 5-point rule applies throughout
    let r = Recovery::of(means, true);
    (row.qrec, row.qrec_omitted_reason) = (r.qrec, r.qrec_omitted);
    (row.csret, row.csret_omitted_reason) = (r.csret, r.csret_omitted);
    let Some(m) = means else {
        return;
    };
    row.pass_rate = Some(m.r_m);
    row.mean_cost_usd = Some(m.c_m);
    row.lc_pass_rate = Some(m.r_lc);
    row.hc_pass_rate = Some(m.r_hc);
    row.lc_cost_usd = Some(m.c_lc);
    row.hc_cost_usd = Some(m.c_hc);
    if let Some(ci) = ci {
        row.pass_rate_ci = ci.score;
        row.qrec_ci = ci.qrec.filter(|_| row.qrec.is_some());
        row.csret_ci = ci.csret.filter(|_| row.csret.is_some());
    }
}

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
            cell: e.cell.label(),
            diff_usd: Cost(*diff).usd(),
        });
    }
    Ok(Audit {
        reconciled: true,
        tasks: n,
        max_abs_diff_usd: Cost(max).usd(),
    })
}

/// An interface's Table-1 row and `compact_pre`'s, for the bootstrapped difference.
struct Difference {
    pair: String,
    direction: Direction,
    interface: Interface,
    row: usize,
    base: usize,
}

/// One (pair, direction) of the study.
struct Leg<'s> {
    pair: &'s str,
    dir: Direction,
    lc: &'s str,
    hc: &'s str,
    sender: &'s str,
    receiver: &'s str,
}

/// Build the study report; fails when the cost audit does not reconcile.
pub fn build_study(input: &StudyInput) -> Result<StudyReport, ReportError> {
    let audit = audit(input)?;
    let idx = Index::new(input);
    let mut b = Builder {
        plan: Plan {
            rows: Vec::new(),
            family_sizes: vec![idx.tasks.len()],
        },
        rows: Vec::new(),
    };
    let mut decomposition = Vec::new();
    let mut differences = Vec::new();
    // the buckets by name, as the report has always listed them
    let mut buckets: Vec<Difficulty> = input
        .episodes
        .iter()
        .map(|e| e.bucket)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    buckets.sort_by_key(|b| b.name());
    for (lc, hc) in &input.pairs {
        let pair = format!("{lc}/{hc}");
        for (dir, sender, receiver) in [
            (Direction::Escalation, lc, hc),
            (Direction::Downshift, hc, lc),
        ] {
            let d = Leg {
                pair: &pair,
                dir,
                lc,
                hc,
                sender,
                receiver,
            };
            add_direction(&mut b, &idx, &d, &buckets, &mut differences);
            decomposition.extend(decompose(&idx, &d));
            if dir == Direction::Escalation {
                add_restart(&mut b, &idx, &d);
            }
        }
    }

    let mut point = Vec::new();
    b.plan.evaluate(None, &mut point);
    let mut draws: Vec<(Vec<f64>, Vec<f64>)> = vec![Default::default(); differences.len()];
    let intervals = (input.bootstrap > 0).then(|| {
        let cfg = BootstrapConfig {
            replicates: input.bootstrap,
            seed: input.seed,
        };
        crate::bootstrap::resample(&b.plan, &cfg, |rows| {
            for (d, (r, c)) in differences.iter().zip(&mut draws) {
                if let (Some(m), Some(base)) = (&rows[d.row], &rows[d.base]) {
                    r.push(m.r_m - base.r_m);
                    c.push(m.c_m - base.c_m);
                }
            }
        })
    });

    let mut report = StudyReport {
        thresholds: input.thresholds.clone(),
        audit,
        cells: Vec::new(),
        table1: Vec::new(),
        windows: Vec::new(),
        buckets: Vec::new(),
        restart_controls: Vec::new(),
        decomposition,
        intervals: Vec::new(),
        handover: handover_relation(input),
    };
    for (i, (table, mut row)) in b.rows.into_iter().enumerate() {
        fill(
            &mut row,
            point[i].as_ref(),
            intervals.as_ref().map(|v| &v[i]),
        );
        match table {
            Table::Cells => report.cells.push(row),
            Table::Table1 => report.table1.push(row),
            Table::Windows => report.windows.push(row),
            Table::Buckets => report.buckets.push(row),
            Table::Restart => report.restart_controls.push(row),
            Table::Hidden => {}
        }
    }
    if intervals.is_some() {
        for (d, (mut r, mut c)) in differences.into_iter().zip(draws) {
            let (Some(m), Some(base)) = (&point[d.row], &point[d.base]) else {
                continue;
            };
            let replicates = r.len();
            let (Some(ri), Some(ci)) = (percentile_interval(&mut r), percentile_interval(&mut c))
            else {
                continue;
            };
            report.intervals.push(Interval {
                pair: d.pair,
                direction: d.direction.as_str().to_string(),
                interface: d.interface.as_str().to_string(),
                pass_rate_diff: [m.r_m - base.r_m, ri[0], ri[1]],
                cost_diff_usd: [m.c_m - base.c_m, ci[0], ci[1]],
                replicates,
            });
        }
    }
    Ok(report)
}

/// The cells of one direction, its Table-1 rows, windows and buckets.
fn add_direction<'a>(
    b: &mut Builder,
    idx: &Index<'a>,
    d: &Leg<'_>,
    buckets: &[Difficulty],
    differences: &mut Vec<Difference>,
) {
    let ps = idx.percentiles(d.sender, d.receiver);
    let interfaces = idx.interfaces(d.sender, d.receiver);
    let mut table1: Vec<(Interface, usize)> = Vec::new();
    for &interface in &interfaces {
        let name = interface.as_str();
        let mut per_p: Vec<(u32, usize)> = Vec::new();
        let mut eps_all = Vec::new();
        for &p in &ps {
            let eps = idx.cell(d.sender, d.receiver, p, interface);
            let (source, n) = idx.matched(&eps, d.lc, d.hc, None);
            let row = skeleton(d.pair, d.dir, name, Some(p), "all", &eps, n);
            per_p.push((p, b.push(Table::Cells, row, source)));
            eps_all.extend(eps);
        }
        let over = |keep: &dyn Fn(u32) -> bool| -> (Vec<usize>, Vec<&StudyEpisode>) {
            let rows = per_p
                .iter()
                .filter(|(p, _)| keep(*p))
                .map(|(_, r)| *r)
                .collect();
            let eps = eps_all
                .iter()
                .copied()
                .filter(|e| matches!(e.cell, AgentCell::AgentHandoff { p, .. } if keep(p)))
                .collect();
            (rows, eps)
        };
        let (rows, eps) = over(&|_| true);
        let row = skeleton(d.pair, d.dir, name, None, "all", &eps, 0);
        table1.push((interface, b.mean(Table::Table1, row, rows)));
        for (window, keep) in [
            ("early", &(|p: u32| p <= 15) as &dyn Fn(u32) -> bool),
            ("late", &|p: u32| p >= 25),
        ] {
            let (rows, eps) = over(keep);
            let row = skeleton(d.pair, d.dir, name, None, window, &eps, 0);
            b.mean(Table::Windows, row, rows);
        }
        for &bucket in buckets {
            let mut rows = Vec::new();
            let mut eps_bucket = Vec::new();
            for &p in &ps {
                let eps: Vec<&StudyEpisode> = idx
                    .cell(d.sender, d.receiver, p, interface)
                    .into_iter()
                    .filter(|e| e.bucket == bucket)
                    .collect();
                let (source, n) = idx.matched(&eps, d.lc, d.hc, Some(bucket));
                let row = skeleton(d.pair, d.dir, name, Some(p), bucket.name(), &eps, n);
                rows.push(b.push(Table::Hidden, row, source));
                eps_bucket.extend(eps);
            }
            let row = skeleton(d.pair, d.dir, name, None, bucket.name(), &eps_bucket, 0);
            b.mean(Table::Buckets, row, rows);
        }
    }
    if let Some(&(_, base)) = table1.iter().find(|(i, _)| *i == Interface::CompactPre) {
        for &(interface, row) in table1.iter().filter(|(i, _)| *i != Interface::CompactPre) {
            differences.push(Difference {
                pair: d.pair.to_string(),
                direction: d.dir,
                interface,
                row,
                base,
            });
        }
    }
}

/// The restart controls of a pair, composed from the escalation handoffs' prefixes and
/// the anchors: per switch percentile a hidden row of each, then their equal-weight mean.
fn add_restart(b: &mut Builder, idx: &Index<'_>, d: &Leg<'_>) {
    let ps = idx.percentiles(d.lc, d.hc);
    let (mut abort, mut full) = (Vec::new(), Vec::new());
    let mut fired_eps = Vec::new();
    for &p in &ps {
        // the prefix through s is the same under every interface of a forked run; take
        // each unit once, from the first interface that has it
        let mut units: BTreeMap<Unit, (&str, RestartUnit)> = BTreeMap::new();
        for interface in INTERFACES {
            for e in idx.cell(d.lc, d.hc, p, interface) {
                if e.fired() != Some(true) {
                    continue;
                }
                let (Some(a), Some(h)) = (idx.anchor(d.lc, e), idx.anchor(d.hc, e)) else {
                    continue;
                };
                let (Some(rl), Some(rh)) = (score(a), score(h)) else {
                    continue;
                };
                let key = (e.task_id.clone(), e.replicate);
                if units.contains_key(&key) {
                    continue;
                }
                fired_eps.push(e);
                let unit = RestartUnit {
                    prefix: e.phases[0].usd(),
                    lc: (rl, a.cost.usd()),
                    hc: (rh, h.cost.usd()),
                };
                units.insert(key, (e.task_id.as_str(), unit));
            }
        }
        let n = units.len();
        let none: [&StudyEpisode; 0] = [];
        for (rows, compose) in [
            (&mut abort, RestartUnit::abort as fn(&RestartUnit) -> Sums),
            (&mut full, RestartUnit::full_restart),
        ] {
            let source = idx.source(units.values().map(|(t, u)| (*t, compose(u))));
            let row = skeleton(d.pair, d.dir, "", Some(p), "all", &none, n);
            rows.push(b.push(Table::Hidden, row, source));
        }
    }
    for (name, rows) in [("abort+hc_fresh", abort), ("lc_full+hc_full", full)] {
        let row = skeleton(d.pair, d.dir, name, None, "all", &fired_eps, 0);
        b.mean(Table::Restart, row, rows);
    }
}

/// The step-cost decomposition of one direction, relative to `compact_pre`.
fn decompose(idx: &Index<'_>, d: &Leg<'_>) -> Vec<Decomposition> {
    let ps = idx.percentiles(d.sender, d.receiver);
    let mut out: Vec<Decomposition> = idx
        .interfaces(d.sender, d.receiver)
        .into_iter()
        .map(|interface| {
            let eps: Vec<&StudyEpisode> = ps
                .iter()
                .flat_map(|p| idx.cell(d.sender, d.receiver, *p, interface))
                .filter(|e| e.fired() == Some(true) && e.finished)
                .collect();
            let post: f64 = eps.iter().map(|e| (e.phases[1] + e.phases[2]).usd()).sum();
            let steps: u64 = eps.iter().map(|e| u64::from(e.suffix_steps)).sum();
            Decomposition {
                pair: d.pair.to_string(),
                direction: d.dir.as_str().to_string(),
                interface: interface.as_str().to_string(),
                usd_per_suffix_step: (steps > 0).then(|| post / steps as f64),
                suffix_steps: (!eps.is_empty()).then(|| steps as f64 / eps.len() as f64),
                usd_per_step_vs_compact_pre: None,
                steps_vs_compact_pre: None,
            }
        })
        .collect();
    let base = out.iter().find(|d| d.interface == "compact_pre").cloned();
    if let Some(base) = base {
        let ratio =
            |a: Option<f64>, b: Option<f64>| a.zip(b).filter(|(_, b)| *b > 0.0).map(|(a, b)| a / b);
        for d in &mut out {
            d.usd_per_step_vs_compact_pre = ratio(d.usd_per_suffix_step, base.usd_per_suffix_step);
            d.steps_vs_compact_pre = ratio(d.suffix_steps, base.suffix_steps);
        }
    }
    out
}

/// The `handover` episodes' document lint scores against their resolution: every linted
/// episode, and Spearman's ρ over those with a resolution, with the 95 % interval of
/// Fisher's z under the standard error `sqrt(1.06 / (n − 3))`
/// (`baton_handover::traps::stats::spearman`), given from [`HANDOVER_MIN_EPISODES`]
/// episodes. `None` when the study has no linted `handover` episode.
pub fn handover_relation(input: &StudyInput) -> Option<HandoverRelation> {
    let mut episodes: Vec<HandoverEpisode> = Vec::new();
    for (lc, hc) in &input.pairs {
        for (dir, sender, receiver) in [
            (Direction::Escalation, lc, hc),
            (Direction::Downshift, hc, lc),
        ] {
            for e in &input.episodes {
                let AgentCell::AgentHandoff {
                    sender: s,
                    receiver: r,
                    p,
                    interface: Interface::Handover,
                    ..
                } = &e.cell
                else {
                    continue;
                };
                let Some(lint) = e.handover.as_ref().filter(|_| s == sender && r == receiver)
                else {
                    continue;
                };
                episodes.push(HandoverEpisode {
                    task_id: e.task_id.clone(),
                    replicate: e.replicate,
                    pair: format!("{lc}/{hc}"),
                    direction: dir.as_str().to_string(),
                    p: *p,
                    score: lint.score,
                    valid: lint.valid,
                    verdict: lint.verdict.clone(),
                    claims_held: lint
                        .claims
                        .iter()
                        .filter(|c| *c == "held-and-holds")
                        .count(),
                    claims: lint.claims.len(),
                    resolved: score(e).map(|v| v > 0.5),
                });
            }
        }
    }
    if episodes.is_empty() {
        return None;
    }
    episodes.sort_by(|a, b| {
        (&a.pair, &a.direction, a.p, &a.task_id, a.replicate).cmp(&(
            &b.pair,
            &b.direction,
            b.p,
            &b.task_id,
            b.replicate,
        ))
    });
    let pairs: Vec<(f64, f64)> = episodes
        .iter()
        .filter_map(|e| {
            e.resolved
                .map(|r| (f64::from(e.score), if r { 1.0 } else { 0.0 }))
        })
        .collect();
    let n = pairs.len();
    let correlation = (n >= HANDOVER_MIN_EPISODES)
        .then(|| baton_handover::traps::stats::spearman(&pairs))
        .flatten();
    let note = if n < HANDOVER_MIN_EPISODES {
        Some(format!(
            "too few episodes: {n} with a lint score and a resolution, and the correlation is given from {HANDOVER_MIN_EPISODES}"
        ))
    } else if correlation.is_none() {
        let constant =
            |side: fn(&(f64, f64)) -> f64| pairs.iter().all(|p| side(p) == side(&pairs[0]));
        Some(if constant(|p| p.0) {
            format!("no rank correlation: every document scored {}", pairs[0].0)
        } else if constant(|p| p.1) {
            format!(
                "no rank correlation: every episode {}",
                if pairs[0].1 > 0.5 {
                    "resolved its task"
                } else {
                    "left its task unresolved"
                }
            )
        } else {
            "no rank correlation".to_string()
        })
    } else {
        None
    };
    Some(HandoverRelation {
        episodes,
        n,
        min_n: HANDOVER_MIN_EPISODES,
        spearman: correlation.as_ref().map(|c| c.rho),
        ci: correlation.as_ref().map(|c| [c.low, c.high]),
        method: "Spearman's rank correlation of lint score and resolution (1 resolved, 0 not; average ranks for ties); 95% interval by Fisher's z with SE = sqrt(1.06/(n - 3))".to_string(),
        note,
    })
}
