//! Where a document's commands run: `baton-env`'s bubblewrap sandbox, on a staged tree.
//!
//! `verify_cmd` and every claim's check come from the document, so none of them runs on the
//! host. Each runs as `bash -c` in a [`Tree`] inside a bubblewrap sandbox with the system
//! read-only, no network, only `baton-env`'s allow-list of variables (`PATH`, `HOME=/tmp`,
//! `USER`, `LANG`: no API key, no `DATABASE_URL`, no host `HOME`, so no `~/.netrc`), and its
//! limits (processes, address space, CPU, file size, output).
//!
//! A tree is not a copy of the working tree: [`crate::stage`] stages the tracked and
//! untracked files (now) or the anchor's tracked files (at the anchor), with a private
//! `.git`, and leaves out files that look like secrets. The ignored folders
//! (`node_modules`, a virtualenv) and the object store are read-only binds of the real ones,
//! added to `baton-env`'s `bwrap` command line by a small wrapper script (`--args` from a
//! file, before its final `--remount-ro`), so nothing in them can be changed and nothing of
//! them is copied. After each command the staged files are restored from a content-addressed
//! snapshot, so one claim cannot change what the next one sees, and nothing a claim
//! deletes, writes, commits or configures reaches the real repository.
//!
//! When baton runs as root, `baton-env` runs `bwrap` as an unprivileged user, which must be
//! able to read the repository for the binds; when it cannot (a repository under a private
//! folder), the ignored entries and objects are copied instead ([`stage::Mode::Copy`]).
//!
//! [`Isolation::Host`] (`--no-sandbox`) uses `baton-env`'s `local` backend: a staged copy
//! (ignored entries copied, secrets left out), the allow-list environment and limits, no
//! namespaces; when baton is root, each command drops to the unprivileged user 65534 with
//! `setpriv` first, so it cannot change what root owns. Removal of the scratch folders on an
//! interrupt: every environment lives under one scratch folder that [`remove_scratch`]
//! deletes.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use baton_env::{
    BackendKind, DirBlobStore, EnvConfig, Environment, Exec, ExitStatus, Limits, Setup, SnapshotId,
};

use crate::exec::{Exit, Run};
use crate::git::Repo;
use crate::stage::{self, Mode};

/// The host user commands run as under `--no-sandbox` when baton is root (and the user
/// `baton-env` runs `bwrap` as).
pub const UNPRIVILEGED_UID: u32 = 65534;

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
    /// Time allowed to the whole verification of one document, staging the trees included.
    pub total_timeout: Duration,
    /// Secret-like files (see [`crate::stage::secret_like`]) to put in the sandbox anyway,
    /// relative to the top of the repository.
    pub include: Vec<String>,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            isolation: Isolation::Sandbox,
            allow_network: false,
            allow_destructive: false,
            total_timeout: Duration::from_secs(300),
            include: Vec::new(),
        }
    }
}

/// Scratch folders in use, removed by [`remove_scratch`] on an interrupt.
static SCRATCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Remove every scratch folder (sandbox copies, snapshots) this process made: for an
/// interrupt handler, before exiting.
///
/// A check ended a moment ago, or a thread still staging a tree, may write into a folder
/// while it is removed, so each removal is tried again (up to a second) until the folder
/// is gone.
pub fn remove_scratch() {
    let dirs = SCRATCH.lock().map(|d| d.clone()).unwrap_or_default();
    for dir in dirs {
        for _ in 0..40 {
            let _ = std::fs::remove_dir_all(&dir);
            if !dir.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
    }
}

/// The sandbox settings of one verification, with its scratch folder and deadline.
pub struct Sandbox {
    config: EnvConfig,
    scratch: tempfile::TempDir,
    deadline: Instant,
    include: Vec<String>,
    network: bool,
    trees: std::sync::atomic::AtomicUsize,
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

/// The wrapper around `bwrap`: the tree's own arguments (read-only binds, masks) from a
/// NUL-separated file, inserted before the final `--remount-ro`.
const BWRAP_WITH_BINDS: &str = r#"#!/bin/sh
n=$#
for a do
  if [ "$a" = "--remount-ro" ]; then set -- "$@" --args 3 "$a"
  else set -- "$@" "$a"; fi
done
shift "$n"
"#;

impl Sandbox {
    /// Prepare a sandbox and check that it runs a command; the error says what is missing
    /// and how to get it.
    pub fn new(opts: &SandboxOptions) -> Result<Sandbox, String> {
        let sandbox = Sandbox::until(opts, Instant::now() + opts.total_timeout)?;
        sandbox.probe()?;
        Ok(sandbox)
    }

    /// A sandbox for a verification that has already started (its deadline), not probed: a
    /// sandbox that cannot run shows in each command's result instead (the binary probes once
    /// with [`Sandbox::new`] before any document).
    pub fn until(opts: &SandboxOptions, deadline: Instant) -> Result<Sandbox, String> {
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
        config.network = opts.allow_network;
        let sandbox = Sandbox {
            config,
            scratch,
            deadline,
            include: opts.include.clone(),
            network: opts.allow_network,
            trees: std::sync::atomic::AtomicUsize::new(0),
            isolation: match (backend, opts.allow_network) {
                (BackendKind::Local, _) => {
                    "no sandbox (--no-sandbox): a staged copy of the tree on the host, as an unprivileged user when run as root".to_string()
                }
                (_, true) => "bubblewrap sandbox on a staged tree, with network".to_string(),
                _ => "bubblewrap sandbox on a staged tree, no network".to_string(),
            },
        };
        Ok(sandbox)
    }

    fn probe(&self) -> Result<(), String> {
        let fix = if self.config.backend == BackendKind::Bwrap {
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

    /// The repository's tree in the sandbox (see [`crate::stage`]), at `anchor` when given.
    pub fn tree(&self, repo: &Repo, anchor: Option<&str>) -> Result<Tree, String> {
        let out_of_time = || "the total time limit ran out while staging the tree".to_string();
        if self.remaining().is_zero() {
            return Err(out_of_time());
        }
        let n = self
            .trees
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        let bwrap = self.config.backend == BackendKind::Bwrap;
        let root = unprivileged_root();
        let mode = if bwrap && (!root || readable_by_others(&repo.root)) {
            Mode::Bind
        } else {
            Mode::Copy
        };
        if mode == Mode::Copy
            && let Err(seen) = within(&repo.root, MAX_TREE_BYTES)
        {
            return Err(format!(
                "{} holds more than {} MiB ({} MiB counted before stopping) and this tree is copied whole (no bubblewrap binds); remove build output or verify from a smaller checkout",
                repo.root.display(),
                MAX_TREE_BYTES >> 20,
                seen >> 20
            ));
        }
        let staging = self.scratch.path().join(format!("stage-{n}"));
        std::fs::create_dir_all(&staging)
            .map_err(|e| format!("cannot make a staging folder: {e}"))?;
        let staged = stage::stage(
            repo,
            anchor,
            &staging,
            self.scratch.path(),
            mode,
            &self.include,
        )?;
        let mut config = self.config.clone();
        if bwrap {
            config.bwrap.executable = self.wrapper(n, &staged)?;
        }
        let setup = Setup::tree(&staging);
        let workdir = setup.workdir.clone();
        let env = baton_env::start(&config, &setup);
        let _ = std::fs::remove_dir_all(&staging);
        let mut env = env.map_err(|e| format!("cannot set up the tree in the sandbox: {e}"))?;
        let drop_to = (!bwrap && root).then_some(UNPRIVILEGED_UID);
        if let Some(uid) = drop_to {
            let info = env.info();
            for dir in [
                Some(info.workdir.as_str()),
                info.env.get("HOME").map(String::as_str),
            ]
            .into_iter()
            .flatten()
            {
                chown_tree(Path::new(dir), uid)
                    .map_err(|e| format!("cannot hand {dir} to the unprivileged user: {e}"))?;
            }
        }
        let _ = workdir;
        if self.remaining().is_zero() {
            return Err(out_of_time());
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
            drop_to,
            left_out: staged.left_out,
        })
    }

    /// The `bwrap` wrapper for tree `n`: its binds, masks and object store.
    fn wrapper(&self, n: usize, staged: &stage::Staged) -> Result<PathBuf, String> {
        let workdir = baton_env::DEFAULT_WORKDIR;
        let mut args: Vec<String> = Vec::new();
        for (host, rel) in &staged.binds {
            args.extend([
                "--ro-bind".into(),
                host.display().to_string(),
                format!("{workdir}/{rel}"),
            ]);
        }
        for rel in &staged.masks {
            args.extend([
                "--ro-bind".into(),
                "/dev/null".into(),
                format!("{workdir}/{rel}"),
            ]);
        }
        if let Some(objects) = &staged.objects {
            args.extend([
                "--ro-bind".into(),
                objects.display().to_string(),
                stage::OBJECTS_INSIDE.into(),
            ]);
        }
        if self.network {
            args.extend([
                "--ro-bind-try".into(),
                "/etc/resolv.conf".into(),
                "/etc/resolv.conf".into(),
            ]);
        }
        let mut file = Vec::new();
        for a in &args {
            file.extend_from_slice(a.as_bytes());
            file.push(0);
        }
        let dir = self.scratch.path();
        let args_file = dir.join(format!("bwrap-args-{n}"));
        let wrapper = dir.join(format!("bwrap-{n}"));
        let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', "'\\''"));
        let real = on_path(&self.config.bwrap.executable);
        let script = format!(
            "{BWRAP_WITH_BINDS}exec {} \"$@\" 3<{}\n",
            quote(&real),
            quote(&args_file)
        );
        std::fs::write(&args_file, file)
            .and_then(|()| {
                std::fs::set_permissions(&args_file, std::fs::Permissions::from_mode(0o644))
            })
            .and_then(|()| std::fs::write(&wrapper, script))
            .and_then(|()| {
                std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
            })
            .map_err(|e| format!("cannot write the sandbox's bind list: {e}"))?;
        Ok(wrapper)
    }
}

/// Whether baton runs as root (so the sandbox, or `--no-sandbox`, runs as another user).
fn unprivileged_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Whether every folder from `/` down to `path` lets others in, and `path` lets them list it.
fn readable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(path) = path.canonicalize() else {
        return false;
    };
    let mut ok = std::fs::metadata(&path).is_ok_and(|m| m.mode() & 0o005 == 0o005);
    for dir in path.ancestors().skip(1) {
        ok &= std::fs::metadata(dir).is_ok_and(|m| m.mode() & 0o001 == 0o001);
    }
    ok
}

/// Give everything under `dir` to `uid` (links not followed).
fn chown_tree(dir: &Path, uid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(dir, Some(uid), Some(uid))?;
    let md = dir.symlink_metadata()?;
    if md.is_dir() {
        for entry in std::fs::read_dir(dir)? {
            chown_tree(&entry?.path(), uid)?;
        }
    }
    Ok(())
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

/// `s` as one single-quoted shell word.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
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
    /// The host user each command drops to (`--no-sandbox` as root).
    drop_to: Option<u32>,
    /// Secret-like files left out of the tree, relative to its top.
    pub left_out: Vec<String>,
}

impl Tree {
    /// Run `command` with `bash -c` for at most `timeout`, then reset the copy.
    pub fn run(&mut self, command: &str, timeout: Duration) -> Run {
        if let Some(why) = &self.broken {
            return Run::not_started(why.clone());
        }
        let command = match self.drop_to {
            Some(uid) => format!(
                "exec setpriv --reuid={uid} --regid={uid} --clear-groups -- bash -c {}",
                shell_quote(command)
            ),
            None => command.to_string(),
        };
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
