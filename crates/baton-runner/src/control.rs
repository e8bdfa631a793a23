//! How a caller follows a run ([`Observer`]) and stops it ([`StopSignal`]).

use std::time::Duration;

use baton_models::Interrupt;

use baton_types::{Cost, EpisodeStatus};

/// Receives progress events. Every method has a no-op default.
pub trait Observer: Send + Sync {
    /// The run is planned: this many episodes and (at most) this many new calls.
    fn planned(&self, _episodes: usize, _calls: usize) {}
    /// A call completed and was stored.
    fn call(&self, _model: &str, _cost: Cost) {}
    /// A model's reply was answered (and billed) but unusable; the attempt was stored.
    fn billed_unusable(&self, _model: &str) {}
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
/// stored; a call waiting to retry gives up its wait at once; episodes that did not
/// finish are left `incomplete` and resume later.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Interrupt);

impl StopSignal {
    /// Ask the run to stop.
    pub fn stop(&self) {
        self.0.fire();
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.0.is_fired()
    }

    /// The interrupt every model of the run listens to while it waits to retry.
    pub fn interrupt(&self) -> Interrupt {
        self.0.clone()
    }
}
