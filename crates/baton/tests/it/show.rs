//! `baton show` against LiC's own prompt vectors.

use serde_json::Value;

use crate::{baton, stderr, stdout};

/// See: issue 10, "Done when": with `--templates lic --lic-dir ../shared/lic`, `baton show`
/// reproduces the `system` of every vector in `../shared/conformance/prompts.jsonl` byte
/// for byte (sample items on the bundled `sample`, LiC items on `prompt_tasks.json`).
/// See: issue 13, "Done when": and every non-null `full` and `concat`, each null one
/// being an error naming the key LiC's code misses (on the items of `prompt_tasks.json`,
/// the sample items as they were when the vectors were made).
#[test]
fn issue_10_and_13_show_reproduces_lics_prompts() {
    let (Some(conformance), Some(lic)) = (
        baton_fixture::shared_dir("conformance"),
        baton_fixture::shared_dir("lic"),
    ) else {
        return;
    };
    let tasks_file = conformance.join("prompt_tasks.json");
    let vectors = std::fs::read_to_string(conformance.join("prompts.jsonl")).expect("vectors");
    let cwd = std::env::temp_dir();
    let mut checked = 0;
    let lines = vectors.lines().filter(|l| !l.trim().is_empty());
    let sample = lines.clone().filter(|l| l.contains("\"baton-sample\""));
    let runs = lines
        .map(|l| (l, tasks_file.display().to_string()))
        .chain(sample.map(|l| (l, "sample".to_string())));
    for (line, dataset) in runs {
        let v: Value = serde_json::from_str(line).expect("a vector");
        let task_id = v["task_id"].as_str().expect("task_id");
        let lic_dir = lic.display().to_string();
        let out = baton(
            &cwd,
            &[
                "show",
                &dataset,
                task_id,
                "--templates",
                "lic",
                "--lic-dir",
                &lic_dir,
                "--json",
            ],
        );
        assert!(out.status.success(), "{task_id}: {}", stderr(&out));
        let shown: Value = serde_json::from_str(&stdout(&out)).expect("JSON");
        assert_eq!(shown["system"], v["system"], "{task_id}: system");
        assert_eq!(shown["family"], v["family"], "{task_id}");
        let turns = shown["turns"].as_array().expect("turns");
        assert!(!turns.is_empty(), "{task_id}");
        if dataset != "sample" {
            for key in ["full", "concat"] {
                assert_eq!(shown[key], v[key], "{task_id}: {key}");
                if v[key].is_null() {
                    // LiC raises `KeyError: 'starter_code'`; baton names the key
                    let lic_error = v[format!("{key}_error")].as_str().expect("why null");
                    let missing = lic_error
                        .trim_start_matches("KeyError: ")
                        .trim_matches('\'');
                    let error = shown[format!("{key}_error")].as_str().expect("error");
                    assert!(
                        error.contains(task_id) && error.contains(missing),
                        "{task_id}: {error}"
                    );
                }
            }
        }
        checked += 1;
    }
    assert_eq!(
        checked,
        53 + 38,
        "every vector, and the sample's on the bundled set"
    );
}

#[test]
fn show_prints_every_turn_and_names_what_is_missing() {
    let cwd = std::env::temp_dir();
    let out = baton(&cwd, &["show", "sample", "sample-math/01"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("== system\n") && text.contains("== user turn 1\n"),
        "{text}"
    );
    let out = baton(&cwd, &["show", "sample", "sample-math/99"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no task \"sample-math/99\""),
        "{}",
        stderr(&out)
    );
    let out = baton(
        &cwd,
        &["show", "sample", "sample-math/01", "--templates", "lic"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--lic-dir"), "{}", stderr(&out));
    let missing = cwd.join("no-such-lic-checkout");
    let out = baton(
        &cwd,
        &[
            "show",
            "sample",
            "sample-math/01",
            "--templates",
            "lic",
            "--lic-dir",
            &missing.display().to_string(),
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("lost_in_conversation checkout"),
        "{}",
        stderr(&out)
    );
}
