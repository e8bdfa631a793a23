//! Money and reliability end to end: every billed reply counted, hostile servers
//! survived, one writer per folder, and a resume that checks what it resumes.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{
    SimServer, baton_ok, serve_loopback, spawn_quiet, wait_for_lock, write_experiment,
};
use crate::{baton, stderr, stdout};

/// A small math experiment with `lc` and `hc` set up as given (`hc` defaults to
/// `sim/hc`).
fn experiment(name: &str, model: &str, hc: &str) -> String {
    let extra = if hc.is_empty() {
        "model = \"sim/hc\""
    } else {
        hc
    };
    format!(
        r#"
name = "{name}"
dataset = "sample"
families = ["math"]
limit = 2
switch_points = ["middle"]
directions = ["escalation"]
retry_budget_secs = 5
[models.lc]
{model}
[models.hc]
{extra}
[[pairs]]
low = "lc"
high = "hc"
"#
    )
}

#[test]
fn every_billed_reply_of_a_faulty_server_is_counted() {
    let server = SimServer::start(&[
        "--fault-rate",
        "0.4",
        "--faults",
        "empty,malformed",
        "--seed",
        "3",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let over_http = |id: &str| {
        format!(
            "model = \"openai-compatible/{id}\"\nprice = \"sim/{id}\"\nbase_url = \"{}\"\nunusable_retries = 8",
            server.base_url
        )
    };
    let exp = experiment("faults", &over_http("lc"), &over_http("hc"));
    write_experiment(dir.path(), &exp);
    let run = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(
        run.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&run)
    );
    let stats = server.stats();
    let report = baton_ok(dir.path(), &["report", "out", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    let spend = &json["spend"];
    let faults = stats["faults"]["empty"].as_u64().unwrap_or(0)
        + stats["faults"]["malformed"].as_u64().unwrap_or(0);
    assert!(faults > 0, "the server injected faults: {stats}");
    assert_eq!(
        spend["billed_attempts"], stats["ok_responses"],
        "{spend} vs {stats}"
    );
    assert_eq!(
        spend["unusable_attempts"].as_u64(),
        Some(faults),
        "{spend} vs {stats}"
    );
    assert!(spend["paid_usd"].as_f64().unwrap() > 0.0);
    // the malformed replies have no readable usage, and say so
    assert_eq!(
        spend["unknown_usage_attempts"].as_u64(),
        stats["faults"]["malformed"].as_u64().or(Some(0))
    );
    let md = baton(dir.path(), &["report", "out"]);
    assert!(stdout(&md).contains("billed attempts"), "{}", stdout(&md));
}

/// A server that answers every request with a 429 asking to wait `retry_after`.
fn rate_limiting_server(retry_after: &'static str) -> String {
    serve_loopback(move |stream, _| {
        let mut stream = stream;
        let mut buf = [0u8; 65536];
        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = stream.read(&mut buf);
        let body =
            r#"{"error":{"type":"requests","code":"rate_limit_exceeded","message":"slow down"}}"#;
        let _ = write!(
            stream,
            "HTTP/1.1 429 Too Many Requests\r\nretry-after: {retry_after}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    })
}

#[test]
fn a_retry_after_of_1e20_gives_an_incomplete_run_not_a_panic() {
    let url = rate_limiting_server("1e20");
    let dir = tempfile::tempdir().unwrap();
    let model =
        format!("model = \"openai-compatible/lc\"\nprice = \"sim/lc\"\nbase_url = \"{url}\"");
    std::fs::write(
        dir.path().join("exp.toml"),
        experiment("hostile", &model, ""),
    )
    .unwrap();
    let started = Instant::now();
    let run = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(err.contains("incomplete"), "{err}");
}

#[test]
fn a_second_run_on_a_busy_folder_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let slow = "model = \"sim/lc\"\n[models.lc.sim]\nlatency_ms = 400";
    write_experiment(dir.path(), &experiment("busy", slow, ""));
    let mut first = spawn_quiet(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    wait_for_lock(&dir.path().join("out/baton.lock"));
    let t0 = Instant::now();
    let second = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(
        err.contains("baton.lock") && err.contains(&format!("process {}", first.id())),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "refused at once");
    first.kill().unwrap();
    first.wait().unwrap();
    // the kernel released the lock with the killed process
    baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
}

/// A price card edited between runs re-prices the stored usage and sends nothing: a
/// price is not what an episode depends on (issue 31 replaced the refusal).
#[test]
fn a_resume_with_an_edited_price_card_reprices_the_stored_calls() {
    let dir = tempfile::tempdir().unwrap();
    let card = |rate: &str| {
        format!(
            r#"{{"sim/hc": {{"input_cost_per_token": {rate}, "output_cost_per_token": 2e-05, "cache_read_input_token_cost": 4e-07}}}}"#
        )
    };
    std::fs::write(dir.path().join("prices.json"), card("4e-06")).unwrap();
    let exp = experiment("prices", "model = \"sim/lc\"", "").replace(
        "retry_budget_secs = 5",
        "retry_budget_secs = 5\nprices = \"prices.json\"",
    );
    write_experiment(dir.path(), &exp);
    baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let db = rusqlite::Connection::open(dir.path().join("out/results.sqlite")).unwrap();
    let sum = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    let (calls, hc_before) = (
        sum("SELECT count(*) FROM calls"),
        sum("SELECT sum(cost) FROM calls WHERE model = 'hc'"),
    );
    std::fs::write(dir.path().join("prices.json"), card("5e-06")).unwrap();
    let again = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(
        stdout(&again).contains("price card changed: stored usage re-priced"),
        "{}",
        stdout(&again)
    );
    assert_eq!(
        sum("SELECT count(*) FROM calls"),
        calls,
        "nothing sent again"
    );
    let hc_in = sum("SELECT sum(uncached_in) FROM calls WHERE model = 'hc'");
    assert_eq!(
        sum("SELECT sum(cost) FROM calls WHERE model = 'hc'") - hc_before,
        hc_in * 1_000_000,
        "each uncached input token of hc now costs $1e-6 more"
    );
    let n: i64 = sum("SELECT count(*) FROM input_changes WHERE name = 'price card'");
    assert_eq!(n, 1, "the change is recorded");
    let _ = Path::new(".");
}
