//! `baton env check-tasks`: every task's tests must fail on its unchanged repository and
//! pass with its reference solution, through the same scoring path as a submitted patch.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::AgentError;
use crate::score::{Expectation, LocalScorer, TestOutcome, Verdict};
use crate::task::{AgentTask, Difficulty};

/// One task's check.
#[derive(Debug, Clone, Serialize)]
pub struct TaskCheck {
    /// The task.
    pub task_id: String,
    /// Its bucket.
    pub difficulty: Difficulty,
    /// The verdict with no change (must not be resolved).
    pub unchanged: Verdict,
    /// The verdict with the reference solution (must be resolved), if the task has one.
    pub reference: Option<Verdict>,
}

impl TaskCheck {
    /// The unchanged repository fails, as it must.
    pub fn unchanged_fails(&self) -> bool {
        !self.unchanged.resolved && self.unchanged.run_error.is_none()
    }

    /// The reference solution passes, as it must (`None` without a reference).
    pub fn reference_passes(&self) -> Option<bool> {
        self.reference.as_ref().map(|v| v.resolved)
    }

    /// Stricter findings that do not count against the task: a fail_to_pass test that
    /// already passes unchanged, or a pass_to_pass test that fails unchanged.
    pub fn notes(&self) -> Vec<String> {
        self.unchanged
            .tests
            .iter()
            .filter_map(|t| match (t.expected, t.outcome) {
                (Expectation::FailToPass, TestOutcome::Passed) => {
                    Some(format!("fail_to_pass {} already passes unchanged", t.id))
                }
                (Expectation::PassToPass, o) if o != TestOutcome::Passed => Some(format!(
                    "pass_to_pass {} does not pass unchanged ({o:?})",
                    t.id
                )),
                _ => None,
            })
            .collect()
    }
}

/// Everything `check-tasks` found.
#[derive(Debug, Clone, Serialize)]
pub struct CheckTasksReport {
    /// How the dataset was named.
    pub dataset: String,
    /// One entry per task, in dataset order.
    pub tasks: Vec<TaskCheck>,
    /// Wall time of the whole check.
    pub wall: Duration,
    /// Parallel scorings.
    pub jobs: usize,
}

impl CheckTasksReport {
    /// Tasks whose unchanged repository fails.
    pub fn unchanged_fail(&self) -> usize {
        self.tasks.iter().filter(|t| t.unchanged_fails()).count()
    }

    /// (reference solutions that pass, tasks with a reference).
    pub fn reference_pass(&self) -> (usize, usize) {
        let with: Vec<_> = self
            .tasks
            .iter()
            .filter_map(|t| t.reference_passes())
            .collect();
        (with.iter().filter(|p| **p).count(), with.len())
    }

    /// Every task behaved.
    pub fn all_good(&self) -> bool {
        self.unchanged_fail() == self.tasks.len() && {
            let (b, m) = self.reference_pass();
            b == m
        }
    }
}

impl std::fmt::Display for CheckTasksReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.tasks.len();
        let (b, m) = self.reference_pass();
        writeln!(
            f,
            "{n} tasks: unchanged fail {}/{n}, reference pass {b}/{m}",
            self.unchanged_fail()
        )?;
        for t in &self.tasks {
            if !t.unchanged_fails() {
                writeln!(
                    f,
                    "  {} ({}): unchanged does not fail: {}",
                    t.task_id,
                    t.difficulty,
                    t.unchanged.summary()
                )?;
            }
            if let Some(r) = &t.reference
                && !r.resolved
            {
                writeln!(
                    f,
                    "  {} ({}): reference does not pass: {}",
                    t.task_id,
                    t.difficulty,
                    r.summary()
                )?;
                for test in r
                    .tests
                    .iter()
                    .filter(|x| x.outcome != TestOutcome::Passed)
                    .take(3)
                {
                    let detail = test.detail.lines().last().unwrap_or("").trim();
                    writeln!(f, "      {} {:?} {detail}", test.id, test.outcome)?;
                }
            }
            for note in t.notes() {
                writeln!(f, "  note: {} ({}): {note}", t.task_id, t.difficulty)?;
            }
        }
        let per_task: Vec<f64> = self
            .tasks
            .iter()
            .flat_map(|t| std::iter::once(&t.unchanged).chain(t.reference.as_ref()))
            .map(|v| v.duration.as_secs_f64())
            .collect();
        let mean = if per_task.is_empty() {
            0.0
        } else {
            per_task.iter().sum::<f64>() / per_task.len() as f64
        };
        writeln!(
            f,
            "{} scorings in {:.1} s wall ({} at a time; {:.2} s each on average)",
            per_task.len(),
            self.wall.as_secs_f64(),
            self.jobs,
            mean
        )
    }
}

/// Score every task unchanged and with its reference, `jobs` scorings at a time.
pub fn check_tasks(
    dataset: &str,
    tasks: &[AgentTask],
    scorer: &LocalScorer,
    jobs: usize,
) -> Result<CheckTasksReport, AgentError> {
    let started = Instant::now();
    let jobs = jobs.max(1).min(tasks.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<TaskCheck, AgentError>>>> =
        Mutex::new((0..tasks.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(task) = tasks.get(i) else { break };
                    let checked = check_one(task, scorer);
                    results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(checked);
                }
            });
        }
    });
    let mut out = Vec::with_capacity(tasks.len());
    for r in results.into_inner().unwrap_or_else(|p| p.into_inner()) {
        match r {
            Some(r) => out.push(r?),
            None => unreachable!("every index is taken by a worker"),
        }
    }
    Ok(CheckTasksReport {
        dataset: dataset.to_string(),
        tasks: out,
        wall: started.elapsed(),
        jobs,
    })
}

fn check_one(task: &AgentTask, scorer: &LocalScorer) -> Result<TaskCheck, AgentError> {
    let unchanged = scorer.score(task, "")?;
    let reference = match task.reference_patch()? {
        Some(patch) => Some(scorer.score(task, &patch)?),
        None => None,
    };
    Ok(TaskCheck {
        task_id: task.id.clone(),
        difficulty: task.difficulty,
        unchanged,
        reference,
    })
}
