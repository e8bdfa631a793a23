//! The host side shared by the bwrap and local backends: a private folder holding the
//! working tree (`tree/`) and a `/tmp` that persists across commands (`tmp/`); and [`HostEnv`], the one [`Environment`] over such a
//! folder, which a [`Launcher`] (bwrap or none) turns commands into processes for.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command};

use crate::config::{EnvConfig, Limits, Setup};
use crate::env::{EnvInfo, Environment};
use crate::error::EnvError;
use crate::exec::{self, Exec, ExecOutput};
use crate::shell::{self, UlimitValues};
use crate::snapshot::{BlobStore, SnapshotId, SnapshotInfo};
use crate::tree::{self, HostTree, Owner};

/// How a host-backed environment runs one command.
pub(crate) trait Launcher: Send {
    /// The process for `argv` (the wrapped `bash -c`), in `dir`, with `env`.
    fn command(
        &self,
        dir: &HostDir,
        workdir: &str,
        env: &BTreeMap<String, String>,
        argv: Vec<String>,
    ) -> Command;
    /// The program's name, for messages.
    fn program(&self) -> String;
    /// End the whole process tree of `child`.
    fn kill(&self, child: &mut Child);
    /// Turn a spawn failure into the error a user can act on.
    fn spawn_error(&self, err: EnvError) -> EnvError {
        err
    }
}

/// An environment whose working tree is a folder on the host.
pub(crate) struct HostEnv<L: Launcher> {
    pub(crate) dir: Option<HostDir>,
    pub(crate) launcher: L,
    pub(crate) limits: Limits,
    pub(crate) ulimits: UlimitValues,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) info: EnvInfo,
}

impl<L: Launcher> HostEnv<L> {
    fn dir(&mut self) -> Result<&mut HostDir, EnvError> {
        self.dir.as_mut().ok_or(EnvError::Closed)
    }
}

impl<L: Launcher> Environment for HostEnv<L> {
    fn info(&self) -> &EnvInfo {
        &self.info
    }

    fn exec(&mut self, req: &Exec) -> Result<ExecOutput, EnvError> {
        let dir = self.dir.as_ref().ok_or(EnvError::Closed)?;
        let argv = shell::wrapped_command(&req.command, self.ulimits, &self.env);
        let cmd = self
            .launcher
            .command(dir, &self.info.workdir, &self.env, argv);
        let timeout = req.timeout.unwrap_or_else(|| self.limits.timeout());
        let launcher = &self.launcher;
        exec::run(
            cmd,
            &launcher.program(),
            req.stdin.as_deref(),
            timeout,
            self.limits.output_bytes,
            &mut |child| launcher.kill(child),
        )
        .map_err(|e| launcher.spawn_error(e))
    }

    fn write_file(
        &mut self,
        path: &str,
        contents: &[u8],
        executable: bool,
    ) -> Result<(), EnvError> {
        self.dir()?.tree.write_file(path, contents, executable)
    }

    fn snapshot(&mut self, blobs: &dyn BlobStore) -> Result<SnapshotInfo, EnvError> {
        let limit = self.limits.snapshot_bytes;
        self.dir()?.tree.snapshot(blobs, limit)
    }

    fn restore(&mut self, blobs: &dyn BlobStore, id: &SnapshotId) -> Result<(), EnvError> {
        self.dir()?.tree.restore(blobs, id)
    }

    fn close(mut self: Box<Self>) -> Result<(), EnvError> {
        self.dir.take();
        Ok(())
    }
}

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
        let base = config.base_dir();
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
}

impl Drop for HostDir {
    fn drop(&mut self) {
        tree::remove_tree(&self.root);
    }
}
