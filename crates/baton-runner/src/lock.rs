//! One writer per results folder: an exclusive OS lock on the folder itself, and on
//! `<out>/baton.lock`.
//!
//! Both are the operating system's advisory file lock (`flock` on Linux, through
//! `std::fs::File::try_lock`, so no crate is needed), taken on descriptors held open for
//! as long as the [`FolderLock`] lives and released by the kernel when the process ends,
//! however it ends: a `kill -9` leaves no stale lock behind.
//!
//! The folder's own lock is the one that counts: a lock on `baton.lock` alone is a lock
//! on one inode, so deleting the file during a run let the next run create a new
//! `baton.lock`, lock that, and write beside the first (9 paid replies were lost that
//! way). The folder cannot be replaced under a run without taking its store with it.
//! `baton.lock` is still locked too, so a run of an older baton (which locks only the
//! file) and this one exclude each other, and it holds the pid of the process that
//! holds the lock, so a refused run can say who is writing.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::RunError;

/// The lock file's name inside a results folder.
pub const LOCK_FILE: &str = "baton.lock";

/// A held lock on a results folder.
#[derive(Debug)]
pub(crate) struct FolderLock {
    /// The folder, open and locked (none where a folder cannot be locked).
    _dir: Option<File>,
    /// `baton.lock`, open and locked.
    _file: File,
}

impl FolderLock {
    /// Take the lock on `dir` (creating it), or fail at once naming the lock file and
    /// the process that holds it.
    pub fn acquire(dir: &Path) -> Result<FolderLock, RunError> {
        let path = dir.join(LOCK_FILE);
        let io = |e: std::io::Error| RunError::Lock {
            path: path.clone(),
            message: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let dir_lock = lock_folder(dir).map_err(|e| match e {
            TryLockError::WouldBlock => busy(&path),
            TryLockError::Error(e) => RunError::Lock {
                path: dir.to_path_buf(),
                message: e.to_string(),
            },
        })?;
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {
                file.set_len(0).map_err(io)?;
                file.seek(SeekFrom::Start(0)).map_err(io)?;
                writeln!(file, "{}", std::process::id()).map_err(io)?;
                file.flush().map_err(io)?;
                Ok(FolderLock {
                    _dir: dir_lock,
                    _file: file,
                })
            }
            Err(TryLockError::WouldBlock) => Err(busy(&path)),
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }
}

/// Lock the folder itself through a read-only descriptor of it. Where a folder cannot
/// be opened or locked (not a Unix system, or a file system without `flock` on
/// folders), the lock file's lock stands alone, with a warning.
fn lock_folder(dir: &Path) -> Result<Option<File>, TryLockError> {
    if !cfg!(unix) {
        return Ok(None);
    }
    let file = match File::open(dir) {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(folder = %dir.display(), "cannot open the results folder to lock it ({e}); only {LOCK_FILE} is locked");
            return Ok(None);
        }
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
        Err(TryLockError::Error(e)) => {
            tracing::warn!(folder = %dir.display(), "cannot lock the results folder ({e}); only {LOCK_FILE} is locked");
            Ok(None)
        }
    }
}

/// The refusal of a run on a folder another process holds, naming it from the lock
/// file when that still says (the file is read, never created, here).
fn busy(path: &Path) -> RunError {
    let mut holder = String::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.read_to_string(&mut holder);
    }
    RunError::Busy {
        lock: path.to_path_buf(),
        holder: holder_text(&holder),
    }
}

fn holder_text(contents: &str) -> String {
    match contents.trim().parse::<u32>() {
        Ok(pid) => format!("process {pid}"),
        Err(_) => "another process".to_string(),
    }
}

/// The lock file of a results folder.
pub fn lock_path(dir: &Path) -> PathBuf {
    dir.join(LOCK_FILE)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    /// Whether another process (util-linux `flock`) can take `path`'s lock right now.
    fn free_for_another_process(path: &Path) -> bool {
        let status = Command::new("flock")
            .args(["--nonblock", "--exclusive"])
            .arg(path)
            .arg("true")
            .status()
            .expect("flock runs");
        status.success()
    }

    #[test]
    fn a_second_lock_on_a_folder_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::acquire(dir.path()).unwrap();
        let err = FolderLock::acquire(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains(LOCK_FILE) && err.contains(&format!("process {}", std::process::id())),
            "{err}"
        );
        drop(first);
        assert!(
            acquire_once_released(dir.path()).is_ok(),
            "released on drop"
        );
    }

    #[test]
    fn issue_23_deleting_the_lock_file_does_not_let_a_second_writer_in() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::acquire(dir.path()).unwrap();
        std::fs::remove_file(lock_path(dir.path())).unwrap();
        let err = FolderLock::acquire(dir.path()).unwrap_err();
        assert!(
            matches!(&err, RunError::Busy { lock, holder }
                if lock == &lock_path(dir.path()) && holder == "another process"),
            "{err}"
        );
        assert!(
            !lock_path(dir.path()).exists(),
            "a refused run creates no lock file"
        );
        drop(first);
        let again = acquire_once_released(dir.path());
        assert!(again.is_ok(), "released on drop: {:?}", again.err());
    }

    /// Acquire a lock just released. Another test thread's `fork` (before its `exec`)
    /// can hold a copy of the released descriptor for a moment, and a flock lives as long
    /// as any copy does; a few short retries ride that out.
    fn acquire_once_released(dir: &std::path::Path) -> Result<FolderLock, RunError> {
        let mut last = FolderLock::acquire(dir);
        for _ in 0..50 {
            if last.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            last = FolderLock::acquire(dir);
        }
        last
    }

    #[test]
    #[allow(clippy::print_stderr, reason = "a skipped check must say so loudly")]
    fn issue_23_another_process_cannot_take_the_folder_while_a_run_holds_it() {
        if Command::new("flock").arg("--version").output().is_err() {
            eprintln!("skipped: util-linux flock is not installed");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let lock = FolderLock::acquire(dir.path()).unwrap();
        assert!(!free_for_another_process(dir.path()), "the folder is held");
        assert!(
            !free_for_another_process(&lock_path(dir.path())),
            "and the file"
        );
        std::fs::remove_file(lock_path(dir.path())).unwrap();
        assert!(
            !free_for_another_process(dir.path()),
            "still held once the file is gone"
        );
        drop(lock);
        assert!(free_for_another_process(dir.path()), "released on drop");
    }
}
