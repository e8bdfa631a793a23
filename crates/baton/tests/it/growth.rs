//! One experiment, many runs: a pilot grows on its folder without paying twice, a
//! changed model setting re-runs exactly that model's episodes, and a store written
//! before episodes had an identity resumes with nothing sent. Every request is counted
//! at a real `baton sim-server` on 127.0.0.1:0.
// See: issue 31

use std::path::Path;

use rusqlite::Connection;

use crate::support::{SimServer, baton_ok, count, rows, write_experiment};
use crate::{baton, stderr, stdout};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/schema13");

/// The fixture's experiment, its models reached at `server`.
fn pilot(server: &SimServer) -> String {
    std::fs::read_to_string(Path::new(FIXTURE).join("pilot.toml"))
        .unwrap()
        .replace("BASE_URL", &server.base_url)
}

/// (task, cell, retired) of every episode, and the number of calls.
fn episodes(db: &Path) -> Vec<(String, String, Option<String>)> {
    rows(
        db,
        "SELECT task_id, cell_key, retired FROM episodes ORDER BY task_id, cell_key",
    )
}

/// The fixture store in `dir/out`, with the experiment file pointing at `server`.
fn fixture_folder(dir: &Path, server: &SimServer) {
    std::fs::create_dir_all(dir.join("out")).unwrap();
    std::fs::copy(
        Path::new(FIXTURE).join("pilot.sqlite"),
        dir.join("out/results.sqlite"),
    )
    .unwrap();
    write_experiment(dir, &pilot(server));
}

#[test]
fn issue_31_a_schema_13_store_resumes_with_no_request_and_adopts_its_identities() {
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    fixture_folder(dir.path(), &server);
    let run = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(server.requests(), 0, "nothing is sent again");
    let out = stdout(&run);
    // only the server's address changed, which is no episode's identity
    assert!(out.contains("models.lc.base_url: "), "{out}");
    assert!(
        out.contains("episodes: 6 reused, 0 resumed, 0 new, 0 re-run"),
        "{out}"
    );
    assert!(out.contains("calls: 0 new, 34 stored"), "{out}");
    // the identities adopted from the stored experiment, pinned: a change here means
    // every user's stored episodes would be run again
    let db = dir.path().join("out/results.sqlite");
    let pinned: Vec<(String, String, String)> = rows(
        &db,
        "SELECT task_id, cell_key, identity FROM episodes ORDER BY id",
    );
    let ids: Vec<&str> = pinned.iter().map(|p| p.2.as_str()).collect();
    assert_eq!(
        ids,
        [
            "1035f835ca74445b57b9ad095ed35918b3f8527f1835c1f3826b4a81b80b9dfb",
            "f82d4c94a0758bba1849ba1821cb4ae32c7d0b7f4679b479538df9318f9aa22c",
            "d1daebbfba9778d1498988619a107c6208b44bb0be6c793319af40c213e51ec3",
            "0acd3637db294b935167311d5fb7d9bb6bae317491c9e9cb9167084c587537ea",
            "0c9697e8fe0be57bddbb054796b91fc30ff1ca0c869c2ad99c9fbf3c035e59fa",
            "f1de5bd6ea4749dfe87f065c738c1716c7087f23f844f45213a344a7189116e0",
        ],
        "{pinned:?}"
    );
    let schema: String = Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(schema, baton_store::schema::SCHEMA_VERSION.to_string());
}

#[test]
fn issue_31_a_pilot_grows_on_its_folder_and_pays_only_for_new_episodes() {
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    fixture_folder(dir.path(), &server);
    let db = dir.path().join("out/results.sqlite");
    // 2 tasks, ["early"] → 3 tasks, ["early", "middle"]
    let grown = pilot(&server).replace("limit = 2", "limit = 3").replace(
        r#"switch_points = ["early"]"#,
        r#"switch_points = ["early", "middle"]"#,
    );
    std::fs::write(dir.path().join("grown.toml"), &grown).unwrap();
    let run = baton_ok(
        dir.path(),
        &["run", "grown.toml", "--out", "out", "--quiet"],
    );
    let out = stdout(&run);
    assert!(out.contains("limit: 2 → 3"), "{out}");
    assert!(
        out.contains(r#"switch_points: ["early"] → ["early","middle"]"#),
        "{out}"
    );
    assert!(
        out.contains("episodes: 6 reused, 0 resumed, 6 new, 0 re-run"),
        "{out}"
    );
    // the new episodes: the third task's two anchors and two handoffs, and the two old
    // tasks' middle handoffs, whose prefixes fork from the stored anchors
    let new_calls = count(&db, "SELECT count(*) FROM calls") - 34;
    assert_eq!(server.requests(), new_calls as u64);
    let middle_suffix = count(
        &db,
        "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
         WHERE e.cell_key LIKE '%middle%' AND e.task_id IN ('sample-math/06', 'sample-math/08')",
    );
    let third = count(
        &db,
        "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
         WHERE e.task_id NOT IN ('sample-math/06', 'sample-math/08')",
    );
    assert_eq!(new_calls, middle_suffix + third);
    assert!(new_calls > 0);
    let eps = episodes(&db);
    assert_eq!(eps.len(), 12);
    assert!(eps.iter().all(|e| e.2.is_none()), "{eps:?}");
    // and again: nothing
    let before = server.requests();
    let again = baton_ok(
        dir.path(),
        &["run", "grown.toml", "--out", "out", "--quiet"],
    );
    assert_eq!(server.requests(), before);
    assert!(
        stdout(&again).contains("episodes: 12 reused, 0 resumed, 0 new, 0 re-run"),
        "{}",
        stdout(&again)
    );

    // one model setting: exactly the episodes that use lc run again, listed first
    let warmer = grown.replacen("[models.lc]\n", "[models.lc]\ntemperature = 0.5\n", 1);
    std::fs::write(dir.path().join("warmer.toml"), &warmer).unwrap();
    let refused = baton(
        dir.path(),
        &["run", "warmer.toml", "--out", "out", "--quiet"],
    );
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let err = stderr(&refused);
    assert!(err.contains("models.lc.temperature: (none) → 0.5"), "{err}");
    assert!(err.contains("--allow-changed"), "{err}");
    assert_eq!(server.requests(), before, "refused before any call");
    let calls_before = count(&db, "SELECT count(*) FROM calls");
    let rerun = baton_ok(
        dir.path(),
        &[
            "run",
            "warmer.toml",
            "--out",
            "out",
            "--quiet",
            "--allow-changed",
        ],
    );
    let out = stdout(&rerun);
    // lc's three anchors and its six handoffs (lc sends every one); hc's three anchors stay
    assert!(
        out.contains("episodes: 3 reused, 0 resumed, 0 new, 9 re-run"),
        "{out}"
    );
    let sent = server.requests() - before;
    assert_eq!(
        sent as i64,
        count(&db, "SELECT count(*) FROM calls") - calls_before
    );
    let retired: Vec<_> = episodes(&db)
        .into_iter()
        .filter(|e| e.2.as_deref() == Some("changed"))
        .collect();
    assert_eq!(retired.len(), 9);
    assert!(
        retired
            .iter()
            .all(|e| e.1.starts_with("single(lc)") || e.1.starts_with("handoff(lc")),
        "{retired:?}"
    );
    // every request of this run used the new setting, and only lc's episodes sent any
    let c = Connection::open(&db).unwrap();
    let models: Vec<String> = c
        .prepare("SELECT DISTINCT model FROM calls WHERE id > ?1")
        .unwrap()
        .query_map([calls_before], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(models.contains(&"lc".to_string()), "{models:?}");
    let hc_anchor_calls: i64 = c
        .query_row(
            "SELECT count(*) FROM calls c JOIN episodes e ON e.id = c.episode_id
             WHERE c.id > ?1 AND e.cell_key = 'single(hc)'",
            [calls_before],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(hc_anchor_calls, 0);
    // the report shows the current episodes only: 12, not 21
    baton_ok(
        dir.path(),
        &["report", "out", "--format", "json", "--bootstrap", "0"],
    );
}

#[test]
fn issue_31_a_changed_price_card_reprices_and_sends_nothing() {
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    fixture_folder(dir.path(), &server);
    let db = dir.path().join("out/results.sqlite");
    let paid = |db: &Path| count(db, "SELECT sum(cost) FROM calls");
    let before = paid(&db);
    // lc's input rate doubled
    std::fs::write(
        dir.path().join("prices.json"),
        r#"{"sim/lc": {"input_cost_per_token": 4e-07, "output_cost_per_token": 1.2e-06,
            "cache_read_input_token_cost": 2e-08, "cache_creation_input_token_cost": 2.5e-07}}"#,
    )
    .unwrap();
    let exp = pilot(&server).replace("seed = 7", "seed = 7\nprices = \"prices.json\"");
    write_experiment(dir.path(), &exp);
    let run = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert_eq!(server.requests(), 0);
    let out = stdout(&run);
    assert!(
        out.contains("price card changed: stored usage re-priced"),
        "{out}"
    );
    assert!(out.contains("episodes: 6 reused"), "{out}");
    let after = paid(&db);
    // lc's calls: input twice as dear; hc's unchanged
    let lc_in = count(&db, "SELECT sum(uncached_in) FROM calls WHERE model = 'lc'");
    assert_eq!(after - before, lc_in * 200_000, "{before} → {after}");
    // each episode's paid cost is its calls' new cost
    let mismatched = count(
        &db,
        "SELECT count(*) FROM episodes e WHERE e.cost_paid !=
         (SELECT coalesce(sum(cost), 0) FROM calls c WHERE c.episode_id = e.id)",
    );
    assert_eq!(mismatched, 0);
    let changes = count(
        &db,
        "SELECT count(*) FROM input_changes WHERE name = 'price card'",
    );
    assert_eq!(changes, 1);
}

#[test]
fn issue_31_a_removed_cell_stays_stored_leaves_the_report_and_comes_back_for_free() {
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    fixture_folder(dir.path(), &server);
    let db = dir.path().join("out/results.sqlite");
    let both = pilot(&server).replace(
        r#"switch_points = ["early"]"#,
        r#"switch_points = ["early", "middle"]"#,
    );
    std::fs::write(dir.path().join("both.toml"), &both).unwrap();
    baton_ok(dir.path(), &["run", "both.toml", "--out", "out", "--quiet"]);
    let report = |dir: &Path| {
        let r = baton_ok(dir, &["report", "out", "--bootstrap", "0"]);
        stdout(&r)
    };
    assert!(report(dir.path()).contains("middle"));
    let sent = server.requests();

    // back to the pilot's cells: the middle handoffs are kept, out of the report
    let run = baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(
        stdout(&run).contains(
            "episodes: 6 reused, 0 resumed, 0 new, 0 re-run (identity changed), 2 removed"
        ),
        "{}",
        stdout(&run)
    );
    assert_eq!(server.requests(), sent);
    let removed: Vec<_> = episodes(&db)
        .into_iter()
        .filter(|e| e.2.as_deref() == Some("removed"))
        .collect();
    assert_eq!(removed.len(), 2, "{removed:?}");
    assert!(removed.iter().all(|e| e.1.contains("middle")));
    let md = report(dir.path());
    assert!(!md.contains("middle"), "{md}");

    // and back again: reused, nothing sent
    let run = baton_ok(dir.path(), &["run", "both.toml", "--out", "out", "--quiet"]);
    assert!(
        stdout(&run).contains("episodes: 8 reused, 0 resumed, 0 new, 0 re-run"),
        "{}",
        stdout(&run)
    );
    assert_eq!(server.requests(), sent);
    assert!(episodes(&db).iter().all(|e| e.2.is_none()));
    assert!(report(dir.path()).contains("middle"));
}
