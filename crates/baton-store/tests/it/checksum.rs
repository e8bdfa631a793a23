//! Stored replies carry the sha256 of their text, checked whenever they are read back
//! (issue 23, item 9): a flipped bit stops a resume naming the call.

use baton_store::{Reader, StoreError};
use baton_types::Phase;
use rusqlite::Connection;

use crate::{TestContext, call, conversation, init, request_json, sha256_hex};

#[tokio::test]
async fn issue_23_a_flipped_bit_in_a_stored_reply_stops_the_resume_naming_the_call() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let (episode, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    for turn in 1..=2 {
        let request = request_json(&conversation(turn as usize), 3);
        store
            .record_call(call(episode.id, turn, Phase::Prefix, request))
            .await
            .unwrap();
    }
    drop(store);
    let db = Connection::open(cx.path()).unwrap();
    let stored: String = db
        .query_row(
            "SELECT response_sha256 FROM calls WHERE turn = 2",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        stored,
        sha256_hex("reply 2 (prefix)"),
        "written with the call"
    );
    // one bit of one byte: 'r' (0x72) becomes 's' (0x73)
    db.execute(
        "UPDATE calls SET response_text = 's' || substr(response_text, 2) WHERE turn = 2",
        [],
    )
    .unwrap();
    drop(db);

    let store = cx.store().await;
    let err = store.episode(init("t1", "single(lc)")).await.unwrap_err();
    match &err {
        StoreError::ReplyChecksum {
            episode_id,
            turn,
            phase,
            stored: s,
            actual,
            ..
        } => {
            assert_eq!((*episode_id, *turn, *phase), (episode.id, 2, "prefix"));
            assert_eq!(s, &stored);
            assert_eq!(actual, &sha256_hex("seply 2 (prefix)"));
        }
        other => panic!("expected ReplyChecksum, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&format!("episode {} turn 2 (prefix)", episode.id)),
        "{text}"
    );
    // reading for a report refuses it too, and the stored rows are untouched
    let err = Reader::open(&cx.path())
        .unwrap()
        .calls(episode.id)
        .unwrap_err();
    assert!(
        matches!(err, StoreError::ReplyChecksum { turn: 2, .. }),
        "{err}"
    );
}

#[test]
fn issue_23_migrating_to_version_11_gives_every_stored_reply_its_checksum() {
    let cx = TestContext::new();
    let (calls, episode, ..) = crate::migrate::write_v1(&cx.path());
    let reader = Reader::open(&cx.path()).expect("migrates");
    let db = Connection::open(cx.path()).unwrap();
    let sums: Vec<(String, String)> = db
        .prepare("SELECT response_text, response_sha256 FROM calls ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(sums.len(), calls.len());
    for ((text, sum), c) in sums.iter().zip(&calls) {
        assert_eq!(text, &c.response_text);
        assert_eq!(sum, &sha256_hex(text));
    }
    assert_eq!(reader.calls(episode).unwrap().len(), calls.len());
}
