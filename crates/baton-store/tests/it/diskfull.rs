//! A full disk loses no paid reply (issue 23, item 5): on a real, small file system
//! (a tmpfs of a few MB, mounted for the test), a reply the store cannot commit is kept
//! in its reserved spool, the store stops taking work, and the next open imports it.

use std::io::Write;
use std::path::{Path, PathBuf};

use baton_store::{NewCall, Reader, Store, StoreError};
use baton_types::Phase;

use crate::{call, conversation, init, meta, request_json, task};

/// Fill the file system of `dir` to the last byte; returns the filler file.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    for chunk in [65536, 4096, 512, 1] {
        let bytes = vec![7u8; chunk];
        while f.write_all(&bytes).and_then(|()| f.sync_data()).is_ok() {}
    }
    path
}

/// A call whose reply is `kb` KiB of text, so that storing it needs new pages.
fn big_call(episode: i64, turn: u32, kb: usize) -> NewCall {
    let mut c = call(
        episode,
        turn,
        Phase::Prefix,
        request_json(&conversation(turn as usize), 9),
    );
    c.response_text = format!("reply {turn}: ")
        + &(0..kb * 1024)
            .map(|i| char::from(b'a' + (i * 7 + turn as usize) as u8 % 26))
            .collect::<String>();
    c
}

#[tokio::test]
#[allow(
    clippy::print_stderr,
    reason = "a skipped disk test must say so loudly"
)]
async fn issue_23_a_full_disk_keeps_every_answered_reply_and_stops_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fs) = baton_fixture::Tmpfs::mount(dir.path(), "3m") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let path = fs.mnt.join("results.sqlite");
    let spool = PathBuf::from(format!("{}-spool", path.display()));
    let store = Store::open(&path).unwrap();
    assert_eq!(
        std::fs::metadata(&spool).unwrap().len(),
        1 << 20,
        "reserved"
    );
    store.init_experiment(meta()).await.unwrap();
    store.upsert_task(task("t1")).await.unwrap();
    let (episode, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    let first = big_call(episode.id, 1, 4);
    store.record_call(first.clone()).await.unwrap();

    let filler = fill(&fs.mnt);
    // two replies answered while the disk is full (two calls in flight)
    let kept: Vec<NewCall> = (2..=3).map(|t| big_call(episode.id, t, 150)).collect();
    for c in &kept {
        let err = store.record_call(c.clone()).await.unwrap_err();
        match &err {
            StoreError::WriteFailed { call, kept, .. } => {
                assert_eq!(
                    call,
                    &format!("episode {} turn {} (prefix)", episode.id, c.turn)
                );
                assert!(kept.contains("results.sqlite-spool"), "{kept}");
            }
            other => panic!("expected WriteFailed, got {other}"),
        }
    }
    assert!(store.failure().is_some(), "the store stopped");
    // a read is refused too: only a paid record is still taken (and kept)
    let err = store.calls(episode.id).await.unwrap_err();
    assert!(matches!(err, StoreError::Stopped { .. }), "{err}");
    drop(store);
    let spooled = std::fs::read(&spool).unwrap();
    let used = spooled.iter().position(|b| *b == 0).unwrap();
    assert_eq!(spooled[..used].iter().filter(|b| **b == b'\n').count(), 2);

    // space is freed; the next open imports both replies, exactly once
    std::fs::remove_file(filler).unwrap();
    let store = Store::open(&path).unwrap();
    let back: Vec<NewCall> = store
        .calls(episode.id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.call)
        .collect();
    assert_eq!(back, [vec![first], kept.clone()].concat());
    drop(store);
    let after = std::fs::read(&spool).unwrap();
    assert_eq!(after.len(), 1 << 20, "the reserve is kept");
    assert!(after.iter().all(|b| *b == 0), "and zeroed once imported");

    // an import whose commit landed but whose zeroing did not is not applied twice
    std::fs::write(&spool, &spooled).unwrap();
    let store = Store::open(&path).unwrap();
    assert_eq!(store.calls(episode.id).await.unwrap().len(), 3);
    drop(store);
    assert_eq!(
        Reader::open(&path)
            .unwrap()
            .calls(episode.id)
            .unwrap()
            .len(),
        3
    );
}
