//! Paired task-level bootstrap.
//!
//! One draw resamples, within each family, as many task ids as the family has,
//! with replacement; a drawn task brings all its replicates along. The same draw
//! weighs every row, so differences between cells stay paired. Stratifying by
//! family keeps every family present in every draw, which the equal-weight family
//! aggregates need. Per-task sums are precomputed in the [`Plan`], so a draw costs
//! one weighted sum per row.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::input::BootstrapConfig;
use crate::metrics::{Plan, RowIntervals};

/// Lower and upper percentiles of a 95% interval.
const LEVELS: [f64; 2] = [0.025, 0.975];

pub(crate) fn intervals(plan: &Plan, cfg: &BootstrapConfig) -> Vec<RowIntervals> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let n_rows = plan.rows.len();
    let mut score = vec![Vec::with_capacity(cfg.replicates); n_rows];
    let mut qrec = vec![Vec::new(); n_rows];
    let mut csret = vec![Vec::new(); n_rows];
    let mut weights: Vec<Vec<f64>> = plan.family_sizes.iter().map(|&n| vec![0.0; n]).collect();
    let mut out = Vec::with_capacity(n_rows);
    for _ in 0..cfg.replicates {
        for w in &mut weights {
            let n = w.len();
            w.fill(0.0);
            for _ in 0..n {
                // Drawing u32 keeps the stream identical on 32- and 64-bit targets.
                w[rng.gen_range(0..n as u32) as usize] += 1.0;
            }
        }
        plan.evaluate(Some(&weights), &mut out);
        for (i, (row, m)) in plan.rows.iter().zip(&out).enumerate() {
            let Some(m) = m else { continue };
            score[i].push(m.r_m);
            if row.handoff {
                // The 5-point rule decides whether a row shows QRec at all; within
                // a shown row every draw with a denominator counts.
                if let Ok(q) = m.qrec(false) {
                    qrec[i].push(q);
                }
                if let Ok(c) = m.csret() {
                    csret[i].push(c);
                }
            }
        }
    }
    (0..n_rows)
        .map(|i| RowIntervals {
            score: percentile_interval(&mut score[i]),
            qrec: percentile_interval(&mut qrec[i]),
            csret: percentile_interval(&mut csret[i]),
        })
        .collect()
}

/// The 2.5th and 97.5th percentiles (linear interpolation between order statistics).
pub(crate) fn percentile_interval(values: &mut [f64]) -> Option<[f64; 2]> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    Some(LEVELS.map(|p| quantile(values, p)))
}

/// The `p` quantile of sorted values, by linear interpolation between order statistics
/// (numpy's default).
pub(crate) fn quantile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        let mut v: Vec<f64> = (0..=100).rev().map(f64::from).collect();
        // 101 values 0..=100: the 2.5th percentile sits at index 2.5 -> 2.5.
        assert_eq!(percentile_interval(&mut v), Some([2.5, 97.5]));
        assert_eq!(percentile_interval(&mut []), None);
        assert_eq!(percentile_interval(&mut [7.0]), Some([7.0, 7.0]));
    }
}
