//! Files of every shipped schema version open, migrate and read back in full.

use baton_store::schema::{MIGRATIONS, SCHEMA_VERSION};
use baton_store::{EpisodeInit, Outcome, Reader, Store, StoreError};
use baton_types::{Cost, EpisodeStatus, Phase, Verdict};
use rusqlite::Connection;

use crate::{TestContext, call, conversation, init, meta, request_json, task, v1};

fn version(path: &std::path::Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get::<_, String>(0),
        )
        .unwrap()
        .parse()
        .unwrap()
}

/// A version-1 file as baton 0.1 wrote it: one scored episode with two calls.
pub fn write_v1(path: &std::path::Path) -> (Vec<baton_store::NewCall>, i64, EpisodeInit, Outcome) {
    let db = Connection::open(path).unwrap();
    v1::create(&db);
    v1::insert_experiment(&db, &meta(), "2026-11-30T10:00:00.000Z");
    v1::insert_task(&db, &task("t1"));
    let mut init = init("t1", "single(lc)");
    init.replicate = 0;
    let outcome = Outcome {
        status: EpisodeStatus::Scored,
        final_response: Some("Answer: 6".into()),
        extracted: Some("6".into()),
        verdict: Some(Verdict::new(1.0, None).with_details(serde_json::json!({"k": 1}))),
        reason: None,
        cost_attributed: Cost(300),
        cost_paid: Cost(300),
    };
    v1::insert_episode(&db, 1, &init, &outcome, "2026-11-30T10:00:01.000Z");
    let calls: Vec<_> = (1..=2)
        .map(|turn| {
            call(
                1,
                turn,
                Phase::Prefix,
                request_json(&conversation(turn as usize), 5),
            )
        })
        .collect();
    for c in &calls {
        v1::insert_call(&db, c, "2026-11-30T10:00:00.500Z");
    }
    (calls, 1, init, outcome)
}

#[test]
fn a_version_1_file_migrates_and_loses_nothing() {
    let cx = TestContext::new();
    let (calls, episode, init, outcome) = write_v1(&cx.path());
    let reader = Reader::open(&cx.path()).expect("an old file opens for reading");
    assert_eq!(version(&cx.path()), SCHEMA_VERSION);
    assert_eq!(reader.experiment().unwrap().meta, meta());
    assert_eq!(
        reader.experiment().unwrap().created_at,
        "2026-11-30T10:00:00.000Z"
    );
    assert_eq!(reader.tasks().unwrap(), vec![task("t1")]);
    let e = &reader.episodes().unwrap()[0];
    assert_eq!((&e.init, &e.outcome), (&init, &outcome));
    assert_eq!(e.updated_at, "2026-11-30T10:00:01.000Z");
    let back: Vec<_> = reader
        .calls(episode)
        .unwrap()
        .into_iter()
        .map(|r| r.call)
        .collect();
    assert_eq!(
        back, calls,
        "old requests are kept whole and read back exactly"
    );
    drop(reader);
}

#[tokio::test]
async fn a_version_1_file_resumes_with_new_calls_stored_by_reference() {
    let cx = TestContext::new();
    let (mut calls, episode, ..) = write_v1(&cx.path());
    let store = Store::open(&cx.path()).expect("an old file opens for writing");
    store.init_experiment(meta()).await.unwrap();
    store.upsert_task(task("t1")).await.unwrap();
    let third = call(episode, 3, Phase::Prefix, request_json(&conversation(3), 5));
    store.record_call(third.clone()).await.unwrap();
    calls.push(third);
    let back: Vec<_> = store
        .calls(episode)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.call)
        .collect();
    assert_eq!(back, calls);
    let db = Connection::open(cx.path()).unwrap();
    let split: i64 = db
        .query_row(
            "SELECT count(*) FROM calls WHERE request_params IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(split, 1, "only the new call is split");
    // an old file keeps the page size it was made with
    assert_eq!(page_size(&cx.path()), 4096);
}

fn page_size(path: &std::path::Path) -> i64 {
    Connection::open(path)
        .unwrap()
        .query_row("PRAGMA page_size", [], |r| r.get(0))
        .unwrap()
}

#[tokio::test]
async fn a_new_file_starts_at_the_current_version() {
    let cx = TestContext::new();
    // (an empty file is not new: `foreign` tests that it is refused)
    let store = cx.store().await;
    drop(store);
    assert_eq!(version(&cx.path()), SCHEMA_VERSION);
    assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
    assert_eq!(page_size(&cx.path()), 8192);
}

#[tokio::test]
async fn a_newer_schema_is_refused_and_left_untouched() {
    let cx = TestContext::new();
    drop(cx.store().await);
    let db = Connection::open(cx.path()).unwrap();
    db.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'schema_version'",
        [(SCHEMA_VERSION + 1).to_string()],
    )
    .unwrap();
    drop(db);
    let before = std::fs::read(cx.path()).unwrap();
    for err in [
        Store::open(&cx.path()).map(drop).unwrap_err(),
        Reader::open(&cx.path()).map(drop).unwrap_err(),
    ] {
        assert!(
            matches!(err, StoreError::TooNew { found, supported, .. }
                if found == SCHEMA_VERSION + 1 && supported == SCHEMA_VERSION),
            "{err}"
        );
        assert!(err.to_string().contains("upgrade baton"), "{err}");
    }
    assert_eq!(std::fs::read(cx.path()).unwrap(), before);
}

/// A version-11 file: every migration up to 11 applied to an empty database, with one
/// experiment row and, when `agent`, one agent task.
fn write_v11(path: &std::path::Path, agent: bool) {
    let db = Connection::open(path).unwrap();
    db.execute_batch("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
        .unwrap();
    for m in &MIGRATIONS[..11] {
        db.execute_batch(m).unwrap();
    }
    db.execute(
        "INSERT INTO meta (key, value) VALUES ('schema_version', '11')",
        [],
    )
    .unwrap();
    db.execute(
        "INSERT INTO experiment (id, name, spec_toml, spec_sha256, price_card_sha256, eval_profile,
         eval_version, baton_version, git_revision, simulated, created_at)
         VALUES (1, 'old', 'name = \"old\"', 'abc', 'def', 'lic', '1', '0.1.0', NULL, 1, '2026-11-30T10:00:00.000Z')",
        [],
    )
    .unwrap();
    if agent {
        db.execute(
            "INSERT INTO tasks (task_id, family, n_turns, schedule_sha256, sample_json)
             VALUES ('t1', 'agent', 0, 'x', '{}')",
            [],
        )
        .unwrap();
        db.execute(
            "INSERT INTO agent_tasks (task_id, origin, difficulty, format, task_sha256)
             VALUES ('t1', 'agent-sample', 'easy', 'baton', 'aaa')",
            [],
        )
        .unwrap();
    }
}

// See: issue 24 (the experiment's kind is stored, not guessed from the TOML).
#[test]
fn issue_24_a_version_11_store_learns_its_kind_from_its_rows() {
    for agent in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.sqlite");
        write_v11(&path, agent);
        drop(Store::open(&path).unwrap());
        assert_eq!(version(&path), SCHEMA_VERSION);
        let r = Reader::open(&path).unwrap();
        let want = if agent {
            baton_types::ExperimentKind::Agent
        } else {
            baton_types::ExperimentKind::Chat
        };
        assert_eq!(r.experiment().unwrap().meta.kind, want);
        assert_eq!(r.is_agent().unwrap(), agent);
    }
}

#[tokio::test]
async fn a_version_15_file_keeps_its_raw_bodies_whole_and_cuts_the_new_ones() {
    let cx = TestContext::new();
    let text = "a reply long enough to be cut out of its body";
    let raw = format!(
        r#"{{"choices":[{{"message":{{"content":{}}}}}]}}"#,
        serde_json::to_string(text).unwrap()
    );
    let with_text = |turn: u32| {
        let mut c = call(
            1,
            turn,
            Phase::Prefix,
            request_json(&conversation(turn as usize), 5),
        );
        c.response_text = text.into();
        c.raw_response = Some(raw.clone());
        c
    };
    // a version-15 file: its raw bodies whole, and no raw_response_text_at
    {
        let store = cx.store().await;
        let (episode, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
        assert_eq!(episode.id, 1);
        store.record_call(with_text(1)).await.unwrap();
        drop(store);
        downgrade_to_16(&cx.path());
        let db = Connection::open(cx.path()).unwrap();
        db.execute_batch(&format!(
            "UPDATE calls SET raw_response = '{}', raw_response_text_at = NULL;
             ALTER TABLE calls DROP COLUMN raw_response_text_at;
             UPDATE meta SET value = '15' WHERE key = 'schema_version';",
            raw.replace('\'', "''")
        ))
        .unwrap();
    }
    let store = Store::open(&cx.path()).expect("a version-15 file opens");
    store.record_call(with_text(2)).await.unwrap();
    let back: Vec<_> = store
        .calls(1)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.call)
        .collect();
    assert_eq!(back, [with_text(1), with_text(2)]);
    drop(store);
    assert_eq!(version(&cx.path()), SCHEMA_VERSION);
    let db = Connection::open(cx.path()).unwrap();
    let cut: Vec<Option<i64>> = db
        .prepare("SELECT raw_response_text_at FROM calls ORDER BY turn")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // the text starts after {"choices":[{"message":{"content":
    assert_eq!(cut, [None, Some(34)]);
}

/// Turn a store of the current version back into the version-16 layout: each call's
/// two sha256 as hex text in real columns and the index on the request's.
fn downgrade_to_16(path: &std::path::Path) {
    downgrade_to_17(path);
    let db = Connection::open(path).unwrap();
    db.execute_batch(
        "ALTER TABLE calls DROP COLUMN request_sha256;
         ALTER TABLE calls DROP COLUMN response_sha256;
         ALTER TABLE calls ADD COLUMN request_sha256 TEXT NOT NULL DEFAULT '';
         ALTER TABLE calls ADD COLUMN response_sha256 TEXT;
         UPDATE calls SET request_sha256 = lower(hex(request_hash)),
             response_sha256 = lower(hex(response_hash));
         ALTER TABLE calls DROP COLUMN request_hash;
         ALTER TABLE calls DROP COLUMN response_hash;
         CREATE INDEX calls_request ON calls(request_sha256);
         UPDATE meta SET value = '16' WHERE key = 'schema_version';",
    )
    .unwrap();
}

/// Make a current file a version-17 one: without version 18's table.
fn downgrade_to_17(path: &std::path::Path) {
    Connection::open(path)
        .unwrap()
        .execute_batch(
            "DROP TABLE agent_handover_lints;
             UPDATE meta SET value = '17' WHERE key = 'schema_version';",
        )
        .unwrap();
}

/// A version-17 file gets the table of `handover` lints; a lint is stored once per
/// episode and read back whole, by the run (with the episode's progress) and the report.
#[tokio::test]
async fn a_version_17_file_stores_and_reads_back_handover_lints() {
    let cx = TestContext::new();
    {
        let store = cx.store().await;
        store.episode(init("t1", "single(lc)")).await.unwrap();
        drop(store);
    }
    downgrade_to_17(&cx.path());
    let store = Store::open(&cx.path()).expect("a version-17 file opens");
    assert_eq!(version(&cx.path()), SCHEMA_VERSION);
    let lint = baton_store::HandoverLintRow {
        episode_id: 1,
        commit_sha: "ab".repeat(20),
        snapshot: Some("snap".into()),
        rubric: "baton".into(),
        score: 75,
        valid: true,
        verdict: "failed".into(),
        claims: vec![
            baton_store::HandoverClaimRow {
                label: "a.py exists".into(),
                command: "test -f a.py".into(),
                class: "held-and-holds".into(),
            },
            baton_store::HandoverClaimRow {
                label: "tests pass".into(),
                command: "pytest -q".into(),
                class: "never-held".into(),
            },
        ],
    };
    store.agent_handover_lint(lint.clone()).await.unwrap();
    let again = store.agent_handover_lint(lint.clone()).await;
    assert!(again.is_err(), "a second lint of one episode is refused");
    drop(store);
    let reader = Reader::open(&cx.path()).unwrap();
    assert_eq!(reader.agent_handover_lints().unwrap(), [lint]);
}

/// Each call's (request_sha256, response_sha256, typeof and length of request_hash and
/// response_hash), by turn.
fn hashes(path: &std::path::Path) -> Vec<(String, String, String, i64, i64)> {
    Connection::open(path)
        .unwrap()
        .prepare(
            "SELECT request_sha256, response_sha256, typeof(request_hash),
             length(request_hash), length(response_hash) FROM calls ORDER BY turn",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[tokio::test]
async fn a_version_16_file_gets_its_hashes_as_bytes_and_reads_and_resumes_the_same() {
    let cx = TestContext::new();
    let with_reply = |turn: u32| {
        let mut c = call(
            1,
            turn,
            Phase::Prefix,
            request_json(&conversation(turn as usize), 5),
        );
        c.response_text = format!("reply {turn}");
        c
    };
    {
        let store = cx.store().await;
        store.episode(init("t1", "single(lc)")).await.unwrap();
        for turn in 1..=3 {
            store.record_call(with_reply(turn)).await.unwrap();
        }
        drop(store);
    }
    downgrade_to_16(&cx.path());
    let index: i64 = Connection::open(cx.path())
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'calls_request'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(index, 1, "a version-16 file has the index");
    // read-only first: the reader migrates it and gives back every call as written
    let reader = Reader::open(&cx.path()).expect("a version-16 file opens read-only");
    let read: Vec<_> = reader
        .calls(1)
        .unwrap()
        .into_iter()
        .map(|r| r.call)
        .collect();
    assert_eq!(read, [with_reply(1), with_reply(2), with_reply(3)]);
    drop(reader);
    assert_eq!(version(&cx.path()), SCHEMA_VERSION);
    let store = Store::open(&cx.path()).expect("a version-17 file resumes");
    store.record_call(with_reply(4)).await.unwrap();
    let back: Vec<_> = store
        .calls(1)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.call)
        .collect();
    assert_eq!(back, (1..=4).map(with_reply).collect::<Vec<_>>());
    drop(store);
    // migrated rows and new ones alike: 32 bytes stored, lowercase hex seen by SQL
    let want: Vec<_> = (1..=4)
        .map(|turn| {
            let c = with_reply(turn);
            (
                crate::sha256_hex(&c.request_json),
                crate::sha256_hex(&c.response_text),
                "blob".to_string(),
                32,
                32,
            )
        })
        .collect();
    assert_eq!(hashes(&cx.path()), want);
    assert_eq!(want[0].0, back[0].request_sha256);
    let index: i64 = Connection::open(cx.path())
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE name = 'calls_request'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(index, 0, "the unused index is dropped");
}
