//! A run whose disk fills up loses no answered reply: the store keeps what it cannot
//! commit in its spool and stops the run before its next call; once there is room, the
//! resume imports the spool and pays for no reply twice.
// See: issue 23 (30 paid replies lost across two full-disk events on a 3 MB tmpfs).

use std::path::{Path, PathBuf};
use std::process::Command;

use rusqlite::Connection;

use crate::money::SimServer;
use crate::{baton, stderr};

/// A tmpfs of `size` mounted in a temp folder (root only), unmounted on drop.
struct Tmpfs {
    _dir: tempfile::TempDir,
    mnt: PathBuf,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("small");
        std::fs::create_dir(&mnt).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&mnt)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs { _dir: dir, mnt })
    }

    /// Bytes free.
    fn available(&self) -> u64 {
        let out = Command::new("df")
            .args(["-B1", "--output=avail"])
            .arg(&self.mnt)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
    }
}

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
    let Some(fs) = Tmpfs::mount("32m") else {
        baton_fixture::skip("cannot mount a tmpfs here (not root)");
        return;
    };
    let server = SimServer::start(&["--latency-ms", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let model = |id: &str| {
        format!(
            "[models.{id}]\nmodel = \"openai-compatible/{id}\"\nprice = \"sim/{id}\"\nbase_url = \"{}\"\nconcurrency = 4\n",
            server.base_url
        )
    };
    std::fs::write(
        dir.path().join("exp.toml"),
        format!(
            "name = \"full\"\ndataset = \"sample\"\nlimit = 2\nreplicates = 2\nseed = 2\nconcurrency = 4\ninterfaces = [\"raw\", \"traj_drop\"]\n[chat]\nfamilies = [\"math\", \"actions\", \"data2text\"]\n{}{}[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n",
            model("lc"),
            model("hc")
        ),
    )
    .unwrap();
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
