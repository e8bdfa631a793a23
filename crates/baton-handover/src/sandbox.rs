//! Where a document's commands run: `baton-env`'s bubblewrap sandbox, on a copy of the tree.
//!
//! `verify_cmd` and every claim's check come from the document, so none of them runs on the
//! host. Each runs as `bash -c` in a [`Tree`]: a private copy of the repository's working
//! tree (its `.git` and ignored files included) inside a bubblewrap sandbox with the system
//! read-only, no network, only `baton-env`'s allow-list of variables (`PATH`, `HOME=/tmp`,
//! `USER`, `LANG`: no API key, no `DATABASE_URL`, no host `HOME`, so no `~/.netrc`), and its
//! limits (processes, address space, CPU, file size, output). After each command the copy is
//! restored from a content-addressed snapshot, so one claim cannot change what the next one
//! sees, and nothing a claim deletes, writes, commits or configures reaches the real
//! repository.
//!
//! The anchor's tree is the same copy checked out at the anchor inside the sandbox
//! (`git checkout --detach --force`, then `git clean -f -d`, which keeps ignored files): the
//! anchor's tracked files with the current tree's ignored files (`node_modules`, `.env`,
//! build output) laid over them, and no `git worktree` registered in the real repository,
//! so an interrupt cannot leave one behind.
//!
//! Built here on `baton-env`'s public API, because it lacks two pieces: a network switch (for
//! `--allow-network`, [`Sandbox`] runs `bwrap` through a small wrapper script that adds
//! `--share-net` after `--unshare-all` and binds the host's `/etc/resolv.conf`), and removal
//! of its folders on an interrupt (every environment lives under one scratch folder that
//! [`remove_scratch`] deletes). [`Isolation::Host`] (`--no-sandbox`) uses `baton-env`'s
//! `local` backend: still a copy of the tree and the allow-list environment, but no
//! namespaces.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use baton_env::{
    BackendKind, DirBlobStore, EnvConfig, Environment, Exec, ExitStatus, Limits, Setup, SnapshotId,
};

use crate::exec::{Exit, Run};

/// How document commands are isolated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Isolation {
    /// bubblewrap (the default).
    #[default]
    Sandbox,
    /// No namespaces: a copy of the tree on the host (`--no-sandbox`).
    Host,
}

/// What document commands may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxOptions {
    /// How they are isolated.
    pub isolation: Isolation,
    /// Whether they reach the network.
    pub allow_network: bool,
    /// Whether checks flagged destructive (see [`crate::check::destructive`]) run.
    pub allow_destructive: bool,
    /// Time allowed to the whole verification of one document.
    pub total_timeout: Duration,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            isolation: Isolation::Sandbox,
            allow_network: false,
            allow_destructive: false,
            total_timeout: Duration::from_secs(300),
        }
    }
}

/// Scratch folders in use, removed by [`remove_scratch`] on an interrupt.
static SCRATCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Remove every scratch folder (sandbox copies, snapshots) this process made: for an
/// interrupt handler, before exiting.
pub fn remove_scratch() {
    let dirs = SCRATCH.lock().map(|d| d.clone()).unwrap_or_default();
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The sandbox settings of one verification, with its scratch folder and deadline.
pub struct Sandbox {
    config: EnvConfig,
    scratch: tempfile::TempDir,
    deadline: Instant,
    /// What isolates the commands, in words (for the report).
    pub isolation: String,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Ok(mut dirs) = SCRATCH.lock() {
            dirs.retain(|d| d != self.scratch.path());
        }
    }
}

const BWRAP_WITH_NETWORK: &str = r#"#!/bin/sh
# bwrap with the host's network: --share-net after --unshare-all, and the host's resolver.
n=$#
for a do
  if [ "$a" = "--unshare-all" ]; then set -- "$@" "$a" --share-net
  elif [ "$a" = "--remount-ro" ]; then set -- "$@" --ro-bind-try /etc/resolv.conf /etc/resolv.conf "$a"
  else set -- "$@" "$a"; fi
done
shift "$n"
exec "#;

impl Sandbox {
    /// Prepare a sandbox and check that it runs a command; the error says what is missing
    /// and how to get it.
    pub fn new(opts: &SandboxOptions) -> Result<Sandbox, String> {
        let backend = match opts.isolation {
            Isolation::Sandbox => BackendKind::Bwrap,
            Isolation::Host => BackendKind::Local,
        };
        let mut config = EnvConfig::for_backend(backend);
        config.limits = Limits {
            timeout_secs: 60.0,
            output_bytes: 64 * 1024,
            ..Limits::default()
        };
        let scratch = tempfile::Builder::new()
            .prefix("baton-handoff-")
            .tempdir()
            .map_err(|e| format!("cannot make a scratch folder: {e}"))?;
        // The sandbox runs as an unprivileged user when baton is root: it must reach in.
        std::fs::set_permissions(scratch.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("cannot open the scratch folder to the sandbox user: {e}"))?;
        if let Ok(mut dirs) = SCRATCH.lock() {
            dirs.push(scratch.path().to_path_buf());
        }
        config.work_dir = Some(scratch.path().join("env"));
        if backend == BackendKind::Bwrap && opts.allow_network {
            let real = on_path(&config.bwrap.executable);
            let wrapper = scratch.path().join("bwrap-with-network");
            let script = format!(
                "{BWRAP_WITH_NETWORK}'{}' \"$@\"\n",
                real.display().to_string().replace('\'', "'\\''")
            );
            std::fs::write(&wrapper, script)
                .and_then(|()| {
                    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
                })
                .map_err(|e| format!("cannot write the network wrapper: {e}"))?;
            config.bwrap.executable = wrapper;
        }
        let sandbox = Sandbox {
            config,
            scratch,
            deadline: Instant::now() + opts.total_timeout,
            isolation: match (backend, opts.allow_network) {
                (BackendKind::Local, _) => {
                    "no sandbox (--no-sandbox): a copy of the tree on the host".to_string()
                }
                (_, true) => "bubblewrap sandbox on a copy of the tree, with network".to_string(),
                _ => "bubblewrap sandbox on a copy of the tree, no network".to_string(),
            },
        };
        sandbox.probe(backend)?;
        Ok(sandbox)
    }

    fn probe(&self, backend: BackendKind) -> Result<(), String> {
        let fix = if backend == BackendKind::Bwrap {
            "; install bubblewrap (`apt-get install bubblewrap`) and allow unprivileged user namespaces, or pass --no-sandbox to run the document's commands on the host"
        } else {
            ""
        };
        let mut env = baton_env::start(&self.config, &Setup::default())
            .map_err(|e| format!("the sandbox cannot start: {e}{fix}"))?;
        let out = env
            .exec(&Exec::new("true").timeout(Duration::from_secs(30)))
            .map_err(|e| format!("the sandbox cannot run a command: {e}{fix}"))?;
        if !out.status.success() {
            return Err(format!(
                "the sandbox cannot run a command ({}): {}{fix}",
                out.status,
                out.output.last(400).trim()
            ));
        }
        Ok(())
    }

    /// Time left of the total limit.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// A copy of `source` in the sandbox, checked out at `anchor` when given.
    pub fn tree(&self, source: &Path, anchor: Option<&str>) -> Result<Tree, String> {
        if let Err(seen) = within(source, MAX_TREE_BYTES) {
            return Err(format!(
                "{} holds more than {} MiB ({} MiB counted before stopping) and the sandbox copies the tree whole; remove build output or verify from a smaller checkout",
                source.display(),
                MAX_TREE_BYTES >> 20,
                seen >> 20
            ));
        }
        if anchor.is_some() && source.join(".git").is_file() {
            return Err(format!(
                "{} is a linked worktree or submodule (its .git is a file pointing outside the tree), so the anchor cannot be checked out in the sandbox",
                source.display()
            ));
        }
        let mut env = baton_env::start(&self.config, &Setup::tree(source))
            .map_err(|e| format!("cannot copy {} into the sandbox: {e}", source.display()))?;
        if let Some(sha) = anchor {
            if !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("{sha} is not a commit id"));
            }
            let checkout = format!(
                "git -c core.hooksPath=/dev/null -c core.fsmonitor=false -c advice.detachedHead=false \
                 checkout -q --detach --force {sha} && git -c core.hooksPath=/dev/null clean -q -f -d"
            );
            let timeout = self.remaining().min(Duration::from_secs(120));
            let out = env
                .exec(&Exec::new(checkout).timeout(timeout))
                .map_err(|e| format!("cannot check out the anchor in the sandbox: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "cannot check out the anchor in the sandbox ({}): {}",
                    out.status,
                    out.output.last(400).trim()
                ));
            }
        }
        let blobs = DirBlobStore::new(tempfile_in(self.scratch.path())?)
            .map_err(|e| format!("cannot make a snapshot store: {e}"))?;
        let (snapshot, note) = match env.snapshot(&blobs) {
            Ok(info) => (Some(info.id), None),
            Err(e) => (
                None,
                Some(format!(
                    "the tree was not snapshotted ({e}): checks share one copy"
                )),
            ),
        };
        Ok(Tree {
            env,
            blobs,
            snapshot,
            broken: None,
            note,
        })
    }
}

/// The largest working tree copied into the sandbox (a build folder of several GiB would
/// fill the scratch disk and outlast any deadline).
pub const MAX_TREE_BYTES: u64 = 2 << 30;

/// `Ok` when the files under `root` (links not followed) hold at most `limit` bytes; else
/// the bytes counted when the walk stopped.
fn within(root: &Path, limit: u64) -> Result<(), u64> {
    let mut total = 0u64;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(md) = entry.path().symlink_metadata() else {
                continue;
            };
            if md.is_dir() {
                stack.push(entry.path());
            } else if md.is_file() {
                total += md.len();
                if total > limit {
                    return Err(total);
                }
            }
        }
    }
    Ok(())
}

fn tempfile_in(dir: &Path) -> Result<PathBuf, String> {
    tempfile::Builder::new()
        .prefix("snapshots-")
        .tempdir_in(dir)
        .map(tempfile::TempDir::keep)
        .map_err(|e| format!("cannot make a snapshot folder: {e}"))
}

/// `program` as an absolute path when it is a bare name found on `PATH`.
fn on_path(program: &Path) -> PathBuf {
    if program.components().count() != 1 {
        return program.to_path_buf();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_absolute() && p.is_file())
        .unwrap_or_else(|| program.to_path_buf())
}

/// A copy of a working tree in the sandbox, reset after every command.
pub struct Tree {
    env: Box<dyn Environment>,
    blobs: DirBlobStore,
    snapshot: Option<SnapshotId>,
    broken: Option<String>,
    /// Why commands share one copy, when the tree could not be snapshotted.
    pub note: Option<String>,
}

impl Tree {
    /// Run `command` with `bash -c` for at most `timeout`, then reset the copy.
    pub fn run(&mut self, command: &str, timeout: Duration) -> Run {
        if let Some(why) = &self.broken {
            return Run::not_started(why.clone());
        }
        let run = match self.env.exec(&Exec::new(command).timeout(timeout)) {
            Ok(out) => {
                let exit = match out.status {
                    ExitStatus::Exited(baton_env::LIMITS_FAILED) => {
                        Exit::NotStarted("the sandbox could not apply its limits".into())
                    }
                    ExitStatus::Exited(code) => Exit::Code(code),
                    ExitStatus::Signaled(sig) => Exit::Signal(sig),
                    ExitStatus::TimedOut => Exit::TimedOut(timeout),
                };
                Run {
                    exit,
                    output: out.output.text().into_bytes(),
                    errors: Vec::new(),
                    elapsed: out.duration,
                }
            }
            Err(e) => Run::not_started(e.to_string()),
        };
        if let Some(id) = &self.snapshot
            && let Err(e) = self.env.restore(&self.blobs, id)
        {
            self.broken = Some(format!("the sandbox copy could not be reset: {e}"));
        }
        run
    }
}
