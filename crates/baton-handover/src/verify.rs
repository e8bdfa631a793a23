//! VERIFICATION: the opt-in checks against the document's own git repository.
//!
//! - [`Level::Repo`]: the date is not in the future; the anchor (`true_at_sha`) resolves to a
//!   commit of this repository and is an ancestor of HEAD (when it is not, the branches that
//!   hold it and the fork point are named); drift is data: commits since the anchor (those that
//!   touch only the handoff itself are counted apart), files changed, uncommitted changes (the
//!   handoff excluded), and the claims whose named files changed.
//!   Commit ids named in the body are looked up too.
//! - [`Level::Verify`]: also runs `verify_cmd`, unless the header is invalid or the anchor is
//!   not a commit of this repository.
//! - [`Level::Claims`]: also runs every claim's check twice, in a copy of the tree at the
//!   anchor (with the current ignored files) and in a copy of the current tree, and
//!   classifies it (see [`Class`]); a claim failing now fails the document.
//!
//! The repository is the one whose working tree holds the document, else the one holding the
//! current folder. Every document command runs at the top of a copy of the tree in the
//! sandbox ([`crate::sandbox`]), under its own timeout and one deadline for the whole
//! verification; destructive ones are skipped unless allowed. Git probes run on the host
//! without a shell ([`crate::git`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::check;
use crate::claims;
use crate::document::Document;
use crate::git::Repo;
use crate::sandbox::{Sandbox, SandboxOptions, Tree};

use crate::structure::Structure;

mod commands;
mod commits;
mod runs;

pub use runs::{ClaimResult, ClaimRun, ClaimStatus, Class};

/// How much to verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Read-only repository checks.
    Repo,
    /// Also run `verify_cmd`.
    Verify,
    /// Also run each claim's check at the anchor and now.
    Claims,
}

/// Verification settings.
#[derive(Debug, Clone)]
pub struct Options {
    /// How much to verify.
    pub level: Level,
    /// Time allowed to each claim's check (per run).
    pub claim_timeout: Duration,
    /// Time allowed to `verify_cmd`.
    pub verify_timeout: Duration,
    /// Today's date, for the future-date check.
    pub today: jiff::civil::Date,
    /// Where to look for a repository when the document is not inside one.
    pub cwd: PathBuf,
    /// Where and how the document's commands run.
    pub sandbox: SandboxOptions,
    /// Whether a claim or `verify_cmd` that did not run (skipped as destructive, over the
    /// claim cap, out of time) may pass; each is then listed in
    /// [`Verification::unverified`]. Off by default: an unrun check fails the document.
    pub allow_unverified: bool,
}

impl Options {
    /// Verification at `level` with the default timeouts (30 s per claim run, 120 s for
    /// `verify_cmd`, 300 s in all) in the default sandbox, today's date, looking for a
    /// repository from `cwd`.
    pub fn new(level: Level, cwd: impl Into<PathBuf>) -> Options {
        Options {
            level,
            claim_timeout: Duration::from_secs(30),
            verify_timeout: Duration::from_secs(120),
            today: today(),
            cwd: cwd.into(),
            sandbox: SandboxOptions::default(),
            allow_unverified: false,
        }
    }
}

/// A check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Passed.
    Ok,
    /// Needs attention (stale, unproven); fails under `--strict`.
    Warn,
    /// Failed.
    Fail,
    /// Not run, with the reason in the detail.
    Skip,
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
            Status::Skip => "skip",
        })
    }
}

/// One verification check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked: `repo`, `iso_date`, `true_at_sha`, `ancestry`, `drift`,
    /// `uncommitted`, `commits`, `claim-files`, `verify_cmd`, `done-unproven` or `claims`.
    pub name: &'static str,
    /// Its outcome.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// The file line it concerns.
    pub line: Option<usize>,
}

/// The verdict, first that applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The header has errors.
    InvalidHeader,
    /// A check failed (fabricated anchor, future date, failing `verify_cmd` or claim).
    Failed,
    /// No repository checks ran (not requested, or no repository found).
    UnverifiedNoRepo,
    /// Something needs attention: drift, uncommitted changes, unproven `done`, a claim that
    /// cannot be told.
    StaleOrUnproven,
    /// Every check passed.
    Verified,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::InvalidHeader => "invalid-header",
            Verdict::Failed => "failed",
            Verdict::UnverifiedNoRepo => "unverified-no-repo",
            Verdict::StaleOrUnproven => "stale-or-unproven",
            Verdict::Verified => "verified",
        })
    }
}

/// Drift since the anchor, as data.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Drift {
    /// The anchor's full id.
    pub anchor: String,
    /// Whether it is an ancestor of HEAD.
    pub ancestor: bool,
    /// Commits on HEAD the anchor lacks, not counting those that touch only the handoff.
    pub commits: u64,
    /// Commits that touch only the handoff itself.
    pub handoff_only_commits: u64,
    /// Files that differ between the anchor and HEAD, the handoff excluded.
    pub changed: Vec<String>,
    /// Uncommitted paths, the handoff excluded.
    pub uncommitted: Vec<String>,
    /// Claims whose named files changed: line, label, files.
    pub claims: Vec<(usize, String, Vec<String>)>,
}

/// The verification of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// The verdict.
    pub verdict: Verdict,
    /// The repository's top-level folder, when one was found.
    pub repo: Option<PathBuf>,
    /// The checks, in the order run.
    pub checks: Vec<Check>,
    /// Claims, when `--claims` ran.
    pub claims: Vec<ClaimResult>,
    /// Drift, when the anchor resolved.
    pub drift: Option<Drift>,
    /// What passed unverified under `--allow-unverified`: each claim or `verify_cmd` that did
    /// not run, with the reason.
    pub unverified: Vec<String>,
}

impl Verification {
    /// No verification requested: the verdict follows from the structure alone.
    pub fn none(structure: &Structure) -> Verification {
        Verification {
            verdict: if structure.valid {
                Verdict::UnverifiedNoRepo
            } else {
                Verdict::InvalidHeader
            },
            repo: None,
            checks: Vec::new(),
            claims: Vec::new(),
            drift: None,
            unverified: Vec::new(),
        }
    }
}

struct Run<'a> {
    doc: &'a Document,
    structure: &'a Structure,
    opts: &'a Options,
    checks: Vec<Check>,
    /// The copy of the current tree commands run in (dropped before the sandbox).
    now: Option<Result<Tree, String>>,
    /// The sandbox, made when the first command is about to run.
    sandbox: Option<Result<Sandbox, String>>,
    /// When the total time limit runs out (set when verification starts, so staging the
    /// trees counts too).
    deadline: Instant,
    /// What passed unverified (under `allow_unverified`).
    unverified: Vec<String>,
}

impl<'a> Run<'a> {
    fn add(&mut self, name: &'static str, status: Status, detail: String, line: Option<usize>) {
        self.checks.push(Check {
            name,
            status,
            detail,
            line,
        });
    }

    fn line(&self, key: &str) -> Option<usize> {
        self.doc
            .header_for(self.structure.rubric)
            .map(|h| h.line_of(key))
    }

    /// A header value as the rubric reads it.
    fn field(&self, key: &str) -> Option<&'a str> {
        self.doc
            .header_for(self.structure.rubric)
            .and_then(|h| h.text(key))
    }

    /// The sandbox, made on first use; the error says why it cannot run.
    fn sandbox(&mut self) -> Result<&Sandbox, String> {
        let opts = &self.opts.sandbox;
        let deadline = self.deadline;
        self.sandbox
            .get_or_insert_with(|| Sandbox::until(opts, deadline))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The copy of the current tree, made on first use.
    fn now_tree(&mut self, repo: &Repo) -> Result<&mut Tree, String> {
        if self.now.is_none() {
            let tree = self.sandbox().and_then(|s| s.tree(repo, None));
            self.now = Some(tree);
        }
        match self.now.as_mut() {
            Some(Ok(tree)) => Ok(tree),
            Some(Err(e)) => Err(e.clone()),
            None => Err("no sandbox".into()),
        }
    }

    /// Time left of the total limit, or `None` when it ran out.
    fn budget(&mut self, own: Duration) -> Option<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        (!left.is_zero()).then(|| own.min(left))
    }

    /// A command or claim that did not run: a failure, or, under `allow_unverified`, a
    /// warning listed as passed unverified.
    fn not_run_status(&mut self, what: String) -> Status {
        if self.opts.allow_unverified {
            self.unverified.push(what);
            Status::Warn
        } else {
            Status::Fail
        }
    }
}

fn list(paths: &[String], max: usize) -> String {
    let mut s = paths
        .iter()
        .take(max)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > max {
        s.push_str(&format!(", … ({} more)", paths.len() - max));
    }
    s
}

/// Today's date in the local time zone.
pub fn today() -> jiff::civil::Date {
    jiff::ZonedDateTime::now().date()
}

/// Verify `doc`, read from `path`, against its repository.
pub fn verify(doc: &Document, structure: &Structure, path: &Path, opts: &Options) -> Verification {
    let mut run = Run {
        doc,
        structure,
        opts,
        checks: Vec::new(),
        now: None,
        sandbox: None,
        deadline: Instant::now() + opts.sandbox.total_timeout,
        unverified: Vec::new(),
    };
    if let Some(date) = run.field("iso_date")
        && let Ok(date) = date.parse::<jiff::civil::Date>()
    {
        if date > opts.today {
            run.add(
                "iso_date",
                Status::Fail,
                format!("dated {date}, after today ({})", opts.today),
                run.line("iso_date"),
            );
        } else {
            run.add(
                "iso_date",
                Status::Ok,
                date.to_string(),
                run.line("iso_date"),
            );
        }
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Some(repo) = Repo::discover(dir).or_else(|| Repo::discover(&opts.cwd)) else {
        run.add(
            "repo",
            Status::Warn,
            "not inside a git repository: the anchor, drift and checks were not verified".into(),
            None,
        );
        return finish(run, structure, None, Vec::new(), None);
    };
    let doc_rel = repo.relative(path);
    let (anchor, fabricated) = anchor(&mut run, &repo);
    let drift = anchor
        .as_ref()
        .map(|a| drift(&mut run, &repo, a, doc_rel.as_deref()));
    let uncommitted = uncommitted(&mut run, &repo, doc_rel.as_deref());
    commits::check(&mut run, &repo);
    let mut drift = drift;
    if let Some(d) = &mut drift {
        d.uncommitted = uncommitted.clone();
        d.claims = claim_files(&mut run, doc, &d.changed, &uncommitted);
    } else if !uncommitted.is_empty() {
        claim_files(&mut run, doc, &[], &uncommitted);
    }
    let mut verify_status = None;
    if opts.level >= Level::Verify {
        verify_status = Some(commands::verify_cmd(&mut run, &repo, structure, fabricated));
    }
    if run.field("status") == Some("done") {
        match verify_status {
            None => run.add(
                "done-unproven",
                Status::Warn,
                "status is \"done\" but verify_cmd was not run: pass --verify to prove it".into(),
                run.line("status"),
            ),
            Some(Status::Fail) => run.add(
                "done-unproven",
                Status::Fail,
                "status is \"done\" but verify_cmd failed".into(),
                run.line("status"),
            ),
            Some(Status::Skip | Status::Warn) => run.add(
                "done-unproven",
                Status::Warn,
                "status is \"done\" but verify_cmd did not run".into(),
                run.line("status"),
            ),
            Some(_) => {}
        }
    }
    let mut results = Vec::new();
    if opts.level >= Level::Claims {
        results = commands::run_claims(&mut run, &repo, structure, anchor.as_deref(), fabricated);
    }
    if let Some(Ok(tree)) = &run.now
        && !tree.left_out.is_empty()
    {
        let detail = format!(
            "{} file(s) that look like secrets were left out of the sandbox (name one with --include to pass it in): {}",
            tree.left_out.len(),
            list(&tree.left_out, 8)
        );
        run.add("secrets", Status::Ok, detail, None);
    }
    finish(run, structure, Some(repo.root), results, drift)
}

fn finish(
    run: Run<'_>,
    structure: &Structure,
    repo: Option<PathBuf>,
    claims: Vec<ClaimResult>,
    drift: Option<Drift>,
) -> Verification {
    let has = |s: Status| run.checks.iter().any(|c| c.status == s);
    let verdict = if !structure.valid {
        Verdict::InvalidHeader
    } else if has(Status::Fail) {
        Verdict::Failed
    } else if repo.is_none() {
        Verdict::UnverifiedNoRepo
    } else if has(Status::Warn) {
        Verdict::StaleOrUnproven
    } else {
        Verdict::Verified
    };
    Verification {
        verdict,
        repo,
        checks: run.checks,
        claims,
        drift,
        unverified: run.unverified,
    }
}

/// Resolve the anchor; returns its full id and whether it is fabricated.
fn anchor(run: &mut Run<'_>, repo: &Repo) -> (Option<String>, bool) {
    let line = run.line("true_at_sha");
    let Some(sha) = run.field("true_at_sha") else {
        run.add(
            "true_at_sha",
            Status::Fail,
            "no true_at_sha: nothing anchors the claims".into(),
            line,
        );
        return (None, false);
    };
    if sha == "uncommitted" {
        run.add(
            "true_at_sha",
            Status::Warn,
            "true_at_sha is \"uncommitted\": the claims are pinned to a tree that cannot be recovered; commit, then record the SHA".into(),
            line,
        );
        return (None, false);
    }
    if !crate::rubric::sha_shaped(sha) {
        run.add(
            "true_at_sha",
            Status::Fail,
            format!("true_at_sha \"{sha}\" is not a commit id; it was not given to git"),
            line,
        );
        return (None, true);
    }
    let Some(full) = repo.resolve(sha) else {
        run.add(
            "true_at_sha",
            Status::Fail,
            format!("commit {sha} is not in this repository: the anchor is fabricated or from another repository"),
            line,
        );
        return (None, true);
    };
    run.add(
        "true_at_sha",
        Status::Ok,
        format!("commit {sha} exists"),
        line,
    );
    (Some(full), false)
}

fn drift(run: &mut Run<'_>, repo: &Repo, anchor: &str, doc: Option<&str>) -> Drift {
    let line = run.line("true_at_sha");
    let short = &anchor[..anchor.len().min(12)];
    let mut drift = Drift {
        anchor: anchor.to_string(),
        ..Drift::default()
    };
    let Some(head) = repo.head() else {
        run.add(
            "ancestry",
            Status::Warn,
            "HEAD names no commit".into(),
            line,
        );
        return drift;
    };
    match repo.is_ancestor(anchor, &head) {
        Some(true) => {
            drift.ancestor = true;
            run.add(
                "ancestry",
                Status::Ok,
                format!("{short} is an ancestor of HEAD"),
                line,
            );
        }
        other => {
            let branches = repo.branches_containing(anchor);
            let on = if branches.is_empty() {
                "no branch holds it".to_string()
            } else {
                format!("it is on {}", list(&branches, 3))
            };
            let fork = repo
                .merge_base(anchor, &head)
                .map(|b| {
                    format!(
                        "; HEAD and the anchor diverged at {}",
                        &b[..b.len().min(12)]
                    )
                })
                .unwrap_or_default();
            let what = if other.is_none() {
                "cannot be placed relative to HEAD"
            } else {
                "is not an ancestor of HEAD"
            };
            run.add(
                "ancestry",
                Status::Warn,
                format!(
                    "{short} {what} ({on}{fork}): the document describes another line of history"
                ),
                line,
            );
        }
    }
    let total = repo.commits_since(anchor, None);
    let others = match doc {
        Some(d) => repo.commits_since(anchor, Some(d)),
        None => repo.commits_since(anchor, None),
    };
    let changed = repo.changed(anchor, &head);
    match (total, others, changed) {
        (Ok(total), Ok(others), Ok(changed)) => {
            drift.commits = others;
            drift.handoff_only_commits = total.saturating_sub(others);
            drift.changed = changed
                .into_iter()
                .filter(|p| Some(p.as_str()) != doc)
                .collect();
            let own = if drift.handoff_only_commits > 0 {
                format!(
                    " ({} more touch only this handoff)",
                    drift.handoff_only_commits
                )
            } else {
                String::new()
            };
            if drift.commits == 0 && drift.changed.is_empty() {
                run.add(
                    "drift",
                    Status::Ok,
                    format!("nothing changed since the anchor{own}"),
                    line,
                );
            } else {
                run.add(
                    "drift",
                    Status::Warn,
                    format!(
                        "HEAD has {} commit(s) the anchor lacks{own}; {} file(s) differ: {}",
                        drift.commits,
                        drift.changed.len(),
                        list(&drift.changed, 20)
                    ),
                    line,
                );
            }
        }
        (a, b, c) => {
            let err = [a.err(), b.err(), c.err()].into_iter().flatten().next();
            run.add(
                "drift",
                Status::Warn,
                format!("drift could not be measured: {}", err.unwrap_or_default()),
                line,
            );
        }
    }
    drift
}

fn uncommitted(run: &mut Run<'_>, repo: &Repo, doc: Option<&str>) -> Vec<String> {
    match repo.uncommitted() {
        Ok(paths) => {
            let paths: Vec<String> = paths
                .into_iter()
                .filter(|p| Some(p.as_str()) != doc)
                .collect();
            if paths.is_empty() {
                run.add(
                    "uncommitted",
                    Status::Ok,
                    "no uncommitted changes".into(),
                    None,
                );
            } else {
                run.add(
                    "uncommitted",
                    Status::Warn,
                    format!(
                        "{} uncommitted change(s), not covered by the anchor: {}",
                        paths.len(),
                        list(&paths, 20)
                    ),
                    None,
                );
            }
            paths
        }
        Err(e) => {
            run.add("uncommitted", Status::Warn, e, None);
            Vec::new()
        }
    }
}

/// Claims whose check or cells name a changed path.
fn claim_files(
    run: &mut Run<'_>,
    doc: &Document,
    changed: &[String],
    uncommitted: &[String],
) -> Vec<(usize, String, Vec<String>)> {
    let mut out = Vec::new();
    for row in claims::rows(&doc.body) {
        let mut names: Vec<String> = row
            .mentions
            .iter()
            .flat_map(|m| check::named_paths(&format!("x {m}")))
            .collect();
        if let claims::RowKind::Check(cmd) = &row.kind {
            names.extend(check::named_paths(cmd));
        }
        let hits: Vec<String> = changed
            .iter()
            .chain(uncommitted)
            .filter(|f| {
                names
                    .iter()
                    .any(|n| *f == n || f.starts_with(&format!("{n}/")))
            })
            .cloned()
            .collect();
        if !hits.is_empty() {
            run.add(
                "claim-files",
                Status::Warn,
                format!(
                    "claim \"{}\" depends on changed file(s): {}",
                    row.label,
                    list(&hits, 8)
                ),
                Some(row.line),
            );
            out.push((row.line, row.label, hits));
        }
    }
    out
}
