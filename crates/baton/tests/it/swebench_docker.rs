//! SWE-bench against a real Docker engine (`.ci/docker-engine` starts one and builds its
//! base image; `.ci/python-env swebench` installs the pinned harness): two instances in
//! SWE-bench's format, each in an image built here with its repository at `/testbed`,
//! exported to Parquet as the Hub serves Verified. The simulated agents work them in
//! containers (`backend = "docker"`), handoffs carry the tree from one container to the
//! next, and `baton swebench eval` scores every stored patch with swebench 5.0.2's own
//! harness. Each verdict is checked against an oracle that applies the patch and the test
//! patch in a fresh container of the instance's image and runs the tests named
//! `FAIL_TO_PASS` and `PASS_TO_PASS` with pytest.
//!
//! Without an engine (`BATON_CI_DOCKER_HOST` or the harness venv unset) the test prints a
//! `SKIPPED:` line and passes; an engine named but not working fails it.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use rusqlite::Connection;

use crate::{stderr, stdout};

/// What `.ci/docker-engine` and `.ci/python-env swebench` provide.
struct Engine {
    host: String,
    base: String,
    client: PathBuf,
    python: PathBuf,
}

fn engine() -> Option<Engine> {
    const WHAT: &str = "the real-Docker SWE-bench test";
    let e = baton_fixture::docker_engine(WHAT)?;
    let Some(python) = std::env::var_os("BATON_CI_SWEBENCH_PYTHON").filter(|p| !p.is_empty())
    else {
        let line = format!(
            "\nSKIPPED: no harness (BATON_CI_SWEBENCH_PYTHON: .ci/python-env swebench); {WHAT} did not run\n"
        );
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
        return None;
    };
    Some(Engine {
        host: e.host,
        base: e.base,
        client: e.client,
        python: python.into(),
    })
}

impl Engine {
    fn command(&self) -> Command {
        let mut c = Command::new(&self.client);
        c.env("DOCKER_HOST", &self.host).env("DOCKER_BUILDKIT", "0");
        c
    }

    fn docker(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .expect("the docker client runs")
    }

    /// `docker run --rm` in `image` with `env`, standard output and the exit status.
    fn run(&self, image: &str, env: &[(&str, &str)], script: &str) -> (bool, String) {
        let mut c = self.command();
        c.args(["run", "--rm", "--network", "none"]);
        for (k, v) in env {
            c.args(["-e", &format!("{k}={v}")]);
        }
        let out = c
            .args([image, "bash", "-c", script])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.success(),
            format!("{}{}", stdout(&out), stderr(&out)),
        )
    }
}

/// One instance: its repository before the fix, the gold patch, the test patch, and
/// the tests the fix must make pass and keep passing.
struct Instance {
    id: &'static str,
    file: &'static str,
    before: &'static str,
    gold: &'static str,
    test_file: &'static str,
    test_patch: &'static str,
    fail_to_pass: &'static str,
    pass_to_pass: &'static str,
}

const INSTANCES: [Instance; 2] = [
    Instance {
        id: "demo__calc-1",
        file: "calc.py",
        before: "def add(a, b):\n    return a * b\n\n\ndef sub(a, b):\n    return a - b\n",
        gold: "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,5 +1,5 @@\n def add(a, b):\n-    return a * b\n+    return a + b\n \n \n def sub(a, b):\n",
        test_file: "tests/test_calc.py",
        test_patch: "diff --git a/tests/test_calc.py b/tests/test_calc.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_calc.py\n@@ -0,0 +1,9 @@\n+from calc import add, sub\n+\n+\n+def test_add():\n+    assert add(2, 3) == 5\n+\n+\n+def test_sub():\n+    assert sub(2, 3) == -1\n",
        fail_to_pass: "tests/test_calc.py::test_add",
        pass_to_pass: "tests/test_calc.py::test_sub",
    },
    Instance {
        id: "demo__small-2",
        file: "small.py",
        before: "def is_small(x):\n    return x < 9\n",
        gold: "diff --git a/small.py b/small.py\n--- a/small.py\n+++ b/small.py\n@@ -1,2 +1,2 @@\n def is_small(x):\n-    return x < 9\n+    return x <= 10\n",
        test_file: "tests/test_small.py",
        test_patch: "diff --git a/tests/test_small.py b/tests/test_small.py\nnew file mode 100644\n--- /dev/null\n+++ b/tests/test_small.py\n@@ -0,0 +1,9 @@\n+from small import is_small\n+\n+\n+def test_ten():\n+    assert is_small(10)\n+\n+\n+def test_eleven():\n+    assert not is_small(11)\n",
        fail_to_pass: "tests/test_small.py::test_ten",
        pass_to_pass: "tests/test_small.py::test_eleven",
    },
];

impl Instance {
    fn image(&self) -> String {
        format!(
            "baton-ci/sweb.eval.{}:latest",
            self.id.replace("__", "_1776_")
        )
    }

    /// SWE-bench's eval script shape: apply the test patch, run the tests between the
    /// markers (`set -x` echoes them into the log), restore the test files.
    fn eval_script(&self, base_commit: &str) -> String {
        format!(
            "#!/bin/bash\nset -uxo pipefail\ncd /testbed\ngit apply -v - <<'EOF_114329324912'\n{}EOF_114329324912\n: '>>>>> Start Test Output'\npython3 -m pytest -rA -p no:cacheprovider {}\n: '>>>>> End Test Output'\ngit checkout {base_commit} -- . && git clean -fdq tests\n",
            self.test_patch, self.test_file
        )
    }

    /// Build the image: the base with the repository committed at `/testbed`; its commit.
    fn build(&self, e: &Engine, dir: &Path) -> String {
        let ctx = dir.join(format!("ctx-{}", self.id));
        std::fs::create_dir_all(ctx.join("repo/tests")).unwrap();
        std::fs::write(ctx.join("repo").join(self.file), self.before).unwrap();
        std::fs::write(ctx.join("repo/tests/__init__.py"), "").unwrap();
        std::fs::write(
            ctx.join("Dockerfile"),
            format!(
                "FROM {}\nCOPY repo /testbed\nWORKDIR /testbed\nRUN git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm base\n",
                e.base
            ),
        )
        .unwrap();
        let image = self.image();
        let out = e.docker(&[
            "build",
            "--network",
            "none",
            "-q",
            "-t",
            &image,
            ctx.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "docker build {image}: {}",
            stderr(&out)
        );
        let (ok, head) = e.run(&image, &[], "git rev-parse HEAD");
        assert!(ok, "{head}");
        head.trim().to_string()
    }

    fn row(&self, base_commit: &str) -> serde_json::Value {
        serde_json::json!({
            "repo": format!("demo/{}", self.file.trim_end_matches(".py")),
            "instance_id": self.id,
            "base_commit": base_commit,
            "patch": self.gold,
            "test_patch": self.test_patch,
            "problem_statement": format!("{} is wrong: its tests in {} fail.", self.file, self.test_file),
            "hints_text": "",
            "created_at": "2024-01-01T00:00:00Z",
            "version": "1.0",
            "FAIL_TO_PASS": serde_json::to_string(&[self.fail_to_pass]).unwrap(),
            "PASS_TO_PASS": serde_json::to_string(&[self.pass_to_pass]).unwrap(),
            "environment_setup_commit": base_commit,
            "difficulty": "<15 min fix",
            "image": self.image(),
            "eval_script": self.eval_script(base_commit),
            "log_parser": "parse_log_pytest",
            "eval_type": "pass_and_fail",
        })
    }

    /// The oracle: does `patch` resolve the instance? Applied with `git apply` in a fresh
    /// container, then the test patch, then pytest on the two tests.
    fn resolved_by(&self, e: &Engine, patch: &str) -> bool {
        if patch.trim().is_empty() {
            return false;
        }
        let (ok, _log) = e.run(
            &self.image(),
            &[("PATCH", patch), ("TESTS", self.test_patch)],
            &format!(
                "printf '%s' \"$PATCH\" > /tmp/p && printf '%s' \"$TESTS\" > /tmp/t && git apply /tmp/p && git apply /tmp/t && python3 -m pytest -q -p no:cacheprovider {} {}",
                self.fail_to_pass, self.pass_to_pass
            ),
        );
        ok
    }
}

fn experiment() -> String {
    r#"
kind = "agent"
name = "swe-docker"
dataset = "verified.parquet"
replicates = 1
seed = 11
interfaces = ["raw"]

[agent]
step_limit = 20

[environment]
backend = "docker"

[models.lc]
model = "sim/lc"
[models.lc.sim]  # every edit of its own wrong: an operator of the fix flipped
skill = 0.0
[models.hc]
model = "sim/hc"

[[pairs]]
low = "lc"
high = "hc"

[handoff]
percentiles = [50]
"#
    .to_string()
}

#[test]
fn a_swebench_run_in_real_containers_is_scored_by_the_official_harness() {
    let Some(e) = engine() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();

    let rows: Vec<serde_json::Value> = INSTANCES
        .iter()
        .map(|i| {
            let base = i.build(&e, root);
            i.row(&base)
        })
        .collect();
    let jsonl: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(root.join("verified.jsonl"), jsonl).unwrap();
    let out = Command::new(&e.python)
        .args([
            "-c",
            "import datasets; datasets.Dataset.from_json('verified.jsonl').to_parquet('verified.parquet')",
        ])
        .current_dir(root)
        .env("HF_HUB_OFFLINE", "1")
        .env("HF_DATASETS_CACHE", root.join("hf-cache"))
        .output()
        .unwrap();
    assert!(out.status.success(), "to_parquet: {}", stderr(&out));

    let baton = |args: &[&str]| -> Output {
        let path = format!(
            "{}:{}",
            e.client.parent().unwrap().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(args)
            .current_dir(root)
            .env_remove("BATON_LOG")
            .env("BATON_DOCKER", &e.client)
            .env("DOCKER_HOST", &e.host)
            .env("PATH", path)
            .env("HF_HUB_OFFLINE", "1")
            .env("HF_DATASETS_CACHE", root.join("hf-cache"))
            .output()
            .expect("baton runs")
    };
    let out = baton(&["data", "swebench", "verified.parquet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("harness: every instance has image"),
        "{}",
        stdout(&out)
    );

    std::fs::write(root.join("exp.toml"), experiment()).unwrap();
    let out = baton(&["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = root.join("out/results.sqlite");
    let finished = episodes(&db);
    let cells: BTreeSet<&str> = finished.iter().map(|ep| ep.cell.as_str()).collect();
    assert_eq!(cells.len(), 4, "2 anchors and 2 handoff cells: {cells:?}");
    assert_eq!(finished.len(), 8, "4 cells x 2 instances");
    for ep in &finished {
        assert_eq!(ep.status, "unscored", "{ep:?}");
    }
    // no container of this run outlives its episode (other tests on the same engine may
    // have containers of their own up meanwhile)
    let run = format!(
        "label={}={}",
        baton_env::RUN_LABEL,
        baton_env::run_label(&root.join("out"))
    );
    let out = e.docker(&["ps", "-aq", "--filter", &run]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "", "containers left behind");

    let python = e.python.to_str().unwrap();
    let eval = ["swebench", "eval", "out", "--python", python];
    let out = baton(&[&eval[..], &["--max-workers", "2"]].concat());
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("episodes newly scored 8"), "{text}");

    // every episode scored, each verdict the oracle's
    let scored = episodes(&db);
    let mut resolved = 0;
    let mut oracle_runs = std::collections::BTreeMap::new();
    for ep in &scored {
        assert_eq!(ep.status, "scored", "{ep:?}");
        assert!(ep.reason.is_none(), "{ep:?}");
        let instance = INSTANCES.iter().find(|i| i.id == ep.task).unwrap();
        let patch = ep.patch.clone().unwrap_or_default();
        let want = *oracle_runs
            .entry((ep.task.clone(), patch.clone()))
            .or_insert_with(|| instance.resolved_by(&e, &patch));
        assert_eq!(ep.correct, Some(want), "{ep:?}");
        resolved += usize::from(want);
    }
    let line = format!(
        "\nswebench on Docker: {} episodes, {resolved} resolved, {} distinct (instance, patch) pairs judged, the oracle agreeing on each\n",
        scored.len(),
        oracle_runs.len()
    );
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    assert!(
        resolved > 0,
        "no episode resolved: the harness path was not exercised"
    );
    assert!(
        oracle_runs
            .iter()
            .any(|((_, patch), resolved)| !patch.trim().is_empty() && !resolved),
        "no wrong patch was judged: {scored:#?}"
    );

    // the report counts them; a second eval judges nothing new
    let out = baton(&["report", "out", "--format", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows = report["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["unscored"] == 0), "{report}");
    let anchors_resolved = scored
        .iter()
        .filter(|ep| ep.cell.starts_with("single(") && ep.correct == Some(true))
        .count() as u64;
    let reported: u64 = rows
        .iter()
        .filter(|r| r["bucket"] == "all")
        .map(|r| r["resolved"].as_u64().unwrap())
        .sum();
    assert_eq!(reported, anchors_resolved, "{report}");
    let out = baton(&eval);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("nothing new to evaluate"),
        "{}",
        stdout(&out)
    );

    for i in &INSTANCES {
        let _ = e.docker(&["rmi", "-f", &i.image()]);
    }
}

#[derive(Debug)]
struct Episode {
    cell: String,
    task: String,
    status: String,
    patch: Option<String>,
    correct: Option<bool>,
    reason: Option<String>,
}

fn episodes(db: &Path) -> Vec<Episode> {
    let c = Connection::open(db).unwrap();
    let mut s = c
        .prepare(
            "SELECT cell_key, task_id, status, final_response, is_correct, reason FROM episodes
             ORDER BY cell_key, replicate, task_id",
        )
        .unwrap();
    s.query_map([], |r| {
        Ok(Episode {
            cell: r.get(0)?,
            task: r.get(1)?,
            status: r.get(2)?,
            patch: r.get(3)?,
            correct: r.get(4)?,
            reason: r.get(5)?,
        })
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}
