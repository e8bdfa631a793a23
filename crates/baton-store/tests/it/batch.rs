//! The batch journal: a submitted batch is on disk when the call returns, reads back
//! whole (for its model only), is marked finished once, and a repeated id is refused.

use baton_store::{NewBatch, NewSubmission, Reader};
use baton_types::{Cost, Phase};

use crate::{TestContext, call, init, request_json};

fn batch(id: &str, model: &str, ids: &[&str]) -> NewBatch {
    NewBatch {
        batch_id: id.into(),
        model: model.into(),
        api: "openai-chat".into(),
        custom_ids: ids.iter().map(|s| s.to_string()).collect(),
        gather_ms: 1500,
        // not the default, so a read that drops the column fails
        retry: "direct".into(),
        submission: None,
    }
}

#[tokio::test]
async fn batches_are_journaled_per_model_and_survive_a_reopen() {
    let cx = TestContext::new();
    let store = cx.store().await;
    store
        .batch_submitted(batch("batch_1", "lc", &["a-0", "b-0"]))
        .await
        .unwrap();
    store
        .batch_submitted(batch("batch_2", "hc", &["c-0"]))
        .await
        .unwrap();
    store
        .batch_submitted(batch("batch_3", "lc", &["a-1"]))
        .await
        .unwrap();
    let err = store
        .batch_submitted(batch("batch_1", "lc", &["x-0"]))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("UNIQUE"), "{err}");
    store.batch_finished("batch_1".into()).await.unwrap();

    let lc = store.batches("lc".into()).await.unwrap();
    assert_eq!(lc.len(), 2);
    assert_eq!(lc[0].batch, batch("batch_1", "lc", &["a-0", "b-0"]));
    assert!(lc[0].finished_at.is_some());
    assert_eq!(lc[1].batch.batch_id, "batch_3");
    assert_eq!(lc[1].finished_at, None);
    drop(store);

    // Another process reads what the first recorded.
    let all = Reader::open(&cx.path()).unwrap().batches().unwrap();
    let ids: Vec<&str> = all.iter().map(|b| b.batch.batch_id.as_str()).collect();
    assert_eq!(ids, ["batch_1", "batch_2", "batch_3"]);
    assert_eq!(all[1].batch.custom_ids, ["c-0"]);
    assert_eq!(all[1].batch.gather_ms, 1500);
}

fn submission(token: &str, model: &str, ids: &[&str]) -> NewSubmission {
    NewSubmission {
        token: token.into(),
        model: model.into(),
        api: "anthropic".into(),
        custom_ids: ids.iter().map(|s| s.to_string()).collect(),
    }
}

/// A submission is in doubt from its journaling until a batch settles it (in the same
/// transaction as the batch's own row) or it is recorded as not created; it settles
/// once, and what is in doubt survives a reopen.
#[tokio::test]
async fn submissions_stay_in_doubt_until_settled_once() {
    let cx = TestContext::new();
    let store = cx.store().await;
    for (token, model) in [("t1", "lc"), ("t2", "lc"), ("t3", "lc"), ("t4", "hc")] {
        store
            .batch_submitting(submission(token, model, &["a-0", "b-0"]))
            .await
            .unwrap();
    }
    let mut settled = batch("batch_1", "lc", &["a-0", "b-0"]);
    settled.submission = Some("t1".into());
    store.batch_submitted(settled.clone()).await.unwrap();
    store.batch_not_created("t2".into()).await.unwrap();
    for again in [
        store.batch_not_created("t2".into()).await,
        store.batch_not_created("nobody".into()).await,
    ] {
        let err = again.unwrap_err().to_string();
        assert!(err.contains("already settled"), "{err}");
    }
    // Settling a settled submission rolls the batch's row back with it.
    let mut twice = batch("batch_2", "lc", &["a-0"]);
    twice.submission = Some("t1".into());
    assert!(store.batch_submitted(twice).await.is_err());
    drop(store);

    let store = cx.store().await;
    let doubt = store.batches_in_doubt("lc".into()).await.unwrap();
    assert_eq!(doubt.len(), 1);
    assert_eq!(doubt[0].submission, submission("t3", "lc", &["a-0", "b-0"]));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!((now - doubt[0].started_unix).abs() < 60);
    assert_eq!(store.batches_in_doubt("hc".into()).await.unwrap().len(), 1);
    let all = store.all_batches().await.unwrap();
    assert_eq!(all.len(), 1, "batch_2 was rolled back");
    assert_eq!(all[0].batch, settled);
}

#[tokio::test]
async fn a_batched_call_keeps_its_batch_and_direct_cost_and_the_spend_counts_the_saving() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let (e, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    store
        .batch_submitted(batch("batch_9", "lc", &["x-0", "x-1", "y-0"]))
        .await
        .unwrap();
    let mut c = call(e.id, 1, Phase::Prefix, request_json(&[], 1));
    c.batch_id = Some("batch_9".into());
    c.batch_item = Some("x-1".into());
    c.cost_direct = Some(Cost(c.cost.0 * 2));
    store.record_call(c.clone()).await.unwrap();
    assert_eq!(store.calls(e.id).await.unwrap()[0].call, c);
    // The journal knows which of the unfinished batch's items are stored.
    let lc = store.batches("lc".into()).await.unwrap();
    assert_eq!(lc[0].stored, ["x-1"]);
    store.batch_finished("batch_9".into()).await.unwrap();
    assert!(
        store.batches("lc".into()).await.unwrap()[0]
            .stored
            .is_empty()
    );
    let spend = Reader::open(&cx.path()).unwrap().spend().unwrap();
    assert_eq!(
        (spend.batched_attempts, spend.saved_by_batching),
        (1, c.cost)
    );
}
