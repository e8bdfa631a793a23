//! `baton show` against LiC's own prompt vectors.

use serde_json::Value;

use crate::{baton, stderr, stdout};

/// See: issue 10, "Done when": with `--templates lic --lic-dir ../shared/lic`, `baton show`
/// reproduces the `system` of every vector in `../shared/conformance/prompts.jsonl` byte
/// for byte (sample items on the bundled `sample`, LiC items on `prompt_tasks.json`).
#[test]
fn issue_10_show_reproduces_lics_system_prompts() {
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
    for line in vectors.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).expect("a vector");
        let task_id = v["task_id"].as_str().expect("task_id");
        let dataset = if v["source_file"] == "baton-sample" {
            "sample".to_string()
        } else {
            tasks_file.display().to_string()
        };
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
        assert!(shown["full"].is_null() && shown["concat"].is_null());
        checked += 1;
    }
    assert_eq!(checked, 53, "every vector");
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
