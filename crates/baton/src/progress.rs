//! The progress bar: episodes, calls and spend.

use std::sync::Mutex;

use baton_runner::Observer;
use baton_types::{Cost, EpisodeStatus};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Shows a run's progress on stderr.
pub struct Progress {
    bar: ProgressBar,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    calls: u64,
    spent: Cost,
    incomplete: u64,
    retries: u64,
    rate_limited: u64,
    waited: std::time::Duration,
}

impl Progress {
    /// A bar on stderr, or a hidden one.
    pub fn new(visible: bool) -> Self {
        let bar = ProgressBar::with_draw_target(
            Some(0),
            if visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} episodes  {msg}",
            )
            .expect("valid template"),
        );
        Progress {
            bar,
            state: Mutex::new(State::default()),
        }
    }

    /// Remove the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn refresh(&self, s: &State) {
        self.bar.set_message(format!(
            "{} calls  spent {}  incomplete {}",
            s.calls, s.spent, s.incomplete
        ));
    }
}

impl Observer for Progress {
    fn planned(&self, episodes: usize, _calls: usize) {
        self.bar.set_length(episodes as u64);
    }

    fn call(&self, _model: &str, cost: Cost) {
        let mut s = self.state.lock().expect("progress lock");
        s.calls += 1;
        s.spent += cost;
        self.refresh(&s);
    }

    fn retry(&self, _model: &str, wait: std::time::Duration, rate_limited: bool) {
        let mut s = self.state.lock().expect("progress lock");
        s.retries += 1;
        s.rate_limited += u64::from(rate_limited);
        s.waited += wait;
        self.refresh(&s);
    }

    fn episode(&self, status: EpisodeStatus) {
        let mut s = self.state.lock().expect("progress lock");
        if status == EpisodeStatus::Incomplete {
            s.incomplete += 1;
        }
        self.refresh(&s);
        self.bar.inc(1);
    }
}
