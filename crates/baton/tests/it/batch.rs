//! Batched runs end to end (issue 16): `baton run` against `baton sim-server`'s batch
//! APIs sends no direct completion request, scores every episode as a direct run of the
//! same seeds does, pays the card's batch rates, refuses a batched model without them
//! before submitting anything, and survives SIGKILL while batches are pending without
//! submitting any item twice.
// See: issue 16 (batch APIs for multi-turn runs)

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{self, SimServer, baton_ok, http_pair, poll_count, rows};
use crate::{baton, stderr};

/// Two math and two data2text tasks, one middle switch each way, forked prefixes, both
/// models served by `server` through the `openai-compatible` provider.
fn experiment(base_url: &str, batch: bool, price_override: &str) -> String {
    format!(
        r#"
name = "batched"
dataset = "sample"
families = ["math", "data2text"]
limit = 2
seed = 11
switch_points = ["middle"]
directions = ["escalation", "downshift"]
batch_gather_ms = 300
batch_poll_ms = 40
{price_override}
{}"#,
        http_pair(base_url, &format!("batch = {batch}\n"))
    )
}

/// (task, cell, status, score, final response) of every episode, in order.
type Verdict = (String, String, String, Option<f64>, Option<String>);

fn verdicts(db: &Path) -> Vec<Verdict> {
    rows(
        db,
        "SELECT task_id, cell_key, status, score, final_response FROM episodes
         ORDER BY task_id, cell_key, replicate",
    )
}

/// Write [`experiment`] as the folder's `exp.toml`.
fn write_experiment(dir: &Path, base_url: &str, batch: bool, price_override: &str) {
    support::write_experiment(dir, &experiment(base_url, batch, price_override));
}

fn run(dir: &Path, out: &str, extra: &[&str]) {
    let mut args = vec!["run", "exp.toml", "--out", out, "--quiet"];
    args.extend_from_slice(extra);
    baton_ok(dir, &args);
}

/// `baton run exp.toml --out killed --quiet` plus `extra`, started in the background.
fn spawn_killed_run(dir: &Path, extra: &[&str], stderr: Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", "exp.toml", "--out", "killed", "--quiet"])
        .args(extra)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

#[test]
fn issue_16_a_batched_run_sends_no_direct_request_scores_like_a_direct_run_and_pays_batch_rates() {
    let dir = tempfile::tempdir().unwrap();
    // Each run gets a fresh server, so neither inherits the other's prompt cache.
    let direct_server = SimServer::start(&[]);
    write_experiment(dir.path(), &direct_server.base_url, false, "");
    run(dir.path(), "direct", &[]);
    let direct_db = dir.path().join("direct/results.sqlite");

    let server = SimServer::start(&["--batch-turnaround-ms", "60"]);
    write_experiment(dir.path(), &server.base_url, false, "");
    // `--batch` turns every model's batching on
    run(dir.path(), "batched", &["--batch"]);
    let db = dir.path().join("batched/results.sqlite");

    let stats = server.stats();
    assert_eq!(
        stats["requests"], 0,
        "no direct completion request: {stats}"
    );
    let calls = poll_count(&db, "SELECT count(*) FROM calls");
    assert!(calls > 40, "{calls}");
    assert_eq!(stats["batch_items"], calls, "{stats}");
    assert_eq!(
        poll_count(&db, "SELECT count(*) FROM calls WHERE batch_id IS NULL"),
        0,
        "every call names its batch"
    );
    assert_eq!(
        poll_count(
            &db,
            "SELECT count(*) FROM calls WHERE batch_id NOT IN (SELECT batch_id FROM batches)"
        ),
        0
    );
    assert_eq!(
        poll_count(
            &db,
            "SELECT count(*) FROM batches WHERE finished_at IS NULL"
        ),
        0
    );
    assert_eq!(
        poll_count(&db, "SELECT min(gather_ms) FROM batches"),
        300,
        "the gather window is stored with every batch"
    );
    let batch_stats = server.get("/batch-stats");
    assert_eq!(batch_stats["items"], calls, "{batch_stats}");
    assert_eq!(batch_stats["resubmitted"], Value::Array(vec![]));

    assert_eq!(
        verdicts(&db),
        verdicts(&direct_db),
        "the same verdicts and replies"
    );
    assert_eq!(calls, poll_count(&direct_db, "SELECT count(*) FROM calls"));

    // Every stored cost is the call's usage at the card's batch rates, half the direct
    // ones (sim/lc: $0.10 / $0.60 per M, cache reads $0.01, writes $0.125; sim/hc: $2 /
    // $10, $0.20 and $2.50).
    let priced: Vec<(String, i64, i64, i64, i64, i64)> = rows(
        &db,
        "SELECT model, uncached_in, cache_read, cache_write_5m, output, cost FROM calls",
    );
    for (model, uncached, read, write, output, cost) in priced {
        // picodollars per token: input, cache read, cache write, output
        let (i, r, w, o) = if model == "hc" {
            (2_000_000, 200_000, 2_500_000, 10_000_000)
        } else {
            (100_000, 10_000, 125_000, 600_000)
        };
        assert_eq!(
            cost,
            uncached * i + read * r + write * w + output * o,
            "{model}"
        );
    }
    // The dry run shows each cell's rounds: anchors take the longest task's turns.
    let longest = poll_count(&db, "SELECT max(n_turns) FROM tasks");
    let dry = baton_ok(dir.path(), &["run", "exp.toml", "--dry-run", "--batch"]);
    let table = crate::stdout(&dry);
    let single = table
        .lines()
        .find(|l| l.starts_with("| single(lc) |"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(single.ends_with(&format!(" {longest} |")), "{table}");
    assert!(
        table.contains("batch rounds") && table.contains("batch rates"),
        "{table}"
    );
    // and the run took about that many rounds per model: its batches
    let rounds = poll_count(&db, "SELECT count(*) FROM batches WHERE model = 'lc'");
    assert!(rounds >= longest, "{rounds} rounds");

    // Each batched call also stores its cost at the direct rates (exactly twice the
    // batch cost here), and the report says what batching saved next to forking.
    assert_eq!(
        poll_count(
            &db,
            "SELECT count(*) FROM calls WHERE cost_direct != 2 * cost"
        ),
        0
    );
    let report = baton_ok(dir.path(), &["report", "batched", "--format", "json"]);
    let json: Value = serde_json::from_str(&crate::stdout(&report)).unwrap();
    let line = &json["spend"];
    assert_eq!(line["batched_attempts"], calls, "{line}");
    let saved = poll_count(&db, "SELECT sum(cost) FROM calls") as f64 * 1e-12;
    assert!(
        (line["saved_by_batching_usd"].as_f64().unwrap() - saved).abs() < 1e-9,
        "{line}"
    );
    assert!(
        line["saved_by_forking_usd"].as_f64().unwrap() > 0.0,
        "{line}"
    );

    let spend = |db: &Path| poll_count(db, "SELECT sum(cost) FROM calls") as f64;
    let ratio = spend(&db) / spend(&direct_db);
    assert!(
        ratio <= 0.55,
        "batched spend is {ratio:.3} of the direct run's"
    );
}

#[test]
fn a_batched_model_without_batch_rates_is_refused_before_anything_is_submitted() {
    let dir = tempfile::tempdir().unwrap();
    let server = SimServer::start(&[]);
    let card = dir.path().join("prices.json");
    std::fs::write(
        &card,
        r#"{"sim/hc": {"input_cost_per_token": 4e-06, "output_cost_per_token": 2e-05}}"#,
    )
    .unwrap();
    write_experiment(
        dir.path(),
        &server.base_url,
        true,
        "prices = \"prices.json\"",
    );
    let o = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("hc")
            && err.contains("\"sim/hc\"")
            && err.contains("input_cost_per_token_batches"),
        "{err}"
    );
    assert_eq!(server.get("/batch-stats")["batches"], 0);
    assert_eq!(server.stats()["requests"], 0);
}

#[test]
fn issue_16_a_run_killed_while_batches_are_pending_resumes_without_submitting_an_item_twice() {
    let dir = tempfile::tempdir().unwrap();
    let clean_server = SimServer::start(&["--batch-turnaround-ms", "60"]);
    write_experiment(dir.path(), &clean_server.base_url, true, "");
    run(dir.path(), "clean", &[]);
    let clean_db = dir.path().join("clean/results.sqlite");

    // Batches take 1.5 s here, so every kill lands while one is pending; a create
    // request is answered 400 ms after the batch was made.
    let server = SimServer::start(&[
        "--batch-turnaround-ms",
        "1500",
        "--batch-create-latency-ms",
        "400",
    ]);
    write_experiment(dir.path(), &server.base_url, true, "");
    let db = dir.path().join("killed/results.sqlite");
    let made = || server.get("/batch-stats")["batches"].as_i64().unwrap_or(0);
    // First kill: the server has made a batch the store knows only as a submission
    // (the resume must ask the server for it, not send its items again).
    let mut child = spawn_killed_run(dir.path(), &[], Stdio::null());
    let in_doubt = "SELECT count(*) FROM batch_submissions WHERE settled_at IS NULL";
    let started = Instant::now();
    while made() == 0 || poll_count(&db, in_doubt) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no batch was made"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        poll_count(&db, "SELECT count(*) FROM batches"),
        0,
        "killed before the batch was recorded"
    );
    assert!(poll_count(&db, in_doubt) > 0);

    let pending = "SELECT count(*) FROM batches WHERE finished_at IS NULL";
    for (round, calls_at_least) in [0, 12, 30].into_iter().enumerate() {
        let mut child = spawn_killed_run(dir.path(), &[], Stdio::null());
        let started = Instant::now();
        while poll_count(&db, "SELECT count(*) FROM calls") < calls_at_least
            || poll_count(&db, pending) == 0
        {
            assert!(
                started.elapsed() < Duration::from_secs(120),
                "round {round}: no pending batch"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "round {round}: finished before it could be killed"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        child.kill().unwrap(); // SIGKILL while a batch is pending
        child.wait().unwrap();
    }
    assert_eq!(
        poll_count(
            &db,
            "SELECT count(*) FROM batch_submissions WHERE batch_id = (SELECT min(batch_id) FROM batches)"
        ),
        1,
        "the first batch was found and settled its submission"
    );
    // Ctrl-C while a batch is pending: the run stops without waiting for it, leaves it
    // running and says how to collect it.
    let child = spawn_killed_run(dir.path(), &["--resume"], Stdio::piped());
    let before = poll_count(&db, "SELECT count(*) FROM batches");
    let started = Instant::now();
    while poll_count(&db, "SELECT count(*) FROM batches") == before {
        assert!(started.elapsed() < Duration::from_secs(60), "no new batch");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sigint = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sigint.success());
    let stopped = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(
        stopped.elapsed() < Duration::from_millis(1400),
        "the run stopped without waiting for its 1.5 s batch"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("still running") && err.contains("--resume"),
        "{err}"
    );
    assert!(poll_count(&db, pending) > 0, "the batch is left running");
    run(dir.path(), "killed", &["--resume"]);

    let stats = server.get("/batch-stats");
    assert_eq!(
        stats["resubmitted"],
        Value::Array(vec![]),
        "no custom_id submitted twice: {stats}"
    );
    let calls = poll_count(&db, "SELECT count(*) FROM calls");
    assert_eq!(calls, poll_count(&clean_db, "SELECT count(*) FROM calls"));
    assert_eq!(stats["items"], calls, "every item submitted once: {stats}");
    assert_eq!(verdicts(&db), verdicts(&clean_db));
    assert_eq!(server.stats()["requests"], 0);
}

/// `(batch_id, model, uncached_in, cache_read, cache_write_5m, output, cost, cost_direct)`
/// of every call.
type PricedCall = (Option<String>, String, i64, i64, i64, i64, i64, Option<i64>);

fn priced_calls(db: &Path) -> Vec<PricedCall> {
    rows(
        db,
        "SELECT batch_id, model, uncached_in, cache_read, cache_write_5m, output, cost,
         cost_direct FROM calls",
    )
}

/// What a call's usage costs at the card's direct rates (sim/lc: $0.20 / $1.20 per M,
/// cache reads $0.02, writes $0.25; sim/hc: $4 / $20, $0.40 and $5), in picodollars.
fn direct_rate_cost(model: &str, uncached: i64, read: i64, write: i64, output: i64) -> i64 {
    let (i, r, w, o) = if model == "hc" {
        (4_000_000, 400_000, 5_000_000, 20_000_000)
    } else {
        (200_000, 20_000, 250_000, 1_200_000)
    };
    uncached * i + read * r + write * w + output * o
}

#[test]
fn issue_16_batch_retry_direct_sends_each_failed_item_once_directly_at_direct_rates() {
    let dir = tempfile::tempdir().unwrap();
    let direct_server = SimServer::start(&[]);
    write_experiment(dir.path(), &direct_server.base_url, false, "");
    run(dir.path(), "direct", &[]);
    let direct_db = dir.path().join("direct/results.sqlite");

    let fail = ["--batch-turnaround-ms", "60", "--batch-fail-rate", "0.3"];
    let server = SimServer::start(&fail);
    write_experiment(
        dir.path(),
        &server.base_url,
        true,
        "batch_retry = \"direct\"",
    );
    run(dir.path(), "retried", &[]);
    let db = dir.path().join("retried/results.sqlite");

    let batch_stats = server.get("/batch-stats");
    let failed = batch_stats["items"].as_i64().unwrap() - batch_stats["answered"].as_i64().unwrap();
    assert!(failed > 0, "{batch_stats}");
    assert_eq!(
        server.stats()["requests"],
        failed,
        "one direct request per failed item: {batch_stats}"
    );
    assert_eq!(
        poll_count(&db, "SELECT count(*) FROM calls WHERE batch_id IS NULL"),
        failed
    );
    assert_eq!(
        verdicts(&db),
        verdicts(&direct_db),
        "the same verdicts and replies"
    );
    assert_eq!(
        poll_count(&db, "SELECT count(*) FROM batches WHERE retry != 'direct'"),
        0,
        "the retry mode is stored with every batch"
    );
    // Direct retries pay the direct rates and saved nothing; batched calls pay half.
    for (batch, model, uncached, read, write, output, cost, cost_direct) in priced_calls(&db) {
        let at_direct = direct_rate_cost(&model, uncached, read, write, output);
        match batch {
            None => {
                assert_eq!(cost, at_direct, "{model}");
                assert_eq!(cost_direct, None, "{model}");
            }
            Some(_) => {
                assert_eq!(2 * cost, at_direct, "{model}");
                assert_eq!(cost_direct, Some(at_direct), "{model}");
            }
        }
    }
    let report = baton_ok(dir.path(), &["report", "retried", "--format", "json"]);
    let json: Value = serde_json::from_str(&crate::stdout(&report)).unwrap();
    let saved = poll_count(
        &db,
        "SELECT sum(cost) FROM calls WHERE batch_id IS NOT NULL",
    ) as f64
        * 1e-12;
    assert!(
        (json["spend"]["saved_by_batching_usd"].as_f64().unwrap() - saved).abs() < 1e-9,
        "{}",
        json["spend"]
    );

    // The default retries failed items in later rounds: no direct request at all.
    let server = SimServer::start(&fail);
    write_experiment(dir.path(), &server.base_url, true, "");
    run(dir.path(), "rounds", &[]);
    let db = dir.path().join("rounds/results.sqlite");
    let batch_stats = server.get("/batch-stats");
    assert!(
        batch_stats["items"].as_i64().unwrap() > batch_stats["answered"].as_i64().unwrap(),
        "{batch_stats}"
    );
    assert_eq!(server.stats()["requests"], 0);
    assert_eq!(
        poll_count(&db, "SELECT count(*) FROM calls WHERE batch_id IS NULL"),
        0
    );
    assert_eq!(
        poll_count(&db, "SELECT count(*) FROM batches WHERE retry != 'round'"),
        0
    );
    assert_eq!(verdicts(&db), verdicts(&direct_db));
}

#[test]
fn batch_retry_is_checked_before_anything_is_submitted() {
    let dir = tempfile::tempdir().unwrap();
    let server = SimServer::start(&[]);
    // an unknown value names the file and the key
    write_experiment(
        dir.path(),
        &server.base_url,
        true,
        "batch_retry = \"later\"",
    );
    let o = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("exp.toml") && err.contains("batch_retry") && err.contains("later"),
        "{err}"
    );
    // direct retries need every direct rate of a batched model (here the cache-read
    // rate; the batch rates are all there)
    let card = dir.path().join("prices.json");
    std::fs::write(
        &card,
        r#"{"sim/hc": {"input_cost_per_token": 4e-06, "output_cost_per_token": 2e-05,
            "input_cost_per_token_batches": 2e-06, "output_cost_per_token_batches": 1e-05,
            "cache_read_input_token_cost_batches": 2e-07}}"#,
    )
    .unwrap();
    write_experiment(
        dir.path(),
        &server.base_url,
        true,
        "batch_retry = \"direct\"\nprices = \"prices.json\"",
    );
    let o = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("hc")
            && err.contains("\"sim/hc\"")
            && err.contains("cache_read_input_token_cost")
            && err.contains("batch_retry"),
        "{err}"
    );
    assert_eq!(server.get("/batch-stats")["batches"], 0);
    assert_eq!(server.stats()["requests"], 0);
}
