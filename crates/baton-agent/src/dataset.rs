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
}

/// Load `spec`: `agent-sample` for the bundled set, else a path. A file is read as
/// SWE-bench JSONL; a folder is one baton task (it holds `task.toml`), a set of them (its
/// subfolders do), or a set of Exercism exercises (its subfolders hold
/// `.meta/config.json`).
pub fn load_dataset(spec: &str) -> Result<AgentDataset, AgentError> {
    let (format, tasks) = if spec == crate::sample::SAMPLE_NAME {
        (TaskFormat::Baton, crate::sample::sample_tasks()?)
    } else {
        let path = Path::new(spec);
        if path.is_file() {
            (TaskFormat::SweBench, crate::swebench::load_swebench(path)?)
        } else if path.join("task.toml").is_file() {
            (TaskFormat::Baton, vec![crate::own::load_task_dir(path)?])
        } else if path.is_dir() {
            let baton = crate::own::load_task_set(path)?;
            if !baton.is_empty() {
                (TaskFormat::Baton, baton)
            } else if crate::polyglot::is_exercise_set(path) {
                (TaskFormat::Polyglot, crate::polyglot::load_exercises(path)?)
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
    })
}
