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
//! # Grading design
//!
//! One fresh instance per graded answer. The host calls `extract(response)` (for a full
//! response), then `load(code, fn_name, prompt)` (fence removal, HumanEval imports, the
//! rename, PRELUDE, `reliability_guard`, `exec`, the function lookup), then `call(input)`
//! once per test, in order, in that same instance -- so module-level state persists from
//! test to test exactly as in LiC's single child process. Each step has its own host-side
//! deadline (6 s, LiC's alarm) under LiC's global `(6 + 1) * tests + 5` s limit; an
//! expired deadline drops the instance. The first failing test stops the run.
//!
//! Why a program cannot lie its way to a pass: the expected outputs never enter the guest.
//! `call` returns the function's value serialized by code captured when the component was
//! built (before any candidate code exists) through saved references to the builtin types;
//! only exact `None`/`bool`/`int`/`float`/`str`/`list`/`tuple`/`dict` are looked into, and
//! anything else (a subclass, an object with a lying `__eq__`) becomes an opaque marker
//! that equals nothing. The host parses the record as plain values and compares it with the
//! expected JSON under Python's `==` (`1 == 1.0`, `True == 1`, nested tuple != list, exact
//! big ints, NaN != NaN). A program that patches builtins, prints fake records, writes
//! files or even rewrites the harness can at most make `call` report some value it could
//! have returned honestly, which gains nothing without knowing the expected output.
//!
//! # Where verdicts can differ from LiC
//!
//! LiC ran CPython 3.11 natively; this is CPython 3.14 in WASI. All 199 public `code`
//! conformance vectors agree. Known differences, none of which a vector exercises:
//!
//! * C-level recursion (`@lru_cache` DFS, recursion through `sorted(key=...)`) stops with a
//!   `RecursionError` after about 2,000 levels (CPython's WASI build has a 1 MB C stack);
//!   native 3.11 with LiC's `setrecursionlimit(50000)` goes to roughly 10,000-20,000.
//!   Plain Python recursion reaches the 50,000 limit as natively.
//! * A return value of any type other than the exact builtins above (a `namedtuple`, a
//!   `Fraction`, an `IntEnum`, a list subclass) fails, where LiC's `==` might accept it.
//! * No threads, processes, sockets, `ctypes`, or non-stdlib modules; a 512 MiB memory cap
//!   (LiC has none); 3.14 syntax and behaviour changes (e.g. `except A, B:` parses).
//! * A C loop that LiC's alarm cannot interrupt (`sum(range(10**10))`) is cut here at the
//!   per-test 6 s instead of LiC's global limit; both score 0.
//!
//! # Bounds on hostile programs
//!
//! Besides the time limits and the memory cap:
//!
//! * **Waits take their time.** This CPython has no threads, and its C lock returned at
//!   once from a timed `acquire` of a held lock, so `threading.Event().wait(120)`,
//!   `Condition.wait`, `Semaphore.acquire(timeout=...)` and `SimpleQueue.get(timeout=...)`
//!   did not wait at all. The runner replaces the lock with one that waits as a native
//!   lock in a single-threaded program does (the whole timeout, or forever without one),
//!   so such waits hit LiC's time limits as they would natively. `time.sleep` and
//!   `select.select` block in the host, where the deadline cuts them. (`asyncio` cannot
//!   start its event loop here: it needs a socket pair.)
//! * **Scratch quotas.** `/tmp` holds at most [`ScratchLimits::bytes`] in at most
//!   [`ScratchLimits::files`] entries, and a guest holding [`ScratchLimits::open_files`]
//!   handles cannot open another file (each may keep a host descriptor open); see
//!   [`ScratchLimits`] for how the WASI calls are wrapped.
//! * **Returned values** are capped at [`MAX_RESULT_BYTES`] once serialized, in the guest
//!   and again in the host.
//! * **Concurrency.** A [`CodeGrader`] and its clones grade at most
//!   [`GraderConfig::max_concurrent`] answers at once (default: one per core, and no more
//!   than half the machine's memory in guest memory); other callers wait for a turn, and
//!   their time limits start when it comes.
//! * A code task **without test cases** passes only if the named function exists after
//!   the module runs, as in LiC (its harness looks the function up before any test).
//!
//! The runtime is built once per machine by [`install`] (a venv with the pinned
//! componentize-py, then `componentize-py componentize`), and compiled code is cached
//! under `sandbox/cache/` ([`SandboxHome`] says where things live). Code that needs the
//! runtime and does not find it builds it on first use.
//!
//! Not for: sandboxing anything but Python, scoring other families (`baton-eval`), or the
//! CLI (`baton sandbox install|check` wraps [`install`] and [`check`]).
//!
//! Main types: [`Sandbox`], [`Limits`], [`ScratchLimits`], [`RunOutput`], [`CodeGrader`],
//! [`GraderConfig`], [`SandboxError`]. Test cases are read by `baton_data::testcases`.
//!
//! A machine's first [`Sandbox::open`] (or [`install`]) builds the runtime, about a minute
//! that can fall in the middle of a run: it tells the [`BuildObserver`] registered with
//! [`observe_builds`] when it starts (what it fetches, that it happens once), each of its
//! [`BUILD_STEPS`] and the end, so the binary can say so above its progress bar.
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

mod announce;
mod cache;
mod error;
mod grader;
mod home;
mod install;
mod pyvalue;
mod runtime;
mod scratch;

pub use announce::{BUILD_STEPS, BuildEvent, BuildObserver, observe_builds};
pub use cache::WASMTIME_VERSION;
pub use error::SandboxError;
pub use grader::{CodeGrader, GraderConfig, MAX_RESULT_BYTES};
pub use home::{BATON_HOME_ENV, SandboxHome};
pub use install::{
    COMPONENTIZE_PY_VERSION, CheckReport, InstallOptions, InstallReport, RuntimeInfo, SmokeResult,
    check, check_in, install, source_id,
};
pub use runtime::{Limits, RunOutput, RunStatus, SCRATCH_GUEST_PATH, Sandbox};
pub use scratch::ScratchLimits;
