//! LiC's code evaluator (`lic` profile) on top of the sandbox.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use baton_types::Verdict;
use serde_json::{Value, json};

use crate::pyvalue::{self, PyValue, Syntax};
use crate::runtime::{CallOutcome, Run, RunStatus, small_runtime};
use crate::{Limits, Sandbox, SandboxError, SandboxHome, ScratchLimits};
use baton_data::testcases::{TestCase, load_tests};

/// How long a rendering of a value may get in verdict details.
const SHOWN: usize = 200;

/// Cap on the serialized return value of one test call, in bytes (16 MiB).
///
/// The guest's serializer stops at this size (so an honest program never builds more),
/// and the host refuses a longer record whatever produced it (a program that rewrote the
/// serializer can at most fill guest memory, which [`GraderConfig::memory`] caps). LiC
/// compares in memory without a limit, but an expected output is JSON text in the task
/// file, and LiveCodeBench's largest are well under a megabyte; a value whose repr is
/// 16 MiB cannot equal one of those.
pub const MAX_RESULT_BYTES: usize = 16 << 20;

/// Settings for [`CodeGrader`].
#[derive(Debug, Clone, PartialEq)]
pub struct GraderConfig {
    /// LiC's per-test alarm, which also bounds executing the module (default 6 s). The
    /// whole run is bounded by LiC's global limit, `(limit + 1) * tests + 5` seconds.
    pub test_time_limit: Duration,
    /// Bound on the answer extraction, which LiC runs without a limit (default 30 s).
    pub extract_time_limit: Duration,
    /// Guest memory cap in bytes (default 512 MiB).
    pub memory: usize,
    /// Cap on raw writes to stdout/stderr (default 1 MiB each). `print` output of the
    /// graded program is discarded without counting, as LiC lets a program print freely.
    pub output: usize,
    /// Quotas of the program's scratch directory `/tmp` (default 64 MiB, 1000 entries,
    /// 128 open handles). LiC's programs run natively without one; no HumanEval or
    /// LiveCodeBench solution needs the filesystem.
    pub scratch: ScratchLimits,
    /// How many answers may be graded at once by this grader and its clones (default
    /// [`GraderConfig::machine_concurrency`]). Each holds up to [`GraderConfig::memory`] of
    /// guest memory and a core; further callers wait, and their time limits start only
    /// when their turn comes.
    pub max_concurrent: usize,
    /// The sandbox folder; default [`SandboxHome::locate`].
    pub home: Option<SandboxHome>,
}

impl Default for GraderConfig {
    fn default() -> Self {
        let memory = 512 << 20;
        GraderConfig {
            test_time_limit: Duration::from_secs(6),
            extract_time_limit: Duration::from_secs(30),
            memory,
            output: 1 << 20,
            scratch: ScratchLimits::default(),
            max_concurrent: GraderConfig::machine_concurrency(memory),
            home: None,
        }
    }
}

impl GraderConfig {
    /// A concurrency sized to this machine for graders of `memory` bytes each: one per
    /// core, and no more than half the machine's physical memory (`/proc/meminfo`, where
    /// there is one) filled with guest memory. At least 1.
    pub fn machine_concurrency(memory: usize) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let by_memory = total_memory()
            .map(|total| (total / 2) / (memory.max(1) as u64))
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        cores.min(by_memory).max(1)
    }
}

/// Physical memory in bytes, from `/proc/meminfo` (`None` where it cannot be read).
fn total_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// A counting semaphore shared by a grader and its clones: at most `limit` gradings hold
/// a permit at once.
#[derive(Debug)]
struct Gate {
    limit: usize,
    busy: Mutex<usize>,
    freed: Condvar,
}

/// A grading slot, given back on drop.
struct Permit<'a>(&'a Gate);

impl Gate {
    fn new(limit: usize) -> Gate {
        Gate {
            limit: limit.max(1),
            busy: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Wait for a free slot.
    fn enter(&self) -> Permit<'_> {
        let mut busy = self.busy.lock().unwrap_or_else(PoisonError::into_inner);
        while *busy >= self.limit {
            busy = self
                .freed
                .wait(busy)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *busy += 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut busy = self.0.busy.lock().unwrap_or_else(PoisonError::into_inner);
        *busy -= 1;
        self.0.freed.notify_one();
    }
}

/// LiC's code grading: `TaskCode.extract_answer` and `TaskCode.evaluator_function`, with the
/// program run in the WASI sandbox.
///
/// One instance per graded answer: the module is executed once and every test is a call
/// into that same instance, in order, as LiC's single child process does (module state
/// persists from test to test). The host drives each step with its own deadline (6 s for
/// executing the module and for each test, LiC's global limit overall), decides every
/// test from the returned value, and stops at the first failure.
///
/// `Send + Sync`; grading blocks the calling thread, so call it from plain threads, rayon
/// or `spawn_blocking`, never from inside an async task.
#[derive(Debug, Clone)]
pub struct CodeGrader {
    sandbox: Sandbox,
    config: GraderConfig,
    gate: Arc<Gate>,
}

/// Which extraction to run.
enum Extraction<'a> {
    /// LiC's `TaskCode.extract_answer`.
    Lic(&'a str),
    /// baton's, with the task's function name when known.
    Kept(&'a str, Option<&'a str>),
}

/// What the answer under test is.
enum Answer<'a> {
    Response(&'a str),
    Extracted(&'a str),
}

/// One test's result, for the verdict details.
struct TestResult {
    index: usize,
    outcome: &'static str,
    elapsed: Duration,
    got: Option<String>,
    expected: Option<String>,
    error: Option<String>,
}

impl TestResult {
    fn to_json(&self) -> Value {
        let mut v = json!({
            "test": self.index,
            "outcome": self.outcome,
            "ms": (self.elapsed.as_secs_f64() * 1e4).round() / 10.0,
        });
        for (key, value) in [
            ("got", &self.got),
            ("expected", &self.expected),
            ("error", &self.error),
        ] {
            if let Some(text) = value {
                v[key] = Value::String(text.clone());
            }
        }
        v
    }
}

impl CodeGrader {
    /// Open (or first build) the sandbox runtime and make a grader.
    pub fn new(config: GraderConfig) -> Result<Self, SandboxError> {
        let home = config.home.clone().unwrap_or_else(SandboxHome::locate);
        let sandbox = Sandbox::open_in(&home)?;
        Ok(Self::from_sandbox(sandbox, config))
    }

    /// A grader on an already open sandbox.
    pub fn from_sandbox(sandbox: Sandbox, config: GraderConfig) -> Self {
        let gate = Arc::new(Gate::new(config.max_concurrent));
        CodeGrader {
            sandbox,
            config,
            gate,
        }
    }

    /// The sandbox this grader runs programs in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The settings in force.
    pub fn config(&self) -> &GraderConfig {
        &self.config
    }

    /// LiC's `TaskCode.extract_answer` (done in the sandbox with Python's `ast`) then
    /// `evaluator_function`.
    pub fn grade_response(&self, response: &str, sample: &Value) -> Result<Verdict, SandboxError> {
        self.grade(Answer::Response(response), sample)
    }

    /// `evaluator_function` on already-extracted code.
    pub fn grade_extracted(&self, code: &str, sample: &Value) -> Result<Verdict, SandboxError> {
        self.grade(Answer::Extracted(code), sample)
    }

    /// The extraction alone (for storing the extracted answer). Where LiC's extractor
    /// raises (`class Solution` mentioned outside every code block) this gives `""`.
    pub fn extract(&self, response: &str) -> Result<String, SandboxError> {
        let found = self.run_extraction(Extraction::Lic(response))?;
        Ok(found.map(|(_, code)| code).unwrap_or_default())
    }

    /// baton's extraction (rules `baton`): the chosen function with the module-level
    /// constants, helpers and imports it needs, never a block of tests or example calls;
    /// the function named `fn_name` (the task's, when known) wins. Gives the rule that
    /// fired (`code.named`, `code.last_def`, `code.class`, their `code.unfenced_*` forms,
    /// `code.lic` for LiC's rule as the last resort, `code.none`) and the code (`""` for
    /// none). The rules are spelled out in `sandbox/runner/app.py`.
    pub fn extract_kept(
        &self,
        response: &str,
        fn_name: Option<&str>,
    ) -> Result<(String, String), SandboxError> {
        let found = self.run_extraction(Extraction::Kept(response, fn_name))?;
        Ok(found.unwrap_or_else(|| ("code.none".to_owned(), String::new())))
    }

    /// One extraction under the extraction deadline: (rule, code), or `None` when it
    /// raised, did not finish or crashed.
    fn run_extraction(
        &self,
        extraction: Extraction<'_>,
    ) -> Result<Option<(String, String)>, SandboxError> {
        let _permit = self.gate.enter();
        let mut run = self.start()?;
        let deadline = Instant::now() + self.config.extract_time_limit;
        let outcome = small_runtime()?.block_on(async {
            match extraction {
                Extraction::Lic(response) => match run.extract(response, deadline).await {
                    CallOutcome::Returned(found) => {
                        CallOutcome::Returned(found.map(|code| ("code.lic".to_owned(), code)))
                    }
                    CallOutcome::TimedOut => CallOutcome::TimedOut,
                    CallOutcome::Stopped(status) => CallOutcome::Stopped(status),
                },
                Extraction::Kept(response, fn_name) => {
                    run.extract_kept(response, fn_name, deadline).await
                }
            }
        });
        Ok(match outcome {
            CallOutcome::Returned(Ok(found)) => Some(found),
            CallOutcome::Returned(Err(_)) => None,
            CallOutcome::TimedOut | CallOutcome::Stopped(_) => {
                tracing::warn!("answer extraction did not finish; treating the answer as empty");
                None
            }
        })
    }

    fn limits(&self) -> Limits {
        Limits {
            time: self.config.test_time_limit,
            memory: self.config.memory,
            stdout: self.config.output,
            stderr: self.config.output,
            scratch: self.config.scratch,
        }
    }

    fn start(&self) -> Result<Run, SandboxError> {
        self.sandbox.start(&self.limits(), &["python"], b"")
    }

    fn grade(&self, answer: Answer<'_>, sample: &Value) -> Result<Verdict, SandboxError> {
        let _permit = self.gate.enter();
        let mut run = self.start()?;
        let runtime = small_runtime()?;
        Ok(runtime.block_on(self.grade_in(&mut run, answer, sample)))
    }

    async fn grade_in(&self, run: &mut Run, answer: Answer<'_>, sample: &Value) -> Verdict {
        let limit = self.config.test_time_limit;
        let mut details = json!({});
        let extracted;
        let code = match answer {
            Answer::Extracted(code) => code,
            Answer::Response(response) => {
                let started = Instant::now();
                let deadline = started + self.config.extract_time_limit;
                let outcome = run.extract(response, deadline).await;
                details["extract_ms"] = ms(started.elapsed());
                match outcome {
                    CallOutcome::Returned(Ok(code)) => {
                        extracted = code;
                        &extracted
                    }
                    CallOutcome::Returned(Err(reason)) => {
                        let reason = reason.strip_prefix("raises: ").unwrap_or(&reason);
                        return fail(
                            format!("extraction raises upstream (IndexError): {reason}"),
                            details,
                        );
                    }
                    CallOutcome::TimedOut => {
                        return fail(
                            format!(
                                "answer extraction took over {} s",
                                secs(self.config.extract_time_limit)
                            ),
                            details,
                        );
                    }
                    CallOutcome::Stopped(status) => {
                        return fail(
                            format!("answer extraction crashed: {}", describe(&status)),
                            details,
                        );
                    }
                }
            }
        };

        // evaluator_function, step 1: fences out, and no `def ` means 0 without running.
        if !code
            .replace("```python", "")
            .replace("```", "")
            .contains("def ")
        {
            return fail("no `def ` in the answer", details);
        }
        let Some(fn_name) = sample
            .pointer("/metadata/func_name")
            .and_then(Value::as_str)
        else {
            return fail(
                "sample has no string metadata.func_name (upstream raises)",
                details,
            );
        };
        let prompt = match sample.get("prompt") {
            None => None,
            Some(Value::String(p)) => Some(p.as_str()),
            Some(_) => return fail("sample prompt is not a string (upstream raises)", details),
        };
        let tests = match load_tests(sample) {
            Ok(tests) => tests,
            Err(e) => {
                return fail(
                    format!("test cases cannot be read (upstream raises): {e}"),
                    details,
                );
            }
        };
        let n = tests.len();
        details["tests"] = json!(n);

        // LiC's child process: its global limit, then the module, then each test.
        let started = Instant::now();
        let global = started + (limit + Duration::from_secs(1)) * n as u32 + Duration::from_secs(5);
        let load_deadline = (started + limit).min(global);
        let outcome = run.load(code, fn_name, prompt, load_deadline).await;
        details["load_ms"] = ms(started.elapsed());
        match outcome {
            CallOutcome::Returned(Ok(())) => {}
            CallOutcome::Returned(Err(reason)) => {
                return fail(
                    self.guest_error("loading the module", &reason, run),
                    details,
                );
            }
            CallOutcome::TimedOut => {
                let what = if load_deadline == global {
                    "LiC's global time limit"
                } else {
                    "the time limit"
                };
                return fail(
                    format!(
                        "executing the module exceeded {what} ({} s)",
                        secs(load_deadline - started)
                    ),
                    details,
                );
            }
            CallOutcome::Stopped(status) => {
                return fail(
                    format!("the program stopped while loading: {}", describe(&status)),
                    details,
                );
            }
        }

        let expected: Vec<Result<PyValue, String>> = tests
            .iter()
            .map(|t| pyvalue::parse(&t.output, Syntax::Json))
            .collect();
        if let Some((i, Err(e))) = expected.iter().enumerate().find(|(_, e)| e.is_err()) {
            return fail(
                format!("expected output of test {i} is not valid JSON: {e}"),
                details,
            );
        }

        let mut results: Vec<TestResult> = Vec::with_capacity(n);
        let mut error = None;
        for (index, (test, expected)) in tests.iter().zip(&expected).enumerate() {
            let Ok(expected) = expected else { break };
            let (result, failure) = self.run_test(run, index, test, expected, global).await;
            results.push(result);
            if let Some(failure) = failure {
                error = Some(failure);
                break;
            }
        }
        details["passed"] = json!(results.iter().filter(|r| r.outcome == "pass").count());
        details["results"] = Value::Array(results.iter().map(TestResult::to_json).collect());
        match error {
            None => Verdict::new(1.0, Some(true)).with_details(details),
            Some(reason) => fail(reason, details),
        }
    }

    /// One test: call, then compare on the host. Returns the failure reason if it failed.
    async fn run_test(
        &self,
        run: &mut Run,
        index: usize,
        test: &TestCase,
        expected: &PyValue,
        global: Instant,
    ) -> (TestResult, Option<String>) {
        let limit = self.config.test_time_limit;
        let started = Instant::now();
        let deadline = (started + limit).min(global);
        let outcome = run.call(&test.input, deadline).await;
        let mut result = TestResult {
            index,
            outcome: "pass",
            elapsed: started.elapsed(),
            got: None,
            expected: None,
            error: None,
        };
        let failure = match outcome {
            CallOutcome::Returned(Ok(record)) if record.len() > MAX_RESULT_BYTES => {
                result.outcome = "error";
                Some(format!(
                    "test {index}: the return value is longer than {MAX_RESULT_BYTES} bytes \
                     when serialized"
                ))
            }
            CallOutcome::Returned(Ok(record)) => match pyvalue::parse(&record, Syntax::Record) {
                Ok(got) if got.py_eq(expected) => None,
                Ok(got) => {
                    result.outcome = "wrong_answer";
                    result.got = Some(pyvalue::short(&got.to_string(), SHOWN));
                    result.expected = Some(pyvalue::short(&expected.to_string(), SHOWN));
                    Some(format!("wrong answer on test {index}"))
                }
                Err(e) => {
                    result.outcome = "error";
                    Some(format!(
                        "test {index}: the program returned a malformed record ({e})"
                    ))
                }
            },
            CallOutcome::Returned(Err(reason)) => {
                result.outcome = "error";
                Some(format!(
                    "test {index}: {}",
                    self.guest_error("calling the function", &reason, run)
                ))
            }
            CallOutcome::TimedOut => {
                result.outcome = "timeout";
                if deadline == global && global < started + limit {
                    Some(format!("test {index}: LiC's global time limit exceeded"))
                } else {
                    Some(format!("test {index}: timed out after {} s", secs(limit)))
                }
            }
            CallOutcome::Stopped(status) => {
                result.outcome = "crash";
                Some(format!(
                    "test {index}: the program stopped: {}",
                    describe(&status)
                ))
            }
        };
        if let Some(reason) = &failure {
            result.error = Some(reason.clone());
        }
        (result, failure)
    }

    /// Turn a guest-side `err` string (`kind: message`) into a reason.
    fn guest_error(&self, step: &str, reason: &str, run: &Run) -> String {
        let (kind, message) = reason.split_once(": ").unwrap_or(("error", reason));
        let message = pyvalue::short(message, 300);
        let mut limits_hit = if run.memory_limit_hit() {
            format!(
                " (memory limit of {} MiB reached)",
                self.config.memory >> 20
            )
        } else {
            String::new()
        };
        if run.scratch_limit_hit() {
            let q = self.config.scratch;
            limits_hit.push_str(&format!(
                " (scratch quota reached: {} MiB, {} entries, {} open files in /tmp)",
                q.bytes >> 20,
                q.files,
                q.open_files
            ));
        }
        if run.output_capped() {
            return format!(
                "output cap of {} bytes exceeded while {step} ({message})",
                self.config.output
            );
        }
        match kind {
            "compile" => format!("compile error: {message}"),
            "exception" => format!("exception while {step}: {message}{limits_hit}"),
            "exit" => format!("the program exited while {step} ({message}; upstream crash)"),
            "missing" => format!("function not found: {message}"),
            "prompt" => format!("{message} (upstream raises)"),
            "nodef" => "no `def ` in the answer".to_string(),
            "input" => format!("test input is not valid JSON: {message}"),
            "encode" => format!("the return value could not be serialized: {message}{limits_hit}"),
            _ => format!("{step}: {reason}"),
        }
    }
}

fn fail(reason: impl Into<String>, details: Value) -> Verdict {
    Verdict::fail(Some(false), reason).with_details(details)
}

fn describe(status: &RunStatus) -> String {
    match status {
        RunStatus::Exited { success } => {
            format!("exited ({})", if *success { "ok" } else { "error" })
        }
        RunStatus::ExitCode(code) => format!("os._exit({code}) (upstream crash)"),
        RunStatus::TimedOut => "timed out".into(),
        RunStatus::OutputLimit => "output cap exceeded".into(),
        RunStatus::Trapped(trap) => format!("killed: {trap}"),
    }
}

fn ms(d: Duration) -> Value {
    json!((d.as_secs_f64() * 1e4).round() / 10.0)
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}")
    } else {
        format!("{s:.2}")
    }
}
