//! Verification against throwaway git repositories made here.

use std::path::Path;
use std::time::Duration;

use baton_handover::verify::{self, ClaimStatus, Class, Level, Status, Verdict};
use baton_handover::{Linted, Rubric};

use crate::support::{commit, git, repo, write};

fn options(level: Level, cwd: &Path) -> verify::Options {
    verify::Options {
        level,
        claim_timeout: Duration::from_secs(20),
        verify_timeout: Duration::from_secs(20),
        today: "2026-06-01".parse().unwrap(),
        cwd: cwd.to_path_buf(),
        sandbox: Default::default(),
        allow_unverified: false,
    }
}

/// A valid handoff anchored at `sha`, with `claims` rows (label, check) and `verify_cmd`.
fn handoff(sha: &str, verify_cmd: &str, status: &str, claims: &[(&str, &str)]) -> String {
    let rows: String = claims
        .iter()
        .map(|(label, check)| format!("| {label} | `{check}` |\n"))
        .collect();
    format!(
        "---\nprotocol_version: 1\nhandoff: guest-checkout\nauthor: Dana\niso_date: 2026-01-14\n\
         true_at_sha: {sha}\nshape: handoff\nfirst_action: Apply the pending migration, then wire the route\n\
         verify_cmd: {verify_cmd}\nstatus: {status}\n---\n\n# Handover: guest checkout\n\n\
         ## 2. Claims\n\n| Claim | Verify |\n|---|---|\n{rows}\n\
         ## 6. Next action\n\n1. **Apply the pending migration, then wire the route.**\n"
    )
}

fn lint(dir: &Path, text: &str, level: Level) -> Linted {
    let path = dir.join("HANDOFF.md");
    std::fs::write(&path, text).unwrap();
    baton_handover::lint(text, &path, Rubric::Baton, Some(&options(level, dir)))
}

fn check<'a>(l: &'a Linted, name: &str) -> &'a verify::Check {
    l.verification
        .checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} check in {:#?}", l.verification.checks))
}

const FILES: &[(&str, &str)] = &[
    (
        "migrations/2026_01_10_create_guest_orders.sql",
        "create table guest_orders (id int);\n",
    ),
    (
        "src/routes/guestOrder.ts",
        "export const handler = () => 'STUB';\n",
    ),
    ("README.md", "store\n"),
];

#[test]
fn escaped_pipe_claim_runs_and_claims_are_classified_at_anchor_and_now() {
    let (dir, anchor) = repo(FILES);
    let d = dir.path();
    let doc = handoff(
        &anchor[..12],
        "test -f README.md",
        "in_progress",
        &[
            ("Migration exists", "ls migrations/ \\| grep guest_orders"),
            ("Route is a stub", "grep -q STUB src/routes/guestOrder.ts"),
            (
                "Rate limiting exists",
                "grep -q rateLimit src/routes/guestOrder.ts",
            ),
            ("Spec exists", "test -f docs/SPEC.md"),
        ],
    );
    // Since the anchor: the route is wired (the stub claim breaks) and a spec is added.
    write(
        d,
        &[
            (
                "src/routes/guestOrder.ts",
                "export const handler = wire();\n",
            ),
            ("docs/SPEC.md", "spec\n"),
        ],
    );
    commit(d, "wire the route");
    let l = lint(d, &doc, Level::Claims);
    let claims = &l.verification.claims;
    assert_eq!(claims.len(), 4, "{claims:#?}");
    assert_eq!(claims[0].command, "ls migrations/ | grep guest_orders");
    let classes: Vec<Class> = claims.iter().map(|c| c.class()).collect();
    assert_eq!(
        classes,
        [
            Class::HeldAndHolds,
            Class::HeldNowBroken,
            Class::NeverHeld,
            Class::NeverHeld
        ]
    );
    assert_eq!(claims[3].now.status, ClaimStatus::Holds);
    assert_eq!(claims[1].output_tail(), "[now]\n[exit 1]");
    assert_eq!(l.verification.verdict, Verdict::Failed);
    assert_eq!(check(&l, "claims").status, Status::Fail);
    assert_eq!(check(&l, "verify_cmd").status, Status::Ok);
    // The stub claim names the file that changed.
    let files = check(&l, "claim-files");
    assert!(
        files.detail.contains("Route is a stub")
            && files.detail.contains("src/routes/guestOrder.ts"),
        "{}",
        files.detail
    );
    // The temporary worktree is gone.
    assert_eq!(git(d, &["worktree", "list"]).lines().count(), 1);
}

#[test]
fn a_failing_check_keeps_its_output_tail() {
    let (dir, anchor) = repo(FILES);
    let doc = handoff(
        &anchor,
        "sh -c 'echo the suite broke >&2; exit 3'",
        "in_progress",
        &[("Noisy", "sh -c 'echo first; echo second >&2; exit 1'")],
    );
    let l = lint(dir.path(), &doc, Level::Claims);
    let claim = &l.verification.claims[0];
    assert_eq!(claim.class(), Class::NeverHeld);
    assert_eq!(claim.at_anchor.tail, "first\nsecond\n[exit 1]");
    let v = check(&l, "verify_cmd");
    assert_eq!(v.status, Status::Fail);
    assert!(v.detail.contains("the suite broke"), "{}", v.detail);
}

#[test]
fn an_anchor_on_another_branch_and_uncommitted_changes_are_reported() {
    let (dir, _) = repo(FILES);
    let d = dir.path();
    git(d, &["checkout", "-q", "-b", "feature/side"]);
    write(d, &[("side.txt", "side\n")]);
    let side = commit(d, "side work");
    git(d, &["checkout", "-q", "main"]);
    write(d, &[("main.txt", "main\n")]);
    commit(d, "main work");
    write(
        d,
        &[
            ("README.md", "edited, not committed\n"),
            ("new.txt", "untracked\n"),
        ],
    );
    let doc = handoff(&side[..10], "test -f README.md", "in_progress", &[]);
    let l = lint(d, &doc, Level::Repo);
    assert_eq!(check(&l, "true_at_sha").status, Status::Ok);
    let ancestry = check(&l, "ancestry");
    assert_eq!(ancestry.status, Status::Warn);
    assert!(
        ancestry.detail.contains("not an ancestor of HEAD")
            && ancestry.detail.contains("feature/side"),
        "{}",
        ancestry.detail
    );
    let uncommitted = check(&l, "uncommitted");
    assert_eq!(uncommitted.status, Status::Warn);
    assert!(
        uncommitted.detail.contains("README.md") && uncommitted.detail.contains("new.txt"),
        "{}",
        uncommitted.detail
    );
    assert!(
        !uncommitted.detail.contains("HANDOFF.md"),
        "the handoff itself is excluded"
    );
    let drift = l.verification.drift.as_ref().unwrap();
    assert!(!drift.ancestor);
    assert_eq!(drift.uncommitted, ["README.md", "new.txt"]);
    assert_eq!(l.verification.verdict, Verdict::StaleOrUnproven);
}

#[test]
fn committing_the_handoff_itself_is_not_drift() {
    let (dir, anchor) = repo(FILES);
    let d = dir.path();
    let doc = handoff(&anchor, "test -f README.md", "done", &[]);
    std::fs::write(d.join("HANDOFF.md"), &doc).unwrap();
    commit(d, "hand off");
    let l = lint(d, &doc, Level::Verify);
    let drift = check(&l, "drift");
    assert_eq!(drift.status, Status::Ok, "{}", drift.detail);
    assert!(
        drift.detail.contains("1 more touch only this handoff"),
        "{}",
        drift.detail
    );
    assert_eq!(check(&l, "uncommitted").status, Status::Ok);
    assert_eq!(
        l.verification.verdict,
        Verdict::Verified,
        "{:#?}",
        l.verification.checks
    );
    // Real drift after that is reported with the files.
    write(d, &[("src/routes/guestOrder.ts", "changed\n")]);
    commit(d, "change the route");
    let l = lint(d, &doc, Level::Repo);
    let drift = check(&l, "drift");
    assert_eq!(drift.status, Status::Warn);
    assert!(
        drift.detail.contains("1 commit(s)") && drift.detail.contains("src/routes/guestOrder.ts"),
        "{}",
        drift.detail
    );
    // status: done without --verify is unproven.
    assert_eq!(check(&l, "done-unproven").status, Status::Warn);
}

#[test]
fn a_fabricated_anchor_fails_and_nothing_from_the_document_runs() {
    let (dir, _) = repo(FILES);
    let d = dir.path();
    let doc = handoff(
        "a1b2c3d4e5f6",
        "touch verify-ran",
        "done",
        &[("Marker", "touch claim-ran")],
    );
    let l = lint(d, &doc, Level::Claims);
    let sha = check(&l, "true_at_sha");
    assert_eq!(sha.status, Status::Fail);
    assert!(sha.detail.contains("fabricated"), "{}", sha.detail);
    assert_eq!(check(&l, "verify_cmd").status, Status::Skip);
    assert!(!d.join("verify-ran").exists(), "verify_cmd must not run");
    assert!(!d.join("claim-ran").exists(), "claims must not run");
    assert_eq!(l.verification.claims[0].class(), Class::NotRun);
    assert_eq!(l.verification.verdict, Verdict::Failed);
}

/// Without a usable anchor (`uncommitted`, a timeout, a missing tool), a claim that holds
/// now cannot be told, but one that fails now fails the document.
#[test]
fn issue_26_a_claim_failing_now_fails_whatever_the_anchor() {
    let (dir, _) = repo(FILES);
    let doc = handoff(
        "uncommitted",
        "test -f README.md",
        "in_progress",
        &[("Quick", "test -f README.md")],
    );
    let l = lint(dir.path(), &doc, Level::Claims);
    let claim = &l.verification.claims[0];
    assert_eq!(
        (claim.at_anchor.status, claim.now.status),
        (ClaimStatus::NotRun, ClaimStatus::Holds)
    );
    assert_eq!(claim.class(), Class::CannotTell);
    assert_eq!(check(&l, "true_at_sha").status, Status::Warn);
    assert_eq!(l.verification.verdict, Verdict::StaleOrUnproven);

    let doc = handoff(
        "uncommitted",
        "test -f README.md",
        "in_progress",
        &[
            ("Spec exists", "test -f docs/SPEC.md"),
            ("Route is wired", "grep -q wired src/routes/guestOrder.ts"),
            ("No stub left", "! grep -q STUB src/routes/guestOrder.ts"),
        ],
    );
    let l = lint(dir.path(), &doc, Level::Claims);
    let classes: Vec<Class> = l.verification.claims.iter().map(|c| c.class()).collect();
    assert_eq!(classes, [Class::FailsNow; 3]);
    assert_eq!(check(&l, "claims").status, Status::Fail);
    assert_eq!(
        check(&l, "claims").detail,
        "3 claim(s): 0 held-and-holds, 0 held-now-broken, 0 never-held, 3 fails-now, 0 cannot-tell, 0 not-run"
    );
    assert_eq!(l.verification.verdict, Verdict::Failed);
    assert_eq!(
        l.failures(baton_handover::Policy::default()),
        ["verification failed"]
    );

    // A timeout at the anchor and now, and a tool missing at both: no answer at the anchor,
    // a failure now.
    let (dir, anchor) = repo(FILES);
    let doc = handoff(
        &anchor,
        "test -f README.md",
        "in_progress",
        &[("Slow", "sleep 30"), ("Tool", "no-such-tool-baton --check")],
    );
    let path = dir.path().join("HANDOFF.md");
    let mut opts = options(Level::Claims, dir.path());
    opts.claim_timeout = Duration::from_millis(500);
    let start = std::time::Instant::now();
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&opts));
    assert!(start.elapsed() < Duration::from_secs(20));
    let slow = &l.verification.claims[0];
    assert_eq!(
        (slow.at_anchor.status, slow.now.status, slow.class()),
        (ClaimStatus::NotRun, ClaimStatus::Fails, Class::FailsNow)
    );
    assert!(
        slow.output_tail().contains("timed out"),
        "{}",
        slow.output_tail()
    );
    let tool = &l.verification.claims[1];
    assert_eq!(
        (tool.at_anchor.status, tool.now.status, tool.class()),
        (ClaimStatus::NotRun, ClaimStatus::Fails, Class::FailsNow),
        "a missing tool is never never-held"
    );
    assert!(
        tool.output_tail().contains("exit 127"),
        "{}",
        tool.output_tail()
    );
    assert_eq!(l.verification.verdict, Verdict::Failed);
}

/// `verify_cmd: ! grep -q x file` is the negated check, as in Handover 0.4.1: it fails on a
/// file holding x and passes on one without, in both rubrics.
#[test]
fn issue_26_a_negated_verify_cmd_fails_as_in_handover_0_4_1() {
    let (dir, anchor) = repo(&[
        ("notes.txt", "x marks the spot\n"),
        ("clean.txt", "nothing\n"),
    ]);
    for rubric in [Rubric::Baton, Rubric::Handover04] {
        for (file, want) in [("notes.txt", Status::Fail), ("clean.txt", Status::Ok)] {
            let doc = handoff(&anchor, &format!("! grep -q x {file}"), "done", &[]);
            let path = dir.path().join("HANDOFF.md");
            let l = baton_handover::lint(
                &doc,
                &path,
                rubric,
                Some(&options(Level::Verify, dir.path())),
            );
            let c = check(&l, "verify_cmd");
            assert_eq!(c.status, want, "{rubric} {file}: {}", c.detail);
            assert!(
                c.detail.starts_with(&format!("`! grep -q x {file}`")),
                "{}",
                c.detail
            );
            let failed = l.verification.verdict == Verdict::Failed;
            assert_eq!(failed, want == Status::Fail, "{rubric} {file}");
        }
    }
}

/// Claims at the anchor see the current tree's ignored files (dependencies), so a true claim
/// is not reported never-held; no `git worktree` is left registered. A `.env` is left out
/// unless named with `include` (issue 36).
// See: issue 36
#[test]
fn issue_36_secret_like_files_are_left_out_unless_included() {
    let (dir, anchor) = repo(&[
        (".gitignore", "node_modules/\n.env\n"),
        ("src/app.js", "x\n"),
        ("config/.npmrc", "//registry/:_authToken=npm-tok-zz9911\n"),
    ]);
    let d = dir.path();
    write(
        d,
        &[
            (".env", "MODE=test\n"),
            ("node_modules/dep/.env.local", "X=1\n"),
        ],
    );
    let doc = handoff(
        &anchor,
        "test -f src/app.js",
        "in_progress",
        &[
            ("Env file present", "grep -q MODE=test .env"),
            ("Tracked npmrc", "test -s config/.npmrc"),
            ("Nested env", "test -s node_modules/dep/.env.local"),
        ],
    );
    let path = d.join("HANDOFF.md");
    let mut opts = options(Level::Claims, d);
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&opts));
    let now: Vec<ClaimStatus> = l.verification.claims.iter().map(|c| c.now.status).collect();
    assert_eq!(now, [ClaimStatus::Fails; 3], "{:#?}", l.verification.claims);
    let secrets = check(&l, "secrets");
    assert!(secrets.detail.contains(".env"), "{}", secrets.detail);
    opts.sandbox.include = vec![".env".into()];
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&opts));
    assert_eq!(l.verification.claims[0].now.status, ClaimStatus::Holds);
    assert_eq!(l.verification.claims[1].now.status, ClaimStatus::Fails);
}

/// Claims at the anchor see the current tree's ignored files (dependencies), so a
/// true claim is not reported never-held; no `git worktree` is left registered.
#[test]
fn issue_26_anchor_runs_see_the_current_ignored_files() {
    let (dir, anchor) = repo(&[
        (".gitignore", "node_modules/\n.env\n"),
        ("src/app.js", "require('dep')\n"),
    ]);
    let d = dir.path();
    write(
        d,
        &[
            ("node_modules/dep/index.js", "module.exports = 1\n"),
            (".env", "MODE=test\n"),
        ],
    );
    write(d, &[("src/later.js", "added after the anchor\n")]);
    commit(d, "later");
    let doc = handoff(
        &anchor,
        "test -f src/app.js",
        "in_progress",
        &[
            ("Dependency installed", "test -f node_modules/dep/index.js"),
            ("Env file left out", "grep -q MODE=test .env"),
            ("Later file", "test -f src/later.js"),
        ],
    );
    let l = lint(d, &doc, Level::Claims);
    let classes: Vec<Class> = l.verification.claims.iter().map(|c| c.class()).collect();
    assert_eq!(
        classes,
        [Class::HeldAndHolds, Class::NeverHeld, Class::NeverHeld],
        "{:#?}",
        l.verification.claims
    );
    let worktrees = git(d, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
}

#[test]
fn future_dates_fail_and_no_repository_is_unverified() {
    let dir = tempfile::tempdir().unwrap();
    let doc =
        handoff("a1b2c3d", "test -f x", "in_progress", &[]).replace("2026-01-14", "2027-01-01");
    let path = dir.path().join("HANDOFF.md");
    // A folder outside any repository, with the current folder outside too.
    let l = baton_handover::lint(
        &doc,
        &path,
        Rubric::Baton,
        Some(&options(Level::Repo, dir.path())),
    );
    assert_eq!(check(&l, "iso_date").status, Status::Fail);
    assert_eq!(check(&l, "repo").status, Status::Warn);
    assert_eq!(l.verification.verdict, Verdict::Failed);
    let doc = handoff("a1b2c3d", "test -f x", "in_progress", &[]);
    let l = baton_handover::lint(
        &doc,
        &path,
        Rubric::Baton,
        Some(&options(Level::Repo, dir.path())),
    );
    assert_eq!(l.verification.verdict, Verdict::UnverifiedNoRepo);
}

/// The shortest prefix of `sha`, at least `min` long, that reads as a commit id (a digit and a
/// letter): a prefix of digits only (about 1 in 40 commits at 8 characters) is prose, not an id.
fn commit_word(sha: &str, min: usize) -> &str {
    (min..=sha.len())
        .map(|n| &sha[..n])
        .find(|w| {
            w.bytes().any(|b| b.is_ascii_digit()) && w.bytes().any(|b| b.is_ascii_alphabetic())
        })
        .expect("a full commit id has a digit and a letter")
}

/// Commit ids named in the text are looked up: a real one passes, a made-up one is a warning
/// naming its line; hex words without a digit (`deadbeef`-like prose) are not ids.
#[test]
fn issue_26_commit_ids_named_in_prose_are_checked() {
    let (dir, anchor) = repo(FILES);
    let d = dir.path();
    let doc = handoff(&anchor, "test -f README.md", "in_progress", &[]).replace(
        "## 6. Next action",
        &format!(
            "The migration landed in {} and was reverted by `9f8e7d6c5b4a` (see effaced).\n\n## 6. Next action",
            commit_word(&anchor, 10)
        ),
    );
    let line = doc
        .lines()
        .position(|l| l.starts_with("The migration"))
        .unwrap()
        + 1;
    let l = lint(d, &doc, Level::Repo);
    let c = check(&l, "commits");
    assert_eq!(c.status, Status::Warn);
    assert_eq!(
        c.detail,
        format!(
            "1 of 2 commit id(s) named in the text are not in this repository: 9f8e7d6c5b4a (L{line})"
        )
    );
    assert_eq!(c.line, Some(line));
    let ok = handoff(&anchor, "test -f README.md", "in_progress", &[]).replace(
        "## 6. Next action",
        &format!(
            "Landed in {}.\n\n## 6. Next action",
            commit_word(&anchor, 8)
        ),
    );
    let l = lint(d, &ok, Level::Repo);
    assert_eq!(check(&l, "commits").status, Status::Ok);
}
