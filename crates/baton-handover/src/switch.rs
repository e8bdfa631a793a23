//! A Handover document as the handoff at an agent study's switch (the `handover`
//! interface's library side): the request that asks the prefix model to write one, the
//! commit that gives its `true_at_sha` a meaning, and its lint with every claim's check run
//! at that commit.
//!
//! At the switch the episode's working tree lives in a `baton-env` sandbox. In order:
//!
//! 1. [`commit_at_switch`]: `git add -A` and commit the tree there (a fixed identity, no
//!    hooks, `--allow-empty`), returning the commit id.
//! 2. [`handover_request`]: the user message that asks the prefix model for the document,
//!    naming that commit and today's date, with the protocol's fields (the header's
//!    `handoff`, `iso_date`, `true_at_sha`, `shape`, `first_action`, `verify_cmd`,
//!    `status`; claims with checks; negative knowledge; the next action).
//! 3. [`lint_at_switch`]: the sandbox's tree (its `.git` included) is snapshotted and
//!    written to a host folder, the document placed in it as `HANDOVER.md` (untracked, so
//!    it is not drift), and linted with claims verification (`--claims`): each claim's
//!    check runs in the linter's own sandbox at the anchor and on the current tree. The
//!    result ([`SwitchLint`]) is the score, the validity, the verdict and each claim's
//!    verdict, for the study to store per handoff episode.
//! 4. [`uncommit_at_switch`]: HEAD and the index go back to where they were, the commit
//!    kept in the object store, so the episode's submission (a diff against the task's
//!    baseline) still holds the prefix's work.

use std::path::Path;
use std::time::Duration;

use baton_env::snapshot::{EntryKind, Manifest};
use baton_env::{DirBlobStore, Environment, Exec};
use serde::Serialize;

use crate::error::Error;
use crate::structure::Rubric;
use crate::verify::{self, Level};

/// The author and committer date of [`commit_at_switch`]'s commit.
pub const COMMIT_DATE: &str = "2000-01-01T00:00:00+0000";

/// The document's name in the tree it is linted in.
pub const SWITCH_DOCUMENT: &str = "HANDOVER.md";

/// The request sent to the prefix model at the switch, after its trajectory, for a
/// Handover document of the work so far anchored at `sha` (the commit
/// [`commit_at_switch`] made) and dated `date` (`YYYY-MM-DD`).
pub fn handover_request(sha: &str, date: &str) -> String {
    let cue = baton_agent::HANDOVER_REQUEST_CUE;
    format!(
        "Stop working on the task for a moment. Another engineer takes over in this same \
repository and will not see this conversation. Your work so far is committed as {sha}. {cue} \
for them in the Handover format, and reply with the document only (no command):

---
handoff: <a short name for the workstream>
iso_date: {date}
true_at_sha: {sha}
shape: handoff
first_action: <the one command or step to take first>
verify_cmd: <a shell command that passes when the work is right, e.g. the tests>
status: in_progress
---

# Handover: <name>

## Current state as verifiable claims
| Claim | Verify |
|---|---|
| <something true of the repository now> | `<a read-only shell command that exits 0 when it holds>` |

## Negative knowledge
- **Tried and failed:** <what did not work, and why>
- **Do not:** <what must not be done, and why>

## Next action
1. <the first step; it matches first_action>

Every claim needs a check that runs in the repository as it is now, without network and \
without changing anything. Write only what you know from your work.\n"
    )
}

/// What a git command in the sandbox said.
fn run(env: &mut dyn Environment, command: &str) -> Result<String, Error> {
    let out = env
        .exec(&Exec::new(command).timeout(Duration::from_secs(60)))
        .map_err(|source| Error::Switch {
            message: format!("`{command}` did not run: {source}"),
        })?;
    let text = out.output.text();
    if !out.status.success() {
        return Err(Error::Switch {
            message: format!("`{command}` ended {}: {}", out.status, text.trim()),
        });
    }
    Ok(text)
}

/// Commit the sandbox's working tree as it is (everything, untracked files included) and
/// return the commit's full id. A tree that is not a git repository yet becomes one.
///
/// The identity and both dates are fixed ([`COMMIT_DATE`]), so the same tree on the same
/// history always commits to the same id: a resumed run that restores the tree before the
/// switch and commits it again gets the commit the stored document names.
pub fn commit_at_switch(env: &mut dyn Environment) -> Result<String, Error> {
    run(
        env,
        &format!(
            "git rev-parse --is-inside-work-tree >/dev/null 2>&1 || git init -q; \
             git add -A && GIT_AUTHOR_DATE='{COMMIT_DATE}' GIT_COMMITTER_DATE='{COMMIT_DATE}' \
             git -c user.name=baton -c user.email=baton@localhost \
             -c commit.gpgsign=false commit -q --no-verify --allow-empty \
             -m 'baton: the working tree at the handoff'"
        ),
    )?;
    let sha = run(env, "git rev-parse HEAD")?;
    Ok(sha.trim().to_string())
}

/// Undo [`commit_at_switch`]'s commit `sha` for the work that goes on: HEAD and the index
/// go back to its parent (`git reset --mixed`; a first commit leaves the branch unborn
/// again), the working tree is untouched. The commit stays in the object store and the
/// reflog, so the document's `true_at_sha` still resolves (`git show SHA`, `git diff
/// SHA`), while a diff against the task's baseline commit (an agent's submission, `git
/// add -A && git diff --cached`) holds all the work again, the prefix's included.
pub fn uncommit_at_switch(env: &mut dyn Environment, sha: &str) -> Result<(), Error> {
    run(
        env,
        &format!(
            "if git rev-parse -q --verify '{sha}^' >/dev/null; then git reset -q --mixed '{sha}^'; \
             else git update-ref -d HEAD && git rm -r -q --cached . >/dev/null; fi"
        ),
    )?;
    Ok(())
}

/// One claim's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimVerdict {
    /// Its label (the claim's text).
    pub label: String,
    /// Its check.
    pub command: String,
    /// `held-and-holds`, `held-now-broken`, `never-held`, `fails-now`, `cannot-tell`,
    /// `not-run`.
    pub class: verify::Class,
}

/// A document's lint at the switch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwitchLint {
    /// The rubric.
    pub rubric: String,
    /// The structure score (0–100).
    pub score: u32,
    /// Whether the header is valid.
    pub valid: bool,
    /// The verification's verdict (`verified`, `failed`, …).
    pub verdict: verify::Verdict,
    /// Each claim's verdict, in the document's order.
    pub claims: Vec<ClaimVerdict>,
}

/// Write the tree of snapshot `manifest` (blobs in `blobs`) into the empty folder `dest`.
fn materialize(manifest: &Manifest, blobs: &DirBlobStore, dest: &Path) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt as _;
    let write = |path: &Path, source| Error::Write {
        path: path.to_path_buf(),
        source,
    };
    for entry in &manifest.entries {
        let path = entry.path.under(dest);
        match &entry.kind {
            EntryKind::Dir => std::fs::create_dir_all(&path).map_err(|e| write(&path, e))?,
            EntryKind::File {
                digest, executable, ..
            } => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| write(parent, e))?;
                }
                let bytes =
                    baton_env::BlobStore::get_bytes(blobs, digest).map_err(|e| Error::Switch {
                        message: format!("the snapshot's blob {digest} is missing: {e}"),
                    })?;
                std::fs::write(&path, bytes).map_err(|e| write(&path, e))?;
                let mode = if *executable { 0o755 } else { 0o644 };
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                    .map_err(|e| write(&path, e))?;
            }
            EntryKind::Symlink { target } => {
                use std::os::unix::ffi::OsStrExt as _;
                let target = std::ffi::OsStr::from_bytes(&target.0);
                std::os::unix::fs::symlink(target, &path).map_err(|e| write(&path, e))?;
            }
        }
    }
    Ok(())
}

/// Lint `document` with `rubric` and verify its claims (each check at the anchor and on the
/// tree now, `claim_timeout` per run) against the sandbox's working tree, after
/// [`commit_at_switch`]. The sandbox is left as it was.
pub fn lint_at_switch(
    env: &mut dyn Environment,
    document: &str,
    rubric: Rubric,
    claim_timeout: Duration,
) -> Result<SwitchLint, Error> {
    use std::os::unix::fs::PermissionsExt as _;
    let scratch = tempfile::Builder::new()
        .prefix("baton-switch-")
        .tempdir()
        .map_err(|source| Error::Write {
            path: std::env::temp_dir(),
            source,
        })?;
    let blobs = DirBlobStore::new(scratch.path().join("blobs")).map_err(|e| Error::Switch {
        message: format!("no snapshot store: {e}"),
    })?;
    let snap = env.snapshot(&blobs).map_err(|e| Error::Switch {
        message: format!("the tree could not be snapshotted: {e}"),
    })?;
    let manifest = Manifest::load(&blobs, &snap.id).map_err(|e| Error::Switch {
        message: format!("the snapshot could not be read: {e}"),
    })?;
    let tree = scratch.path().join("tree");
    std::fs::create_dir_all(&tree).map_err(|source| Error::Write {
        path: tree.clone(),
        source,
    })?;
    // the linter's sandbox may run as another user
    for dir in [scratch.path(), tree.as_path()] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).map_err(
            |source| Error::Write {
                path: dir.to_path_buf(),
                source,
            },
        )?;
    }
    materialize(&manifest, &blobs, &tree)?;
    let path = tree.join(SWITCH_DOCUMENT);
    std::fs::write(&path, document).map_err(|source| Error::Write {
        path: path.clone(),
        source,
    })?;
    let mut options = verify::Options::new(Level::Claims, &tree);
    options.claim_timeout = claim_timeout;
    let linted = crate::lint(document, &path, rubric, Some(&options));
    Ok(SwitchLint {
        rubric: rubric.to_string(),
        score: linted.structure.score,
        valid: linted.structure.valid,
        verdict: linted.verification.verdict,
        claims: linted
            .verification
            .claims
            .iter()
            .map(|c| ClaimVerdict {
                label: c.label.clone(),
                command: c.command.clone(),
                class: c.class(),
            })
            .collect(),
    })
}
