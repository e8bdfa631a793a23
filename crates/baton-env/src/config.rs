//! What an environment is made of: the backend and its executables, the limits, and the
//! per-task setup (tree or image, working directory, variables).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The name of the environment variable that overrides the `docker` executable.
pub const DOCKER_ENV: &str = "BATON_DOCKER";
/// The name of the environment variable that overrides the `bwrap` executable.
pub const BWRAP_ENV: &str = "BATON_BWRAP";

/// Which isolation runs the commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// bubblewrap: fresh namespaces per command, the host's `/usr` read-only, no network
    /// (the default).
    #[default]
    Bwrap,
    /// One Docker container per task, started from the task's image.
    Docker,
    /// No isolation at all: commands run on the host in a copy of the tree. Only when named.
    Local,
}

impl BackendKind {
    /// The backend's name as written in settings (`bwrap`, `docker`, `local`).
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Bwrap => "bwrap",
            BackendKind::Docker => "docker",
            BackendKind::Local => "local",
        }
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for BackendKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "bwrap" => Ok(BackendKind::Bwrap),
            "docker" => Ok(BackendKind::Docker),
            "local" => Ok(BackendKind::Local),
            other => Err(format!(
                "unknown environment backend {other:?} (expected bwrap, docker or local)"
            )),
        }
    }
}

/// Resource limits of every command. Each applies per command (a fresh `bash -c`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock limit per command, in seconds; at the limit the whole process tree is
    /// killed. Default 60 (mini-SWE-agent's). Example: `timeout_secs = 120`.
    pub timeout_secs: f64,
    /// CPU seconds per process (`RLIMIT_CPU`). Default: the timeout, rounded up.
    /// Example: `cpu_secs = 30`.
    pub cpu_secs: Option<u64>,
    /// Address space per process in bytes (`RLIMIT_AS` under bwrap and local; `--memory`
    /// for Docker). Default 4 GiB. Example: `memory_bytes = 2147483648`.
    pub memory_bytes: u64,
    /// Processes (and threads) at once inside one command (`RLIMIT_NPROC` in the sandbox's
    /// own user namespace; `--pids-limit` for Docker). Default 256. Example: `processes = 64`.
    pub processes: u64,
    /// Largest file a command may write, in bytes (`RLIMIT_FSIZE`). Default 1 GiB.
    /// Example: `file_size_bytes = 104857600`.
    pub file_size_bytes: u64,
    /// Output kept per command, in bytes: the first half and the last half of the combined
    /// stdout and stderr; what lies between is counted and dropped. Default 1 MiB.
    /// Example: `output_bytes = 65536`.
    pub output_bytes: u64,
    /// Largest working tree a snapshot accepts, in bytes. Default 2 GiB.
    /// Example: `snapshot_bytes = 536870912`.
    pub snapshot_bytes: u64,
    /// New bytes one episode's snapshots may add to the snapshot store, over all its
    /// steps (content already stored, by this episode or another, is free). Default
    /// [`DEFAULT_EPISODE_SNAPSHOT_BYTES`]. Example: `episode_snapshot_bytes = 1073741824`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub episode_snapshot_bytes: Option<u64>,
}

/// The per-episode snapshot cap when none is configured: 4 GiB.
pub const DEFAULT_EPISODE_SNAPSHOT_BYTES: u64 = 4 << 30;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_secs: 60.0,
            cpu_secs: None,
            memory_bytes: 4 << 30,
            processes: 256,
            file_size_bytes: 1 << 30,
            output_bytes: 1 << 20,
            snapshot_bytes: 2 << 30,
            episode_snapshot_bytes: None,
        }
    }
}

impl Limits {
    /// The per-command wall-clock limit.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs_f64(self.timeout_secs.max(0.001))
    }

    /// The per-episode snapshot cap: the configured value or
    /// [`DEFAULT_EPISODE_SNAPSHOT_BYTES`].
    pub fn episode_snapshot_cap(&self) -> u64 {
        self.episode_snapshot_bytes
            .unwrap_or(DEFAULT_EPISODE_SNAPSHOT_BYTES)
    }

    /// CPU seconds per process: the configured value or the timeout rounded up.
    pub fn cpu_secs(&self) -> u64 {
        self.cpu_secs
            .unwrap_or_else(|| self.timeout_secs.max(1.0).ceil() as u64)
    }
}

/// The bubblewrap backend's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BwrapConfig {
    /// The `bwrap` executable. Default `bwrap` (found on PATH); the `BATON_BWRAP`
    /// environment variable overrides it. Example: `executable = "/usr/bin/bwrap"`.
    pub executable: PathBuf,
    /// When baton runs as root, the host user and group id the sandbox runs as (root is
    /// exempt from the kernel's process limit, so the sandbox never runs as root).
    /// Default 65534 (`nobody`). Example: `host_uid = 65534`.
    pub host_uid: u32,
}

impl Default for BwrapConfig {
    fn default() -> Self {
        BwrapConfig {
            executable: PathBuf::from("bwrap"),
            host_uid: 65534,
        }
    }
}

/// The Docker backend's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DockerConfig {
    /// The `docker` client. Default `docker` on PATH; the `BATON_DOCKER` environment
    /// variable overrides it (tests point it at a shim). Example: `executable = "podman"`.
    pub executable: PathBuf,
    /// CPUs per container (`--cpus`). Default 1. Example: `cpus = 2.0`.
    pub cpus: f64,
    /// The image for tasks that bring a tree but no image of their own. Default: none (such
    /// a task is refused under Docker). Example: `default_image = "python:3.11-slim"`.
    pub default_image: Option<String>,
    /// The longest a container lives, in seconds: its first process is `sleep` for this
    /// long and the container is started with `--rm`, so one that baton could not remove
    /// (baton killed with SIGKILL) is gone by then even if no resume or `baton env clean`
    /// removes it first. Default 14400 (4 hours; mini-SWE-agent's is 2 hours). Example:
    /// `container_lifetime_secs = 7200`.
    pub container_lifetime_secs: u64,
    /// The cgroup containers are started under (`--cgroup-parent`), so their CPU time can
    /// be read together with baton's (`baton bench agent-study` does). Default: the
    /// engine's own. Example: `cgroup_parent = "/baton"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup_parent: Option<String>,
}

impl Default for DockerConfig {
    fn default() -> Self {
        DockerConfig {
            executable: PathBuf::from("docker"),
            cpus: 1.0,
            default_image: None,
            container_lifetime_secs: DEFAULT_CONTAINER_LIFETIME_SECS,
            cgroup_parent: None,
        }
    }
}

/// A container's longest life when none is configured: 4 hours.
pub const DEFAULT_CONTAINER_LIFETIME_SECS: u64 = 4 * 3600;

/// The label every container baton starts carries, with the run's label as its value
/// (see [`EnvConfig::run_label`]).
pub const RUN_LABEL: &str = "org.baton.run";

/// The label of a run's containers for the results folder `out_dir`: a digest of its
/// canonical path, so a resume, and `baton env clean`, find the containers of the same run.
pub fn run_label(out_dir: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let path = std::fs::canonicalize(out_dir).unwrap_or_else(|_| out_dir.to_path_buf());
    let digest = Sha256::digest(path.as_os_str().as_encoded_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Everything that decides how environments are built, shared by all tasks of a run.
///
/// Deserializes from an experiment file's `[environment]` table; every field has a default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct EnvConfig {
    /// `bwrap` (default), `docker`, or `local` (no isolation). Example: `backend = "docker"`.
    pub backend: BackendKind,
    /// Per-command limits.
    pub limits: Limits,
    /// bubblewrap settings.
    pub bwrap: BwrapConfig,
    /// Docker settings.
    pub docker: DockerConfig,
    /// Where working trees live on the host while an environment is open. Default: the
    /// system temporary folder. Example: `work_dir = "/var/tmp/baton"`.
    pub work_dir: Option<PathBuf>,
    /// Variables every command sees, under a task's own (a dataset's `environment.env`,
    /// as mini-SWE-agent's SWE-bench config sets them); `BASH_ENV` here makes each
    /// command's shell source that file first (the images' `conda activate testbed`
    /// through `/root/.bashrc`). Default none. Example:
    /// `env = { PAGER = "cat", BASH_ENV = "/root/.bashrc" }`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Shell text run before every command in the same shell, so what it sets is in
    /// force (an activation), e.g. `env_startup_command = "source /opt/miniconda3/bin/activate testbed"`.
    /// Its output is part of the command's. Default none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_startup_command: Option<String>,
    /// Whether commands reach the network. Default false: bwrap gives each command a
    /// network namespace of its own with only loopback, Docker runs the container with
    /// `--network none`. True: bwrap shares the host's network (`--share-net`), Docker
    /// uses its default network, as mini-SWE-agent's containers do. `local` has no
    /// isolation either way. Example: `network = true`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub network: bool,
    /// The run the environments belong to (from [`run_label`]): Docker containers carry it
    /// as the [`RUN_LABEL`] label, so [`remove_run_containers`](crate::remove_run_containers)
    /// finds a killed run's leftovers. Set by the runner, never read from a file.
    #[serde(skip)]
    pub run_label: Option<String>,
}

impl EnvConfig {
    /// The folder environments are made in: `work_dir`, or the system temporary folder.
    pub(crate) fn base_dir(&self) -> PathBuf {
        self.work_dir.clone().unwrap_or_else(std::env::temp_dir)
    }

    /// A configuration for `backend` with every other setting at its default, and the
    /// executables taken from `BATON_BWRAP` / `BATON_DOCKER` when those are set.
    pub fn for_backend(backend: BackendKind) -> Self {
        EnvConfig {
            backend,
            ..EnvConfig::default()
        }
        .with_env_overrides()
    }

    /// Apply `BATON_BWRAP` and `BATON_DOCKER` from the process environment.
    pub fn with_env_overrides(mut self) -> Self {
        if let Some(p) = std::env::var_os(BWRAP_ENV).filter(|p| !p.is_empty()) {
            self.bwrap.executable = PathBuf::from(p);
        }
        if let Some(p) = std::env::var_os(DOCKER_ENV).filter(|p| !p.is_empty()) {
            self.docker.executable = PathBuf::from(p);
        }
        self
    }
}

/// What one environment starts from.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Setup {
    /// A host folder copied into the environment as its working tree (never modified).
    pub tree: Option<PathBuf>,
    /// The Docker image (Docker only). Its working directory's contents are the tree
    /// unless `tree` is also given, in which case `tree` replaces them.
    pub image: Option<String>,
    /// The working directory inside the environment, where every command starts.
    /// Default `/testbed` (SWE-bench's).
    pub workdir: String,
    /// Variables every command sees, on top of the few baton sets itself (`PATH`, `HOME`,
    /// `USER`, `LANG`, `PYTHONDONTWRITEBYTECODE=1`; see [`base_env`](crate::base_env)).
    pub env: BTreeMap<String, String>,
}

impl Setup {
    /// A setup that copies `tree` to `/testbed`.
    pub fn tree(tree: impl Into<PathBuf>) -> Self {
        Setup {
            tree: Some(tree.into()),
            workdir: DEFAULT_WORKDIR.to_string(),
            ..Setup::default()
        }
    }

    /// A setup that starts Docker `image` with its `/testbed`.
    pub fn image(image: impl Into<String>) -> Self {
        Setup {
            image: Some(image.into()),
            workdir: DEFAULT_WORKDIR.to_string(),
            ..Setup::default()
        }
    }

    pub(crate) fn workdir(&self) -> &str {
        if self.workdir.is_empty() {
            DEFAULT_WORKDIR
        } else {
            &self.workdir
        }
    }
}

/// The working directory when a setup names none.
pub const DEFAULT_WORKDIR: &str = "/testbed";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_default_and_cpu_follows_timeout() {
        let l = Limits::default();
        assert_eq!(l.timeout(), Duration::from_secs(60));
        assert_eq!(l.cpu_secs(), 60);
        let l = Limits {
            timeout_secs: 0.5,
            ..Limits::default()
        };
        assert_eq!(l.cpu_secs(), 1);
    }

    #[test]
    fn config_reads_from_toml_with_defaults() {
        let c: EnvConfig = toml_like(r#"{"backend": "docker", "limits": {"processes": 64}}"#);
        assert_eq!(c.backend, BackendKind::Docker);
        assert_eq!(c.limits.processes, 64);
        assert_eq!(c.limits.timeout_secs, 60.0);
        let err = serde_json::from_str::<EnvConfig>(r#"{"backnd": "docker"}"#).unwrap_err();
        assert!(err.to_string().contains("backnd"), "{err}");
    }

    fn toml_like(json: &str) -> EnvConfig {
        serde_json::from_str(json).unwrap()
    }
}
