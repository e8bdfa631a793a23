//! The documents a commit range touched, for `baton handoff lint --changed [BASE]` in CI.
//!
//! A changed file is linted when it is still there at HEAD and is either an agent instruction
//! file ([`crate::agents::is_agent_file`]: `AGENTS.md`, `CLAUDE.md`) or a markdown file whose
//! header names a `handoff` (so a README that happens to be changed is not linted as a
//! handoff). The range is `BASE...HEAD`: what the branch changed since it left BASE, as a pull
//! request shows it.

use std::path::{Path, PathBuf};

use crate::document::Document;
use crate::git::Repo;

/// The most bytes of a changed markdown file read to look for a handoff header.
const PEEK: usize = 64 * 1024;

/// The handoff documents and agent files changed in `BASE...HEAD` of the repository holding
/// `dir`, as paths under its top-level folder.
pub fn documents(dir: &Path, base: &str) -> Result<Vec<PathBuf>, String> {
    let repo = Repo::discover(dir)
        .ok_or_else(|| format!("{} is not inside a git repository", dir.display()))?;
    if base.starts_with('-') {
        return Err(format!("\"{base}\" is not a revision"));
    }
    let range = format!("{base}...HEAD");
    let names = repo
        .list(&[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--diff-filter=d",
            &range,
        ])
        .map_err(|e| format!("cannot list the files changed since {base}: {e}"))?;
    let mut out = Vec::new();
    for name in names {
        let path = repo.root.join(&name);
        if !path.is_file() {
            continue;
        }
        if crate::agents::is_agent_file(&path) || is_handoff(&path) {
            out.push(path);
        }
    }
    Ok(out)
}

/// Whether `path` is a markdown file whose header has a `handoff` key.
pub fn is_handoff(path: &Path) -> bool {
    let md = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"));
    if !md {
        return false;
    }
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(PEEK)]);
    Document::parse(&text).field("handoff").is_some()
}
