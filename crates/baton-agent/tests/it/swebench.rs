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
