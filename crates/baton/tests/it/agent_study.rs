//! The agent handoff study through the binary: simulated agents on the bundled agent
//! sample in the real sandbox, forked and independent prefixes, every interface, the
//! switch calls, the cost audit and the study's report in Markdown, JSON and HTML.

use std::path::Path;

use rusqlite::Connection;

use crate::env::sandbox_works;
use crate::support::{baton_ok, count, poll_count, query, spawn_quiet, write_experiment};
use crate::{baton, stderr, stdout};

const EXPERIMENT: &str = r#"
kind = "agent"
name = "agent-study"
dataset = "agent-sample"
limit = 4
seed = 5
concurrency = 2
step_limit = 30
[models.lc]
model = "sim/lc"
[models.lc.sim]
skill = 0.45
malformed = 0.05
[models.hc]
model = "sim/hc"
[handoff]
pairs = [["lc", "hc"]]
percentiles = [10, 50]
"#;

#[test]
fn a_forked_study_pays_no_prefix_twice_and_reports_every_cell_with_the_audit() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), EXPERIMENT);
    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "forked", "--quiet"],
    );
    let db = dir.path().join("forked/results.sqlite");

    // 4 tasks x (2 anchors + 2 directions x 2 percentiles x 5 interfaces)
    assert_eq!(count(&db, "SELECT count(*) FROM episodes"), 4 * (2 + 20));
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM episodes WHERE status = 'incomplete'"
        ),
        0
    );
    // switch calls per (direction, bucket, p), fixed before any handoff ran
    let buckets = count(&db, "SELECT count(DISTINCT difficulty) FROM agent_tasks");
    assert_eq!(
        count(&db, "SELECT count(*) FROM agent_thresholds"),
        2 * buckets * 2
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM agent_thresholds WHERE s < 1"),
        0
    );
    assert_eq!(
        count(&db, "SELECT count(*) FROM agent_switches"),
        4 * 20,
        "every handoff episode has its switch"
    );
    // forking: no handoff episode has a prefix call of its own; each names its anchor
    // and its switch call
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
             WHERE e.cell_key LIKE 'handoff%' AND c.phase = 'prefix'"
        ),
        0
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM episodes WHERE cell_key LIKE 'handoff%'
             AND (forked_from IS NULL OR k IS NULL)"
        ),
        0
    );
    let fired = count(&db, "SELECT count(*) FROM agent_switches WHERE fired = 1");
    assert!(fired > 0, "some handoffs fired");
    // the suffix is the receiver's; its first call is call s
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
             WHERE c.phase = 'suffix' AND c.turn < e.k"
        ),
        0
    );
    // compaction makes exactly one handoff call per fired episode; nothing else does
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
             JOIN agent_switches s ON s.episode_id = e.id
             WHERE c.phase = 'handoff' AND (e.cell_key NOT LIKE '%compact_%' OR s.fired = 0)"
        ),
        0
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM episodes e JOIN agent_switches s ON s.episode_id = e.id
             WHERE e.cell_key LIKE '%compact_%' AND s.fired = 1"
        ),
        count(&db, "SELECT count(*) FROM calls WHERE phase = 'handoff'")
    );
    // traj_drop keeps the removed trajectory as an audit record; the texts are stored
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM episodes e JOIN agent_switches s ON s.episode_id = e.id
             WHERE e.cell_key LIKE '%traj_drop%' AND s.fired = 1
             AND (s.prefix_context IS NULL OR s.context IS NULL OR s.context = s.prefix_context)"
        ),
        0
    );
    assert_eq!(count(&db, "SELECT count(*) FROM agent_texts"), 1);

    // a resume of a finished study makes no call
    let calls = count(&db, "SELECT count(*) FROM calls");
    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "forked", "--resume", "--quiet"],
    );
    assert_eq!(count(&db, "SELECT count(*) FROM calls"), calls);

    // the report: switch calls, every cell with fired counts, Table 1, restart controls,
    // and the audit, in all three formats
    let md = baton_ok(dir.path(), &["report", "forked"]);
    let md = stdout(&md);
    for part in [
        "## Handoff switch calls",
        "## Table 1",
        "## Restart controls",
        "abort+hc_fresh",
        "lc_full+hc_full",
        "## Step-cost decomposition",
        "Cost audit: prefix + handoff + suffix reconcile",
    ] {
        assert!(md.contains(part), "{part}:\n{md}");
    }
    let json = baton_ok(dir.path(), &["report", "forked", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["audit"]["reconciled"], true);
    assert_eq!(v["audit"]["max_abs_diff_usd"], 0.0);
    assert_eq!(v["audit"]["tasks"], 4 * 22);
    let t = &v["thresholds"].as_array().unwrap()[0];
    for key in ["pair", "direction", "bucket", "p", "s"] {
        assert!(t.get(key).is_some(), "{key} in {t}");
    }
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2 * 2 * 5);
    let n_fired: i64 = cells.iter().map(|c| c["n_fired"].as_i64().unwrap()).sum();
    assert_eq!(n_fired, fired);
    assert!(cells.iter().all(|c| c["p"].is_u64() && c["n"] == 4));
    assert_eq!(v["table1"].as_array().unwrap().len(), 2 * 5);
    assert_eq!(v["restart_controls"].as_array().unwrap().len(), 2);
    // --bootstrap N sets the study's draws (default 10,000; 0: no interval)
    let replicates = |v: &serde_json::Value| -> Vec<u64> {
        v["intervals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["replicates"].as_u64().unwrap())
            .collect()
    };
    // (a draw counts when it leaves both the interface and compact_pre a matched unit)
    assert!(
        replicates(&v).iter().all(|&n| n > 5_000 && n <= 10_000),
        "{v}"
    );
    let report_with = |n: &str| -> serde_json::Value {
        let out = baton_ok(
            dir.path(),
            &["report", "forked", "--format", "json", "--bootstrap", n],
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let few = report_with("50");
    assert!(!replicates(&few).is_empty());
    assert!(replicates(&few).iter().all(|&n| n > 0 && n <= 50), "{few}");
    assert_ne!(few["intervals"], v["intervals"]);
    assert!(few["table1"][0]["pass_rate_ci"].is_array(), "{few}");
    let none = report_with("0");
    assert_eq!(none["intervals"], serde_json::json!([]));
    assert!(none["table1"][0]["pass_rate_ci"].is_null());
    let html = baton(dir.path(), &["report", "forked", "--format", "html"]);
    let html = stdout(&html);
    assert!(
        html.contains("<h2>Table 1") && html.ends_with("</body>\n</html>\n"),
        "{html}"
    );
    assert_eq!(html.matches("<body>").count(), 1, "one page: {html}");
    for plot in [
        "Pass rate by switch percentile: lc/hc, escalation",
        "Cost and quality: lc/hc, downshift",
    ] {
        assert!(html.contains(plot), "{plot}");
    }

    // independent prefixes are run live: the handoff episodes pay for their own prefix
    baton_ok(
        dir.path(),
        &[
            "run",
            "exp.toml",
            "--out",
            "independent",
            "--independent",
            "--quiet",
        ],
    );
    let db = dir.path().join("independent/results.sqlite");
    assert!(
        count(
            &db,
            "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
             WHERE e.cell_key LIKE 'handoff%independent)' AND c.phase = 'prefix'"
        ) > 0
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM episodes WHERE forked_from IS NOT NULL"
        ),
        0
    );
    let json = baton_ok(dir.path(), &["report", "independent", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["audit"]["reconciled"], true);
}

#[test]
fn a_tampered_cost_fails_the_audit_before_any_table() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("exp.toml"),
        EXPERIMENT.replace("limit = 4", "limit = 2").replace(
            "percentiles = [10, 50]",
            "percentiles = [50]\ninterfaces = [\"raw\"]",
        ),
    )
    .unwrap();
    baton_ok(dir.path(), &["run", "exp.toml", "--out", "r", "--quiet"]);
    let db = dir.path().join("r/results.sqlite");
    Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE episodes SET cost_attributed = cost_attributed + 1
             WHERE id = (SELECT max(id) FROM episodes WHERE cell_key LIKE 'handoff%')",
            [],
        )
        .unwrap();
    let report = baton(dir.path(), &["report", "r"]);
    assert!(!report.status.success());
    assert!(stdout(&report).is_empty(), "{}", stdout(&report));
    assert!(
        stderr(&report).contains("the cost audit failed"),
        "{}",
        stderr(&report)
    );
}

/// Per episode (task, cell): exit, calls, verdict, and every stored call (turn, phase,
/// model) and command (call, command, return code), in order.
type Summary = (
    Option<String>,
    Option<i64>,
    Option<i64>,
    Vec<(i64, String, String)>,
    Vec<(i64, String, Option<i64>)>,
);

fn results(db: &Path) -> std::collections::BTreeMap<(String, String), Summary> {
    let c = Connection::open(db).unwrap();
    let mut out = std::collections::BTreeMap::new();
    type Row = (
        i64,
        String,
        String,
        Option<String>,
        Option<i64>,
        Option<i64>,
    );
    let rows: Vec<Row> = query(
        &c,
        "SELECT e.id, e.task_id, e.cell_key, o.exit, o.calls, e.is_correct
         FROM episodes e LEFT JOIN agent_outcomes o ON o.episode_id = e.id",
        [],
    );
    for (id, task, cell, exit, calls, correct) in rows {
        let calls_of = query(
            &c,
            "SELECT turn, phase, model FROM calls WHERE episode_id = ?1 ORDER BY id",
            [id],
        );
        let steps = query(
            &c,
            "SELECT call_index, command, return_code FROM agent_steps
             WHERE episode_id = ?1 ORDER BY call_index, action_index",
            [id],
        );
        out.insert((task, cell), (exit, calls, correct, calls_of, steps));
    }
    out
}

#[test]
fn a_study_killed_in_its_handoffs_resumes_to_the_same_results_without_repaying() {
    if !sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = EXPERIMENT
        .replace("limit = 4", "limit = 6")
        .replace("percentiles = [10, 50]", "percentiles = [5]");
    write_experiment(dir.path(), &text);
    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "clean", "--quiet"],
    );
    let clean_db = dir.path().join("clean/results.sqlite");
    let total = count(
        &clean_db,
        "SELECT count(*) FROM calls WHERE phase != 'prefix'",
    );
    assert!(total > 20, "enough handoff calls to interrupt: {total}");

    let killed_db = dir.path().join("killed/results.sqlite");
    let mut kills = 0;
    for stop_at in [total / 5, total / 2, 4 * total / 5] {
        let mut child = spawn_quiet(
            dir.path(),
            &["run", "exp.toml", "--out", "killed", "--quiet"],
        );
        let started = std::time::Instant::now();
        loop {
            let done = poll_count(
                &killed_db,
                "SELECT count(*) FROM calls WHERE phase != 'prefix'",
            );
            if done >= stop_at || child.try_wait().unwrap().is_some() {
                break;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(300),
                "run too slow"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap(); // SIGKILL
            kills += 1;
        }
        child.wait().unwrap();
    }
    assert!(kills >= 2, "killed in the handoffs {kills} times");
    // A killed run can live on for a moment in a child it was starting (the lock's
    // descriptors close at that child's exec); on a loaded machine, wait for it.
    let folder = dir.path().join("killed");
    let freed = std::time::Instant::now();
    while std::fs::File::open(&folder).unwrap().try_lock().is_err() {
        assert!(
            freed.elapsed() < std::time::Duration::from_secs(10),
            "the lock stays held"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    baton_ok(
        dir.path(),
        &["run", "exp.toml", "--out", "killed", "--resume", "--quiet"],
    );
    assert_eq!(results(&killed_db), results(&clean_db));
    // every call stored once, and the same thresholds
    assert_eq!(
        count(&killed_db, "SELECT count(*) FROM calls"),
        count(
            &killed_db,
            "SELECT count(*) FROM (SELECT DISTINCT episode_id, turn, phase FROM calls)"
        )
    );
    assert_eq!(
        count(&killed_db, "SELECT sum(s) FROM agent_thresholds"),
        count(&clean_db, "SELECT sum(s) FROM agent_thresholds")
    );
    let report = baton_ok(dir.path(), &["report", "killed", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(v["audit"]["reconciled"], true);
}
