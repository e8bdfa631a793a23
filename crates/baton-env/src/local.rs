//! The local backend: no isolation. Commands run on the host, as the user running baton, in
//! a private copy of the tree, with a cleared environment and the same resource limits. For
//! machines without bubblewrap and for debugging; used only when a user names it.
//!
//! The timeout kills the command's process group; a process that starts its own session
//! (`setsid`) escapes it, and nothing stops a command from reading or writing anywhere the
//! user can.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use crate::config::{BackendKind, EnvConfig, Setup};
use crate::env::EnvInfo;
use crate::error::EnvError;
use crate::host::{HostDir, HostEnv, Launcher};
use crate::shell::{self, UlimitValues};

/// Runs commands straight on the host, each in its own process group.
pub(crate) struct Local;

/// The local backend; see the module docs.
pub(crate) type LocalEnv = HostEnv<Local>;

impl LocalEnv {
    /// Copy the setup's tree into a private folder.
    pub(crate) fn start(config: &EnvConfig, setup: &Setup) -> Result<Self, EnvError> {
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
        Ok(HostEnv {
            dir: Some(dir),
            launcher: Local,
            ulimits: UlimitValues::from_limits(&config.limits).clamped_to_own(),
            limits: config.limits.clone(),
            env,
            info,
        })
    }
}

impl Launcher for Local {
    fn command(
        &self,
        dir: &HostDir,
        _workdir: &str,
        env: &BTreeMap<String, String>,
        argv: Vec<String>,
    ) -> Command {
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(dir.tree.root())
            .env_clear()
            .envs(shell::process_env(env))
            .process_group(0);
        cmd
    }

    fn program(&self) -> String {
        "bash".to_string()
    }

    fn kill(&self, child: &mut Child) {
        let pid = rustix::process::Pid::from_child(child);
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        let _ = child.kill();
    }
}
