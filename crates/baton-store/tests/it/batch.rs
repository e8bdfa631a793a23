//! The batch journal: a submitted batch is on disk when the call returns, reads back
//! whole (for its model only), is marked finished once, and a repeated id is refused.

use baton_store::{NewBatch, Reader};

use crate::TestContext;

fn batch(id: &str, model: &str, ids: &[&str]) -> NewBatch {
    NewBatch {
        batch_id: id.into(),
        model: model.into(),
        api: "openai-chat".into(),
        custom_ids: ids.iter().map(|s| s.to_string()).collect(),
        gather_ms: 1500,
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
