use serde::{Deserialize, Serialize};

use crate::Cost;

/// What an experiment has paid for, counted over every answered attempt.
///
/// A provider bills every reply it sends with a success status, whether or not the
/// reply could be used (an empty message, a truncated body, a reply whose usage or
/// cost could not be read). `billed_attempts` counts all of them; `unusable_attempts`
/// is the part that was retried or given up on, and the two `unknown` counts say how
/// many billed attempts are missing from `paid` because their usage or their price
/// could not be read, so that `paid` is known to be a lower bound when they are not 0.
///
/// ```
/// use baton_types::{Cost, Spend};
/// let s = Spend { paid: Cost(5), billed_attempts: 3, unusable_attempts: 1, ..Spend::default() };
/// assert!(s.is_exact());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spend {
    /// Money paid: the exact sum of every priced answered attempt.
    pub paid: Cost,
    /// Answered attempts (HTTP 2xx), used or not.
    pub billed_attempts: u64,
    /// Answered attempts whose reply could not be used.
    pub unusable_attempts: u64,
    /// Answered attempts whose usage could not be read. Those of them with an
    /// estimated cost (`estimated_attempts`) are in `paid`; the rest are not.
    pub unknown_usage_attempts: u64,
    /// Answered attempts whose usage could not be read, counted in `paid` at their
    /// call's upper bound: an estimate, never less than what they can have cost.
    #[serde(default)]
    pub estimated_attempts: u64,
    /// What those attempts count in `paid`.
    #[serde(default)]
    pub estimated: Cost,
    /// Answered attempts whose usage was read but could not be priced (not in `paid`).
    pub unpriced_attempts: u64,
    /// Answered attempts that went through a provider batch (priced at batch rates).
    #[serde(default)]
    pub batched_attempts: u64,
    /// What those attempts would have cost more at the direct rates.
    #[serde(default)]
    pub saved_by_batching: Cost,
}

impl Spend {
    /// Whether `paid` covers every billed attempt.
    pub fn is_exact(&self) -> bool {
        self.unknown_usage_attempts == 0 && self.unpriced_attempts == 0
    }
}
