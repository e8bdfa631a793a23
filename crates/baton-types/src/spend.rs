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

    /// What a run says when `paid` is not exact: which attempts it counts at an
    /// estimate (their call's upper bound) and which it leaves out; `None` when exact.
    ///
    /// ```
    /// use baton_types::{Cost, Spend};
    /// let s = Spend { unknown_usage_attempts: 3, estimated_attempts: 2, estimated: Cost(7), ..Spend::default() };
    /// let note = s.note().unwrap();
    /// assert!(note.contains("2 billed attempts had unreadable usage and are counted at their call's upper bound"));
    /// assert!(note.contains("1 billed attempts had unreadable usage and 0 could not be priced"));
    /// ```
    pub fn note(&self) -> Option<String> {
        if self.is_exact() {
            return None;
        }
        let mut parts = Vec::new();
        if self.estimated_attempts > 0 {
            parts.push(format!(
                "{} billed attempts had unreadable usage and are counted at their call's upper bound ({} of the paid total is that estimate)",
                self.estimated_attempts, self.estimated
            ));
        }
        let left = self
            .unknown_usage_attempts
            .saturating_sub(self.estimated_attempts);
        if left + self.unpriced_attempts > 0 {
            parts.push(format!(
                "{left} billed attempts had unreadable usage and {} could not be priced; the paid total leaves them out",
                self.unpriced_attempts
            ));
        }
        Some(format!("note: {}", parts.join("; ")))
    }
}
