//! What the store refuses, and what it reports instead of guessing.

use baton_store::{Reader, StoreError};
use baton_types::Phase;
use rusqlite::Connection;

use crate::{TestContext, call, conversation, init, meta, request_json, task};

#[tokio::test]
async fn another_experiment_is_refused() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let mut other = meta();
    other.spec_sha256 = "e".repeat(64);
    let err = store.init_experiment(other).await.unwrap_err();
    assert!(matches!(err, StoreError::SpecMismatch { .. }), "{err}");
    // the same spec is accepted again
    store.init_experiment(meta()).await.unwrap();
}

#[tokio::test]
async fn a_schedule_mismatch_is_refused_for_tasks_and_episodes() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let (e, _) = store.episode(init("t1", "single(lc)")).await.unwrap();

    let mut changed = task("t1");
    changed.schedule_sha256 = "f".repeat(64);
    let err = store.upsert_task(changed).await.unwrap_err();
    assert!(
        matches!(&err, StoreError::ScheduleMismatch { task_id, .. } if task_id == "t1"),
        "{err}"
    );
    assert!(err.to_string().contains("\"t1\""), "{err}");

    let mut init2 = init("t1", "single(lc)");
    init2.schedule_sha256 = "f".repeat(64);
    let err = store.episode(init2).await.unwrap_err();
    assert!(matches!(err, StoreError::ScheduleMismatch { .. }), "{err}");
    // nothing was changed by the refusals
    let reader = Reader::open(&cx.path()).unwrap();
    assert_eq!(reader.tasks().unwrap(), vec![task("t1")]);
    assert_eq!(reader.episodes().unwrap()[0].init, init("t1", "single(lc)"));
    assert_eq!(reader.episodes().unwrap()[0].id, e.id);
}

#[tokio::test]
async fn a_call_whose_hash_is_not_its_request_is_not_stored() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let (e, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    let mut c = call(e.id, 1, Phase::Prefix, request_json(&conversation(1), 1));
    c.request_sha256 = "0".repeat(64);
    let err = store.record_call(c).await.unwrap_err();
    assert!(
        matches!(err, StoreError::RequestHash { turn: 1, .. }),
        "{err}"
    );
    assert_eq!(Reader::open(&cx.path()).unwrap().call_count().unwrap(), 0);
}

async fn one_call(cx: &TestContext) -> i64 {
    let store = cx.store().await;
    let (e, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    let c = call(e.id, 1, Phase::Prefix, request_json(&conversation(2), 1));
    store.record_call(c).await.unwrap();
    e.id
}

#[tokio::test]
async fn an_unknown_phase_is_an_error_not_a_suffix() {
    let cx = TestContext::new();
    let episode = one_call(&cx).await;
    Connection::open(cx.path())
        .unwrap()
        .execute("UPDATE calls SET phase = 'Suffix'", [])
        .unwrap();
    let reader = Reader::open(&cx.path()).unwrap();
    let err = reader.calls(episode).unwrap_err();
    assert!(
        matches!(&err, StoreError::Decode { what, .. } if what.contains("calls.phase of call 1")),
        "{err}"
    );
    assert!(err.to_string().contains("\"Suffix\""), "{err}");
    assert!(reader.paid_by_phase().is_err());
}

#[tokio::test]
async fn a_request_that_no_longer_matches_its_sha256_is_an_error() {
    let cx = TestContext::new();
    let episode = one_call(&cx).await;
    Connection::open(cx.path())
        .unwrap()
        .execute(
            "UPDATE messages SET json = replace(json, 'shard 1', 'shard X')",
            [],
        )
        .unwrap();
    let err = Reader::open(&cx.path())
        .unwrap()
        .calls(episode)
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Decode { what, message, .. }
            if what == "the request of call 1" && message.contains("sha256")),
        "{err}"
    );
}

#[tokio::test]
async fn a_reader_needs_an_existing_baton_store() {
    let cx = TestContext::new();
    assert!(matches!(
        Reader::open(&cx.path()).map(drop).unwrap_err(),
        StoreError::Sqlite { .. }
    ));
    assert!(!cx.path().exists(), "a reader creates nothing");
    Connection::open(cx.path())
        .unwrap()
        .execute_batch("CREATE TABLE other (x)")
        .unwrap();
    let err = Reader::open(&cx.path()).map(drop).unwrap_err();
    assert!(matches!(err, StoreError::NotAStore { .. }), "{err}");
}
