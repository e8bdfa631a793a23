//! A store file that is not a baton store is refused, never started afresh, and left
//! byte for byte as it was (issue 23, item 4).

use std::path::Path;

use baton_store::{Reader, Store, StoreError};
use rusqlite::Connection;

use crate::{TestContext, call, conversation, init, request_json, sha256_hex};

/// The file's bytes, hashed, and which of its SQLite side files exist.
fn fingerprint(path: &Path) -> (String, Vec<bool>) {
    let bytes = std::fs::read(path).expect("the file is still there");
    let sides = ["-wal", "-shm", "-journal", ".new"]
        .iter()
        .map(|s| Path::new(&format!("{}{s}", path.display())).exists())
        .collect();
    (sha256_hex(&String::from_utf8_lossy(&bytes)), sides)
}

/// Opening `path` for writing and for reading are both `NotAStore` saying `why`, and
/// the file is unchanged.
fn refused(path: &Path, why: &str) {
    let before = fingerprint(path);
    let len = std::fs::metadata(path).unwrap().len();
    for err in [
        Store::open(path).map(drop).unwrap_err(),
        Reader::open(path).map(drop).unwrap_err(),
    ] {
        match &err {
            StoreError::NotAStore { path: p, why: w } => {
                assert_eq!(p, path);
                assert!(w.contains(why), "{w:?} should say {why:?}");
            }
            other => panic!("expected NotAStore, got {other}"),
        }
        let text = err.to_string();
        assert!(
            text.contains(&path.display().to_string()) && text.contains("not a baton store"),
            "{text}"
        );
    }
    assert_eq!(fingerprint(path), before, "nothing in the file changed");
    assert_eq!(std::fs::metadata(path).unwrap().len(), len);
}

#[test]
fn issue_23_a_zero_length_store_is_refused_not_started_afresh() {
    let cx = TestContext::new();
    std::fs::write(cx.path(), b"").unwrap();
    refused(&cx.path(), "it is empty (0 bytes)");
}

#[test]
fn issue_23_a_file_of_garbage_is_refused_unchanged() {
    let cx = TestContext::new();
    std::fs::write(cx.path(), "not a database\n".repeat(300)).unwrap();
    refused(&cx.path(), "it is not a SQLite database (4500 bytes)");
}

#[test]
fn issue_23_a_foreign_sqlite_database_is_refused_unchanged() {
    let cx = TestContext::new();
    let conn = Connection::open(cx.path()).unwrap();
    conn.execute_batch(
        "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
         INSERT INTO notes (body) VALUES ('mine');
         CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    )
    .unwrap();
    drop(conn);
    refused(
        &cx.path(),
        "without a baton schema version; its tables: meta, notes",
    );
    // and a SQLite file with no tables at all is not a store either
    let cx = TestContext::new();
    let conn = Connection::open(cx.path()).unwrap();
    conn.execute_batch("CREATE TABLE t (x); DROP TABLE t; VACUUM;")
        .unwrap();
    drop(conn);
    refused(&cx.path(), "a SQLite database with no tables");
}

#[tokio::test]
async fn a_new_store_appears_whole_and_reopens_with_what_it_stored() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let (episode, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    let request = request_json(&conversation(1), 1);
    store
        .record_call(call(episode.id, 1, baton_types::Phase::Prefix, request))
        .await
        .unwrap();
    drop(store);
    assert!(
        !Path::new(&format!("{}.new", cx.path().display())).exists(),
        "the temporary file was renamed into place"
    );
    let reader = Reader::open(&cx.path()).unwrap();
    assert_eq!(reader.calls(episode.id).unwrap().len(), 1);
    drop(reader);
    let store = Store::open(&cx.path()).unwrap();
    assert_eq!(store.calls(episode.id).await.unwrap().len(), 1);
}

#[test]
fn a_missing_store_whose_log_remains_is_not_started_afresh() {
    let cx = TestContext::new();
    let wal = std::path::PathBuf::from(format!("{}-wal", cx.path().display()));
    std::fs::write(&wal, b"frames of the store that was here").unwrap();
    let err = Store::open(&cx.path()).map(drop).unwrap_err();
    assert!(
        matches!(&err, StoreError::NotAStore { why, .. } if why.contains("write-ahead log")),
        "{err}"
    );
    assert!(!cx.path().exists(), "no store was made");
    assert_eq!(
        std::fs::read(&wal).unwrap(),
        b"frames of the store that was here"
    );
}
