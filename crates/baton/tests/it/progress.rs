//! Progress without a terminal: plain lines a log file can show.

use std::process::Command;

/// See: issue 35, "Done when": a run whose output goes to a file (no terminal) prints
/// progress lines while it runs, and a last line with what it met.
#[test]
fn issue_35_a_run_without_a_terminal_prints_progress_lines() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("exp.toml"),
        r#"
name = "progress"
dataset = "sample"
families = ["math"]
limit = 2
replicates = 1
seed = 1
concurrency = 1
[chat]
switch_points = ["early"]
directions = ["escalation"]
[models.lc]
model = "sim/lc"
[models.lc.sim]
latency_ms = 120
[models.hc]
model = "sim/hc"
[models.hc.sim]
latency_ms = 120
[[pairs]]
low = "lc"
high = "hc"
"#,
    )
    .unwrap();
    let log = dir.path().join("run.log");
    let file = std::fs::File::create(&log).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", "exp.toml", "--out", "out"])
        .current_dir(dir.path())
        .env("BATON_PROGRESS_EVERY", "1")
        .env_remove("BATON_LOG")
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .status()
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(status.success(), "{text}");
    let planned = text.lines().filter(|l| l.starts_with("planned: ")).count();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("progress: ["))
        .collect();
    let done: Vec<&str> = text.lines().filter(|l| l.starts_with("done: [")).collect();
    assert_eq!(planned, 1, "{text}");
    assert!(
        lines.len() >= 2,
        "a line a second on a run of several seconds: {text}"
    );
    assert_eq!(done.len(), 1, "{text}");
    assert!(
        lines[0].contains(" episodes (") && lines[0].contains(" calls · spent $"),
        "{}",
        lines[0]
    );
    // the last line counts every episode the run planned
    let counts = done[0].split_once("] ").unwrap().1;
    let (ended, planned) = counts
        .split_once(" episodes")
        .unwrap()
        .0
        .split_once('/')
        .unwrap();
    assert_eq!(ended, planned, "{}", done[0]);
    assert!(!text.contains('\r'), "no bar redraws in a log");
}
