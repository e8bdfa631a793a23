//! The Aider polyglot benchmark's Python exercises (Exercism layout), read from a folder
//! of exercises the user downloaded.
//!
//! Each exercise folder holds `.meta/config.json` (`files.solution`, `files.test`,
//! `files.example`), `.docs/introduction.md`, `instructions.md` and
//! `instructions.append.md` (those present, in that order, make the instruction), the stub
//! solution and the tests. The agent's repository is the exercise without `.meta/`,
//! `.docs/` and the test files; the test files are hidden and restored before scoring; the
//! reference is `.meta/example.py` written over the solution file. The test ids are the
//! test modules (`*_test.py`), all `fail_to_pass`: Aider scores an exercise by its whole
//! test file passing.
//!
//! Difficulty comes from Exercism's 1-10 rating in `difficulty.json` beside the exercises
//! (`{"difficulty": {"exercise-name": 5, ...}}`; 3 or less easy, 4-5 medium, 6 or more
//! hard): the polyglot checkout does not carry Exercism's track config, so the ratings are
//! kept in that file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::AgentError;
use crate::own::DEFAULT_TEST_TIMEOUT;
use crate::task::{
    AgentTask, Difficulty, HiddenTests, Reference, Repository, TaskFormat, TreeFile, read_tree,
    valid_rel_path, valid_test_id,
};

/// The file beside the exercises that holds Exercism's ratings.
pub const DIFFICULTY_FILE: &str = "difficulty.json";

#[derive(Debug, Deserialize)]
struct Config {
    files: Files,
}

#[derive(Debug, Deserialize)]
struct Files {
    solution: Vec<String>,
    test: Vec<String>,
    #[serde(default)]
    example: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Ratings {
    difficulty: BTreeMap<String, u32>,
}

/// Whether `dir` looks like a folder of Exercism exercises.
pub fn is_exercise_set(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.path().join(".meta/config.json").is_file())
    })
}

/// Every exercise under `dir`, sorted by name.
pub fn load_exercises(dir: &Path) -> Result<Vec<AgentTask>, AgentError> {
    load_exercises_with(dir, None)
}

/// [`load_exercises`], an exercise that does not load kept in `skips` when given.
pub(crate) fn load_exercises_with(
    dir: &Path,
    mut skips: crate::dataset::Skips<'_>,
) -> Result<Vec<AgentTask>, AgentError> {
    let ratings_path = dir.join(DIFFICULTY_FILE);
    let ratings: Ratings = {
        let raw = std::fs::read_to_string(&ratings_path).map_err(|e| {
            AgentError::invalid(
                ratings_path.display(),
                None,
                None,
                format!("cannot read Exercism's difficulty ratings ({e}); put {DIFFICULTY_FILE} beside the exercises"),
            )
        })?;
        serde_json::from_str(&raw).map_err(|e| {
            AgentError::invalid(
                ratings_path.display(),
                None,
                Some("difficulty"),
                e.to_string(),
            )
        })?
    };
    let mut exercises: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| AgentError::io(dir, "list folder", e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(".meta/config.json").is_file())
        .collect();
    exercises.sort();
    let mut tasks = Vec::with_capacity(exercises.len());
    for ex in &exercises {
        let name = ex
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        let task = load_exercise(ex, &ratings.difficulty, &ratings_path);
        tasks.extend(crate::dataset::keep_or_skip(task, &name, &mut skips)?);
    }
    Ok(tasks)
}

fn load_exercise(
    dir: &Path,
    ratings: &BTreeMap<String, u32>,
    ratings_path: &Path,
) -> Result<AgentTask, AgentError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let config_path = dir.join(".meta/config.json");
    let bad = |key: &str, message: String| {
        AgentError::invalid(config_path.display(), Some(&name), Some(key), message)
    };
    let raw = std::fs::read_to_string(&config_path)
        .map_err(|e| AgentError::io(&config_path, "read", e))?;
    let config: Config = serde_json::from_str(&raw).map_err(|e| bad("files", e.to_string()))?;
    let Files {
        solution,
        test,
        example,
    } = config.files;
    for (key, list) in [
        ("files.solution", &solution),
        ("files.test", &test),
        ("files.example", &example),
    ] {
        if let Some(p) = list.iter().find(|p| !valid_rel_path(p)) {
            return Err(bad(
                key,
                format!("{p:?} is not a relative path inside the exercise"),
            ));
        }
    }
    if solution.is_empty() {
        return Err(bad("files.solution", "names no file".into()));
    }
    if test.is_empty() {
        return Err(bad("files.test", "names no file".into()));
    }
    let rating = *ratings.get(&name).ok_or_else(|| {
        AgentError::invalid(
            ratings_path.display(),
            Some(&name),
            Some("difficulty"),
            "no rating for this exercise",
        )
    })?;

    let mut instruction = String::new();
    for part in [
        "introduction.md",
        "instructions.md",
        "instructions.append.md",
    ] {
        let p = dir.join(".docs").join(part);
        if p.is_file() {
            let text = std::fs::read_to_string(&p).map_err(|e| AgentError::io(&p, "read", e))?;
            if !instruction.is_empty() {
                instruction.push_str("\n\n");
            }
            instruction.push_str(text.trim_end());
            instruction.push('\n');
        }
    }
    if instruction.trim().is_empty() {
        return Err(AgentError::invalid(
            dir.join(".docs").display(),
            Some(&name),
            None,
            "no instructions",
        ));
    }

    let read = |rel: &str, key: &str| -> Result<TreeFile, AgentError> {
        let p = dir.join(rel);
        let contents = std::fs::read(&p).map_err(|e| bad(key, format!("{rel}: {e}")))?;
        Ok(TreeFile {
            path: rel.to_string(),
            contents,
            executable: false,
        })
    };
    let tests: Vec<TreeFile> = test
        .iter()
        .map(|t| read(t, "files.test"))
        .collect::<Result<_, _>>()?;
    let repository: Vec<TreeFile> = read_tree(dir, &|rel| {
        rel == ".meta"
            || rel == ".docs"
            || rel.ends_with("__pycache__")
            || test.iter().any(|t| t == rel)
    })?;
    for s in &solution {
        if !repository.iter().any(|f| &f.path == s) {
            return Err(bad(
                "files.solution",
                format!("{s} is not in the exercise folder"),
            ));
        }
    }
    let reference = if example.is_empty() {
        None
    } else {
        if example.len() != solution.len() {
            return Err(bad(
                "files.example",
                format!(
                    "{} example files for {} solution files",
                    example.len(),
                    solution.len()
                ),
            ));
        }
        let files = example
            .iter()
            .zip(&solution)
            .map(|(ex, sol)| {
                read(ex, "files.example").map(|f| TreeFile {
                    path: sol.clone(),
                    ..f
                })
            })
            .collect::<Result<_, _>>()?;
        Some(Reference::Files(files))
    };
    let mut ids: Vec<String> = test
        .iter()
        .filter(|t| t.ends_with("_test.py"))
        .map(|t| t.trim_end_matches(".py").replace('/', "."))
        .collect();
    if ids.is_empty() {
        ids = test
            .iter()
            .map(|t| t.trim_end_matches(".py").replace('/', "."))
            .collect();
    }
    if let Some(id) = ids.iter().find(|i| !valid_test_id(i)) {
        return Err(bad(
            "files.test",
            format!("{id:?} is not an importable module name"),
        ));
    }
    Ok(AgentTask {
        id: name,
        format: TaskFormat::Polyglot,
        origin: dir.display().to_string(),
        instruction,
        difficulty: Difficulty::from_exercism(rating),
        repository: Repository::Files(repository),
        workdir: baton_env::DEFAULT_WORKDIR.to_string(),
        tests: HiddenTests {
            files: tests,
            patch: None,
            fail_to_pass: ids,
            pass_to_pass: Vec::new(),
            timeout: DEFAULT_TEST_TIMEOUT,
        },
        reference,
    })
}
