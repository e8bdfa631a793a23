//! The percentile rules, written once: nearest rank for the agent study's termination
//! steps (its switch calls), linear interpolation between order statistics (numpy's
//! default) for LiC's reliability percentiles and every bootstrap interval.

/// Lower and upper percentiles of a 95% interval.
const LEVELS: [f64; 2] = [0.025, 0.975];

/// The value at nearest rank ⌈p/100 · n⌉ (at least 1) of `sorted`.
pub fn nearest_rank(sorted: &[u32], p: u32) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u64;
    let rank = (u64::from(p) * n).div_ceil(100).max(1);
    Some(sorted[(rank - 1) as usize])
}

/// The `p` quantile of sorted values, by linear interpolation between order statistics
/// (numpy's default): `s_lo + (h − lo)(s_hi − s_lo)` with `h = (n − 1)·p`.
pub(crate) fn quantile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// The 2.5th and 97.5th percentiles of `values` by [`quantile`]; `None` when empty.
pub(crate) fn percentile_interval(values: &mut [f64]) -> Option<[f64; 2]> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable_by(f64::total_cmp);
    Some(LEVELS.map(|p| quantile(values, p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_takes_the_ceiling_rank() {
        let s: Vec<u32> = (1..=20).collect();
        assert_eq!(nearest_rank(&s, 5), Some(1));
        assert_eq!(nearest_rank(&s, 10), Some(2));
        assert_eq!(nearest_rank(&s, 15), Some(3));
        assert_eq!(nearest_rank(&s, 50), Some(10));
        assert_eq!(nearest_rank(&[7], 5), Some(7));
        assert_eq!(nearest_rank(&[3, 9, 12], 35), Some(9));
        assert_eq!(nearest_rank(&[], 50), None);
    }

    #[test]
    fn quantiles_interpolate_between_order_statistics() {
        let mut v: Vec<f64> = (0..=100).rev().map(f64::from).collect();
        // 101 values 0..=100: the 2.5th percentile sits at index 2.5 -> 2.5.
        assert_eq!(percentile_interval(&mut v), Some([2.5, 97.5]));
        assert_eq!(percentile_interval(&mut []), None);
        assert_eq!(percentile_interval(&mut [7.0]), Some([7.0, 7.0]));
        // four values: the 0.9 quantile at h = 2.7 -> 3 + 0.7 · (10 − 3)
        assert!((quantile(&[0.0, 1.0, 3.0, 10.0], 0.9) - 7.9).abs() < 1e-12);
    }
}
