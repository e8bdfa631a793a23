//! Files of every shipped schema version open, migrate and read back in full.

use baton_store::schema::{MIGRATIONS, SCHEMA_VERSION};
use baton_store::{Reader, Store, StoreError};
use baton_types::{Cost, EpisodeStatus, Phase};
use rusqlite::{Connection, params};

use crate::{TestContext, call, conversation, meta, request_json, task};

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

/// A version-1 file as baton 0.1 wrote it: its DDL, and rows inserted with its SQL.
fn write_v1(path: &std::path::Path) -> (Vec<baton_store::NewCall>, i64) {
    let db = Connection::open(path).unwrap();
    db.execute_batch(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO meta VALUES ('schema_version', '1');",
    )
    .unwrap();
    db.execute_batch(MIGRATIONS[0]).unwrap();
    let m = meta();
    db.execute(
        "INSERT INTO experiment (id, name, spec_toml, spec_sha256, price_card_sha256,
         eval_profile, eval_version, baton_version, git_revision, simulated, created_at)
         VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, '2026-11-30T10:00:00.000Z')",
        params![
            m.name,
            m.spec_toml,
            m.spec_sha256,
            m.price_card_sha256,
            m.eval_profile,
            m.eval_version,
            m.baton_version,
            m.git_revision,
            m.simulated
        ],
    )
    .unwrap();
    let t = task("t1");
    db.execute(
        "INSERT INTO tasks VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            t.task_id,
            t.family.as_str(),
            t.n_turns,
            t.schedule_sha256,
            t.sample_json
        ],
    )
    .unwrap();
    db.execute(
        "INSERT INTO episodes (id, task_id, cell_key, cell_json, replicate, seed, k, forked_from,
         schedule_sha256, status, final_response, extracted, score, is_correct, eval_error,
         eval_details, reason, cost_attributed, cost_paid, updated_at)
         VALUES (1, 't1', 'single(lc)', '{}', 0, 5, NULL, NULL, ?1, 'scored', 'Answer: 6', '6',
         1.0, NULL, NULL, '{\"k\":1}', NULL, 300, 300, '2026-11-30T10:00:01.000Z')",
        [t.schedule_sha256],
    )
    .unwrap();
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
        db.execute(
            "INSERT INTO calls (episode_id, turn, phase, model, model_served, request_json,
             request_sha256, response_text, raw_response, uncached_in, cache_read, cache_write_5m,
             cache_write_1h, output, reasoning, cost, latency_ms, attempts, finish_reason, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
             ?18, ?19, '2026-11-30T10:00:00.500Z')",
            params![
                c.episode_id,
                c.turn,
                c.phase.as_str(),
                c.model,
                c.model_served,
                c.request_json,
                c.request_sha256,
                c.response_text,
                c.raw_response,
                c.usage.uncached_in as i64,
                c.usage.cache_read as i64,
                c.usage.cache_write_5m as i64,
                c.usage.cache_write_1h as i64,
                c.usage.output as i64,
                c.usage.reasoning as i64,
                c.cost.0,
                c.latency_ms as i64,
                c.attempts,
                c.finish_reason
            ],
        )
        .unwrap();
    }
    (calls, 1)
}

#[test]
fn a_version_1_file_migrates_and_loses_nothing() {
    let cx = TestContext::new();
    let (calls, episode) = write_v1(&cx.path());
    let reader = Reader::open(&cx.path()).expect("an old file opens for reading");
    assert_eq!(version(&cx.path()), SCHEMA_VERSION);
    assert_eq!(reader.experiment().unwrap().meta, meta());
    assert_eq!(
        reader.experiment().unwrap().created_at,
        "2026-11-30T10:00:00.000Z"
    );
    assert_eq!(reader.tasks().unwrap(), vec![task("t1")]);
    let e = &reader.episodes().unwrap()[0];
    assert_eq!(e.status(), EpisodeStatus::Scored);
    assert_eq!(e.score(), Some(1.0));
    assert_eq!(
        e.outcome.verdict.as_ref().unwrap().details,
        serde_json::json!({"k": 1})
    );
    assert_eq!(e.outcome.cost_paid, Cost(300));
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
    let (mut calls, episode) = write_v1(&cx.path());
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
}

#[tokio::test]
async fn a_new_file_starts_at_the_current_version() {
    let cx = TestContext::new();
    // an empty file counts as new too
    std::fs::write(cx.path(), b"").unwrap();
    let store = cx.store().await;
    drop(store);
    assert_eq!(version(&cx.path()), SCHEMA_VERSION);
    assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
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
