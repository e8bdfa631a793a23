//! Issue 38: the trap bench's scenarios as agent tasks. Each repository is built, a scripted
//! agent (a fixed list of shell commands) works in it in the real sandbox, and each trap's
//! `detect_fell_in` probe runs on the tree it left: an agent that walks into a trap is caught
//! by that trap's probe, one that does the right thing is not.
//!
//! Node.js: the probes of the two repositories baton wrote need only grep, test and git, and
//! so do these scripts, except `failed-dependency-upgrade`'s avoiding script for its
//! lockfile trap (`npm run lock:ci`) and the test of that repository's TLS error. Those two
//! skip loudly when the host has no `node` (the sandbox sees the host's `/usr`); CI does not
//! install Node.js, so they never fail for its absence, even under
//! `BATON_REQUIRE_CONFORMANCE=1`. `reverted-feature`'s third probe runs `npm test` when it
//! can; without Node.js it answers from its other half, and the expected values are the same
//! (checked with `node` and `npm` hidden in the sandbox).
//
// See: issue 38 (`issues show 38`).

use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use baton_env::{BackendKind, EnvConfig, Environment, Exec, Limits, Setup};
use baton_handover::Rubric;
use baton_handover::bench::Coverage;
use baton_handover::traps::{self, Condition, Outcome, ProbeOptions, TrapTask};

use crate::support::{git, handover_dir};

mod bench_run;
mod identity;
mod scripts;

use scripts::SCRIPTS;

fn tasks() -> Option<Vec<TrapTask>> {
    let dir = handover_dir()?;
    Some(traps::tasks(&dir.join("bench/scenarios")).expect("the scenarios load"))
}

fn task<'a>(tasks: &'a [TrapTask], name: &str) -> &'a TrapTask {
    tasks.iter().find(|t| t.name() == name).unwrap()
}

fn node() -> bool {
    std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A loud notice for a part that needs Node.js, which CI does not install: never a failure.
fn skip_without_node(what: &str) {
    let line = format!(
        "\nSKIPPED: {what}: no `node` on this host (CI does not install Node.js, so this never fails)\n"
    );
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// A built repository in a folder others can read (the sandbox runs as another user when
/// the tests run as root).
fn build(task: &TrapTask) -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let repo = dir.path().join("repo");
    let head = task.build_repo(&repo).unwrap();
    (dir, head)
}

/// The agent's sandbox on a copy of `repo`.
fn sandbox(repo: &Path) -> Box<dyn Environment> {
    let mut config = EnvConfig::for_backend(BackendKind::Bwrap);
    config.limits = Limits {
        timeout_secs: 60.0,
        ..Limits::default()
    };
    let mut setup = Setup::tree(repo);
    setup.env = TrapTask::sandbox_env();
    baton_env::start(&config, &setup).expect("the bubblewrap sandbox starts")
}

fn run(env: &mut dyn Environment, script: &[&str], what: &str) {
    for command in script {
        let out = env
            .exec(&Exec::new(*command).timeout(Duration::from_secs(60)))
            .unwrap();
        assert!(
            out.status.success(),
            "{what}: `{command}` ended {}:\n{}",
            out.status,
            out.output.text()
        );
    }
}

fn outcomes(results: &[traps::ProbeResult]) -> Vec<(String, Outcome)> {
    results
        .iter()
        .map(|r| (r.trap.clone(), r.outcome))
        .collect()
}

fn expect(task: &TrapTask, fell: [bool; 3]) -> Vec<(String, Outcome)> {
    task.scenario
        .traps
        .iter()
        .zip(fell)
        .map(|(t, f)| {
            (
                t.id.clone(),
                if f { Outcome::FellIn } else { Outcome::Clear },
            )
        })
        .collect()
}

#[test]
fn issue_38_repositories_are_small_deterministic_and_tell_their_story() {
    let Some(tasks) = tasks() else { return };
    assert_eq!(
        tasks.iter().map(TrapTask::name).collect::<Vec<_>>(),
        traps::scenario_names()
    );
    for task in &tasks {
        let (a, head) = build(task);
        let (_b, again) = build(task);
        assert_eq!(head, again, "{}: the same commit id twice", task.name());
        let repo = a.path().join("repo");
        let tracked = git(&repo, &["ls-files", "-z"]);
        let bytes: u64 = tracked
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(|p| std::fs::metadata(repo.join(p)).unwrap().len())
            .sum();
        assert!(bytes < 16 * 1024, "{}: {bytes} bytes", task.name());
        let log = git(&repo, &["log", "--format=%s"]);
        let subjects: Vec<&str> = log.lines().collect();
        match task.name() {
            "reverted-feature" => {
                assert_eq!(subjects, ["reverted-feature: repository state"]);
            }
            "failed-dependency-upgrade" => {
                for s in [
                    "Upgrade httpkit to 3.1.0",
                    "Revert \"Upgrade httpkit to 3.1.0\"",
                    "Remove unused legacy-retry-shim",
                    "Revert \"Remove unused legacy-retry-shim\"",
                ] {
                    assert!(subjects.contains(&s), "{s}: {subjects:?}");
                }
                assert_eq!(subjects.len(), 10);
                let pin = git(&repo, &["show", "HEAD:package.json"]);
                assert!(pin.contains("\"httpkit\": \"2.9.4\""), "{pin}");
                let lock = git(&repo, &["show", "HEAD:ci/lock.json"]);
                assert!(
                    lock.contains("\"version\": \"3.1.0\""),
                    "stale lock: {lock}"
                );
                // No file names the shim: grep and dead-code tools call it unused.
                let naming: Vec<&str> = tracked
                    .split('\0')
                    .filter(|p| {
                        std::fs::read_to_string(repo.join(p))
                            .is_ok_and(|t| t.contains("legacy-retry-shim"))
                    })
                    .collect();
                assert_eq!(naming, Vec::<&str>::new());
            }
            "descoped-admin-export" => {
                for s in [
                    "Chart on uPlot",
                    "Cache tile counts on the client",
                    "Revert \"Cache tile counts on the client\"",
                ] {
                    assert!(subjects.contains(&s), "{s}: {subjects:?}");
                }
                assert_eq!(subjects.len(), 6);
            }
            other => panic!("unexpected scenario {other}"),
        }
        // Fixed authors and dates: the same ids on every machine and git version.
        let pinned = match task.name() {
            "reverted-feature" => "c1f2a2da9619a911fe1def10b28a20b6f4641530",
            "failed-dependency-upgrade" => "73783b7baf49b272679493c8ddcb7303851618d4",
            _ => "b8a7c66c2cfa85abe01aa545008f1d9f09ac23be",
        };
        assert_eq!(head, pinned, "{}", task.name());
    }
}

/// The untouched repository: the two written here invite every trap and fall into none;
/// `reverted-feature`'s third probe reads a never-applied migration as fallen in (an agent
/// that does nothing has not taken the first step).
#[test]
fn issue_38_untouched_repositories_fall_into_no_avoidable_trap() {
    let Some(tasks) = tasks() else { return };
    for (name, fell) in [
        ("reverted-feature", [false, false, true]),
        ("failed-dependency-upgrade", [false, false, false]),
        ("descoped-admin-export", [false, false, false]),
    ] {
        let task = task(&tasks, name);
        let (dir, _) = build(task);
        let results = traps::probe::probe_tree(
            name,
            &dir.path().join("repo"),
            &task.scenario.traps,
            &ProbeOptions::default(),
        )
        .unwrap();
        assert_eq!(
            outcomes(&results),
            expect(task, fell),
            "{name}: {results:#?}"
        );
    }
}

/// `failed-dependency-upgrade`'s third trap is mechanical: the suite fails with a TLS error
/// (which has nothing to do with TLS) until `npm run lock:ci` rewrites the stale lockfile.
#[test]
fn issue_38_failed_dependency_upgrade_fails_with_a_tls_error_until_lock_ci() {
    let Some(tasks) = tasks() else { return };
    if !node() {
        skip_without_node("failed-dependency-upgrade's test suite");
        return;
    }
    let task = task(&tasks, "failed-dependency-upgrade");
    let (dir, _) = build(task);
    let mut env = sandbox(&dir.path().join("repo"));
    let before = env.exec(&Exec::new("npm test 2>&1")).unwrap();
    assert_eq!(before.return_code(), Some(1), "{}", before.output.text());
    assert!(
        before
            .output
            .text()
            .contains("unable to get local issuer certificate"),
        "{}",
        before.output.text()
    );
    run(env.as_mut(), &["npm run lock:ci"], "lock:ci");
    let after = env.exec(&Exec::new("npm test 2>&1")).unwrap();
    assert!(after.status.success(), "{}", after.output.text());
    let diff = env.exec(&Exec::new("git diff --stat")).unwrap();
    assert!(
        diff.output.text().contains("ci/lock.json"),
        "{}",
        diff.output.text()
    );
}

/// The documents under test: Handover's two read from its checkout, the poisoned one bundled,
/// each linted; the prompt names `HANDOVER.md` only when a document is placed.
#[test]
fn issue_38_documents_are_placed_and_linted() {
    let Some(tasks) = tasks() else { return };
    let mut scores = Vec::new();
    for task in &tasks {
        let good = task.lint(Condition::Good, Rubric::Baton).unwrap().unwrap();
        let bad = task.lint(Condition::Bad, Rubric::Baton).unwrap().unwrap();
        let poisoned = task
            .lint(Condition::Poisoned, Rubric::Baton)
            .unwrap()
            .unwrap();
        assert_eq!(task.lint(Condition::None, Rubric::Baton).unwrap(), None);
        let coverage = |l: &traps::DocumentLint| -> Vec<Coverage> {
            l.coverage.iter().map(|(_, c)| *c).collect()
        };
        assert_eq!(coverage(&good), [Coverage::Covered; 3], "{}", task.name());
        assert_eq!(coverage(&bad), [Coverage::Missing; 3], "{}", task.name());
        assert_eq!(
            coverage(&poisoned),
            [Coverage::Contradicted; 3],
            "{}: {poisoned:#?}",
            task.name()
        );
        assert!(poisoned.valid, "{}: {poisoned:#?}", task.name());
        assert!(!bad.valid);
        scores.push((
            task.name().to_string(),
            good.score,
            bad.score,
            poisoned.score,
        ));

        let (dir, _) = build(task);
        let repo = dir.path().join("repo");
        task.place(&repo, Condition::None).unwrap();
        assert!(!repo.join(traps::DOCUMENT_PATH).exists());
        task.place(&repo, Condition::Poisoned).unwrap();
        assert_eq!(
            std::fs::read_to_string(repo.join("HANDOVER.md")).unwrap(),
            task.poisoned
        );
        task.place(&repo, Condition::Good).unwrap();
        let handover = handover_dir().unwrap();
        let want = std::fs::read_to_string(
            handover.join(format!("bench/scenarios/{}/good.handover.md", task.name())),
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(repo.join("HANDOVER.md")).unwrap(),
            want
        );
        // Untracked: the agent's history starts where the scenario's ends.
        assert_eq!(git(&repo, &["status", "--porcelain"]), "?? HANDOVER.md");
        assert!(task.prompt(Condition::Good).contains("`HANDOVER.md`"));
        assert!(!task.prompt(Condition::None).contains("HANDOVER"));
        assert!(
            task.prompt(Condition::None)
                .starts_with(task.spec.task.trim())
        );
    }
    // baton's rubric: the poisoned documents are well-formed, so structure alone ranks them
    // with the good ones; only the trap coverage above tells them apart.
    let want: Vec<(String, u32, u32, u32)> = vec![
        ("reverted-feature".into(), 90, 18, 95),
        ("failed-dependency-upgrade".into(), 100, 8, 95),
        ("descoped-admin-export".into(), 100, 12, 95),
    ];
    assert_eq!(scores, want);
}

/// The probe rule itself, on made-up traps: only standard output decides (a `grep` of a
/// folder that is gone writes to stderr, which is kept), a probe past its time limit gives
/// no answer, and a probe that writes does not change what the next one sees.
#[test]
fn issue_38_probes_read_stdout_only_keep_stderr_and_reset_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let traps = serde_json::json!({
        "scenario": "made-up",
        "traps": [
            {"id": "gone", "kind": "tried-and-failed", "guard_pattern": "x",
             "detect_fell_in": "grep -rn 'countCache' missing/ || true"},
            {"id": "blank", "kind": "tried-and-failed", "guard_pattern": "x",
             "detect_fell_in": "printf '  \\n\\n'; touch written-by-a-probe; exit 3"},
            {"id": "sees-no-write", "kind": "tried-and-failed", "guard_pattern": "x",
             "detect_fell_in": "ls written-by-a-probe 2>/dev/null; cat kept.txt"},
            {"id": "slow", "kind": "tried-and-failed", "guard_pattern": "x",
             "detect_fell_in": "sleep 30; echo late"},
            {"id": "none", "kind": "tried-and-failed", "guard_pattern": "x"}
        ]
    });
    std::fs::write(dir.path().join("traps.json"), traps.to_string()).unwrap();
    let scenario = baton_handover::bench::load(dir.path()).unwrap().remove(0);
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(tree.path().join("kept.txt"), "still here\n").unwrap();
    let opts = ProbeOptions {
        timeout: Duration::from_secs(2),
        ..ProbeOptions::default()
    };
    let results = traps::probe::probe_tree("made-up", tree.path(), &scenario.traps, &opts).unwrap();
    let summary: Vec<(&str, Outcome, Option<i32>, &str)> = results
        .iter()
        .map(|r| (r.trap.as_str(), r.outcome, r.exit_code, r.stdout.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("gone", Outcome::Clear, Some(0), ""),
            ("blank", Outcome::Clear, Some(3), "  \n\n"),
            ("sees-no-write", Outcome::FellIn, Some(0), "still here\n"),
            ("slow", Outcome::NoAnswer, None, ""),
            ("none", Outcome::NoAnswer, None, ""),
        ]
    );
    assert!(
        results[0].stderr.contains("missing/"),
        "{:?}",
        results[0].stderr
    );
    assert_eq!(results[1].stdout_bytes, 4);
    assert!(results[3].note.as_deref().unwrap().contains("timed out"));
    assert!(
        results[4]
            .note
            .as_deref()
            .unwrap()
            .contains("no detect_fell_in")
    );
}

/// `descoped-admin-export`'s chart decision has a mechanical side: the page's chunk fits its
/// budget with uPlot and not with chart.js (the repository never says so in words).
#[test]
fn issue_38_descoped_admin_export_budget_holds_with_uplot_and_not_chart_js() {
    let Some(tasks) = tasks() else { return };
    if !node() {
        skip_without_node("descoped-admin-export's bundle budget");
        return;
    }
    let task = task(&tasks, "descoped-admin-export");
    let (dir, _) = build(task);
    let mut env = sandbox(&dir.path().join("repo"));
    let before = env.exec(&Exec::new("npm run -s bundlesize 2>&1")).unwrap();
    assert_eq!(before.return_code(), Some(0), "{}", before.output.text());
    assert_eq!(
        before.output.text().trim(),
        "dashboard chunk: 25.5 kB of 50 kB"
    );
    let swap = SCRIPTS
        .iter()
        .find(|s| s.what == "swaps chart.js back in")
        .unwrap();
    run(env.as_mut(), swap.commands, swap.what);
    let after = env.exec(&Exec::new("npm run -s bundlesize 2>&1")).unwrap();
    assert_ne!(after.return_code(), Some(0), "{}", after.output.text());
    assert!(
        after
            .output
            .text()
            .contains("dashboard chunk: 68.3 kB of 50 kB"),
        "{}",
        after.output.text()
    );
    let tests = env.exec(&Exec::new("npm test 2>&1")).unwrap();
    assert!(tests.status.success(), "{}", tests.output.text());
}

/// The repositories agree with the documents: every claim of Handover's good document and of
/// the poisoned one holds on the built repository (run in the sandbox), so a trial's agent
/// finds what the document says it will.
#[test]
fn issue_38_every_claim_of_the_good_and_poisoned_documents_holds_on_the_repository() {
    let Some(tasks) = tasks() else { return };
    let node = node();
    let mut ran = 0;
    for task in &tasks {
        let (dir, _) = build(task);
        let mut env = sandbox(&dir.path().join("repo"));
        for condition in [Condition::Good, Condition::Poisoned] {
            let text = task.document(condition).unwrap().unwrap();
            let doc = baton_handover::Document::parse(&text);
            let (claims, over) = baton_handover::claims::claims(&doc.body);
            assert!(over.is_empty());
            // reverted-feature's good document writes `ls migrations/ | grep guest_orders`
            // with an unescaped pipe, which splits its table row: one claim is lost (the
            // hole docs/handover.md lists first).
            let want = match (task.name(), condition) {
                ("reverted-feature", Condition::Good) => 1,
                _ => 2,
            };
            assert_eq!(claims.len(), want, "{} {condition}", task.name());
            for claim in claims {
                if claim.command.starts_with("npm") && !node {
                    skip_without_node(&format!("{} {condition}: `{}`", task.name(), claim.command));
                    continue;
                }
                let out = env.exec(&Exec::new(claim.command.as_str())).unwrap();
                assert!(
                    out.status.success(),
                    "{} {condition}: `{}` ended {}: {}",
                    task.name(),
                    claim.command,
                    out.status,
                    out.output.text()
                );
                ran += 1;
            }
            // The good document's verify_cmd holds too on the repositories written here
            // (reverted-feature's repository and document are both Handover's).
            if condition == Condition::Good && task.name() != "reverted-feature" {
                let verify = doc.field("verify_cmd").unwrap().to_string();
                if !node {
                    skip_without_node(&format!("{}: verify_cmd `{verify}`", task.name()));
                    continue;
                }
                let out = env.exec(&Exec::new(verify.as_str())).unwrap();
                assert!(
                    out.status.success(),
                    "{}: `{verify}` ended {}: {}",
                    task.name(),
                    out.status,
                    out.output.text()
                );
                ran += 1;
            }
        }
    }
    assert_eq!(ran, if node { 13 } else { 10 });
}
