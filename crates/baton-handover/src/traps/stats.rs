//! The trap bench report's statistics, as pure functions: the Wilson score interval of a
//! fell-in rate and Fisher's exact test of a condition against the control.
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
