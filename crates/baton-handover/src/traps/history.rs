//! A scenario's bundled description (`traps/<scenario>/scenario.toml`) and the repository it
//! builds: a declarative history replayed into a real git repository, or Handover's own
//! fixture folder committed fresh.
//!
//! The file's keys: `task` (the prompt, neutral: it never says what not to do), `author`
//! (`Name <email>`, every commit's unless the commit names its own), and either `repo =
//! "handover"` with one `date` (the scenario's `repo/` folder in the Handover checkout,
//! committed once) or `[[commit]]` entries, oldest first, each with `message`, `date` (RFC
//! 3339), optional `author`, `delete` (paths removed) and `[commit.files]` (path → full new
//! contents). Author, committer and both dates are fixed and git reads no configuration of
//! the host, so the same file gives the same commit ids on every machine and git version.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use crate::error::Error;

/// A scenario's `scenario.toml`, read.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// The task prompt's body.
    pub task: String,
    /// The default author, `Name <email>`.
    pub author: String,
    /// `"handover"`: the repository is Handover's fixture folder (`repo/` of the scenario).
    #[serde(default)]
    pub repo: Option<String>,
    /// The date of the single commit of a Handover fixture folder.
    #[serde(default)]
    pub date: Option<String>,
    /// The history, oldest first.
    #[serde(default, rename = "commit")]
    pub commits: Vec<CommitSpec>,
}

/// One commit of a bundled history.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitSpec {
    /// Its message.
    pub message: String,
    /// Its author and committer date (RFC 3339).
    pub date: String,
    /// Its author, when not the scenario's.
    #[serde(default)]
    pub author: Option<String>,
    /// Paths it removes.
    #[serde(default)]
    pub delete: Vec<String>,
    /// Paths it writes, with their whole new contents.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

impl ScenarioSpec {
    /// Read and check `text` (the `scenario.toml` of `scenario`).
    pub fn parse(scenario: &str, text: &str) -> Result<ScenarioSpec, Error> {
        let bad = |message: String| Error::TrapScenario {
            scenario: scenario.to_string(),
            message,
        };
        let spec: ScenarioSpec =
            toml::from_str(text).map_err(|e| bad(format!("scenario.toml: {e}")))?;
        split_author(&spec.author)
            .ok_or_else(|| bad("scenario.toml: author is not `Name <email>`".into()))?;
        match spec.repo.as_deref() {
            Some("handover") if spec.commits.is_empty() && spec.date.is_some() => {}
            Some("handover") => {
                return Err(bad(
                    "scenario.toml: repo = \"handover\" takes one `date` and no [[commit]]".into(),
                ));
            }
            Some(other) => return Err(bad(format!("scenario.toml: unknown repo \"{other}\""))),
            None if spec.commits.is_empty() => {
                return Err(bad("scenario.toml: no [[commit]] and no repo".into()));
            }
            None => {}
        }
        for (i, commit) in spec.commits.iter().enumerate() {
            let at = |what: &str| bad(format!("scenario.toml: commit {}: {what}", i + 1));
            commit
                .date
                .parse::<jiff::Timestamp>()
                .map_err(|_| at(&format!("date \"{}\" is not RFC 3339", commit.date)))?;
            if let Some(a) = &commit.author
                && split_author(a).is_none()
            {
                return Err(at("author is not `Name <email>`"));
            }
            for path in commit.delete.iter().chain(commit.files.keys()) {
                if !relative(path) {
                    return Err(at(&format!("path \"{path}\" leaves the repository")));
                }
            }
        }
        Ok(spec)
    }
}

/// `("Name", "email")` from `Name <email>`.
fn split_author(author: &str) -> Option<(&str, &str)> {
    let (name, rest) = author.split_once('<')?;
    let email = rest.strip_suffix('>')?;
    let name = name.trim();
    (!name.is_empty() && email.contains('@')).then_some((name, email))
}

/// Whether `path` is a plain relative path inside the repository (and not in `.git`).
fn relative(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty()
        && p.components().all(|c| matches!(c, Component::Normal(_)))
        && p.components()
            .next()
            .is_some_and(|c| c.as_os_str() != ".git")
}

/// git on the host with no configuration of the host's, fixed identity and dates.
struct Git<'a> {
    scenario: &'a str,
    dir: &'a Path,
}

impl Git<'_> {
    fn run(&self, args: &[&str], who: Option<((&str, &str), &str)>) -> Result<String, Error> {
        let mut cmd = Command::new("git");
        cmd.args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.autocrlf=false",
            "-c",
            "core.hooksPath=/dev/null",
        ])
        .args(args)
        .current_dir(self.dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("LC_ALL", "C")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY");
        if let Some(((name, email), date)) = who {
            for (k, v) in [
                ("GIT_AUTHOR_NAME", name),
                ("GIT_AUTHOR_EMAIL", email),
                ("GIT_AUTHOR_DATE", date),
                ("GIT_COMMITTER_NAME", name),
                ("GIT_COMMITTER_EMAIL", email),
                ("GIT_COMMITTER_DATE", date),
            ] {
                cmd.env(k, v);
            }
        }
        let fail = |message: String| Error::Git {
            scenario: self.scenario.to_string(),
            dir: self.dir.to_path_buf(),
            args: args.join(" "),
            message,
        };
        let out = cmd
            .output()
            .map_err(|e| fail(format!("git did not start: {e}")))?;
        if !out.status.success() {
            return Err(fail(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

/// Build the repository of `spec` in `dest` (an empty or missing folder); `fixture` is the
/// Handover fixture folder when `spec.repo` is `"handover"`. Returns the commit id of HEAD.
pub fn build(
    scenario: &str,
    spec: &ScenarioSpec,
    fixture: Option<&Path>,
    dest: &Path,
) -> Result<String, Error> {
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Write { path, source }
    };
    std::fs::create_dir_all(dest).map_err(write_err(dest))?;
    let git = Git {
        scenario,
        dir: dest,
    };
    git.run(&["init", "-q"], None)?;
    let default_author = split_author(&spec.author).expect("checked by parse");
    if spec.repo.is_some() {
        let Some(fixture) = fixture else {
            return Err(Error::TrapScenario {
                scenario: scenario.to_string(),
                message:
                    "its repository is Handover's repo/ folder, and no Handover checkout was given"
                        .into(),
            });
        };
        copy_tree(fixture, dest)?;
        let date = spec.date.as_deref().expect("checked by parse");
        git.run(&["add", "-A"], None)?;
        git.run(
            &[
                "commit",
                "-q",
                "-m",
                &format!("{scenario}: repository state"),
            ],
            Some((default_author, date)),
        )?;
    } else {
        for commit in &spec.commits {
            for path in &commit.delete {
                let p = dest.join(path);
                std::fs::remove_file(&p).map_err(write_err(&p))?;
            }
            for (path, text) in &commit.files {
                let p = dest.join(path);
                if let Some(parent) = p.parent() {
                    std::fs::create_dir_all(parent).map_err(write_err(parent))?;
                }
                std::fs::write(&p, text).map_err(write_err(&p))?;
            }
            let author = commit
                .author
                .as_deref()
                .and_then(split_author)
                .unwrap_or(default_author);
            git.run(&["add", "-A"], None)?;
            git.run(
                &[
                    "commit",
                    "-q",
                    "--allow-empty",
                    "-m",
                    commit.message.trim_end(),
                ],
                Some((author, &commit.date)),
            )?;
        }
    }
    git.run(&["rev-parse", "HEAD"], None)
}

/// Copy the regular files and folders under `from` into `to` (links and other entries left
/// out; a `.git` folder left out).
fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    let mut stack: Vec<PathBuf> = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = from.join(&rel);
        let read = |source| Error::Read {
            path: dir.clone(),
            source,
        };
        for entry in std::fs::read_dir(&dir).map_err(read)? {
            let entry = entry.map_err(read)?;
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let kind = entry.file_type().map_err(read)?;
            let rel = rel.join(&name);
            let target = to.join(&rel);
            if kind.is_dir() {
                std::fs::create_dir_all(&target).map_err(|source| Error::Write {
                    path: target.clone(),
                    source,
                })?;
                stack.push(rel);
            } else if kind.is_file() {
                std::fs::copy(entry.path(), &target).map_err(|source| Error::Write {
                    path: target.clone(),
                    source,
                })?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_specs_name_the_key() {
        let err = |text: &str| ScenarioSpec::parse("s", text).unwrap_err().to_string();
        assert_eq!(
            err(
                "task = 't'\nauthor = 'nobody'\nrepo = 'handover'\ndate = '2026-01-01T00:00:00+00:00'"
            ),
            "trap scenario \"s\": scenario.toml: author is not `Name <email>`"
        );
        assert_eq!(
            err("task = 't'\nauthor = 'A <a@b>'\n[[commit]]\nmessage = 'm'\ndate = 'monday'"),
            "trap scenario \"s\": scenario.toml: commit 1: date \"monday\" is not RFC 3339"
        );
        assert_eq!(
            err(
                "task = 't'\nauthor = 'A <a@b>'\n[[commit]]\nmessage = 'm'\ndate = '2026-01-01T00:00:00+00:00'\ndelete = ['../x']"
            ),
            "trap scenario \"s\": scenario.toml: commit 1: path \"../x\" leaves the repository"
        );
        assert_eq!(
            err("task = 't'\nauthor = 'A <a@b>'"),
            "trap scenario \"s\": scenario.toml: no [[commit]] and no repo"
        );
    }
}
