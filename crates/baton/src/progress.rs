//! A run's progress on stderr: episodes with their rate and ETA, calls, spend, retries
//! and billed unusable replies.
//!
//! On a terminal it is a bar that redraws itself (its clock keeps moving while no episode
//! ends). Without one (nohup, CI, a Slurm job's log) it is a plain line every
//! [`INTERVAL_VAR`] seconds (default 30), plus one when the run is planned and one at the
//! end, so a log shows a long run advancing and what it met on the way.
//!
//! A sandbox runtime build that starts during the run (a machine's first code task) is
//! announced with what it fetches and that it happens once, and each of its steps gets a
//! line: above the bar on a terminal, among the plain lines otherwise.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use baton_runner::Observer;
use baton_types::{Cost, EpisodeStatus};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The environment variable that sets the seconds between two plain progress lines.
pub const INTERVAL_VAR: &str = "BATON_PROGRESS_EVERY";
const DEFAULT_INTERVAL: Duration = Duration::from_secs(30);

/// Shows a run's progress on stderr.
pub struct Progress {
    bar: ProgressBar,
    shared: Arc<Shared>,
    lines: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the line writer early when the run ends.
    done: Condvar,
    started: Instant,
}

#[derive(Default)]
struct State {
    episodes: u64,
    planned: u64,
    calls: u64,
    spent: Cost,
    incomplete: u64,
    retries: u64,
    rate_limited: u64,
    unusable: u64,
    waited: Duration,
    planned_seen: bool,
    finished: bool,
}

impl Progress {
    /// Progress on stderr: a bar on a terminal, plain lines otherwise, nothing when
    /// `show` is false (`--quiet`).
    pub fn new(show: bool) -> Self {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = ProgressBar::with_draw_target(
            Some(0),
            if show && terminal {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} episodes  {per_sec}  ETA {eta}  {msg}",
            )
            .expect("valid template"),
        );
        if show && terminal {
            bar.enable_steady_tick(Duration::from_millis(250));
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            done: Condvar::new(),
            started: Instant::now(),
        });
        let lines = (show && !terminal).then(|| {
            let every = interval();
            let shared = shared.clone();
            std::thread::spawn(move || shared.write_lines(every))
        });
        if show {
            baton_sandbox::observe_builds(Some(Arc::new(BuildLines {
                bar: (show && terminal).then(|| bar.clone()),
            })));
        }
        Progress { bar, shared, lines }
    }

    /// Remove the bar; without a terminal, write the last line.
    pub fn finish(&self) {
        baton_sandbox::observe_builds(None);
        self.bar.finish_and_clear();
        let mut s = self.shared.state.lock().expect("progress lock");
        if !s.finished {
            s.finished = true;
            // a run that stopped before its plan (a setup error) has nothing to sum up
            if self.lines.is_some() && s.planned_seen {
                line(&format!(
                    "done: {}",
                    s.summary(self.shared.started.elapsed())
                ));
            }
        }
        self.shared.done.notify_all();
    }

    /// The bar's message, only when the bar is drawn: the lines written without a
    /// terminal read the counts themselves, and formatting them at every call of a run
    /// nobody watches is work for nothing.
    fn refresh(&self, s: &State) {
        if !self.bar.is_hidden() {
            self.bar.set_message(s.counts());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
        if let Some(lines) = self.lines.take() {
            let _ = lines.join();
        }
    }
}

impl Shared {
    /// Write a line every `every` until the run finishes.
    fn write_lines(&self, every: Duration) {
        let mut s = self.state.lock().expect("progress lock");
        loop {
            let (next, _) = self.done.wait_timeout(s, every).expect("progress lock");
            s = next;
            if s.finished {
                return;
            }
            line(&format!("progress: {}", s.summary(self.started.elapsed())));
        }
    }
}

impl State {
    /// Calls, spend, retries, unusable replies and incomplete episodes.
    fn counts(&self) -> String {
        let mut text = format!("{} calls  spent {}", self.calls, self.spent);
        if self.retries > 0 {
            text += &format!(
                "  {} retries ({} rate-limited, {:.1} s waited)",
                self.retries,
                self.rate_limited,
                self.waited.as_secs_f64()
            );
        }
        if self.unusable > 0 {
            text += &format!("  {} billed unusable", self.unusable);
        }
        text + &format!("  incomplete {}", self.incomplete)
    }

    /// One plain line: episodes with rate and ETA, then [`State::counts`].
    fn summary(&self, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64();
        let rate = if secs > 0.0 {
            self.episodes as f64 / secs
        } else {
            0.0
        };
        let eta = match self.planned.checked_sub(self.episodes) {
            Some(left) if left > 0 && rate > 0.0 => {
                format!(
                    ", ETA {}",
                    clock(Duration::from_secs_f64(left as f64 / rate))
                )
            }
            _ => String::new(),
        };
        format!(
            "[{}] {}/{} episodes ({:.2}/s{eta}) · {}",
            clock(elapsed),
            self.episodes,
            self.planned,
            rate,
            self.counts().replace("  ", " · ")
        )
    }
}

/// `h:mm:ss`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The interval between plain lines, from [`INTERVAL_VAR`] (whole seconds, at least 1).
fn interval() -> Duration {
    match std::env::var(INTERVAL_VAR) {
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(secs) if secs > 0 => Duration::from_secs(secs),
            _ => {
                tracing::warn!(
                    "{INTERVAL_VAR}={v:?} is not a whole number of seconds above 0; using 30"
                );
                DEFAULT_INTERVAL
            }
        },
        Err(_) => DEFAULT_INTERVAL,
    }
}

/// Announces sandbox builds as plain lines on stderr from now on (`baton sandbox
/// install`, which has no bar).
pub fn announce_sandbox_builds() {
    baton_sandbox::observe_builds(Some(Arc::new(BuildLines { bar: None })));
}

/// Writes a sandbox build's events: above the bar, or as plain lines.
struct BuildLines {
    bar: Option<ProgressBar>,
}

impl baton_sandbox::BuildObserver for BuildLines {
    fn event(&self, event: &baton_sandbox::BuildEvent<'_>) {
        let text = event.describe();
        match &self.bar {
            Some(bar) => bar.println(text),
            None => line(&text),
        }
    }
}

fn line(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

impl Observer for Progress {
    fn planned(&self, episodes: usize, _calls: usize) {
        self.bar.set_length(episodes as u64);
        let mut s = self.shared.state.lock().expect("progress lock");
        s.planned = episodes as u64;
        s.planned_seen = true;
        if self.lines.is_some() {
            // the observer's call count is the plan's turns, not a bound (summaries and
            // retries come on top): the line says what is certain
            line(&format!("planned: {episodes} episodes"));
        }
    }

    fn call(&self, _model: &str, cost: Cost) {
        let mut s = self.shared.state.lock().expect("progress lock");
        s.calls += 1;
        s.spent += cost;
        self.refresh(&s);
    }

    fn billed_unusable(&self, _model: &str) {
        let mut s = self.shared.state.lock().expect("progress lock");
        s.unusable += 1;
        self.refresh(&s);
    }

    fn retry(&self, _model: &str, wait: Duration, rate_limited: bool) {
        let mut s = self.shared.state.lock().expect("progress lock");
        s.retries += 1;
        s.rate_limited += u64::from(rate_limited);
        s.waited += wait;
        self.refresh(&s);
    }

    fn episode(&self, status: EpisodeStatus) {
        let mut s = self.shared.state.lock().expect("progress lock");
        s.episodes += 1;
        if status == EpisodeStatus::Incomplete {
            s.incomplete += 1;
        }
        self.refresh(&s);
        self.bar.inc(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_line_says_rate_eta_retries_and_spend() {
        let s = State {
            episodes: 30,
            planned: 120,
            calls: 90,
            spent: Cost(1_500_000_000),
            retries: 4,
            rate_limited: 3,
            waited: Duration::from_millis(2500),
            unusable: 2,
            incomplete: 1,
            ..State::default()
        };
        assert_eq!(
            s.summary(Duration::from_secs(60)),
            "[0:01:00] 30/120 episodes (0.50/s, ETA 0:03:00) · 90 calls · spent $0.001500 · \
             4 retries (3 rate-limited, 2.5 s waited) · 2 billed unusable · incomplete 1"
        );
        let quiet = State {
            planned: 10,
            ..State::default()
        };
        assert_eq!(
            quiet.summary(Duration::from_secs(5)),
            "[0:00:05] 0/10 episodes (0.00/s) · 0 calls · spent $0.000000 · incomplete 0"
        );
    }
}
