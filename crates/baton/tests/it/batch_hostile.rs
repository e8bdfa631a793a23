//! Batched runs against a hostile batch provider (issue 23), `baton sim-server
//! --batch-faults`: every billed item is stored, no item is submitted twice, polling
//! always ends, a 300 MB results file is read in bounded memory, and a key the server
//! echoes reaches no store, report or log.
// See: issue 23 (money round 2)

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::Value;

use crate::support::{SimServer, count, http_pair, spawn_quiet, write_experiment};
use crate::{baton, stderr};

/// One math task, both models batched through `base_url`; `top` goes before the
/// models, `model` into each model's table.
fn experiment(base_url: &str, top: &str, model: &str) -> String {
    format!(
        "name = \"hostile\"\ndataset = \"sample\"\nfamilies = [\"math\"]\nlimit = 1\nseed = 5\nswitch_points = [\"middle\"]\ndirections = [\"escalation\"]\nbatch_gather_ms = 150\nbatch_poll_ms = 20\n{top}\n{}",
        http_pair(base_url, &format!("batch = true\n{model}\n"))
    )
}

fn texts(db: &Path, sql: &str) -> Vec<String> {
    let c = Connection::open(db).unwrap();
    let mut s = c.prepare(sql).unwrap();
    s.query_map([], |r| r.get::<_, Option<String>>(0))
        .unwrap()
        .map(|r| r.unwrap().unwrap_or_default())
        .collect()
}

/// Billed items (the server's answered count) against stored ones (calls and billed
/// attempts that name a batch item).
fn billed_and_stored(server: &SimServer, db: &Path) -> (i64, i64) {
    let stats = server.get("/batch-stats");
    let stored = count(
        db,
        "SELECT (SELECT count(*) FROM calls WHERE batch_item IS NOT NULL)
              + (SELECT count(*) FROM attempts WHERE batch_item IS NOT NULL)",
    );
    (stats["answered"].as_i64().unwrap(), stored)
}

#[test]
fn issue_23_a_malformed_line_or_failed_downloads_are_paid_once_and_every_billed_item_is_stored() {
    for faults in ["malformed-line", "failed-downloads=5"] {
        let dir = tempfile::tempdir().unwrap();
        let server = SimServer::start(&["--batch-turnaround-ms", "40", "--batch-faults", faults]);
        write_experiment(dir.path(), &experiment(&server.base_url, "", ""));
        let o = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
        assert!(o.status.success(), "{faults}: {}", stderr(&o));
        let db = dir.path().join("out/results.sqlite");
        let stats = server.get("/batch-stats");
        assert_eq!(
            stats["resubmitted"],
            Value::Array(vec![]),
            "{faults}: {stats}"
        );
        let (billed, stored) = billed_and_stored(&server, &db);
        assert_eq!(billed, stored, "{faults}: {stats}");
        assert_eq!(
            count(
                &db,
                "SELECT count(*) FROM batches WHERE finished_at IS NULL"
            ),
            0,
            "{faults}: every batch collected"
        );
        assert_eq!(server.stats()["requests"], 0, "{faults}");
        let unusable = count(
            &db,
            "SELECT count(*) FROM attempts WHERE batch_item IS NOT NULL",
        );
        let batches = count(&db, "SELECT count(*) FROM batches");
        if faults == "malformed-line" {
            assert_eq!(
                (unusable, batches > 1),
                (1, true),
                "one unusable billed item, no lost batch"
            );
        } else {
            assert_eq!(unusable, 0);
        }
    }
}

#[test]
fn issue_23_stuck_unknown_and_redirected_batches_end_the_run_with_a_clear_error_every_time() {
    for (faults, says) in [
        ("stuck", "batch_deadline"),
        ("not-found", "404"),
        ("redirect", "redirect"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let server = SimServer::start(&["--batch-turnaround-ms", "40", "--batch-faults", faults]);
        write_experiment(
            dir.path(),
            &experiment(&server.base_url, "batch_deadline = \"1s\"", ""),
        );
        let db = dir.path().join("out/results.sqlite");
        for resume in [false, true] {
            let mut args = vec!["run", "exp.toml", "--out", "out", "--quiet"];
            if resume {
                args.push("--resume");
            }
            let started = Instant::now();
            let o = baton(dir.path(), &args);
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{faults}: the run ended"
            );
            assert_eq!(o.status.code(), Some(1), "{faults}: {}", stderr(&o));
            let reasons = texts(
                &db,
                "SELECT reason FROM episodes WHERE status = 'incomplete'",
            );
            // the episodes that waited on a batch say why; the others wait on them
            let waited = reasons
                .iter()
                .filter(|r| !r.contains("prefix is incomplete"))
                .collect::<Vec<_>>();
            assert!(!waited.is_empty(), "{faults}: {reasons:?}");
            for reason in waited {
                assert!(
                    reason.contains(says) && reason.contains("--resume"),
                    "{faults}: {reason}"
                );
            }
            assert_eq!(
                count(
                    &db,
                    "SELECT count(*) FROM episodes WHERE status = 'incomplete' AND score IS NOT NULL"
                ),
                0,
                "{faults}: incomplete is never a score"
            );
        }
        let stats = server.get("/batch-stats");
        assert_eq!(
            stats["resubmitted"],
            Value::Array(vec![]),
            "{faults}: {stats}"
        );
        assert_eq!(
            stats["batches"],
            count(&db, "SELECT count(*) FROM batches"),
            "{faults}: the resume polled the recorded batches, it made none: {stats}"
        );
        assert_eq!(stats["answered"], 0, "{faults}");
    }
}

#[test]
fn issue_23_a_key_echoed_in_batch_item_errors_reaches_no_store_report_or_log() {
    let key = "sk-batch-echo-SECRET-77";
    let dir = tempfile::tempdir().unwrap();
    let server = SimServer::start(&[
        "--batch-turnaround-ms",
        "30",
        "--batch-fail-rate",
        "1",
        "--batch-faults",
        "echo-key",
    ]);
    write_experiment(
        dir.path(),
        &experiment(
            &server.base_url,
            "retry_budget_secs = 1",
            "api_key_env = \"BATON_ECHO_TEST_KEY\"",
        ),
    );
    let run = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", "exp.toml", "--out", "out"])
        .current_dir(dir.path())
        .env("BATON_ECHO_TEST_KEY", key)
        .env("BATON_LOG", "debug")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let log = format!("{}{}", crate::stdout(&run), stderr(&run));
    assert_eq!(run.status.code(), Some(1), "{log}");
    let db = dir.path().join("out/results.sqlite");
    let reasons = texts(&db, "SELECT reason FROM episodes").join("\n");
    assert!(reasons.contains("****"), "the echo was there: {reasons}");
    for format in ["md", "json"] {
        let report = baton(dir.path(), &["report", "out", "--format", format]);
        assert!(report.status.success(), "{}", stderr(&report));
        let text = crate::stdout(&report);
        assert!(!text.contains(key), "report.{format}: {text}");
    }
    assert!(!log.contains(key), "{log}");
    for entry in walk(&dir.path().join("out")) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "{} holds the key",
            entry.display()
        );
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A process's peak resident memory so far, in bytes (`VmHWM`).
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[test]
fn issue_23_a_300_mb_results_file_is_read_in_under_300_mb() {
    if !Path::new("/proc/self/status").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = SimServer::start(&[
        "--batch-turnaround-ms",
        "30",
        "--batch-faults",
        "padding-mb=300",
    ]);
    write_experiment(dir.path(), &experiment(&server.base_url, "", ""));
    let mut child = spawn_quiet(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let started = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        peak = peak.max(peak_rss(child.id()).unwrap_or(0));
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the run did not end"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    let db = dir.path().join("out/results.sqlite");
    let (billed, stored) = billed_and_stored(&server, &db);
    assert_eq!(billed, stored);
    assert!(peak > 0, "the peak was read");
    let padded = server.get("/batch-stats")["padding_sent"].as_u64().unwrap();
    assert!(padded >= 300_000_000, "{padded} bytes of padding sent");
    assert!(
        peak < 300 << 20,
        "peak RSS {} MB on a 300 MB results file",
        peak >> 20
    );
}

#[test]
fn issue_23_a_bad_batch_deadline_is_refused_naming_the_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    for bad in ["\"2d\"", "\"0s\"", "\"-1h\"", "\"soon\""] {
        write_experiment(
            dir.path(),
            &experiment(
                "http://127.0.0.1:9/v1",
                &format!("batch_deadline = {bad}"),
                "",
            ),
        );
        let o = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("exp.toml") && err.contains("batch_deadline") && err.contains(bad),
            "{bad}: {err}"
        );
    }
    // a good one runs (dry)
    write_experiment(
        dir.path(),
        &experiment("http://127.0.0.1:9/v1", "batch_deadline = \"90m\"", ""),
    );
    let o = baton(dir.path(), &["run", "exp.toml", "--dry-run"]);
    assert!(o.status.success(), "{}", stderr(&o));
}
