//! Running one process with merged output, optional input, a deadline, and a kill that
//! reaches the whole tree. Shared by every backend; each backend only builds the command
//! and says how to kill it.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::EnvError;
use crate::output::{Capture, Output};

/// One command to run in an environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exec {
    /// The command, run as `bash -c COMMAND` in the working directory.
    pub command: String,
    /// Overrides the configured per-command timeout.
    pub timeout: Option<Duration>,
    /// Bytes fed to the command's standard input (none: `/dev/null`).
    pub stdin: Option<Vec<u8>>,
}

impl Exec {
    /// `command` with the configured timeout and no input.
    pub fn new(command: impl Into<String>) -> Self {
        Exec {
            command: command.into(),
            timeout: None,
            stdin: None,
        }
    }

    /// The same command with its own timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The same command reading `input` on its standard input.
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(input.into());
        self
    }
}

/// How a command ended (the shared type, [`baton_types::agent::CommandStatus`]).
pub use baton_types::agent::CommandStatus as ExitStatus;

/// What one command did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecOutput {
    /// How it ended.
    pub status: ExitStatus,
    /// Its combined stdout and stderr, bounded.
    pub output: Output,
    /// Wall time from start to exit, including the sandbox's own start-up.
    pub duration: Duration,
}

impl ExecOutput {
    /// The shell-style return code (`None` after a timeout).
    pub fn return_code(&self) -> Option<i32> {
        self.status.return_code()
    }
}

/// How long to wait for the output pipe to close after the process tree was killed; a
/// process that escaped the kill (possible only without isolation) cannot hold us longer.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// Run `cmd` to completion or `timeout`, whichever comes first.
///
/// stdout and stderr share one pipe, so the capture has the order a terminal would show.
/// `kill` is called once if the deadline passes; it must end the whole process tree.
pub(crate) fn run(
    mut cmd: Command,
    program: &str,
    stdin: Option<&[u8]>,
    timeout: Duration,
    output_limit: u64,
    kill: &mut dyn FnMut(&mut Child),
) -> Result<ExecOutput, EnvError> {
    let spawn_err = |source| EnvError::Spawn {
        program: program.to_string(),
        source,
    };
    let (mut reader, writer) = std::io::pipe().map_err(spawn_err)?;
    let writer2 = writer.try_clone().map_err(spawn_err)?;
    cmd.stdout(writer).stderr(writer2);
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let start = Instant::now();
    let mut child = cmd.spawn().map_err(spawn_err)?;
    // The command holds the parent's copies of the pipe's write end: close them, or the
    // reader never sees the end of the output.
    drop(cmd);

    let capture = Arc::new(Mutex::new(Capture::new(output_limit)));
    let (eof_tx, eof_rx) = mpsc::channel::<()>();
    {
        let capture = Arc::clone(&capture);
        std::thread::Builder::new()
            .name("baton-env-output".into())
            .spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => lock(&capture).push(&buf[..n]),
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                let _ = eof_tx.send(());
            })
            .map_err(spawn_err)?;
    }
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let input = input.to_vec();
        std::thread::Builder::new()
            .name("baton-env-input".into())
            .spawn(move || {
                // A command that does not read its input makes this fail; that is fine.
                let _ = pipe.write_all(&input);
            })
            .map_err(spawn_err)?;
    }

    let deadline = start + timeout;
    let mut eof = eof_rx
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .is_ok();
    let mut pause = Duration::from_micros(100);
    let exited = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(source) => return Err(spawn_err(source)),
        }
        let now = Instant::now();
        if now >= deadline {
            break None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(5));
    };
    let (status, duration) = match exited {
        Some(status) => {
            if !eof {
                // The process exited but something it started still holds the output open:
                // wait for it until the deadline, as a shell's pipe would, then kill the
                // tree and call it a timeout (the caller waited the full time).
                eof = eof_rx
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    .is_ok();
            }
            if eof {
                (convert(status), start.elapsed())
            } else {
                kill(&mut child);
                let duration = start.elapsed();
                eof = eof_rx.recv_timeout(KILL_GRACE).is_ok();
                (ExitStatus::TimedOut, duration)
            }
        }
        None => {
            kill(&mut child);
            let _ = child.wait();
            let duration = start.elapsed();
            eof = eof || eof_rx.recv_timeout(KILL_GRACE).is_ok();
            (ExitStatus::TimedOut, duration)
        }
    };
    if !eof {
        tracing::warn!("{program}: a process outlived the kill and still holds the output open");
    }
    let output = lock(&capture).finish();
    Ok(ExecOutput {
        status,
        output,
        duration,
    })
}

fn convert(status: std::process::ExitStatus) -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitStatus::Exited(c),
        (None, Some(s)) => ExitStatus::Signaled(s),
        (None, None) => ExitStatus::Exited(-1),
    }
}

fn lock(capture: &Mutex<Capture>) -> std::sync::MutexGuard<'_, Capture> {
    capture
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Run a short helper command of the backend itself (not the user's command) and return
/// its stdout, or a [`EnvError::Backend`] with its stderr.
pub(crate) fn helper(
    mut cmd: Command,
    backend: &'static str,
    what: &str,
    stdin: Option<&[u8]>,
) -> Result<Vec<u8>, EnvError> {
    let program = format!("{:?}", cmd.get_program());
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().map_err(|source| EnvError::Spawn {
        program: program.clone(),
        source,
    })?;
    let writer = match (stdin, child.stdin.take()) {
        (Some(input), Some(mut pipe)) => {
            let input = input.to_vec();
            Some(std::thread::spawn(move || pipe.write_all(&input)))
        }
        _ => None,
    };
    let out = child
        .wait_with_output()
        .map_err(|source| EnvError::Spawn { program, source })?;
    if let Some(w) = writer {
        let _ = w.join();
    }
    if !out.status.success() {
        return Err(EnvError::Backend {
            backend,
            what: what.to_string(),
            status: out.status.to_string(),
            stderr: crate::output::tail(&String::from_utf8_lossy(&out.stderr), 2000),
        });
    }
    Ok(out.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("bash");
        c.arg("-c").arg(script);
        c
    }

    fn kill_child(c: &mut Child) {
        let _ = c.kill();
    }

    #[test]
    fn merges_output_in_order_and_reports_the_code() {
        let out = run(
            sh("echo one; echo two >&2; echo three; exit 3"),
            "bash",
            None,
            Duration::from_secs(10),
            1 << 20,
            &mut kill_child,
        )
        .unwrap();
        assert_eq!(out.output.head, "one\ntwo\nthree\n");
        assert_eq!(out.status, ExitStatus::Exited(3));
    }

    #[test]
    fn feeds_stdin() {
        let out = run(
            sh("tr a-z A-Z"),
            "bash",
            Some(b"hello"),
            Duration::from_secs(10),
            1 << 20,
            &mut kill_child,
        )
        .unwrap();
        assert_eq!(out.output.head, "HELLO");
    }

    #[test]
    fn a_timeout_kills_and_says_so() {
        let t = Instant::now();
        let out = run(
            sh("echo started; exec sleep 30"),
            "bash",
            None,
            Duration::from_millis(300),
            1 << 20,
            &mut kill_child,
        )
        .unwrap();
        assert_eq!(out.status, ExitStatus::TimedOut);
        assert_eq!(out.status.return_code(), None);
        assert_eq!(out.output.head, "started\n");
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let err = run(
            Command::new("/nonexistent/baton-test"),
            "/nonexistent/baton-test",
            None,
            Duration::from_secs(1),
            100,
            &mut kill_child,
        )
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent/baton-test"), "{err}");
    }
}
