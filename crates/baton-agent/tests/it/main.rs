//! Tests of task loading and scoring with the real sandbox (bubblewrap), the docker backend
//! through baton-env's shim client, and the SWE-bench harness through a stand-in Python.
//!
//! Without a working sandbox the scoring tests print a loud SKIPPED line and pass, unless
//! `BATON_REQUIRE_CONFORMANCE=1` (set in CI), in which case they fail.

mod agent_loop;
mod docker;
mod loaders;
mod mini_parity;
mod mini_parity_http;
mod scoring;
mod snapshots;
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
            baton_fixture::skip(format!("the bwrap sandbox does not work here:\n{why}"));
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

/// The polyglot exercises in the shared agent material (`BATON_AGENT_DIR`, else
/// `../shared/agent`), or `None` after a loud skip.
pub fn polyglot_dir() -> Option<PathBuf> {
    let dir = baton_fixture::shared_dir("agent")?.join("polyglot-python");
    if dir.is_dir() {
        Some(dir)
    } else {
        baton_fixture::skip(format!("{} not found", dir.display()));
        None
    }
}
