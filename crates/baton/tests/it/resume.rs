use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::support::{
    self, SimServer, baton_ok, http_pair, poll_count, rows, spawn_quiet, write_experiment,
};

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
    poll_count(db, "SELECT count(*) FROM calls")
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
    rows(
        db,
        "SELECT task_id, cell_key, replicate, status, final_response, score, cost_attributed, cost_paid
         FROM episodes ORDER BY task_id, cell_key, replicate",
    )
}

fn requests(db: &Path) -> Vec<(i64, i64, String, String)> {
    rows(
        db,
        "SELECT e.replicate, c.turn, e.task_id || ' ' || e.cell_key || ' ' || c.phase, c.request_sha256
         FROM calls c JOIN episodes e ON e.id = c.episode_id ORDER BY 3, 1, 2",
    )
}

/// Kill the process after some calls, resume, and compare with an uninterrupted run.
#[test]
fn a_killed_run_resumes_to_the_same_store_without_repeating_a_call() {
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), EXPERIMENT);

    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "clean", "--quiet"],
    );
    let clean_db = dir.path().join("clean/results.sqlite");
    let total = calls(&clean_db);
    assert!(total > 100, "enough calls to interrupt: {total}");

    let killed_db = dir.path().join("killed/results.sqlite");
    for (round, stop_at) in [total / 5, total / 2].into_iter().enumerate() {
        let mut child = spawn_quiet(
            dir.path(),
            &["run", "exp.toml", "--out", "killed", "--quiet"],
        );
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

    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "killed", "--resume", "--quiet"],
    );
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

/// The experiment above over HTTP: both models are served by `server` through the
/// `openai-compatible` provider, four calls in flight per model, at temperature 0, so
/// the server answers a request sent again (in flight at a kill) as it answered it the
/// first time, as the comparison with an uninterrupted run needs.
fn over_http(base_url: &str) -> String {
    format!(
        "name = \"resume-http\"\ndataset = \"sample\"\nfamilies = [\"math\", \"data2text\", \"actions\"]\nlimit = 3\nreplicates = 2\nseed = 5\nconcurrency = 4\n{}",
        http_pair(base_url, "concurrency = 4\ntemperature = 0.0\n")
    )
}

/// Calls in flight at most: four per model.
const IN_FLIGHT: u64 = 8;

/// Billed attempts stored: used replies (calls) plus unusable ones (attempts).
fn billed(db: &Path) -> u64 {
    u64::try_from(support::billed(db)).expect("a count")
}

fn integrity(db: &Path) -> String {
    Connection::open(db)
        .and_then(|c| c.query_row("PRAGMA integrity_check", [], |r| r.get(0)))
        .unwrap_or_else(|e| e.to_string())
}

/// A small deterministic generator for the kill moments (xorshift64*).
struct Moments(u64);

impl Moments {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// Twenty SIGKILLs at random moments over HTTP (some after a random number of new calls,
/// some after a random time, which also hits start-up and the resume's checks), then a
/// resume: the same verdicts and final replies as an uninterrupted run, the store intact
/// after every kill, and no more answered requests paid for twice than were in flight.
#[test]
#[allow(clippy::print_stderr)] // the run's figures, for the record
fn twenty_kills_at_random_moments_resume_to_the_uninterrupted_results() {
    let dir = tempfile::tempdir().unwrap();

    let clean_server = SimServer::start(&["--latency-ms", "5"]);
    std::fs::write(
        dir.path().join("clean.toml"),
        over_http(&clean_server.base_url),
    )
    .unwrap();
    baton_ok(
        dir.path(),
        &["run", "clean.toml", "--out", "clean", "--quiet"],
    );
    let clean_db = dir.path().join("clean/results.sqlite");
    let total = calls(&clean_db);
    assert!(
        total > 300,
        "enough calls to interrupt twenty times: {total}"
    );
    let clean_answered = clean_server.stats()["ok_responses"].as_u64().unwrap();
    assert_eq!(clean_answered, billed(&clean_db), "no faults, no retries");

    let server = SimServer::start(&["--latency-ms", "5"]);
    write_experiment(dir.path(), &over_http(&server.base_url));
    let killed_db = dir.path().join("killed/results.sqlite");
    let mut moments = Moments(0x9E37_79B9_7F4A_7C15);
    // At most a fortieth of the calls per round, plus what is in flight at the kill.
    let step = (total as u64 / 40).max(2);
    for round in 0..20 {
        let before = calls(&killed_db);
        let mut child = spawn_quiet(
            dir.path(),
            &["run", "exp.toml", "--out", "killed", "--quiet"],
        );
        let started = Instant::now();
        // Some rounds stop after a random number of new calls, some after a random time
        // (maybe before the first call, maybe mid-call), and those too once a round's
        // worth of calls is stored, so twenty rounds leave the run unfinished however
        // fast the machine is.
        let (stop_at, after) = if round % 4 == 3 {
            let ms = moments.below(400);
            (before + step as i64, Some(Duration::from_millis(ms)))
        } else {
            (before + 1 + moments.below(step) as i64, None)
        };
        while calls(&killed_db) < stop_at
            && after.is_none_or(|t| started.elapsed() < t)
            && child.try_wait().unwrap().is_none()
        {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "round {round}: run too slow"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let finished = child.try_wait().unwrap().is_some();
        assert!(
            !finished,
            "round {round}: finished before it could be killed"
        );
        child.kill().unwrap(); // SIGKILL: no chance to clean up
        child.wait().unwrap();
        if killed_db.exists() {
            assert_eq!(integrity(&killed_db), "ok", "round {round}");
        }
    }
    let stored = calls(&killed_db);
    assert!(
        stored < total,
        "killed before the end ({stored} of {total})"
    );

    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "killed", "--resume", "--quiet"],
    );
    assert_eq!(
        calls(&killed_db),
        total,
        "no call stored twice, none missing"
    );

    // the same verdicts and final replies (costs may differ: a re-sent request reads
    // more of the server's prompt cache the second time)
    let outcome = |db: &Path| -> Vec<_> {
        episodes(db)
            .into_iter()
            .map(|e| (e.0, e.1, e.2, e.3, e.4, e.5))
            .collect()
    };
    assert_eq!(outcome(&killed_db), outcome(&clean_db));
    let (a, b) = (requests(&killed_db), requests(&clean_db));
    assert_eq!(a, b, "the same requests");
    let unique: BTreeSet<_> = a.iter().map(|r| (&r.2, r.0, r.1)).collect();
    assert_eq!(unique.len(), a.len(), "each request stored once");

    // every answered request is stored, except those in flight when a kill came
    let answered = server.stats()["ok_responses"].as_u64().unwrap();
    let paid_twice = answered - billed(&killed_db);
    assert_eq!(billed(&killed_db), clean_answered);
    eprintln!(
        "20 kills: {stored} of {total} calls stored before the last resume; {paid_twice} answered requests sent again"
    );
    assert!(
        paid_twice <= 20 * IN_FLIGHT,
        "{paid_twice} answered requests were sent again; at most {} were in flight",
        20 * IN_FLIGHT
    );
}
