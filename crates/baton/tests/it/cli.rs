use crate::support::sim_pair;
use crate::{baton, stderr, stdout};

#[test]
fn data_check_names_file_item_task_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let bad = r#"[
  {"task_id": "t-1", "task": "math", "shards": [{"shard_id": 1, "shard": "How many?"}], "answer": "2 #### 2"},
  {"task_id": "t-2", "task": "math", "shards": [{"shard_id": 1, "shard": "How many?"}]}
]"#;
    std::fs::write(dir.path().join("bad.json"), bad).unwrap();
    let out = baton(dir.path(), &["data", "check", "bad.json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("bad.json")
            && err.contains("item 1")
            && err.contains("t-2")
            && err.contains("\"answer\""),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");

    std::fs::write(dir.path().join("broken.json"), "[{\"task_id\": ").unwrap();
    let out = baton(dir.path(), &["data", "check", "broken.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("broken.json"), "{}", stderr(&out));
}

#[test]
fn data_check_accepts_the_sample_and_reports_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let out = baton(dir.path(), &["data", "check", "sample"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("ok") && stdout(&out).contains("sha256"));
}

#[test]
fn score_adds_actual_and_summarises_agreement() {
    let dir = tempfile::tempdir().unwrap();
    let case = |id: &str, gold: &str, input: &str| {
        serde_json::json!({
            "id": id, "family": "math", "stage": "evaluator",
            "sample": {"task_id": "x", "task": "math", "answer": format!("#### {gold}")},
            "input": input, "expected": {"score": 1.0, "is_correct": null}
        })
        .to_string()
    };
    let cases = [case("m1", "18", "$18.00"), case("m2", "10", "$10.00")];
    std::fs::write(dir.path().join("cases.jsonl"), cases.join("\n")).unwrap();
    let out = baton(
        dir.path(),
        &["score", "--input", "cases.jsonl", "--output", "out.jsonl"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(dir.path().join("out.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["actual"]["score"], 1.0);
    assert_eq!(lines[1]["actual"]["score"], 0.0, "the $10.00 -> $1 quirk");
    let summary = stderr(&out);
    assert!(
        summary.contains("1 of 2 agree") && summary.contains("m2"),
        "{summary}"
    );

    std::fs::write(dir.path().join("bad.jsonl"), "{\"family\": \"math\"}").unwrap();
    let out = baton(dir.path(), &["score", "--input", "bad.jsonl"]);
    assert_eq!(out.status.code(), Some(2), "malformed input is an error");
    assert!(
        stderr(&out).contains("bad.jsonl: line 1"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn demo_prints_qrec_and_csret_for_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let out = baton(dir.path(), &["demo", "--out", "demo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for needle in [
        "QRec",
        "CSRet",
        "Escalation",
        "Downshift",
        "early",
        "middle",
        "late",
        "simulated",
    ] {
        assert!(
            text.contains(needle),
            "demo output lacks {needle:?}:\n{text}"
        );
    }
    // See: issue 35 (terminal tables up to 195 columns): every table line of the
    // printed tables and of the whole report.md fits 100 columns.
    let report = std::fs::read_to_string(dir.path().join("demo/report.md")).unwrap();
    for line in text.lines().chain(report.lines()) {
        if line.starts_with('|') {
            assert!(
                line.chars().count() <= 100,
                "wider than 100 columns: {line}"
            );
        }
    }
    let html = std::fs::read_to_string(dir.path().join("demo/report.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("QRec"));
    assert!(
        std::fs::read_dir(dir.path().join("demo/plots"))
            .unwrap()
            .count()
            >= 4
    );
    // Re-running the demo pays for nothing.
    let again = baton(dir.path(), &["demo", "--out", "demo"]);
    assert!(
        stdout(&again).contains("calls: 0 new"),
        "{}",
        stdout(&again)
    );
}

/// The workspace members (every folder under `crates/` with a manifest), by name.
fn workspace_members() -> std::collections::BTreeSet<String> {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap();
    std::fs::read_dir(crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").exists())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect()
}

/// The crate names of a Markdown table's rows that start with `` | `baton…` | ``.
fn crate_rows(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |"))
        .map(|(name, _)| name.to_string())
        .filter(|name| name.starts_with("baton"))
        .collect()
}

// See: issue 24 (crates/README.md checked against the workspace members).
#[test]
fn crates_readme_and_the_architecture_doc_name_exactly_the_workspace_members() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let members = workspace_members();
    assert!(members.len() >= 18, "{members:?}");
    for doc in ["crates/README.md", "docs/architecture.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let rows = crate_rows(&text);
        let missing: Vec<_> = members.difference(&rows).collect();
        let stale: Vec<_> = rows.difference(&members).collect();
        assert!(
            missing.is_empty() && stale.is_empty(),
            "{doc}: no row for {missing:?}; rows for crates that do not exist: {stale:?}"
        );
    }
}

#[test]
fn report_json_has_the_documented_cell_fields() {
    let dir = tempfile::tempdir().unwrap();
    let exp = concat!(
        r#"
name = "tiny"
dataset = "sample"
families = ["math"]
limit = 2
"#,
        sim_pair!()
    );
    std::fs::write(dir.path().join("tiny.toml"), exp).unwrap();
    let run = baton(dir.path(), &["run", "tiny.toml", "--quiet"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let out = baton(
        dir.path(),
        &[
            "report",
            "results/tiny/results.sqlite",
            "--format",
            "json",
            "--bootstrap",
            "200",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let cells = json["cells"].as_array().unwrap();
    assert!(!cells.is_empty());
    for key in [
        "pair",
        "direction",
        "family",
        "k",
        "interface",
        "score",
        "cost_per_task",
        "qrec",
        "csret",
        "n_attempted",
        "n_scored",
    ] {
        assert!(
            cells.iter().all(|c| c.get(key).is_some()),
            "a cell lacks {key}"
        );
    }
    let anchors: Vec<_> = cells
        .iter()
        .filter(|c| c["interface"] == "single")
        .collect();
    assert!(!anchors.is_empty() && anchors.iter().all(|c| c["k"].is_null()));
    assert!(
        cells
            .iter()
            .any(|c| c["k"] == "early" && c["direction"] == "escalation")
    );
    let csv = baton(
        dir.path(),
        &[
            "report",
            "results/tiny",
            "--format",
            "csv",
            "--bootstrap",
            "0",
        ],
    );
    assert!(stdout(&csv).lines().next().unwrap().contains("qrec"));
}
