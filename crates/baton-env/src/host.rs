//! The host side shared by the bwrap and local backends: a private folder holding the
//! working tree (`tree/`), a `/tmp` that persists across commands (`tmp/`) and, for bwrap,
//! the synthetic `/etc` (`etc/`).

use std::path::{Path, PathBuf};

use crate::config::{EnvConfig, Setup};
use crate::error::EnvError;
use crate::tree::{self, HostTree, Owner};

/// An environment's folder on the host; removed on drop.
pub(crate) struct HostDir {
    root: PathBuf,
    pub(crate) tree: HostTree,
    pub(crate) tmp: PathBuf,
}

impl HostDir {
    /// Make the folder and copy the setup's tree into `tree/`, owned by `owner`.
    pub(crate) fn create(
        config: &EnvConfig,
        setup: &Setup,
        owner: Owner,
    ) -> Result<Self, EnvError> {
        let base = config.work_dir.clone().unwrap_or_else(std::env::temp_dir);
        std::fs::create_dir_all(&base).map_err(|e| EnvError::io(&base, "create work folder", e))?;
        let root = tempfile::Builder::new()
            .prefix("baton-env-")
            .tempdir_in(&base)
            .map_err(|e| EnvError::io(&base, "create environment folder", e))?
            .keep();
        let dir = HostDir {
            tree: HostTree::new(root.join("tree"), owner),
            tmp: root.join("tmp"),
            root,
        };
        // From here on, a failure drops `dir`, which removes the folder.
        for p in [dir.tree.root(), dir.tmp.as_path()] {
            std::fs::create_dir(p).map_err(|e| EnvError::io(p, "create folder", e))?;
        }
        if let Some(src) = &setup.tree {
            tree::copy_tree(src, dir.tree.root(), owner)?;
        }
        for p in [dir.root.as_path(), dir.tree.root(), dir.tmp.as_path()] {
            tree::chown(p, owner)?;
        }
        Ok(dir)
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for HostDir {
    fn drop(&mut self) {
        tree::remove_tree(&self.root);
    }
}
