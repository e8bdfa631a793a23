//! The [`Environment`] trait, what it reports about itself, and [`start`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{BackendKind, EnvConfig, Limits, Setup};
use crate::error::EnvError;
use crate::exec::{Exec, ExecOutput};
use crate::snapshot::{BlobStore, SnapshotId, SnapshotInfo};

/// One task's sandbox: a working tree that persists from command to command, and a way to
/// run commands in it.
///
/// Each [`exec`](Environment::exec) is a fresh `bash -c` in the working directory: files
/// persist, the shell's directory and variables do not (mini-SWE-agent's rule). Calls
/// block for at most the command's timeout (plus a short grace to collect output); async
/// callers run them on a blocking thread (`tokio::task::spawn_blocking`), moving the boxed
/// environment in and out.
pub trait Environment: Send {
    /// What this environment is and what baton set up in it, for the run's record.
    fn info(&self) -> &EnvInfo;

    /// Run one command. A failing, killed or timed-out command is an [`ExecOutput`], not
    /// an error.
    fn exec(&mut self, exec: &Exec) -> Result<ExecOutput, EnvError>;

    /// Write one file at `path` (relative to the working directory), creating folders and
    /// replacing whatever is there, without following links.
    fn write_file(&mut self, path: &str, contents: &[u8], executable: bool)
    -> Result<(), EnvError>;

    /// Record the working tree in `blobs` and return its content-addressed id.
    fn snapshot(&mut self, blobs: &dyn BlobStore) -> Result<SnapshotInfo, EnvError>;

    /// Make the working tree exactly the snapshot `id`.
    fn restore(&mut self, blobs: &dyn BlobStore, id: &SnapshotId) -> Result<(), EnvError>;

    /// Stop the environment and delete its working tree. Dropping an environment does the
    /// same, ignoring errors.
    fn close(self: Box<Self>) -> Result<(), EnvError>;
}

/// What an environment is, stored with a run so it can be compared and reproduced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnvInfo {
    /// The backend.
    pub backend: BackendKind,
    /// The working directory commands start in (inside the sandbox; the host path under
    /// `local`).
    pub workdir: String,
    /// Every variable commands see (baton's own and the setup's).
    pub env: BTreeMap<String, String>,
    /// The limits in force.
    pub limits: Limits,
    /// What isolates the commands, in words.
    pub isolation: String,
    /// The Docker image, if any.
    pub image: Option<String>,
}

/// Start an environment for `setup` with the backend `config` names: the config's
/// variables under the setup's own, and its startup command before every command.
pub fn start(config: &EnvConfig, setup: &Setup) -> Result<Box<dyn Environment>, EnvError> {
    let mut setup = setup.clone();
    for (k, v) in &config.env {
        setup.env.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let setup = &setup;
    let env: Box<dyn Environment> = match config.backend {
        BackendKind::Bwrap => Box::new(crate::bwrap::BwrapEnv::start(config, setup)?),
        BackendKind::Local => Box::new(crate::local::LocalEnv::start(config, setup)?),
        BackendKind::Docker => Box::new(crate::docker::DockerEnv::start(config, setup)?),
    };
    Ok(match config.env_startup_command.as_deref() {
        Some(startup) if !startup.trim().is_empty() => Box::new(Activated {
            inner: env,
            startup: startup.to_string(),
        }),
        _ => env,
    })
}

/// An environment whose every command runs after a startup command in the same shell.
struct Activated {
    inner: Box<dyn Environment>,
    startup: String,
}

impl Environment for Activated {
    fn info(&self) -> &EnvInfo {
        self.inner.info()
    }

    fn exec(&mut self, exec: &Exec) -> Result<ExecOutput, EnvError> {
        let mut e = exec.clone();
        e.command = format!("{}\n{}", self.startup, exec.command);
        self.inner.exec(&e)
    }

    fn write_file(
        &mut self,
        path: &str,
        contents: &[u8],
        executable: bool,
    ) -> Result<(), EnvError> {
        self.inner.write_file(path, contents, executable)
    }

    fn snapshot(&mut self, blobs: &dyn BlobStore) -> Result<SnapshotInfo, EnvError> {
        self.inner.snapshot(blobs)
    }

    fn restore(&mut self, blobs: &dyn BlobStore, id: &SnapshotId) -> Result<(), EnvError> {
        self.inner.restore(blobs, id)
    }

    fn close(self: Box<Self>) -> Result<(), EnvError> {
        self.inner.close()
    }
}
