//! The Docker backend: one container per environment, started from the task's image with
//! `sleep LIFETIME` as its first process and `--rm` (a container baton could not remove is
//! gone after [`DockerConfig::container_lifetime_secs`](crate::DockerConfig)), labelled
//! with the run ([`RUN_LABEL`]) so a resume or `baton env clean` removes a killed run's
//! leftovers ([`remove_run_containers`](crate::remove_run_containers)), no network (`--network none`), and memory, CPU
//! and process limits (`--memory`, `--memory-swap`, `--cpus`, `--pids-limit`). Commands
//! run in it behind the same limit wrapper as the other backends; the image's own
//! variables stay in force. They go through the container's command session
//! ([`Session`]: one long-lived `docker exec -i` running a small bash server that starts
//! each command in a session of its own and also lists the tree and packs changed files),
//! so a step costs no `docker exec` (about 30 ms of CPU each in the client and `runc`);
//! a command with input on stdin, or an image the server cannot run in (no `setsid` or
//! `mkfifo`), uses one `docker exec` per command as before. At a timeout baton kills the
//! command's own processes: each command is a session of its own, and the timed-out one
//! is the session whose leader is still alive (an earlier command's leader has exited),
//! so its processes end while a background process an earlier command started keeps
//! running, as under mini-SWE-agent (whose killed client leaves even the timed-out
//! command running; baton does not).
//!
//! The working tree lives inside the container. A setup's host tree is copied in as a tar
//! stream; a snapshot lists the tree with GNU `find` and streams out, as a tar, only the
//! files whose stamp changed since the last one ([`listing`](crate::listing)), updates the
//! recorded tree with what differs from the last listing and stores a delta against the
//! environment's base ([`Recorded`]); a restore streams a tar in. The
//! image needs `bash` and `tar` (SWE-bench images have both, and `find`; without `find`
//! the whole tree is streamed at every snapshot). State outside the
//! working directory (installed packages, `/tmp`) persists across commands but is not part
//! of a snapshot.
//!
//! The client is `docker` unless [`DockerConfig::executable`](crate::DockerConfig) or
//! `BATON_DOCKER` names another; baton uses only `run`, `exec` (with `-i`, `-w`, `-e`) and `rm`, so a compatible
//! client (podman) or a test shim works.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::{BackendKind, EnvConfig, Limits, RUN_LABEL, Setup};
use crate::env::{EnvInfo, Environment};
use crate::error::EnvError;
use crate::exec::{self, Exec, ExecOutput};
use crate::listing::{self, Known, Listed};
use crate::recorded::Recorded;
use crate::session::{Lost, Session};
use crate::shell::{self, UlimitValues};
use crate::snapshot::{BlobStore, Entry, EntryKind, Manifest, RelPath, SnapshotId, SnapshotInfo};
use crate::tree;

const BACKEND: &str = "docker";

/// The most bytes of paths a `tar` request through the session carries.
const SESSION_LIST_BYTES: usize = 64 << 10;

/// The Docker backend; see the module docs.
pub(crate) struct DockerEnv {
    program: PathBuf,
    container: Option<String>,
    limits: Limits,
    ulimits: UlimitValues,
    env: BTreeMap<String, String>,
    info: EnvInfo,
    /// The files recorded at the last snapshot, by stamp ([`listing`](crate::listing)).
    known: Known,
    /// The blob store ([`BlobStore::identity`]) every known digest is in.
    verified_in: Option<PathBuf>,
    /// The tree as last recorded, with the base its snapshots are stored against.
    recorded: Recorded,
    /// The listing at the last snapshot, when `recorded` is exactly it.
    listed: Option<HashMap<RelPath, Listed>>,
    /// The command session ([`Session`]), started at the first command.
    session: Option<Session>,
    /// The session could not start in this container: plain `docker exec` only.
    no_session: bool,
    /// The change watcher (`session.rs`), started before a full listing.
    watcher: Option<Session>,
    /// The watcher could not start or run in this container: a listing at every step.
    no_watcher: bool,
}

impl DockerEnv {
    /// Start the container (and copy the setup's tree in, if it has one).
    pub(crate) fn start(config: &EnvConfig, setup: &Setup) -> Result<Self, EnvError> {
        let image = setup
            .image
            .clone()
            .or_else(|| config.docker.default_image.clone())
            .ok_or_else(|| EnvError::Unsupported {
                backend: BACKEND,
                message: "the task names no image and docker.default_image is not set".into(),
            })?;
        let workdir = setup.workdir().to_string();
        let program = config.docker.executable.clone();
        let limits = config.limits.clone();
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "baton-{}-{nanos:x}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let mut cmd = Command::new(&program);
        cmd.args([
            "run",
            "-d",
            "--rm",
            "--name",
            &name,
            "--label",
            "org.baton.env=1",
        ]);
        if let Some(run) = &config.run_label {
            cmd.args(["--label", &format!("{RUN_LABEL}={run}")]);
        }
        if let Some(parent) = &config.docker.cgroup_parent {
            cmd.args(["--cgroup-parent", parent]);
        }
        let lifetime = config.docker.container_lifetime_secs.max(1).to_string();
        cmd.args(if config.network {
            &[][..]
        } else {
            &["--network", "none"][..]
        })
        .args(["--pids-limit", &limits.processes.to_string()])
        .args(["--memory", &limits.memory_bytes.to_string()])
        .args(["--memory-swap", &limits.memory_bytes.to_string()])
        .args(["--cpus", &config.docker.cpus.to_string()])
        // No `-w`: podman refuses a working directory the image lacks (Docker creates
        // it); it is made below, and every exec names it.
        .args(["--label", &format!("org.baton.workdir={workdir}")])
        .args([&image, "sleep", &lifetime]);
        let out = helper(cmd, &program, "docker run", None)?;
        let container = String::from_utf8_lossy(&out).trim().to_string();
        if container.is_empty() {
            return Err(EnvError::Backend {
                backend: BACKEND,
                what: "docker run".into(),
                status: "no container id".into(),
                stderr: String::new(),
            });
        }
        let mut mkdir = Command::new(&program);
        mkdir.args(["exec", &container, "mkdir", "-p", "--", setup.workdir()]);
        if let Err(e) = helper(mkdir, &program, "create the working directory", None) {
            let _ = remove_container(&program, &container);
            return Err(e);
        }
        let env = shell::command_env(BackendKind::Docker, &setup.env);
        let info = EnvInfo {
            backend: BackendKind::Docker,
            workdir,
            env: env.clone(),
            limits: limits.clone(),
            isolation: format!(
                "docker container from {image} ({}): {}, --pids-limit {}, --memory {}",
                program.display(),
                if config.network {
                    "default network"
                } else {
                    "--network none"
                },
                limits.processes,
                limits.memory_bytes
            ),
            image: Some(image),
        };
        let mut me = DockerEnv {
            program,
            container: Some(container),
            ulimits: UlimitValues::from_limits(&limits),
            limits,
            env,
            info,
            known: Known::default(),
            verified_in: None,
            recorded: Recorded::default(),
            listed: None,
            session: None,
            no_session: false,
            watcher: None,
            no_watcher: false,
        };
        if let Some(src) = &setup.tree {
            me.upload_tree(src)?;
        }
        Ok(me)
    }

    fn container(&self) -> Result<&str, EnvError> {
        self.container.as_deref().ok_or(EnvError::Closed)
    }

    /// `docker exec -i CONTAINER bash -c SCRIPT baton WORKDIR`, fed by `feed`.
    fn stream_in(
        &self,
        what: &str,
        script: &str,
        feed: &mut dyn FnMut(&mut dyn Write) -> Result<(), EnvError>,
    ) -> Result<(), EnvError> {
        let mut cmd = Command::new(&self.program);
        cmd.args([
            "exec",
            "-i",
            self.container()?,
            "bash",
            "-c",
            script,
            "baton",
        ])
        .arg(&self.info.workdir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        let (mut child, reader) = spawn_reading_stderr(cmd, &self.program)?;
        let fed = match child.stdin.take() {
            Some(mut stdin) => feed(&mut stdin),
            None => Ok(()),
        };
        let status = child.wait().map_err(|e| spawn_error(&self.program, e))?;
        let stderr = reader.join().unwrap_or_default();
        fed?;
        if !status.success() {
            return Err(EnvError::Backend {
                backend: BACKEND,
                what: what.to_string(),
                status: status.to_string(),
                stderr: crate::output::tail(&stderr, 2000),
            });
        }
        Ok(())
    }

    fn upload_tree(&mut self, src: &std::path::Path) -> Result<(), EnvError> {
        let src = src.to_path_buf();
        self.stream_in("copy the tree in", REPLACE_TREE, &mut |w| {
            let mut b = tar::Builder::new(w);
            b.follow_symlinks(false);
            b.mode(tar::HeaderMode::Deterministic);
            b.append_dir_all(".", &src)
                .and_then(|_| b.finish())
                .map_err(|e| EnvError::io(&src, "copy the tree into the container", e))
        })
    }

    /// The command session, started now if there is none (`None`: plain `docker exec`).
    fn session(&mut self) -> Option<&mut Session> {
        if self.session.is_none() && !self.no_session {
            let container = self.container.clone()?;
            let mut args = vec!["-w".to_string(), self.info.workdir.clone()];
            for (k, v) in shell::process_env(&self.env) {
                args.push("-e".into());
                args.push(format!("{k}={v}"));
            }
            self.session = Session::start(&self.program, &args, &container, &self.info.workdir);
            self.no_session = self.session.is_none();
        }
        self.session.as_mut()
    }

    /// Give up the session (its answer was cut short): end its processes in the
    /// container; the next command starts a new one.
    fn drop_session(&mut self) {
        if let (Some(s), Ok(c)) = (self.session.take(), self.container()) {
            let mut cmd = Command::new(&self.program);
            cmd.args(["exec", c, "kill", "-9", "--", &format!("-{}", s.pid)]);
            let _ = helper(cmd, &self.program, "docker exec kill", None);
        }
    }

    /// Give up the change watcher for good (it answered out of protocol or ended).
    fn drop_watcher(&mut self) {
        if let (Some(w), Ok(c)) = (self.watcher.take(), self.container()) {
            let mut cmd = Command::new(&self.program);
            cmd.args(["exec", c, "kill", "-9", &w.pid]);
            let _ = helper(cmd, &self.program, "docker exec kill", None);
        }
        self.no_watcher = true;
    }

    /// The working directory's listing, or `None` when the image has no GNU `find`.
    fn list(&mut self) -> Result<Option<Vec<(RelPath, Listed)>>, EnvError> {
        let from_session = match self.session().map(|s| s.request("list", &[])) {
            Some(Some((0, out))) => Some(out),
            Some(Some(_)) => return Ok(None),
            Some(None) => {
                self.drop_session();
                None
            }
            None => None,
        };
        if let Some(out) = from_session {
            return listing::parse(&out)
                .map(Some)
                .map_err(|message| EnvError::Tar {
                    backend: BACKEND,
                    message,
                });
        }
        let mut cmd = Command::new(&self.program);
        cmd.args([
            "exec",
            self.container()?,
            "bash",
            "-c",
            listing::LIST_SCRIPT,
            "baton",
        ])
        .arg(&self.info.workdir);
        let out = match helper(cmd, &self.program, "list the tree", None) {
            Ok(out) => out,
            Err(EnvError::Backend { .. }) => return Ok(None),
            Err(e) => return Err(e),
        };
        listing::parse(&out)
            .map(Some)
            .map_err(|message| EnvError::Tar {
                backend: BACKEND,
                message,
            })
    }

    /// Stream `paths` (files of the working directory) out as a tar, storing their
    /// contents in `blobs`.
    fn copy_out(
        &mut self,
        blobs: &dyn BlobStore,
        paths: &[&RelPath],
    ) -> Result<(Vec<Entry>, Vec<String>), EnvError> {
        let mut list = Vec::new();
        for p in paths {
            list.extend_from_slice(&p.0);
            list.push(0);
        }
        // through the session when the request is small (bash reads it byte by byte)
        if list.len() <= SESSION_LIST_BYTES {
            let args: Vec<&[u8]> = paths.iter().map(|p| p.0.as_slice()).collect();
            match self.session().map(|s| s.request("tar", &args)) {
                // tar exits 1 when a file changed or vanished while it read (see below)
                Some(Some((0 | 1, out))) => {
                    return read_tar(out.as_slice(), blobs, self.limits.snapshot_bytes);
                }
                Some(Some((rc, _))) => {
                    return Err(EnvError::Backend {
                        backend: BACKEND,
                        what: "snapshot (tar -c of the changed files in the container)".into(),
                        status: format!("exit status: {rc}"),
                        stderr: String::new(),
                    });
                }
                Some(None) => self.drop_session(),
                None => {}
            }
        }
        let mut cmd = Command::new(&self.program);
        cmd.args([
            "exec",
            "-i",
            self.container()?,
            "tar",
            "-C",
            &self.info.workdir,
            "--null",
            "--no-recursion",
            "--hard-dereference",
            "--ignore-failed-read",
            "-T",
            "-",
            "-cf",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let (mut child, reader) = spawn_reading_stderr(cmd, &self.program)?;
        let feeder = child.stdin.take().map(|mut stdin| {
            std::thread::spawn(move || {
                let _ = stdin.write_all(&list);
            })
        });
        let parsed = match child.stdout.take() {
            Some(out) => read_tar(out, blobs, self.limits.snapshot_bytes),
            None => Ok((Vec::new(), Vec::new())),
        };
        if parsed.is_err() {
            let _ = child.kill();
        }
        let status = child.wait().map_err(|e| spawn_error(&self.program, e))?;
        if let Some(f) = feeder {
            let _ = f.join();
        }
        let stderr = reader.join().unwrap_or_default();
        let parsed = parsed?;
        // tar exits 1 when a file changed or vanished while it read (a background process):
        // what it read is recorded, a vanished file is not
        if !status.success() && status.code() != Some(1) {
            return Err(EnvError::Backend {
                backend: BACKEND,
                what: "snapshot (tar -c of the changed files in the container)".into(),
                status: status.to_string(),
                stderr: crate::output::tail(&stderr, 2000),
            });
        }
        Ok(parsed)
    }

    /// The whole working directory streamed out (an image without GNU `find`).
    fn snapshot_whole(&mut self, blobs: &dyn BlobStore) -> Result<SnapshotInfo, EnvError> {
        let mut cmd = Command::new(&self.program);
        cmd.args([
            "exec",
            self.container()?,
            "tar",
            "-C",
            &self.info.workdir,
            "-cf",
            "-",
            ".",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let (mut child, reader) = spawn_reading_stderr(cmd, &self.program)?;
        let stdout = child.stdout.take();
        let parsed = match stdout {
            Some(out) => read_tar(out, blobs, self.limits.snapshot_bytes),
            None => Ok((Vec::new(), Vec::new())),
        };
        if parsed.is_err() {
            let _ = child.kill();
        }
        let status = child.wait().map_err(|e| spawn_error(&self.program, e))?;
        let stderr = reader.join().unwrap_or_default();
        let (entries, skipped) = parsed?;
        if !status.success() {
            return Err(EnvError::Backend {
                backend: BACKEND,
                what: "snapshot (tar -c in the container)".into(),
                status: status.to_string(),
                stderr: crate::output::tail(&stderr, 2000),
            });
        }
        self.listed = None;
        let skipped = skipped
            .into_iter()
            .map(|p| RelPath(p.into_bytes()))
            .collect();
        self.recorded.replace_all(entries, skipped);
        self.recorded.store(blobs, self.limits.snapshot_bytes)
    }

    /// End the timed-out command's session (see the module docs).
    fn kill_running_command(&self) {
        if let Ok(c) = self.container() {
            let mut cmd = Command::new(&self.program);
            cmd.args(["exec", c, "bash", "-c", KILL_LIVE_SESSIONS]);
            let _ = helper(cmd, &self.program, "docker exec kill", None);
        }
    }
}

/// Spawn `cmd` (stderr piped) with a thread collecting its stderr.
fn spawn_reading_stderr(
    mut cmd: Command,
    program: &std::path::Path,
) -> Result<(std::process::Child, std::thread::JoinHandle<String>), EnvError> {
    let mut child = cmd
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| spawn_error(program, e))?;
    let mut stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    Ok((child, reader))
}

/// Kill every process of each session whose leader is alive, but the container's first
/// process's and this script's own: that is the running `docker exec`'s (reads
/// `/proc/PID/stat`: the fields after the command name are state, ppid, pgrp, session).
const KILL_LIVE_SESSIONS: &str = r#"me=$$; live=" "
for f in /proc/[0-9]*/stat; do
  read -r line < "$f" 2>/dev/null || continue
  p=${f#/proc/}; p=${p%/stat}; set -- ${line##*) }
  [ "$4" = "$p" ] && [ "$p" != 1 ] && [ "$p" != "$me" ] && live="$live$p "
done
for f in /proc/[0-9]*/stat; do
  read -r line < "$f" 2>/dev/null || continue
  p=${f#/proc/}; p=${p%/stat}; set -- ${line##*) }
  case "$live" in *" $4 "*) kill -9 "$p" 2>/dev/null;; esac
done
true"#;

/// [`KILL_LIVE_SESSIONS`] for a command run through the session: `$1`, the session
/// server's own session, is spared.
const KILL_COMMAND_SESSIONS: &str = r#"keep=$1; me=$$; live=" "
for f in /proc/[0-9]*/stat; do
  read -r line < "$f" 2>/dev/null || continue
  p=${f#/proc/}; p=${p%/stat}; set -- ${line##*) }
  [ "$4" = "$p" ] && [ "$p" != 1 ] && [ "$p" != "$me" ] && [ "$p" != "$keep" ] && live="$live$p "
done
for f in /proc/[0-9]*/stat; do
  read -r line < "$f" 2>/dev/null || continue
  p=${f#/proc/}; p=${p%/stat}; set -- ${line##*) }
  case "$live" in *" $4 "*) kill -9 "$p" 2>/dev/null;; esac
done
true"#;

/// End the timed-out command of a session whose server is `server` (its PID).
fn kill_command_sessions(program: &std::path::Path, container: &str, server: &str) {
    let mut cmd = Command::new(program);
    cmd.args([
        "exec",
        container,
        "bash",
        "-c",
        KILL_COMMAND_SESSIONS,
        "baton",
        server,
    ]);
    let _ = helper(cmd, program, "docker exec kill", None);
}

/// Empty the working directory and unpack a tar from stdin into it.
const REPLACE_TREE: &str =
    "mkdir -p -- \"$1\" && cd -- \"$1\" && find . -mindepth 1 -delete && tar -xf - --no-same-owner";

impl Environment for DockerEnv {
    fn info(&self) -> &EnvInfo {
        &self.info
    }

    fn exec(&mut self, req: &Exec) -> Result<ExecOutput, EnvError> {
        let container = self.container()?.to_string();
        let timeout = req.timeout.unwrap_or_else(|| self.limits.timeout());
        // Through the session when the command reads no input (and can be an argument).
        if req.stdin.is_none() && !req.command.contains('\0') {
            let argv = shell::wrapped_command(&req.command, self.ulimits, &self.env);
            let program = self.program.clone();
            let limit = self.limits.output_bytes;
            let mut kill = |server: &str| kill_command_sessions(&program, &container, server);
            if let Some(s) = self.session() {
                match s.run(&argv, timeout, limit, &mut kill) {
                    Ok(out) => return Ok(out),
                    Err(Lost::Ran(out)) => {
                        self.drop_session();
                        return Ok(out);
                    }
                    Err(Lost::NotRun) => self.drop_session(),
                }
            }
        }
        let mut cmd = Command::new(&self.program);
        cmd.arg("exec");
        if req.stdin.is_some() {
            cmd.arg("-i");
        }
        cmd.args(["-w", &self.info.workdir]);
        for (k, v) in shell::process_env(&self.env) {
            cmd.arg("-e").arg(format!("{k}={v}"));
        }
        cmd.arg(&container).args(shell::wrapped_command(
            &req.command,
            self.ulimits,
            &self.env,
        ));
        let program = self.program.display().to_string();
        let mut timed_out = false;
        let out = exec::run(
            cmd,
            &program,
            req.stdin.as_deref(),
            timeout,
            self.limits.output_bytes,
            &mut |child| {
                timed_out = true;
                let _ = child.kill();
            },
        )
        .map_err(|e| match e {
            EnvError::Spawn { source, .. } => spawn_error(&self.program, source),
            other => other,
        })?;
        if timed_out {
            // Killing the client leaves the command running inside the container.
            self.kill_running_command();
        }
        Ok(out)
    }

    fn write_file(
        &mut self,
        path: &str,
        contents: &[u8],
        executable: bool,
    ) -> Result<(), EnvError> {
        let rel = tree::parse_rel(path)?;
        let mode = if executable { "755" } else { "644" };
        // Like the host backends: a link or file in the way of a folder is replaced, never
        // followed.
        let script = format!(
            "cd -- \"$1\" && p={} && d= && IFS=/ read -ra parts <<< \"$(dirname -- \"$p\")\" && \
             for c in \"${{parts[@]}}\"; do [ \"$c\" = . ] && continue; d=${{d:+$d/}}$c; \
               if [ -L \"$d\" ] || {{ [ -e \"$d\" ] && [ ! -d \"$d\" ]; }}; then rm -f -- \"$d\"; fi; \
               [ -d \"$d\" ] || mkdir -- \"$d\" || exit 1; done && \
             rm -rf -- \"$p\" && cat > \"$p\" && chmod {mode} \"$p\"",
            shell_quote(&rel.display())
        );
        self.stream_in("write a file", &script, &mut |w| {
            w.write_all(contents)
                .map_err(|e| EnvError::io(path, "write into the container", e))
        })
    }

    fn snapshot(&mut self, blobs: &dyn BlobStore) -> Result<SnapshotInfo, EnvError> {
        let trusted = blobs.identity().is_some() && blobs.identity() == self.verified_in.as_deref();
        if trusted
            && self.listed.is_some()
            && let Some(w) = self.watcher.as_mut()
        {
            match w.request("changes", &[]) {
                Some((0, out)) => match listing::parse_changes(&out) {
                    Ok(changes) => return self.snapshot_changes(blobs, changes),
                    Err(_) => self.drop_watcher(),
                },
                // it started over: the listing below is its new starting point
                Some(_) => {}
                None => self.drop_watcher(),
            }
        }
        if self.watcher.is_none() && !self.no_watcher {
            // watching before the listing: what changes after it is reported
            let container = self.container()?.to_string();
            self.watcher = Session::start_watcher(&self.program, &container, &self.info.workdir);
            self.no_watcher = self.watcher.is_none();
        }
        let listed = match self.list()? {
            Some(listed) => listed,
            // no GNU find in the image: the whole tree, streamed
            None => return self.snapshot_whole(blobs),
        };
        let limit = self.limits.snapshot_bytes;
        let total: u64 = listed.iter().map(|(_, l)| l.size()).sum();
        if total > limit {
            return Err(EnvError::TreeTooLarge { limit });
        }
        // Against the last listing only what differs is looked at (`recorded` is that
        // listing's tree); otherwise everything.
        let incremental = trusted && self.listed.is_some();
        let mut before = match self.listed.take() {
            Some(before) if incremental => before,
            _ => HashMap::new(),
        };
        let mut now: HashMap<RelPath, Listed> = HashMap::with_capacity(listed.len());
        let mut changes: Vec<(RelPath, Listed)> = Vec::new();
        for (path, l) in listed {
            path.validate()?;
            if before.remove(&path).as_ref() != Some(&l) {
                changes.push((path.clone(), l.clone()));
            }
            now.insert(path, l);
        }
        let removed = before.into_keys().collect();
        self.record_changes(blobs, now, changes, removed, incremental)
    }

    fn restore(&mut self, blobs: &dyn BlobStore, id: &SnapshotId) -> Result<(), EnvError> {
        let (manifest, base) = Manifest::load_with_base(blobs, id)?;
        manifest.check_blobs(blobs)?;
        self.known.clear();
        self.verified_in = None;
        self.listed = None;
        // its watches are on the folders the restore removes
        self.watcher.take();
        self.stream_in("restore a snapshot", REPLACE_TREE, &mut |w| {
            write_tar(w, &manifest, blobs)
        })?;
        self.recorded.restored(&manifest, base);
        if !self.no_watcher {
            let container = self.container()?.to_string();
            self.watcher = Session::start_watcher(&self.program, &container, &self.info.workdir);
            self.no_watcher = self.watcher.is_none();
        }
        // What was just written is the manifest's content, and every file of it is in
        // `blobs`: record its stamps, so the next snapshot copies out only what changes
        // after the restore (a resumed episode's first step).
        if let Some(listed) = self.list()? {
            let by_path: HashMap<&RelPath, &str> = manifest
                .entries
                .iter()
                .filter_map(|e| match &e.kind {
                    EntryKind::File { digest, .. } => Some((&e.path, digest.as_str())),
                    _ => None,
                })
                .collect();
            let mut now = HashMap::with_capacity(listed.len());
            let mut exact = listed.len() == manifest.entries.len();
            for (path, l) in listed {
                match (&l, by_path.get(&path)) {
                    (Listed::File(stamp), Some(d)) => {
                        self.known
                            .insert(path.clone(), stamp.clone(), d.to_string())
                    }
                    (Listed::File(_), None) => exact = false,
                    _ => {}
                }
                now.insert(path, l);
            }
            if exact {
                self.listed = Some(now);
                self.verified_in = blobs.identity().map(std::path::Path::to_path_buf);
            }
        }
        Ok(())
    }

    fn close(mut self: Box<Self>) -> Result<(), EnvError> {
        self.session.take();
        self.watcher.take();
        match self.container.take() {
            Some(c) => remove_container(&self.program, &c),
            None => Ok(()),
        }
    }
}

impl DockerEnv {
    /// A snapshot from the change watcher's records: only the paths they name are
    /// compared with the last listing.
    fn snapshot_changes(
        &mut self,
        blobs: &dyn BlobStore,
        changes: Vec<listing::Change>,
    ) -> Result<SnapshotInfo, EnvError> {
        use listing::Change;
        let mut listed = self.listed.take().unwrap_or_default();
        // entries taken out of the listing, back if a record names them again
        let mut gone: HashMap<RelPath, Listed> = HashMap::new();
        let take_under = |listed: &mut HashMap<RelPath, Listed>,
                          gone: &mut HashMap<RelPath, Listed>,
                          p: &RelPath| {
            let prefix = [p.0.as_slice(), b"/"].concat();
            let under: Vec<RelPath> = listed
                .keys()
                .filter(|k| k.0.starts_with(&prefix))
                .cloned()
                .collect();
            for k in under {
                if let Some(l) = listed.remove(&k) {
                    gone.insert(k, l);
                }
            }
        };
        let mut changed: Vec<(RelPath, Listed)> = Vec::new();
        for c in changes {
            match c {
                Change::Gone(p) => {
                    if matches!(listed.get(&p), Some(Listed::Dir)) {
                        take_under(&mut listed, &mut gone, &p);
                    }
                    if let Some(l) = listed.remove(&p) {
                        gone.insert(p, l);
                    }
                }
                Change::Walked(p) => take_under(&mut listed, &mut gone, &p),
                Change::Entry(p, l) => {
                    p.validate()?;
                    if !matches!(l, Listed::Dir) && matches!(listed.get(&p), Some(Listed::Dir)) {
                        take_under(&mut listed, &mut gone, &p);
                    }
                    let before = listed.remove(&p).or_else(|| gone.remove(&p));
                    if before.as_ref() != Some(&l) {
                        changed.push((p.clone(), l.clone()));
                    }
                    listed.insert(p, l);
                }
            }
        }
        let removed = gone.into_keys().collect();
        self.record_changes(blobs, listed, changed, removed, true)
    }

    /// Record what differs from the last listing (`incremental`; else `changes` is the
    /// whole tree): copy out the changed files not yet in `blobs`, update the recorded
    /// tree and store the snapshot; `now` is the tree's listing from here on.
    fn record_changes(
        &mut self,
        blobs: &dyn BlobStore,
        mut now: HashMap<RelPath, Listed>,
        changes: Vec<(RelPath, Listed)>,
        removed: Vec<RelPath>,
        incremental: bool,
    ) -> Result<SnapshotInfo, EnvError> {
        let trusted = blobs.identity().is_some() && blobs.identity() == self.verified_in.as_deref();
        let limit = self.limits.snapshot_bytes;
        let mut digests: HashMap<RelPath, String> = HashMap::new();
        let mut copy: Vec<&RelPath> = Vec::new();
        for (path, l) in &changes {
            if let Listed::File(stamp) = l {
                match self.known.digest(path, stamp) {
                    Some(d) if trusted || blobs.contains(d) => {
                        digests.insert(path.clone(), d.to_string());
                    }
                    _ => copy.push(path),
                }
            }
        }
        if !copy.is_empty() {
            let (read, _) = self.copy_out(blobs, &copy)?;
            for e in read {
                if let EntryKind::File { digest, .. } = e.kind {
                    digests.insert(e.path, digest);
                }
            }
        }
        let mut entries = Vec::new();
        let mut skipped = Vec::new();
        for p in removed {
            self.recorded.remove(&p);
        }
        for (path, l) in changes {
            let kind = match l {
                Listed::Dir => EntryKind::Dir,
                Listed::Symlink(target) => EntryKind::Symlink {
                    target: RelPath(target),
                },
                Listed::Special => {
                    if incremental {
                        self.recorded.set_special(path);
                    } else {
                        skipped.push(path);
                    }
                    continue;
                }
                Listed::File(stamp) => {
                    // a file removed between the listing and the copy is not recorded
                    let Some(digest) = digests.remove(&path) else {
                        now.remove(&path);
                        self.recorded.remove(&path);
                        continue;
                    };
                    self.known
                        .insert(path.clone(), stamp.clone(), digest.clone());
                    EntryKind::File {
                        digest,
                        size: stamp.size(),
                        executable: stamp.executable(),
                    }
                }
            };
            if incremental {
                if !matches!(kind, EntryKind::Dir)
                    && matches!(self.recorded.get(&path), Some(EntryKind::Dir))
                {
                    self.recorded.remove_under(&path);
                }
                self.recorded.set(path, kind);
            } else {
                entries.push(Entry { path, kind });
            }
        }
        if !incremental {
            self.recorded.replace_all(entries, skipped);
        }
        self.listed = Some(now);
        let info = self.recorded.store(blobs, limit)?;
        self.verified_in = blobs.identity().map(std::path::Path::to_path_buf);
        Ok(info)
    }
}

impl Drop for DockerEnv {
    fn drop(&mut self) {
        self.session.take();
        self.watcher.take();
        if let Some(c) = self.container.take()
            && let Err(e) = remove_container(&self.program, &c)
        {
            tracing::warn!("could not remove container {c}: {e}");
        }
    }
}

pub(crate) fn remove_container(program: &std::path::Path, container: &str) -> Result<(), EnvError> {
    let mut cmd = Command::new(program);
    cmd.args(["rm", "-f", container]);
    helper(cmd, program, "docker rm", None).map(|_| ())
}

pub(crate) fn helper(
    cmd: Command,
    program: &std::path::Path,
    what: &str,
    stdin: Option<&[u8]>,
) -> Result<Vec<u8>, EnvError> {
    exec::helper(cmd, BACKEND, what, stdin).map_err(|e| match e {
        EnvError::Spawn { source, .. } => spawn_error(program, source),
        other => other,
    })
}

fn spawn_error(program: &std::path::Path, source: std::io::Error) -> EnvError {
    if source.kind() == std::io::ErrorKind::NotFound {
        EnvError::MissingProgram {
            program: program.display().to_string(),
            hint: "install Docker (https://docs.docker.com/engine/install/) or set BATON_DOCKER \
                   to a compatible client"
                .into(),
        }
    } else {
        EnvError::Spawn {
            program: program.display().to_string(),
            source,
        }
    }
}

/// Read a `tar -c` stream into manifest entries, storing file contents in `blobs`.
fn read_tar(
    stream: impl Read,
    blobs: &dyn BlobStore,
    limit: u64,
) -> Result<(Vec<Entry>, Vec<String>), EnvError> {
    let bad = |message: String| EnvError::Tar {
        backend: BACKEND,
        message,
    };
    let mut archive = tar::Archive::new(stream);
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    let mut files: HashMap<Vec<u8>, (String, u64, bool)> = HashMap::new();
    let mut total = 0u64;
    for item in archive.entries().map_err(|e| bad(e.to_string()))? {
        let mut item = item.map_err(|e| bad(e.to_string()))?;
        let raw = item.path_bytes().into_owned();
        let name = normalize_tar_path(&raw);
        if name.is_empty() {
            continue;
        }
        let path = RelPath(name.clone());
        path.validate()?;
        let header = item.header();
        let executable = header.mode().map_err(|e| bad(e.to_string()))? & 0o111 != 0;
        let kind = match header.entry_type() {
            tar::EntryType::Directory => EntryKind::Dir,
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                total += item.size();
                if total > limit {
                    return Err(EnvError::TreeTooLarge { limit });
                }
                let blob = blobs.put(&mut item)?;
                files.insert(name.clone(), (blob.digest.clone(), blob.size, executable));
                EntryKind::File {
                    digest: blob.digest,
                    size: blob.size,
                    executable,
                }
            }
            tar::EntryType::Symlink => {
                let target = item
                    .link_name_bytes()
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                EntryKind::Symlink {
                    target: RelPath(target),
                }
            }
            tar::EntryType::Link => {
                let target = item
                    .link_name_bytes()
                    .map(|t| normalize_tar_path(&t))
                    .unwrap_or_default();
                match files.get(&target) {
                    Some((digest, size, exec)) => EntryKind::File {
                        digest: digest.clone(),
                        size: *size,
                        executable: *exec,
                    },
                    None => {
                        return Err(bad(format!(
                            "hard link to unknown {}",
                            String::from_utf8_lossy(&target)
                        )));
                    }
                }
            }
            _ => {
                skipped.push(path.display());
                continue;
            }
        };
        entries.push(Entry { path, kind });
    }
    // The archive ends with zero blocks padded to tar's record size; read them too, or tar
    // dies of SIGPIPE writing them.
    std::io::copy(&mut archive.into_inner(), &mut std::io::sink())
        .map_err(|e| bad(e.to_string()))?;
    Ok((entries, skipped))
}

/// `./a/b/` -> `a/b`.
fn normalize_tar_path(raw: &[u8]) -> Vec<u8> {
    let mut p = raw;
    while let Some(rest) = p.strip_prefix(b"./") {
        p = rest;
    }
    if p == b"." {
        p = b"";
    }
    let p = p.strip_suffix(b"/").unwrap_or(p);
    p.to_vec()
}

/// Write a manifest as a tar stream, with contents from `blobs`.
fn write_tar(
    w: &mut dyn Write,
    manifest: &Manifest,
    blobs: &dyn BlobStore,
) -> Result<(), EnvError> {
    let io = |e| EnvError::io("(tar stream)", "restore into the container", e);
    let mut b = tar::Builder::new(w);
    for e in &manifest.entries {
        let path = std::path::Path::new(OsStr::from_bytes(&e.path.0));
        let mut h = tar::Header::new_gnu();
        h.set_mtime(0);
        match &e.kind {
            EntryKind::Dir => {
                h.set_entry_type(tar::EntryType::Directory);
                h.set_mode(0o755);
                h.set_size(0);
                b.append_data(&mut h, path, std::io::empty()).map_err(io)?;
            }
            EntryKind::File {
                digest,
                size,
                executable,
            } => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_mode(if *executable { 0o755 } else { 0o644 });
                h.set_size(*size);
                let data = blobs.open(digest)?;
                b.append_data(&mut h, path, data).map_err(io)?;
            }
            EntryKind::Symlink { target } => {
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_mode(0o777);
                h.set_size(0);
                let target = std::path::Path::new(OsStr::from_bytes(&target.0));
                b.append_link(&mut h, path, target).map_err(io)?;
            }
        }
    }
    b.finish().map_err(io)
}

/// Quote `s` for bash.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::DirBlobStore;

    #[test]
    fn tar_streams_round_trip_through_a_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = DirBlobStore::new(dir.path().join("blobs")).unwrap();
        let e = |p: &str, kind: EntryKind| Entry {
            path: RelPath(p.as_bytes().to_vec()),
            kind,
        };
        let data = blobs.put(&mut b"print(1)\n".as_slice()).unwrap();
        let long = format!("{}/f.py", "d".repeat(150));
        let manifest = Manifest::new(vec![
            e("pkg", EntryKind::Dir),
            e(
                "pkg/a.py",
                EntryKind::File {
                    digest: data.digest.clone(),
                    size: data.size,
                    executable: true,
                },
            ),
            e(
                "link",
                EntryKind::Symlink {
                    target: RelPath(b"/etc/passwd".to_vec()),
                },
            ),
            e(&"d".repeat(150), EntryKind::Dir),
            e(
                &long,
                EntryKind::File {
                    digest: data.digest.clone(),
                    size: data.size,
                    executable: false,
                },
            ),
        ]);
        let mut buf = Vec::new();
        write_tar(&mut buf, &manifest, &blobs).unwrap();
        // Padding after the end-of-archive blocks, as GNU tar writes it, is read too (or
        // tar would die of SIGPIPE).
        buf.extend_from_slice(&[0u8; 8192]);
        let mut stream = std::io::Cursor::new(&buf);
        let (entries, skipped) = read_tar(&mut stream, &blobs, u64::MAX).unwrap();
        assert_eq!(stream.position() as usize, buf.len());
        assert!(skipped.is_empty());
        assert_eq!(Manifest::new(entries), manifest);
    }

    #[test]
    fn tar_paths_are_normalized() {
        assert_eq!(normalize_tar_path(b"./a/b/"), b"a/b");
        assert_eq!(normalize_tar_path(b"./"), b"");
        assert_eq!(normalize_tar_path(b"."), b"");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("a'b"), "'a'\\''b'");
    }
}
