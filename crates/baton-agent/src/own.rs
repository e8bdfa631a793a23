//! baton's own task format: one folder per task.
//!
//! ```text
//! <task>/
//!   task.toml        difficulty, fail_to_pass, pass_to_pass, optional id and test timeout
//!   instruction.md   what the agent is asked to do
//!   repo/            the repository as the agent sees it
//!   hidden/          test files laid over the repository before scoring (optional)
//!   solution/        the reference solution as files laid over the repository (optional)
//!   solution.patch   ... or as a unified diff (optional; not both)
//! ```
//!
//! `task.toml`:
//!
//! ```toml
//! id = "roman-numerals"          # optional; default: the folder's name
//! difficulty = "easy"            # easy | medium | hard
//! fail_to_pass = ["test_roman_subtractive.TestSubtractive.test_years"]
//! pass_to_pass = ["test_roman.TestRoman.test_additive_numbers"]
//! test_timeout_secs = 60         # optional; the limit of one test run
//! ```
//!
//! Test ids are unittest names (module, class or method) dotted from the repository root.
//! Before the tests run, the files under `hidden/` and the repository's own `test_*.py` /
//! `*_test.py` files are written back, so a patch cannot change the tests.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::error::AgentError;
use crate::task::{
    AgentTask, Difficulty, HiddenTests, Reference, Repository, TaskFormat, TreeFile, valid_test_id,
};

/// The default limit of one test run.
pub const DEFAULT_TEST_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskToml {
    id: Option<String>,
    difficulty: Difficulty,
    fail_to_pass: Vec<String>,
    #[serde(default)]
    pass_to_pass: Vec<String>,
    test_timeout_secs: Option<f64>,
}

/// The files of one task folder, wherever they live.
pub(crate) struct TaskFolder<'a> {
    /// How the folder is named in messages.
    pub display: String,
    /// The folder's name (the default id).
    pub name: String,
    /// Every file except those under `repo/` when the repository stays on disk.
    pub files: BTreeMap<String, &'a [u8]>,
    /// The repository.
    pub repository: Repository,
}

/// Read the task folder at `dir`.
pub fn load_task_dir(dir: &Path) -> Result<AgentTask, AgentError> {
    let repo = dir.join("repo");
    if !repo.is_dir() {
        return Err(AgentError::invalid(
            dir.display(),
            None,
            None,
            "no repo/ folder",
        ));
    }
    let mut owned: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for name in ["task.toml", "instruction.md", "solution.patch"] {
        let p = dir.join(name);
        if p.is_file() {
            owned.insert(
                name.to_string(),
                std::fs::read(&p).map_err(|e| AgentError::io(&p, "read", e))?,
            );
        }
    }
    for sub in ["hidden", "solution"] {
        let p = dir.join(sub);
        if p.is_dir() {
            for f in crate::task::read_tree(&p, &|rel| rel.ends_with("__pycache__"))? {
                owned.insert(format!("{sub}/{}", f.path), f.contents);
            }
        }
    }
    let folder = TaskFolder {
        display: dir.display().to_string(),
        name: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        files: owned
            .iter()
            .map(|(k, v)| (k.clone(), v.as_slice()))
            .collect(),
        repository: Repository::Dir(repo),
    };
    parse_task(&folder)
}

/// Turn a task folder's files into a task, checking every key.
pub(crate) fn parse_task(folder: &TaskFolder<'_>) -> Result<AgentTask, AgentError> {
    let toml_path = format!("{}/task.toml", folder.display);
    let text = |name: &str| -> Result<Option<String>, AgentError> {
        folder
            .files
            .get(name)
            .map(|b| {
                String::from_utf8(b.to_vec()).map_err(|_| {
                    AgentError::invalid(
                        format!("{}/{name}", folder.display),
                        Some(&folder.name),
                        None,
                        "not UTF-8 text",
                    )
                })
            })
            .transpose()
    };
    let raw = text("task.toml")?
        .ok_or_else(|| AgentError::invalid(&toml_path, Some(&folder.name), None, "missing"))?;
    let spec: TaskToml = toml::from_str(&raw).map_err(|e| {
        let message = e.message().to_string();
        let key = e.span().and_then(|span| key_at(&raw, span.start));
        AgentError::invalid(&toml_path, Some(&folder.name), key.as_deref(), message)
    })?;
    let id = spec.id.clone().unwrap_or_else(|| folder.name.clone());
    let bad =
        |key: &str, message: String| AgentError::invalid(&toml_path, Some(&id), Some(key), message);
    if spec.fail_to_pass.is_empty() {
        return Err(bad("fail_to_pass", "must name at least one test".into()));
    }
    for (key, ids) in [
        ("fail_to_pass", &spec.fail_to_pass),
        ("pass_to_pass", &spec.pass_to_pass),
    ] {
        if let Some(t) = ids.iter().find(|t| !valid_test_id(t)) {
            return Err(bad(
                key,
                format!("{t:?} is not a unittest id (dotted Python names)"),
            ));
        }
    }
    if let Some(t) = spec
        .fail_to_pass
        .iter()
        .find(|t| spec.pass_to_pass.contains(t))
    {
        return Err(bad(
            "pass_to_pass",
            format!("{t:?} is also in fail_to_pass"),
        ));
    }
    let timeout = match spec.test_timeout_secs {
        None => DEFAULT_TEST_TIMEOUT,
        Some(s) if s.is_finite() && s > 0.0 => Duration::from_secs_f64(s),
        Some(s) => {
            return Err(bad(
                "test_timeout_secs",
                format!("{s} is not a positive number of seconds"),
            ));
        }
    };
    let instruction = text("instruction.md")?
        .filter(|t| !t.trim().is_empty())
        .ok_or_else(|| {
            AgentError::invalid(
                format!("{}/instruction.md", folder.display),
                Some(&id),
                None,
                "missing or empty",
            )
        })?;
    let under = |prefix: &str| -> Vec<TreeFile> {
        folder
            .files
            .iter()
            .filter_map(|(path, bytes)| {
                path.strip_prefix(prefix).map(|rel| TreeFile {
                    path: rel.to_string(),
                    contents: bytes.to_vec(),
                    executable: false,
                })
            })
            .collect()
    };
    let hidden = under("hidden/");
    let solution_files = under("solution/");
    let solution_patch = text("solution.patch")?;
    let reference = match (solution_files.is_empty(), solution_patch) {
        (true, None) => None,
        (false, None) => Some(Reference::Files(solution_files)),
        (true, Some(p)) => Some(Reference::Patch(p)),
        (false, Some(_)) => {
            return Err(AgentError::invalid(
                &folder.display,
                Some(&id),
                None,
                "has both solution/ and solution.patch; keep one",
            ));
        }
    };
    Ok(AgentTask {
        id,
        format: TaskFormat::Baton,
        origin: folder.display.clone(),
        instruction,
        difficulty: spec.difficulty,
        repository: folder.repository.clone(),
        workdir: baton_env::DEFAULT_WORKDIR.to_string(),
        tests: HiddenTests {
            files: hidden,
            patch: None,
            fail_to_pass: spec.fail_to_pass,
            pass_to_pass: spec.pass_to_pass,
            timeout,
        },
        reference,
    })
}

/// The `key =` on the line of byte `offset`, for error messages.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let line_start = text[..offset.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next()?;
    let key = line.split('=').next()?.trim();
    (!key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then(|| key.to_string())
}

/// Every task folder directly under `dir` (folders holding a `task.toml`), sorted by name.
pub fn load_task_set(dir: &Path) -> Result<Vec<AgentTask>, AgentError> {
    load_task_set_with(dir, None)
}

/// [`load_task_set`], a task that does not load kept in `skips` when given.
pub(crate) fn load_task_set_with(
    dir: &Path,
    mut skips: crate::dataset::Skips<'_>,
) -> Result<Vec<AgentTask>, AgentError> {
    let mut dirs: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| AgentError::io(dir, "list folder", e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("task.toml").is_file())
        .collect();
    dirs.sort();
    let mut tasks = Vec::with_capacity(dirs.len());
    for d in &dirs {
        let name = d
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        tasks.extend(crate::dataset::keep_or_skip(
            load_task_dir(d),
            &name,
            &mut skips,
        )?);
    }
    check_unique(&dir.display().to_string(), &tasks)?;
    Ok(tasks)
}

pub(crate) fn check_unique(origin: &str, tasks: &[AgentTask]) -> Result<(), AgentError> {
    let mut seen = std::collections::HashSet::new();
    for t in tasks {
        if !seen.insert(&t.id) {
            return Err(AgentError::invalid(
                origin,
                Some(&t.id),
                Some("id"),
                "two tasks have this id",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder<'a>(files: &[(&str, &'a [u8])]) -> TaskFolder<'a> {
        TaskFolder {
            display: "tasks/t1".into(),
            name: "t1".into(),
            files: files.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            repository: Repository::Files(vec![]),
        }
    }

    #[test]
    fn a_complete_task_parses() {
        let f = folder(&[
            ("task.toml", b"difficulty = \"medium\"\nfail_to_pass = [\"test_a.T.test_x\"]\ntest_timeout_secs = 5\n"),
            ("instruction.md", b"Fix it."),
            ("hidden/test_a.py", b"import unittest\n"),
            ("solution/a.py", b"x = 1\n"),
        ]);
        let t = parse_task(&f).unwrap();
        assert_eq!(t.id, "t1");
        assert_eq!(t.difficulty, Difficulty::Medium);
        assert_eq!(t.tests.files[0].path, "test_a.py");
        assert_eq!(t.tests.timeout, Duration::from_secs(5));
        assert!(matches!(t.reference, Some(Reference::Files(_))));
    }

    #[test]
    fn errors_name_the_file_the_task_and_the_key() {
        let f = folder(&[
            (
                "task.toml",
                b"difficulty = \"tricky\"\nfail_to_pass = [\"a\"]\n",
            ),
            ("instruction.md", b"x"),
        ]);
        let e = parse_task(&f).unwrap_err().to_string();
        assert!(
            e.starts_with("tasks/t1/task.toml: task \"t1\": key \"difficulty\": "),
            "{e}"
        );
        let f = folder(&[
            (
                "task.toml",
                b"difficulty = \"easy\"\nfail_to_pass = [\"a; rm -rf /\"]\n",
            ),
            ("instruction.md", b"x"),
        ]);
        let e = parse_task(&f).unwrap_err().to_string();
        assert!(
            e.contains("key \"fail_to_pass\"") && e.contains("not a unittest id"),
            "{e}"
        );
        let f = folder(&[
            ("task.toml", b"difficulty = \"easy\"\nfail_to_pass = []\n"),
            ("instruction.md", b"x"),
        ]);
        assert!(
            parse_task(&f)
                .unwrap_err()
                .to_string()
                .contains("at least one test")
        );
        let f = folder(&[(
            "task.toml",
            b"difficulty = \"easy\"\nfail_to_pass = [\"a\"]\n",
        )]);
        assert!(
            parse_task(&f)
                .unwrap_err()
                .to_string()
                .contains("instruction.md: task \"t1\": missing")
        );
        let f = folder(&[
            (
                "task.toml",
                b"difficulty = \"easy\"\nfail_to_pass = [\"a\"]\nextra = 1\n",
            ),
            ("instruction.md", b"x"),
        ]);
        let e = parse_task(&f).unwrap_err().to_string();
        assert!(e.contains("extra"), "{e}");
    }
}
