//! `baton handoff write`: a compliant handoff document scaffolded from live git state.
//!
//! What git can say is filled in and checked; what only a person knows is left as clearly
//! marked `<FILL IN: …>` places (lines the rubrics do not count, so an unfilled scaffold
//! scores lower than a filled one, but stays valid):
//!
//! - the header: `handoff` from the branch name, `true_at_sha` = HEAD, `status` from the
//!   working tree (`done` only when it is clean and a test command passed), `author` from
//!   git's `user.name`/`user.email`, today's date, and a `verify_cmd`: the repository's own
//!   test command (Make's `test` target, Cargo, npm's `test` script, pytest or unittest for a
//!   Python project) when one passes in the sandbox at HEAD, else a check that the branch
//!   holds the anchor;
//! - claims with checks for facts git can check: the branch holds the anchor, key files exist
//!   (the manifest, the README, files the recent commits touched), the test command passes;
//! - the recent commits, in a code block (no rubric reads a commit subject);
//! - marked places for negative knowledge and the next action.
//!
//! A test command that is found but does not pass in the sandbox is named in the document
//! with the reason (a tool outside `/usr`, such as `~/.cargo/bin/cargo`, is not visible
//! there), not used as `verify_cmd`. Every claim written is run before it is written, so the
//! document passes `--claims` in the repository it was written from.

use std::path::Path;
use std::time::Duration;

use crate::git::Repo;
use crate::sandbox::{Sandbox, SandboxOptions};
use crate::stage::secret_like;

/// How long a candidate test command may run while the scaffold is written.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(120);

/// What was found while writing, for the caller to print.
#[derive(Debug, Clone, Default)]
pub struct Written {
    /// The document.
    pub text: String,
    /// The test command used as `verify_cmd`, when one passed.
    pub test_command: Option<String>,
    /// Test commands found that did not pass, with why.
    pub rejected: Vec<(String, String)>,
}

/// Candidate test commands for the repository at `root`, most specific first.
pub fn test_commands(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap_or_default();
    let makefile = read("Makefile");
    if makefile.lines().any(|l| l.starts_with("test:")) {
        out.push("make test".to_string());
    }
    if root.join("Cargo.toml").is_file() {
        out.push("cargo test --quiet".to_string());
    }
    let package = read("package.json");
    if let Ok(json) = serde_json::from_str::<serde_json::Value>(&package)
        && let Some(test) = json["scripts"]["test"].as_str()
        && !test.contains("no test specified")
    {
        out.push("npm test --silent".to_string());
    }
    let python = [
        "pyproject.toml",
        "setup.cfg",
        "setup.py",
        "pytest.ini",
        "tox.ini",
    ]
    .iter()
    .any(|f| root.join(f).is_file());
    if python {
        let config = read("pyproject.toml") + &read("setup.cfg") + &read("tox.ini");
        if config.contains("pytest") || root.join("pytest.ini").is_file() {
            out.push("python3 -m pytest -q".to_string());
        }
        out.push("python3 -m unittest discover -q".to_string());
    }
    out
}

/// A word safe to put in a check without quoting.
fn plain(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('-')
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/-+@".contains(&b))
}

fn slug(text: &str) -> String {
    let mut s = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') {
            s.push('-');
        }
    }
    s.trim_matches('-').to_string()
}

/// Write the scaffold for `repo`, running candidate checks in a sandbox made from `sandbox`.
pub fn write(
    repo: &Repo,
    sandbox: &SandboxOptions,
    today: jiff::civil::Date,
) -> Result<Written, String> {
    let head = repo.head().ok_or_else(|| {
        format!(
            "{} has no commit yet: commit first, then write the handoff",
            repo.root.display()
        )
    })?;
    let git = |args: &[&str]| repo.git_text(args).unwrap_or_default().trim().to_string();
    let branch = git(&["symbolic-ref", "--short", "-q", "HEAD"]);
    let top = repo
        .root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match slug(&branch) {
        s if s.is_empty() || s == "main" || s == "master" => {
            let t = slug(&top);
            if t.is_empty() {
                "handoff".to_string()
            } else {
                t
            }
        }
        s => s,
    };
    let user = git(&["config", "user.name"]);
    let email = git(&["config", "user.email"]);
    let author = match (user.is_empty(), email.is_empty()) {
        (false, false) => format!("{user} <{email}>"),
        (false, true) => user,
        _ => "<FILL IN: your name>".to_string(),
    };
    let clean = repo.uncommitted().map(|u| u.is_empty()).unwrap_or(false);
    let sandbox_run = Sandbox::new(sandbox)?;
    let mut tree = sandbox_run.tree(repo, None)?;
    let mut holds = |cmd: &str, timeout: Duration| -> Result<(), String> {
        let run = tree.run(cmd, timeout);
        if run.success() {
            Ok(())
        } else if run.exit == crate::exec::Exit::Code(127) {
            Err("exit 127: its program is not visible in the sandbox, which sees the host's /usr, /bin and /lib only".to_string())
        } else {
            Err(run.tail().lines().last().unwrap_or("failed").to_string())
        }
    };
    let mut written = Written::default();
    for cmd in test_commands(&repo.root) {
        match holds(&cmd, TEST_TIMEOUT) {
            Ok(()) => {
                written.test_command = Some(cmd);
                break;
            }
            Err(why) => written.rejected.push((cmd, why)),
        }
    }
    let mut claims: Vec<(String, String)> = Vec::new();
    if plain(&branch) {
        claims.push((
            format!("Branch `{branch}` holds the anchor"),
            format!("git merge-base --is-ancestor {head} refs/heads/{branch}"),
        ));
    }
    let mut files: Vec<String> = Vec::new();
    for f in [
        "Cargo.toml",
        "package.json",
        "pyproject.toml",
        "setup.py",
        "Makefile",
        "README.md",
        "README",
    ] {
        if repo.root.join(f).is_file() {
            files.push(f.to_string());
        }
    }
    let recent = git(&["log", "-n", "5", "--name-only", "--format=", "HEAD"]);
    for f in recent.lines().map(str::trim).filter(|f| !f.is_empty()) {
        if files.len() >= 6 {
            break;
        }
        let last = f.rsplit('/').next().unwrap_or(f);
        if plain(f)
            && !secret_like(last)
            && !files.iter().any(|x| x == f)
            && repo.root.join(f).is_file()
        {
            files.push(f.to_string());
        }
    }
    for f in files {
        let tracked = repo
            .git_text(&["cat-file", "-e", &format!("HEAD:{f}")])
            .is_ok();
        let check = format!("test -f {f}");
        if tracked && holds(&check, Duration::from_secs(10)).is_ok() {
            claims.push((format!("`{f}` exists"), check));
        }
    }
    if let Some(cmd) = &written.test_command {
        claims.push(("The test suite passes".to_string(), cmd.clone()));
    }
    let verify_cmd = written
        .test_command
        .clone()
        .unwrap_or_else(|| format!("git merge-base --is-ancestor {head} HEAD"));
    let status = if clean && written.test_command.is_some() {
        "done"
    } else {
        "in_progress"
    };
    let log = git(&["log", "-n", "10", "--format=%h %s", "HEAD"]);
    let uncommitted = repo.uncommitted().unwrap_or_default();
    let first = "Run the verification command, then read the negative knowledge";
    let mut t = String::new();
    t.push_str(&format!(
        "---\nprotocol_version: 1\nhandoff: {name}\nauthor: {author}\niso_date: {today}\n\
         true_at_sha: {head}\nshape: handoff\nfirst_action: {first}\nverify_cmd: {verify_cmd}\n\
         status: {status}\n---\n\n# Handover: {name}\n\n"
    ));
    t.push_str(
        "Written by `baton handoff write` from the repository's git state. Lines marked \
         `<FILL IN: …>` need a person; everything else was checked when it was written.\n\n",
    );
    t.push_str("## 1. Canonical sources\n\n");
    t.push_str(&format!(
        "- Code is truth: when docs disagree, the tree at `true_at_sha` ({}) wins.\n",
        &head[..head.len().min(12)]
    ));
    t.push_str("- <FILL IN: the documents or issues that define this work>\n\n");
    t.push_str("## 2. Claims\n\n| Claim | Verify |\n|---|---|\n");
    for (label, check) in &claims {
        t.push_str(&format!("| {label} | `{}` |\n", check.replace('|', "\\|")));
    }
    t.push_str("| <FILL IN: a fact only you know> | `[belief, unverified]` |\n\n");
    t.push_str("## 3. State\n\n");
    t.push_str(&format!(
        "- Branch: {}\n- Working tree: {}\n",
        if branch.is_empty() {
            "(detached HEAD)"
        } else {
            &branch
        },
        if uncommitted.is_empty() {
            "clean".to_string()
        } else {
            format!(
                "{} uncommitted change(s), not covered by the anchor",
                uncommitted.len()
            )
        }
    ));
    if !written.rejected.is_empty() {
        for (cmd, why) in &written.rejected {
            t.push_str(&format!(
                "- Test command `{cmd}` was found but did not pass in the sandbox: {}\n",
                why.replace('`', "'")
            ));
        }
    }
    t.push_str("\nRecent commits:\n\n```text\n");
    t.push_str(&log);
    t.push_str("\n```\n\n");
    t.push_str("## 4. Negative knowledge\n\n");
    t.push_str("- Tried and failed: <FILL IN: what was tried, and why it did not work>\n");
    t.push_str("- Out of scope: <FILL IN: what this work deliberately leaves out>\n");
    t.push_str("- Built then reverted: <FILL IN: what was undone, so nobody re-adds it>\n");
    t.push_str("- Decision: <FILL IN: a choice made, and its rationale>\n\n");
    t.push_str("## 5. Next action\n\n");
    t.push_str(&format!("1. **{first}.**\n"));
    t.push_str("2. <FILL IN: the first real step of the remaining work>\n\n");
    t.push_str("## 6. Verification\n\nHow to verify the whole handoff:\n\n```sh\n");
    t.push_str(&verify_cmd);
    t.push_str("\n```\n");
    written.text = t;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_and_plain_words() {
        assert_eq!(slug("feature/Guest_Checkout"), "feature-guest-checkout");
        assert!(plain("src/app.js") && !plain("a b") && !plain("$(x)") && !plain("-rf"));
    }
}
