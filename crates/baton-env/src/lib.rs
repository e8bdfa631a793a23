//! Sandboxed working trees for coding agents: run one shell command at a time in a task's
//! repository, under limits, with no network and the rest of the host out of reach, and
//! snapshot or restore the tree by content.
//!
//! This crate is a security boundary, which is why it is a crate of its own: everything a
//! model writes runs through it. The agent loop, tasks and scoring live in `baton-agent`;
//! this crate knows nothing of models or tests.
//!
//! # The contract
//!
//! [`start`] an [`Environment`] from an [`EnvConfig`] (backend, limits) and a [`Setup`]
//! (a host tree to copy, or a Docker image; the working directory, default `/testbed`;
//! extra variables). Then:
//!
//! * [`Environment::exec`] runs a fresh `bash -c COMMAND` in the working directory and
//!   returns an [`ExecOutput`]: how it ended ([`ExitStatus`]: a return code, a signal, or a
//!   timeout), the combined stdout and stderr ([`Output`], the head and tail kept and the
//!   middle counted when it passes [`Limits::output_bytes`], as mini-SWE-agent truncates),
//!   and the wall time. Files persist between commands; the shell's directory and
//!   variables do not (mini-SWE-agent's rule). At the timeout (default 60 s) the whole
//!   process tree is killed.
//! * Every command runs under the same limits: processes, address space, CPU seconds and
//!   file size (`ulimit`, soft and hard, so the command cannot raise them), output size,
//!   and the timeout. Variables: only [`base_env`] and the setup's; never baton's own
//!   environment, so API keys cannot leak into a sandbox.
//! * [`Environment::snapshot`] records the working tree in a [`BlobStore`] and returns a
//!   content-addressed [`SnapshotId`]; [`Environment::restore`] makes the tree exactly that
//!   snapshot again (see [`snapshot`] for what is recorded). A handoff
//!   forks from the snapshot after step *s*. An environment keeps the tree as last
//!   recorded and looks again only at what changed: under bwrap and local the kernel
//!   names the changed paths (inotify), under Docker a listing in the container is
//!   compared with the last one and only changed files are copied out; either way a step
//!   stores only the changed contents and a delta.
//!
//! # Backends
//!
//! * `bwrap` (default): bubblewrap, fresh namespaces per command, `/usr`
//!   read-only, a synthetic `/etc`, no network; about 5 ms per command. Needs bubblewrap
//!   (0.8 checked) and unprivileged user namespaces.
//! * `docker`: one container per task from its image (SWE-bench), with
//!   `--network none` and cgroup limits, labelled with the run and living at most
//!   `container_lifetime_secs`; [`remove_run_containers`] removes a killed run's
//!   leftovers. Commands, listings and copies go through one long-lived `docker exec`
//!   per container (a small bash server, see `session.rs`), so a step starts no
//!   `docker exec` of its own. The client is overridable (`BATON_DOCKER`); the tests drive a shim that emulates `run`/`exec`/`rm` under bubblewrap.
//! * `local`: no isolation, only when named.
//!
//! The bwrap and local backends keep the working tree in a private folder on the host
//! (one `Environment` implementation over it, with a launcher per backend); Docker keeps
//! it in the container.
//!
//! `baton env check` ([`check`]) reports which of these work on the machine;
//! [`docker_preflight`] asks only whether the Docker client reaches an engine, which
//! agent runs and the SWE-bench harness check before they start.
//!
//! # Written by hand, and why
//!
//! The process handling (merged output pipe, bounded capture, deadline and tree kill) and
//! the tree walk are written here on `std`, `rustix` (signals, rlimits) and `tar` (the
//! Docker stream): no crate does "run under bubblewrap and kill the PID namespace", and the
//! tree walk has to treat links planted by sandboxed code as entries, never as paths
//! (checked by the tests with hostile links). Landlock and seccomp, a possible second
//! layer under bwrap, are not used yet.
//!
//! # Known limits
//!
//! * The process limit is `RLIMIT_NPROC`, counted per sandbox in its own user namespace.
//!   It holds exactly when one sandbox runs; with several fork bombs dying at once the
//!   count seen inside one sandbox has briefly passed it by up to a quarter (the boundary
//!   tests allow half). The PID namespace and the timeout end every process regardless;
//!   Docker's `--pids-limit` is a cgroup and exact.
//! * Memory is address space per process (`RLIMIT_AS`), not a cgroup: many processes can
//!   together use more, within the process limit.
//! * Inside bwrap, `/proc/1/cmdline` is bwrap's own command line, which names the
//!   environment's temporary folder on the host.
//! * Under `local`, a command that calls `setsid` escapes the timeout's kill.
//! * Docker snapshots cover the working directory only, not the rest of the container.
//!
//! Not for: running model-written Python functions for LiC grading (that is
//! `baton-sandbox`, a WebAssembly sandbox), or deciding whether a task is solved
//! (`baton-agent`).
//!
//! ```no_run
//! use baton_env::{EnvConfig, Exec, Setup, start};
//! let mut env = start(&EnvConfig::default(), &Setup::tree("path/to/repo"))?;
//! let out = env.exec(&Exec::new("python3 -m unittest -q"))?;
//! println!("{} after {:?}:\n{}", out.status, out.duration, out.output.text());
//! env.close()?;
//! # Ok::<(), baton_env::EnvError>(())
//! ```
#![deny(missing_docs)]

mod bwrap;
mod capped;
mod check;
mod config;
mod docker;
mod env;
mod error;
mod exec;
mod host;
mod leftovers;
mod listing;
mod local;
mod output;
mod preflight;
mod recorded;
mod session;
mod shell;
pub mod snapshot;
mod tree;
mod watch;

pub use bwrap::SANDBOX_UID;
pub use capped::CappedBlobs;
pub use check::{CheckItem, CheckReport, CheckStatus, check};
pub use config::{
    BWRAP_ENV, BackendKind, BwrapConfig, DEFAULT_CONTAINER_LIFETIME_SECS,
    DEFAULT_EPISODE_SNAPSHOT_BYTES, DEFAULT_WORKDIR, DOCKER_ENV, DockerConfig, EnvConfig, Limits,
    RUN_LABEL, Setup, run_label,
};
pub use env::{EnvInfo, Environment, start};
pub use error::EnvError;
pub use exec::{Exec, ExecOutput, ExitStatus};
pub use leftovers::remove_run_containers;
pub use output::Output;
pub use preflight::{DockerInfo, PREFLIGHT_TIMEOUT, docker_preflight};
pub use shell::{LIMITS_FAILED, SANDBOX_USER, base_env};
pub use snapshot::{BlobStore, DirBlobStore, SnapshotId, SnapshotInfo};
