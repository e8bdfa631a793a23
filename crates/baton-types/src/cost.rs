use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};

use serde::{Deserialize, Serialize};

/// An amount of money in picodollars (1e-12 USD): the one money type every crate
/// passes around.
///
/// Integer picodollars keep sums exact: an episode's cost is the exact sum of its
/// calls, and prefix, handoff and suffix reconcile to the last unit. Floating-point
/// dollars appear only where a number is shown or averaged ([`Cost::usd`]). It
/// serializes as the bare integer, which is also how the store keeps it.
///
/// Sums saturate at `i64::MAX` picodollars (about 9.2 million USD) instead of wrapping,
/// so absurd usage reported by a hostile server can never turn into a small or
/// negative total; a single call's cost is computed with checked arithmetic
/// (`baton_models::Price::cost`) and refused when it would not fit.
///
/// ```
/// use baton_types::Cost;
/// let call = Cost(2_000_000) + Cost(6_000_000);
/// assert_eq!(call.to_string(), "$0.000008");
/// assert_eq!(Cost::from_usd(0.25).usd(), 0.25);
/// ```
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Cost(pub i64);

impl Cost {
    /// Zero dollars.
    pub const ZERO: Cost = Cost(0);

    /// The amount in US dollars, for display and metrics.
    pub fn usd(self) -> f64 {
        self.0 as f64 / 1e12
    }

    /// Picodollars from a USD float, rounding to the nearest picodollar.
    pub fn from_usd(usd: f64) -> Cost {
        Cost((usd * 1e12).round() as i64)
    }
}

impl Add for Cost {
    type Output = Cost;
    fn add(self, o: Cost) -> Cost {
        Cost(self.0.saturating_add(o.0))
    }
}

impl AddAssign for Cost {
    fn add_assign(&mut self, o: Cost) {
        self.0 = self.0.saturating_add(o.0);
    }
}

impl Sub for Cost {
    type Output = Cost;
    fn sub(self, o: Cost) -> Cost {
        Cost(self.0.saturating_sub(o.0))
    }
}

impl SubAssign for Cost {
    fn sub_assign(&mut self, o: Cost) {
        self.0 = self.0.saturating_sub(o.0);
    }
}

impl std::iter::Sum for Cost {
    fn sum<I: Iterator<Item = Cost>>(iter: I) -> Cost {
        iter.fold(Cost::ZERO, |a, b| a + b)
    }
}

impl fmt::Display for Cost {
    /// Dollars with six decimals, e.g. `$0.012290`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${:.6}", self.usd())
    }
}
