//! One writer per output folder: an exclusive OS lock on the folder itself, and on
//! `<folder>/baton.lock`. Every command that writes a results folder (a study's run, a
//! merge, the SWE-bench harness, the trap bench) takes it, so they all exclude each other
//! the same way.
//!
//! Both are the operating system's advisory file lock (`flock` on Linux, through
//! `std::fs::File::try_lock`, so no crate is needed), taken on descriptors held open for
//! as long as the [`FolderLock`] lives and released by the kernel when the process ends,
//! however it ends: a `kill -9` leaves no stale lock behind.
//!
//! The folder's own lock is the one that counts: a lock on `baton.lock` alone is a lock
//! on one inode, so deleting the file during a run let the next run create a new
//! `baton.lock`, lock that, and write beside the first (9 paid replies were lost that
//! way). The folder cannot be replaced under a run without taking its contents with it.
//! `baton.lock` is still locked too, so a run of an older baton (which locks only the
//! file) and this one exclude each other, and it holds the pid of the process that
//! holds the lock, so a refused run can say who is writing.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside an output folder.
pub const LOCK_FILE: &str = "baton.lock";

/// Why a folder could not be locked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another process holds the folder.
    #[error("{} is held by {holder}", .lock.display())]
    Busy {
        /// The lock file.
        lock: PathBuf,
        /// Who holds it (`process <pid>`, or `another process` when the file does not say).
        holder: String,
    },
    /// The folder or its lock file could not be opened, locked or written.
    #[error("cannot lock {}", .path.display())]
    Io {
        /// The folder or the lock file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
}

/// A held lock on an output folder.
#[derive(Debug)]
pub struct FolderLock {
    /// The folder, open and locked (none where a folder cannot be locked).
    _dir: Option<File>,
    /// `baton.lock`, open and locked.
    _file: File,
    /// Why the folder itself is not locked, when it is not.
    folder_unlocked: Option<String>,
}

impl FolderLock {
    /// Take the lock on `dir` (which must exist), or fail at once naming the lock file
    /// and the process that holds it.
    ///
    /// When the holder is this very process, the lock may be one it has just released:
    /// a child it forked on another thread keeps a copy of every descriptor until its
    /// `exec` closes them, and a flock lives as long as any copy does. Only then is the
    /// lock tried again, every 10 ms for up to a second; another process's lock is
    /// refused at once.
    pub fn acquire(dir: &Path) -> Result<FolderLock, LockError> {
        let ours = format!("process {}", std::process::id());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        loop {
            match Self::try_acquire(dir) {
                Err(LockError::Busy { holder, .. })
                    if holder == ours && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                other => return other,
            }
        }
    }

    fn try_acquire(dir: &Path) -> Result<FolderLock, LockError> {
        let path = lock_path(dir);
        let io = |e: std::io::Error| LockError::Io {
            path: path.clone(),
            source: e,
        };
        let (dir_lock, folder_unlocked) = lock_folder(dir).map_err(|e| match e {
            TryLockError::WouldBlock => busy(&path),
            TryLockError::Error(source) => LockError::Io {
                path: dir.to_path_buf(),
                source,
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
                    folder_unlocked,
                })
            }
            Err(TryLockError::WouldBlock) => Err(busy(&path)),
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }

    /// Why only `baton.lock` is locked and not the folder itself (not a Unix system, or
    /// a file system without `flock` on folders), for the caller to warn of.
    pub fn folder_unlocked(&self) -> Option<&str> {
        self.folder_unlocked.as_deref()
    }
}

/// Lock the folder itself through a read-only descriptor of it. Where a folder cannot
/// be opened or locked, the lock file's lock stands alone, and the reason is returned.
fn lock_folder(dir: &Path) -> Result<(Option<File>, Option<String>), TryLockError> {
    if !cfg!(unix) {
        return Ok((None, Some("folders cannot be locked here".into())));
    }
    let file = match File::open(dir) {
        Ok(f) => f,
        Err(e) => {
            return Ok((
                None,
                Some(format!("cannot open the folder to lock it ({e})")),
            ));
        }
    };
    match file.try_lock() {
        Ok(()) => Ok((Some(file), None)),
        Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
        Err(TryLockError::Error(e)) => Ok((None, Some(format!("cannot lock the folder ({e})")))),
    }
}

/// The refusal of a writer on a folder another process holds, naming it from the lock
/// file when that still says (the file is read, never created, here).
fn busy(path: &Path) -> LockError {
    let mut contents = String::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.read_to_string(&mut contents);
    }
    LockError::Busy {
        lock: path.to_path_buf(),
        holder: match contents.trim().parse::<u32>() {
            Ok(pid) => format!("process {pid}"),
            Err(_) => "another process".to_string(),
        },
    }
}

/// The lock file of an output folder.
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
        assert_eq!(first.folder_unlocked(), None);
        let err = FolderLock::acquire(dir.path()).unwrap_err();
        assert!(
            matches!(&err, LockError::Busy { lock, holder }
                if lock == &lock_path(dir.path())
                    && holder == &format!("process {}", std::process::id())),
            "{err}"
        );
        drop(first);
        assert!(FolderLock::acquire(dir.path()).is_ok(), "released on drop");
    }

    #[test]
    fn issue_23_deleting_the_lock_file_does_not_let_a_second_writer_in() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::acquire(dir.path()).unwrap();
        std::fs::remove_file(lock_path(dir.path())).unwrap();
        let err = FolderLock::acquire(dir.path()).unwrap_err();
        assert!(
            matches!(&err, LockError::Busy { lock, holder }
                if lock == &lock_path(dir.path()) && holder == "another process"),
            "{err}"
        );
        assert!(
            !lock_path(dir.path()).exists(),
            "a refused writer creates no lock file"
        );
        drop(first);
        let again = FolderLock::acquire(dir.path());
        assert!(again.is_ok(), "released on drop: {:?}", again.err());
    }

    #[test]
    #[allow(clippy::print_stderr, reason = "a skipped check must say so loudly")]
    fn issue_23_another_process_cannot_take_the_folder_while_a_writer_holds_it() {
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
