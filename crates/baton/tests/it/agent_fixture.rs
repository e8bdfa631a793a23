//! An agent handoff store written by baton at e57739c (schema 13, before episodes had an
//! identity) resumes with today's baton: nothing is sent, the report says what the old
//! baton's report said, and grown by one task it sends only that task's requests. Every
//! request is counted at a real `baton sim-server` on loopback; the episodes run in the
//! real sandbox.
// See: issue 31

use std::path::Path;
use std::sync::Mutex;

use serde_json::{Value, json};

use crate::env::sandbox_works;
use crate::support::{SimServer, baton_ok, count, rows};
use crate::{baton, stderr, stdout};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/agent-schema13");

/// The port the fixture's models were served on, which its stored experiment names.
const FIXTURE_PORT: u16 = 29731;

/// One test at a time serves on [`FIXTURE_PORT`].
static FIXTURE_PORT_IN_USE: Mutex<()> = Mutex::new(());

/// A `baton sim-server` on [`FIXTURE_PORT`]: the address the stored experiment names.
fn fixture_server() -> SimServer {
    let server = SimServer::start_on(FIXTURE_PORT, &[]);
    assert!(
        server
            .base_url
            .contains(&format!("127.0.0.1:{FIXTURE_PORT}/")),
        "the sim-server did not listen on port {FIXTURE_PORT} (taken by another program?): {}",
        server.base_url
    );
    server
}

/// The fixture's experiment with its models reached at `base_url`, and `tasks` as its
/// task list.
fn experiment(base_url: &str, tasks: &str) -> String {
    let text = std::fs::read_to_string(Path::new(FIXTURE).join("pilot.toml")).unwrap();
    let pilot = r#"tasks = ["chunked", "roman-numerals"]"#;
    assert!(text.contains(pilot), "{text}");
    text.replace("BASE_URL", base_url)
        .replace(pilot, &format!("tasks = {tasks}"))
}

const PILOT_TASKS: &str = r#"["chunked", "roman-numerals"]"#;

/// A copy of the fixture's results folder at `dir/out` (the store and its snapshot
/// blobs), with the experiment `text` at `dir/exp.toml`.
fn fixture_folder(dir: &Path, text: &str) {
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::copy(
        Path::new(FIXTURE).join("pilot.sqlite"),
        out.join("results.sqlite"),
    )
    .unwrap();
    copy_dir(&Path::new(FIXTURE).join("blobs"), &out.join("blobs"));
    std::fs::write(dir.join("exp.toml"), text).unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// `baton report out --format json --bootstrap 0` in `dir`, parsed.
fn report(dir: &Path) -> Value {
    let r = baton_ok(
        dir,
        &["report", "out", "--format", "json", "--bootstrap", "0"],
    );
    serde_json::from_str(&stdout(&r)).expect("a JSON report")
}

/// What the report says of every model and bucket, and of every handoff cell, in the
/// figures e57739c's `baton report --format json` gave for the fixture.
fn assert_reports_the_old_cells(report: &Value) {
    let anchors: Vec<Value> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            json!([
                r["model"],
                r["bucket"],
                r["episodes"],
                r["finished"],
                r["resolved"],
                r["usd_per_task"],
                r["mean_steps"]
            ])
        })
        .collect();
    assert_eq!(
        anchors,
        [
            json!(["hc", "easy", 2, 2, 2, 0.0144244, 5.5]),
            json!(["hc", "all", 2, 2, 2, 0.0144244, 5.5]),
            json!(["lc", "easy", 2, 2, 2, 0.00167231, 9.5]),
            json!(["lc", "all", 2, 2, 2, 0.00167231, 9.5]),
        ]
    );
    let thresholds: Vec<Value> = report["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!([t["direction"], t["bucket"], t["p"], t["s"]]))
        .collect();
    assert_eq!(
        thresholds,
        [
            json!(["downshift", "easy", 10, 5]),
            json!(["escalation", "easy", 10, 8]),
        ]
    );
    let cells: Vec<Value> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            json!([
                c["direction"],
                c["interface"],
                c["p"],
                c["n"],
                c["n_fired"],
                c["n_unfired"],
                c["n_matched"],
                c["pass_rate"],
                c["mean_cost_usd"],
                c["lc_cost_usd"],
                c["hc_cost_usd"],
                c["qrec_omitted_reason"]
            ])
        })
        .collect();
    assert_eq!(
        cells,
        [
            json!([
                "escalation",
                "raw",
                10,
                2,
                1,
                1,
                1,
                100.0,
                0.03490004,
                0.00164752,
                0.0127488,
                "small_quality_gap"
            ]),
            json!([
                "downshift",
                "raw",
                10,
                2,
                1,
                1,
                1,
                100.0,
                0.0149494,
                0.0016971,
                0.0161,
                "small_quality_gap"
            ]),
        ]
    );
    let csret: Vec<f64> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["csret"].as_f64().unwrap())
        .collect();
    assert!((csret[0] - -199.53771096666333).abs() < 1e-9, "{csret:?}");
    assert!((csret[1] - 7.988668948614515).abs() < 1e-9, "{csret:?}");
    assert_eq!(report["audit"]["reconciled"], json!(true));
    assert_eq!(report["audit"]["tasks"], json!(8));
}

#[test]
fn issue_31_an_agent_store_of_schema_13_resumes_with_no_request_and_reports_its_cells() {
    if !sandbox_works() {
        return;
    }
    let _port = FIXTURE_PORT_IN_USE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = fixture_server();
    let dir = tempfile::tempdir().unwrap();
    fixture_folder(dir.path(), &experiment(&server.base_url, PILOT_TASKS));
    let db = dir.path().join("out/results.sqlite");

    let run = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(server.requests(), 0, "nothing is sent again");
    let out = stdout(&run);
    assert!(
        out.contains("episodes: 8 reused, 0 resumed, 0 new, 0 re-run"),
        "{out}"
    );
    assert!(out.contains("calls: 0 new, 38 stored"), "{out}");
    // migrated to today's schema, every episode and call as the old baton stored it
    let schema: Vec<(String,)> = rows(&db, "SELECT value FROM meta WHERE key = 'schema_version'");
    assert_eq!(schema, [(baton_store::schema::SCHEMA_VERSION.to_string(),)]);
    let episodes: Vec<(String, String, String, i64)> = rows(
        &db,
        "SELECT task_id, cell_key, status, cost_paid FROM episodes ORDER BY id",
    );
    assert_eq!(
        episodes,
        [
            ("chunked", "single(hc)", 12_748_800_000),
            ("chunked", "single(lc)", 1_647_520_000),
            ("roman-numerals", "single(hc)", 16_100_000_000),
            ("roman-numerals", "single(lc)", 1_697_100_000),
            ("chunked", "handoff(hc -> lc, p10, raw)", 0),
            ("chunked", "handoff(lc -> hc, p10, raw)", 33_927_200_000),
            ("roman-numerals", "handoff(lc -> hc, p10, raw)", 0),
            ("roman-numerals", "handoff(hc -> lc, p10, raw)", 220_200_000),
        ]
        .map(|(t, c, paid)| (t.to_string(), c.to_string(), "scored".to_string(), paid))
    );
    assert_eq!(count(&db, "SELECT count(*) FROM calls"), 38);
    assert_eq!(count(&db, "SELECT sum(cost) FROM calls"), 66_340_820_000);

    assert_reports_the_old_cells(&report(dir.path()));
}

#[test]
fn issue_31_an_agent_store_of_schema_13_grown_by_one_task_sends_only_its_requests() {
    if !sandbox_works() {
        return;
    }
    let _port = FIXTURE_PORT_IN_USE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = fixture_server();
    let dir = tempfile::tempdir().unwrap();
    // date-ranges is a medium task: a bucket with no stored switch call
    let grown = r#"["chunked", "date-ranges", "roman-numerals"]"#;
    fixture_folder(dir.path(), &experiment(&server.base_url, grown));
    let db = dir.path().join("out/results.sqlite");

    let run = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let out = stdout(&run);
    assert!(
        out.contains(
            r#"tasks: ["chunked","roman-numerals"] → ["chunked","date-ranges","roman-numerals"]"#
        ),
        "{out}"
    );
    assert!(
        out.contains("episodes: 8 reused, 0 resumed, 4 new, 0 re-run"),
        "{out}"
    );
    // the new task's two anchors and its two handoffs, nothing of the stored tasks
    let new_calls = count(
        &db,
        "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
         WHERE e.task_id = 'date-ranges'",
    );
    assert!(new_calls > 0);
    assert_eq!(count(&db, "SELECT count(*) FROM calls"), 38 + new_calls);
    assert_eq!(server.requests(), new_calls as u64);
    let new_episodes: Vec<(String,)> = rows(
        &db,
        "SELECT cell_key FROM episodes WHERE task_id = 'date-ranges' ORDER BY cell_key",
    );
    assert_eq!(
        new_episodes,
        [
            "handoff(hc -> lc, p10, raw)",
            "handoff(lc -> hc, p10, raw)",
            "single(hc)",
            "single(lc)",
        ]
        .map(|c| (c.to_string(),))
    );
    // the stored switch calls are kept; the new bucket has its own
    let thresholds: Vec<(String, String, i64)> = rows(
        &db,
        "SELECT direction, bucket, s FROM agent_thresholds WHERE bucket = 'easy' ORDER BY direction",
    );
    assert_eq!(
        thresholds,
        [
            ("downshift".to_string(), "easy".to_string(), 5),
            ("escalation".to_string(), "easy".to_string(), 8),
        ]
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM agent_thresholds WHERE bucket = 'medium'"
        ),
        2
    );
    // and again: nothing
    let before = server.requests();
    let again = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(server.requests(), before);
    assert!(
        stdout(&again).contains("episodes: 12 reused, 0 resumed, 0 new, 0 re-run"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn issue_31_an_agent_store_of_schema_13_resumes_against_a_server_that_moved() {
    if !sandbox_works() {
        return;
    }
    // the models are now served at another address, which is no episode's identity
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    fixture_folder(dir.path(), &experiment(&server.base_url, PILOT_TASKS));
    let run = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(
        server.stats()["requests"],
        json!(0),
        "nothing is sent again"
    );
    let out = stdout(&run);
    assert!(out.contains("models.lc.base_url: "), "{out}");
    assert!(
        out.contains("episodes: 8 reused, 0 resumed, 0 new, 0 re-run"),
        "{out}"
    );
    assert_reports_the_old_cells(&report(dir.path()));
}

#[test]
fn issue_31_an_agent_store_of_schema_13_grown_by_an_interface_and_shrunk_back_retires_its_episodes()
{
    if !sandbox_works() {
        return;
    }
    let _port = FIXTURE_PORT_IN_USE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = fixture_server();
    let dir = tempfile::tempdir().unwrap();
    let pilot = experiment(&server.base_url, PILOT_TASKS);
    let grown = pilot.replace(
        r#"interfaces = ["raw"]"#,
        r#"interfaces = ["raw", "disclosure"]"#,
    );
    assert_ne!(grown, pilot);
    fixture_folder(dir.path(), &grown);
    let db = dir.path().join("out/results.sqlite");

    // grown: the disclosure handoffs run on the stored anchors and switch calls
    let run = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let out = stdout(&run);
    assert!(
        out.contains("episodes: 8 reused, 0 resumed, 4 new, 0 re-run"),
        "{out}"
    );
    let disclosure = "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
         WHERE e.cell_key LIKE '%disclosure%'";
    let new_calls = count(&db, disclosure);
    assert_eq!(count(&db, "SELECT count(*) FROM calls"), 38 + new_calls);
    assert_eq!(server.requests(), new_calls as u64);

    // shrunk back: the disclosure episodes are retired as removed, nothing is sent,
    // and the report is the pilot's again
    let before = server.requests();
    std::fs::write(dir.path().join("exp.toml"), &pilot).unwrap();
    let run = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(server.requests(), before, "nothing is sent");
    let out = stdout(&run);
    assert!(
        out.contains(
            "episodes: 8 reused, 0 resumed, 0 new, 0 re-run (identity changed), 4 removed"
        ),
        "{out}"
    );
    let retired: Vec<(String, String)> = rows(
        &db,
        "SELECT cell_key, retired FROM episodes WHERE retired IS NOT NULL ORDER BY id",
    );
    assert_eq!(retired.len(), 4, "{retired:?}");
    assert!(
        retired
            .iter()
            .all(|(cell, why)| cell.contains("disclosure") && why == "removed"),
        "{retired:?}"
    );
    // their calls stay stored
    assert_eq!(count(&db, disclosure), new_calls);
    assert_reports_the_old_cells(&report(dir.path()));

    // the removed cell back, with the identity its episodes have: current again, and
    // nothing is sent
    std::fs::write(dir.path().join("exp.toml"), &grown).unwrap();
    let back = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(server.requests(), before, "nothing is sent");
    let out = stdout(&back);
    assert!(
        out.contains("episodes: 12 reused, 0 resumed, 0 new, 0 re-run"),
        "{out}"
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM episodes WHERE retired IS NOT NULL"
        ),
        0
    );
    // every episode has adopted the identity it ran with
    assert_eq!(
        count(&db, "SELECT count(DISTINCT identity) FROM episodes"),
        12
    );

    // back to the pilot with lc's temperature changed: the disclosure episodes are
    // removed again, and when they come back with that setting their identity differs
    let lc = "price = \"sim/lc\"\n";
    let hot = |text: &str| text.replace(lc, &format!("{lc}temperature = 0.5\n"));
    std::fs::write(dir.path().join("exp.toml"), &pilot).unwrap();
    baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    std::fs::write(dir.path().join("exp.toml"), hot(&pilot)).unwrap();
    baton_ok(
        dir.path(),
        &[
            "run",
            "exp.toml",
            "--out",
            "out",
            "--quiet",
            "--allow-changed",
        ],
    );
    let after = server.requests();
    std::fs::write(dir.path().join("exp.toml"), hot(&grown)).unwrap();
    let changed = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(changed.status.code(), Some(2), "{}", stdout(&changed));
    assert_eq!(server.requests(), after, "nothing is sent");
    let err = stderr(&changed);
    assert!(
        err.contains("4 planned episode(s) (first: cell handoff(")
            && err.contains(
                "were retired as removed by an earlier run that sent them with other settings"
            ),
        "{err}"
    );
}

#[test]
fn issue_31_one_changed_model_setting_reruns_exactly_that_models_agent_episodes() {
    if !sandbox_works() {
        return;
    }
    let _port = FIXTURE_PORT_IN_USE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = fixture_server();
    let dir = tempfile::tempdir().unwrap();
    let pilot = experiment(&server.base_url, PILOT_TASKS);
    let lc = "price = \"sim/lc\"\n";
    assert!(pilot.contains(lc));
    let changed = pilot.replace(lc, &format!("{lc}temperature = 0.5\n"));
    fixture_folder(dir.path(), &changed);
    let db = dir.path().join("out/results.sqlite");
    let current = |cell: &str| -> Vec<(i64, String)> {
        rows(
            &db,
            &format!(
                "SELECT id, task_id FROM episodes WHERE retired IS NULL AND cell_key = '{cell}'
                 ORDER BY id"
            ),
        )
    };
    // schema 13: every episode is current
    let hc_anchors: Vec<(i64, String)> = rows(
        &db,
        "SELECT id, task_id FROM episodes WHERE cell_key = 'single(hc)' ORDER BY id",
    );
    assert_eq!(hc_anchors.len(), 2);

    // without --allow-changed: listed and refused before any call
    let refused = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(refused.status.code(), Some(2), "{}", stdout(&refused));
    let err = stderr(&refused);
    assert!(err.contains("models.lc.temperature: (none) → 0.5"), "{err}");
    assert!(
        err.contains("6 stored episode(s) of model \"lc\" would be sent again"),
        "{err}"
    );
    assert!(
        err.contains("--allow-changed retires those episodes"),
        "{err}"
    );
    assert_eq!(server.requests(), 0);

    // with it: lc's 2 anchors and the 4 handoffs (lc sends or receives) run afresh,
    // hc's 2 anchors are reused; the change is listed before the first call
    let run = baton_ok(
        dir.path(),
        &[
            "run",
            "exp.toml",
            "--out",
            "out",
            "--quiet",
            "--allow-changed",
        ],
    );
    let out = stdout(&run);
    assert!(out.contains("models.lc.temperature: (none) → 0.5"), "{out}");
    assert!(
        out.contains("episodes: 2 reused, 0 resumed, 0 new, 6 re-run"),
        "{out}"
    );
    let new_calls = count(&db, "SELECT count(*) FROM calls") - 38;
    assert!(new_calls > 0);
    assert_eq!(server.requests(), new_calls as u64);
    // every request went to the new episodes; hc's anchors are the stored ones
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
             WHERE e.retired IS NULL AND e.cell_key != 'single(hc)' AND c.id > 38"
        ),
        new_calls
    );
    assert_eq!(current("single(hc)"), hc_anchors);
    let retired: Vec<(String, String)> = rows(
        &db,
        "SELECT cell_key, retired FROM episodes WHERE retired IS NOT NULL ORDER BY id",
    );
    assert_eq!(retired.len(), 6, "{retired:?}");
    assert!(retired.iter().all(|(cell, why)| why == "changed"
        && cell.contains(" #")
        && !cell.starts_with("single(hc)")));
    assert_eq!(
        count(&db, "SELECT count(*) FROM episodes WHERE retired IS NULL"),
        8
    );
    // the downshift switch call (from hc's anchors) is kept; escalation's is lc's again
    let downshift: Vec<(String, i64)> = rows(
        &db,
        "SELECT bucket, s FROM agent_thresholds WHERE direction = 'downshift'",
    );
    assert_eq!(downshift, [("easy".to_string(), 5)]);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) FROM agent_thresholds WHERE direction = 'escalation'"
        ),
        1
    );
    // the report holds the current episodes only
    let report = report(dir.path());
    assert_eq!(report["audit"]["tasks"], json!(8));
    assert_eq!(report["audit"]["reconciled"], json!(true));

    // and again: nothing
    let before = server.requests();
    let again = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(server.requests(), before);
    assert!(
        stdout(&again).contains("episodes: 8 reused, 0 resumed, 0 new, 0 re-run"),
        "{}",
        stdout(&again)
    );
}

#[test]
fn issue_31_an_agent_store_of_schema_13_grown_in_a_bucket_with_switch_calls_recomputes_them() {
    if !sandbox_works() {
        return;
    }
    let _port = FIXTURE_PORT_IN_USE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let server = fixture_server();
    let dir = tempfile::tempdir().unwrap();
    // temperature is an easy task, the bucket of every stored switch call
    let grown = r#"["chunked", "roman-numerals", "temperature"]"#;
    fixture_folder(dir.path(), &experiment(&server.base_url, grown));
    let db = dir.path().join("out/results.sqlite");
    // schema 13: every episode is current
    let handoffs: Vec<(i64, String, i64)> = rows(
        &db,
        "SELECT id, cell_key, k FROM episodes WHERE cell_key LIKE 'handoff%' ORDER BY id",
    );
    assert_eq!(handoffs.len(), 4);

    let run = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let out = stdout(&run);
    assert!(
        out.contains("episodes: 8 reused, 0 resumed, 4 new, 0 re-run"),
        "{out}"
    );
    // the easy switch calls are computed again from the 3 anchors of each model
    let s_of: std::collections::BTreeMap<String, i64> = rows::<(String, i64, i64)>(
        &db,
        "SELECT direction, s, n_anchors FROM agent_thresholds WHERE bucket = 'easy'",
    )
    .into_iter()
    .map(|(d, s, n)| {
        assert_eq!(n, 3, "{d}");
        (d, s)
    })
    .collect();
    assert_eq!(s_of.len(), 2);
    let stored_s = [("downshift", 5), ("escalation", 8)];
    // a stored handoff whose switch call is unchanged is the same row; one whose
    // switch call moved is retired as changed and ran afresh at the new one
    let mut rerun = 0;
    for (id, cell, k) in &handoffs {
        let direction = if cell.starts_with("handoff(lc -> hc") {
            "escalation"
        } else {
            "downshift"
        };
        let old = stored_s.iter().find(|(d, _)| *d == direction).unwrap().1;
        assert_eq!(*k, old);
        let retired: Vec<(Option<String>,)> = rows(
            &db,
            &format!("SELECT retired FROM episodes WHERE id = {id}"),
        );
        if s_of[direction] == old {
            assert_eq!(retired, [(None,)], "{cell}");
        } else {
            assert_eq!(retired, [(Some("changed".to_string()),)], "{cell}");
            rerun += 1;
        }
    }
    // every current handoff ran at its bucket's switch call
    let current: Vec<(String, i64)> = rows(
        &db,
        "SELECT cell_key, k FROM episodes WHERE retired IS NULL AND cell_key LIKE 'handoff%'",
    );
    assert_eq!(current.len(), 6);
    for (cell, k) in &current {
        let direction = if cell.starts_with("handoff(lc -> hc") {
            "escalation"
        } else {
            "downshift"
        };
        assert_eq!(*k, s_of[direction], "{cell}");
    }
    let new_calls = count(&db, "SELECT count(*) FROM calls") - 38;
    assert!(new_calls > 0);
    assert_eq!(server.requests(), new_calls as u64);
    // its anchors move escalation's switch call from 8 to 6 (p10 of lc's anchors: 11
    // and 8 calls stored, 6 on temperature) and leave downshift's at 5: the 2 stored
    // escalation handoffs ran again, the 2 downshift ones are reused
    assert_eq!(
        s_of,
        [("downshift".to_string(), 5), ("escalation".to_string(), 6)].into()
    );
    assert_eq!(rerun, 2);
    let report = report(dir.path());
    assert_eq!(report["audit"]["tasks"], json!(12));
    assert_eq!(report["audit"]["reconciled"], json!(true));

    // and again: nothing
    let before = server.requests();
    let again = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(server.requests(), before);
    assert!(
        stdout(&again).contains("episodes: 12 reused, 0 resumed, 0 new, 0 re-run"),
        "{}",
        stdout(&again)
    );
}
