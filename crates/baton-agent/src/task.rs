//! The agent task: what the agent is asked to do, the repository it works in, the hidden
//! tests that decide whether it succeeded, its difficulty bucket, and an optional reference
//! solution.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::AgentError;

pub use baton_types::agent::Difficulty;

/// Where a task came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskFormat {
    /// baton's own folder format (the bundled `agent-sample` uses it).
    Baton,
    /// An Exercism exercise as in Aider's polyglot benchmark.
    Polyglot,
    /// A SWE-bench (Verified) instance.
    SweBench,
}

impl TaskFormat {
    /// `baton`, `polyglot` or `swe_bench` (as in experiment files and stores).
    pub fn name(self) -> &'static str {
        match self {
            TaskFormat::Baton => "baton",
            TaskFormat::Polyglot => "polyglot",
            TaskFormat::SweBench => "swe_bench",
        }
    }
}

/// One file of a tree held in memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeFile {
    /// `/`-separated path relative to the repository root.
    pub path: String,
    /// The bytes.
    pub contents: Vec<u8>,
    /// Whether it is executable.
    pub executable: bool,
}

/// The repository the agent works in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repository {
    /// A folder on disk, copied into each environment.
    Dir(PathBuf),
    /// Files held in memory (the bundled set, an Exercism stub).
    Files(Vec<TreeFile>),
    /// A Docker image whose working directory holds the repository (SWE-bench).
    Image(String),
}

impl Repository {
    /// Write the repository into the empty folder `dst` (not for images). Returns the
    /// folder to copy from: `dst`, or the repository's own folder.
    pub fn materialize(&self, dst: &Path) -> Result<PathBuf, AgentError> {
        match self {
            Repository::Dir(dir) => Ok(dir.clone()),
            Repository::Files(files) => {
                for f in files {
                    write_tree_file(dst, f)?;
                }
                Ok(dst.to_path_buf())
            }
            Repository::Image(image) => Err(AgentError::invalid(
                image,
                None,
                None,
                "a Docker image has no host tree to materialize",
            )),
        }
    }

    /// The pristine contents of `path`, if the repository has such a file.
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>, AgentError> {
        match self {
            Repository::Dir(dir) => {
                let p = dir.join(path);
                match std::fs::symlink_metadata(&p) {
                    Ok(md) if md.is_file() => std::fs::read(&p)
                        .map(Some)
                        .map_err(|e| AgentError::io(&p, "read", e)),
                    _ => Ok(None),
                }
            }
            Repository::Files(files) => Ok(files
                .iter()
                .find(|f| f.path == path)
                .map(|f| f.contents.clone())),
            Repository::Image(_) => Ok(None),
        }
    }

    /// The repository's own test files (`test_*.py`, `*_test.py`), restored to their
    /// pristine contents before the tests run, whatever a patch did to them.
    pub fn test_files(&self) -> Result<Vec<TreeFile>, AgentError> {
        let is_test = |path: &str| {
            let name = path.rsplit('/').next().unwrap_or(path);
            name.ends_with(".py") && (name.starts_with("test_") || name.ends_with("_test.py"))
        };
        match self {
            Repository::Files(files) => {
                Ok(files.iter().filter(|f| is_test(&f.path)).cloned().collect())
            }
            Repository::Dir(dir) => {
                let mut out = Vec::new();
                for f in read_tree(dir, &|rel| rel.split('/').any(|c| c == ".git"))? {
                    if is_test(&f.path) {
                        out.push(f);
                    }
                }
                Ok(out)
            }
            Repository::Image(_) => Ok(Vec::new()),
        }
    }
}

/// The hidden tests that decide a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenTests {
    /// Test files laid over the repository before the tests run (baton and polyglot).
    pub files: Vec<TreeFile>,
    /// A patch that adds the tests (SWE-bench's `test_patch`).
    pub patch: Option<String>,
    /// Tests that fail on the unchanged repository and must pass after a correct change.
    pub fail_to_pass: Vec<String>,
    /// Tests that pass before and must still pass after.
    pub pass_to_pass: Vec<String>,
    /// The time limit of one test run.
    pub timeout: Duration,
}

/// A reference solution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A unified diff against the repository.
    Patch(String),
    /// Files that replace (or add to) the repository's.
    Files(Vec<TreeFile>),
}

/// One agent task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTask {
    /// Unique within its dataset.
    pub id: String,
    /// The format it was read from.
    pub format: TaskFormat,
    /// Where it was read from (a folder, or `file:line`), for messages.
    pub origin: String,
    /// What the agent is asked to do (Markdown).
    pub instruction: String,
    /// Its difficulty bucket.
    pub difficulty: Difficulty,
    /// The repository.
    pub repository: Repository,
    /// The working directory inside the environment.
    pub workdir: String,
    /// How it is scored.
    pub tests: HiddenTests,
    /// The known-good change, when there is one.
    pub reference: Option<Reference>,
}

impl AgentTask {
    /// The sha256 of what the task is: id, format, instruction, difficulty, working
    /// directory, repository (its files, folder path or image), hidden tests and
    /// reference. A store records it, and a resume whose task changed is refused.
    pub fn sha256(&self) -> Result<String, AgentError> {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        let mut part = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        let files = |part: &mut dyn FnMut(&[u8]), fs: &[TreeFile]| {
            part(&(fs.len() as u64).to_le_bytes());
            for f in fs {
                part(f.path.as_bytes());
                part(&f.contents);
                part(&[u8::from(f.executable)]);
            }
        };
        part(self.id.as_bytes());
        part(self.format.name().as_bytes());
        part(self.instruction.as_bytes());
        part(self.difficulty.name().as_bytes());
        part(self.workdir.as_bytes());
        match &self.repository {
            Repository::Files(fs) => files(&mut part, fs),
            Repository::Dir(dir) => {
                let fs = read_tree(dir, &|rel| rel.split('/').any(|c| c == ".git"))?;
                files(&mut part, &fs)
            }
            Repository::Image(image) => part(image.as_bytes()),
        }
        files(&mut part, &self.tests.files);
        part(self.tests.patch.as_deref().unwrap_or("").as_bytes());
        for id in self
            .tests
            .fail_to_pass
            .iter()
            .chain(&self.tests.pass_to_pass)
        {
            part(id.as_bytes());
        }
        part(&self.tests.timeout.as_millis().to_le_bytes());
        match &self.reference {
            None => part(b"none"),
            Some(Reference::Patch(p)) => part(p.as_bytes()),
            Some(Reference::Files(fs)) => files(&mut part, fs),
        }
        Ok(hex::encode(h.finalize()))
    }

    /// The reference solution as a unified diff (files are diffed against the repository).
    pub fn reference_patch(&self) -> Result<Option<String>, AgentError> {
        match &self.reference {
            None => Ok(None),
            Some(Reference::Patch(p)) => Ok(Some(p.clone())),
            Some(Reference::Files(files)) => {
                let mut patch = String::new();
                for f in files {
                    let old = self.repository.read(&f.path)?;
                    let text = |bytes: &[u8], which: &str| {
                        String::from_utf8(bytes.to_vec()).map_err(|_| {
                            AgentError::invalid(
                                &self.origin,
                                Some(&self.id),
                                None,
                                format!("{which} {} is not UTF-8 text", f.path),
                            )
                        })
                    };
                    let new = text(&f.contents, "reference file")?;
                    let old = old.map(|o| text(&o, "repository file")).transpose()?;
                    patch.push_str(&crate::diff::unified_diff(&f.path, old.as_deref(), &new));
                }
                Ok(Some(patch))
            }
        }
    }
}

/// Check a unittest-style test id: dotted Python identifiers.
pub(crate) fn valid_test_id(id: &str) -> bool {
    !id.is_empty()
        && id.split('.').all(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
                && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        })
}

/// Check a relative path from a dataset: no absolute paths, no `..`.
pub(crate) fn valid_rel_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

pub(crate) fn write_tree_file(root: &Path, f: &TreeFile) -> Result<(), AgentError> {
    use std::os::unix::fs::PermissionsExt;
    if !valid_rel_path(&f.path) {
        return Err(AgentError::invalid(
            &f.path,
            None,
            None,
            "not a relative path inside the repository",
        ));
    }
    let p = root.join(&f.path);
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).map_err(|e| AgentError::io(dir, "create folder", e))?;
    }
    std::fs::write(&p, &f.contents).map_err(|e| AgentError::io(&p, "write", e))?;
    let mode = if f.executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode))
        .map_err(|e| AgentError::io(&p, "set permissions", e))
}

/// Every regular file under `root` (paths relative to it), skipping paths `skip` names;
/// links and special files are left out.
pub(crate) fn read_tree(
    root: &Path,
    skip: &dyn Fn(&str) -> bool,
) -> Result<Vec<TreeFile>, AgentError> {
    use std::os::unix::fs::PermissionsExt;
    fn walk(
        root: &Path,
        rel: &str,
        skip: &dyn Fn(&str) -> bool,
        out: &mut Vec<TreeFile>,
    ) -> Result<(), AgentError> {
        let dir = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(rel)
        };
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .map_err(|e| AgentError::io(&dir, "list folder", e))?
            .collect::<Result<_, _>>()
            .map_err(|e| AgentError::io(&dir, "list folder", e))?;
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let name = e.file_name().to_string_lossy().into_owned();
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if skip(&child) {
                continue;
            }
            let md = std::fs::symlink_metadata(e.path())
                .map_err(|err| AgentError::io(e.path(), "inspect", err))?;
            if md.is_dir() {
                walk(root, &child, skip, out)?;
            } else if md.is_file() {
                let contents =
                    std::fs::read(e.path()).map_err(|err| AgentError::io(e.path(), "read", err))?;
                out.push(TreeFile {
                    path: child,
                    contents,
                    executable: md.permissions().mode() & 0o111 != 0,
                });
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, "", skip, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_from_exercism_and_swebench() {
        assert_eq!(Difficulty::from_exercism(1), Difficulty::Easy);
        assert_eq!(Difficulty::from_exercism(3), Difficulty::Easy);
        assert_eq!(Difficulty::from_exercism(4), Difficulty::Medium);
        assert_eq!(Difficulty::from_exercism(5), Difficulty::Medium);
        assert_eq!(Difficulty::from_exercism(6), Difficulty::Hard);
        assert_eq!(Difficulty::from_exercism(9), Difficulty::Hard);
        assert_eq!(
            Difficulty::from_swebench("<15 min fix"),
            Some(Difficulty::Easy)
        );
        assert_eq!(
            Difficulty::from_swebench("15 min - 1 hour"),
            Some(Difficulty::Medium)
        );
        assert_eq!(
            Difficulty::from_swebench("1-4 hours"),
            Some(Difficulty::Hard)
        );
        assert_eq!(
            Difficulty::from_swebench(">4 hours"),
            Some(Difficulty::Hard)
        );
        assert_eq!(Difficulty::from_swebench("a week"), None);
    }

    #[test]
    fn test_ids_and_paths_are_checked() {
        assert!(valid_test_id("test_a.TestB.test_c"));
        assert!(valid_test_id("_private"));
        for bad in ["", "a..b", "1abc", "a.b c", "a;rm -rf /", "a.-b"] {
            assert!(!valid_test_id(bad), "{bad}");
        }
        assert!(valid_rel_path("a/b.py"));
        for bad in ["", "/etc/x", "a/../b", "./a", "a//b"] {
            assert!(!valid_rel_path(bad), "{bad}");
        }
    }

    #[test]
    fn repository_test_files_follow_the_naming_rule() {
        let f = |p: &str| TreeFile {
            path: p.into(),
            contents: vec![],
            executable: false,
        };
        let repo = Repository::Files(vec![
            f("test_a.py"),
            f("pkg/b_test.py"),
            f("pkg/mod.py"),
            f("testdata.txt"),
        ]);
        let names: Vec<String> = repo
            .test_files()
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(names, ["test_a.py", "pkg/b_test.py"]);
    }
}
