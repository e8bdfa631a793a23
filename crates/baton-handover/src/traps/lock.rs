//! One writer per trap-bench output folder: [`baton_types::folder_lock`], the lock every
//! baton command that writes a results folder takes (an exclusive OS lock on the folder
//! itself and on `<out>/baton.lock`, released by the kernel however the process ends),
//! held for the whole of [`crate::traps::experiment::run`] and told as an [`Error`].
//! Reading (`traps report`) takes no lock.

use std::path::Path;

use baton_types::folder_lock::{self, LockError};

use crate::error::Error;

pub use baton_types::folder_lock::{LOCK_FILE, lock_path};

/// A held lock on an output folder.
#[derive(Debug)]
pub struct FolderLock {
    /// Held until dropped.
    _lock: folder_lock::FolderLock,
}

impl FolderLock {
    /// Take the lock on `dir` (which must exist), or fail at once naming the folder and
    /// the process that holds it.
    pub fn acquire(dir: &Path) -> Result<FolderLock, Error> {
        match folder_lock::FolderLock::acquire(dir) {
            Ok(lock) => Ok(FolderLock { _lock: lock }),
            Err(LockError::Busy { lock, holder }) => Err(Error::Busy {
                folder: dir.to_path_buf(),
                lock,
                holder,
            }),
            Err(LockError::Io { path, source }) => Err(Error::Write { path, source }),
            Err(other) => Err(Error::Write {
                path: lock_path(dir),
                source: std::io::Error::other(other.to_string()),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_folder_is_refused_naming_it_and_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let _first = FolderLock::acquire(dir.path()).unwrap();
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
    }
}
