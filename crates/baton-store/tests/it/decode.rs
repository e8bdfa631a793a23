//! A stored value that does not decode is an error naming its table and column (issue
//! 23, item 8), never a wrapped number or a bare SQLite message.

use baton_store::{Reader, StoreError};
use baton_types::Phase;
use rusqlite::Connection;

use crate::{TestContext, call, conversation, init, request_json};

/// A store with one call of one episode, then `sql` run on the file; the error of
/// reading what `read` reads.
async fn after(sql: &str, read: fn(&Reader, i64) -> StoreError) -> StoreError {
    let cx = TestContext::new();
    let store = cx.store().await;
    let (episode, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    store
        .record_call(call(
            episode.id,
            1,
            Phase::Prefix,
            request_json(&conversation(1), 2),
        ))
        .await
        .unwrap();
    drop(store);
    Connection::open(cx.path())
        .unwrap()
        .execute_batch(sql)
        .unwrap();
    read(&Reader::open(&cx.path()).unwrap(), episode.id)
}

fn calls(r: &Reader, id: i64) -> StoreError {
    r.calls(id).unwrap_err()
}

fn episodes(r: &Reader, _: i64) -> StoreError {
    r.episodes().unwrap_err()
}

fn named(err: &StoreError) -> &str {
    match err {
        StoreError::Decode { what, .. } => what,
        other => panic!("expected a Decode error, got {other}"),
    }
}

#[tokio::test]
async fn issue_23_a_bad_stored_value_names_its_table_and_column() {
    // a negative token count read to be wrapped into 18446744073709551611
    let err = after("UPDATE calls SET uncached_in = -5", calls).await;
    assert_eq!(named(&err), "calls.uncached_in of episode 1");
    assert!(err.to_string().contains("-5 is out of range"), "{err}");
    // text where a number belongs
    let err = after("UPDATE calls SET output = 'many'", calls).await;
    assert_eq!(named(&err), "calls.output of episode 1");
    let err = after("UPDATE calls SET turn = 4294967296", calls).await;
    assert_eq!(named(&err), "calls.turn of episode 1");
    // a column of a joined table names that table
    let err = after("UPDATE tasks SET n_turns = -1", episodes).await;
    assert_eq!(named(&err), "tasks.n_turns");
    let err = after("UPDATE episodes SET replicate = 'one'", episodes).await;
    assert_eq!(named(&err), "episodes.replicate");
}
