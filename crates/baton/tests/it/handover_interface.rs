//! The agent study's `handover` interface through the binary, against a sim-server over
//! HTTP on loopback, in the real sandbox: at the switch the tree is committed, the
//! prefix model writes a Handover document (one paid `handoff` call), baton lints it with
//! its claims checked at that commit and stores the lint; the suffix model continues from
//! the document as from a `compact_pre` summary. A chat experiment refuses `handover`.
//
// See: issue 38 (`issues show 38`), part 3.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use baton_handover::{Document, Rubric};
use serde_json::Value;

use crate::env::sandbox_works;
use crate::support::{
    SimServer, agent_http_pair, baton_ok, billed, count, poll_count, report_json, rows,
    spawn_quiet, write_experiment,
};
use crate::{baton, stderr, stdout};

/// An agent study of `limit` tasks (6: 1 easy, 3 medium, 2 hard, so a switch percentile
/// below 50 fires in some bucket) whose two models are served by the sim-server at
/// `url`, with `interfaces` at the switch percentiles `percentiles`.
fn experiment(
    url: &str,
    limit: u32,
    concurrency: u32,
    interfaces: &str,
    percentiles: &str,
) -> String {
    format!(
        r#"
kind = "agent"
name = "handover"
dataset = "agent-sample"
limit = {limit}
seed = 7
concurrency = {concurrency}
step_limit = 30
interfaces = {interfaces}
[handoff]
percentiles = {percentiles}
{}"#,
        agent_http_pair(url)
    )
}

/// One stored lint: episode, commit, score, validity, verdict, claims JSON, the
/// document (the episode's handoff call's reply) and the model that wrote it.
type LintRow = (i64, String, i64, bool, String, String, String, String);

fn lints(db: &Path) -> Vec<LintRow> {
    rows(
        db,
        "SELECT l.episode_id, l.commit_sha, l.score, l.valid, l.verdict, l.claims_json,
                c.response_text, c.model
         FROM agent_handover_lints l
         JOIN calls c ON c.episode_id = l.episode_id AND c.phase = 'handoff'
         ORDER BY l.episode_id",
    )
}

/// The requests the sim-server kept (`{route, body}`) whose last message asks for a
/// Handover document.
fn writing_requests(server: &SimServer) -> usize {
    let received = server.get("/received");
    let bodies = received.as_array().expect("a JSON array");
    assert!(
        bodies.len() < baton_http::RECEIVED_KEPT,
        "the server kept every request ({} of at most {})",
        bodies.len(),
        baton_http::RECEIVED_KEPT
    );
    bodies
        .iter()
        .filter(|b| {
            b["body"]["messages"]
                .as_array()
                .and_then(|m| m.last())
                .and_then(|m| m["content"].as_str())
                .is_some_and(|c| c.contains(baton_agent::HANDOVER_REQUEST_CUE))
        })
        .count()
}

/// The claims the simulated agent's document makes, as (label, check) pairs: the rows
/// of its claims table.
fn claims_of(document: &str) -> Vec<(String, String)> {
    document
        .lines()
        .filter(|l| l.starts_with("| ") && l.ends_with('|') && !l.starts_with("| Claim "))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            (cells[0].to_string(), cells[1].trim_matches('`').to_string())
        })
        .collect()
}

/// `| **total** | episodes | calls | $cost |` of a dry run: (calls, picodollars).
fn dry_run_total(text: &str) -> (i64, i64) {
    let line = text
        .lines()
        .find(|l| l.starts_with("| **total** |"))
        .unwrap_or_else(|| panic!("no total in {text}"));
    let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
    let usd: f64 = cells[3].trim_start_matches('$').parse().unwrap();
    (cells[2].parse().unwrap(), (usd * 1e12).round() as i64)
}

#[test]
fn issue_38_a_handover_episode_stores_its_documents_lint_and_the_report_relates_it() {
    if !sandbox_works() {
        return;
    }
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    write_experiment(
        dir.path(),
        &experiment(
            &server.base_url,
            6,
            2,
            r#"["compact_pre", "handover"]"#,
            "[10]",
        ),
    );
    let dry = baton_ok(dir.path(), &["run", "exp.toml", "--dry-run"]);
    let dry = stdout(&dry);
    assert!(
        dry.contains("| handoff(lc -> hc, p10, handover) | 6 | 186 | $"),
        "{dry}"
    );
    let (dry_calls, dry_paid) = dry_run_total(&dry);

    baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let db = dir.path().join("out/results.sqlite");

    // the dry run bounds what the run made and paid, the documents' calls included
    let made = billed(&db);
    let paid = count(
        &db,
        "SELECT (SELECT coalesce(sum(cost), 0) FROM calls) + (SELECT coalesce(sum(cost), 0) FROM attempts)",
    );
    assert!(made <= dry_calls, "{made} calls made, {dry_calls} bounded");
    assert!(paid <= dry_paid, "{paid} paid, {dry_paid} bounded");
    assert_eq!(server.stats()["ok_responses"], serde_json::json!(made));

    // every fired handover episode made one writing call, by the sender, and has one lint
    let fired = count(
        &db,
        "SELECT count(*) FROM episodes e JOIN agent_switches s ON s.episode_id = e.id
         WHERE e.cell_key LIKE '%, handover)' AND s.fired = 1",
    );
    assert!(fired >= 2, "{fired} handover episodes fired");
    let stored = lints(&db);
    assert_eq!(stored.len() as i64, fired);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
             WHERE c.phase = 'handoff' AND e.cell_key LIKE '%, handover)'"
        ),
        fired
    );
    let mut scores = Vec::new();
    for (episode, sha, score, valid, verdict, claims_json, document, writer) in &stored {
        // the document names the commit the tree was committed as at the switch
        assert_eq!(sha.len(), 40);
        assert!(
            document.contains(&format!("true_at_sha: {sha}\n")),
            "{document}"
        );
        let cell: String = rows::<(String,)>(
            &db,
            &format!("SELECT cell_key FROM episodes WHERE id = {episode}"),
        )[0]
        .0
        .clone();
        let sender = if cell.starts_with("handoff(lc") {
            "lc"
        } else {
            "hc"
        };
        assert_eq!(writer, sender, "{cell}");
        // the stored score and validity are the rubric's on the document
        let structure = Rubric::Baton.score(&Document::parse(document));
        assert_eq!(
            (*score, *valid),
            (i64::from(structure.score), structure.valid)
        );
        assert!(*valid, "{document}");
        // the sim's claims (each file it read exists) held at the commit and hold now
        let claims: Vec<Value> = serde_json::from_str(claims_json).unwrap();
        let expected = claims_of(document);
        assert!(!expected.is_empty(), "{document}");
        assert_eq!(claims.len(), expected.len(), "{claims_json}");
        for (c, (label, check)) in claims.iter().zip(&expected) {
            // the linter reads a claim's text without its code marks
            assert_eq!(c["label"], label.replace('`', "").as_str());
            assert_eq!(c["command"], check.as_str());
            assert_eq!(c["class"], "held-and-holds", "{claims_json}");
        }
        assert_eq!(verdict, "verified", "{claims_json}");
        scores.push(*score);

        // the suffix starts from the system message, the task and the document, as
        // compact_pre's does from its summary
        let calls = baton_store::Reader::open(&db)
            .unwrap()
            .calls(*episode)
            .unwrap();
        let first = calls
            .iter()
            .filter(|c| c.call.phase == baton_types::Phase::Suffix)
            .min_by_key(|c| c.call.turn);
        if let Some(c) = first {
            let request: Value = serde_json::from_str(&c.call.request_json).unwrap();
            let messages = request["messages"].as_array().unwrap();
            assert!(
                messages[2]["content"]
                    .as_str()
                    .unwrap()
                    .contains(document.trim()),
                "{request}"
            );
        }
    }

    // the report shows handover beside compact_pre and relates score to resolution
    let report = report_json(dir.path(), "out");
    let table1: Vec<&str> = report["table1"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["direction"] == "escalation")
        .map(|r| r["interface"].as_str().unwrap())
        .collect();
    assert_eq!(table1, ["compact_pre", "handover"]);
    let relation = &report["handover"];
    let episodes = relation["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), stored.len());
    let mut reported: Vec<i64> = episodes
        .iter()
        .map(|e| e["score"].as_i64().unwrap())
        .collect();
    reported.sort_unstable();
    scores.sort_unstable();
    assert_eq!(reported, scores);
    let resolved = episodes.iter().filter(|e| !e["resolved"].is_null()).count();
    assert_eq!(relation["n"], resolved);
    assert_eq!(relation["min_n"], 10);
    assert!(
        relation["method"]
            .as_str()
            .unwrap()
            .contains("Fisher's z with SE = sqrt(1.06/(n - 3))")
    );
    if resolved < 10 {
        assert!(relation["spearman"].is_null());
        assert!(
            relation["note"]
                .as_str()
                .unwrap()
                .starts_with("too few episodes"),
            "{relation}"
        );
    }
    let md = stdout(&baton_ok(dir.path(), &["report", "out"]));
    assert!(
        md.contains("## Handover documents: lint score against resolution"),
        "{md}"
    );
    assert!(md.contains("| lc/hc | escalation | compact_pre |"), "{md}");
    assert!(md.contains("| lc/hc | escalation | handover    |"), "{md}");
    let html = stdout(&baton_ok(
        dir.path(),
        &["report", "out", "--format", "html"],
    ));
    assert!(html.contains("Handover documents, per episode"));
}

/// Killed after a document was paid for and before (or while) it was linted, the run
/// resumes without sending the writing request again: the server sees one per episode.
#[test]
fn issue_38_a_resumed_run_does_not_pay_for_a_document_twice() {
    if !sandbox_works() {
        return;
    }
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    // one episode at a time: when a document is stored and its lint is not, no writing
    // request is in flight
    write_experiment(
        dir.path(),
        &experiment(&server.base_url, 6, 1, r#"["handover"]"#, "[10]"),
    );
    let db = dir.path().join("out/results.sqlite");
    let unlinted = "SELECT count(*) FROM calls c WHERE c.phase = 'handoff'
        AND NOT EXISTS (SELECT 1 FROM agent_handover_lints l WHERE l.episode_id = c.episode_id)";
    let mut child = spawn_quiet(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let started = Instant::now();
    let caught = loop {
        if poll_count(&db, unlinted) > 0 {
            break child.try_wait().unwrap().is_none();
        }
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        assert!(started.elapsed() < Duration::from_secs(300), "run too slow");
        std::thread::sleep(Duration::from_millis(2));
    };
    assert!(
        caught,
        "the run was not caught between a document and its lint"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert_eq!(poll_count(&db, unlinted), 1, "a document without its lint");
    let before = writing_requests(&server);
    let folder = dir.path().join("out");
    let freed = Instant::now();
    while std::fs::File::open(&folder).unwrap().try_lock().is_err() {
        assert!(
            freed.elapsed() < Duration::from_secs(10),
            "the lock stays held"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "out", "--resume", "--quiet"],
    );
    let stored = lints(&db);
    let fired = count(&db, "SELECT count(*) FROM agent_switches WHERE fired = 1");
    assert!(fired >= 2, "{fired} fired");
    assert_eq!(stored.len() as i64, fired);
    assert_eq!(poll_count(&db, unlinted), 0);
    // one writing request per episode at the server, none re-sent by the resume
    let after = writing_requests(&server);
    assert_eq!(after as i64, fired, "{before} before the resume");
    assert_eq!(
        count(&db, "SELECT count(*) FROM calls WHERE phase = 'handoff'"),
        fired
    );
    // the document linted after the resume names the commit it was linted at: the
    // resumed run committed the same tree to the same id
    for (_, sha, _, valid, verdict, _, document, _) in &stored {
        assert!(
            document.contains(&format!("true_at_sha: {sha}\n")),
            "{document}"
        );
        assert!(*valid && verdict == "verified", "{verdict}");
    }
    let by_status: BTreeMap<String, i64> =
        rows::<(String, i64)>(&db, "SELECT status, count(*) FROM episodes GROUP BY status")
            .into_iter()
            .collect();
    assert_eq!(by_status.get("incomplete"), None, "{by_status:?}");
}

#[test]
fn issue_38_a_chat_experiment_refuses_the_handover_interface_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    write_experiment(
        dir.path(),
        &format!(
            "name = \"chat\"\ndataset = \"sample\"\nfamilies = [\"math\"]\nlimit = 1\ninterfaces = [\"raw\", \"handover\"]\n{}",
            crate::support::sim_pair!()
        ),
    );
    let out = baton(dir.path(), &["run", "exp.toml", "--out", "out"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("exp.toml") && err.contains("interfaces") && err.contains("handover"),
        "{err}"
    );
    assert!(err.contains("agent study"), "{err}");
    assert!(!dir.path().join("out/results.sqlite").exists());
}

/// Against a server that answers 40 % of requests with an empty (billed, unusable) reply,
/// a document's unusable attempts are billed to its episode as a summary's are (phase
/// `handoff`), retried up to the model's limit, and the cells add up to what the run paid.
#[test]
fn issue_38_a_documents_unusable_attempts_are_billed_to_its_episode() {
    if !sandbox_works() {
        return;
    }
    let server = SimServer::start(&["--fault-rate", "0.4", "--faults", "empty", "--seed", "5"]);
    let dir = tempfile::tempdir().unwrap();
    write_experiment(
        dir.path(),
        &experiment(&server.base_url, 12, 2, r#"["handover"]"#, "[10]"),
    );
    let out = baton(dir.path(), &["run", "exp.toml", "--out", "out"]);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&out)
    );
    let db = dir.path().join("out/results.sqlite");
    let unusable = count(
        &db,
        "SELECT count(*) FROM attempts a JOIN episodes e ON e.id = a.episode_id
         WHERE a.phase = 'handoff' AND e.cell_key LIKE '%, handover)'",
    );
    // the faults are a function of each request, whose date changes daily: some 16
    // documents are asked for, and all of them answered at once has chance 0.6^16
    assert!(unusable > 0, "no unusable writing attempt");
    let said = stdout(&out);
    assert!(
        said.lines().any(|l| l.contains(", handover): ")
            && l.contains(" document repl")
            && l.ends_with("made a tool call or had no text (paid, stored, retried)")),
        "{said}"
    );
    assert_eq!(
        server.stats()["ok_responses"],
        serde_json::json!(billed(&db))
    );
    let paid = count(
        &db,
        "SELECT (SELECT coalesce(sum(cost), 0) FROM calls) + (SELECT coalesce(sum(cost), 0) FROM attempts)",
    );
    let cells = count(&db, "SELECT coalesce(sum(cost_paid), 0) FROM episodes");
    assert_eq!(cells, paid, "{unusable} unusable writing attempts");
    // every document that came is linted once; one that never came ended the episode
    let documents = count(
        &db,
        "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
         WHERE c.phase = 'handoff' AND e.cell_key LIKE '%, handover)'",
    );
    assert_eq!(lints(&db).len() as i64, documents);
    let report = report_json(dir.path(), "out");
    assert_eq!(report["audit"]["reconciled"], true);
}
