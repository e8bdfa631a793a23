//! Running each trap's `detect_fell_in` probe on the tree an agent left, in the sandbox.
//!
//! Handover's rule for its agent-in-the-loop layer (its `bench/README.md`, step 4): run the
//! probe against the resulting workspace; "a non-empty result means the agent fell into that
//! trap". The probes print to standard output when they find something (`grep` of the
//! offending line, `echo DELETED`) and end in `|| true`, so their exit code says nothing.
//! Here the result is the probe's **standard output**, and it is non-empty when it holds a
//! character other than white space; standard error (a `grep` of a folder the agent deleted,
//! `npm` missing) is kept for the report but decides nothing.
//!
//! `baton-env` merges a command's two streams, so each probe runs as `bash -c PROBE` inside a
//! small wrapper that sends them to two files in the sandbox's `/tmp` and prints a header
//! line (a per-run marker, the exit code, stdout's size and whether it holds a non-blank
//! character, all measured inside), then the first [`ProbeOptions::keep_bytes`] of each
//! stream. The verdict comes from the header, so output cut by the sandbox's limit cannot
//! change it.
//!
//! Probes read the tree, but some run the project's tests (`npm test` in
//! `reverted-feature`), which may write: the tree is snapshotted before the first probe and
//! restored after each, so every probe sees the tree the agent left and the caller gets it
//! back unchanged.

use std::time::{Duration, Instant};

use baton_env::{
    BackendKind, DirBlobStore, EnvConfig, Environment, Exec, ExitStatus, Limits, Setup,
};
use serde::Serialize;

use crate::bench::Trap;
use crate::error::Error;

/// Limits of one probe run.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeOptions {
    /// Wall-clock limit of each probe.
    pub timeout: Duration,
    /// Bytes of each stream kept in the result.
    pub keep_bytes: usize,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            timeout: Duration::from_secs(60),
            keep_bytes: 8 * 1024,
        }
    }
}

/// What one probe said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Its stdout was not blank: the agent fell into the trap.
    FellIn,
    /// Its stdout was blank.
    Clear,
    /// No answer: the trap has no probe, or the probe timed out or could not run.
    NoAnswer,
}

/// One trap's probe on one tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProbeResult {
    /// The trap's id.
    pub trap: String,
    /// The verdict.
    pub outcome: Outcome,
    /// The probe's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// Its standard output (the first [`ProbeOptions::keep_bytes`]).
    pub stdout: String,
    /// The size of its whole standard output.
    pub stdout_bytes: u64,
    /// Its standard error (the first [`ProbeOptions::keep_bytes`]).
    pub stderr: String,
    /// Why there is no answer, for [`Outcome::NoAnswer`].
    pub note: Option<String>,
    /// Its wall time in milliseconds.
    pub millis: u64,
}

impl ProbeResult {
    /// Whether the agent fell in (`None`: no answer).
    pub fn fell_in(&self) -> Option<bool> {
        match self.outcome {
            Outcome::FellIn => Some(true),
            Outcome::Clear => Some(false),
            Outcome::NoAnswer => None,
        }
    }

    fn no_answer(trap: &Trap, note: String, millis: u64) -> ProbeResult {
        ProbeResult {
            trap: trap.id.clone(),
            outcome: Outcome::NoAnswer,
            exit_code: None,
            stdout: String::new(),
            stdout_bytes: 0,
            stderr: String::new(),
            note: Some(note),
            millis,
        }
    }
}

/// `s` as one single-quoted shell word.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// A marker no probe prints by chance: the clock and the process id.
fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("BATON-PROBE-{:x}-{:x}", nanos, std::process::id())
}

/// The wrapper command around `probe` (see the module docs).
fn wrapped(probe: &str, marker: &str, keep: usize) -> String {
    format!(
        "d=$(mktemp -d) || exit 125\n\
         bash -c {probe} >\"$d/o\" 2>\"$d/e\" </dev/null\n\
         rc=$?\n\
         if grep -q '[^[:space:]]' \"$d/o\"; then blank=0; else blank=1; fi\n\
         printf '%s %s %s %s\\n' {marker} \"$rc\" \"$(wc -c <\"$d/o\")\" \"$blank\"\n\
         head -c {keep} \"$d/o\"\n\
         printf '\\n%s\\n' {marker}\n\
         head -c {keep} \"$d/e\"\n\
         rm -rf \"$d\"\n",
        probe = quote(probe),
    )
}

/// Read the wrapper's output: (exit code, stdout size, stdout blank, stdout, stderr).
fn parse(text: &str, marker: &str) -> Option<(i32, u64, bool, String, String)> {
    let start = text.find(&format!("{marker} "))?;
    let rest = &text[start + marker.len() + 1..];
    let (header, body) = rest.split_once('\n')?;
    let mut fields = header.split_whitespace();
    let rc = fields.next()?.parse().ok()?;
    let bytes = fields.next()?.parse().ok()?;
    let blank = fields.next()? == "1";
    let (stdout, stderr) = match body.split_once(&format!("\n{marker}\n")) {
        Some((o, e)) => (o.to_string(), e.to_string()),
        None => (body.to_string(), String::new()),
    };
    Some((rc, bytes, blank, stdout, stderr))
}

/// Run one probe in `env` (the tree is not reset here).
fn run_one(env: &mut dyn Environment, trap: &Trap, opts: &ProbeOptions) -> ProbeResult {
    let started = Instant::now();
    let millis = |s: Instant| u64::try_from(s.elapsed().as_millis()).unwrap_or(u64::MAX);
    let Some(probe) = trap.detect.as_deref().filter(|p| !p.trim().is_empty()) else {
        return ProbeResult::no_answer(trap, "the trap has no detect_fell_in probe".into(), 0);
    };
    let marker = marker();
    let exec = Exec::new(wrapped(probe, &marker, opts.keep_bytes)).timeout(opts.timeout);
    let out = match env.exec(&exec) {
        Ok(out) => out,
        Err(e) => {
            return ProbeResult::no_answer(
                trap,
                format!("the probe did not run: {e}"),
                millis(started),
            );
        }
    };
    if out.status == ExitStatus::TimedOut {
        return ProbeResult::no_answer(
            trap,
            format!("the probe timed out after {:?}", opts.timeout),
            millis(started),
        );
    }
    // The header is at the start: it survives a cut middle.
    let text = if out.output.is_truncated() {
        out.output.head.clone()
    } else {
        out.output.text()
    };
    let Some((rc, bytes, blank, stdout, stderr)) = parse(&text, &marker) else {
        return ProbeResult::no_answer(
            trap,
            format!(
                "the probe's wrapper did not report ({}): {}",
                out.status,
                out.output.last(400)
            ),
            millis(started),
        );
    };
    ProbeResult {
        trap: trap.id.clone(),
        outcome: if blank {
            Outcome::Clear
        } else {
            Outcome::FellIn
        },
        exit_code: Some(rc),
        stdout,
        stdout_bytes: bytes,
        stderr,
        note: None,
        millis: millis(started),
    }
}

/// Run every trap's probe in `env`, on its working tree as it is (the tree an agent left),
/// restoring the tree after each probe so each sees the same tree and `env` is given back
/// unchanged. One result per trap, in the traps' order.
pub fn probe_env(
    scenario: &str,
    env: &mut dyn Environment,
    traps: &[Trap],
    opts: &ProbeOptions,
) -> Result<Vec<ProbeResult>, Error> {
    let sandbox = |source| Error::ProbeSandbox {
        scenario: scenario.to_string(),
        source,
    };
    let scratch = tempfile::Builder::new()
        .prefix("baton-probes-")
        .tempdir()
        .map_err(|source| Error::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    let blobs = DirBlobStore::new(scratch.path()).map_err(sandbox)?;
    let before = env.snapshot(&blobs).map_err(sandbox)?;
    let mut out = Vec::with_capacity(traps.len());
    for trap in traps {
        out.push(run_one(env, trap, opts));
        env.restore(&blobs, &before.id).map_err(sandbox)?;
    }
    Ok(out)
}

/// The sandbox probes run in when no environment is given: `baton-env`'s bubblewrap backend,
/// no network, the probe's timeout, a bounded output.
pub fn probe_config(opts: &ProbeOptions) -> EnvConfig {
    let mut config = EnvConfig::for_backend(BackendKind::Bwrap);
    config.network = false;
    config.limits = Limits {
        timeout_secs: opts.timeout.as_secs_f64(),
        output_bytes: (4 * opts.keep_bytes as u64).max(16 * 1024),
        ..Limits::default()
    };
    config
}

/// Run every trap's probe on a copy of the host folder `tree` (the final tree of an
/// episode, `.git` included) in a fresh bubblewrap sandbox ([`probe_config`]).
pub fn probe_tree(
    scenario: &str,
    tree: &std::path::Path,
    traps: &[Trap],
    opts: &ProbeOptions,
) -> Result<Vec<ProbeResult>, Error> {
    let mut env = baton_env::start(&probe_config(opts), &Setup::tree(tree)).map_err(|source| {
        Error::ProbeSandbox {
            scenario: scenario.to_string(),
            source,
        }
    })?;
    let results = probe_env(scenario, env.as_mut(), traps, opts)?;
    let _ = env.close();
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_decides_and_streams_split_at_the_marker() {
        let m = "BATON-PROBE-1-2";
        let text = format!("{m} 0 12 0\nsrc/a.ts:1:x\n\n{m}\ngrep: warning\n");
        assert_eq!(
            parse(&text, m),
            Some((
                0,
                12,
                false,
                "src/a.ts:1:x\n".to_string(),
                "grep: warning\n".to_string()
            ))
        );
        assert_eq!(parse("no header", m), None);
        let blank = format!("{m} 1 3 1\n \n\n\n{m}\n");
        assert_eq!(parse(&blank, m).map(|p| (p.0, p.2)), Some((1, true)));
    }
}
