//! Paired task-level bootstrap, the one resampling loop of both studies.
//!
//! One draw resamples, within each stratum of the [`Plan`] (a family of the chat study;
//! the agent study has one), as many task ids as the stratum has, with replacement; a
//! drawn task brings all its replicates along. The same draw weighs every row, so
//! differences between cells stay paired. Stratifying by family keeps every family present
//! in every draw, which the equal-weight family aggregates need. Per-task sums are
//! precomputed in the plan, so a draw costs one weighted sum per row.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::input::BootstrapConfig;
use crate::metrics::{Means, Plan, RowIntervals};
use crate::percentile::percentile_interval;

/// Evaluate every row of `plan` under `cfg.replicates` draws; `each` sees each draw's rows
/// (in plan order, `None` where a row has no drawn unit). Returns the percentile 95%
/// intervals of every row's score, QRec and CSRet.
///
/// The 5-point rule decides whether a row shows QRec at all; within a shown row every
/// draw with a denominator counts.
pub(crate) fn resample(
    plan: &Plan,
    cfg: &BootstrapConfig,
    mut each: impl FnMut(&[Option<Means>]),
) -> Vec<RowIntervals> {
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
                if let Ok(q) = m.qrec(false) {
                    qrec[i].push(q);
                }
                if let Ok(c) = m.csret() {
                    csret[i].push(c);
                }
            }
        }
        each(&out);
    }
    (0..n_rows)
        .map(|i| RowIntervals {
            score: percentile_interval(&mut score[i]),
            qrec: percentile_interval(&mut qrec[i]),
            csret: percentile_interval(&mut csret[i]),
        })
        .collect()
}
