//! The trap bench report's statistics, as pure functions: the Wilson score interval of a
//! fell-in rate and Fisher's exact test of a condition against the control; and, for the
//! `handover` interface of the agent study, Spearman's rank correlation of a document's
//! lint score with the episode's resolution, with its interval.
//!
//! Wilson rather than the normal ("Wald") interval because trials per cell are few and rates
//! sit near 0 and 1, where the Wald interval collapses to a point. Fisher's exact test
//! (two-sided, the sum of the probabilities of every table with the same margins that is no
//! more likely than the one observed, as R's `fisher.test` and SciPy's `fisher_exact` define
//! it; ties within a relative 1e-7, R's tolerance) because the counts are small. Checked
//! in the tests against textbook values and exact rational sums (SciPy was not at hand).

use serde::Serialize;

/// The 0.975 quantile of the standard normal distribution (a two-sided 95 % interval).
pub const Z95: f64 = 1.959_963_984_540_054;

/// A rate with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rate {
    /// Successes (here: trials that fell in).
    pub k: u64,
    /// Trials with an answer.
    pub n: u64,
    /// `k / n`.
    pub rate: f64,
    /// Lower end of the interval.
    pub low: f64,
    /// Upper end of the interval.
    pub high: f64,
}

/// The Wilson score interval of `k` successes in `n` trials at normal quantile `z`; `None`
/// when `n` is 0 or `k > n`.
pub fn wilson(k: u64, n: u64, z: f64) -> Option<Rate> {
    if n == 0 || k > n {
        return None;
    }
    let nf = n as f64;
    let p = k as f64 / nf;
    let z2 = z * z;
    let denom = 1.0 + z2 / nf;
    let center = (p + z2 / (2.0 * nf)) / denom;
    let half = z * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt() / denom;
    Some(Rate {
        k,
        n,
        rate: p,
        // At the ends the interval touches 0 or 1 exactly (rounding would leave 1 − ε).
        low: if k == 0 {
            0.0
        } else {
            (center - half).max(0.0)
        },
        high: if k == n {
            1.0
        } else {
            (center + half).min(1.0)
        },
    })
}

/// Fisher's exact test of a 2×2 table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Fisher {
    /// The sample odds ratio `(a·d) / (b·c)` (infinite when `b·c = 0` < `a·d`; NaN when both
    /// are 0).
    pub odds_ratio: f64,
    /// The two-sided p-value.
    pub p_value: f64,
}

/// Fisher's exact test, two-sided, of the table `[[a, b], [c, d]]` (here: a condition's
/// fell-in and clear trials, then the control's).
pub fn fisher_exact(a: u64, b: u64, c: u64, d: u64) -> Fisher {
    let n = a + b + c + d;
    let row = a + b;
    let col = a + c;
    // ln(i!) for i in 0..=n.
    let mut lf = Vec::with_capacity(n as usize + 1);
    lf.push(0.0f64);
    for i in 1..=n {
        lf.push(lf[i as usize - 1] + (i as f64).ln());
    }
    let ln_choose = |n: u64, k: u64| lf[n as usize] - lf[k as usize] - lf[(n - k) as usize];
    let ln_p = |x: u64| ln_choose(col, x) + ln_choose(n - col, row - x) - ln_choose(n, row);
    let lo = (row + col).saturating_sub(n);
    let hi = row.min(col);
    let observed = ln_p(a);
    let mut p = 0.0;
    for x in lo..=hi {
        let lx = ln_p(x);
        if lx <= observed + 1e-7_f64.ln_1p() {
            p += lx.exp();
        }
    }
    let (num, den) = ((a * d) as f64, (b * c) as f64);
    Fisher {
        odds_ratio: num / den,
        p_value: p.min(1.0),
    }
}

/// The rate of a cell from its trials' answers (`None`: the probe gave no answer, left out
/// of `n`); `None` when no trial answered.
pub fn cell_rate(answers: &[Option<bool>]) -> Option<Rate> {
    let n = answers.iter().flatten().count() as u64;
    let k = answers.iter().flatten().filter(|f| **f).count() as u64;
    wilson(k, n, Z95)
}

/// Fisher's exact test of a condition's cell against the control's (`none`): the table
/// `[[fell in, clear] of the condition, [fell in, clear] of the control]`.
pub fn contrast(condition: &Rate, control: &Rate) -> Fisher {
    fisher_exact(
        condition.k,
        condition.n - condition.k,
        control.k,
        control.n - control.k,
    )
}

/// A rank correlation with its interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Correlation {
    /// Pairs.
    pub n: u64,
    /// Spearman's ρ.
    pub rho: f64,
    /// Lower end of the 95 % interval.
    pub low: f64,
    /// Upper end of the 95 % interval.
    pub high: f64,
}

/// Average ranks (1-based) of `v`, ties sharing the mean of their places.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|a, b| v[*a].total_cmp(&v[*b]));
    let mut out = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            out[order[k]] = rank;
        }
        i = j + 1;
    }
    out
}

/// Spearman's rank correlation of `pairs` (for the `handover` interface: each handoff
/// episode's document lint score against its resolution, 1 or 0), the Pearson correlation
/// of the average ranks, with the 95 % interval of Fisher's z-transform under Fieller,
/// Hartley and Pearson's (1957) standard error `sqrt(1.06 / (n − 3))`. `None` with fewer
/// than 4 pairs or when either side is constant (no ranking).
pub fn spearman(pairs: &[(f64, f64)]) -> Option<Correlation> {
    let n = pairs.len();
    if n < 4 {
        return None;
    }
    let x = ranks(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
    let y = ranks(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
    let mean = (n as f64 + 1.0) / 2.0;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(&y) {
        sxy += (a - mean) * (b - mean);
        sxx += (a - mean) * (a - mean);
        syy += (b - mean) * (b - mean);
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    let rho = (sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0);
    let (low, high) = if rho.abs() == 1.0 {
        (rho, rho)
    } else {
        let z = rho.atanh();
        let se = (1.06 / (n as f64 - 3.0)).sqrt();
        ((z - Z95 * se).tanh(), (z + Z95 * se).tanh())
    };
    Some(Correlation {
        n: n as u64,
        rho,
        low,
        high,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn wilson_matches_published_values() {
        // Newcombe (1998), Statistics in Medicine 17, table I: 81/263 gives 0.2553–0.3662,
        // 15/148 gives 0.0624–0.1605, 0/20 gives 0–0.1611, 1/29 gives 0.0061–0.1718.
        for (k, n, low, high) in [
            (81, 263, 0.2553, 0.3662),
            (15, 148, 0.0624, 0.1605),
            (0, 20, 0.0, 0.1611),
            (1, 29, 0.0061, 0.1718),
        ] {
            let r = wilson(k, n, Z95).unwrap();
            assert!(
                close(r.low, low, 5e-5) && close(r.high, high, 5e-5),
                "{k}/{n}: {r:?}"
            );
        }
        let all = wilson(10, 10, Z95).unwrap();
        assert_eq!((all.rate, all.high), (1.0, 1.0));
        assert!(close(all.low, 0.722_467_7, 1e-6), "{all:?}");
        assert_eq!(wilson(0, 0, Z95), None);
        assert_eq!(wilson(3, 2, Z95), None);
    }

    #[test]
    fn cells_leave_out_trials_without_an_answer() {
        let good = cell_rate(&[Some(false), None, Some(false), Some(true)]).unwrap();
        assert_eq!((good.k, good.n), (1, 3));
        let none = cell_rate(&[Some(true); 5]).unwrap();
        let good5 = cell_rate(&[Some(false); 5]).unwrap();
        let f = contrast(&good5, &none);
        assert!(close(f.p_value, 2.0 / 252.0, 1e-12), "{f:?}");
        assert_eq!(f.odds_ratio, 0.0);
        assert_eq!(cell_rate(&[None, None]), None);
    }

    #[test]
    fn spearman_uses_average_ranks_and_fisher_z() {
        // Lint scores against resolution (ties on both sides); the values are a Pearson
        // correlation of average ranks and its z interval, computed once in Python.
        let pairs: Vec<(f64, f64)> = [80., 55., 90., 40., 70., 55., 95., 30.]
            .into_iter()
            .zip([1., 0., 1., 0., 1., 1., 1., 0.])
            .collect();
        let c = spearman(&pairs).unwrap();
        assert_eq!(c.n, 8);
        assert!(close(c.rho, 0.793_548_281_771_19, 1e-12), "{c:?}");
        assert!(close(c.low, 0.176_634_960_002_871_24, 1e-9), "{c:?}");
        assert!(close(c.high, 0.962_834_173_556_273_3, 1e-9), "{c:?}");
        let tied: Vec<(f64, f64)> = [1., 2., 3., 4., 5.]
            .into_iter()
            .zip([5., 6., 7., 8., 7.])
            .collect();
        assert!(close(
            spearman(&tied).unwrap().rho,
            0.820_782_681_668_123_3,
            1e-12
        ));
        let perfect: Vec<(f64, f64)> = (0..5).map(|i| (f64::from(i), -f64::from(i))).collect();
        let p = spearman(&perfect).unwrap();
        assert_eq!((p.rho, p.low, p.high), (-1.0, -1.0, -1.0));
        assert_eq!(spearman(&pairs[..3]), None);
        assert_eq!(spearman(&[(1.0, 1.0); 6]), None);
    }

    #[test]
    fn fisher_matches_textbook_values() {
        // Fisher's tea-tasting table: [[3, 1], [1, 3]], two-sided p = 34/70.
        let tea = fisher_exact(3, 1, 1, 3);
        assert!(close(tea.p_value, 34.0 / 70.0, 1e-12), "{tea:?}");
        assert_eq!(tea.odds_ratio, 9.0);
        // All fell in against none: [[5, 0], [0, 5]], p = 2 / C(10, 5) = 2/252.
        let split = fisher_exact(5, 0, 0, 5);
        assert!(close(split.p_value, 2.0 / 252.0, 1e-12), "{split:?}");
        assert!(split.odds_ratio.is_infinite());
        // Identical rows: p = 1.
        assert!(close(fisher_exact(2, 3, 2, 3).p_value, 1.0, 1e-12));
        // Wikipedia's example (men and women studying): [[1, 9], [11, 3]], p = 0.002759.
        // The rest: exact rational sums (Python's `fractions` and `math.comb`, run once).
        for (t, p) in [
            ((1, 9, 11, 3), 0.002_759_456_185_220_083_6),
            ((7, 3, 2, 8), 0.069_778_518_694_927_36),
            ((0, 10, 6, 4), 0.010_835_913_312_693_499),
            ((10, 0, 3, 7), 0.003_095_975_232_198_142_6),
            ((2, 18, 9, 11), 0.030_950_305_143_853_53),
        ] {
            let got = fisher_exact(t.0, t.1, t.2, t.3).p_value;
            assert!(
                close(got, p, 1e-12 * p.max(1e-3)),
                "{t:?}: {got} against {p}"
            );
        }
        // No trials at all.
        let empty = fisher_exact(0, 0, 0, 0);
        assert_eq!(empty.p_value, 1.0);
        assert!(empty.odds_ratio.is_nan());
    }
}
