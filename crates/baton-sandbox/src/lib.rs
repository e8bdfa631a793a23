//! Run untrusted Python in a WebAssembly sandbox, and grade LiC code answers with it.
//!
//! The sandbox is CPython 3.14 built for WASI (the interpreter inside `componentize-py`
//! 0.25.1 from PyPI) packaged as a WASI 0.2 component together with a small runner
//! (`sandbox/runner/app.py`), and run under wasmtime 48 with a wall-clock limit that also
//! cuts blocking host calls (async wasmtime, epoch yields, tokio timeouts), a memory cap,
//! capped stdout/stderr, an empty environment, no sockets, and a fresh private scratch
//! directory as the only filesystem. Every run gets a fresh instance of a component
//! linked once ([`Sandbox`]), so runs are cheap (a few ms) and proceed in parallel.
//!
//! On top of it, [`CodeGrader`] is LiC's code evaluator (`lic` profile): the rule-based
//! answer extraction and `evaluator_function` with LiveCodeBench's call-based tests,
//! verdict for verdict, except that a program cannot lie its way to a pass: the guest never
//! sees an expected output, return values leave it through a serializer captured before
//! the candidate runs that accepts only exact builtin types, and the host compares them
//! with the expected JSON under Python's `==` ([`CodeGrader`] has the details).
//!
//! The runtime is built once per machine by [`install`] (a venv with the pinned
//! componentize-py, then `componentize-py componentize`), and compiled code is cached
//! under `sandbox/cache/` ([`SandboxHome`] says where things live). Code that needs the
//! runtime and does not find it builds it on first use.
//!
//! Not for: sandboxing anything but Python, scoring other families (`baton-eval`), or the
//! CLI (`baton sandbox install|check` wraps [`install`] and [`check`]).
//!
//! Main types: [`Sandbox`], [`Limits`], [`RunOutput`], [`CodeGrader`], [`GraderConfig`],
//! [`SandboxError`].
//!
//! ```no_run
//! use baton_sandbox::{CodeGrader, GraderConfig};
//! let grader = CodeGrader::new(GraderConfig::default())?;
//! let sample = serde_json::json!({
//!     "metadata": {"func_name": "add"},
//!     "public_test_cases": "[{\"input\": \"1\\n2\", \"output\": \"3\"}]",
//! });
//! let verdict = grader.grade_response("```python\ndef plus(a, b):\n    return a + b\n```", &sample)?;
//! assert_eq!(verdict.score, 1.0);
//! # Ok::<(), baton_sandbox::SandboxError>(())
//! ```
#![deny(missing_docs)]

mod cache;
mod error;
mod grader;
mod home;
mod install;
mod pyvalue;
mod runtime;
mod testcases;

pub use cache::WASMTIME_VERSION;
pub use error::SandboxError;
pub use grader::{CodeGrader, GraderConfig};
pub use home::{BATON_HOME_ENV, SandboxHome};
pub use install::{
    COMPONENTIZE_PY_VERSION, CheckReport, InstallOptions, InstallReport, RuntimeInfo, SmokeResult,
    check, check_in, install, source_id,
};
pub use runtime::{Limits, RunOutput, RunStatus, SCRATCH_GUEST_PATH, Sandbox};
