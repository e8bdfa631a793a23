//! A run whose disk fills up loses no answered reply: the store keeps what it cannot
//! commit in its spool and stops the run before its next call; once there is room, the
//! resume imports the spool and pays for no reply twice.
// See: issue 23 (30 paid replies lost across two full-disk events on a 3 MB tmpfs).

use std::path::Path;

use rusqlite::Connection;

use crate::support::{SimServer, http_pair, write_experiment};
use crate::{baton, stderr};

fn billed(db: &Path) -> i64 {
    Connection::open(db)
        .and_then(|c| {
            c.query_row(
                "SELECT (SELECT count(*) FROM calls) + (SELECT count(*) FROM attempts)",
                [],
                |r| r.get(0),
            )
        })
        .unwrap()
}

#[test]
fn issue_23_a_full_disk_loses_no_answered_reply_and_the_resume_pays_none_twice() {
    // room for the whole run once the filler is gone; the filler leaves it a little
    let mount_dir = tempfile::tempdir().unwrap();
    let Some(fs) = baton_fixture::Tmpfs::mount(mount_dir.path(), "32m") else {
        baton_fixture::skip("cannot mount a tmpfs here (not root)");
        return;
    };
    let server = SimServer::start(&["--latency-ms", "2"]);
    let dir = tempfile::tempdir().unwrap();
    write_experiment(
        dir.path(),
        &format!(
            "name = \"full\"\ndataset = \"sample\"\nlimit = 2\nreplicates = 2\nseed = 2\nconcurrency = 4\ninterfaces = [\"raw\", \"traj_drop\"]\n[chat]\nfamilies = [\"math\", \"actions\", \"data2text\"]\n{}",
            http_pair(&server.base_url, "concurrency = 4\n")
        ),
    );
    let out = fs.mnt.join("out");
    let out_arg = out.display().to_string();
    // the store's reserve (its spool) is taken at its first open; leave a little more
    // than that, so the database fills the disk part-way through the run
    let filler = fs.mnt.join("filler");
    let room = 1_300_000;
    let fill = fs.available().saturating_sub(room);
    std::fs::write(&filler, vec![7u8; fill as usize]).unwrap();

    let first = baton(
        dir.path(),
        &["run", "exp.toml", "--out", &out_arg, "--quiet"],
    );
    let err = stderr(&first);
    assert!(!err.contains("panicked"), "{err}");
    assert_ne!(first.status.code(), Some(0), "the disk filled: {err}");
    assert!(
        err.contains("No space") || err.contains("full") || err.contains("spool"),
        "{err}"
    );
    let answered_then = server.stats()["ok_responses"].as_i64().unwrap();

    // room again: the resume imports what the spool kept, then finishes
    std::fs::remove_file(&filler).unwrap();
    let resumed = baton(
        dir.path(),
        &["run", "exp.toml", "--out", &out_arg, "--quiet", "--resume"],
    );
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let db = out.join("results.sqlite");
    let answered = server.stats()["ok_responses"].as_i64().unwrap();
    assert!(
        answered > answered_then,
        "the resume made the rest of the calls"
    );
    assert_eq!(
        answered,
        billed(&db),
        "every answered reply is stored, and none was paid for twice"
    );
    let integrity: String = Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}
