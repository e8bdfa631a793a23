//! The Docker preflight: whether the configured client reaches a running engine, asked
//! once before anything that needs Docker starts (an agent run on SWE-bench images or
//! with `backend = "docker"`, the SWE-bench harness), so a missing daemon stops the run
//! before its first model call instead of failing every episode after it paid.
//!
//! It runs `CLIENT version --format '{{.Server.Version}}'`: the client prints the
//! engine's version only when it reached one (with no engine it prints the client's
//! part, exits 1 and says why on stderr). The client is the one [`DockerConfig`]
//! names (`BATON_DOCKER` overrides it), so podman or a test shim is asked the same way.
//!
//! [`DockerConfig`]: crate::DockerConfig

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::error::EnvError;
use crate::exec::{self, ExitStatus};

/// How long the client may take to answer before the engine counts as unreachable.
pub const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(30);

/// What the preflight found: the client asked and the engine's version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerInfo {
    /// The client, as configured.
    pub program: String,
    /// The engine's version (`Server.Version`).
    pub server_version: String,
}

const INSTALL: &str = "install Docker (https://docs.docker.com/engine/install/) or set \
                       BATON_DOCKER to a compatible client";
const START: &str = "start the Docker daemon (`sudo systemctl start docker`, or Docker \
                     Desktop) and check that `docker info` answers";
const PERMISSION: &str = "let your user reach the daemon (`sudo usermod -aG docker $USER`, \
                          then log in again) and check that `docker info` answers";

/// Ask the Docker client `program` for the engine's version; an error says what failed
/// and what to do.
pub fn docker_preflight(program: &Path) -> Result<DockerInfo, EnvError> {
    let name = program.display().to_string();
    let unavailable = |what: String, fix: &str| EnvError::DockerUnavailable {
        program: name.clone(),
        what,
        fix: fix.to_string(),
    };
    let mut cmd = Command::new(program);
    cmd.args(["version", "--format", "{{.Server.Version}}"]);
    let out = match exec::run(
        cmd,
        &name,
        None,
        PREFLIGHT_TIMEOUT,
        64 * 1024,
        &mut |child| {
            let _ = child.kill();
        },
    ) {
        Ok(out) => out,
        Err(EnvError::Spawn { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Err(unavailable(
                "could not start: no such program".into(),
                INSTALL,
            ));
        }
        Err(EnvError::Spawn { source, .. }) => {
            return Err(unavailable(format!("could not start: {source}"), INSTALL));
        }
        Err(e) => return Err(unavailable(format!("could not run: {e}"), INSTALL)),
    };
    let text = out.output.text();
    match out.status {
        ExitStatus::TimedOut => Err(unavailable(
            format!("did not answer within {} s", PREFLIGHT_TIMEOUT.as_secs()),
            START,
        )),
        status if !status.success() => {
            let said = crate::output::tail(text.trim(), 400);
            let fix = if said.to_lowercase().contains("permission denied") {
                PERMISSION
            } else {
                START
            };
            Err(unavailable(format!("failed ({status}): {said}"), fix))
        }
        _ => match text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
            Some(version) => Ok(DockerInfo {
                program: name,
                server_version: version.to_string(),
            }),
            None => Err(unavailable(
                "printed no server version (no engine reached)".into(),
                START,
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn script(dir: &Path, body: &str) -> std::path::PathBuf {
        let path = dir.join("docker");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn a_running_engine_gives_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let p = script(
            dir.path(),
            "[ \"$1 $3\" = \"version {{.Server.Version}}\" ] && echo 28.1.1",
        );
        let info = docker_preflight(&p).unwrap();
        assert_eq!(info.server_version, "28.1.1");
    }

    #[test]
    fn each_failure_says_what_failed_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let err = docker_preflight(&dir.path().join("nope"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("no such program") && err.contains("BATON_DOCKER"),
            "{err}"
        );
        let p = script(
            dir.path(),
            "echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2; exit 1",
        );
        let err = docker_preflight(&p).unwrap_err().to_string();
        assert!(
            err.contains("Cannot connect to the Docker daemon")
                && err.contains("systemctl start docker"),
            "{err}"
        );
        let p = script(
            dir.path(),
            "echo 'permission denied while trying to connect to the Docker daemon socket' >&2; exit 1",
        );
        let err = docker_preflight(&p).unwrap_err().to_string();
        assert!(err.contains("usermod -aG docker"), "{err}");
        let p = script(dir.path(), "echo");
        let err = docker_preflight(&p).unwrap_err().to_string();
        assert!(err.contains("no server version"), "{err}");
    }
}
