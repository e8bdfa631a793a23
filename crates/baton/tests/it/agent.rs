//! Agent experiments through the binary: `baton run` on the bundled agent sample with
//! two simulated agents in the real sandbox, killed with SIGKILL mid-run several times
//! and resumed, its report, its dry run without keys.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use crate::env::sandbox_works;
use crate::support::{
    SimServer, agent_http_pair, baton_ok, poll_count, query, spawn_quiet, write_experiment,
};
use crate::{baton, stderr, stdout};

const EXPERIMENT: &str = r#"
kind = "agent"
name = "agent-resume"
dataset = "agent-sample"
limit = 6
seed = 11
concurrency = 2
step_limit = 30
[models.lc]
model = "sim/lc"
[models.lc.sim]
skill = 0.45
malformed = 0.05
latency_ms = 40
[models.hc]
model = "sim/hc"
[models.hc.sim]
skill = 0.85
latency_ms = 40
"#;

/// Each episode's steps' running snapshot-byte counts, in step order.
fn snapshot_counts(db: &Path) -> BTreeMap<i64, Vec<Option<i64>>> {
    let c = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut s = c
        .prepare(
            "SELECT episode_id, snapshot_bytes FROM agent_steps
             ORDER BY episode_id, call_index, action_index",
        )
        .unwrap();
    let mut out: BTreeMap<i64, Vec<Option<i64>>> = BTreeMap::new();
    for row in s.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap() {
        let (episode, bytes) = row.unwrap();
        out.entry(episode).or_default().push(bytes);
    }
    out
}

/// Per episode (task, model): its exit, calls, resolved, and every command with its
/// return code, in order.
type EpisodeSummary = (
    Option<String>,
    Option<i64>,
    Option<i64>,
    String,
    Vec<(i64, i64, String, Option<i64>)>,
);

fn results(db: &Path) -> BTreeMap<(String, String), EpisodeSummary> {
    let c = Connection::open(db).unwrap();
    let mut out = BTreeMap::new();
    let mut s = c
        .prepare(
            "SELECT e.id, e.task_id, e.cell_key, o.exit, o.calls, e.is_correct, e.status
             FROM episodes e LEFT JOIN agent_outcomes o ON o.episode_id = e.id",
        )
        .unwrap();
    let rows: Vec<(i64, String, String, EpisodeSummary)> = s
        .query_map([], |r| {
            let summary = (r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?, Vec::new());
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, summary))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (id, task, cell, mut summary) in rows {
        summary.4 = query(
            &c,
            "SELECT call_index, action_index, command, return_code FROM agent_steps
             WHERE episode_id = ?1 ORDER BY call_index, action_index",
            [id],
        );
        out.insert((task, cell), summary);
    }
    out
}

#[test]
fn an_agent_run_killed_with_sigkill_resumes_without_repeating_a_stored_step() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), EXPERIMENT);

    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "clean", "--quiet"],
    );
    let clean_db = dir.path().join("clean/results.sqlite");
    let total = poll_count(&clean_db, "SELECT count(*) FROM agent_steps");
    assert!(total > 60, "enough steps to interrupt: {total}");

    let killed_db = dir.path().join("killed/results.sqlite");
    let mut kills = 0;
    for stop_at in [total / 6, total / 3, total / 2, 3 * total / 4] {
        let mut child = spawn_quiet(
            dir.path(),
            &["run", "exp.toml", "--out", "killed", "--quiet"],
        );
        let started = Instant::now();
        while poll_count(&killed_db, "SELECT count(*) FROM agent_steps") < stop_at {
            assert!(started.elapsed() < Duration::from_secs(300), "run too slow");
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL: no chance to clean up
            kills += 1;
        }
        child.wait().unwrap();
    }
    assert!(kills >= 3, "killed mid-run {kills} times");
    let stored = poll_count(&killed_db, "SELECT count(*) FROM agent_steps");
    assert!(
        stored < total,
        "the last kill left work: {stored} of {total}"
    );

    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "killed", "--resume", "--quiet"],
    );

    // the same results as the uninterrupted run: exits, calls, verdicts, and every
    // command with its return code, in order (so no stored step ran again)
    assert_eq!(results(&killed_db), results(&clean_db));
    // each episode's snapshot count (what its cap is checked against) goes on from where
    // the killed run left it: it never falls back, and no step lacks one
    let counts = snapshot_counts(&killed_db);
    assert!(counts.values().flatten().all(Option::is_some), "{counts:?}");
    for (episode, seq) in &counts {
        assert!(
            seq.windows(2).all(|w| w[0] <= w[1]),
            "episode {episode}: {seq:?}"
        );
    }
    assert!(
        counts
            .values()
            .any(|seq| seq.last().copied().flatten() > Some(0))
    );
    for db in [&killed_db, &clean_db] {
        // every call stored once; every billed attempt is a call or an attempt row
        assert_eq!(
            poll_count(db, "SELECT count(*) FROM calls"),
            poll_count(
                db,
                "SELECT count(*) FROM (SELECT DISTINCT episode_id, turn FROM calls)"
            )
        );
        assert_eq!(
            poll_count(db, "SELECT count(*) FROM calls"),
            poll_count(db, "SELECT count(*) FROM agent_calls")
        );
        assert_eq!(
            poll_count(db, "SELECT count(*) FROM calls"),
            poll_count(db, "SELECT coalesce(sum(calls), 0) FROM agent_outcomes")
        );
        // the paid total is the sum of the distinct stored attempts
        assert_eq!(
            poll_count(db, "SELECT sum(cost_paid) FROM episodes"),
            poll_count(
                db,
                "SELECT (SELECT coalesce(sum(cost), 0) FROM calls) + (SELECT coalesce(sum(cost), 0) FROM attempts)"
            )
        );
        assert_eq!(
            poll_count(db, "SELECT count(*) FROM episodes WHERE status != 'scored'"),
            0
        );
    }

    // the report shows each model's termination-step distribution per bucket
    let report = baton_ok(dir.path(), &["report", "killed"]);
    // the tables are padded to line up: compare with single spaces
    let md = stdout(&report)
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        md.contains("| model | bucket | n | p5 | p10 | p15 | p25 | p35 | p45 | p50 |"),
        "{md}"
    );
    for model in ["lc", "hc"] {
        for bucket in ["easy", "medium", "hard", "all"] {
            assert!(
                md.contains(&format!("| {model} | {bucket} |")),
                "{model} {bucket}:\n{md}"
            );
        }
    }
    let json = baton(dir.path(), &["report", "killed", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["kind"], "agent");
    assert_eq!(
        v["termination_percentiles"],
        serde_json::json!([5, 10, 15, 25, 35, 45, 50])
    );
    let rows = v["rows"].as_array().unwrap();
    assert!(
        rows.iter()
            .all(|r| r["termination"].as_array().unwrap().len() == 7)
    );
}

#[test]
fn an_agent_dry_run_needs_no_keys_and_makes_no_call() {
    let dir = tempfile::tempdir().unwrap();
    let exp = r#"
kind = "agent"
name = "dry"
dataset = "agent-sample"
[models.a]
model = "openai/gpt-4o-mini"
api_key_env = "BATON_TEST_KEY_THAT_IS_NOT_SET"
[models.b]
model = "sim/hc"
"#;
    write_experiment(dir.path(), exp);
    let out = baton_ok(dir.path(), &["run", "exp.toml", "--dry-run"]);
    let text = stdout(&out);
    assert!(text.contains("12 tasks from agent-sample"), "{text}");
    assert!(text.contains("| single(a) | 12 | 1800 | $"), "{text}");
    assert!(text.contains("No call was made"), "{text}");
    assert!(!dir.path().join("results").exists());

    let bad = exp.replace(
        "model = \"sim/hc\"",
        "model = \"sim/hc\"\n[models.b.sim]\nskil = 1",
    );
    std::fs::write(dir.path().join("bad.toml"), bad).unwrap();
    let out = baton(dir.path(), &["run", "bad.toml", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("bad.toml") && err.contains("models.b.sim") && err.contains("skil"),
        "{err}"
    );
}

/// The agent dry run lists every cell it will run, the handoff cells too (97 % of the
/// example's episodes), each bounded before the anchors fix its switch call.
// See: issue 31
#[test]
fn issue_31_the_agent_dry_run_lists_every_handoff_cell_with_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/agent-handoff-sim.toml"
    );
    let out = baton_ok(dir.path(), &["run", example, "--dry-run"]);
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("| ")).collect();
    let handoffs: Vec<&&str> = rows
        .iter()
        .filter(|r| r.starts_with("| handoff("))
        .collect();
    // 2 directions x 7 percentiles x 6 interfaces, 12 tasks each
    assert_eq!(handoffs.len(), 84, "{text}");
    assert!(
        text.contains("| handoff(lc -> hc, p25, compact_pre) | 12 | 492 | $"),
        "{text}"
    );
    assert!(text.contains("| single(lc) | 12 | 480 | $"), "{text}");
    // handover's document is one call of the sender's, as compact_pre's summary
    assert!(
        text.contains("| handoff(lc -> hc, p25, handover) | 12 | 492 | $"),
        "{text}"
    );
    assert!(text.contains("| **total** | 1032 |"), "{text}");
    assert!(
        !dir.path().join("results").exists(),
        "a dry run writes nothing"
    );
}

#[test]
fn sim_server_serves_the_simulated_agents_over_http() {
    if !sandbox_works() {
        return;
    }
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let url = &server.base_url;
    let exp = format!(
        r#"
kind = "agent"
name = "http"
dataset = "agent-sample"
limit = 2
step_limit = 30
[models.hc]
model = "openai-compatible/agent-hc"
price = "sim/hc"
base_url = "{url}"
"#
    );
    write_experiment(dir.path(), &exp);
    baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let db = dir.path().join("out/results.sqlite");
    let calls = poll_count(&db, "SELECT count(*) FROM calls");
    assert!(calls >= 6, "{calls} calls");
    assert_eq!(server.stats()["ok_responses"], serde_json::json!(calls));
    assert_eq!(
        poll_count(
            &db,
            "SELECT count(*) FROM agent_outcomes WHERE exit = 'submitted'"
        ),
        2
    );
    // served by the simulated agent, so the report says simulated
    let report = stdout(&baton(dir.path(), &["report", "out"]));
    assert!(report.contains("Simulated models"), "{report}");
}

/// Against a server that answers 40 % of requests with an empty (billed, unusable)
/// reply, an agent study's cells add up to what the run paid: every billed attempt is
/// some episode's cost.
// See: issue 31
#[test]
fn issue_31_an_agent_studys_cells_add_up_to_the_runs_paid_total() {
    if !sandbox_works() {
        return;
    }
    let server = SimServer::start(&["--fault-rate", "0.4", "--faults", "empty", "--seed", "5"]);
    let dir = tempfile::tempdir().unwrap();
    let url = &server.base_url;
    let exp = format!(
        r#"
kind = "agent"
name = "faulty"
dataset = "agent-sample"
limit = 2
step_limit = 30
interfaces = ["raw", "compact_pre"]
[handoff]
percentiles = [50]
{}"#,
        agent_http_pair(url)
    );
    write_experiment(dir.path(), &exp);
    let out = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&out)
    );
    let db = dir.path().join("out/results.sqlite");
    let attempts = poll_count(&db, "SELECT count(*) FROM attempts");
    assert!(attempts > 0, "the empty replies were billed");
    let paid = poll_count(&db, "SELECT coalesce(sum(cost), 0) FROM calls")
        + poll_count(&db, "SELECT coalesce(sum(cost), 0) FROM attempts");
    let cells = poll_count(&db, "SELECT coalesce(sum(cost_paid), 0) FROM episodes");
    assert_eq!(cells, paid, "{attempts} unusable attempts");
}

/// An agent pilot grows on its folder: two tasks grown to three send requests for the
/// new task's episodes only (counted at a real `baton sim-server`), an unchanged resume
/// sends none, and one changed model setting is refused before any call, naming the key
/// and the stored episodes of that model.
// See: issue 31
#[test]
fn issue_31_an_agent_pilot_grows_on_its_folder_and_pays_only_for_new_episodes() {
    if !sandbox_works() {
        return;
    }
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let url = &server.base_url;
    let experiment = |limit: usize, extra: &str| {
        format!(
            r#"
kind = "agent"
name = "grow"
dataset = "agent-sample"
limit = {limit}
seed = 3
[agent]
step_limit = 30
[models.hc]
model = "openai-compatible/agent-hc"
price = "sim/hc"
base_url = "{url}"
{extra}
"#
        )
    };
    let requests = || server.stats()["requests"].as_u64().unwrap() as i64;
    let db = dir.path().join("out/results.sqlite");
    std::fs::write(dir.path().join("exp.toml"), experiment(2, "")).unwrap();
    let run = || baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let pilot = run();
    assert!(pilot.status.success(), "{}", stderr(&pilot));
    let pilot_calls = poll_count(&db, "SELECT count(*) FROM calls");
    assert_eq!(requests(), pilot_calls);

    // grown to three tasks: the pilot's two episodes are reused, the third runs
    std::fs::write(dir.path().join("exp.toml"), experiment(3, "")).unwrap();
    let grown = run();
    assert!(grown.status.success(), "{}", stderr(&grown));
    let text = stdout(&grown);
    assert!(text.contains("limit: 2 → 3"), "{text}");
    assert!(
        text.contains("episodes: 2 reused, 0 resumed, 1 new, 0 re-run"),
        "{text}"
    );
    let all_calls = poll_count(&db, "SELECT count(*) FROM calls");
    let new_calls = poll_count(
        &db,
        "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
         WHERE e.task_id NOT IN (SELECT task_id FROM episodes ORDER BY id LIMIT 2)",
    );
    assert!(new_calls > 0);
    assert_eq!(all_calls, pilot_calls + new_calls);
    assert_eq!(requests(), all_calls, "only the new task's calls were sent");
    assert_eq!(poll_count(&db, "SELECT count(*) FROM episodes"), 3);

    // unchanged: nothing is sent
    let again = run();
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("the experiment is unchanged since it was stored"),
        "{}",
        stdout(&again)
    );
    assert_eq!(requests(), all_calls);

    // one model setting changed: refused before any call, the key and the episodes named
    std::fs::write(
        dir.path().join("exp.toml"),
        experiment(3, "temperature = 0.5"),
    )
    .unwrap();
    let changed = run();
    assert_eq!(changed.status.code(), Some(2), "{}", stdout(&changed));
    let err = stderr(&changed);
    assert!(err.contains("models.hc.temperature: (none) → 0.5"), "{err}");
    assert!(
        err.contains("3 stored episode(s) of model \"hc\" would be sent again"),
        "{err}"
    );
    assert!(err.contains("nothing was sent"), "{err}");
    assert_eq!(requests(), all_calls);
    assert_eq!(poll_count(&db, "SELECT count(*) FROM episodes"), 3);
}
