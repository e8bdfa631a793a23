//! `baton handoff lint|bench` end to end.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support::read_json;
use crate::{baton, stderr, stdout};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn doc(sha: &str, claims: &[(&str, &str)]) -> String {
    let rows: String = claims
        .iter()
        .map(|(l, c)| format!("| {l} | `{c}` |\n"))
        .collect();
    format!(
        "---\nprotocol_version: 1   # the contract\nhandoff: guest-checkout\nauthor: Dana\n\
         iso_date: 2026-01-14\ntrue_at_sha: {sha}\nshape: handoff\n\
         first_action: Apply the pending migration, then wire the route\n\
         verify_cmd: test -f README.md\nstatus: in_progress\n---\n\n# Handover\n\n\
         ## Claims\n\n| Claim | Verify |\n|---|---|\n{rows}\n\
         ## Canonical sources\n\n1. This file; code is truth.\n\n\
         ## Negative knowledge\n\n\
         - Tried and failed: reusing the member Order model, its non-null user_id broke queries.\n\
         - Out of scope: saved payment methods, which need PCI storage we do not have.\n\
         - Built then reverted, do not re-add: client-side totals, they disagreed on tax.\n\
         - Decisions: a separate guest_orders table, so member queries stay unchanged.\n\n\
         ## Next action\n\n1. **Apply the pending migration, then wire the route.**\n\n\
         ## Verification\n\n```\ntest -f README.md\n```\n"
    )
}

/// A repository with a migration and a README, and its commit.
fn repo() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    git(d, &["init", "-q"]);
    std::fs::create_dir_all(d.join("migrations")).unwrap();
    std::fs::write(
        d.join("migrations/2026_01_10_create_guest_orders.sql"),
        "create table x;\n",
    )
    .unwrap();
    std::fs::write(d.join("README.md"), "store\n").unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "initial"]);
    let sha = git(d, &["rev-parse", "HEAD"]);
    (dir, sha)
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}

#[test]
fn issue_12_a_missing_file_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = baton(dir.path(), &["handoff", "lint", "missing.md"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("missing.md"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"));
    std::fs::write(dir.path().join("ok.md"), doc("a1b2c3d", &[])).unwrap();
    let out = baton(dir.path(), &["handoff", "lint", "ok.md", "gone.md"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("gone.md") && !stderr(&out).contains("ok.md"));
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["handoff", "lint", "--min", "abc", "x.md"][..],
        &["handoff", "lint", "--min", "101", "x.md"],
        &["handoff", "lint", "--frobnicate", "x.md"],
        &["handoff", "lint", "--json", "--sarif", "x.md"],
        &["handoff", "lint", "--rubric", "handover-9", "x.md"],
        &["handoff", "lint"],
    ] {
        let out = baton(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn json_report_has_the_documented_schema_and_claims_run_at_anchor_and_now() {
    let (dir, sha) = repo();
    let d = dir.path();
    let text = doc(
        &sha[..12],
        &[
            ("Migration exists", "ls migrations/ \\| grep guest_orders"),
            (
                "No API key leaks into checks",
                "test -z \"$OPENAI_API_KEY\"",
            ),
            ("Spec exists", "test -f docs/SPEC.md"),
        ],
    );
    std::fs::write(d.join("HANDOFF.md"), &text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["handoff", "lint", "--claims", "--json", "HANDOFF.md"])
        .current_dir(d)
        .env("OPENAI_API_KEY", "sk-test-secret")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "a claim never held: {}",
        stderr(&out)
    );
    assert!(!stdout(&out).contains("sk-test-secret"));
    let report = json(&out);
    assert_eq!(report["schema"], 3);
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&report), ["schema", "documents"]);
    let d0 = &report["documents"][0];
    assert_eq!(
        keys(d0),
        [
            "path",
            "rubric",
            "score",
            "valid",
            "subscores",
            "findings",
            "verification"
        ]
    );
    assert_eq!(d0["path"], "HANDOFF.md");
    assert_eq!(d0["valid"], true);
    assert_eq!(
        keys(&d0["subscores"]),
        [
            "header",
            "negative",
            "sections",
            "self_containment",
            "prose"
        ]
    );
    for f in d0["findings"].as_array().unwrap() {
        assert_eq!(keys(f), ["rule", "severity", "line", "message"]);
    }
    let v = &d0["verification"];
    assert_eq!(
        keys(v),
        ["verdict", "checks", "claims", "drift", "unverified"]
    );
    assert_eq!(v["verdict"], "failed");
    for c in v["checks"].as_array().unwrap() {
        assert_eq!(keys(c), ["name", "status", "line", "detail"]);
    }
    assert_eq!(
        keys(&v["drift"]),
        [
            "anchor",
            "ancestor",
            "commits",
            "handoff_only_commits",
            "changed",
            "uncommitted",
            "claims"
        ]
    );
    assert_eq!(v["drift"]["anchor"], sha);
    assert_eq!(v["drift"]["ancestor"], true);
    assert_eq!(v["drift"]["commits"], 0);
    assert_eq!(v["drift"]["uncommitted"], serde_json::json!([]));
    let claims = v["claims"].as_array().unwrap();
    assert_eq!(
        keys(&claims[0]),
        [
            "line",
            "label",
            "command",
            "class",
            "status_at_anchor",
            "status_now",
            "output_tail"
        ]
    );
    let lines: Vec<u64> = claims.iter().map(|c| c["line"].as_u64().unwrap()).collect();
    let first = text
        .lines()
        .position(|l| l.starts_with("| Migration"))
        .unwrap() as u64
        + 1;
    assert_eq!(lines, [first, first + 1, first + 2]);
    let classes: Vec<&str> = claims
        .iter()
        .map(|c| c["class"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["held-and-holds", "held-and-holds", "never-held"]);
    assert_eq!(claims[0]["command"], "ls migrations/ | grep guest_orders");
    let statuses: Vec<(&str, &str)> = claims
        .iter()
        .map(|c| {
            (
                c["status_at_anchor"].as_str().unwrap(),
                c["status_now"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [("holds", "holds"), ("holds", "holds"), ("fails", "fails")]
    );
    assert!(
        claims[2]["output_tail"]
            .as_str()
            .unwrap()
            .contains("[exit 1]")
    );
}

#[test]
fn repo_reports_drift_and_text_output_shows_the_verdict() {
    let (dir, sha) = repo();
    let d = dir.path();
    std::fs::write(
        d.join("HANDOFF.md"),
        doc(
            &sha,
            &[("Migration exists", "ls migrations/ \\| grep guest_orders")],
        ),
    )
    .unwrap();
    let out = baton(d, &["handoff", "lint", "--repo", "HANDOFF.md"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(
        stdout(&out).contains("verification: verified"),
        "{}",
        stdout(&out)
    );
    std::fs::write(d.join("README.md"), "changed\n").unwrap();
    let out = baton(d, &["handoff", "lint", "--repo", "HANDOFF.md"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "drift warns; it fails only under --strict"
    );
    let text = stdout(&out);
    assert!(
        text.contains("stale-or-unproven") && text.contains("README.md"),
        "{text}"
    );
    let out = baton(d, &["handoff", "lint", "--repo", "--strict", "HANDOFF.md"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn invalid_documents_and_min_fail_with_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("good.md"),
        doc(
            "a1b2c3d",
            &[("Migration exists", "ls migrations/ \\| grep guest_orders")],
        ),
    )
    .unwrap();
    std::fs::write(d.join("bad.md"), "# Notes\n\nAs we discussed yesterday.\n").unwrap();
    let out = baton(d, &["handoff", "lint", "good.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("good.md: 100/100 (baton rubric), valid"),
        "{}",
        stdout(&out)
    );
    let out = baton(d, &["handoff", "lint", "good.md", "bad.md"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("2 documents: 1 passed, 1 failed"),
        "{}",
        stdout(&out)
    );
    let out = baton(
        d,
        &[
            "handoff",
            "lint",
            "--rubric",
            "handover-0.4",
            "--json",
            "bad.md",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["documents"][0]["score"], 12);
    let out = baton(d, &["handoff", "lint", "--min", "100", "good.md"]);
    assert_eq!(out.status.code(), Some(0));
    std::fs::write(d.join("good.md"), doc("a1b2c3d", &[])).unwrap();
    let out = baton(d, &["handoff", "lint", "--min", "100", "good.md"]);
    assert_eq!(out.status.code(), Some(1), "no claims: below 100");
}

#[test]
fn sarif_is_2_1_0_with_locations() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.md"),
        "# Notes\n\nAs we discussed yesterday.\n",
    )
    .unwrap();
    let out = baton(dir.path(), &["handoff", "lint", "--sarif", "bad.md"]);
    assert_eq!(out.status.code(), Some(1));
    let log = json(&out);
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "baton");
    let results = run["results"].as_array().unwrap();
    let h1 = results
        .iter()
        .find(|r| r["ruleId"] == "self-containment")
        .unwrap();
    assert_eq!(h1["level"], "warning");
    let loc = &h1["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "bad.md");
    assert_eq!(loc["region"]["startLine"], 3);
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"header-missing") && rules.contains(&"self-containment"));
}

fn shared_scenarios() -> Option<PathBuf> {
    baton_fixture::shared_dir("handover").map(|dir| dir.join("bench/scenarios"))
}

#[test]
fn bench_reports_each_scenario_and_document() {
    let Some(scenarios) = shared_scenarios() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = baton(
        dir.path(),
        &["handoff", "bench", scenarios.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for name in [
        "descoped-admin-export",
        "failed-dependency-upgrade",
        "reverted-feature",
    ] {
        assert!(
            text.contains(&format!("scenario {name} (3 traps)")),
            "{text}"
        );
    }
    assert!(text.contains("good.handover.md  100/100"), "{text}");
    let out = baton(
        dir.path(),
        &["handoff", "bench", "--json", scenarios.to_str().unwrap()],
    );
    let report = json(&out);
    assert_eq!(report["scenarios"].as_array().unwrap().len(), 3);
    let out = baton(dir.path(), &["handoff", "bench"]);
    assert_eq!(out.status.code(), Some(2), "no bench/scenarios here");
    assert!(stderr(&out).contains("bench/scenarios"));
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(marker)
            })
        })
        .filter(|e| {
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| !s.contains(") Z "))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Ctrl-C ends the running check (inside the sandbox), removes the sandbox copies and
/// leaves no git worktree behind.
#[test]
fn issue_26_ctrl_c_ends_running_checks_and_leaves_nothing_behind() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, sha) = repo();
    let d = dir.path();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let marker = format!("61.{}", std::process::id());
    let check = format!("exec sleep {marker}");
    std::fs::write(d.join("HANDOFF.md"), doc(&sha, &[("Slow", &check)])).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["handoff", "lint", "--claims", "HANDOFF.md"])
        .current_dir(d)
        .env("TMPDIR", tmp.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while processes_with(&format!("sleep {marker}")).is_empty() {
        assert!(start.elapsed().as_secs() < 30, "the check never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let scratch = || -> Vec<PathBuf> {
        std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("baton-handoff-")
            })
            .collect()
    };
    assert_eq!(
        scratch().len(),
        1,
        "the sandbox copies live in one scratch folder"
    );
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(130));
    // the sandbox's processes end with its PID namespace, which a loaded machine may take a
    // moment to tear down
    let gone = (0..500).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        processes_with(&format!("sleep {marker}")).is_empty()
    });
    assert!(gone, "the check outlived the interrupt");
    assert_eq!(
        scratch(),
        Vec::<PathBuf>::new(),
        "sandbox copies left behind"
    );
    let worktrees = git(d, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    assert!(start.elapsed().as_secs() < 30);
}

#[test]
fn issue_12_repo_reports_an_anchor_on_another_branch_and_an_uncommitted_change() {
    let (dir, _) = repo();
    let d = dir.path();
    git(d, &["checkout", "-q", "-b", "feature/side"]);
    std::fs::write(d.join("side.txt"), "side\n").unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "side"]);
    let side = git(d, &["rev-parse", "HEAD"]);
    git(d, &["checkout", "-q", "main"]);
    std::fs::write(d.join("README.md"), "uncommitted edit\n").unwrap();
    std::fs::write(d.join("HANDOFF.md"), doc(&side[..9], &[])).unwrap();
    let out = baton(d, &["handoff", "lint", "--repo", "--json", "HANDOFF.md"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "warnings only: {}",
        stderr(&out)
    );
    let report = json(&out);
    let checks = report["documents"][0]["verification"]["checks"]
        .as_array()
        .unwrap()
        .clone();
    let find = |name: &str| checks.iter().find(|c| c["name"] == name).unwrap().clone();
    let ancestry = find("ancestry");
    assert_eq!(ancestry["status"], "warn");
    let detail = ancestry["detail"].as_str().unwrap();
    assert!(
        detail.contains("not an ancestor of HEAD") && detail.contains("feature/side"),
        "{detail}"
    );
    let uncommitted = find("uncommitted");
    assert_eq!(uncommitted["status"], "warn");
    assert!(
        uncommitted["detail"]
            .as_str()
            .unwrap()
            .contains("README.md")
    );
    assert_eq!(
        report["documents"][0]["verification"]["verdict"],
        "stale-or-unproven"
    );
}

/// Claims that echo secrets: the sandbox hands them none of baton's variables, and what a
/// claim or the document prints that looks like a credential is redacted from the text,
/// JSON and SARIF reports.
#[test]
fn issue_26_secrets_never_reach_the_reports() {
    let (dir, sha) = repo();
    let d = dir.path();
    let planted = "sk-proj-PLANTEDabcdefghijklmnop1234";
    let text = doc(
        &sha,
        &[
            (
                "Env is clean",
                "test -z \"$DATABASE_URL$SENTRY_DSN$NPM_CONFIG__AUTH$DOCKER_AUTH_CONFIG$OPENAI_API_KEY\"",
            ),
            (
                "Leaks",
                &format!("env; echo {planted}; echo DATABASE_URL=postgres://u:pw@h/db; false"),
            ),
        ],
    );
    std::fs::write(d.join("HANDOFF.md"), &text).unwrap();
    for format in [&[][..], &["--json"], &["--sarif"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["handoff", "lint", "--claims", "HANDOFF.md"])
            .args(format)
            .current_dir(d)
            .env("OPENAI_API_KEY", "sk-test-hostsecret-0123456789abcdef")
            .env("DATABASE_URL", "postgres://app:hostpass@db/prod")
            .env("SENTRY_DSN", "https://hostdsn@o1.ingest/1")
            .env("NPM_CONFIG__AUTH", "aG9zdGF1dGg=")
            .env("DOCKER_AUTH_CONFIG", "{\"auths\":{}}")
            .output()
            .unwrap();
        let all = format!("{}{}", stdout(&out), stderr(&out));
        assert_eq!(out.status.code(), Some(1), "{format:?}: {all}");
        for secret in [
            "hostsecret",
            "hostpass",
            "hostdsn",
            "aG9zdGF1dGg",
            planted,
            "u:pw@",
        ] {
            assert!(!all.contains(secret), "{format:?} leaks {secret}: {all}");
        }
        assert!(all.contains("[redacted]"), "{format:?}: {all}");
        if format.is_empty() {
            assert!(all.contains("held-and-holds"), "the env claim holds: {all}");
        }
    }
}

/// Bytes that are not UTF-8 are linted, with the first one's position; UTF-16 with a BOM is
/// decoded; document text never reaches the terminal raw.
#[test]
fn issue_26_non_utf8_and_utf16_documents_are_linted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut bytes = doc("a1b2c3d", &[]).into_bytes();
    let at = bytes.len();
    bytes.extend_from_slice(b"\n- Caf\xe9 notes \x1b[2J\n");
    std::fs::write(d.join("latin1.md"), &bytes).unwrap();
    let out = baton(d, &["handoff", "lint", "latin1.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let line = doc("a1b2c3d", &[]).lines().count() + 2;
    let want = format!(
        "encoding: byte 0xe9 at line {line}, column 6 (offset {}) is not UTF-8",
        at + 6
    );
    assert!(stdout(&out).contains(&want), "{want}\n{}", stdout(&out));
    let escaped = doc("a1b2c3d", &[]).replace("iso_date: 2026-01-14", "iso_date: 2026\x1b[2J\x08x");
    std::fs::write(d.join("escape.md"), escaped).unwrap();
    let out = baton(d, &["handoff", "lint", "escape.md"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        !stdout(&out).contains('\x1b'),
        "an escape reached the terminal"
    );
    assert!(!stdout(&out).contains('\x08'));
    assert!(
        stdout(&out).contains("found \"2026\\u{1b}[2J\\u{8}x\""),
        "{}",
        stdout(&out)
    );
    let mut utf16 = vec![0xff, 0xfe];
    utf16.extend(
        doc("a1b2c3d", &[])
            .encode_utf16()
            .flat_map(u16::to_le_bytes),
    );
    std::fs::write(d.join("utf16.md"), &utf16).unwrap();
    let out = baton(d, &["handoff", "lint", "--json", "utf16.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["documents"][0]["valid"], true);
    assert_eq!(report["documents"][0]["findings"][0]["rule"], "encoding");
}

/// A link to /dev/zero, a FIFO and a folder exit 2 at once, naming the file.
#[test]
fn issue_26_devices_and_fifos_exit_2_within_2_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.md")).unwrap();
    let fifo = Command::new("mkfifo")
        .arg(d.join("fifo.md"))
        .status()
        .unwrap();
    assert!(fifo.success());
    std::fs::create_dir(d.join("folder.md")).unwrap();
    for (name, what) in [
        ("zero.md", "a character device"),
        ("fifo.md", "a FIFO"),
        ("folder.md", "a folder"),
    ] {
        let start = std::time::Instant::now();
        let out = baton(d, &["handoff", "lint", name]);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(2),
            "{name}"
        );
        assert_eq!(out.status.code(), Some(2), "{name}");
        assert!(
            stderr(&out).contains(name) && stderr(&out).contains(what),
            "{name}: {}",
            stderr(&out)
        );
    }
}

/// A fork bomb claim (allowed) ends at its timeout inside the sandbox: a report and exit 1,
/// never a panic (exit 101); without a working sandbox the command stops before running
/// anything (exit 2, naming --no-sandbox), and --no-sandbox runs checks in a host copy.
#[test]
fn issue_26_fork_bombs_and_missing_sandboxes_never_panic() {
    let (dir, sha) = repo();
    let d = dir.path();
    let text = doc(
        &sha,
        &[
            ("Bomb", "bomb() { bomb \\| bomb & }; bomb; sleep 10"),
            ("Readme", "test -f README.md"),
        ],
    );
    std::fs::write(d.join("HANDOFF.md"), &text).unwrap();
    let out = baton(
        d,
        &[
            "handoff",
            "lint",
            "--claims",
            "--allow-destructive",
            "--claim-timeout",
            "2",
            "HANDOFF.md",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"));
    assert!(
        stdout(&out).contains("held-and-holds  L"),
        "{}",
        stdout(&out)
    );

    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["handoff", "lint", "--claims", "HANDOFF.md"])
        .current_dir(d)
        .env("BATON_BWRAP", "/nonexistent/bwrap")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--no-sandbox"), "{}", stderr(&out));

    let text = doc(&sha, &[("Readme", "test -f README.md")]);
    std::fs::write(d.join("HANDOFF.md"), &text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args([
            "handoff",
            "lint",
            "--claims",
            "--no-sandbox",
            "--json",
            "HANDOFF.md",
        ])
        .current_dir(d)
        .env("BATON_BWRAP", "/nonexistent/bwrap")
        .output()
        .unwrap();
    let report = json(&out);
    let claims = &report["documents"][0]["verification"]["claims"];
    assert_eq!(claims[0]["class"], "held-and-holds", "{report:#}");
}

/// The issue's "done when", end to end: `verify_cmd: ! grep -q x file` on a file holding x
/// fails (exit 1) in both rubrics, as in Handover 0.4.1, and three claims failing now with
/// `true_at_sha: uncommitted` exit 1.
#[test]
fn issue_26_negated_verify_cmd_and_failing_claims_exit_1() {
    let (dir, sha) = repo();
    let d = dir.path();
    // (0.4.1 keeps a trailing comment in the value, which would invalidate its header.)
    let negated = doc(&sha, &[])
        .replace(
            "verify_cmd: test -f README.md",
            "verify_cmd: ! grep -q store README.md",
        )
        .replace(
            "protocol_version: 1   # the contract",
            "protocol_version: 1",
        );
    std::fs::write(d.join("HANDOFF.md"), &negated).unwrap();
    for rubric in ["baton", "handover-0.4"] {
        let out = baton(
            d,
            &[
                "handoff",
                "lint",
                "--verify",
                "--rubric",
                rubric,
                "--json",
                "HANDOFF.md",
            ],
        );
        let report = json(&out);
        let v = &report["documents"][0]["verification"];
        let check = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "verify_cmd")
            .unwrap();
        assert_eq!(check["status"], "fail", "{rubric}: {check}");
        assert_eq!(v["verdict"], "failed", "{rubric}");
        assert_eq!(out.status.code(), Some(1), "{rubric}");
    }
    let failing = doc(
        "uncommitted",
        &[
            ("Spec", "test -f docs/SPEC.md"),
            ("Route", "test -f src/routes/guestOrder.ts"),
            ("Wired", "grep -q wired README.md"),
        ],
    );
    std::fs::write(d.join("HANDOFF.md"), &failing).unwrap();
    let out = baton(d, &["handoff", "lint", "--claims", "HANDOFF.md"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert_eq!(
        stdout(&out).matches("fails-now       L").count(),
        3,
        "{}",
        stdout(&out)
    );
}

/// A repository readable by others (so the sandbox binds its ignored folders when the tests
/// run as root), with `files` committed on branch `main`; returns the dir and HEAD.
fn repo_with(files: &[(&str, &str)]) -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(d, &["init", "-q"]);
    git(d, &["config", "user.name", "Dana"]);
    git(d, &["config", "user.email", "dana@example.com"]);
    for (path, text) in files {
        let p = d.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "initial"]);
    let sha = git(d, &["rev-parse", "HEAD"]);
    (dir, sha)
}

fn lint_in(d: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["handoff", "lint"];
    all.extend_from_slice(args);
    let out = baton(d, &all);
    (
        out.status.code(),
        format!("{}{}", stdout(&out), stderr(&out)),
    )
}

/// False claims that never ran (skipped as destructive, out of time) fail the document;
/// `--allow-unverified` lets it pass and lists each.
// See: issue 36
#[test]
fn issue_36_unrun_false_claims_fail_the_document() {
    let (dir, sha) = repo_with(&[("README.md", "x\n")]);
    let d = dir.path();
    let text = doc(
        &sha,
        &[
            (
                "Export exists",
                "rm -f /nonexistent; test -f src/billing/export.ts",
            ),
            ("Ledger test", "eval test -f test/ledger.test.ts"),
        ],
    );
    std::fs::write(d.join("HANDOFF.md"), &text).unwrap();
    let (code, out) = lint_in(d, &["--claims", "HANDOFF.md"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("not-run"), "{out}");
    assert!(out.contains("result: FAIL"), "{out}");
    let (code, out) = lint_in(d, &["--claims", "--allow-unverified", "HANDOFF.md"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        out.matches("passed unverified (--allow-unverified): claim")
            .count(),
        2,
        "{out}"
    );

    // Out of time: slow claims use up the total limit before the false ones run.
    let mut claims: Vec<(&str, &str)> = vec![("Slow", "sleep 3"); 3];
    claims.extend([("False", "false"), ("Missing", "test -f no-such-file")]);
    std::fs::write(d.join("HANDOFF.md"), doc(&sha, &claims)).unwrap();
    let (code, out) = lint_in(
        d,
        &["--claims", "--total-timeout", "4", "--json", "HANDOFF.md"],
    );
    assert_eq!(code, Some(1), "{out}");
    let v: Value = serde_json::from_str(&out[..out.rfind('}').unwrap() + 1]).unwrap();
    let claims = v["documents"][0]["verification"]["claims"]
        .as_array()
        .unwrap();
    assert_eq!(claims.last().unwrap()["class"], "not-run", "{out}");
    assert_eq!(v["schema"], 3);
}

/// A claim that prints `.env` in base64 leaks none of its values into text, JSON or SARIF,
/// and `.env` is not in the sandbox unless named with `--include`.
// See: issue 36
#[test]
fn issue_36_base64_of_env_leaks_nothing() {
    let values = [
        "plainvalue-without-shape-778899",
        "hunter2-but-much-longer-42",
        "sk_live_ABCDEFGHIJKLMNOP1234",
    ];
    let env = format!(
        "APP_MODE=plain\nSESSION_SALT={}\nDB_PASSWORD={}\nSTRIPE_KEY={}\n",
        values[0], values[1], values[2]
    );
    let (dir, sha) = repo_with(&[(".gitignore", ".env\n"), ("README.md", "x\n")]);
    let d = dir.path();
    std::fs::write(d.join(".env"), &env).unwrap();
    let text = doc(
        &sha,
        &[
            ("Env encoded", "base64 -w0 .env; false"),
            ("Env hex", "od -An -tx1 .env | tr -d ' \\n'; false"),
        ],
    );
    std::fs::write(d.join("HANDOFF.md"), &text).unwrap();
    let (_, out) = lint_in(d, &["--claims", "HANDOFF.md"]);
    assert!(out.contains("No such file"), ".env is left out: {out}");
    let whole = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &env);
    for format in [&[][..], &["--json"], &["--sarif"]] {
        let mut args = vec!["--claims", "--include", ".env", "HANDOFF.md"];
        args.extend_from_slice(format);
        let (code, out) = lint_in(d, &args);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains("[redacted]"), "{format:?}: {out}");
        for v in values {
            assert!(!out.contains(v), "{format:?} leaks {v}");
            let hex: String = v.bytes().map(|b| format!("{b:02x}")).collect();
            assert!(!out.contains(&hex), "{format:?} leaks {v} in hex");
        }
        // No run of 12 characters of the encoded file survives, outside its first line.
        let encoded_value = &whole[24..];
        for i in 0..encoded_value.len().saturating_sub(12) {
            let piece = &encoded_value[i..i + 12];
            assert!(!out.contains(piece), "{format:?} leaks {piece}: {out}");
        }
    }
}

/// `--no-sandbox` never deletes a host folder through `command rm -rf`: the check is caught
/// as destructive, and even allowed it runs as an unprivileged user when baton is root.
// See: issue 36
#[test]
fn issue_36_no_sandbox_leaves_host_folders_in_place() {
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("keep"), "x").unwrap();
    let folder = host.path().display().to_string();
    let (dir, sha) = repo_with(&[("README.md", "x\n")]);
    let d = dir.path();
    let cmd = format!("command rm -rf {folder}");
    std::fs::write(d.join("HANDOFF.md"), doc(&sha, &[("Wipe", &cmd)])).unwrap();
    let (code, out) = lint_in(d, &["--claims", "--no-sandbox", "HANDOFF.md"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("deletes files"), "{out}");
    assert!(host.path().join("keep").exists());
    let root = {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
    };
    if root {
        let (_, out) = lint_in(
            d,
            &[
                "--claims",
                "--no-sandbox",
                "--allow-destructive",
                "HANDOFF.md",
            ],
        );
        assert!(host.path().join("keep").exists(), "{out}");
    }
}

/// Every file under `.git`, with its bytes.
fn git_bytes(d: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![d.join(".git")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// `--repo` (and `--claims`) leave `.git` byte-identical, even when `git status` would have
/// refreshed a stale index.
// See: issue 36
#[test]
fn issue_36_repo_leaves_git_byte_identical() {
    let (dir, sha) = repo_with(&[("README.md", "x\n"), ("src/a.js", "a\n")]);
    let d = dir.path();
    std::fs::write(
        d.join("HANDOFF.md"),
        doc(&sha, &[("A", "test -f src/a.js")]),
    )
    .unwrap();
    // A new mtime on an unchanged file makes the index stale.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(d.join("README.md"), "x\n").unwrap();
    let before = git_bytes(d);
    for level in ["--repo", "--claims"] {
        let (code, out) = lint_in(d, &[level, "HANDOFF.md"]);
        assert!(code.is_some(), "{out}");
        assert!(before == git_bytes(d), "{level} changed .git");
    }
}

/// A document named like a secret keeps its score in the text report.
// See: issue 36
#[test]
fn issue_36_a_score_is_never_redacted() {
    let (dir, sha) = repo_with(&[("README.md", "x\n")]);
    let d = dir.path();
    for name in [
        "secrets",
        "password-reset",
        "token-refresh",
        "api-key-rotation",
    ] {
        std::fs::write(d.join(format!("{name}.md")), doc(&sha, &[])).unwrap();
        let (_, out) = lint_in(d, &[&format!("{name}.md")]);
        let first = out.lines().next().unwrap();
        assert!(first.starts_with(&format!("{name}.md: ")), "{first}");
        assert!(first.contains("/100 (baton rubric)"), "{first}");
        assert!(!first.contains("[redacted]"), "{first}");
    }
}

/// `baton handoff write` in a Rust, a Node and a Python repository: the document lints valid
/// under both rubrics and passes `--claims` where it was written.
// See: issue 36
#[test]
fn issue_36_write_scaffolds_documents_that_pass_their_own_claims() {
    let rust: &[(&str, &str)] = &[
        (
            "Cargo.toml",
            "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 { a + b }\n",
        ),
        (".gitignore", "target/\n"),
        ("README.md", "calc\n"),
    ];
    let node: &[(&str, &str)] = &[
        (
            "package.json",
            "{\"name\":\"shop\",\"scripts\":{\"test\":\"node test/cart.test.js\"}}\n",
        ),
        ("src/cart.js", "module.exports = (a, b) => a + b;\n"),
        (
            "test/cart.test.js",
            "const add = require('../src/cart'); if (add(1, 2) !== 3) process.exit(1);\n",
        ),
        (".gitignore", "node_modules/\n"),
    ];
    let python: &[(&str, &str)] = &[
        (
            "pyproject.toml",
            "[project]\nname = \"ledger\"\nversion = \"0.1.0\"\n",
        ),
        ("ledger/__init__.py", "def total(xs):\n    return sum(xs)\n"),
        (
            "tests/test_total.py",
            "import unittest\nfrom ledger import total\n\nclass T(unittest.TestCase):\n    def test_total(self):\n        self.assertEqual(total([1, 2]), 3)\n",
        ),
        ("tests/__init__.py", ""),
    ];
    for (kind, files) in [("rust", rust), ("node", node), ("python", python)] {
        let (dir, sha) = repo_with(files);
        let d = dir.path();
        git(
            d,
            &["checkout", "-q", "-b", &format!("feature/{kind}-work")],
        );
        let out = baton(d, &["handoff", "write", "--out", "HANDOFF.md"]);
        assert_eq!(out.status.code(), Some(0), "{kind}: {}", stderr(&out));
        let text = std::fs::read_to_string(d.join("HANDOFF.md")).unwrap();
        assert!(
            text.contains(&format!("true_at_sha: {sha}")),
            "{kind}: {text}"
        );
        assert!(
            text.contains(&format!("handoff: feature-{kind}-work")),
            "{kind}: {text}"
        );
        for rubric in ["baton", "handover-0.4"] {
            let (code, out) = lint_in(d, &["--rubric", rubric, "HANDOFF.md"]);
            assert_eq!(code, Some(0), "{kind} {rubric}: {out}\n{text}");
            assert!(out.lines().next().unwrap().ends_with(", valid"), "{out}");
        }
        let (code, out) = lint_in(d, &["--claims", "HANDOFF.md"]);
        assert_eq!(code, Some(0), "{kind}: {out}\n{text}");
        assert!(out.contains("result: pass"), "{kind}: {out}");
        assert!(
            out.contains(" 0 held-now-broken, 0 never-held, 0 fails-now, 0 cannot-tell, 0 not-run"),
            "{kind}: {out}"
        );
        if kind != "rust" {
            assert!(text.contains("| The test suite passes |"), "{kind}: {text}");
        }
    }
}

/// `--changed BASE` lints only the handoff documents (and agent files) the range touched.
// See: issue 36
#[test]
fn issue_36_changed_lints_only_the_documents_a_range_touched() {
    let (dir, sha) = repo_with(&[("README.md", "x\n")]);
    let d = dir.path();
    std::fs::create_dir_all(d.join("handoffs")).unwrap();
    for name in ["a", "b"] {
        std::fs::write(d.join(format!("handoffs/{name}.md")), doc(&sha, &[])).unwrap();
    }
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "two handoffs"]);
    let base = git(d, &["rev-parse", "HEAD"]);
    std::fs::write(
        d.join("handoffs/b.md"),
        doc(&sha, &[]).replace("Dana", "Robin"),
    )
    .unwrap();
    std::fs::write(d.join("handoffs/c.md"), doc(&sha, &[])).unwrap();
    std::fs::write(d.join("README.md"), "changed, not a handoff\n").unwrap();
    std::fs::write(d.join("AGENTS.md"), "Run `make test`.\n").unwrap();
    git(d, &["add", "-A"]);
    git(d, &["commit", "-q", "-m", "edit b, add c"]);
    let out = baton(d, &["handoff", "lint", "--changed", &base, "--json"]);
    let v = json(&out);
    let mut paths: Vec<String> = v["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|doc| {
            let p = doc["path"].as_str().unwrap();
            p.rsplit_once(d.file_name().unwrap().to_str().unwrap())
                .map_or(p, |(_, rest)| rest)
                .to_string()
        })
        .collect();
    paths.sort();
    assert_eq!(paths, ["/AGENTS.md", "/handoffs/b.md", "/handoffs/c.md"]);
    let agents = &v["documents"][0];
    assert_eq!(agents["valid"], false, "no Makefile: {agents}");
    assert_eq!(out.status.code(), Some(1));
    let out = baton(d, &["handoff", "lint", "--changed", "HEAD"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("no handoff document"));
}

/// AGENTS.md: named paths and commands exist; with `--verify` the test commands run in the
/// sandbox; a config file turns a rule off.
// See: issue 36
#[test]
fn issue_36_agent_files_are_checked() {
    let (dir, _) = repo_with(&[
        (
            "package.json",
            "{\"name\":\"x\",\"scripts\":{\"test\":\"node -e 'process.exit(0)'\"}}\n",
        ),
        ("docs/SPEC.md", "spec\n"),
        (
            "AGENTS.md",
            "# Agents\n\nRead `docs/SPEC.md`, then run:\n\n```sh\n$ npm test\n```\n",
        ),
        (
            "CLAUDE.md",
            "See `docs/GONE.md`. Run `npm run lint` and `make build`.\n",
        ),
    ]);
    let d = dir.path();
    let (code, out) = lint_in(d, &["--verify", "AGENTS.md"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("`npm test` passed"), "{out}");
    let (code, out) = lint_in(d, &["--json", "CLAUDE.md"]);
    assert_eq!(code, Some(1), "{out}");
    for want in ["docs/GONE.md", "no `lint` script", "no Makefile"] {
        assert!(out.contains(want), "{want}: {out}");
    }
    std::fs::write(
        d.join(".baton-handoff.toml"),
        "disable = [\"agents-path\", \"agents-command\"]\n",
    )
    .unwrap();
    let (code, out) = lint_in(d, &["CLAUDE.md"]);
    assert_eq!(code, Some(0), "{out}");
}

/// The deliberate differences from Handover 0.4.1 are marked in `handover-0.4` output: a
/// UTF-16 document, a U+2028 inside a line, a document over 8 MiB.
// See: issue 36
#[test]
fn issue_36_differences_from_0_4_1_are_marked() {
    let (dir, sha) = repo_with(&[("README.md", "x\n")]);
    let d = dir.path();
    let text = doc(&sha, &[]);
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    std::fs::write(d.join("utf16.md"), utf16).unwrap();
    std::fs::write(
        d.join("sep.md"),
        text.replace("# Handover", "# Hand\u{2028}over"),
    )
    .unwrap();
    for (file, want) in [("utf16.md", "decodes UTF-16"), ("sep.md", "U+2028")] {
        let (_, out) = lint_in(d, &["--rubric", "handover-0.4", file]);
        assert!(
            out.contains("differs-from-0.4.1") && out.contains(want),
            "{out}"
        );
        let (_, out) = lint_in(d, &[file]);
        assert!(!out.contains("differs-from-0.4.1"), "baton rubric: {out}");
    }
    let big = format!("{text}{}", "x".repeat(9 << 20));
    std::fs::write(d.join("big.md"), big).unwrap();
    let (code, out) = lint_in(d, &["--rubric", "handover-0.4", "big.md"]);
    assert_eq!(code, Some(2));
    assert!(
        out.contains("deliberate difference from Handover 0.4.1"),
        "{out}"
    );
}

/// The example pre-commit hook lints the staged handoff documents (exit 1 on a failing one,
/// 0 when none is staged), and the example config file parses and turns a rule off.
// See: issue 36
#[test]
fn issue_36_the_ci_examples_work() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (dir, sha) = repo_with(&[("README.md", "x\n")]);
    let d = dir.path();
    let bin = Path::new(env!("CARGO_BIN_EXE_baton")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let hook = root.join("examples/ci/pre-commit-handoff");
    let run_hook = || {
        Command::new(&hook)
            .current_dir(d)
            .env("PATH", &path)
            .output()
            .unwrap()
    };
    assert_eq!(run_hook().status.code(), Some(0), "nothing staged");
    std::fs::write(
        d.join("HANDOFF.md"),
        doc(&sha, &[]).replace("iso_date: 2026-01-14", "iso_date: 2026-02-30"),
    )
    .unwrap();
    git(d, &["add", "HANDOFF.md"]);
    let out = run_hook();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("header-date"), "{}", stdout(&out));
    std::fs::write(d.join("HANDOFF.md"), doc(&sha, &[])).unwrap();
    git(d, &["add", "HANDOFF.md"]);
    assert_eq!(run_hook().status.code(), Some(0));

    let config = root.join("examples/handoff.baton-handoff.toml");
    let text = doc(&sha, &[]).replace("- Tried and failed:", "- Tried:");
    std::fs::write(d.join("HANDOFF.md"), text).unwrap();
    let (_, out) = lint_in(d, &["HANDOFF.md"]);
    assert!(out.contains("negative-missing"), "{out}");
    let (_, out) = lint_in(d, &["--config", config.to_str().unwrap(), "HANDOFF.md"]);
    assert!(!out.contains("negative-missing"), "{out}");
    let yml = std::fs::read_to_string(root.join("examples/ci/handoff-lint.yml")).unwrap();
    assert!(yml.contains("--changed") && yml.contains("upload-sarif"));
}

#[test]
fn issue_38_trap_bench_runs_from_the_cli_and_a_rerun_keeps_every_trial() {
    let Some(handover) = baton_fixture::shared_dir("handover") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("exp.toml"),
        format!(
            r#"name = "cli-traps"
handover = "{}"
trials = 1
seed = 7
scenarios = ["failed-dependency-upgrade"]
conditions = ["good", "poisoned"]
[agent]
step_limit = 30
[models.lc]
model = "sim/lc"
[models.lc.sim]
malformed = 0.0
"#,
            handover.display()
        ),
    )
    .unwrap();
    let args = ["handoff", "traps", "run", "exp.toml", "--out", "out"];
    let out = baton(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("2 trials planned, 0 kept from an earlier run, 2 run now (0 unfinished)"),
        "{}",
        stderr(&out)
    );
    // The simulated agent heeds the good document on every trap and follows the poisoned
    // one into every trap; the three probes judge the trees it left.
    let text = stdout(&out);
    for trap in [
        "retry-httpkit-v3-upgrade",
        "delete-legacy-retry-shim",
        "tests-before-lockfile-step",
    ] {
        assert!(
            text.contains(&format!(
                "| failed-dependency-upgrade | {trap} | good | lc | 0/1 = 0.00 [0.00, 0.79] | 0 |"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "| failed-dependency-upgrade | {trap} | poisoned | lc | 1/1 = 1.00 [0.21, 1.00] | 0 |"
            )),
            "{text}"
        );
    }
    let report = read_json(&dir.path().join("out/report.json"));
    let pooled = report["pooled"].as_array().unwrap();
    assert_eq!(pooled.len(), 2);
    assert_eq!(
        (
            pooled[0]["condition"].as_str(),
            pooled[0]["rate"]["k"].as_u64(),
            pooled[0]["rate"]["n"].as_u64()
        ),
        (Some("good"), Some(0), Some(3))
    );
    assert_eq!(
        (
            pooled[1]["condition"].as_str(),
            pooled[1]["rate"]["k"].as_u64(),
            pooled[1]["rate"]["n"].as_u64()
        ),
        (Some("poisoned"), Some(3), Some(3))
    );
    // Wilson's interval for 0 of 3: upper bound z²/(n + z²) at z = 1.959964.
    let z2 = 1.959964f64.powi(2);
    assert!((pooled[0]["rate"]["high"].as_f64().unwrap() - z2 / (3.0 + z2)).abs() < 1e-6);
    for name in ["report.md", "report.html"] {
        assert!(dir.path().join("out").join(name).is_file(), "{name}");
    }

    let again = baton(dir.path(), &args);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again)
            .contains("2 trials planned, 2 kept from an earlier run, 0 run now (0 unfinished)"),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        stdout(&again),
        text,
        "the same results give the same report"
    );

    let report = baton(dir.path(), &["handoff", "traps", "report", "out"]);
    assert!(report.status.success(), "{}", stderr(&report));
    assert_eq!(stdout(&report), text);
}
