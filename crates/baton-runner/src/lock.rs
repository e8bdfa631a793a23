//! One writer per results folder: [`baton_types::folder_lock`] (an exclusive OS lock on
//! the folder itself and on `<out>/baton.lock`, the same lock the trap bench takes), with
//! the folder created first and its refusal told as a [`RunError`].

use std::path::Path;

use baton_types::folder_lock::{self, LockError};

use crate::RunError;

pub use baton_types::folder_lock::{LOCK_FILE, lock_path};

/// A held lock on a results folder.
#[derive(Debug)]
pub(crate) struct FolderLock {
    /// Held until dropped.
    _lock: folder_lock::FolderLock,
}

impl FolderLock {
    /// Take the lock on `dir` (creating it), or fail at once naming the lock file and
    /// the process that holds it.
    pub fn acquire(dir: &Path) -> Result<FolderLock, RunError> {
        std::fs::create_dir_all(dir).map_err(|e| RunError::Lock {
            path: lock_path(dir),
            message: e.to_string(),
        })?;
        let lock = folder_lock::FolderLock::acquire(dir).map_err(|e| match e {
            LockError::Busy { lock, holder } => RunError::Busy { lock, holder },
            LockError::Io { path, source } => RunError::Lock {
                path,
                message: source.to_string(),
            },
            other => RunError::Lock {
                path: lock_path(dir),
                message: other.to_string(),
            },
        })?;
        if let Some(why) = lock.folder_unlocked() {
            tracing::warn!(folder = %dir.display(), "{why}; only {LOCK_FILE} is locked");
        }
        Ok(FolderLock { _lock: lock })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_folder_is_refused_as_busy_naming_the_lock_file_and_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let _first = FolderLock::acquire(&out).unwrap();
        let err = FolderLock::acquire(&out).unwrap_err();
        assert!(
            matches!(&err, RunError::Busy { lock, holder }
                if lock == &lock_path(&out)
                    && holder == &format!("process {}", std::process::id())),
            "{err}"
        );
    }
}
