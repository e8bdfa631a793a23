//! Money round 3 in the store: a store made while its disk filled runs once space is
//! freed, a FIFO or a directory is refused at once, a reply too large for the spool is
//! kept as a billed attempt, and a batch whose items are all stored is finished.
// See: issue 32

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use baton_store::{NewBatch, Reader, Store, StoreError};
use baton_types::Phase;

use crate::{call, conversation, init, meta, request_json, task};

/// Fill the file system of `dir` to the last byte, then free `room` bytes of it;
/// returns the filler file.
fn fill_but(dir: &Path, room: u64) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    for chunk in [65536, 4096, 512, 1] {
        let bytes = vec![7u8; chunk];
        while f.write_all(&bytes).and_then(|()| f.sync_data()).is_ok() {}
    }
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(room)).unwrap();
    f.sync_all().unwrap();
    path
}

/// Use a store as a run does: experiment, task, episode, one call; returns the call's
/// row id.
async fn use_store(path: &Path) -> Result<i64, StoreError> {
    let store = Store::open(path)?;
    store.init_experiment(meta()).await?;
    store.upsert_task(task("t1")).await?;
    let (episode, stored) = store.episode(init("t1", "single(lc)")).await?;
    if let Some(done) = stored.first() {
        return Ok(done.id);
    }
    let c = call(
        episode.id,
        1,
        Phase::Prefix,
        request_json(&conversation(1), 9),
    );
    store.record_call(c).await
}

#[tokio::test]
#[allow(
    clippy::print_stderr,
    reason = "a skipped disk test must say so loudly, and the test prints what it measured"
)]
async fn issue_32_a_store_made_on_a_disk_that_filled_at_creation_runs_once_space_is_freed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fs) = baton_fixture::Tmpfs::mount(dir.path(), "4m") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let mut refused = 0;
    for room in [
        0u64,
        4 << 10,
        16 << 10,
        48 << 10,
        96 << 10,
        160 << 10,
        256 << 10,
        400 << 10,
    ] {
        let out = fs.mnt.join(format!("out-{room}"));
        let path = out.join("results.sqlite");
        let filler = fill_but(&fs.mnt, room);
        // the disk fills while the store is created (or just after)
        let first = use_store(&path).await;
        refused += usize::from(first.is_err());
        std::fs::remove_file(&filler).unwrap();
        // space again: the folder is usable, whatever the first open left
        let again = use_store(&path).await;
        assert!(
            again.is_ok(),
            "room {room}: first {first:?}, then {again:?}"
        );
        let reader = Reader::open(&path).unwrap();
        assert!(reader.call_count().unwrap() >= 1, "room {room}");
        drop(reader);
        std::fs::remove_dir_all(&out).unwrap();
    }
    eprintln!("the disk refused the first use at {refused} of 8 sizes");
    assert!(refused >= 3, "the disk filled during creation: {refused}");
}

#[test]
fn issue_32_a_fifo_or_a_directory_is_refused_as_a_store_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("results.sqlite");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        let t0 = Instant::now();
        let err = Reader::open(&fifo).err().unwrap().to_string();
        assert!(
            err.contains("FIFO") && err.contains("not a baton store"),
            "{err}"
        );
        let err = Store::open(&fifo).unwrap_err().to_string();
        assert!(err.contains("FIFO"), "{err}");
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        std::fs::remove_file(&fifo).unwrap();
    }
    std::fs::create_dir(&fifo).unwrap();
    for err in [
        Reader::open(&fifo).err().unwrap().to_string(),
        Store::open(&fifo).unwrap_err().to_string(),
    ] {
        assert!(err.contains("it is a directory"), "{err}");
        assert!(!err.contains("disk I/O error"), "{err}");
    }
}

#[tokio::test]
#[allow(
    clippy::print_stderr,
    reason = "a skipped disk test must say so loudly"
)]
async fn issue_32_a_reply_too_large_for_the_spool_is_kept_as_a_billed_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fs) = baton_fixture::Tmpfs::mount(dir.path(), "4m") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let path = fs.mnt.join("results.sqlite");
    let store = Store::open(&path).unwrap();
    store.init_experiment(meta()).await.unwrap();
    store.upsert_task(task("t1")).await.unwrap();
    let (episode, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    let filler = fill_but(&fs.mnt, 0);
    // 1.5 MiB of reply: more than the spool's whole reserve
    let mut big = call(
        episode.id,
        1,
        Phase::Prefix,
        request_json(&conversation(1), 9),
    );
    big.response_text = "r".repeat(3 << 19);
    let cost = big.cost;
    match store.record_call(big).await.unwrap_err() {
        StoreError::WriteFailed { spooled, kept, .. } => {
            assert!(spooled, "{kept}");
            assert!(kept.contains("without its text"), "{kept}");
        }
        other => panic!("expected WriteFailed, got {other}"),
    }
    assert!(store.failure().is_some());
    drop(store);
    std::fs::remove_file(&filler).unwrap();
    // the next open imports it: counted and priced, as an attempt
    let store = Store::open(&path).unwrap();
    drop(store);
    let spend = Reader::open(&path).unwrap().spend().unwrap();
    assert_eq!((spend.billed_attempts, spend.unusable_attempts), (1, 1));
    assert_eq!(spend.paid, cost);
    let spool = std::fs::read(format!("{}-spool", path.display())).unwrap();
    assert!(spool.iter().all(|b| *b == 0), "imported, then zeroed");
}

#[tokio::test]
async fn issue_32_a_batch_whose_items_are_all_stored_is_finished() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let store = Store::open(&path).unwrap();
    store.init_experiment(meta()).await.unwrap();
    store.upsert_task(task("t1")).await.unwrap();
    let (episode, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    store
        .batch_submitted(NewBatch {
            batch_id: "batch_late".into(),
            model: "lc".into(),
            api: "openai-chat".into(),
            custom_ids: vec!["a".into(), "b".into()],
            gather_ms: 10,
            retry: "batch".into(),
            submission: None,
        })
        .await
        .unwrap();
    for (turn, item) in [(1, "a"), (2, "b")] {
        let mut c = call(
            episode.id,
            turn,
            Phase::Prefix,
            request_json(&conversation(turn as usize), 9),
        );
        c.batch_id = Some("batch_late".into());
        c.batch_item = Some(item.into());
        store.record_call(c).await.unwrap();
        let batches = Reader::open(&path).unwrap().batches().unwrap();
        assert_eq!(
            batches[0].finished_at.is_some(),
            item == "b",
            "finished once both items are stored"
        );
        assert_eq!(batches[0].collected(), item == "b");
    }
}

#[tokio::test]
async fn issue_32_claims_grow_the_spool_before_a_call_and_a_full_disk_refuses_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let spool = PathBuf::from(format!("{}-spool", path.display()));
    let store = Store::open(&path).unwrap();
    let reserved = std::fs::metadata(&spool).unwrap().len();
    assert_eq!(reserved, 1 << 20);
    // claims that fit the reserve (less its tail) take no room
    let small = store.claim_spool(100 << 10).unwrap();
    assert_eq!(std::fs::metadata(&spool).unwrap().len(), reserved);
    // four calls of 600 KB in flight: the reserve grows to hold them all, and its tail,
    // rounded up to whole reserves (2,816 KB: 3 MB)
    let big: Vec<_> = (0..4)
        .map(|_| store.claim_spool(600 << 10).unwrap())
        .collect();
    let grown = std::fs::metadata(&spool).unwrap().len();
    assert_eq!(grown, 3 << 20);
    // a claim that still fits the grown reserve takes no room
    let fits = store.claim_spool(200 << 10).unwrap();
    assert_eq!(std::fs::metadata(&spool).unwrap().len(), grown);
    drop(fits);
    drop(big);
    drop(small);
    // released claims leave the room for the next calls: no further growth
    let again: Vec<_> = (0..4)
        .map(|_| store.claim_spool(600 << 10).unwrap())
        .collect();
    assert_eq!(std::fs::metadata(&spool).unwrap().len(), grown);
    drop(again);
}

#[tokio::test]
#[allow(
    clippy::print_stderr,
    reason = "a skipped disk test must say so loudly"
)]
async fn issue_32_a_call_whose_spool_room_cannot_be_had_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(fs) = baton_fixture::Tmpfs::mount(dir.path(), "4m") else {
        eprintln!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let path = fs.mnt.join("results.sqlite");
    let store = Store::open(&path).unwrap();
    let filler = fill_but(&fs.mnt, 0);
    let err = store.claim_spool(2 << 20).unwrap_err();
    assert!(
        matches!(&err, StoreError::SpoolFull { bytes, .. } if *bytes == 2 << 20),
        "{err}"
    );
    assert!(err.to_string().contains("was not sent"), "{err}");
    // a failed growth leaves the reserve as it was, and its records readable
    let spool = PathBuf::from(format!("{}-spool", path.display()));
    assert_eq!(std::fs::metadata(&spool).unwrap().len(), 1 << 20);
    std::fs::remove_file(&filler).unwrap();
    assert!(store.claim_spool(2 << 20).is_ok());
}
