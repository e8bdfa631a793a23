//! Runtime failures explained at the end of a run: a model that cannot answer stops
//! early, and the run's last lines say why and what to do.

use std::time::{Duration, Instant};

use crate::support::SimServer;
use crate::{baton, stderr};

/// See: issue 35, "Done when": a run against a server that answers 404 for one model
/// ends within 10 s, with at most 3 requests to that model (the calls already in
/// flight), and its last lines name the model, URL, status and the server's message.
#[test]
fn issue_35_a_model_the_server_does_not_serve_stops_after_its_first_requests() {
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let base = &server.base_url;
    std::fs::write(
        dir.path().join("exp.toml"),
        format!(
            r#"
name = "diagnosis"
dataset = "sample"
families = ["math", "actions"]
limit = 3
replicates = 2
seed = 1
concurrency = 3
[chat]
switch_points = ["early", "middle"]
directions = ["escalation", "downshift"]
[models.lc]
model = "openai-compatible/lc"
base_url = "{base}"
price = "sim/lc"
[models.mid]
model = "openai-compatible/mid"
base_url = "{base}"
price = "sim/hc"
[[pairs]]
low = "lc"
high = "mid"
"#
        ),
    )
    .unwrap();
    let started = Instant::now();
    let o = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let took = started.elapsed();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(took < Duration::from_secs(10), "took {took:?}");

    // the server refused `mid` with a 404 at most 3 times: the calls in flight when the
    // first answer came back; every other call of it was never sent
    let stats = server.stats();
    let refused = stats["refused"].as_u64().unwrap();
    assert!((1..=3).contains(&refused), "{stats}");

    let last = err.lines().last().unwrap();
    let url = format!("{base}/chat/completions");
    for part in [
        "stopped: model \"mid\"",
        url.as_str(),
        "HTTP 404",
        "The model `mid` does not exist",
        "check the model id",
    ] {
        assert!(last.contains(part), "{part:?} in the last line: {last}");
    }
    // the unfinished episodes are listed by cause, each with what to do
    let causes: Vec<&str> = err
        .lines()
        .skip_while(|l| !l.starts_with("unfinished episodes by cause"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert!(!causes.is_empty(), "{err}");
    assert!(
        causes.iter().all(
            |c| (c.contains("model \"mid\"") || c.contains("single(mid)"))
                && c.ends_with("see the model's line below")
        ),
        "{causes:?}"
    );
    let listed: usize = causes
        .iter()
        .map(|c| {
            c.split_whitespace()
                .next()
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    let incomplete: usize = rusqlite::Connection::open(dir.path().join("out/results.sqlite"))
        .unwrap()
        .query_row(
            "SELECT count(*) FROM episodes WHERE status = 'incomplete'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(listed, incomplete, "{causes:?}");
    // the other model's episodes all finished
    assert!(!err.contains("model \"lc\""), "nothing stopped lc: {err}");
}

/// See: issue 35, item 6: a preset dry-run without LiC's downloaded file exits 2 before
/// anything else and says where the file comes from.
#[test]
fn issue_35_a_missing_lic_file_points_to_where_it_comes_from() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let exp = examples.join("handoff-tax-chat.toml");
    let dir = tempfile::tempdir().unwrap();
    // the example names ../datasets/lic/sharded_instructions_600.json beside it: copy the
    // file where that path leads nowhere
    let copy = dir.path().join("examples").join("exp.toml");
    std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
    std::fs::copy(&exp, &copy).unwrap();
    let o = baton(dir.path(), &["run", "examples/exp.toml", "--dry-run"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("sharded_instructions_600.json")
            && err.contains("datasets/README.md")
            && err.contains("dataset = \"sample\""),
        "{err}"
    );
}

/// The same in the agent study: a coding agent whose model the server does not serve
/// stops after the calls already in flight, the other model's episodes still run, and the
/// run's last line names the model, URL, status and message.
#[test]
fn issue_35_an_agent_model_the_server_does_not_serve_stops_after_its_first_requests() {
    if !crate::env::sandbox_works() {
        return;
    }
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let base = &server.base_url;
    std::fs::write(
        dir.path().join("exp.toml"),
        format!(
            r#"
kind = "agent"
name = "agent-diagnosis"
dataset = "agent-sample"
limit = 4
step_limit = 30
concurrency = 2
[models.lc]
model = "openai-compatible/agent-lc"
price = "sim/lc"
base_url = "{base}"
[models.nope]
model = "openai-compatible/agent-nope"
price = "sim/hc"
base_url = "{base}"
"#
        ),
    )
    .unwrap();
    let started = Instant::now();
    let o = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let took = started.elapsed();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");

    // at most the calls in flight when the first 404 came back reached the server
    let stats = server.stats();
    let refused = stats["refused"].as_u64().unwrap();
    assert!((1..=2).contains(&refused), "{stats}\n{err}");
    let last = err.lines().last().unwrap();
    let url = format!("{base}/chat/completions");
    for part in [
        "stopped: model \"nope\"",
        url.as_str(),
        "HTTP 404",
        "The model `agent-nope` does not exist",
        "check the model id",
    ] {
        assert!(last.contains(part), "{part:?} in the last line: {last}");
    }
    // the served model's four episodes ran to their end; none of the stopped model's did
    let db = dir.path().join("out/results.sqlite");
    let c = rusqlite::Connection::open(&db).unwrap();
    let outcomes: Vec<(String, String, String)> = crate::support::query(
        &c,
        "SELECT e.cell_key, e.status, coalesce(o.exit, '') FROM episodes e \
         LEFT JOIN agent_outcomes o ON o.episode_id = e.id ORDER BY e.cell_key, e.task_id",
        [],
    );
    let lc = (
        "single(lc)".to_owned(),
        "scored".to_owned(),
        "submitted".to_owned(),
    );
    let nope = (
        "single(nope)".to_owned(),
        "incomplete".to_owned(),
        String::new(),
    );
    assert_eq!(outcomes, [vec![lc; 4], vec![nope; 4]].concat(), "{err}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
}
