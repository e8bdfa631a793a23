//! One writer per trap-bench output folder: an exclusive OS lock on the folder itself and
//! on `<out>/baton.lock`, held for the whole of [`crate::traps::experiment::run`].
//!
//! Both are the operating system's advisory file lock (`flock` on Linux, through
//! `std::fs::File::try_lock`), taken on descriptors held open as long as the
//! [`FolderLock`] lives and released by the kernel when the process ends, however it ends:
//! a killed run leaves no stale lock. The folder's own lock is the one that counts (a lock
//! on the file alone is a lock on one inode: deleting the file would let a second run lock
//! a new one); `baton.lock` is locked too and holds the holder's pid, so a refused run can
//! say who is writing. Reading (`traps report`) takes no lock.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The lock file's name inside an output folder.
pub const LOCK_FILE: &str = "baton.lock";

/// A held lock on an output folder.
#[derive(Debug)]
pub struct FolderLock {
    /// The folder, open and locked (none where a folder cannot be locked).
    _dir: Option<File>,
    /// `baton.lock`, open and locked.
    _file: File,
}

impl FolderLock {
    /// Take the lock on `dir` (which must exist), or fail at once naming the folder and
    /// the process that holds it.
    pub fn acquire(dir: &Path) -> Result<FolderLock, Error> {
        let path = dir.join(LOCK_FILE);
        let io = |e: std::io::Error| Error::Write {
            path: path.clone(),
            source: e,
        };
        let dir_lock = lock_folder(dir).map_err(|e| match e {
            TryLockError::WouldBlock => busy(dir, &path),
            TryLockError::Error(source) => Error::Write {
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
                })
            }
            Err(TryLockError::WouldBlock) => Err(busy(dir, &path)),
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
    }
}

/// Lock the folder itself through a read-only descriptor of it; where a folder cannot be
/// opened or locked, the lock file's lock stands alone.
fn lock_folder(dir: &Path) -> Result<Option<File>, TryLockError> {
    if !cfg!(unix) {
        return Ok(None);
    }
    let Ok(file) = File::open(dir) else {
        return Ok(None);
    };
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
        Err(TryLockError::Error(_)) => Ok(None),
    }
}

/// The refusal of a run on a folder another process holds, naming the holder from the
/// lock file when it says (the file is read, never created, here).
fn busy(dir: &Path, path: &Path) -> Error {
    let mut contents = String::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.read_to_string(&mut contents);
    }
    Error::Busy {
        folder: dir.to_path_buf(),
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
    use super::*;

    #[test]
    fn a_second_lock_on_a_folder_is_refused_naming_it_and_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let first = FolderLock::acquire(dir.path()).unwrap();
        let err = FolderLock::acquire(dir.path()).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "trap bench: the output folder {} is in use by process {} (lock {}); wait for that run to end or choose another --out",
                dir.path().display(),
                std::process::id(),
                lock_path(dir.path()).display()
            )
        );
        // deleting the lock file does not let a second writer in: the folder is held
        std::fs::remove_file(lock_path(dir.path())).unwrap();
        let err = FolderLock::acquire(dir.path()).unwrap_err();
        assert!(
            matches!(&err, Error::Busy { holder, .. } if holder == "another process"),
            "{err}"
        );
        drop(first);
        let mut again = FolderLock::acquire(dir.path());
        // another test thread's fork may hold a copy of the released descriptor a moment
        for _ in 0..50 {
            if again.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            again = FolderLock::acquire(dir.path());
        }
        assert!(again.is_ok(), "released on drop: {:?}", again.err());
    }
}
