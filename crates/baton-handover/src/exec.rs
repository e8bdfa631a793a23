//! Running a command with a timeout, without ever hanging.
//!
//! Every command starts in its own process group with stdin closed. When it exits, or when its
//! timeout passes, the whole group is sent `SIGKILL`, so nothing it started lingers. Output is
//! read by one thread per pipe that keeps a bounded head (for `git`) or tail (for checks);
//! a pipe held open by a process that escaped the group is abandoned after a short grace
//! period instead of being waited for. A check's environment loses the variables that look like
//! credentials (names containing `KEY`, `TOKEN`, `SECRET`, `PASSW`, `CREDENTIAL`, `COOKIE` or
//! `SESSION`, and `SSH_AUTH_SOCK`) and git's location variables (`GIT_DIR`, `GIT_WORK_TREE`,
//! …), so a document's check cannot read API keys or act on another repository.

use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use crate::check::Invocation;

/// How long to wait for a pipe after its process group was killed.
const GRACE: Duration = Duration::from_millis(500);
/// The most output kept from a check.
pub const TAIL_BYTES: usize = 16 * 1024;
/// The most lines of a check's output shown.
pub const TAIL_LINES: usize = 20;

/// Process groups of the commands running now, so an interrupt can end them too: each runs in
/// its own group, which a terminal's Ctrl-C does not reach.
static RUNNING: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

/// Set once an interrupt ended the running commands: no command starts after it.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Kill every command this process is running, and start none after (for a Ctrl-C
/// handler, before exiting). A command is started and registered under the same lock this
/// takes, so none can slip in between.
pub fn kill_running() {
    let groups = match RUNNING.lock() {
        Ok(g) => {
            INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
            g.clone()
        }
        Err(poisoned) => {
            INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
            poisoned.into_inner().clone()
        }
    };
    for pid in groups {
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it.
    Signal(i32),
    /// It ran past its timeout and was killed.
    TimedOut(Duration),
    /// It could not be started.
    NotStarted(String),
}

/// The result of one command.
#[derive(Debug, Clone)]
pub struct Run {
    /// How it ended.
    pub exit: Exit,
    /// What was kept of its output (see [`run_check`] and [`run_capture`]).
    pub output: Vec<u8>,
    /// What was kept of its stderr, for [`run_capture`].
    pub errors: Vec<u8>,
    /// How long it ran.
    pub elapsed: Duration,
}

impl Run {
    /// Whether it exited 0.
    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }

    /// Its output as text, for display: lossy UTF-8 without control characters other than
    /// newlines and tabs, cut to the last [`TAIL_LINES`] lines.
    pub fn tail(&self) -> String {
        let text = String::from_utf8_lossy(&self.output);
        let clean: String = text
            .chars()
            .map(|c| {
                if c.is_control() && c != '\n' && c != '\t' {
                    '\u{fffd}'
                } else {
                    c
                }
            })
            .collect();
        let lines: Vec<&str> = clean.trim_end().lines().collect();
        let start = lines.len().saturating_sub(TAIL_LINES);
        let mut out = lines[start..].join("\n");
        match &self.exit {
            Exit::TimedOut(t) => {
                out.push_str(&format!("\n[timed out after {} s]", t.as_secs()));
            }
            Exit::Signal(s) => out.push_str(&format!("\n[killed by signal {s}]")),
            Exit::NotStarted(why) => out.push_str(&format!("[could not start: {why}]")),
            Exit::Code(0) => {}
            Exit::Code(code) => out.push_str(&format!("\n[exit {code}]")),
        }
        out.trim().to_string()
    }
}

/// Which part of a stream to keep.
#[derive(Clone, Copy)]
enum Keep {
    Head(usize),
    Tail(usize),
}

fn collect(mut reader: impl Read + Send + 'static, keep: Keep) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    // A thread that cannot start (the host is out of processes) keeps nothing; it must not
    // panic.
    let _ = thread::Builder::new()
        .name("baton-handover-output".into())
        .spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        kept.extend_from_slice(&buf[..n]);
                        match keep {
                            Keep::Head(limit) => kept.truncate(limit),
                            Keep::Tail(limit) if kept.len() > 2 * limit => {
                                kept.drain(..kept.len() - limit);
                            }
                            Keep::Tail(_) => {}
                        }
                    }
                }
            }
            if let Keep::Tail(limit) = keep
                && kept.len() > limit
            {
                kept.drain(..kept.len() - limit);
            }
            let _ = tx.send(kept);
        });
    rx
}

impl Run {
    /// A command that could not be started, and why.
    pub fn not_started(why: impl Into<String>) -> Run {
        Run {
            exit: Exit::NotStarted(why.into()),
            output: Vec::new(),
            errors: Vec::new(),
            elapsed: Duration::ZERO,
        }
    }
}

/// Environment variables a check must not see.
fn secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSW",
        "CREDENTIAL",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|w| upper.contains(w))
        || upper == "SSH_AUTH_SOCK"
}

const GIT_LOCATION: [&str; 7] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",
    "GIT_PREFIX",
    "GIT_NAMESPACE",
];

/// Run a document's check in `cwd`: directly, or with `/bin/sh -c` when it needs a shell.
/// `output` keeps the tail of stdout and stderr together.
pub fn run_check(invocation: &Invocation, cwd: &Path, timeout: Duration) -> Run {
    let mut cmd = match invocation {
        Invocation::Direct(words) => {
            let mut c = Command::new(&words[0]);
            c.args(&words[1..]);
            c
        }
        Invocation::Shell(script) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(script);
            c
        }
    };
    for (name, _) in std::env::vars_os() {
        if let Some(n) = name.to_str()
            && (secret(n) || GIT_LOCATION.contains(&n))
        {
            cmd.env_remove(&name);
        }
    }
    cmd.current_dir(cwd);
    let (reader, writer) = match std::io::pipe() {
        Ok(p) => p,
        Err(e) => return not_started(e.to_string()),
    };
    let Ok(writer2) = writer.try_clone() else {
        return not_started("cannot duplicate a pipe".into());
    };
    cmd.stdout(writer).stderr(writer2);
    let rx = collect(reader, Keep::Tail(TAIL_BYTES));
    wait(cmd, timeout, Some(rx), None)
}

/// Run `program args` in `cwd` (no shell), keeping up to `limit` bytes of stdout and the tail
/// of stderr.
pub fn run_capture(
    program: &str,
    args: &[&str],
    cwd: &Path,
    timeout: Duration,
    limit: usize,
) -> Run {
    run_capture_env(program, args, cwd, timeout, limit, &[])
}

/// [`run_capture`] with extra variables set after git's location variables are removed (a
/// private `GIT_INDEX_FILE`).
pub fn run_capture_env(
    program: &str,
    args: &[&str],
    cwd: &Path,
    timeout: Duration,
    limit: usize,
    env: &[(&str, &Path)],
) -> Run {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(cwd);
    for var in GIT_LOCATION {
        cmd.env_remove(var);
    }
    for (name, value) in env {
        cmd.env(name, value);
    }
    cmd.env("GIT_TERMINAL_PROMPT", "0");
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    wait(cmd, timeout, None, Some(limit))
}

fn not_started(why: String) -> Run {
    Run::not_started(why)
}

fn wait(
    mut cmd: Command,
    timeout: Duration,
    combined: Option<mpsc::Receiver<Vec<u8>>>,
    capture: Option<usize>,
) -> Run {
    cmd.stdin(Stdio::null()).process_group(0);
    let start = Instant::now();
    // started and registered under one lock, so an interrupt ends it or it never starts
    let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    if INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        return not_started("interrupted".into());
    }
    let spawned = cmd.spawn();
    // The command holds the pipe's write ends; drop it so the readers see end of file.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return not_started(e.to_string()),
    };
    running.insert(child.id() as i32);
    drop(running);
    let (out_rx, err_rx) = match capture {
        Some(limit) => (
            child.stdout.take().map(|s| collect(s, Keep::Head(limit))),
            child
                .stderr
                .take()
                .map(|s| collect(s, Keep::Tail(TAIL_BYTES))),
        ),
        None => (combined, None),
    };
    let group = rustix::process::Pid::from_raw(child.id() as i32);
    let kill_group = || {
        if let Some(pid) = group {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    };
    let mut pause = Duration::from_millis(2);
    let exit = loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                break match (status.code(), status.signal()) {
                    (Some(code), _) => Exit::Code(code),
                    (None, Some(sig)) => Exit::Signal(sig),
                    (None, None) => Exit::Signal(0),
                };
            }
            Ok(None) if start.elapsed() >= timeout => {
                kill_group();
                let _ = child.wait();
                break Exit::TimedOut(timeout);
            }
            Ok(None) => {
                thread::sleep(pause.min(timeout.saturating_sub(start.elapsed())));
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => {
                kill_group();
                break Exit::NotStarted(e.to_string());
            }
        }
    };
    let elapsed = start.elapsed();
    kill_group();
    if let Ok(mut running) = RUNNING.lock() {
        running.remove(&(child.id() as i32));
    }
    let take = |rx: Option<mpsc::Receiver<Vec<u8>>>| {
        rx.and_then(|rx| rx.recv_timeout(GRACE).ok())
            .unwrap_or_default()
    };
    Run {
        exit,
        output: take(out_rx),
        errors: take(err_rx),
        elapsed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_ms: u64) -> Run {
        run_check(
            &Invocation::Shell(script.into()),
            Path::new("."),
            Duration::from_millis(timeout_ms),
        )
    }

    #[test]
    fn exit_codes_and_tails() {
        let run = sh("echo one; echo two >&2; exit 3", 5_000);
        assert_eq!(run.exit, Exit::Code(3));
        assert_eq!(run.tail(), "one\ntwo\n[exit 3]");
        let run = sh(
            "i=0; while [ $i -lt 100 ]; do echo line$i; i=$((i+1)); done; false",
            5_000,
        );
        assert!(run.tail().starts_with("line80\n") && run.tail().ends_with("line99\n[exit 1]"));
        assert!(sh("printf 'a\\033[2Jb'", 5_000).tail().contains('\u{fffd}'));
    }

    #[test]
    fn timeouts_kill_the_whole_group_and_do_not_wait_for_escaped_pipes() {
        let start = Instant::now();
        let run = sh("sleep 30 & sleep 30; echo never", 300);
        assert!(matches!(run.exit, Exit::TimedOut(_)), "{:?}", run.exit);
        assert!(start.elapsed() < Duration::from_secs(5));
        assert!(run.tail().contains("timed out"));
        // A background process that keeps stdout open does not hold the run after exit.
        let start = Instant::now();
        let run = sh("(sleep 30 &) ; echo done", 5_000);
        assert!(run.success());
        assert!(start.elapsed() < Duration::from_secs(5));
        // One that left the group (setsid) is abandoned after the grace period.
        let start = Instant::now();
        let run = sh(
            "command -v setsid >/dev/null && setsid sleep 30 & echo done",
            5_000,
        );
        assert!(run.success());
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn credential_like_names() {
        assert!(secret("OPENAI_API_KEY") && secret("GITHUB_TOKEN") && secret("SSH_AUTH_SOCK"));
        assert!(!secret("PATH") && !secret("HOME"));
    }

    #[test]
    fn missing_programs_do_not_start() {
        let run = run_check(
            &Invocation::Direct(vec!["no-such-program-baton".into()]),
            Path::new("."),
            Duration::from_secs(5),
        );
        assert!(matches!(run.exit, Exit::NotStarted(_)));
        assert!(!run.success());
    }
}
