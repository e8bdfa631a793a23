//! Tests of task loading and scoring with the real sandbox (bubblewrap), the docker backend
//! through baton-env's shim client, and the SWE-bench harness through a stand-in Python.
//!
//! Without a working sandbox the scoring tests print a loud SKIPPED line and pass, unless
//! `BATON_REQUIRE_CONFORMANCE=1` (set in CI), in which case they fail.

#![allow(clippy::print_stderr, reason = "a skipped test says so loudly")]

mod docker;
mod loaders;
mod scoring;
mod swebench;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use baton_agent::{AgentTask, LocalScorer, sample_tasks};
use baton_env::{BackendKind, EnvConfig};

/// The bwrap scorer, or `None` (after a loud skip) when the sandbox does not work here.
pub fn scorer() -> Option<LocalScorer> {
    static CHECK: OnceLock<Result<(), String>> = OnceLock::new();
    let config = EnvConfig::for_backend(BackendKind::Bwrap);
    let ok = CHECK.get_or_init(|| {
        let report = baton_env::check(&config);
        if report.passed() {
            Ok(())
        } else {
            Err(report.to_string())
        }
    });
    match ok {
        Ok(()) => Some(LocalScorer::new(config)),
        Err(why) => {
            let msg = format!("\n!!!! SKIPPED: the bwrap sandbox does not work here:\n{why}!!!!\n");
            if std::env::var("BATON_REQUIRE_CONFORMANCE").is_ok_and(|v| v == "1") {
                panic!("BATON_REQUIRE_CONFORMANCE=1 but {msg}");
            }
            eprintln!("{msg}");
            None
        }
    }
}

/// A bundled task by id.
pub fn sample(id: &str) -> AgentTask {
    sample_tasks()
        .unwrap()
        .into_iter()
        .find(|t| t.id == id)
        .unwrap_or_else(|| panic!("no sample task {id}"))
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `../shared/agent/polyglot-python` from the repository root, if present.
pub fn polyglot_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/agent/polyglot-python");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "\n!!!! SKIPPED: {} not found (the polyglot exercises are downloaded by the user) !!!!\n",
            dir.display()
        );
        None
    }
}
