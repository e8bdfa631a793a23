//! Rate and concurrency limits of one model: token buckets for requests and tokens per
//! minute, and a concurrency limit that shrinks on rate limits and grows back.
//!
//! Both are async and never hold a lock across an `.await`: a bucket *reserves* what a
//! caller asks for under a short `std` lock (its level may go below zero), computes how
//! long the caller must wait for the reservation to be covered, releases the lock and
//! sleeps. Later callers see the deeper deficit and wait longer, so callers are served
//! in arrival order and the long-run rate never exceeds the limit.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

/// Optional per-model request and token rate limits.
///
/// ```
/// use baton_models::RateLimits;
/// let limits = RateLimits { requests_per_minute: Some(500), tokens_per_minute: Some(200_000), ..RateLimits::default() };
/// assert!(limits.adaptive_concurrency);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    /// At most this many requests (attempts, retries included) per minute.
    pub requests_per_minute: Option<u32>,
    /// At most this many tokens per minute. A call reserves its estimated prompt
    /// tokens plus its output cap (as OpenAI's limiter counts them) and is settled to
    /// its reported usage when it returns; a failed attempt keeps its reservation.
    pub tokens_per_minute: Option<u64>,
    /// Halve the model's effective concurrency on every rate-limit error (HTTP 429)
    /// and add one slot back after each full window of successes (default true).
    /// Overload and server errors (529, 5xx) never shrink it: they are the provider's
    /// capacity problem, not our pace.
    pub adaptive_concurrency: bool,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            requests_per_minute: None,
            tokens_per_minute: None,
            adaptive_concurrency: true,
        }
    }
}

/// A token bucket refilled continuously at `per_minute / 60` per second, holding at
/// most `per_minute`.
#[derive(Debug)]
pub(crate) struct TokenBucket {
    capacity: f64,
    per_second: f64,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    level: f64,
    updated: Instant,
}

impl TokenBucket {
    /// A full bucket of `per_minute` tokens.
    pub(crate) fn per_minute(per_minute: u64) -> Self {
        let capacity = per_minute.max(1) as f64;
        TokenBucket {
            capacity,
            per_second: capacity / 60.0,
            state: Mutex::new(BucketState {
                level: capacity,
                updated: Instant::now(),
            }),
        }
    }

    fn refill(&self, s: &mut BucketState) {
        let now = Instant::now();
        let gained = now.duration_since(s.updated).as_secs_f64() * self.per_second;
        s.level = (s.level + gained).min(self.capacity);
        s.updated = now;
    }

    /// Reserve `n` tokens and wait until the reservation is covered.
    pub(crate) async fn acquire(&self, n: u64) {
        let wait = {
            let mut s = self.state.lock().expect("token bucket lock");
            self.refill(&mut s);
            s.level -= n as f64;
            if s.level >= 0.0 {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(-s.level / self.per_second)
            }
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// Settle an earlier reservation: take `delta` more tokens (or give back when
    /// negative). Never waits; a deficit delays later callers.
    pub(crate) fn settle(&self, delta: i64) {
        let mut s = self.state.lock().expect("token bucket lock");
        self.refill(&mut s);
        s.level = (s.level - delta as f64).min(self.capacity);
    }
}

/// A concurrency limit whose effective size shrinks on rate limits and grows back.
#[derive(Debug)]
pub(crate) struct Concurrency {
    semaphore: Arc<Semaphore>,
    max: usize,
    adaptive: bool,
    state: Mutex<ConcurrencyState>,
}

#[derive(Debug)]
struct ConcurrencyState {
    /// The effective limit.
    current: usize,
    /// Permits still to be retired when they come back (a shrink could not take
    /// them while they were in use).
    debt: usize,
    /// Successes since the last change.
    successes: usize,
}

/// A slot held for one attempt; retires itself if the limit shrank meanwhile.
pub(crate) struct Slot<'a> {
    permit: Option<SemaphorePermit<'a>>,
    owner: &'a Concurrency,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else {
            return;
        };
        let mut s = self.owner.state.lock().expect("concurrency lock");
        if s.debt > 0 {
            s.debt -= 1;
            permit.forget();
        }
    }
}

impl Concurrency {
    pub(crate) fn new(max: usize, adaptive: bool) -> Self {
        let max = max.max(1);
        Concurrency {
            semaphore: Arc::new(Semaphore::new(max)),
            max,
            adaptive,
            state: Mutex::new(ConcurrencyState {
                current: max,
                debt: 0,
                successes: 0,
            }),
        }
    }

    pub(crate) fn set_adaptive(&mut self, adaptive: bool) {
        self.adaptive = adaptive;
    }

    /// Wait for a slot.
    pub(crate) async fn acquire(&self) -> Slot<'_> {
        let permit = self
            .semaphore
            .acquire()
            .await
            .expect("model semaphore is never closed");
        Slot {
            permit: Some(permit),
            owner: self,
        }
    }

    /// The effective limit now.
    pub(crate) fn current(&self) -> usize {
        self.state.lock().expect("concurrency lock").current
    }

    /// A rate limit was hit: halve the effective limit (never below one).
    pub(crate) fn on_rate_limit(&self) {
        if !self.adaptive {
            return;
        }
        let mut s = self.state.lock().expect("concurrency lock");
        s.successes = 0;
        let target = (s.current / 2).max(1);
        let cut = s.current - target;
        if cut == 0 {
            return;
        }
        s.current = target;
        let taken = self.semaphore.forget_permits(cut);
        s.debt += cut - taken;
    }

    /// A call succeeded: after a full window of successes at the current limit, add
    /// one slot back (up to the configured maximum).
    pub(crate) fn on_success(&self) {
        if !self.adaptive {
            return;
        }
        let mut s = self.state.lock().expect("concurrency lock");
        if s.current >= self.max {
            return;
        }
        s.successes += 1;
        if s.successes < s.current {
            return;
        }
        s.successes = 0;
        s.current += 1;
        if s.debt > 0 {
            s.debt -= 1;
        } else {
            self.semaphore.add_permits(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_bucket_serves_its_capacity_at_once_then_paces() {
        let b = TokenBucket::per_minute(60);
        let t0 = Instant::now();
        b.acquire(60).await;
        assert_eq!(t0.elapsed(), Duration::ZERO);
        b.acquire(30).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(30));
        b.settle(-30);
        b.acquire(30).await;
        assert_eq!(t0.elapsed(), Duration::from_secs(30));
    }

    #[tokio::test]
    async fn shrinking_with_slots_in_use_retires_them_on_return() {
        let c = Concurrency::new(4, true);
        let a = c.acquire().await;
        let b = c.acquire().await;
        let d = c.acquire().await;
        c.on_rate_limit(); // 4 -> 2: one free permit forgotten now, one later
        assert_eq!(c.current(), 2);
        drop(a);
        assert_eq!(c.semaphore.available_permits(), 0);
        drop(b);
        assert_eq!(c.semaphore.available_permits(), 1);
        drop(d);
        assert_eq!(c.semaphore.available_permits(), 2);
        c.on_success();
        c.on_success();
        assert_eq!(c.current(), 3);
        assert_eq!(c.semaphore.available_permits(), 3);
    }
}
