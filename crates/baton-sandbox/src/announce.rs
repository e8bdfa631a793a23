//! What a runtime build tells the user while it happens.
//!
//! A machine's first code task builds the sandbox runtime: a venv, componentize-py from
//! the package index, the runner component, then its compiled form for this machine. That
//! takes about a minute and can start in the middle of a run, deep under an evaluator,
//! while a progress bar is drawn. The binary registers one [`BuildObserver`] with
//! [`observe_builds`]; the build tells it when it starts (what it fetches, where it goes,
//! that it happens once), each step as it begins, and the end with what it took, so the
//! run can say so instead of looking hung. Without an observer the build says nothing
//! beyond its `tracing` lines.
//!
//! The figures in [`BuildEvent::describe`] are this machine's: the step's own clock, the
//! component's size on disk. The announcement's are a cold build's measured on a busy
//! 2-core machine: 79 s (venv 7.5 s, componentize-py 2.0 s from pip's cache, the component
//! 32.4 s, compiling it 34.8 s) and 156 MB (venv 72 MB, runner 34 MB, compiled 50 MB).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::install::COMPONENTIZE_PY_VERSION;

/// The steps of a build, in order.
pub const BUILD_STEPS: [&str; 4] = [
    "creating a Python venv (python3 -m venv)",
    "installing componentize-py from the package index (pip)",
    "building the runner component: CPython for WASI and the grader (componentize-py)",
    "compiling the runner for this machine (wasmtime)",
];

/// One thing a build tells its observer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum BuildEvent<'a> {
    /// A build starts in `folder` (no runtime there yet, or one from another baton).
    Starting {
        /// The sandbox folder the runtime goes to.
        folder: &'a Path,
    },
    /// Step `index` (0-based, into [`BUILD_STEPS`]) begins.
    Step {
        /// Which step.
        index: usize,
    },
    /// Step `index` ended after `elapsed`.
    StepDone {
        /// Which step.
        index: usize,
        /// How long it took.
        elapsed: Duration,
    },
    /// The runtime is ready: built in `elapsed`, its component `wasm_bytes` long.
    Finished {
        /// From [`BuildEvent::Starting`] to now.
        elapsed: Duration,
        /// The runner component's size on disk.
        wasm_bytes: u64,
    },
}

impl BuildEvent<'_> {
    /// The line a user reads for this event.
    pub fn describe(&self) -> String {
        match self {
            BuildEvent::Starting { folder } => format!(
                "the Python sandbox for code tasks is not built on this machine yet: building \
                 it now, once (later runs reuse it from {}). It fetches componentize-py \
                 {COMPONENTIZE_PY_VERSION} from the package index into a venv, builds a \
                 CPython-for-WASI runner with it and compiles that for this machine: about \
                 155 MB on disk and a minute or two.",
                folder.display()
            ),
            BuildEvent::Step { index } => format!(
                "sandbox build {}/{}: {}",
                index + 1,
                BUILD_STEPS.len(),
                BUILD_STEPS.get(*index).copied().unwrap_or("a step")
            ),
            BuildEvent::StepDone { index, elapsed } => format!(
                "sandbox build {}/{}: done in {:.1} s",
                index + 1,
                BUILD_STEPS.len(),
                elapsed.as_secs_f64()
            ),
            BuildEvent::Finished {
                elapsed,
                wasm_bytes,
            } => format!(
                "sandbox built in {:.1} s (runner component {:.1} MB); later runs reuse it",
                elapsed.as_secs_f64(),
                *wasm_bytes as f64 / 1e6
            ),
        }
    }
}

/// Told about each runtime build while it happens.
pub trait BuildObserver: Send + Sync {
    /// One event of a build.
    fn event(&self, event: &BuildEvent<'_>);
}

static OBSERVER: Mutex<Option<Arc<dyn BuildObserver>>> = Mutex::new(None);

/// Sets the observer every later build tells (`None`: none); returns the one it replaces.
pub fn observe_builds(observer: Option<Arc<dyn BuildObserver>>) -> Option<Arc<dyn BuildObserver>> {
    let mut slot = OBSERVER.lock().unwrap_or_else(|e| e.into_inner());
    std::mem::replace(&mut *slot, observer)
}

/// Tells the registered observer, if any.
pub(crate) fn tell(event: &BuildEvent<'_>) {
    let observer = OBSERVER.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(observer) = observer {
        observer.event(event);
    }
}

/// Runs step `index` between its [`BuildEvent::Step`] and [`BuildEvent::StepDone`].
pub(crate) fn step<T>(index: usize, f: impl FnOnce() -> T) -> T {
    tell(&BuildEvent::Step { index });
    let started = std::time::Instant::now();
    let out = f();
    tell(&BuildEvent::StepDone {
        index,
        elapsed: started.elapsed(),
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_35_each_event_reads_as_a_line() {
        // See: issue 35 (the first demo looked hung while the sandbox was built)
        let start = BuildEvent::Starting {
            folder: Path::new("/home/u/.cache/baton/sandbox"),
        }
        .describe();
        assert!(start.contains("once (later runs reuse it from /home/u/.cache/baton/sandbox)"));
        assert!(start.contains(&format!("componentize-py {COMPONENTIZE_PY_VERSION}")));
        assert!(start.contains("about 155 MB on disk and a minute or two"));
        assert_eq!(
            BuildEvent::Step { index: 1 }.describe(),
            "sandbox build 2/4: installing componentize-py from the package index (pip)"
        );
        assert_eq!(
            BuildEvent::StepDone {
                index: 3,
                elapsed: Duration::from_millis(21_340)
            }
            .describe(),
            "sandbox build 4/4: done in 21.3 s"
        );
        assert_eq!(
            BuildEvent::Finished {
                elapsed: Duration::from_millis(68_060),
                wasm_bytes: 41_234_567
            }
            .describe(),
            "sandbox built in 68.1 s (runner component 41.2 MB); later runs reuse it"
        );
    }
}
