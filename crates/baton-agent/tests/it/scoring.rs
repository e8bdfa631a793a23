//! Scoring through the real sandbox, including hostile patches.

use std::time::Duration;

use baton_agent::{Expectation, PatchOutcome, TestOutcome, check_tasks, unified_diff};

use crate::{sample, scorer};

#[test]
fn every_bundled_task_fails_unchanged_and_passes_with_its_reference() {
    let Some(scorer) = scorer() else { return };
    let tasks = baton_agent::sample_tasks().unwrap();
    let report = check_tasks("agent-sample", &tasks, &scorer, 2).unwrap();
    let n = tasks.len();
    assert!(
        report.to_string().starts_with(&format!(
            "{n} tasks: unchanged fail {n}/{n}, reference pass {n}/{n}\n"
        )),
        "{report}"
    );
    assert!(report.all_good());
    for t in &report.tasks {
        assert!(t.notes().is_empty(), "{}: {:?}", t.task_id, t.notes());
        let (f, fnum) = t.unchanged.passed(Expectation::FailToPass);
        assert_eq!(f, 0, "{}: a fail_to_pass test passes unchanged", t.task_id);
        assert!(fnum > 0);
        let reference = t.reference.as_ref().unwrap();
        assert!(
            matches!(reference.patch, PatchOutcome::Applied { .. }),
            "{}",
            t.task_id
        );
    }
}

#[test]
fn some_polyglot_exercises_score_like_aider() {
    let Some(scorer) = scorer() else { return };
    let Some(dir) = crate::polyglot_dir() else {
        return;
    };
    let tasks = baton_agent::polyglot::load_exercises(&dir).unwrap();
    assert_eq!(tasks.len(), 34);
    // One per bucket here; `baton env check-tasks` runs all 34 (see the CLI tests).
    let picked: Vec<_> = tasks
        .iter()
        .filter(|t| ["wordy", "bowling", "zipper"].contains(&t.id.as_str()))
        .cloned()
        .collect();
    let report = check_tasks("polyglot", &picked, &scorer, 2).unwrap();
    assert!(report.all_good(), "{report}");
}

#[test]
fn a_patch_that_does_not_apply_is_a_verdict_with_the_reason() {
    let Some(scorer) = scorer() else { return };
    let task = sample("roman-numerals");
    let wrong = unified_diff(
        "roman.py",
        Some("this is not the file\n"),
        "neither is this\n",
    );
    let v = scorer.score(&task, &wrong).unwrap();
    match &v.patch {
        PatchOutcome::DidNotApply { reason } => assert!(reason.contains("roman.py"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert!(!v.resolved && v.tests.is_empty());
    assert!(
        v.summary().starts_with("patch does not apply"),
        "{}",
        v.summary()
    );

    let v = scorer.score(&task, "this is not a diff at all\n").unwrap();
    assert!(matches!(v.patch, PatchOutcome::DidNotApply { .. }), "{v:?}");
    let v = scorer
        .score(&task, &"\u{0}\u{1}garbage".repeat(10_000))
        .unwrap();
    assert!(matches!(v.patch, PatchOutcome::DidNotApply { .. }), "{v:?}");
}

#[test]
fn fuzzy_patches_fall_back_to_patch() {
    let Some(scorer) = scorer() else { return };
    let task = sample("temperature");
    // The context line above the change is not quite the file's: git refuses, patch --fuzz
    // takes it.
    let patch = "--- a/temperature.py\n+++ b/temperature.py\n@@ -9,7 +9,7 @@\n \n \n def fahrenheit_to_celsius(fahrenheit):\n-    \"\"\"Degrees Fahrenheit to degrees Celsius.\"\"\"\n+    \"\"\"Degrees Fahrenheit to degrees Celsius!\"\"\"\n     return (fahrenheit - 32) * 9 / 5\n \n \n";
    let fuzzy = patch.replace(
        " def fahrenheit_to_celsius(fahrenheit):\n-",
        " def fahrenheit_to_celsius(fahrenheit):  # changed\n-",
    );
    let v = scorer.score(&task, &fuzzy).unwrap();
    assert_eq!(
        v.patch,
        PatchOutcome::Applied {
            tool: "patch --fuzz=5".into()
        },
        "{v:?}"
    );
}

#[test]
fn tests_are_restored_whatever_the_patch_does_to_them() {
    let Some(scorer) = scorer() else { return };
    let task = sample("roman-numerals");
    let hidden = String::from_utf8(task.tests.files[0].contents.clone()).unwrap();
    let visible =
        String::from_utf8(task.repository.read("test_roman.py").unwrap().unwrap()).unwrap();
    // Gut the visible test, add a fake hidden test file: both are put back.
    let mut patch = unified_diff(
        "test_roman.py",
        Some(&visible),
        "import unittest\nclass TestRoman(unittest.TestCase):\n    def test_additive_numbers(self): pass\n    def test_out_of_range(self): pass\n",
    );
    patch.push_str(&unified_diff(
        "test_roman_subtractive.py",
        None,
        &hidden.replace("self.assertEqual(", "(lambda *a: None)("),
    ));
    let v = scorer.score(&task, &patch).unwrap();
    assert!(matches!(v.patch, PatchOutcome::Applied { .. }), "{v:?}");
    assert!(!v.resolved, "{v:?}");
    let (f, n) = v.passed(Expectation::FailToPass);
    assert_eq!((f, n), (0, 4), "{}", v.summary());
}

#[test]
fn a_test_file_replaced_by_a_link_is_restored_without_following_it() {
    let Some(scorer) = scorer() else { return };
    let task = sample("roman-numerals");
    let patch = "diff --git a/test_roman_subtractive.py b/test_roman_subtractive.py\nnew file mode 120000\n--- /dev/null\n+++ b/test_roman_subtractive.py\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n";
    let v = scorer.score(&task, patch).unwrap();
    assert!(matches!(v.patch, PatchOutcome::Applied { .. }), "{v:?}");
    assert!(!v.resolved);
    assert_eq!(
        v.passed(Expectation::FailToPass),
        (0, 4),
        "the real tests ran: {}",
        v.summary()
    );
}

#[test]
fn a_hanging_or_exiting_solution_is_a_verdict_not_a_crash() {
    let Some(scorer) = scorer() else { return };
    let mut task = sample("chunked");
    task.tests.timeout = Duration::from_secs(3);
    let old = String::from_utf8(task.repository.read("chunks.py").unwrap().unwrap()).unwrap();

    let hang = unified_diff(
        "chunks.py",
        Some(&old),
        &format!("{old}\nwhile True:\n    pass\n"),
    );
    let v = scorer.score(&task, &hang).unwrap();
    assert!(!v.resolved);
    let err = v.run_error.as_deref().unwrap_or_default();
    assert!(err.contains("limit"), "{v:?}");
    assert!(v.tests.iter().all(|t| t.outcome == TestOutcome::Missing));

    let exit = unified_diff(
        "chunks.py",
        Some(&old),
        &format!("import os\nos._exit(0)\n{old}"),
    );
    let v = scorer.score(&task, &exit).unwrap();
    assert!(!v.resolved);
    assert!(
        v.run_error
            .as_deref()
            .unwrap_or_default()
            .contains("without baton's result line"),
        "{v:?}"
    );

    let raise = unified_diff(
        "chunks.py",
        Some(&old),
        &format!("raise SystemExit(0)\n{old}"),
    );
    let v = scorer.score(&task, &raise).unwrap();
    assert!(!v.resolved && v.run_error.is_none(), "{v:?}");
    assert!(
        v.tests.iter().all(|t| t.outcome == TestOutcome::Error),
        "{v:?}"
    );
}

#[test]
fn a_partial_fix_resolves_nothing_and_says_what_passed() {
    let Some(scorer) = scorer() else { return };
    let task = sample("temperature");
    let old = String::from_utf8(task.repository.read("temperature.py").unwrap().unwrap()).unwrap();
    let half = old.replace("* 9 / 5\n\n\ndef kelvin", "* 5 / 9\n\n\ndef kelvin");
    assert_ne!(half, old);
    let v = scorer
        .score(&task, &unified_diff("temperature.py", Some(&old), &half))
        .unwrap();
    assert!(!v.resolved);
    assert_eq!(v.passed(Expectation::FailToPass), (2, 3), "{}", v.summary());
    assert_eq!(v.passed(Expectation::PassToPass), (2, 2));
    assert_eq!(
        v.summary(),
        "not resolved: fail_to_pass 2/3, pass_to_pass 2/2"
    );
}
