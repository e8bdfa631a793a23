//! The metrics core of both studies: per-task sums, equal-weight means, QRec and CSRet
//! with the omission rule, and the restart controls' composition.
//!
//! Every table row of the chat study and of the agent handoff study is a [`Source`]:
//! either per-task sums over matched units in one stratum (a family, or the agent
//! study's one task set: a base row), or the equal-weight mean of earlier rows (a family
//! aggregate, an average over switch points or percentiles, a window). A [`Plan`]
//! evaluates all rows for one vector of task weights; the point estimate uses weight 1
//! for every task and each bootstrap draw ([`crate::bootstrap::resample`]) uses how often
//! the draw picked each task, so the point estimate and the intervals go through the same
//! code. A unit's score is 0..=1 (a verdict, or BLEU/100); rows are in points.

use serde::Serialize;

use crate::input::BootstrapConfig;

/// Per-task sums over matched units: count, then score and cost of the row's cell,
/// of the LC anchor and of the HC anchor (anchor rows use the first three only).
pub(crate) type Sums = [f64; 7];

const N: usize = 0;
const R_M: usize = 1;
const C_M: usize = 2;
const R_LC: usize = 3;
const C_LC: usize = 4;
const R_HC: usize = 5;
const C_HC: usize = 6;

/// Below this gap between the anchors' scores (in points), per-family QRec is omitted.
pub const MIN_QUALITY_GAP: f64 = 5.0;

/// Two means closer than this count as equal (a zero denominator).
const ZERO: f64 = 1e-12;

/// Mean score (in points, 0..=100) and mean attributed cost (USD per task) of a
/// row and of its matched anchors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Means {
    pub r_m: f64,
    pub c_m: f64,
    pub r_lc: f64,
    pub c_lc: f64,
    pub r_hc: f64,
    pub c_hc: f64,
}

/// The sums of one matched unit: the row's score and cost, then each anchor's.
pub(crate) fn unit_sums(m: (f64, f64), lc: (f64, f64), hc: (f64, f64)) -> Sums {
    [1.0, m.0, m.1, lc.0, lc.1, hc.0, hc.1]
}

/// Adds one unit's (or task's) sums to `acc`.
pub(crate) fn add_sums(acc: &mut Sums, s: &Sums) {
    for (a, v) in acc.iter_mut().zip(s) {
        *a += v;
    }
}

/// One unit of a restart control: the escalation's prefix cost through the switch (LC's
/// calls, attributed, never estimated) and both anchors' score and cost on the unit.
///
/// `abort+HC` runs LC through the switch, gives up and runs HC from the start: it costs
/// the prefix plus HC-only and scores as HC-only. `LC-full+HC-full` runs LC to the end,
/// then HC from the start: LC-only plus HC-only, scoring as HC-only. Both are composed
/// from stored episodes and compared with the same anchors, so their CSRet is
/// [`Means::csret`] of the composed row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct RestartUnit {
    pub prefix: f64,
    pub lc: (f64, f64),
    pub hc: (f64, f64),
}

impl RestartUnit {
    /// The unit's sums as an `abort+HC` row.
    pub fn abort(&self) -> Sums {
        unit_sums((self.hc.0, self.prefix + self.hc.1), self.lc, self.hc)
    }

    /// The unit's sums as an `LC-full+HC-full` row.
    pub fn full_restart(&self) -> Sums {
        unit_sums((self.hc.0, self.lc.1 + self.hc.1), self.lc, self.hc)
    }
}

impl Means {
    /// The means of summed units (`None` without any).
    pub fn from_sums(s: &Sums) -> Option<Means> {
        let n = s[N];
        (n > 0.0).then(|| Means {
            r_m: 100.0 * s[R_M] / n,
            c_m: s[C_M] / n,
            r_lc: 100.0 * s[R_LC] / n,
            c_lc: s[C_LC] / n,
            r_hc: 100.0 * s[R_HC] / n,
            c_hc: s[C_HC] / n,
        })
    }

    /// The equal-weight mean of rows' means (`None` without any).
    pub fn mean_of<'a>(items: impl Iterator<Item = &'a Means>) -> Option<Means> {
        let mut acc = [0.0; 6];
        let mut n = 0.0;
        for m in items {
            for (a, v) in acc
                .iter_mut()
                .zip([m.r_m, m.c_m, m.r_lc, m.c_lc, m.r_hc, m.c_hc])
            {
                *a += v;
            }
            n += 1.0;
        }
        (n > 0.0).then(|| Means {
            r_m: acc[0] / n,
            c_m: acc[1] / n,
            r_lc: acc[2] / n,
            c_lc: acc[3] / n,
            r_hc: acc[4] / n,
            c_hc: acc[5] / n,
        })
    }

    /// `QRec = 100 · (R_m − R_LC) / (R_HC − R_LC)`; with `min_gap`, omitted when
    /// `|R_HC − R_LC| < 5` points.
    pub fn qrec(&self, min_gap: bool) -> Result<f64, Omission> {
        let gap = self.r_hc - self.r_lc;
        if min_gap && gap.abs() < MIN_QUALITY_GAP {
            Err(Omission::SmallQualityGap)
        } else if gap.abs() < ZERO {
            Err(Omission::ZeroQualityGap)
        } else {
            Ok(100.0 * (self.r_m - self.r_lc) / gap)
        }
    }

    /// `CSRet = 100 · (C_HC − C_m) / (C_HC − C_LC)`.
    pub fn csret(&self) -> Result<f64, Omission> {
        let gap = self.c_hc - self.c_lc;
        if gap.abs() < ZERO {
            Err(Omission::ZeroCostGap)
        } else {
            Ok(100.0 * (self.c_hc - self.c_m) / gap)
        }
    }
}

/// A handoff row's QRec and CSRet, each with why it is missing when it is: the one place
/// both studies' rows get them from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Recovery {
    pub qrec: Option<f64>,
    pub qrec_omitted: Option<Omission>,
    pub csret: Option<f64>,
    pub csret_omitted: Option<Omission>,
    /// A QRec given although the anchors differ by less than [`MIN_QUALITY_GAP`]
    /// points (a row the 5-point rule does not omit: an aggregate): it divides by that
    /// small gap, so it is unstable and marked wherever it is printed.
    pub qrec_unstable: bool,
}

impl Recovery {
    /// From a row's means (`None`: no matched unit); `min_gap` applies the 5-point rule.
    pub fn of(means: Option<&Means>, min_gap: bool) -> Recovery {
        let split = |v: Result<f64, Omission>| match v {
            Ok(v) => (Some(v), None),
            Err(why) => (None, Some(why)),
        };
        let none = Err(Omission::NoMatchedUnits);
        let (qrec, qrec_omitted) = split(means.map_or(none, |m| m.qrec(min_gap)));
        let (csret, csret_omitted) = split(means.map_or(none, Means::csret));
        let qrec_unstable =
            qrec.is_some() && means.is_some_and(|m| (m.r_hc - m.r_lc).abs() < MIN_QUALITY_GAP);
        Recovery {
            qrec,
            qrec_omitted,
            csret,
            csret_omitted,
            qrec_unstable,
        }
    }
}

/// Why a value is missing from a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Omission {
    /// No (task, replicate) unit has the row's episode and both anchors scored.
    NoMatchedUnits,
    /// Per-family QRec when the anchors differ by less than 5 points.
    SmallQualityGap,
    /// `R_HC = R_LC`: QRec has no denominator.
    ZeroQualityGap,
    /// `C_HC = C_LC`: CSRet has no denominator.
    ZeroCostGap,
}

impl Omission {
    /// The snake_case name used in JSON and CSV.
    pub fn as_str(self) -> &'static str {
        match self {
            Omission::NoMatchedUnits => "no_matched_units",
            Omission::SmallQualityGap => "small_quality_gap",
            Omission::ZeroQualityGap => "zero_quality_gap",
            Omission::ZeroCostGap => "zero_cost_gap",
        }
    }

    /// A sentence for footnotes.
    pub fn describe(self) -> &'static str {
        match self {
            Omission::NoMatchedUnits => "no task/replicate has this cell and both anchors scored",
            Omission::SmallQualityGap => {
                "QRec omitted: the anchors differ by less than 5 points in this family"
            }
            Omission::ZeroQualityGap => "QRec undefined: R_HC = R_LC",
            Omission::ZeroCostGap => "CSRet undefined: C_HC = C_LC",
        }
    }
}

/// Where a row's numbers come from.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    /// Per-task sums over matched units; `family` indexes [`Plan::family_sizes`].
    Tasks {
        family: usize,
        sums: Vec<(usize, Sums)>,
    },
    /// The equal-weight mean of earlier rows that have data.
    Mean(Vec<usize>),
}

/// One row to evaluate.
#[derive(Debug, Clone)]
pub(crate) struct PlanRow {
    pub source: Source,
    /// Whether the row is a handoff (has QRec/CSRet) rather than an anchor.
    pub handoff: bool,
    /// Whether the 5-point rule applies to QRec (per-family rows).
    pub min_gap: bool,
}

/// All rows of a report, in output order (a mean only refers to earlier rows).
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub rows: Vec<PlanRow>,
    /// Number of tasks in each family (the bootstrap's strata).
    pub family_sizes: Vec<usize>,
}

impl Plan {
    /// Evaluates every row for the given per-family task weights (`None` = 1 each).
    pub fn evaluate(&self, weights: Option<&[Vec<f64>]>, out: &mut Vec<Option<Means>>) {
        out.clear();
        for row in &self.rows {
            let m = match &row.source {
                Source::Tasks { family, sums } => {
                    let mut acc: Sums = [0.0; 7];
                    match weights {
                        None => {
                            for (_, s) in sums {
                                add_sums(&mut acc, s);
                            }
                        }
                        Some(w) => {
                            let w = &w[*family];
                            for (t, s) in sums {
                                let wt = w[*t];
                                if wt != 0.0 {
                                    for (a, v) in acc.iter_mut().zip(s) {
                                        *a += wt * v;
                                    }
                                }
                            }
                        }
                    }
                    Means::from_sums(&acc)
                }
                Source::Mean(children) => {
                    Means::mean_of(children.iter().filter_map(|&c| out[c].as_ref()))
                }
            };
            out.push(m);
        }
    }

    /// Percentile 95% intervals of score, QRec and CSRet per row, from a paired
    /// task-level bootstrap stratified by family.
    pub fn intervals(&self, cfg: &BootstrapConfig) -> Vec<RowIntervals> {
        crate::bootstrap::resample(self, cfg, |_| {})
    }

    /// Adds a row; returns its index.
    pub fn push(&mut self, source: Source, handoff: bool, min_gap: bool) -> usize {
        self.rows.push(PlanRow {
            source,
            handoff,
            min_gap,
        });
        self.rows.len() - 1
    }
}

/// The 95% intervals of one row; `None` when no draw defined the value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct RowIntervals {
    pub score: Option<[f64; 2]>,
    pub qrec: Option<[f64; 2]>,
    pub csret: Option<[f64; 2]>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn means(r_m: f64, r_lc: f64, r_hc: f64, c_m: f64, c_lc: f64, c_hc: f64) -> Means {
        Means {
            r_m,
            c_m,
            r_lc,
            c_lc,
            r_hc,
            c_hc,
        }
    }

    #[test]
    fn qrec_and_csret_follow_the_formulas() {
        // QRec = 100 * (60 - 40) / (80 - 40) = 100 * 20 / 40 = 50.
        // CSRet = 100 * (0.10 - 0.04) / (0.10 - 0.02) = 100 * 0.06 / 0.08 = 75.
        let m = means(60.0, 40.0, 80.0, 0.04, 0.02, 0.10);
        assert!((m.qrec(true).unwrap() - 50.0).abs() < 1e-9);
        assert!((m.csret().unwrap() - 75.0).abs() < 1e-9);
    }

    #[test]
    fn small_gap_is_omitted_only_where_the_rule_applies() {
        // Gap 43 - 40 = 3 < 5: omitted per family; aggregate gives 100 * 1 / 3.
        let m = means(41.0, 40.0, 43.0, 0.0, 0.0, 0.0);
        assert_eq!(m.qrec(true), Err(Omission::SmallQualityGap));
        assert!((m.qrec(false).unwrap() - 100.0 / 3.0).abs() < 1e-9);
        assert_eq!(m.csret(), Err(Omission::ZeroCostGap));
        let flat = means(41.0, 40.0, 40.0, 0.0, 0.0, 1.0);
        assert_eq!(flat.qrec(false), Err(Omission::ZeroQualityGap));
    }

    #[test]
    fn issue_35_a_qrec_over_a_small_anchor_gap_is_marked_unstable() {
        // See: issue 35 (an all-families QRec of -350 printed unmarked, anchors 4.2 apart)
        // Gap 44.2 - 40 = 4.2: an aggregate gives 100 * (25.3 - 40) / 4.2 = -350, unstable.
        let m = means(25.3, 40.0, 44.2, 0.0, 0.0, 1.0);
        let r = Recovery::of(Some(&m), false);
        assert!((r.qrec.unwrap() + 350.0).abs() < 1e-9);
        assert!(r.qrec_unstable);
        // Per family the value is omitted, so nothing is unstable.
        let r = Recovery::of(Some(&m), true);
        assert_eq!(
            (r.qrec, r.qrec_omitted),
            (None, Some(Omission::SmallQualityGap))
        );
        assert!(!r.qrec_unstable);
        // A 5-point gap is stable.
        let r = Recovery::of(Some(&means(45.0, 40.0, 45.0, 0.0, 0.0, 1.0)), false);
        assert_eq!(r.qrec, Some(100.0));
        assert!(!r.qrec_unstable);
    }

    #[test]
    fn means_of_rows_skip_rows_without_data() {
        let mut plan = Plan {
            rows: vec![],
            family_sizes: vec![2, 1],
        };
        let row = |family, sums| PlanRow {
            source: Source::Tasks { family, sums },
            handoff: true,
            min_gap: true,
        };
        // Family 0: two tasks, scores 1 and 0 on the cell -> R_m = 50.
        plan.rows.push(row(
            0,
            vec![
                (0, [1.0, 1.0, 0.5, 1.0, 1.0, 1.0, 2.0]),
                (1, [1.0, 0.0, 0.5, 0.0, 1.0, 1.0, 2.0]),
            ],
        ));
        // Family 1: no matched units.
        plan.rows.push(row(1, vec![]));
        plan.rows.push(PlanRow {
            source: Source::Mean(vec![0, 1]),
            handoff: true,
            min_gap: false,
        });
        let mut out = Vec::new();
        plan.evaluate(None, &mut out);
        assert_eq!(out[1], None);
        assert_eq!(out[2], out[0]);
        assert_eq!(out[0].unwrap().r_m, 50.0);
        // Weighting task 0 twice and task 1 zero times: R_m = 100.
        plan.evaluate(Some(&[vec![2.0, 0.0], vec![1.0]]), &mut out);
        assert_eq!(out[0].unwrap().r_m, 100.0);
    }
}
