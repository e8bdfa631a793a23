//! One writer per results folder: an exclusive OS lock on `<out>/baton.lock`.
//!
//! The lock is the operating system's advisory file lock (`flock` on Linux, through
//! `std::fs::File::try_lock`, so no crate is needed), held for as long as the
//! [`FolderLock`] lives and released by the kernel when the process ends, however it
//! ends: a `kill -9` leaves no stale lock behind. The file holds the pid of the
//! process that holds it, so a refused run can say who is writing.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::RunError;

/// The lock file's name inside a results folder.
pub const LOCK_FILE: &str = "baton.lock";

/// A held lock on a results folder.
#[derive(Debug)]
pub(crate) struct FolderLock {
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
                Ok(FolderLock { _file: file })
            }
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                Err(RunError::Busy {
                    lock: path.clone(),
                    holder: holder_text(&holder),
                })
            }
            Err(TryLockError::Error(e)) => Err(io(e)),
        }
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
    use super::*;

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
        assert!(FolderLock::acquire(dir.path()).is_ok(), "released on drop");
    }
}
