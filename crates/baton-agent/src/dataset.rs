//! Finding the tasks a user names: the bundled set, a folder of baton tasks or of Exercism
//! exercises, one task folder, or a SWE-bench JSONL file.

use std::path::Path;

use crate::error::AgentError;
use crate::task::{AgentTask, TaskFormat};

/// A loaded set of agent tasks.
#[derive(Debug, Clone)]
pub struct AgentDataset {
    /// How the user named it (`agent-sample`, a path).
    pub name: String,
    /// Its format.
    pub format: TaskFormat,
    /// The tasks, sorted by id.
    pub tasks: Vec<AgentTask>,
    /// The tasks a lenient load ([`load_dataset_lenient`]) left out, with why (empty
    /// otherwise).
    pub skipped: Vec<SkippedTask>,
}

/// A task [`load_dataset_lenient`] left out: its id (or, when it has none, the folder
/// or line it came from) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedTask {
    /// The task's id, folder name or `line N`.
    pub id: String,
    /// Why it was left out (the error a strict load would have stopped on).
    pub reason: String,
}

/// Where a loader puts a task that does not load: in strict mode nowhere (the error
/// stops the load), in lenient mode in the list, and the load goes on.
pub(crate) type Skips<'a> = Option<&'a mut Vec<SkippedTask>>;

/// `result` for one task: its task, or under a lenient load `None` with the error kept
/// in `skips` as `id`'s.
pub(crate) fn keep_or_skip(
    result: Result<AgentTask, AgentError>,
    id: &str,
    skips: &mut Skips<'_>,
) -> Result<Option<AgentTask>, AgentError> {
    match (result, skips) {
        (Ok(t), _) => Ok(Some(t)),
        (Err(e), Some(list)) => {
            list.push(SkippedTask {
                id: id.to_string(),
                reason: format!("{e:#}"),
            });
            Ok(None)
        }
        (Err(e), None) => Err(e),
    }
}

/// Load `spec`: `agent-sample` for the bundled set, else a path. A file is read as
/// SWE-bench JSONL; a folder is one baton task (it holds `task.toml`), a set of them (its
/// subfolders do), or a set of Exercism exercises (its subfolders hold
/// `.meta/config.json`).
pub fn load_dataset(spec: &str) -> Result<AgentDataset, AgentError> {
    load(spec, None)
}

/// [`load_dataset`], leaving out the tasks that do not load (each listed in
/// [`AgentDataset::skipped`] with why) instead of stopping on the first. What is wrong
/// with the dataset as a whole (not found, unreadable, no task left) is still an error.
pub fn load_dataset_lenient(spec: &str) -> Result<AgentDataset, AgentError> {
    let mut skipped = Vec::new();
    let mut dataset = load(spec, Some(&mut skipped))?;
    if dataset.tasks.is_empty() {
        return Err(AgentError::invalid(
            spec,
            None,
            None,
            format!(
                "no task loads ({} left out, the first: {})",
                skipped.len(),
                skipped.first().map_or("", |s| s.reason.as_str())
            ),
        ));
    }
    dataset.skipped = skipped;
    Ok(dataset)
}

fn load(spec: &str, mut skips: Skips<'_>) -> Result<AgentDataset, AgentError> {
    let (format, tasks) = if spec == crate::sample::SAMPLE_NAME {
        (TaskFormat::Baton, crate::sample::sample_tasks()?)
    } else {
        let path = Path::new(spec);
        if path.is_file() {
            (
                TaskFormat::SweBench,
                crate::swebench::load_swebench_with(path, skips.as_deref_mut())?,
            )
        } else if path.join("task.toml").is_file() {
            (TaskFormat::Baton, vec![crate::own::load_task_dir(path)?])
        } else if path.is_dir() {
            let baton = crate::own::load_task_set_with(path, skips.as_deref_mut())?;
            if !baton.is_empty() || skips.as_ref().is_some_and(|s| !s.is_empty()) {
                (TaskFormat::Baton, baton)
            } else if crate::polyglot::is_exercise_set(path) {
                (
                    TaskFormat::Polyglot,
                    crate::polyglot::load_exercises_with(path, skips)?,
                )
            } else {
                return Err(AgentError::invalid(
                    spec,
                    None,
                    None,
                    "holds no tasks (expected folders with task.toml, or Exercism exercises with .meta/config.json)",
                ));
            }
        } else {
            return Err(AgentError::invalid(
                spec,
                None,
                None,
                "not found (name a task folder, a folder of tasks or exercises, a SWE-bench .jsonl, or agent-sample)",
            ));
        }
    };
    Ok(AgentDataset {
        name: spec.to_string(),
        format,
        tasks,
        skipped: Vec::new(),
    })
}
