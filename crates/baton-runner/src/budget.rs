//! A spending cap that is never overshot: every call reserves its upper-bound cost before
//! it is sent and settles to its real cost when it returns. The bound covers every
//! answered attempt the call can be billed for: an unusable reply (empty, cut off, not
//! JSON) is billed and retried up to the model's `unusable_retries`, so a call reserves
//! that many attempts more than one. It assumes a provider bills at most the request's
//! output cap, as real ones do.

use std::sync::Mutex;

use baton_models::{Model, defaults};
use baton_types::{Cost, Message};

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

    /// The call failed without a bill: drop its reservation.
    pub fn release(&self, upper: Cost) {
        let mut s = self.state.lock().expect("budget lock");
        s.1 -= upper;
    }

    /// The cap, if any.
    pub fn cap(&self) -> Option<Cost> {
        self.cap
    }
}

/// An upper bound on the tokens of a prompt: one token per UTF-8 byte plus eight per
/// message for the wire format's framing. Byte-level tokenizers never produce more
/// tokens than bytes.
pub(crate) fn prompt_tokens_upper_bound(messages: &[Message]) -> u64 {
    messages.iter().map(|m| m.content.len() as u64 + 8).sum()
}

/// The most output tokens one call of `model` can bill: its cap, or baton's default cap
/// for a model built without one.
pub(crate) fn output_cap(model: &Model) -> u64 {
    u64::from(model.config().max_tokens.unwrap_or(defaults::MAX_TOKENS))
}

/// The most answered (so billed) attempts one call of `model` can make: the reply it
/// uses plus up to `unusable_retries` unusable ones.
pub(crate) fn billed_attempts(model: &Model) -> i64 {
    i64::from(model.retry_policy().max_unusable_retries) + 1
}

/// The most one call of `model` can cost when one attempt can cost `per_attempt`.
pub(crate) fn over_every_attempt(model: &Model, per_attempt: Cost) -> Cost {
    Cost(per_attempt.0.saturating_mul(billed_attempts(model)))
}

/// The most one call of `model` with these messages can cost, over every attempt it can
/// be billed for.
pub(crate) fn call_upper_bound(model: &Model, messages: &[Message]) -> Cost {
    let one = model
        .price()
        .upper_bound(prompt_tokens_upper_bound(messages), output_cap(model));
    over_every_attempt(model, one)
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
        b.release(Cost(40));
        assert!(Budget::new(None, Cost(1_000_000)).reserve(Cost(1_000_000)));
    }

    #[test]
    fn a_call_reserves_every_attempt_it_can_be_billed_for() {
        use std::sync::Arc;

        use baton_models::testing::ScriptedProvider;
        use baton_models::{PriceCard, RetryPolicy};

        let price = PriceCard::embedded().get("sim/lc").unwrap();
        let model = |retries: u32| {
            Model::new(
                "lc",
                Arc::new(ScriptedProvider::new()),
                "lc",
                "sim/lc",
                price,
                1,
            )
            .with_retry(RetryPolicy {
                max_unusable_retries: retries,
                ..RetryPolicy::default()
            })
        };
        let messages = [Message::user("What is 2 + 2?")];
        let one = price.upper_bound(prompt_tokens_upper_bound(&messages), 1000);
        assert!(one > Cost::ZERO);
        assert_eq!(call_upper_bound(&model(0), &messages), one);
        assert_eq!(call_upper_bound(&model(2), &messages), Cost(one.0 * 3));
        // a cap that one attempt fits but three do not refuses the call
        let b = Budget::new(Some(Cost(one.0 * 2)), Cost::ZERO);
        assert!(!b.reserve(call_upper_bound(&model(2), &messages)));
        assert!(b.reserve(call_upper_bound(&model(0), &messages)));
    }
}
