//! The SWE-bench harness invocation and its verdict cache, with a stand-in Python.

use baton_agent::{AgentError, HarnessStatus, Prediction, SweBenchHarness};

struct Fake {
    dir: tempfile::TempDir,
    harness: SweBenchHarness,
}

fn fake() -> Fake {
    let dir = tempfile::tempdir().unwrap();
    let python = dir.path().join("python");
    std::fs::copy(crate::fixtures().join("fake-swebench-python"), &python).unwrap();
    let dataset = dir.path().join("verified.jsonl");
    std::fs::write(&dataset, "{}\n").unwrap();
    let harness = SweBenchHarness::new(&python, &dataset, dir.path().join("work"));
    Fake { dir, harness }
}

impl Fake {
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

fn pred(id: &str, patch: &str) -> Prediction {
    Prediction {
        instance_id: id.into(),
        patch: patch.into(),
    }
}

#[test]
fn verdicts_come_from_the_harness_once_and_then_from_the_cache() {
    let f = fake();
    let preds = [
        pred("a__b-1", "FIX it"),
        pred("a__b-2", "wrong"),
        pred("a__b-3", ""),
    ];
    let v = f.harness.evaluate(&preds).unwrap();
    assert_eq!(
        v.iter().map(|v| v.status.clone()).collect::<Vec<_>>(),
        [
            HarnessStatus::Resolved,
            HarnessStatus::Unresolved,
            HarnessStatus::EmptyPatch
        ]
    );
    assert_eq!(v[0].fail_to_pass.success, ["t1"]);
    assert_eq!(v[1].fail_to_pass.failure, ["t1"]);
    assert_eq!(v[0].patch_applied, Some(true));
    assert_eq!(f.calls(), ["a__b-1 a__b-2"], "the empty patch is not sent");

    let again = f.harness.evaluate(&preds).unwrap();
    assert_eq!(f.calls().len(), 1, "nothing re-evaluated");
    assert!(again[0].cached && again[1].cached);
    assert_eq!(again[0].status, HarnessStatus::Resolved);

    let changed = [pred("a__b-1", "FIX it"), pred("a__b-2", "FIX now")];
    let v = f.harness.evaluate(&changed).unwrap();
    assert_eq!(
        f.calls()[1],
        "a__b-2",
        "only the new (instance, patch) pair"
    );
    assert_eq!(v[1].status, HarnessStatus::Resolved);
}

#[test]
fn a_wrong_harness_version_is_refused_with_the_fix() {
    let f = fake();
    std::fs::write(f.dir.path().join("version"), "4.1.0").unwrap();
    let err = f.harness.evaluate(&[pred("a__b-1", "FIX")]).unwrap_err();
    assert!(matches!(err, AgentError::HarnessVersion { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("swebench 4.1.0") && msg.contains("pip install swebench==5.0.2"),
        "{msg}"
    );
    assert!(f.calls().is_empty());
}

#[test]
fn a_failing_harness_is_an_error_and_nothing_is_cached() {
    let f = fake();
    std::fs::write(f.dir.path().join("fail"), "").unwrap();
    let err = f
        .harness
        .evaluate(&[pred("a__b-1", "FIX")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("judged nothing") && err.contains("harness.log"),
        "{err}"
    );
    std::fs::remove_file(f.dir.path().join("fail")).unwrap();
    let v = f.harness.evaluate(&[pred("a__b-1", "FIX")]).unwrap();
    assert_eq!(v[0].status, HarnessStatus::Resolved);
    assert!(!v[0].cached);
    assert_eq!(f.calls().len(), 2);
}

#[test]
fn repeated_or_unsafe_instance_ids_are_refused() {
    let f = fake();
    assert!(
        f.harness
            .evaluate(&[pred("a", "x"), pred("a", "y")])
            .is_err()
    );
    assert!(f.harness.evaluate(&[pred("../a", "x")]).is_err());
}

#[test]
fn predictions_are_filed_under_the_callers_model_name() {
    let f = fake();
    let preds = [pred("a__b-1", "FIX it"), pred("a__b-2", "")];
    assert_eq!(
        f.harness.pending(&preds),
        [0],
        "an empty patch needs no run"
    );
    let v = f.harness.evaluate_as("single-lc.r0", &preds).unwrap();
    assert_eq!(v[0].status, HarnessStatus::Resolved);
    let runs = f.dir.path().join("work/runs");
    let run = std::fs::read_dir(&runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(
        run.join("logs/run_evaluation")
            .join(run.file_name().unwrap())
            .join("single-lc.r0/a__b-1/report.json")
            .is_file()
    );
    let sent = std::fs::read_to_string(run.join("predictions.jsonl")).unwrap();
    let row: serde_json::Value = serde_json::from_str(sent.lines().next().unwrap()).unwrap();
    assert_eq!(row["model_name_or_path"], "single-lc.r0");
    assert!(
        f.harness.pending(&preds).is_empty(),
        "judged once, then cached"
    );
    // the cache is by (instance, patch): another model name does not re-run it
    let again = f.harness.evaluate_as("single-hc.r0", &preds).unwrap();
    assert!(again[0].cached);
    assert_eq!(f.calls().len(), 1);
    assert!(
        f.harness.evaluate_as("a/b", &preds).is_err(),
        "not a path component"
    );
}

#[test]
fn an_infrastructure_failure_is_no_verdict_and_is_not_cached() {
    let f = fake();
    let preds = [pred("a__b-1", "INFRA"), pred("a__b-2", "FIX")];
    let v = f.harness.evaluate(&preds).unwrap();
    assert_eq!(v[0].status, HarnessStatus::Error);
    let why = v[0].error.as_deref().unwrap();
    assert!(why.contains("container_unavailable"), "{why}");
    assert_eq!(v[1].status, HarnessStatus::Resolved);
    assert_eq!(f.harness.pending(&preds), [0], "judged again next time");
}

/// The pinned harness itself, when `BATON_SWEBENCH_PYTHON` names a Python with
/// swebench 5.0.2 installed (not in CI: installing it takes minutes): baton's exact
/// arguments get past `run_evaluation`'s argument parsing and its dataset and
/// predictions loading, to where it needs Docker, so a renamed flag is caught.
#[test]
fn the_real_harness_accepts_batons_arguments() {
    let Some(python) = std::env::var_os("BATON_SWEBENCH_PYTHON") else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "note: BATON_SWEBENCH_PYTHON is not set; the real harness is not run"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dataset = dir.path().join("verified.jsonl");
    let row = serde_json::json!({
        "instance_id": "demo__calc-1", "repo": "demo/calc",
        "base_commit": "0".repeat(40), "environment_setup_commit": "0".repeat(40),
        "version": "1.0", "problem_statement": "p", "patch": "", "test_patch": "",
        "FAIL_TO_PASS": "[\"t1\"]", "PASS_TO_PASS": "[]", "difficulty": "<15 min fix",
    });
    std::fs::write(&dataset, format!("{row}\n")).unwrap();
    let harness = SweBenchHarness::new(python, &dataset, dir.path().join("work"));
    harness.check_version().unwrap();
    // Docker is absent here (or unreachable from the test): the run fails after parsing
    let err = harness
        .evaluate_as(
            "single-lc.r0",
            &[pred("demo__calc-1", "diff --git a/x b/x\n")],
        )
        .unwrap_err();
    let AgentError::Harness { log, .. } = &err else {
        panic!("{err}");
    };
    let log = std::fs::read_to_string(log).unwrap();
    assert!(
        !log.contains("usage:") && !log.contains("unrecognized arguments"),
        "{log}"
    );
    assert!(
        log.contains("_docker_client") || log.contains("DockerException"),
        "{log}"
    );
}
