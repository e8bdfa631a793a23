//! The ledger's money rules end to end against a `baton sim-server` on 127.0.0.1:0
//! that answers 40 % of requests with an empty (billed, unusable) reply: every billed
//! attempt is some episode's cost, and the dry run bounds what the run makes and pays.
// See: issue 31

use rusqlite::Connection;

use crate::support::SimServer;
use crate::{baton, stderr, stdout};

fn experiment(server: &SimServer) -> String {
    let over_http = |id: &str| {
        format!(
            "model = \"openai-compatible/{id}\"\nprice = \"sim/{id}\"\nbase_url = \"{}\"\nunusable_retries = 2",
            server.base_url
        )
    };
    format!(
        r#"
name = "faulty"
dataset = "sample"
families = ["math"]
limit = 2
seed = 4
retry_budget_secs = 5
switch_points = ["middle"]
directions = ["escalation"]
interfaces = ["raw", "compact_pre"]
[models.lc]
{}
[models.hc]
{}
[[pairs]]
low = "lc"
high = "hc"
"#,
        over_http("lc"),
        over_http("hc")
    )
}

/// The dry run's total row: (calls, paid upper bound in picodollars).
fn dry_total(text: &str) -> (i64, i64) {
    let row = text
        .lines()
        .find(|l| l.starts_with("| **total** |"))
        .unwrap_or_else(|| panic!("no total row in {text}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    let calls: i64 = cells[3].parse().unwrap();
    let usd: f64 = cells[4].trim_start_matches('$').parse().unwrap();
    (calls, (usd * 1e12).round() as i64)
}

#[test]
fn issue_31_every_billed_attempt_is_an_episodes_cost_and_the_dry_run_bounds_the_run() {
    let server = SimServer::start(&["--fault-rate", "0.4", "--faults", "empty", "--seed", "3"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("exp.toml"), experiment(&server)).unwrap();
    let dry = baton(
        dir.path(),
        &["run", "exp.toml", "--out", "dry", "--dry-run"],
    );
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert!(
        !dir.path().join("dry").exists(),
        "a dry run writes nothing, not even the sample databases"
    );
    let (dry_calls, dry_paid) = dry_total(&stdout(&dry));
    assert!(
        stdout(&dry).contains("handoff(lc -> hc, middle, compact_pre)"),
        "{}",
        stdout(&dry)
    );

    let run = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(
        run.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&run)
    );
    let db = Connection::open(dir.path().join("out/results.sqlite")).unwrap();
    let one = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    let attempts = one("SELECT count(*) FROM attempts");
    assert!(attempts > 0, "the server's empty replies were billed");
    let paid = one("SELECT coalesce(sum(cost), 0) FROM calls")
        + one("SELECT coalesce(sum(cost), 0) FROM attempts");
    // every billed attempt is some episode's cost: the cells add up to the run's total
    let cells = one("SELECT sum(cost_paid) FROM episodes");
    assert_eq!(cells, paid, "{attempts} unusable attempts");
    // and the dry run bounded it: summaries and unusable retries included
    let calls = one("SELECT count(*) FROM calls");
    let summaries = one("SELECT count(*) FROM calls WHERE phase = 'handoff'");
    assert!(summaries > 0);
    assert!(
        calls <= dry_calls,
        "{calls} calls made, {dry_calls} bounded"
    );
    assert!(paid <= dry_paid, "{paid} paid, {dry_paid} bounded");
    assert_eq!(
        server.stats()["requests"].as_u64().unwrap() as i64,
        calls + attempts,
        "every request the server answered is a stored call or attempt"
    );
}

#[test]
fn issue_37_the_unusable_attempts_a_run_stored_count_against_the_limit_of_the_next() {
    // every reply is empty: each call is answered twice (unusable_retries = 1), unusable
    let server = SimServer::start(&["--fault-rate", "1", "--faults", "empty", "--seed", "3"]);
    let dir = tempfile::tempdir().unwrap();
    let text = experiment(&server).replace("unusable_retries = 2", "unusable_retries = 1");
    std::fs::write(dir.path().join("exp.toml"), text).unwrap();
    let first = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(
        first.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&first)
    );
    let db = Connection::open(dir.path().join("out/results.sqlite")).unwrap();
    let one = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    let attempts = one("SELECT count(*) FROM attempts");
    let per_call: Vec<i64> = db
        .prepare("SELECT count(*) FROM attempts GROUP BY episode_id, turn, phase")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        !per_call.is_empty() && per_call.iter().all(|n| *n == 2),
        "{per_call:?}"
    );
    assert_eq!(server.requests() as i64, attempts);

    // the same command again: each of those calls has spent its limit in the store, so
    // not one request is sent, and each episode says why
    let again = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(
        again.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        server.requests() as i64,
        attempts,
        "no request the second time"
    );
    assert_eq!(one("SELECT count(*) FROM attempts"), attempts);
    let reasons: Vec<String> = db
        .prepare(
            "SELECT reason FROM episodes WHERE retired IS NULL AND reason LIKE '%earlier runs%'",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(reasons.len() as i64, per_call.len() as i64, "{reasons:?}");
    assert!(
        reasons[0].contains(
            "2 answered attempt(s) stored by earlier runs were unusable; the limit is 2 (unusable_retries = 1)"
        ),
        "{}",
        reasons[0]
    );
}
