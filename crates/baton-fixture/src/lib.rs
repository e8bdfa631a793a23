//! Test-only helpers that find what baton's tests compare against, and refuse to let a missing
//! one pass unnoticed.
//!
//! baton's conformance tests read real-world material that is not part of the repository: LiC's
//! conformance vectors in `../shared/conformance` (relative to the repository root), and later
//! `../shared/replies`, `lic`, `handover` and `agent`; differential tests run a local CPython.
//! On a user's machine either may be missing, and the tests then pass after printing a
//! `SKIPPED:` line. In CI that would let a test pass by accident, so with
//! `BATON_REQUIRE_CONFORMANCE=1` a missing folder or interpreter fails the test instead.
//!
//! - [`shared_dir`] finds a folder of the shared test material: `BATON_<NAME>_DIR`
//!   (`BATON_CONFORMANCE_DIR`, `BATON_HANDOVER_DIR`, ...), else `$BATON_SHARED_DIR/<name>`, else
//!   `../shared/<name>`;
//!   [`shared_path`] says where it would be, for benchmarks with a fallback of their own.
//! - [`python3`] and [`cpython_with_unicode`] find an interpreter; [`Python::run`] runs a
//!   script on it; [`run_python`] does both.
//! - [`interop_venv`] finds the Python environment of the interop tests (a LiteLLM proxy and
//!   the official OpenAI and Anthropic SDKs) that `.ci/python-env` installs under `target/`;
//! - [`docker_engine`] finds the Docker engine `.ci/docker-engine` started (its host, base
//!   image and client); unlike the rest it is optional even in CI: a machine that cannot
//!   run one only loses those tests, with a `SKIPPED:` line.
//! - [`skip`] is the shared "missing" path: a loud line, or a panic when it is required.
//! - [`SplitMix`] generates reproducible test inputs.
//! - [`Tmpfs`] mounts a small real file system (root only), for full-disk tests.
//!
//! It is not for anything a test can build itself (temporary stores, HTTP servers on
//! 127.0.0.1:0): those belong in the test. It is a dev-dependency only, and has no dependencies.
//!
//! The `SKIPPED:` line goes straight to the process's standard error, not through `eprintln!`,
//! so the test harness's output capture does not hide it.
//!
//! ```no_run
//! let Some(dir) = baton_fixture::shared_dir("conformance") else {
//!     return; // printed "SKIPPED: ..." (or panicked under BATON_REQUIRE_CONFORMANCE=1)
//! };
//! let vectors = std::fs::read_to_string(dir.join("math.jsonl")).expect("math vectors");
//! # let _ = vectors;
//! ```
#![deny(missing_docs)]

use std::fmt::Display;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// Environment variable that turns every skip into a failure when set to `1`.
pub const REQUIRE_ENV: &str = "BATON_REQUIRE_CONFORMANCE";
/// Environment variable that points at the parent of all shared test folders.
pub const SHARED_DIR_ENV: &str = "BATON_SHARED_DIR";

/// Whether `BATON_REQUIRE_CONFORMANCE=1` is set, so that missing material is a failure.
#[must_use]
pub fn required() -> bool {
    std::env::var_os(REQUIRE_ENV).is_some_and(|v| v == "1")
}

/// Report that a test could not run because `what` is missing: print a loud `SKIPPED: what`
/// line to standard error, or panic with it when [`required`] is true.
///
/// # Panics
///
/// When `BATON_REQUIRE_CONFORMANCE=1` is set.
pub fn skip(what: impl Display) {
    if required() {
        panic!("{what} ({REQUIRE_ENV}=1 makes this a failure)");
    }
    let line =
        format!("\nSKIPPED: {what}; the test did not run (set {REQUIRE_ENV}=1 to fail instead)\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// The shared test folder `name` (`"conformance"`, `"replies"`, `"lic"`, `"handover"`,
/// `"agent"`, `"bench"`), or `None` after [`skip`] when it does not exist.
///
/// Looked up as `BATON_<NAME>_DIR` (see [`dir_env`]), else `$BATON_SHARED_DIR/<name>`, else
/// `../shared/<name>` beside the repository.
///
/// # Panics
///
/// When the folder is missing and `BATON_REQUIRE_CONFORMANCE=1` is set.
#[must_use]
pub fn shared_dir(name: &str) -> Option<PathBuf> {
    let (dir, source) = locate(name);
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(format!(
            "shared test folder {} not found ({source})",
            dir.display()
        ));
        None
    }
}

/// Where the shared test folder `name` is expected, whether or not it exists: for callers
/// that have their own fallback (a benchmark that generates inputs instead) and must not skip.
#[must_use]
pub fn shared_path(name: &str) -> PathBuf {
    locate(name).0
}

/// The environment variable that points at the shared folder `name` on its own:
/// `BATON_CONFORMANCE_DIR` for `"conformance"`, `BATON_HANDOVER_DIR` for `"handover"`.
#[must_use]
pub fn dir_env(name: &str) -> String {
    let upper: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("BATON_{upper}_DIR")
}

/// Where `name` is looked for, and a note on how that was decided.
fn locate(name: &str) -> (PathBuf, String) {
    let own = dir_env(name);
    if let Some(dir) = std::env::var_os(&own) {
        return (PathBuf::from(dir), format!("from {own}"));
    }
    if let Some(parent) = std::env::var_os(SHARED_DIR_ENV) {
        return (
            PathBuf::from(parent).join(name),
            format!("from {SHARED_DIR_ENV}"),
        );
    }
    // This crate sits at `<repo>/crates/baton-fixture`; the shared folder is beside `<repo>`.
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared")
        .join(name);
    (dir, format!("set {own} or {SHARED_DIR_ENV}"))
}

/// Environment variable that points at the interop tests' virtual environment.
pub const INTEROP_VENV_ENV: &str = "BATON_INTEROP_VENV";

/// The virtual environment with the LiteLLM proxy and the official SDKs that `.ci/python-env`
/// installs (`BATON_INTEROP_VENV`, else `target/interop-venv` in the repository), or `None`
/// after [`skip`] when it has no `bin/python`.
///
/// # Panics
///
/// When it is missing and `BATON_REQUIRE_CONFORMANCE=1` is set.
#[must_use]
pub fn interop_venv() -> Option<PathBuf> {
    let dir = std::env::var_os(INTEROP_VENV_ENV).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/interop-venv"),
        PathBuf::from,
    );
    if dir.join("bin/python").is_file() {
        Some(dir)
    } else {
        skip(format!(
            "the interop Python environment {} is missing (run .ci/python-env, or set {INTEROP_VENV_ENV})",
            dir.display()
        ));
        None
    }
}

/// The Docker engine `.ci/docker-engine` started: its last line sets these variables.
#[derive(Debug, Clone)]
pub struct DockerEngine {
    /// `DOCKER_HOST` of the engine (`BATON_CI_DOCKER_HOST`).
    pub host: String,
    /// The base image imported into it (`BATON_CI_DOCKER_BASE`).
    pub base: String,
    /// The client matching its API (`BATON_CI_DOCKER_CLIENT`).
    pub client: PathBuf,
}

/// The engine named by `BATON_CI_DOCKER_HOST`, `BATON_CI_DOCKER_BASE` and
/// `BATON_CI_DOCKER_CLIENT`, or `None` after a `SKIPPED:` line naming `what` when they
/// are not set. Never a failure, whatever [`required`] says: Docker is optional where the
/// machine cannot start an engine. An engine that is named but does not answer is one.
///
/// # Panics
///
/// When the variables are set but the engine does not have the base image (it is not
/// running, or the script did not finish).
#[must_use]
pub fn docker_engine(what: &str) -> Option<DockerEngine> {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let (Some(host), Some(base), Some(client)) = (
        var("BATON_CI_DOCKER_HOST"),
        var("BATON_CI_DOCKER_BASE"),
        var("BATON_CI_DOCKER_CLIENT"),
    ) else {
        let line = format!(
            "\nSKIPPED: no Docker engine (BATON_CI_DOCKER_HOST is set by .ci/docker-engine); {what} did not run\n"
        );
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
        return None;
    };
    let probe = Command::new(&client)
        .args(["-H", &host, "image", "inspect", &base])
        .stdout(Stdio::null())
        .output()
        .expect("the docker client runs");
    assert!(
        probe.status.success(),
        "the engine at {host} has no {base}: {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    Some(DockerEngine {
        host,
        base,
        client: client.into(),
    })
}

/// splitmix64: a fixed, seedable stream of pseudo-random numbers for generated test inputs, so
/// that a seed gives the same inputs on every machine and a failure can be replayed.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// The stream that starts from `seed`.
    #[must_use]
    pub fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// One of `items` (not empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// A Python interpreter found on `PATH`.
#[derive(Debug, Clone)]
pub struct Python {
    /// The command it runs as (`python3`, `python3.11`).
    pub program: String,
    /// `platform.python_version()`, e.g. `3.11.7`.
    pub version: String,
    /// `unicodedata.unidata_version`, e.g. `14.0.0`.
    pub unicode: String,
}

impl Python {
    /// Ask `program` for its versions; `None` when it does not run.
    fn probe(program: &str) -> Option<Python> {
        let out = Command::new(program)
            .args([
                "-c",
                "import platform, unicodedata; print(platform.python_version(), unicodedata.unidata_version)",
            ])
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|out| out.status.success())?;
        let text = String::from_utf8(out.stdout).ok()?;
        let (version, unicode) = text.trim().split_once(' ')?;
        Some(Python {
            program: program.to_owned(),
            version: version.to_owned(),
            unicode: unicode.to_owned(),
        })
    }

    /// Run `script` (`python -c script`) with `input` on standard input and return what it
    /// printed.
    ///
    /// # Panics
    ///
    /// When the interpreter cannot be started, exits with an error, or prints something that
    /// is not UTF-8: a broken comparison script is a test failure, never a skip.
    #[must_use]
    pub fn run(&self, script: &str, input: &str) -> String {
        let mut child = Command::new(&self.program)
            .args(["-X", "utf8", "-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {}: {err}", self.program));
        // Write on another thread: a script that prints while it reads would otherwise fill
        // the pipe and wait on us forever.
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let input = input.to_owned();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child
            .wait_with_output()
            .unwrap_or_else(|err| panic!("{} did not finish: {err}", self.program));
        let written = writer.join().expect("the writer thread does not panic");
        assert!(
            out.status.success(),
            "{} failed ({}): {}",
            self.program,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        written.unwrap_or_else(|err| panic!("writing to {}: {err}", self.program));
        String::from_utf8(out.stdout)
            .unwrap_or_else(|err| panic!("{} printed non-UTF-8: {err}", self.program))
    }
}

/// `python3` from `PATH`, or `None` after [`skip`] when there is none.
///
/// # Panics
///
/// When there is none and `BATON_REQUIRE_CONFORMANCE=1` is set.
#[must_use]
pub fn python3() -> Option<Python> {
    let found = Python::probe("python3");
    if found.is_none() {
        skip("python3 is not on PATH");
    }
    found
}

/// The first of `python3` and `python3.11` whose Unicode database is `unicode` (CPython 3.11
/// has `14.0.0`), or `None` after [`skip`] when neither has it.
///
/// # Panics
///
/// When there is none and `BATON_REQUIRE_CONFORMANCE=1` is set.
#[must_use]
pub fn cpython_with_unicode(unicode: &str) -> Option<Python> {
    let mut seen = Vec::new();
    for program in ["python3", "python3.11"] {
        match Python::probe(program) {
            Some(python) if python.unicode == unicode => return Some(python),
            Some(other) => seen.push(format!(
                "{program} is {} with Unicode {}",
                other.version, other.unicode
            )),
            None => seen.push(format!("no {program}")),
        }
    }
    skip(format!(
        "no CPython with Unicode {unicode} on PATH ({})",
        seen.join(", ")
    ));
    None
}

/// Run `script` on [`python3`] with `input` on standard input; `None` after [`skip`] when
/// there is no `python3`.
///
/// # Panics
///
/// As [`Python::run`], and when there is no `python3` and `BATON_REQUIRE_CONFORMANCE=1` is set.
#[must_use]
pub fn run_python(script: &str, input: &str) -> Option<String> {
    python3().map(|python| python.run(script, input))
}

/// A tmpfs of a given size mounted at `<parent>/small` (root only), unmounted on drop:
/// a real file system that fills up, for the tests of what happens when the disk is full.
#[derive(Debug)]
pub struct Tmpfs {
    /// Where it is mounted.
    pub mnt: PathBuf,
}

impl Tmpfs {
    /// Mount one of `size` (`3m`) under `parent`, or `None` where this process may not
    /// mount (not root); the caller decides whether that is a [`skip`].
    pub fn mount(parent: &std::path::Path, size: &str) -> Option<Tmpfs> {
        let mnt = parent.join("small");
        std::fs::create_dir_all(&mnt).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&mnt)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs { mnt })
    }

    /// Bytes free on it.
    pub fn available(&self) -> u64 {
        let out = Command::new("df")
            .args(["-B1", "--output=avail"])
            .arg(&self.mnt)
            .output()
            .expect("df runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)
            .and_then(|l| l.trim().parse().ok())
            .expect("df prints the free bytes")
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_shared_folder_is_beside_the_repository() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        assert!(root.join("Cargo.toml").is_file() && root.join("crates").is_dir());
        if std::env::var_os(SHARED_DIR_ENV).is_none()
            && std::env::var_os(dir_env("replies")).is_none()
        {
            let (dir, hint) = locate("replies");
            assert_eq!(dir, root.join("../shared/replies"));
            assert!(
                hint.contains("BATON_REPLIES_DIR or BATON_SHARED_DIR"),
                "{hint}"
            );
        }
    }

    #[test]
    fn each_folder_has_its_own_variable() {
        assert_eq!(dir_env("conformance"), "BATON_CONFORMANCE_DIR");
        assert_eq!(dir_env("handover"), "BATON_HANDOVER_DIR");
        assert_eq!(dir_env("handover/bench"), "BATON_HANDOVER_BENCH_DIR");
    }

    #[test]
    fn a_missing_folder_is_none_or_a_failure() {
        let name = "no-such-folder-for-baton-tests";
        let result = std::panic::catch_unwind(|| shared_dir(name));
        match result {
            Ok(found) => {
                assert!(!required());
                assert_eq!(found, None);
            }
            Err(panic) => {
                assert!(required());
                let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
                assert!(
                    message.contains(name) && message.contains(REQUIRE_ENV),
                    "{message}"
                );
            }
        }
    }
}
