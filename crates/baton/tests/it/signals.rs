//! Signals end a run the way Ctrl-C does: no new call, every answered (billed) reply
//! stored, exit 1, and a resume that sends none of the stored calls again.
// See: issue 23 (SIGTERM answered 107 requests for 101 stored).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{SimServer, baton_ok, billed, http_pair, poll_count, write_experiment};

fn experiment(base_url: &str) -> String {
    format!(
        "name = \"signals\"\ndataset = \"sample\"\nfamilies = [\"math\", \"actions\"]\nlimit = 3\nreplicates = 2\nseed = 3\nconcurrency = 4\n{}",
        http_pair(base_url, "concurrency = 4\n")
    )
}

fn stop_with(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = SimServer::start(&["--latency-ms", "60"]);
    write_experiment(dir.path(), &experiment(&server.base_url));
    let db = dir.path().join("out/results.sqlite");
    let child = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", "exp.toml", "--out", "out", "--quiet"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while poll_count(&db, "SELECT count(*) FROM calls") < 12 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no calls stored"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{signal}: {err}");
    assert!(err.contains("stopping"), "{err}");
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "the calls in flight end within their latency"
    );
    let answered = server.stats()["ok_responses"].as_i64().unwrap();
    let stored = billed(&db);
    assert!(stored >= 12);
    assert_eq!(
        answered, stored,
        "{signal}: every answered request is stored"
    );
    let incomplete = poll_count(
        &db,
        "SELECT count(*) FROM episodes WHERE status = 'incomplete'",
    );
    assert!(incomplete > 0, "the stopped episodes are left incomplete");

    // the resume sends none of the stored calls again: the server answers exactly the
    // calls the store did not hold
    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "out", "--quiet", "--resume"],
    );
    let answered = server.stats()["ok_responses"].as_i64().unwrap();
    assert_eq!(answered, billed(&db), "no stored call was sent again");
    assert_eq!(
        poll_count(
            &db,
            "SELECT count(*) FROM episodes WHERE status = 'incomplete'"
        ),
        0
    );
}

#[test]
fn issue_23_sigterm_stores_every_answered_reply_and_resumes_without_resending() {
    stop_with("-TERM");
}

#[test]
fn issue_23_sighup_stops_a_run_like_ctrl_c() {
    stop_with("-HUP");
}
