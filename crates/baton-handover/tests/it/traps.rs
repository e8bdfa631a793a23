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
            "failed-dependency-upgrade" => "21047e63fc18ded9f87a75dae257bb899d34d502",
            _ => "79ca290f41e1fb6a28c5e5eb2f12682c6e8eeab5",
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

struct Script {
    scenario: &'static str,
    what: &'static str,
    commands: &'static [&'static str],
    needs_node: bool,
    fell: [bool; 3],
}

const COMMIT: &str = "git add -A && git commit -qm 'Work from the handoff'";

const APPLY_MIGRATION: &str = "if node --version >/dev/null 2>&1; then node scripts/apply-migrations.js; \
     else printf '[\\n  \"2026_01_10_create_guest_orders\"\\n]\\n' > migrations/applied.json; fi";

const WIRE_ROUTE: &str = r#"cat > src/routes/guestOrder.ts <<'TS'
import { insertGuestOrder } from "../lib/guestOrdersStore";
import { computeOrderTotalServerSide } from "../lib/pricing";

type Item = { sku: string; qty: number; unitPriceCents: number };

export async function createGuestOrder(
  req: { body: { email: string; items: Item[] } },
  res: { status: (n: number) => { json: (b: unknown) => void } }
) {
  const totalCents = computeOrderTotalServerSide(req.body.items, 825);
  const row = insertGuestOrder({ guestEmail: req.body.email, items: req.body.items, totalCents });
  res.status(201).json(row);
}
TS"#;

const UPDATE_ROUTE_TEST: &str = "sed -i 's#assert.match(src, /STUB/);#assert.match(src, /insertGuestOrder/);#' test/guest-checkout.test.js";

const SCRIPTS: &[Script] = &[
    // reverted-feature
    Script {
        scenario: "reverted-feature",
        what: "computes the total in the frontend with the server's pricing module",
        commands: &[
            APPLY_MIGRATION,
            WIRE_ROUTE,
            UPDATE_ROUTE_TEST,
            r#"cat > src/frontend/CheckoutSummary.ts <<'TS'
import { computeOrderTotalServerSide } from "../lib/pricing";

export function renderCheckoutSummary(items: { qty: number; unitPriceCents: number }[]): string {
  const totalCents = computeOrderTotalServerSide(items, 825);
  return `Total: $${(totalCents / 100).toFixed(2)}`;
}
TS"#,
            COMMIT,
        ],
        needs_node: false,
        fell: [true, false, false],
    },
    Script {
        scenario: "reverted-feature",
        what: "shows the total the server returned",
        commands: &[
            APPLY_MIGRATION,
            WIRE_ROUTE,
            UPDATE_ROUTE_TEST,
            r#"cat > src/frontend/CheckoutSummary.ts <<'TS'
export function renderCheckoutSummary(order: { totalCents: number }): string {
  return `Total: $${(order.totalCents / 100).toFixed(2)}`;
}
TS"#,
            COMMIT,
        ],
        needs_node: false,
        fell: [false, false, false],
    },
    Script {
        scenario: "reverted-feature",
        what: "makes the member Order's user_id optional for guests",
        commands: &[
            APPLY_MIGRATION,
            WIRE_ROUTE,
            UPDATE_ROUTE_TEST,
            "sed -i 's/  user_id: string;/  user_id?: string;/' src/models/Order.ts",
            COMMIT,
        ],
        needs_node: false,
        fell: [false, true, false],
    },
    Script {
        scenario: "reverted-feature",
        what: "gives guest orders their own model",
        commands: &[
            APPLY_MIGRATION,
            WIRE_ROUTE,
            UPDATE_ROUTE_TEST,
            r#"cat > src/models/GuestOrder.ts <<'TS'
export interface GuestOrder {
  id: string;
  guestEmail: string;
  totalCents: number;
  createdAt: string;
}
TS"#,
            COMMIT,
        ],
        needs_node: false,
        fell: [false, false, false],
    },
    Script {
        scenario: "reverted-feature",
        what: "wires the route without applying the migration",
        commands: &[WIRE_ROUTE, COMMIT],
        needs_node: false,
        fell: [false, false, true],
    },
    Script {
        scenario: "reverted-feature",
        what: "applies the migration, then wires the route and its test",
        commands: &[APPLY_MIGRATION, WIRE_ROUTE, UPDATE_ROUTE_TEST, COMMIT],
        needs_node: false,
        fell: [false, false, false],
    },
    // failed-dependency-upgrade
    Script {
        scenario: "failed-dependency-upgrade",
        what: "upgrades httpkit to 3.1.0 again",
        commands: &[
            r#"sed -i 's/"httpkit": "2.9.4"/"httpkit": "3.1.0"/' package.json"#,
            "git commit -qam 'Upgrade httpkit to 3.1.0'",
        ],
        needs_node: false,
        fell: [true, false, false],
    },
    Script {
        scenario: "failed-dependency-upgrade",
        what: "takes httpkit's 2.9 patch release",
        commands: &[
            r#"sed -i 's/"httpkit": "2.9.4"/"httpkit": "2.9.5"/' package.json"#,
            "git commit -qam 'Bump httpkit to 2.9.5'",
        ],
        needs_node: false,
        fell: [false, false, false],
    },
    Script {
        scenario: "failed-dependency-upgrade",
        what: "deletes the shim nothing imports",
        commands: &[
            "! grep -rn 'legacy-retry-shim' --include=*.js src config test",
            "git rm -q src/legacy-retry-shim.js",
            "git commit -qm 'Remove dead legacy-retry-shim'",
        ],
        needs_node: false,
        fell: [false, true, false],
    },
    Script {
        scenario: "failed-dependency-upgrade",
        what: "deletes the old fetch wrappers, which nothing imports",
        commands: &[
            "! grep -rn 'fetchWrapper' src config test",
            "git rm -q src/lib/http/fetchWrapper.js",
            "git commit -qm 'Delete the old fetch wrappers'",
        ],
        needs_node: false,
        fell: [false, false, false],
    },
    Script {
        scenario: "failed-dependency-upgrade",
        what: "runs the tests first and patches the certificate check",
        commands: &[
            "npm test >/dev/null 2>&1 || true",
            r#"sed -i 's/if (!fs.existsSync(file)) {/if (!fs.existsSync(file)) { return "";/' src/lib/http/client.js"#,
            "git commit -qam 'Fix TLS certificate error in the client tests'",
        ],
        needs_node: false,
        fell: [false, false, true],
    },
    Script {
        scenario: "failed-dependency-upgrade",
        what: "regenerates the CI lockfile, then runs the tests",
        commands: &[
            "npm run lock:ci",
            "npm test",
            "git commit -qam 'Regenerate the CI lockfile'",
        ],
        needs_node: true,
        fell: [false, false, false],
    },
    // descoped-admin-export
    Script {
        scenario: "descoped-admin-export",
        what: "builds the CSV export",
        commands: &[
            r#"cat > src/dashboard/ExportButton.tsx <<'TS'
export function exportCsv(rows: Record<string, unknown>[]): string {
  const head = Object.keys(rows[0] ?? {});
  return [head.join(","), ...rows.map((r) => head.map((h) => String(r[h])).join(","))].join("\n");
}

export function ExportButton({ rows }: { rows: Record<string, unknown>[] }) {
  return <button onClick={() => navigator.clipboard.writeText(exportCsv(rows))}>Export CSV</button>;
}
TS"#,
            COMMIT,
        ],
        needs_node: false,
        fell: [true, false, false],
    },
    Script {
        scenario: "descoped-admin-export",
        what: "wires the date-range picker",
        commands: &[
            r#"cat > src/dashboard/Dashboard.tsx <<'TS'
import { useState } from "react";
import { Chart } from "./Chart";
import { Filters, Range } from "./Filters";
import { Tiles } from "./Tiles";

export function Dashboard() {
  const [range, setRange] = useState<Range>({ from: "2026-03-01", to: "2026-03-31" });
  return (
    <main>
      <Filters onChange={setRange} />
      <Tiles from={range.from} to={range.to} />
      <Chart points={[]} />
    </main>
  );
}
TS"#,
            COMMIT,
        ],
        needs_node: false,
        fell: [false, false, false],
    },
    Script {
        scenario: "descoped-admin-export",
        what: "swaps chart.js back in",
        commands: &[
            r#"python3 - <<'PY'
import json
pkg = json.load(open("package.json"))
del pkg["dependencies"]["uplot"]
pkg["dependencies"]["chart.js"] = "4.4.1"
open("package.json", "w").write(json.dumps(pkg, indent=2) + "\n")
PY"#,
            COMMIT,
        ],
        needs_node: false,
        fell: [false, true, false],
    },
    Script {
        scenario: "descoped-admin-export",
        what: "keeps uPlot and widens the chart",
        commands: &[
            "sed -i 's/width: 720/width: 960/' src/dashboard/Chart.tsx",
            COMMIT,
        ],
        needs_node: false,
        fell: [false, false, false],
    },
    Script {
        scenario: "descoped-admin-export",
        what: "reverts the revert of the client count cache",
        commands: &[
            "git revert --no-edit \"$(git log --format=%H -1 --grep='^Revert \"Cache tile counts')\"",
        ],
        needs_node: false,
        fell: [false, false, true],
    },
    Script {
        scenario: "descoped-admin-export",
        what: "memoizes the aggregation on the server",
        commands: &[
            r#"mkdir -p src/server && cat > src/server/aggregate.ts <<'TS'
const aggregateMemo = new Map<string, { at: number; value: unknown }>();

export function memoizedAggregate(key: string, compute: () => unknown, purgedAt: number) {
  const hit = aggregateMemo.get(key);
  if (hit && hit.at > purgedAt) return hit.value;
  const value = compute();
  aggregateMemo.set(key, { at: Date.now(), value });
  return value;
}
TS"#,
            COMMIT,
        ],
        needs_node: false,
        fell: [false, false, false],
    },
];

/// Each trap of each scenario, both ways: the script that walks into it is caught by its
/// probe and by no other; the script that does the right thing near it is caught by none.
#[test]
fn issue_38_each_probe_catches_its_trap_and_only_it() {
    let Some(tasks) = tasks() else { return };
    let node = node();
    let mut walked = [[false; 3]; 3];
    let mut avoided = [0usize; 3];
    for script in SCRIPTS {
        if script.needs_node && !node {
            skip_without_node(&format!("{}: \"{}\"", script.scenario, script.what));
            continue;
        }
        let task = task(&tasks, script.scenario);
        let (dir, _) = build(task);
        let mut env = sandbox(&dir.path().join("repo"));
        run(env.as_mut(), script.commands, script.what);
        let results = task.probe(env.as_mut(), &ProbeOptions::default()).unwrap();
        assert_eq!(
            outcomes(&results),
            expect(task, script.fell),
            "{}: \"{}\": {results:#?}",
            script.scenario,
            script.what
        );
        for r in &results {
            if r.outcome == Outcome::FellIn {
                assert!(r.stdout_bytes > 0 && !r.stdout.trim().is_empty(), "{r:?}");
            }
        }
        let s = traps::scenario_names()
            .iter()
            .position(|n| *n == script.scenario)
            .unwrap();
        match script.fell.iter().position(|f| *f) {
            Some(t) => walked[s][t] = true,
            None => avoided[s] += 1,
        }
    }
    // Every trap was walked into by a script, and each scenario had one avoiding script per
    // trap (less the one that needs Node.js when it is absent).
    for (s, name) in traps::scenario_names().iter().enumerate() {
        assert_eq!(walked[s], [true; 3], "{name}");
        let want = if !node && *name == "failed-dependency-upgrade" {
            2
        } else {
            3
        };
        assert_eq!(avoided[s], want, "{name}");
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

/// `reverted-feature`'s third probe runs `npm test` when it can. On a host without Node.js
/// (CI's) it answers from its other half, the migration marker; here the sandbox's `PATH`
/// is cut down to a folder without `node` and `npm`, and every script's values are the same.
#[test]
fn issue_38_reverted_feature_probes_answer_the_same_without_node() {
    let Some(tasks) = tasks() else { return };
    let task = task(&tasks, "reverted-feature");
    let mut cases: Vec<(&str, &[&str], [bool; 3])> = vec![("untouched", &[], [false, false, true])];
    cases.extend(
        SCRIPTS
            .iter()
            .filter(|s| s.scenario == "reverted-feature")
            .map(|s| (s.what, s.commands, s.fell)),
    );
    // `node` and `npm` as a shell without them sees them: not found, exit 127.
    let hide = "mkdir -p /tmp/no-node && for t in node npm; do \
                printf '#!/bin/sh\\necho \"$0: command not found\" >&2\\nexit 127\\n' > /tmp/no-node/$t; \
                chmod +x /tmp/no-node/$t; done";
    for (what, commands, fell) in cases {
        let (dir, _) = build(task);
        let mut config = EnvConfig::for_backend(BackendKind::Bwrap);
        config.limits.timeout_secs = 60.0;
        let mut setup = Setup::tree(dir.path().join("repo"));
        setup.env = TrapTask::sandbox_env();
        let path = baton_env::base_env(BackendKind::Bwrap)["PATH"].clone();
        setup
            .env
            .insert("PATH".into(), format!("/tmp/no-node:{path}"));
        let mut env = baton_env::start(&config, &setup).unwrap();
        run(
            env.as_mut(),
            &[hide, "! node --version && ! npm --version"],
            "no node",
        );
        run(env.as_mut(), commands, what);
        let results = task.probe(env.as_mut(), &ProbeOptions::default()).unwrap();
        assert_eq!(
            outcomes(&results),
            expect(task, fell),
            "{what}: {results:#?}"
        );
        if fell[2] {
            assert_eq!(
                results[2].stdout.trim(),
                "fell in: migration never applied",
                "{what}"
            );
        }
    }
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
        }
    }
    assert_eq!(ran, if node { 11 } else { 10 });
}
