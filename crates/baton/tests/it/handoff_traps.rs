//! `baton handoff traps run` on an output folder that already holds a run, through the
//! binary (real sandbox, offline simulated agents): what changed is printed before any
//! trial, only the changed model's trials run again, and a second run on a folder another
//! run holds is refused at once, naming it.
//
// See: issue 38 (`issues show 38`).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{baton, stderr, stdout};

fn write_experiment(dir: &Path, handover: &Path, lc_sim: &str, concurrency: u32) {
    std::fs::write(
        dir.join("exp.toml"),
        format!(
            r#"name = "cli-traps-identity"
handover = "{}"
trials = 1
seed = 11
scenarios = ["reverted-feature"]
conditions = ["good", "none"]
concurrency = {concurrency}
[agent]
step_limit = 30
[models.lc]
model = "sim/lc"
[models.lc.sim]
malformed = 0.0
{lc_sim}
[models.hc]
model = "sim/hc"
[models.hc.sim]
malformed = 0.0
"#,
            handover.display()
        ),
    )
    .unwrap();
}

const RUN: [&str; 6] = ["handoff", "traps", "run", "exp.toml", "--out", "out"];

#[test]
fn issue_38_a_changed_skill_reruns_that_models_trials_listed_before_they_run() {
    let Some(handover) = baton_fixture::shared_dir("handover") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), &handover, "", 2);
    let first = baton(dir.path(), &RUN);
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(
        stderr(&first).starts_with("new output folder: 4 trials to run\n"),
        "{}",
        stderr(&first)
    );

    let again = baton(dir.path(), &RUN);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).starts_with(
            "the experiment is unchanged since it was stored\n\
             trials: 4 kept, 0 new, 0 unfinished run again, 0 re-run (identity changed), 0 removed (out of the report); to run: 0\n\
             4 trials planned, 4 kept from an earlier run, 0 run now (0 unfinished)"
        ),
        "{}",
        stderr(&again)
    );
    assert_eq!(stdout(&again), stdout(&first), "the same report");

    write_experiment(dir.path(), &handover, "skill = 0.6", 2);
    let skilled = baton(dir.path(), &RUN);
    assert!(skilled.status.success(), "{}", stderr(&skilled));
    let err = stderr(&skilled);
    let listed = "the experiment changed since it was stored:\n  \
         models.lc.sim.skill: (none) → 0.6\n\
         trials: 2 kept, 0 new, 0 unfinished run again, 2 re-run (identity changed), 0 removed (out of the report); to run: 2\n  \
         re-run: reverted-feature good lc #0\n  \
         re-run: reverted-feature none lc #0\n";
    assert!(err.starts_with(listed), "{err}");
    // then exactly those two trials run, and nothing of hc
    let ran: Vec<&str> = err[listed.len()..]
        .lines()
        .filter(|l| l.starts_with("reverted-feature "))
        .collect();
    assert_eq!(ran.len(), 2, "{err}");
    assert!(ran.iter().all(|l| l.contains(" lc #0: submitted")), "{err}");
    assert!(
        err.contains("4 trials planned, 2 kept from an earlier run, 2 run now (0 unfinished)"),
        "{err}"
    );
}

#[test]
fn issue_38_a_second_run_on_the_same_folder_is_refused_at_once() {
    let Some(handover) = baton_fixture::shared_dir("handover") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // one trial at a time: the first run holds the folder for several seconds
    write_experiment(dir.path(), &handover, "", 1);
    let mut first = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(RUN)
        .current_dir(dir.path())
        .env_remove("BATON_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // the first run has the lock once its pid is in the lock file
    let lock = dir.path().join("out/baton.lock");
    let pid = first.id().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::fs::read_to_string(&lock)
        .ok()
        .is_none_or(|s| s.trim() != pid)
    {
        assert!(
            Instant::now() < deadline,
            "the first run never took the lock"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    let second = baton(dir.path(), &RUN);
    let took = started.elapsed();
    let still_running = first.try_wait().unwrap().is_none();
    assert_eq!(second.status.code(), Some(2), "{}", stderr(&second));
    assert!(
        stderr(&second).contains(&format!(
            "trap bench: the output folder out is in use by process {pid} (lock out/baton.lock); wait for that run to end or choose another --out"
        )),
        "{}",
        stderr(&second)
    );
    assert!(stdout(&second).is_empty(), "{}", stdout(&second));
    assert!(
        still_running,
        "the first run held the folder throughout ({took:?})"
    );
    assert!(first.wait().unwrap().success());
    // the folder is free again: a rerun keeps the first run's 4 trials
    let again = baton(dir.path(), &RUN);
    assert!(
        stderr(&again).contains("4 trials planned, 4 kept from an earlier run, 0 run now"),
        "{}",
        stderr(&again)
    );
}
