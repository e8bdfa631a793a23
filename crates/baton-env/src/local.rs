//! The local backend: no isolation. Commands run on the host, as the user running baton, in
//! a private copy of the tree, with a cleared environment and the same resource limits. For
//! machines without bubblewrap and for debugging; used only when a user names it.
//!
//! The timeout kills the command's process group; a process that starts its own session
//! (`setsid`) escapes it, and nothing stops a command from reading or writing anywhere the
//! user can.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::config::{BackendKind, EnvConfig, Limits, Setup};
use crate::env::{EnvInfo, Environment};
use crate::error::EnvError;
use crate::exec::{self, Exec, ExecOutput};
use crate::host::HostDir;
use crate::shell::{self, UlimitValues};
use crate::snapshot::{BlobStore, SnapshotId, SnapshotInfo};

/// The local backend; see the module docs.
pub struct LocalEnv {
    dir: Option<HostDir>,
    limits: Limits,
    ulimits: UlimitValues,
    env: BTreeMap<String, String>,
    info: EnvInfo,
}

impl LocalEnv {
    /// Copy the setup's tree into a private folder.
    pub fn start(config: &EnvConfig, setup: &Setup) -> Result<Self, EnvError> {
        if setup.image.is_some() && setup.tree.is_none() {
            return Err(EnvError::Unsupported {
                backend: "local",
                message: "a Docker image needs the docker backend".to_string(),
            });
        }
        let dir = HostDir::create(config, setup, None)?;
        let mut env = shell::command_env(BackendKind::Local, &setup.env);
        // There is no private /tmp to point HOME at: use the environment's own.
        if !setup.env.contains_key("HOME") {
            env.insert("HOME".to_string(), dir.tmp.display().to_string());
        }
        let info = EnvInfo {
            backend: BackendKind::Local,
            workdir: dir.tree.root().display().to_string(),
            env: env.clone(),
            limits: config.limits.clone(),
            isolation: "none: runs on the host as the current user (local backend)".to_string(),
            image: None,
        };
        Ok(LocalEnv {
            dir: Some(dir),
            ulimits: UlimitValues::from_limits(&config.limits).clamped_to_own(),
            limits: config.limits.clone(),
            env,
            info,
        })
    }

    fn dir(&mut self) -> Result<&mut HostDir, EnvError> {
        self.dir.as_mut().ok_or(EnvError::Closed)
    }
}

impl Environment for LocalEnv {
    fn info(&self) -> &EnvInfo {
        &self.info
    }

    fn exec(&mut self, req: &Exec) -> Result<ExecOutput, EnvError> {
        let dir = self.dir.as_ref().ok_or(EnvError::Closed)?;
        let argv = shell::wrapped_command(&req.command, self.ulimits, &self.env);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(dir.tree.root())
            .env_clear()
            .envs(shell::process_env(&self.env))
            .process_group(0);
        let timeout = req.timeout.unwrap_or_else(|| self.limits.timeout());
        exec::run(
            cmd,
            "bash",
            req.stdin.as_deref(),
            timeout,
            self.limits.output_bytes,
            &mut |child| {
                let pid = rustix::process::Pid::from_child(child);
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                let _ = child.kill();
            },
        )
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
