//! Scoring baton and polyglot tasks: apply the submitted patch to a pristine copy of the
//! repository, restore the test files, run the tests in a fresh sandbox, and decide.
//!
//! The steps, each in the task's environment (bwrap by default):
//!
//! 1. Copy the pristine repository into a fresh environment.
//! 2. Apply the patch with `git apply --verbose` reading it on stdin; if git refuses it,
//!    `patch --batch --fuzz=5 -p1` (when installed), as SWE-bench's harness does. A patch
//!    that neither accepts is a verdict ([`PatchOutcome::DidNotApply`]) with git's
//!    message; the tests do not run.
//! 3. Write the hidden test files and the repository's own test files back over whatever
//!    the patch did to them.
//! 4. Run baton's unittest runner (`runner.py`, fed on stdin) on every `fail_to_pass` and
//!    `pass_to_pass` id in one `python3` process, under the task's test timeout. The runner
//!    ends with one result line, prefixed with a fresh random marker.
//! 5. Resolved = every `fail_to_pass` and every `pass_to_pass` id passed (SWE-bench's rule).
//!    A run that times out or ends without the result line is a verdict with
//!    [`Verdict::run_error`] set and nothing resolved.
//!
//! What it does not defend against: the code under test runs in the runner's process, so a
//! solution that tampers with the runner in-process (patching `unittest`, printing a forged
//! result line after reading the marker from `sys.argv`) can fake a pass, as it could under
//! any harness that reads test output (SWE-bench's log parsers included). The sandbox still
//! confines it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use baton_env::{EnvConfig, Environment, Exec, ExitStatus, Setup};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::AgentError;
use crate::task::{AgentTask, Repository, TreeFile};

const RUNNER: &str = include_str!("runner.py");

/// How the patch went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PatchOutcome {
    /// Nothing was submitted (the tests ran on the unchanged repository).
    Empty,
    /// Applied, by `git apply` or by `patch` with fuzz.
    Applied {
        /// `git apply` or `patch --fuzz=5`.
        tool: String,
    },
    /// Neither tool accepted it; the tests did not run.
    DidNotApply {
        /// What `git apply` (and `patch`) said.
        reason: String,
    },
}

/// What a test id is expected to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expectation {
    /// Fails before, must pass after.
    FailToPass,
    /// Passes before, must pass after.
    PassToPass,
}

/// How one test id came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestOutcome {
    /// Every test under the id passed.
    Passed,
    /// An assertion failed.
    Failed,
    /// An exception, an import error, or no tests under the id.
    Error,
    /// Every test under it was skipped.
    Skipped,
    /// The run ended without a result for it (timeout, crash).
    Missing,
}

/// One test id's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestResult {
    /// The unittest id.
    pub id: String,
    /// What it had to do.
    pub expected: Expectation,
    /// What it did.
    pub outcome: TestOutcome,
    /// Tests that ran under the id.
    pub tests: u32,
    /// The first failure's traceback (shortened), when it did not pass.
    pub detail: String,
}

/// The verdict on one submitted patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The task.
    pub task_id: String,
    /// sha256 of the submitted patch text.
    pub patch_sha256: String,
    /// How the patch went.
    pub patch: PatchOutcome,
    /// Every fail_to_pass and pass_to_pass id (empty when the patch did not apply).
    pub tests: Vec<TestResult>,
    /// Why the test run gave no (complete) result: a timeout, a crash before the result line.
    pub run_error: Option<String>,
    /// All fail_to_pass and pass_to_pass ids passed.
    pub resolved: bool,
    /// Wall time of the whole scoring, environment start-up included.
    pub duration: Duration,
    /// The end of the test run's output, for people.
    pub log_tail: String,
}

impl Verdict {
    /// The ids with `expected` that passed, and how many there are.
    pub fn passed(&self, expected: Expectation) -> (usize, usize) {
        let of: Vec<_> = self
            .tests
            .iter()
            .filter(|t| t.expected == expected)
            .collect();
        (
            of.iter()
                .filter(|t| t.outcome == TestOutcome::Passed)
                .count(),
            of.len(),
        )
    }

    /// One line for people: `resolved`, or why not.
    pub fn summary(&self) -> String {
        if let PatchOutcome::DidNotApply { reason } = &self.patch {
            return format!("patch does not apply: {}", first_line(reason));
        }
        if let Some(e) = &self.run_error {
            return format!("tests gave no result: {e}");
        }
        let (f, fn_) = self.passed(Expectation::FailToPass);
        let (p, pn) = self.passed(Expectation::PassToPass);
        let state = if self.resolved {
            "resolved"
        } else {
            "not resolved"
        };
        format!("{state}: fail_to_pass {f}/{fn_}, pass_to_pass {p}/{pn}")
    }
}

fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
}

/// Scores baton and polyglot tasks in sandboxed environments.
#[derive(Debug, Clone, Default)]
pub struct LocalScorer {
    /// How environments are built (backend, limits).
    pub env: EnvConfig,
}

impl LocalScorer {
    /// A scorer with this environment configuration.
    pub fn new(env: EnvConfig) -> Self {
        LocalScorer { env }
    }

    /// Score `patch` (a unified diff; empty for "no change") on `task`.
    pub fn score(&self, task: &AgentTask, patch: &str) -> Result<Verdict, AgentError> {
        let started = Instant::now();
        if matches!(task.repository, Repository::Image(_)) {
            return Err(AgentError::NeedsHarness {
                task_id: task.id.clone(),
            });
        }
        let env_err = |source| AgentError::Env {
            task_id: task.id.clone(),
            source,
        };
        let staging = tempfile::tempdir()
            .map_err(|e| AgentError::io(std::env::temp_dir(), "create a temporary folder", e))?;
        let tree = task.repository.materialize(staging.path())?;
        let mut restore: BTreeMap<String, TreeFile> = BTreeMap::new();
        for f in task
            .repository
            .test_files()?
            .into_iter()
            .chain(task.tests.files.iter().cloned())
        {
            restore.insert(f.path.clone(), f);
        }
        let mut setup = Setup::tree(&tree);
        setup.workdir = task.workdir.clone();
        let mut env = baton_env::start(&self.env, &setup).map_err(env_err)?;
        let result = self.score_in(task, patch, env.as_mut(), &restore);
        let _ = env.close();
        let mut verdict = result?;
        verdict.duration = started.elapsed();
        Ok(verdict)
    }

    fn score_in(
        &self,
        task: &AgentTask,
        patch: &str,
        env: &mut dyn Environment,
        restore: &BTreeMap<String, TreeFile>,
    ) -> Result<Verdict, AgentError> {
        let env_err = |source| AgentError::Env {
            task_id: task.id.clone(),
            source,
        };
        let mut verdict = Verdict {
            task_id: task.id.clone(),
            patch_sha256: hex::encode(Sha256::digest(patch.as_bytes())),
            patch: PatchOutcome::Empty,
            tests: Vec::new(),
            run_error: None,
            resolved: false,
            duration: Duration::ZERO,
            log_tail: String::new(),
        };
        if !patch.trim().is_empty() {
            verdict.patch = apply_patch(env, patch).map_err(env_err)?;
            if matches!(verdict.patch, PatchOutcome::DidNotApply { .. }) {
                return Ok(verdict);
            }
        }
        for f in restore.values() {
            env.write_file(&f.path, &f.contents, f.executable)
                .map_err(env_err)?;
        }
        let marker = fresh_marker(&task.id, patch);
        let ids: Vec<&String> = task
            .tests
            .fail_to_pass
            .iter()
            .chain(&task.tests.pass_to_pass)
            .collect();
        let command = format!(
            "python3 - {marker} {}",
            ids.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")
        );
        let out = env
            .exec(&Exec::new(command).timeout(task.tests.timeout).stdin(RUNNER))
            .map_err(env_err)?;
        verdict.log_tail = out.output.last(4000);
        let parsed = parse_results(&out.output.head, &out.output.tail, &marker);
        let expectations = task
            .tests
            .fail_to_pass
            .iter()
            .map(|id| (id, crate::score::Expectation::FailToPass))
            .chain(
                task.tests
                    .pass_to_pass
                    .iter()
                    .map(|id| (id, Expectation::PassToPass)),
            );
        let results = match parsed {
            Some(map) => map,
            None => {
                verdict.run_error = Some(match out.status {
                    ExitStatus::TimedOut => {
                        format!("the test run passed its {:?} limit", task.tests.timeout)
                    }
                    other => format!("the test run ended ({other}) without baton's result line"),
                });
                BTreeMap::new()
            }
        };
        for (id, expected) in expectations {
            let (outcome, tests, detail) = match results.get(id.as_str()) {
                Some(r) => (r.outcome(), r.tests, r.detail.clone()),
                None => (TestOutcome::Missing, 0, String::new()),
            };
            verdict.tests.push(TestResult {
                id: id.clone(),
                expected,
                outcome,
                tests,
                detail,
            });
        }
        verdict.resolved = verdict.run_error.is_none()
            && !verdict.tests.is_empty()
            && verdict
                .tests
                .iter()
                .all(|t| t.outcome == TestOutcome::Passed);
        Ok(verdict)
    }
}

/// `git apply`, then `patch --fuzz=5` if git refuses (git leaves the tree untouched when
/// it refuses).
fn apply_patch(
    env: &mut dyn Environment,
    patch: &str,
) -> Result<PatchOutcome, baton_env::EnvError> {
    let timeout = Duration::from_secs(60);
    let git = env.exec(
        &Exec::new("git apply --verbose --whitespace=nowarn -")
            .stdin(patch.as_bytes())
            .timeout(timeout),
    )?;
    if git.status.success() {
        return Ok(PatchOutcome::Applied {
            tool: "git apply".into(),
        });
    }
    let fuzz = env.exec(
        &Exec::new("command -v patch >/dev/null || exit 127; patch --batch --fuzz=5 -p1 --forward")
            .stdin(patch.as_bytes())
            .timeout(timeout),
    )?;
    if fuzz.status.success() {
        return Ok(PatchOutcome::Applied {
            tool: "patch --fuzz=5".into(),
        });
    }
    let mut reason = git.output.last(2000);
    if fuzz.return_code() != Some(127) {
        reason.push_str("\npatch: ");
        reason.push_str(&fuzz.output.last(1000));
    }
    Ok(PatchOutcome::DidNotApply { reason })
}

#[derive(Debug, Deserialize)]
struct RawResult {
    outcome: String,
    #[serde(default)]
    tests: u32,
    #[serde(default)]
    detail: String,
}

impl RawResult {
    fn outcome(&self) -> TestOutcome {
        match self.outcome.as_str() {
            "passed" => TestOutcome::Passed,
            "failed" => TestOutcome::Failed,
            "skipped" => TestOutcome::Skipped,
            _ => TestOutcome::Error,
        }
    }
}

/// The runner's result line: the last line starting with the marker.
fn parse_results(head: &str, tail: &str, marker: &str) -> Option<BTreeMap<String, RawResult>> {
    let prefix = format!("{marker} ");
    [tail, head]
        .iter()
        .flat_map(|part| part.lines().rev())
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|json| serde_json::from_str(json).ok())
}

/// A marker the tested code cannot predict from the repository: hashed from the clock,
/// the process and a counter.
fn fresh_marker(task: &str, patch: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = Sha256::new();
    h.update(task.as_bytes());
    h.update(patch.as_bytes());
    h.update(std::process::id().to_le_bytes());
    h.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    h.update(now.as_nanos().to_le_bytes());
    format!("BATON-RESULTS-{}", &hex::encode(h.finalize())[..24])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_marked_line_wins_and_others_are_ignored() {
        let m = "BATON-RESULTS-abc";
        let out = format!(
            "noise\nBATON-RESULTS-fake {{\"t\": {{\"outcome\": \"passed\"}}}}\n{m} {{\"t\": {{\"outcome\": \"failed\", \"tests\": 2}}}}\n"
        );
        let r = parse_results(&out, "", m).unwrap();
        assert_eq!(r["t"].outcome(), TestOutcome::Failed);
        assert_eq!(r["t"].tests, 2);
        assert!(parse_results("no result here", "", m).is_none());
        assert!(parse_results(&format!("{m} not json"), "", m).is_none());
    }

    #[test]
    fn markers_differ_every_time() {
        assert_ne!(fresh_marker("t", "p"), fresh_marker("t", "p"));
    }
}
