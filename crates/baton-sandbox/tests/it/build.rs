//! A real runtime build tells its observer what it does (issue 35).

use std::sync::{Arc, Mutex};

use baton_sandbox::{
    BUILD_STEPS, BuildEvent, BuildObserver, InstallOptions, SandboxHome, install, observe_builds,
};

/// Every event's line, in order.
#[derive(Default)]
struct Lines(Mutex<Vec<String>>);

impl BuildObserver for Lines {
    fn event(&self, event: &BuildEvent<'_>) {
        self.0.lock().unwrap().push(event.describe());
    }
}

#[test]
fn issue_35_a_build_is_announced_before_it_starts_and_each_step_is_told() {
    // See: issue 35 (the first demo looked hung for about 70 s while the sandbox was built)
    // The shared runtime first (built now if this machine has none), then a build into a
    // fresh folder that borrows its venv, so the test fetches nothing: the component is
    // built and compiled again, for real.
    crate::common::sandbox();
    let shared = SandboxHome::locate();
    let dir = tempfile::tempdir().unwrap();
    let home = SandboxHome::at(dir.path().join("sandbox"));
    std::fs::create_dir_all(home.build_dir()).unwrap();
    std::os::unix::fs::symlink(shared.venv(), home.venv()).unwrap();

    let lines = Arc::new(Lines::default());
    let before = observe_builds(Some(lines.clone()));
    let report = install(&InstallOptions {
        home: Some(home.clone()),
        python: None,
        force: true,
    });
    observe_builds(before);
    let report = report.unwrap();
    let lines = lines.0.lock().unwrap().clone();

    assert!(report.rebuilt);
    // Announced first: what it fetches, where it goes, that it happens once.
    assert!(
        lines[0].starts_with("the Python sandbox for code tasks is not built"),
        "{lines:#?}"
    );
    assert!(lines[0].contains(&format!(
        "later runs reuse it from {}",
        home.root().display()
    )));
    // The venv and componentize-py are there already; the component is built and
    // compiled, each step announced as it begins and timed when it ends.
    assert_eq!(
        lines[1],
        format!("sandbox build 3/4: {}", BUILD_STEPS[2]),
        "{lines:#?}"
    );
    assert!(
        lines[2].starts_with("sandbox build 3/4: done in "),
        "{lines:#?}"
    );
    assert_eq!(
        lines[3],
        format!("sandbox build 4/4: {}", BUILD_STEPS[3]),
        "{lines:#?}"
    );
    assert!(
        lines[4].starts_with("sandbox build 4/4: done in "),
        "{lines:#?}"
    );
    let mb = format!("{:.1} MB", report.wasm_bytes as f64 / 1e6);
    assert!(
        lines[5].starts_with("sandbox built in ") && lines[5].contains(&mb),
        "{lines:#?}"
    );
    assert_eq!(lines.len(), 6, "{lines:#?}");
    // The last step compiled it into the cache, so the install's own load did not.
    assert!(report.from_cache);
}
