//! How a caller follows a run ([`Observer`]) and stops it ([`StopSignal`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use baton_types::{Cost, EpisodeStatus};

/// Receives progress events. Every method has a no-op default.
pub trait Observer: Send + Sync {
    /// The run is planned: this many episodes and (at most) this many new calls.
    fn planned(&self, _episodes: usize, _calls: usize) {}
    /// A call completed and was stored.
    fn call(&self, _model: &str, _cost: Cost) {}
    /// An episode ended with this status.
    fn episode(&self, _status: EpisodeStatus) {}
    /// A model will retry a call after `wait` (`rate_limited`: the server said 429).
    fn retry(&self, _model: &str, _wait: Duration, _rate_limited: bool) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct SilentObserver;
impl Observer for SilentObserver {}

/// A flag that asks a run to stop scheduling new calls. Calls in flight finish and are
/// stored; episodes that did not finish are left `incomplete` and resume later.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Arc<AtomicBool>);

impl StopSignal {
    /// Ask the run to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
