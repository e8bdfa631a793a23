//! The git probes verification needs, run without a shell.
//!
//! Every call is `git --no-optional-locks -c core.hooksPath=/dev/null -c core.fsmonitor=false …`
//! (so `git status` never refreshes `.git/index`: `--repo` leaves `.git` byte-identical) through
//! [`crate::exec::run_capture`] with a timeout, so no hook, monitor or value from a document
//! can run anything; commit ids are checked for shape before they reach git, and
//! `--end-of-options` keeps them from being read as options.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::exec;

const TIMEOUT: Duration = Duration::from_secs(60);
const LIMIT: usize = 32 * 1024 * 1024;

/// A git working tree.
#[derive(Debug, Clone)]
pub struct Repo {
    /// Its top-level folder.
    pub root: PathBuf,
}

/// Why a git call failed.
pub type GitError = String;

fn run(cwd: &Path, args: &[&str]) -> exec::Run {
    run_env(cwd, args, &[])
}

fn run_env(cwd: &Path, args: &[&str], env: &[(&str, &Path)]) -> exec::Run {
    let mut all = vec![
        "--no-optional-locks",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "color.ui=never",
    ];
    all.extend_from_slice(args);
    exec::run_capture_env("git", &all, cwd, TIMEOUT, LIMIT, env)
}

impl Repo {
    /// The repository whose working tree contains `dir`.
    pub fn discover(dir: &Path) -> Option<Repo> {
        let run = run(dir, &["rev-parse", "--show-toplevel"]);
        if !run.success() {
            return None;
        }
        let root = String::from_utf8_lossy(&run.output).trim().to_string();
        (!root.is_empty()).then(|| Repo {
            root: PathBuf::from(root),
        })
    }

    fn git(&self, args: &[&str]) -> Result<String, GitError> {
        self.git_env(args, &[])
    }

    /// `git args` at the top of the tree with extra path variables (`GIT_INDEX_FILE`).
    pub(crate) fn git_env(&self, args: &[&str], env: &[(&str, &Path)]) -> Result<String, GitError> {
        let run = run_env(&self.root, args, env);
        if run.success() {
            Ok(String::from_utf8_lossy(&run.output).into_owned())
        } else {
            let err = String::from_utf8_lossy(&run.errors).trim().to_string();
            Err(format!(
                "git {}: {}",
                args.join(" "),
                if err.is_empty() {
                    format!("{:?}", run.exit)
                } else {
                    err
                }
            ))
        }
    }

    /// The full id of the commit `sha` names, if it names exactly one.
    pub fn resolve(&self, sha: &str) -> Option<String> {
        if !(7..=40).contains(&sha.len()) || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let spec = format!("{sha}^{{commit}}");
        self.git(&[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ])
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
    }

    /// The commit HEAD points at.
    pub fn head(&self) -> Option<String> {
        self.git(&["rev-parse", "--verify", "--quiet", "HEAD"])
            .ok()
            .map(|s| s.trim().to_string())
    }

    /// Whether `a` is an ancestor of `b` (`None` when git cannot say).
    pub fn is_ancestor(&self, a: &str, b: &str) -> Option<bool> {
        match run(&self.root, &["merge-base", "--is-ancestor", a, b]).exit {
            exec::Exit::Code(0) => Some(true),
            exec::Exit::Code(1) => Some(false),
            _ => None,
        }
    }

    /// The best common ancestor of two commits.
    pub fn merge_base(&self, a: &str, b: &str) -> Option<String> {
        self.git(&["merge-base", a, b])
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// Branches (local and remote) that contain `sha`.
    pub fn branches_containing(&self, sha: &str) -> Vec<String> {
        self.git(&[
            "branch",
            "--all",
            "--format=%(refname:short)",
            "--contains",
            sha,
        ])
        .map(|s| s.lines().map(str::to_string).collect())
        .unwrap_or_default()
    }

    /// Commits reachable from HEAD but not from `sha`; with `except`, only those that touch
    /// some other path.
    pub fn commits_since(&self, sha: &str, except: Option<&str>) -> Result<u64, GitError> {
        let range = format!("{sha}..HEAD");
        let exclude = except.map(|p| format!(":(exclude,literal,top){p}"));
        let mut args = vec!["rev-list", "--count", range.as_str()];
        if let Some(ex) = &exclude {
            args.extend(["--", ":(top)", ex.as_str()]);
        }
        self.git(&args)?
            .trim()
            .parse()
            .map_err(|e| format!("git rev-list --count: {e}"))
    }

    /// Paths that differ between two commits.
    pub fn changed(&self, from: &str, to: &str) -> Result<Vec<String>, GitError> {
        Ok(split_z(&self.git(&[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            from,
            to,
        ])?))
    }

    /// Paths with uncommitted changes, untracked files included.
    pub fn uncommitted(&self) -> Result<Vec<String>, GitError> {
        let out = self.git(&["status", "--porcelain=v1", "-z", "--untracked-files=all"])?;
        let mut paths = Vec::new();
        let mut entries = out.split('\0');
        while let Some(entry) = entries.next() {
            if entry.len() < 4 {
                continue;
            }
            paths.push(entry[3..].to_string());
            if matches!(entry.as_bytes()[0], b'R' | b'C') {
                entries.next();
            }
        }
        Ok(paths)
    }

    /// `git args` at the top of the tree: its standard output, or why it failed.
    pub(crate) fn git_text(&self, args: &[&str]) -> Result<String, GitError> {
        self.git(args)
    }

    /// NUL-separated paths git lists (`ls-files -z …`).
    pub(crate) fn list(&self, args: &[&str]) -> Result<Vec<String>, GitError> {
        Ok(split_z(&self.git(args)?))
    }

    /// The repository's git folder and common git folder (they differ in a linked worktree),
    /// as absolute paths.
    pub(crate) fn git_dirs(&self) -> Result<(PathBuf, PathBuf), GitError> {
        let out = self.git(&["rev-parse", "--absolute-git-dir", "--git-common-dir"])?;
        let mut lines = out.lines();
        let dir = PathBuf::from(lines.next().unwrap_or_default());
        let common = PathBuf::from(lines.next().unwrap_or_default());
        let common = if common.is_absolute() {
            common
        } else {
            self.root.join(common)
        };
        Ok((dir, common))
    }

    /// `path` relative to the top-level folder, if it is inside it.
    pub fn relative(&self, path: &Path) -> Option<String> {
        let path = path.canonicalize().ok()?;
        let root = self.root.canonicalize().ok()?;
        path.strip_prefix(root)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
    }
}

fn split_z(s: &str) -> Vec<String> {
    s.split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}
