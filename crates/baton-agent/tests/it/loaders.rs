//! Loading tasks from disk: baton's folders, Exercism exercises, SWE-bench JSONL; errors
//! name the file, the task and the key.

use std::path::Path;

use baton_agent::{Difficulty, Reference, Repository, TaskFormat, load_dataset};

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn baton_task(root: &Path, name: &str, toml: &str) {
    write(root, &format!("{name}/task.toml"), toml);
    write(root, &format!("{name}/instruction.md"), "Make add() add.\n");
    write(
        root,
        &format!("{name}/repo/calc.py"),
        "def add(a, b):\n    return a - b\n",
    );
    write(
        root,
        &format!("{name}/hidden/test_calc.py"),
        "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 2), 4)\n",
    );
    write(
        root,
        &format!("{name}/solution.patch"),
        &baton_agent::unified_diff(
            "calc.py",
            Some("def add(a, b):\n    return a - b\n"),
            "def add(a, b):\n    return a + b\n",
        ),
    );
}

#[test]
fn a_folder_of_baton_tasks_and_a_single_task_load() {
    let dir = tempfile::tempdir().unwrap();
    baton_task(
        dir.path(),
        "add",
        "difficulty = \"easy\"\nfail_to_pass = [\"test_calc.T.test_add\"]\n",
    );
    baton_task(
        dir.path(),
        "add2",
        "id = \"custom\"\ndifficulty = \"hard\"\nfail_to_pass = [\"test_calc\"]\n",
    );
    let ds = load_dataset(dir.path().to_str().unwrap()).unwrap();
    assert_eq!(ds.format, TaskFormat::Baton);
    let ids: Vec<_> = ds.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["add", "custom"]);
    assert_eq!(ds.tasks[1].difficulty, Difficulty::Hard);
    assert!(matches!(ds.tasks[0].repository, Repository::Dir(_)));
    assert!(matches!(ds.tasks[0].reference, Some(Reference::Patch(_))));
    let one = load_dataset(dir.path().join("add").to_str().unwrap()).unwrap();
    assert_eq!(one.tasks.len(), 1);

    if let Some(scorer) = crate::scorer() {
        let report = baton_agent::check_tasks("tmp", &ds.tasks, &scorer, 2).unwrap();
        assert!(report.all_good(), "{report}");
    }
}

#[test]
fn bad_baton_tasks_name_file_task_and_key() {
    let dir = tempfile::tempdir().unwrap();
    baton_task(
        dir.path(),
        "t",
        "difficulty = \"tricky\"\nfail_to_pass = [\"test_calc\"]\n",
    );
    let err = load_dataset(dir.path().to_str().unwrap())
        .unwrap_err()
        .to_string();
    let file = dir.path().join("t/task.toml");
    assert!(
        err.starts_with(&format!(
            "{}: task \"t\": key \"difficulty\": ",
            file.display()
        )),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    baton_task(
        dir.path(),
        "a",
        "difficulty = \"easy\"\nfail_to_pass = [\"test_calc\"]\n",
    );
    baton_task(
        dir.path(),
        "b",
        "id = \"a\"\ndifficulty = \"easy\"\nfail_to_pass = [\"test_calc\"]\n",
    );
    let err = load_dataset(dir.path().to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("task \"a\": key \"id\": two tasks have this id"),
        "{err}"
    );

    let err = load_dataset("/nonexistent/tasks").unwrap_err().to_string();
    assert!(err.starts_with("/nonexistent/tasks: not found"), "{err}");
    let empty = tempfile::tempdir().unwrap();
    let err = load_dataset(empty.path().to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("holds no tasks"), "{err}");
}

#[test]
fn polyglot_exercises_load_with_buckets_from_difficulty_json() {
    let Some(dir) = crate::polyglot_dir() else {
        return;
    };
    let ds = load_dataset(dir.to_str().unwrap()).unwrap();
    assert_eq!(ds.format, TaskFormat::Polyglot);
    assert_eq!(ds.tasks.len(), 34);
    let count = |d| ds.tasks.iter().filter(|t| t.difficulty == d).count();
    assert_eq!(
        (
            count(Difficulty::Easy),
            count(Difficulty::Medium),
            count(Difficulty::Hard)
        ),
        (14, 10, 10)
    );
    let paasio = ds.tasks.iter().find(|t| t.id == "paasio").unwrap();
    assert_eq!(
        paasio.tests.fail_to_pass,
        ["paasio_test"],
        "test_utils.py is restored, not run"
    );
    assert_eq!(paasio.tests.files.len(), 2);
    let Repository::Files(files) = &paasio.repository else {
        panic!()
    };
    let names: Vec<_> = files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        names,
        ["paasio.py"],
        "no tests, .meta or .docs in the agent's repository"
    );
    let bowling = ds.tasks.iter().find(|t| t.id == "bowling").unwrap();
    assert!(
        bowling.instruction.contains("# Instructions") || bowling.instruction.contains("Score"),
        "{}",
        bowling.instruction
    );
}

#[test]
fn polyglot_without_ratings_or_with_a_broken_config_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "ex/.meta/config.json",
        r#"{"files": {"solution": ["ex.py"], "test": ["ex_test.py"], "example": [".meta/example.py"]}}"#,
    );
    write(dir.path(), "ex/.docs/instructions.md", "Do it.\n");
    write(dir.path(), "ex/ex.py", "");
    write(dir.path(), "ex/ex_test.py", "");
    write(dir.path(), "ex/.meta/example.py", "");
    let spec = dir.path().to_str().unwrap();
    let err = load_dataset(spec).unwrap_err().to_string();
    assert!(
        err.contains("difficulty.json") && err.contains("beside the exercises"),
        "{err}"
    );
    write(
        dir.path(),
        "difficulty.json",
        r#"{"difficulty": {"other": 2}}"#,
    );
    let err = load_dataset(spec).unwrap_err().to_string();
    assert!(
        err.contains("task \"ex\": key \"difficulty\": no rating"),
        "{err}"
    );
    write(
        dir.path(),
        "difficulty.json",
        r#"{"difficulty": {"ex": 6}}"#,
    );
    assert_eq!(
        load_dataset(spec).unwrap().tasks[0].difficulty,
        Difficulty::Hard
    );
    write(
        dir.path(),
        "ex/.meta/config.json",
        r#"{"files": {"solution": ["../evil.py"], "test": ["ex_test.py"]}}"#,
    );
    let err = load_dataset(spec).unwrap_err().to_string();
    assert!(
        err.contains("key \"files.solution\"") && err.contains("../evil.py"),
        "{err}"
    );
}

fn swebench_row(id: &str, difficulty: &str) -> serde_json::Value {
    serde_json::json!({
        "instance_id": id,
        "repo": "example/project",
        "base_commit": "0123456789abcdef",
        "problem_statement": "The widget breaks on empty input.",
        "patch": "diff --git a/w.py b/w.py\n",
        "test_patch": "diff --git a/test_w.py b/test_w.py\n",
        "FAIL_TO_PASS": "[\"test_w.py::test_empty\"]",
        "PASS_TO_PASS": ["test_w.py::test_basic"],
        "difficulty": difficulty,
        "version": "1.0",
    })
}

#[test]
fn swebench_jsonl_loads_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("verified.jsonl");
    let rows = [
        swebench_row("example__project-1", "<15 min fix"),
        swebench_row("example__project-2", ">4 hours"),
    ];
    std::fs::write(
        &file,
        rows.iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let ds = load_dataset(file.to_str().unwrap()).unwrap();
    assert_eq!(ds.format, TaskFormat::SweBench);
    let t = &ds.tasks[0];
    assert_eq!(t.difficulty, Difficulty::Easy);
    assert_eq!(ds.tasks[1].difficulty, Difficulty::Hard);
    assert_eq!(t.tests.fail_to_pass, ["test_w.py::test_empty"]);
    assert_eq!(t.tests.pass_to_pass, ["test_w.py::test_basic"]);
    assert_eq!(
        t.repository,
        Repository::Image(
            "docker.io/swebench/sweb.eval.x86_64.example_1776_project-1:latest".into()
        )
    );
    assert_eq!(t.workdir, "/testbed");
    if let Some(scorer) = crate::scorer() {
        let err = scorer.score(t, "").unwrap_err().to_string();
        assert!(err.contains("official harness"), "{err}");
    }

    let mut bad = swebench_row("example__project-3", "a fortnight");
    std::fs::write(&file, format!("{}\n{}\n", rows[0], bad)).unwrap();
    let err = load_dataset(file.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "{}: line 2: task \"example__project-3\": key \"difficulty\": ",
            file.display()
        )),
        "{err}"
    );
    bad["difficulty"] = "<15 min fix".into();
    bad["FAIL_TO_PASS"] = "not a list".into();
    std::fs::write(&file, format!("{bad}\n")).unwrap();
    let err = load_dataset(file.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("line 1: task \"example__project-3\": key \"FAIL_TO_PASS\""),
        "{err}"
    );
    std::fs::write(&file, format!("{}\n{}\n", rows[0], rows[0])).unwrap();
    let err = load_dataset(file.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("line 2") && err.contains("appears twice"),
        "{err}"
    );
    std::fs::write(&file, "{\"instance_id\": \"x\"\n").unwrap();
    let err = load_dataset(file.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 1: not JSON"), "{err}");
}

#[test]
fn the_hubs_parquet_and_jsonl_exports_load_to_the_same_instances() {
    let dir = crate::fixtures().join("swebench");
    let parquet = load_dataset(dir.join("verified-sample.parquet").to_str().unwrap()).unwrap();
    let jsonl = load_dataset(dir.join("verified-sample.jsonl").to_str().unwrap()).unwrap();
    assert_eq!(parquet.format, TaskFormat::SweBench);
    let origins = |ds: &baton_agent::AgentDataset| -> Vec<String> {
        ds.tasks.iter().map(|t| t.origin.clone()).collect()
    };
    let parquet_file = dir.join("verified-sample.parquet").display().to_string();
    assert_eq!(
        origins(&parquet),
        [
            format!("{parquet_file}: row 1"),
            format!("{parquet_file}: row 2")
        ]
    );
    let same_origin = |ds: &baton_agent::AgentDataset| -> Vec<baton_agent::AgentTask> {
        let mut tasks = ds.tasks.clone();
        tasks.iter_mut().for_each(|t| t.origin.clear());
        tasks
    };
    assert_eq!(same_origin(&parquet), same_origin(&jsonl));
    let ids: Vec<_> = parquet.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["demo__calc-1", "demo__words-7"]);
    let words = &parquet.tasks[1];
    assert_eq!(words.difficulty, Difficulty::Hard);
    assert_eq!(
        words.tests.pass_to_pass,
        ["test_words.py::test_ascii", "test_words.py::test_empty"]
    );
    assert!(
        words
            .instruction
            .contains("café is split in two — see “words()”")
    );
    assert_eq!(
        words.repository,
        Repository::Image("docker.io/swebench/sweb.eval.x86_64.demo_1776_words-7:latest".into())
    );

    let bad = dir.join("verified-bad-difficulty.parquet");
    let err = load_dataset(bad.to_str().unwrap()).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!(
            "{}: row 2: task \"demo__words-7\": key \"difficulty\": ",
            bad.display()
        )),
        "{err}"
    );

    // cut short (a download that stopped): an error naming the file, not a panic
    let tmp = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(dir.join("verified-sample.parquet")).unwrap();
    for cut in [bytes.len() / 2, 4] {
        let short = tmp.path().join("short.parquet");
        std::fs::write(&short, &bytes[..cut]).unwrap();
        let err = load_dataset(short.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("{}: not a readable Parquet file", short.display())),
            "{err}"
        );
    }
}
