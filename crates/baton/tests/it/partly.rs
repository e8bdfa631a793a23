//! Real files, partly broken: a LiC-format file built from real LiC items
//! (`../shared/replies/tasks.json`, `../shared/conformance/prompt_tasks.json`) with a few
//! items broken the way public files are, described, run with `--skip-invalid`, and
//! reported with the skipped tasks.

use std::path::Path;

use serde_json::Value;

use crate::support::{read_json, sim_pair};
use crate::{baton, stderr, stdout};

/// Writes `lic.json` into `dir`: every item of the replies task file, with item 3's last
/// shard emptied and item 5's `task` left out, plus one LiC database item whose Spider
/// database is not installed. Returns the broken ids and the database item's id.
fn partly_broken(dir: &Path) -> Option<(Vec<String>, String)> {
    let replies = baton_fixture::shared_dir("replies")?;
    let conformance = baton_fixture::shared_dir("conformance")?;
    let mut items = read_json(&replies.join("tasks.json"));
    let list = items.as_array_mut().expect("an array");
    let last = list[3]["shards"].as_array().expect("shards").len() - 1;
    list[3]["shards"][last]["shard"] = Value::from("");
    list[5].as_object_mut().expect("object").remove("task");
    let broken = vec![
        list[3]["task_id"].as_str().unwrap().to_string(),
        list[5]["task_id"].as_str().unwrap().to_string(),
    ];
    let db = read_json(&conformance.join("prompt_tasks.json"))
        .as_array()
        .expect("an array")
        .iter()
        .find(|t| {
            t["source_file"].is_null()
                && t["task"] == "database"
                && !t["task_id"].as_str().unwrap_or("").starts_with("sample-")
        })
        .cloned()
        .expect("a LiC database item");
    let db_id = db["task_id"].as_str().unwrap().to_string();
    list.push(db);
    std::fs::write(dir.join("lic.json"), serde_json::to_string(&items).unwrap()).unwrap();
    Some((broken, db_id))
}

const EXPERIMENT: &str = concat!(
    r#"
name = "partly"
dataset = "lic.json"
families = ["math", "actions", "database"]
limit = 3
switch_points = ["middle"]
directions = ["escalation"]
spider_dir = "no-databases-here"
"#,
    sim_pair!()
);

/// See: issue 10, "Done when": `baton run --skip-invalid` on a file with invalid items
/// runs the rest, and the JSON report lists the skipped tasks with reasons.
#[test]
fn issue_10_skip_invalid_runs_the_rest_and_reports_what_it_left_out() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some((broken, db_task)) = partly_broken(dir.path()) else {
        return;
    };
    std::fs::write(dir.path().join("exp.toml"), EXPERIMENT).unwrap();

    // stats describes the file and lists what is wrong
    let stats = baton(dir.path(), &["data", "stats", "lic.json"]);
    assert!(stats.status.success(), "{}", stderr(&stats));
    let text = stdout(&stats);
    assert!(text.contains("invalid: 2 item(s)"), "{text}");
    for id in &broken {
        assert!(text.contains(id.as_str()), "{id}: {text}");
    }

    // without --skip-invalid nothing is called
    let strict = baton(
        dir.path(),
        &["run", "exp.toml", "--out", "strict", "--quiet"],
    );
    assert_eq!(strict.status.code(), Some(2), "{}", stderr(&strict));
    assert!(stderr(&strict).contains("shard"), "{}", stderr(&strict));
    assert!(!dir.path().join("strict").join("results.sqlite").exists());

    let run = baton(
        dir.path(),
        &[
            "run",
            "exp.toml",
            "--out",
            "out",
            "--quiet",
            "--skip-invalid",
        ],
    );
    assert!(run.status.success(), "{}\n{}", stdout(&run), stderr(&run));
    let report = baton(dir.path(), &["report", "out", "--format", "json"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let json: Value = serde_json::from_str(&stdout(&report)).expect("JSON");
    let skipped = json["skipped_tasks"].as_array().expect("skipped_tasks");
    let ids: Vec<&str> = skipped
        .iter()
        .map(|s| s["task_id"].as_str().unwrap())
        .collect();
    for id in broken.iter().chain([&db_task]) {
        assert!(ids.contains(&id.as_str()), "{id} in {ids:?}");
    }
    let reason_of = |id: &str| {
        skipped
            .iter()
            .find(|s| s["task_id"] == id)
            .and_then(|s| s["reason"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        reason_of(&broken[0]).contains("shard"),
        "{}",
        reason_of(&broken[0])
    );
    assert!(
        reason_of(&broken[1]).contains("\"task\""),
        "{}",
        reason_of(&broken[1])
    );
    assert!(
        reason_of(&db_task).contains("no *.sqlite file"),
        "{}",
        reason_of(&db_task)
    );
    assert_eq!(
        json["incomplete"].as_array().map(Vec::len),
        Some(0),
        "{json}"
    );
    // math and actions ran: 3 tasks each, 3 cells each
    let scored: u64 = json["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["family"] != "all" && c["direction"].is_null())
        .map(|c| c["n_scored"].as_u64().unwrap_or(0))
        .sum();
    assert!(scored >= 6, "{json}");
    let md = baton(dir.path(), &["report", "out"]);
    assert!(stdout(&md).contains("Tasks left out"), "{}", stdout(&md));
}

#[test]
fn a_database_task_without_its_database_stops_the_run_before_any_call() {
    let dir = tempfile::tempdir().expect("temp dir");
    let Some((_, db_task)) = partly_broken(dir.path()) else {
        return;
    };
    // keep only the valid items: two math tasks and the database one
    let all = read_json(&dir.path().join("lic.json"));
    let list = all.as_array().unwrap();
    let mut keep: Vec<Value> = list
        .iter()
        .filter(|t| t["task"] == "math")
        .take(2)
        .cloned()
        .collect();
    keep.push(list.last().unwrap().clone());
    std::fs::write(
        dir.path().join("lic.json"),
        serde_json::to_string(&keep).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.path().join("exp.toml"), EXPERIMENT).unwrap();
    for extra in [&["--dry-run"][..], &[]] {
        let mut args = vec!["run", "exp.toml", "--out", "out", "--quiet"];
        args.extend_from_slice(extra);
        let run = baton(dir.path(), &args);
        assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
        assert!(
            stderr(&run).contains("no Spider databases for")
                && stderr(&run).contains("--skip-invalid"),
            "{}",
            stderr(&run)
        );
        assert!(!dir.path().join("out").join("results.sqlite").exists());
    }
    let _ = db_task;
}
