//! Scripted agents: for each trap of each scenario, a fixed list of shell commands that walks
//! into it and one that does the right thing near it, run in the real sandbox on a fresh copy
//! of the repository, then every probe of the scenario on the tree they left.

use baton_env::{BackendKind, EnvConfig, Setup};
use baton_handover::traps::{self, Outcome, ProbeOptions, TrapTask};

use super::{build, expect, node, outcomes, run, sandbox, skip_without_node, task, tasks};

pub(super) struct Script {
    scenario: &'static str,
    pub(super) what: &'static str,
    pub(super) commands: &'static [&'static str],
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

pub(super) const SCRIPTS: &[Script] = &[
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
