use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::{baton, stderr};

const EXPERIMENT: &str = r#"
name = "resume"
dataset = "sample"
families = ["math", "data2text", "actions"]
limit = 3
replicates = 2
seed = 5
concurrency = 3
[models.lc]
model = "sim/lc"
[models.lc.sim]
skill = 0.45
latency_ms = 15
[models.hc]
model = "sim/hc"
[models.hc.sim]
skill = 0.85
latency_ms = 15
[[pairs]]
low = "lc"
high = "hc"
"#;

fn calls(db: &Path) -> i64 {
    Connection::open(db)
        .and_then(|c| c.query_row("SELECT count(*) FROM calls", [], |r| r.get(0)))
        .unwrap_or(0)
}

type EpisodeKey = (
    String,
    String,
    i64,
    String,
    Option<String>,
    Option<f64>,
    i64,
    i64,
);

fn episodes(db: &Path) -> Vec<EpisodeKey> {
    let c = Connection::open(db).unwrap();
    let mut s = c
        .prepare(
            "SELECT task_id, cell_key, replicate, status, final_response, score, cost_attributed, cost_paid
             FROM episodes ORDER BY task_id, cell_key, replicate",
        )
        .unwrap();
    s.query_map([], |r| {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
            r.get(6)?,
            r.get(7)?,
        ))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

fn requests(db: &Path) -> Vec<(i64, i64, String, String)> {
    let c = Connection::open(db).unwrap();
    let mut s = c
        .prepare(
            "SELECT e.replicate, c.turn, e.task_id || ' ' || e.cell_key || ' ' || c.phase, c.request_sha256
             FROM calls c JOIN episodes e ON e.id = c.episode_id ORDER BY 3, 1, 2",
        )
        .unwrap();
    s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Kill the process after some calls, resume, and compare with an uninterrupted run.
#[test]
fn a_killed_run_resumes_to_the_same_store_without_repeating_a_call() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), EXPERIMENT).unwrap();

    let clean = baton(
        dir.path(),
        &["run", "exp.toml", "--out", "clean", "--quiet"],
    );
    assert!(clean.status.success(), "{}", stderr(&clean));
    let clean_db = dir.path().join("clean/results.sqlite");
    let total = calls(&clean_db);
    assert!(total > 100, "enough calls to interrupt: {total}");

    let killed_db = dir.path().join("killed/results.sqlite");
    for (round, stop_at) in [total / 5, total / 2].into_iter().enumerate() {
        let mut child = Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["run", "exp.toml", "--out", "killed", "--quiet"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while calls(&killed_db) < stop_at {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "round {round}: run too slow"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: finished before it could be killed"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        child.kill().unwrap(); // SIGKILL: no chance to clean up
        child.wait().unwrap();
        let stored = calls(&killed_db);
        assert!(
            stored >= stop_at && stored < total,
            "round {round}: killed mid-run ({stored} of {total})"
        );
    }

    let resumed = baton(
        dir.path(),
        &["run", "exp.toml", "--out", "killed", "--resume", "--quiet"],
    );
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(
        calls(&killed_db),
        total,
        "no call stored twice, none missing"
    );
    assert_eq!(
        episodes(&killed_db),
        episodes(&clean_db),
        "same episodes as an uninterrupted run"
    );
    let (a, b) = (requests(&killed_db), requests(&clean_db));
    assert_eq!(a, b, "the same requests, each made once");
    let unique: BTreeSet<_> = a.iter().map(|r| (&r.2, r.0, r.1)).collect();
    assert_eq!(unique.len(), a.len());
}
