//! SWE-bench with Docker through the binary: an agent run that needs Docker stops before
//! any call when the daemon is not there; `baton swebench eval` judges a real run's
//! stored patches (made in the docker backend, through baton-env's shim client, by the
//! simulated agents on two synthetic instances) with a stand-in harness Python that
//! writes `report.json` in swebench 5.0.2's layout, stores the verdicts for
//! `baton report`, and judges nothing twice.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rusqlite::Connection;

use crate::env::sandbox_works;
use crate::{stderr, stdout};

/// The repository of the synthetic instances, as the shim's image folder.
const CALC: &str = "def add(a, b):\n    return a + b\n\n\ndef is_small(x):\n    return x <= 10\n";

/// The reference of instance 1 holds the word the stand-in harness resolves (FIX); that
/// of instance 2 does not, so it is never resolved.
const GOLD_1: &str = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n+    assert a == a  # FIX\n     return a + b\n";
const GOLD_2: &str = "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -5,2 +5,2 @@\n def is_small(x):\n-    return x <= 10\n+    return x < 10\n";

fn instance(id: &str, gold: &str) -> serde_json::Value {
    serde_json::json!({
        "instance_id": id,
        "repo": "demo/calc",
        "base_commit": "0".repeat(40),
        "problem_statement": format!("Issue {id}: calc.py needs a change."),
        "patch": gold,
        "test_patch": "",
        "FAIL_TO_PASS": "[\"tests/test_calc.py::test_it\"]",
        "PASS_TO_PASS": "[]",
        "difficulty": "<15 min fix",
        "image_name": "calc",
    })
}

struct Lab {
    dir: tempfile::TempDir,
}

impl Lab {
    fn new() -> Lab {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let root = dir.path();
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        std::fs::copy(
            fixtures.join("baton-env/tests/fixtures/docker-shim"),
            root.join("docker"),
        )
        .unwrap();
        std::fs::create_dir_all(root.join("images/calc")).unwrap();
        std::fs::write(root.join("images/calc/calc.py"), CALC).unwrap();
        std::fs::create_dir_all(root.join("py")).unwrap();
        std::fs::copy(
            fixtures.join("baton-agent/tests/fixtures/fake-swebench-python"),
            root.join("py/python"),
        )
        .unwrap();
        let down = root.join("docker-down");
        std::fs::write(
            &down,
            "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 1\n",
        )
        .unwrap();
        std::fs::set_permissions(&down, std::fs::Permissions::from_mode(0o755)).unwrap();
        let rows = [
            instance("demo__calc-1", GOLD_1),
            instance("demo__calc-2", GOLD_2),
        ];
        let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
        std::fs::write(root.join("verified.jsonl"), text).unwrap();
        Lab { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// `baton ARGS` with `BATON_DOCKER` set to `docker` (a file of the lab, or a path).
    fn baton(&self, docker: &Path, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(args)
            .current_dir(self.dir.path())
            .env_remove("BATON_LOG")
            .env("BATON_DOCKER", docker)
            .output()
            .expect("baton runs")
    }

    fn harness_calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("py/calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

fn experiment(extra: &str) -> String {
    format!(
        r#"
kind = "agent"
name = "swe"
dataset = "verified.jsonl"
replicates = 2
seed = 5
step_limit = 20
{extra}
[environment]
backend = "docker"

[models.lc]
model = "sim/lc"
[models.hc]
model = "sim/hc"

[handoff]
pairs = [["lc", "hc"]]
percentiles = [50]
interfaces = ["raw"]
"#
    )
}

#[test]
fn an_agent_run_that_needs_docker_stops_before_any_call_without_it() {
    let lab = Lab::new();
    let server = crate::support::SimServer::start(&[]);
    let http = format!(
        r#"
kind = "agent"
name = "swe-http"
dataset = "verified.jsonl"
{{extra}}
[environment]
backend = "{{backend}}"
[models.hc]
model = "openai-compatible/agent-hc"
price = "sim/hc"
base_url = "{}"
"#,
        server.base_url
    );
    let missing = lab.path("no-such-docker");
    let down = lab.path("docker-down");
    let mut cases: Vec<(&str, &str, &Path, &str)> = vec![
        ("docker", "", &down, "Cannot connect to the Docker daemon"),
        ("docker", "", &missing, "no such program"),
        // the harness needs Docker even where the agent does not (a wrong backend is
        // refused first, so name the docker backend)
        (
            "docker",
            "swebench_python = \"py/python\"",
            &down,
            "swebench_python is set",
        ),
        ("bwrap", "", &down, "set [environment] backend = \"docker\""),
    ];
    // the machine's own client, when it has one and no engine answers it
    let real = Path::new("docker");
    let real_down = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output()
        .is_ok_and(|o| !o.status.success());
    if real_down {
        cases.push(("docker", "", real, "docker is not usable"));
    }
    for (i, (backend, extra, docker, says)) in cases.into_iter().enumerate() {
        let file = format!("exp{i}.toml");
        std::fs::write(
            lab.path(&file),
            http.replace("{extra}", extra).replace("{backend}", backend),
        )
        .unwrap();
        let out_dir = format!("out{i}");
        let out = lab.baton(docker, &["run", &file, "--out", &out_dir, "--quiet"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "case {i}: {err}");
        assert!(err.contains(says), "case {i}: {err}");
        assert!(err.contains("nothing was run"), "case {i}: {err}");
        assert!(
            !lab.path(&out_dir).join("results.sqlite").exists(),
            "case {i}: a store was made"
        );
    }
    let stats = server.stats();
    assert_eq!(
        stats["requests"], 0,
        "a model request reached the server: {stats}"
    );

    // checking the gold patches needs the harness, so Docker: asked first
    let out = lab.baton(
        &down,
        &[
            "env",
            "check-tasks",
            "verified.jsonl",
            "--swebench-python",
            "py/python",
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("needs Docker") && err.contains("Cannot connect to the Docker daemon"),
        "{err}"
    );
    assert!(lab.harness_calls().is_empty(), "the harness ran");
}

/// Each stored episode of a SWE-bench task: (cell, replicate, task) -> (status,
/// final patch, is_correct, reason).
type Episodes =
    BTreeMap<(String, i64, String), (String, Option<String>, Option<bool>, Option<String>)>;

fn episodes(db: &Path) -> Episodes {
    let c = Connection::open(db).unwrap();
    let mut s = c
        .prepare(
            "SELECT cell_key, replicate, task_id, status, final_response, is_correct, reason
             FROM episodes",
        )
        .unwrap();
    s.query_map([], |r| {
        Ok((
            (r.get(0)?, r.get(1)?, r.get(2)?),
            (r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?),
        ))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

#[test]
fn swebench_eval_judges_every_cell_once_and_stores_the_verdicts() {
    if !sandbox_works() {
        return;
    }
    let lab = Lab::new();
    let shim = lab.path("docker");
    std::fs::write(lab.path("exp.toml"), experiment("")).unwrap();
    let out = lab.baton(&shim, &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let db = lab.path("out/results.sqlite");
    let before = episodes(&db);
    let cells: BTreeSet<(String, i64)> = before.keys().map(|(c, r, _)| (c.clone(), *r)).collect();
    assert_eq!(
        cells.len(),
        8,
        "2 anchors + 2 handoff cells, 2 replicates: {cells:?}"
    );
    for (key, (status, patch, _, reason)) in &before {
        assert_eq!(status, "unscored", "{key:?}");
        assert!(patch.is_some(), "{key:?} submitted nothing");
        assert!(
            reason.as_deref().unwrap().contains("swebench_python"),
            "{key:?}"
        );
    }

    let out = lab.baton(&shim, &["report", "out", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(
        report["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["unscored"] == r["episodes"] && r["resolved"] == 0),
        "{report}"
    );

    // no engine: stops before the harness, names the fix, judges nothing
    let down = lab.path("docker-down");
    let out = lab.baton(&down, &["swebench", "eval", "out", "--python", "py/python"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("Cannot connect to the Docker daemon")
            && err.contains("nothing was evaluated"),
        "{err}"
    );
    assert!(lab.harness_calls().is_empty());
    assert_eq!(episodes(&db), before);

    // a harness that fails leaves the episodes unscored, with why
    std::fs::write(lab.path("py/fail"), "").unwrap();
    let out = lab.baton(&shim, &["swebench", "eval", "out", "--python", "py/python"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("judged nothing"), "{err}");
    let failed = episodes(&db);
    assert!(failed.values().all(|(s, _, _, reason)| {
        s == "unscored"
            && reason
                .as_deref()
                .unwrap()
                .contains("the SWE-bench harness gave no verdict")
    }));
    std::fs::remove_file(lab.path("py/fail")).unwrap();
    std::fs::remove_file(lab.path("py/calls.log")).unwrap();
    std::fs::remove_file(lab.path("py/patches.log")).unwrap();

    // without --python, the experiment's swebench_python is the default; it has none
    let out = lab.baton(&shim, &["swebench", "eval", "out"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("sets no swebench_python: pass --python"),
        "{err}"
    );

    let out = lab.baton(
        &shim,
        &[
            "swebench",
            "eval",
            "out",
            "--python",
            "py/python",
            "--max-workers",
            "2",
        ],
    );
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("Docker engine 28.0.0-shim"), "{text}");

    // one predictions file per (cell, replicate), its rows the stored final patches
    let dir = lab.path("out/swebench/predictions");
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let want: BTreeSet<String> = [
        "single-lc",
        "single-hc",
        "handoff-lc-to-hc-p50-raw",
        "handoff-hc-to-lc-p50-raw",
    ]
    .iter()
    .flat_map(|c| (0..2).map(move |r| format!("{c}.r{r}.jsonl")))
    .collect();
    assert_eq!(files, want);
    let label = |slug: &str| match slug {
        "single-lc" => "single(lc)",
        "single-hc" => "single(hc)",
        "handoff-lc-to-hc-p50-raw" => "handoff(lc -> hc, p50, raw)",
        _ => "handoff(hc -> lc, p50, raw)",
    };
    for f in &files {
        let stem = f.trim_end_matches(".jsonl");
        let (slug, r) = stem.rsplit_once(".r").unwrap();
        let r: i64 = r.parse().unwrap();
        let rows: Vec<serde_json::Value> = std::fs::read_to_string(dir.join(f))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 2, "{f}");
        for row in &rows {
            assert_eq!(row["model_name_or_path"], stem);
            let task = row["instance_id"].as_str().unwrap().to_string();
            let stored = &before[&(label(slug).to_string(), r, task)].1;
            assert_eq!(row["model_patch"].as_str(), stored.as_deref(), "{f}");
        }
    }

    // every episode is scored by its patch's verdict; each (instance, patch) judged once
    let after = episodes(&db);
    let mut patches = BTreeSet::new();
    for (key, (status, patch, correct, reason)) in &after {
        let patch = patch.as_deref().unwrap();
        assert_eq!(status, "scored", "{key:?}");
        assert_eq!(*correct, Some(patch.contains("FIX")), "{key:?}");
        assert!(reason.is_none(), "{key:?}");
        if !patch.trim().is_empty() {
            patches.insert((key.2.clone(), patch.to_string()));
        }
    }
    let judged: Vec<(String, String)> = std::fs::read_to_string(lab.path("py/patches.log"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        judged.len(),
        patches.len(),
        "a patch was judged twice: {judged:?}"
    );
    assert_eq!(judged.into_iter().collect::<BTreeSet<_>>(), patches);
    assert!(
        text.contains(&format!("episodes newly scored {}", after.len())),
        "{text}"
    );

    // the report scores them: no anchor is left unscored, the resolved ones counted
    let rows = |lab: &Lab| -> Vec<serde_json::Value> {
        let out = lab.baton(&shim, &["report", "out", "--format", "json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let report: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        report["rows"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["bucket"] == "all")
            .cloned()
            .collect()
    };
    let anchors_resolved = after
        .iter()
        .filter(|((cell, _, _), v)| cell.starts_with("single(") && v.2 == Some(true))
        .count() as u64;
    let rows = rows(&lab);
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["unscored"] == 0), "{rows:?}");
    let resolved: u64 = rows.iter().map(|r| r["resolved"].as_u64().unwrap()).sum();
    assert_eq!(resolved, anchors_resolved);
    assert!(resolved > 0, "instance 1's patches hold FIX");

    // a second eval judges nothing new and says so
    let calls = lab.harness_calls().len();
    let out = lab.baton(&shim, &["swebench", "eval", "out", "--python", "py/python"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(text.contains("nothing new to evaluate"), "{text}");
    assert_eq!(lab.harness_calls().len(), calls);
    assert_eq!(episodes(&db), after);
    // and needs no Docker for it
    let out = lab.baton(&down, &["swebench", "eval", "out", "--python", "py/python"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn data_swebench_describes_an_export_and_refuses_a_bad_one_by_row_task_and_key() {
    let fixtures =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../baton-agent/tests/fixtures/swebench");
    let dir = tempfile::tempdir().unwrap();
    let parquet = fixtures.join("verified-sample.parquet");
    let out = crate::baton(dir.path(), &["data", "swebench", parquet.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    // sha256sum's, not baton's own hashing
    let sha = Command::new("sha256sum").arg(&parquet).output().unwrap();
    let sha = String::from_utf8(sha.stdout).unwrap();
    let sha = sha.split_whitespace().next().unwrap();
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "{}: ok, 2 SWE-bench instances; sha256 {sha}",
                parquet.display()
            )
            .as_str(),
            "repositories: demo/calc 1, demo/words 1",
            "difficulty: 1-4 hours 1, <15 min fix 1",
            "images (the agent works in each, the repository at /testbed):",
            "  demo__calc-1  docker.io/swebench/sweb.eval.x86_64.demo_1776_calc-1:latest  (SWE-bench's naming)",
            "  demo__words-7  docker.io/swebench/sweb.eval.x86_64.demo_1776_words-7:latest  (SWE-bench's naming)",
            "harness: 2 of 2 instances lack \"eval_script\"; swebench 5.0.2 cannot score them (demo__calc-1, demo__words-7)",
            "harness: 2 of 2 instances lack \"eval_type\"; swebench 5.0.2 cannot score them (demo__calc-1, demo__words-7)",
            "harness: 2 of 2 instances lack \"image\"; swebench 5.0.2 cannot score them (demo__calc-1, demo__words-7)",
            "harness: 2 of 2 instances lack \"log_parser\"; swebench 5.0.2 cannot score them (demo__calc-1, demo__words-7)",
        ]
    );

    // a harness-ready JSONL: `image` wins over `image_name`, which wins over the naming
    let mut rows: Vec<serde_json::Value> =
        std::fs::read_to_string(fixtures.join("verified-sample.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    for row in &mut rows {
        row["eval_script"] = "pytest".into();
        row["log_parser"] = "parse_log_pytest".into();
        row["eval_type"] = "pass_and_fail".into();
        row["image_name"] = "mini/calc:1".into();
    }
    rows[0]["image"] = "local/calc:1".into();
    let file = dir.path().join("ready.jsonl");
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&file, &text).unwrap();
    let out = crate::baton(dir.path(), &["data", "swebench", "ready.jsonl", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(summary["instances"], 2);
    assert_eq!(
        summary["images"],
        serde_json::json!([
            {"instance_id": "demo__calc-1", "image": "local/calc:1", "from": "image"},
            {"instance_id": "demo__words-7", "image": "mini/calc:1", "from": "image_name"}
        ])
    );
    assert_eq!(
        summary["missing_harness_keys"],
        serde_json::json!({"image": ["demo__words-7"]})
    );
    rows[1]["image"] = "local/words:1".into();
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&file, &text).unwrap();
    let out = crate::baton(dir.path(), &["data", "swebench", "ready.jsonl"]);
    assert!(
        stdout(&out).ends_with(
            "harness: every instance has image, version, eval_script, log_parser, eval_type (what swebench 5.0.2 scores with)\n"
        ),
        "{}",
        stdout(&out)
    );

    // a device is refused at once, as every input file is
    let out = crate::baton(dir.path(), &["data", "swebench", "/dev/zero"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("/dev/zero is not a regular file"),
        "{}",
        stderr(&out)
    );

    // a bad row: exit 2, the file, row, instance and key named, nothing on stdout
    let bad = fixtures.join("verified-bad-difficulty.parquet");
    let out = crate::baton(dir.path(), &["data", "swebench", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}: row 2: task \"demo__words-7\": key \"difficulty\"",
            bad.display()
        )),
        "{err}"
    );
    rows[1]["FAIL_TO_PASS"] = "not a list".into();
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&file, &text).unwrap();
    let out = crate::baton(dir.path(), &["data", "swebench", "ready.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("ready.jsonl: line 2: task \"demo__words-7\": key \"FAIL_TO_PASS\""),
        "{}",
        stderr(&out)
    );
}
