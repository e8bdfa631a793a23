//! The rest of LiC's protocol in the report: single-turn baselines with the
//! sharded-vs-full degradation, and LiC's metrics over replicates (aptitude,
//! unreliability, mean performance).
//!
//! **Baselines.** A [`BaselineRow`] per (model, family, baseline) scores `full(M)` or
//! `concat(M)` like an anchor (mean score × 100 over scored episodes) and sets it against
//! `single(M)` on the same (task, replicate) units, both scored: `degradation` is the
//! baseline's score minus the sharded one, in points (positive: the model loses that
//! much when the instruction arrives in shards), with a paired 95% bootstrap interval that
//! resamples tasks within the family (the report's bootstrap seed and resample count). `family =
//! "all"` rows weigh the families with matched units equally.
//!
//! **LiC's metrics.** With R ≥ 2 scored replicates of a task in a cell, LiC's paper
//! (Laban et al., 2025, "LLMs Get Lost In Multi-Turn Conversation") takes per task the 90th and 10th percentiles of the R
//! scores and averages over tasks: aptitude `A90` = mean of the 90th percentiles × 100,
//! unreliability `U90_10` = mean of (90th − 10th) × 100, and `P` = mean score × 100.
//! Neither the paper nor LiC's code fixes how a percentile is read off so few scores;
//! baton uses linear interpolation between order statistics (numpy's default
//! `percentile`, which LiC's Python analysis would get without an argument): for sorted
//! scores `s_0..s_{R-1}`, the p-th percentile is `s_lo + (h − lo)(s_hi − s_lo)` with
//! `h = (R − 1)·p`. With R = 10 that is `s_8 + 0.1·(s_9 − s_8)` for the 90th. Tasks with
//! fewer than two scored replicates are left out and counted. The figures fill
//! `aptitude`, `unreliability` and `mean_p` of every per-family anchor and handoff row
//! ([`crate::CellRow`]); a handoff row also carries its anchors' unreliability on the
//! same tasks (`unreliability_lc`, `unreliability_hc`), so a handoff that makes a model
//! less reliable shows it next to both.

use std::collections::BTreeMap;

use baton_types::{Baseline, Cell, EpisodeStatus, Family};
use serde::Serialize;

use crate::format::{Column, Grid, L, R, column, dollars, interval as ci_text, one_decimal};
use crate::input::{BootstrapConfig, EpisodeRecord, PairSpec};
use crate::metrics::{Means, Plan, Source, Sums, add_sums, unit_sums};
use crate::percentile::quantile;
use crate::report::{ALL_FAMILIES, CellRow};

/// One baseline cell in one family (or all families), against the model's sharded
/// anchor.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BaselineRow {
    /// The model's name in the experiment.
    pub model: String,
    /// A family name or `all`.
    pub family: String,
    /// `full` or `concat`.
    pub interface: String,
    /// The cell's label (`full(M)`, `concat(M)`).
    pub cell: String,
    /// Mean score × 100 over the baseline's scored episodes.
    pub score: Option<f64>,
    /// Mean attributed cost in USD per episode.
    pub cost_per_task: Option<f64>,
    /// `single(M)`'s mean score × 100 on the matched units.
    pub sharded_score: Option<f64>,
    /// The baseline's mean score × 100 on the matched units.
    pub baseline_score_matched: Option<f64>,
    /// `baseline_score_matched − sharded_score`: what sharding costs the model, in
    /// points.
    pub degradation: Option<f64>,
    /// Paired 95% bootstrap interval of `degradation`.
    pub degradation_ci: Option<[f64; 2]>,
    /// Episodes of the baseline, any status.
    pub n_attempted: usize,
    /// Episodes scored.
    pub n_scored: usize,
    /// Scored episodes whose reply held no extractable answer.
    pub n_no_answer: usize,
    /// Episodes that did not finish or whose scoring failed.
    pub n_incomplete: usize,
    /// (task, replicate) units where the baseline and `single(M)` are both scored.
    pub n_matched: usize,
    /// LiC answer-extraction calls for these episodes, not in `cost_per_task`.
    pub extraction_calls: u64,
    /// What those calls cost, in USD.
    pub extraction_cost_usd: f64,
    /// Scored episodes whose LLM extraction gave no answer.
    pub extraction_failed: u64,
}

/// LiC's metrics of one cell in one family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Reliability {
    pub aptitude: f64,
    pub unreliability: f64,
    pub mean_p: f64,
    pub n_tasks: usize,
}

/// Usable scores by (family, cell label) → task → replicate scores.
type Scores<'a> = BTreeMap<(Family, String), BTreeMap<&'a str, Vec<(u32, f64)>>>;

fn scores(episodes: &[EpisodeRecord]) -> Scores<'_> {
    let mut out: Scores<'_> = BTreeMap::new();
    for e in episodes {
        if let Some(s) = e.usable_score() {
            let reps = out
                .entry((e.family, e.cell.label()))
                .or_default()
                .entry(&e.task_id)
                .or_default();
            if !reps.iter().any(|(r, _)| *r == e.replicate) {
                reps.push((e.replicate, s));
            }
        }
    }
    out
}

/// LiC's A90, U90_10 and P over `tasks`' replicate scores, counting only tasks with at
/// least two; `None` when no task has two.
pub(crate) fn reliability<'a>(
    tasks: impl IntoIterator<Item = &'a Vec<(u32, f64)>>,
) -> Option<Reliability> {
    let (mut a, mut u, mut p, mut n) = (0.0, 0.0, 0.0, 0usize);
    for reps in tasks {
        if reps.len() < 2 {
            continue;
        }
        let mut s: Vec<f64> = reps.iter().map(|(_, s)| *s).collect();
        s.sort_unstable_by(f64::total_cmp);
        let (p90, p10) = (quantile(&s, 0.9), quantile(&s, 0.1));
        a += p90;
        u += p90 - p10;
        p += s.iter().sum::<f64>() / s.len() as f64;
        n += 1;
    }
    (n > 0).then(|| Reliability {
        aptitude: 100.0 * a / n as f64,
        unreliability: 100.0 * u / n as f64,
        mean_p: 100.0 * p / n as f64,
        n_tasks: n,
    })
}

/// Fill `aptitude`, `unreliability`, `mean_p` and `n_reliability_tasks` of every
/// per-family row of one cell, and the anchors' unreliability on a handoff row's tasks.
pub(crate) fn fill_reliability(
    rows: &mut [CellRow],
    episodes: &[EpisodeRecord],
    pairs: &[PairSpec],
) {
    let all = scores(episodes);
    for row in rows.iter_mut() {
        let (Some(label), Ok(family)) = (row.cell.clone(), row.family.parse::<Family>()) else {
            continue;
        };
        let Some(tasks) = all.get(&(family, label)) else {
            continue;
        };
        let Some(r) = reliability(tasks.values()) else {
            continue;
        };
        row.aptitude = Some(r.aptitude);
        row.unreliability = Some(r.unreliability);
        row.mean_p = Some(r.mean_p);
        row.n_reliability_tasks = r.n_tasks;
        if row.anchor.is_some() {
            continue;
        }
        // the handoff's tasks (two or more replicates), for its anchors
        let Some(pair) = pairs.iter().find(|p| p.name == row.pair) else {
            continue;
        };
        let used: Vec<&str> = tasks
            .iter()
            .filter(|(_, reps)| reps.len() >= 2)
            .map(|(t, _)| *t)
            .collect();
        let anchor = |model: &str| {
            let by_task = all.get(&(family, Cell::single(model).label()))?;
            reliability(used.iter().filter_map(|t| by_task.get(t)))
        };
        row.unreliability_lc = anchor(&pair.lc).map(|r| r.unreliability);
        row.unreliability_hc = anchor(&pair.hc).map(|r| r.unreliability);
    }
}

/// The baseline rows of one pair: for each of its models and each baseline that has
/// episodes, one row per family and an `all` row.
pub(crate) fn baseline_rows(
    episodes: &[EpisodeRecord],
    pairs: &[PairSpec],
    bootstrap: Option<&BootstrapConfig>,
) -> Vec<BaselineRow> {
    let mut models: Vec<&str> = Vec::new();
    for p in pairs {
        for m in [p.lc.as_str(), p.hc.as_str()] {
            if !models.contains(&m) {
                models.push(m);
            }
        }
    }
    let mut out = Vec::new();
    for model in models {
        for mode in Baseline::ALL {
            let cell = Cell::baseline(model, mode);
            let anchor = Cell::single(model);
            let mut per_family: Vec<(Family, Matched)> = Vec::new();
            for family in Family::ALL {
                let mine: Vec<&EpisodeRecord> = episodes
                    .iter()
                    .filter(|e| e.family == family && e.cell == cell)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let mut row = skeleton(model, family.as_str(), mode, &cell);
                let mut costs = Vec::new();
                let mut usable: BTreeMap<(&str, u32), f64> = BTreeMap::new();
                for e in &mine {
                    row.n_attempted += 1;
                    row.extraction_calls += e.calls.extraction_calls;
                    row.extraction_cost_usd += e.calls.extraction_cost.usd();
                    row.extraction_failed += e.calls.extraction_failed;
                    match e.status {
                        EpisodeStatus::Scored => {
                            row.n_scored += 1;
                            row.n_no_answer += usize::from(e.no_answer);
                        }
                        EpisodeStatus::Incomplete | EpisodeStatus::Errored => row.n_incomplete += 1,
                        EpisodeStatus::Unscored => {}
                    }
                    if let Some(s) = e.usable_score() {
                        usable.entry((&e.task_id, e.replicate)).or_insert(s);
                        costs.push(e.cost_attributed.usd());
                    }
                }
                row.score = mean(usable.values().copied()).map(|m| 100.0 * m);
                row.cost_per_task = mean(costs.iter().copied());
                let sharded: BTreeMap<(&str, u32), f64> = episodes
                    .iter()
                    .filter(|e| e.family == family && e.cell == anchor)
                    .filter_map(|e| Some(((e.task_id.as_str(), e.replicate), e.usable_score()?)))
                    .collect();
                let matched = Matched::new(&usable, &sharded);
                row.n_matched = matched.units;
                if let Some(m) = matched.means() {
                    set_degradation(&mut row, &m);
                }
                if let Some(cfg) = bootstrap {
                    row.degradation_ci = interval(std::slice::from_ref(&matched), cfg);
                }
                out.push(row);
                per_family.push((family, matched));
            }
            if per_family.is_empty() {
                continue;
            }
            let mut row = skeleton(model, ALL_FAMILIES, mode, &cell);
            let family_rows: Vec<&BaselineRow> = out
                .iter()
                .filter(|r| r.cell == row.cell && r.family != ALL_FAMILIES)
                .collect();
            for r in &family_rows {
                row.n_attempted += r.n_attempted;
                row.n_scored += r.n_scored;
                row.n_no_answer += r.n_no_answer;
                row.extraction_calls += r.extraction_calls;
                row.extraction_cost_usd += r.extraction_cost_usd;
                row.extraction_failed += r.extraction_failed;
                row.n_incomplete += r.n_incomplete;
                row.n_matched += r.n_matched;
            }
            row.score = mean(family_rows.iter().filter_map(|r| r.score));
            row.cost_per_task = mean(family_rows.iter().filter_map(|r| r.cost_per_task));
            let with_units: Vec<Matched> = per_family
                .into_iter()
                .map(|(_, m)| m)
                .filter(|m| m.units > 0)
                .collect();
            let means: Vec<Means> = with_units.iter().filter_map(Matched::means).collect();
            if let Some(m) = Means::mean_of(means.iter()) {
                set_degradation(&mut row, &m);
                if let Some(cfg) = bootstrap {
                    row.degradation_ci = interval(&with_units, cfg);
                }
            }
            out.push(row);
        }
    }
    out
}

fn skeleton(model: &str, family: &str, mode: Baseline, cell: &Cell) -> BaselineRow {
    BaselineRow {
        model: model.to_owned(),
        family: family.to_owned(),
        interface: mode.as_str().to_owned(),
        cell: cell.label(),
        score: None,
        cost_per_task: None,
        sharded_score: None,
        baseline_score_matched: None,
        degradation: None,
        degradation_ci: None,
        n_attempted: 0,
        n_scored: 0,
        n_no_answer: 0,
        extraction_calls: 0,
        extraction_cost_usd: 0.0,
        extraction_failed: 0,
        n_incomplete: 0,
        n_matched: 0,
    }
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        sum += v;
        n += 1;
    }
    (n > 0).then(|| sum / n as f64)
}

/// The matched scores of a baseline row: the baseline as the row's cell, `single(M)` as
/// its (LC) anchor, so `degradation = R_m − R_LC`, in points.
fn set_degradation(row: &mut BaselineRow, m: &Means) {
    row.baseline_score_matched = Some(m.r_m);
    row.sharded_score = Some(m.r_lc);
    row.degradation = Some(m.r_m - m.r_lc);
}

/// Matched units of one family, as per-task sums in the metrics core's layout: the
/// baseline's score as the cell's, `single(M)`'s as the LC anchor's (no costs).
struct Matched {
    tasks: Vec<Sums>,
    units: usize,
}

impl Matched {
    fn new(baseline: &BTreeMap<(&str, u32), f64>, sharded: &BTreeMap<(&str, u32), f64>) -> Self {
        let mut by_task: BTreeMap<&str, Sums> = BTreeMap::new();
        let mut units = 0;
        for (unit, &b) in baseline {
            if let Some(&s) = sharded.get(unit) {
                let t = by_task.entry(unit.0).or_default();
                add_sums(t, &unit_sums((b, 0.0), (s, 0.0), (0.0, 0.0)));
                units += 1;
            }
        }
        Matched {
            tasks: by_task.into_values().collect(),
            units,
        }
    }

    fn source(&self, stratum: usize) -> Source {
        Source::Tasks {
            family: stratum,
            sums: self.tasks.iter().copied().enumerate().collect(),
        }
    }

    fn means(&self) -> Option<Means> {
        let mut acc = [0.0; 7];
        for t in &self.tasks {
            add_sums(&mut acc, t);
        }
        Means::from_sums(&acc)
    }
}

/// The paired 95% interval of the equal-weight mean over `families` of (baseline −
/// sharded), in points, resampling each family's tasks with replacement (the report's
/// bootstrap: same seed, same number of resamples).
fn interval(families: &[Matched], cfg: &BootstrapConfig) -> Option<[f64; 2]> {
    if families.iter().all(|m| m.tasks.is_empty()) {
        return None;
    }
    let mut plan = Plan {
        rows: Vec::new(),
        family_sizes: families.iter().map(|m| m.tasks.len()).collect(),
    };
    let rows: Vec<usize> = families
        .iter()
        .enumerate()
        .map(|(i, m)| plan.push(m.source(i), false, false))
        .collect();
    let all = plan.push(Source::Mean(rows), false, false);
    let mut draws = Vec::with_capacity(cfg.replicates);
    crate::bootstrap::resample(&plan, cfg, |rows| {
        if let Some(m) = &rows[all] {
            draws.push(m.r_m - m.r_lc);
        }
    });
    crate::percentile::percentile_interval(&mut draws)
}

/// Heading of the baselines section.
pub(crate) const BASELINES_HEADING: &str = "Single-turn baselines (LiC's full and concat)";
/// What the baselines table shows.
pub(crate) const BASELINES_INTRO: &str = "One call per episode with the whole instruction: `full` is LiC's fully specified prompt, `concat` its shards at once. `sharded` is the model's `single` anchor on the same (task, replicate) units, and `degradation` = baseline − sharded on those units, in points, with a paired 95% bootstrap interval over tasks.";
/// Heading of the LiC metrics section.
pub(crate) const RELIABILITY_HEADING: &str = "LiC's metrics over replicates";
/// How the LiC metrics are computed.
pub(crate) const RELIABILITY_INTRO: &str = "Per task, over its scored replicates (two or more): A90 = 90th percentile, U90_10 = 90th − 10th percentile, P = mean; each × 100 and averaged over tasks (percentiles by linear interpolation between order statistics). A handoff row shows its anchors' U90_10 on the same tasks.";

impl crate::Report {
    /// The baseline rows as a table.
    pub(crate) fn baseline_table(&self) -> Grid {
        let columns: [Column<'_, &BaselineRow>; 12] = [
            column("model", L, |r: &&BaselineRow| r.model.clone()),
            column("family", L, |r: &&BaselineRow| r.family.clone()),
            column("interface", L, |r: &&BaselineRow| r.interface.clone()),
            column("score", R, |r: &&BaselineRow| one_decimal(r.score)),
            column("$/task", R, |r: &&BaselineRow| dollars(r.cost_per_task)),
            column("sharded", R, |r: &&BaselineRow| {
                one_decimal(r.sharded_score)
            }),
            column("baseline (matched)", R, |r: &&BaselineRow| {
                one_decimal(r.baseline_score_matched)
            }),
            column("degradation", R, |r: &&BaselineRow| {
                one_decimal(r.degradation)
            }),
            column("95% CI", R, |r: &&BaselineRow| ci_text(r.degradation_ci)).interval(),
            column("scored/attempted", R, |r: &&BaselineRow| {
                format!("{}/{}", r.n_scored, r.n_attempted)
            }),
            column("no answer", R, |r: &&BaselineRow| r.n_no_answer.to_string()),
            column("matched", R, |r: &&BaselineRow| r.n_matched.to_string()),
        ];
        Grid::of(&columns, &self.baselines)
    }

    /// The rows with LiC's metrics as a table.
    pub(crate) fn reliability_table(&self) -> Grid {
        let columns: [Column<'_, &CellRow>; 9] = [
            column("pair", L, |r: &&CellRow| r.pair.clone()),
            column("cell", L, |r: &&CellRow| {
                self.short_cell(r.cell.as_deref().unwrap_or_default())
            }),
            column("family", L, |r: &&CellRow| r.family.clone()),
            column("P", R, |r: &&CellRow| one_decimal(r.mean_p)),
            column("A90", R, |r: &&CellRow| one_decimal(r.aptitude)),
            column("U90_10", R, |r: &&CellRow| one_decimal(r.unreliability)),
            column("U90_10 LC", R, |r: &&CellRow| {
                one_decimal(r.unreliability_lc)
            }),
            column("U90_10 HC", R, |r: &&CellRow| {
                one_decimal(r.unreliability_hc)
            }),
            column("tasks", R, |r: &&CellRow| r.n_reliability_tasks.to_string()),
        ];
        Grid::of(&columns, self.cells.iter().filter(|r| r.aptitude.is_some()))
    }

    /// Whether any row carries LiC's metrics.
    pub(crate) fn has_reliability(&self) -> bool {
        self.cells.iter().any(|r| r.aptitude.is_some())
    }

    /// The Markdown sections for baselines and LiC's metrics (empty when neither).
    pub(crate) fn protocol_sections(&self) -> String {
        let mut s = String::new();
        if !self.baselines.is_empty() {
            s.push_str(&format!("## {BASELINES_HEADING}\n\n{BASELINES_INTRO}\n\n"));
            s.push_str(&self.baseline_table().markdown());
            s.push('\n');
        }
        if self.has_reliability() {
            s.push_str(&format!(
                "## {RELIABILITY_HEADING}\n\n{RELIABILITY_INTRO}\n\n"
            ));
            s.push_str(&self.reliability_table().markdown());
            s.push('\n');
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lic_percentiles_interpolate_linearly() {
        // ten replicates: 0.9 quantile at h = 8.1, 0.1 at h = 0.9
        let reps: Vec<(u32, f64)> = (0..10u32)
            .map(|i| (i, if i < 3 { 0.0 } else { 1.0 }))
            .collect();
        let r = reliability([&reps]).expect("two or more replicates");
        assert_eq!(r.aptitude, 100.0);
        // sorted: 0,0,0,1,...: p10 = s0 + 0.9 (s1 - s0) = 0
        assert_eq!(r.unreliability, 100.0);
        assert!((r.mean_p - 70.0).abs() < 1e-9);
        let three = vec![(0, 0.0), (1, 0.5), (2, 1.0)];
        // h = 1.8 -> 0.5 + 0.8 * 0.5 = 0.9; h = 0.2 -> 0.1
        let r = reliability([&three]).expect("three");
        assert!((r.aptitude - 90.0).abs() < 1e-9);
        assert!((r.unreliability - 80.0).abs() < 1e-9);
        let one = vec![(0, 1.0)];
        assert_eq!(reliability([&one]), None, "one replicate says nothing");
    }
}
