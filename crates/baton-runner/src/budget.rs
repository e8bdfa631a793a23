//! A spending cap that is never overshot: every call reserves its upper-bound cost before
//! it is sent and settles to its real cost when it returns. What a call reserves (every
//! attempt it can be billed for, at the dearest rate it can be billed at) is the
//! ledger's rule (`crate::ledger::call_upper_bound`); this is only the account.

use std::sync::Mutex;

use baton_types::Cost;

/// The spending cap of a run, over everything the experiment has paid.
#[derive(Debug)]
pub(crate) struct Budget {
    cap: Option<Cost>,
    /// (paid so far, reserved by calls in flight)
    state: Mutex<(Cost, Cost)>,
}

impl Budget {
    /// A budget that has already paid `paid`, capped at `cap` (none: unlimited).
    pub fn new(cap: Option<Cost>, paid: Cost) -> Self {
        Budget {
            cap,
            state: Mutex::new((paid, Cost::ZERO)),
        }
    }

    /// Reserve `upper` for a call; false when the cap would be passed.
    pub fn reserve(&self, upper: Cost) -> bool {
        let mut s = self.state.lock().expect("budget lock");
        if self.cap.is_some_and(|cap| s.0 + s.1 + upper > cap) {
            return false;
        }
        s.1 += upper;
        true
    }

    /// The call returned: replace its reservation by what it cost.
    pub fn settle(&self, upper: Cost, actual: Cost) {
        let mut s = self.state.lock().expect("budget lock");
        s.1 -= upper;
        s.0 += actual;
    }

    /// The cap, if any.
    pub fn cap(&self) -> Option<Cost> {
        self.cap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_keep_spend_under_the_cap() {
        let b = Budget::new(Some(Cost(100)), Cost(20));
        assert!(b.reserve(Cost(50)));
        assert!(!b.reserve(Cost(40)), "20 paid + 50 reserved + 40 > 100");
        b.settle(Cost(50), Cost(10));
        assert!(b.reserve(Cost(40)), "20 + 10 paid + 40 <= 100");
        assert!(Budget::new(None, Cost(1_000_000)).reserve(Cost(1_000_000)));
    }
}
