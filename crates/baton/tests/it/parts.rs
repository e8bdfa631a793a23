//! One experiment run in parts and merged: the merge's report is the unsplit run's byte
//! for byte, every mismatch between parts is refused naming the part, and the spending
//! cap is the experiment's total across parts.
// See: issue 33

use std::path::Path;

use rusqlite::Connection;

use crate::support::{SimServer, sim_pair};

use crate::{baton, stderr, stdout};

/// A chat experiment with simulated models: two families, anchors, forked handoffs
/// both ways, a compaction summary, two replicates.
const CHAT: &str = concat!(
    r#"name = "split"
dataset = "sample"
families = ["math", "actions"]
limit = 3
replicates = 2
seed = 33
switch_points = ["middle"]
directions = ["escalation", "downshift"]
interfaces = ["raw", "compact_pre"]
"#,
    sim_pair!()
);

fn ok(dir: &Path, args: &[&str]) -> String {
    let o = baton(dir, args);
    assert!(
        o.status.success(),
        "baton {args:?}: {}\n{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// `baton report` of `folder` in Markdown and JSON.
fn reports(dir: &Path, folder: &str) -> (String, String) {
    (
        ok(dir, &["report", folder]),
        ok(dir, &["report", folder, "--format", "json"]),
    )
}

/// Run every part of `exp.toml` into `p1`, `p2`, … and return the folders.
fn run_parts(dir: &Path, n: u32, extra: &[&str]) -> Vec<String> {
    (1..=n)
        .map(|i| {
            let out = format!("p{i}");
            let part = format!("{i}/{n}");
            let mut args = vec!["run", "exp.toml", "--part", &part, "--out", &out, "--quiet"];
            args.extend_from_slice(extra);
            ok(dir, &args);
            out
        })
        .collect()
}

fn tasks_of(folder: &Path) -> Vec<String> {
    let c = Connection::open(folder.join("results.sqlite")).unwrap();
    c.prepare("SELECT task_id FROM tasks ORDER BY task_id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn issue_33_three_chat_parts_merged_report_the_unsplit_run_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("exp.toml"), CHAT).unwrap();
    ok(d, &["run", "exp.toml", "--out", "whole", "--quiet"]);
    let parts = run_parts(d, 3, &[]);
    // every task in exactly one part, and every part has some
    let mut all: Vec<String> = parts.iter().flat_map(|p| tasks_of(&d.join(p))).collect();
    assert!(parts.iter().all(|p| !tasks_of(&d.join(p)).is_empty()));
    all.sort();
    assert_eq!(all, tasks_of(&d.join("whole")));
    let mut args = vec!["merge"];
    args.extend(parts.iter().map(String::as_str));
    args.extend(["--out", "merged"]);
    let said = ok(d, &args);
    assert!(said.starts_with("merged 3 parts: episodes: "), "{said}");
    let whole = reports(d, "whole");
    let merged = reports(d, "merged");
    assert_eq!(merged.0, whole.0, "Markdown");
    assert_eq!(merged.1, whole.1, "JSON");
    assert!(whole.0.contains("## "), "a report with tables: {}", whole.0);
    // merging again gives the same store's report
    ok(d, &args);
    assert_eq!(reports(d, "merged"), whole);
    // resuming a part sends nothing and changes nothing
    let again = ok(d, &["run", "exp.toml", "--part", "2/3", "--out", "p2"]);
    assert!(again.contains("calls: 0 new"), "{again}");
}

/// Merge `parts` into `out` and return its exit code and stderr.
fn merge(dir: &Path, parts: &[&str], out: &str) -> (i32, String) {
    let mut args = vec!["merge"];
    args.extend_from_slice(parts);
    args.extend(["--out", out]);
    let o = baton(dir, &args);
    (o.status.code().unwrap_or(-1), stderr(&o))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn sql(folder: &Path, statement: &str) {
    Connection::open(folder.join("results.sqlite"))
        .unwrap()
        .execute_batch(statement)
        .unwrap();
}

#[test]
fn issue_33_each_mismatch_between_parts_is_refused_naming_the_part() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let small = CHAT
        .replace(
            "families = [\"math\", \"actions\"]",
            "families = [\"math\"]",
        )
        .replace("replicates = 2", "replicates = 1")
        .replace(
            "interfaces = [\"raw\", \"compact_pre\"]",
            "interfaces = [\"raw\"]",
        );
    std::fs::write(d.join("exp.toml"), &small).unwrap();
    run_parts(d, 3, &[]);
    let refused = |parts: &[&str], words: &[&str]| {
        let (code, err) = merge(d, parts, "m");
        assert_eq!(code, 2, "{parts:?}: {err}");
        for w in words {
            assert!(err.contains(w), "{parts:?}: {w:?} not in {err}");
        }
    };
    // a missing part, a repeated one
    refused(&["p1", "p2"], &["part(s) 3 of 3 missing"]);
    refused(
        &["p1", "p2", "p2", "p3"],
        &["part 2/3 is given twice", "p2"],
    );
    // a different part count
    std::fs::write(d.join("exp.toml"), &small).unwrap();
    ok(
        d,
        &["run", "exp.toml", "--part", "1/2", "--out", "q1", "--quiet"],
    );
    refused(
        &["p1", "p2", "q1"],
        &[
            "part q1 (1/2)",
            "the part count",
            "2 parts there, 3 parts here",
        ],
    );
    // a different experiment, price card, input
    for (folder, change, what) in [
        (
            "x-exp",
            "UPDATE experiment SET spec_sha256 = 'other'",
            "the experiment file",
        ),
        (
            "x-card",
            "UPDATE experiment SET price_card_sha256 = 'other'",
            "the price card",
        ),
        (
            "x-input",
            "UPDATE inputs SET sha256 = 'other' WHERE name = 'templates'",
            "input \"templates\"",
        ),
    ] {
        copy_dir(&d.join("p3"), &d.join(folder));
        sql(&d.join(folder), change);
        refused(
            &["p1", "p2", folder],
            &[&format!("part {folder} (3/3)"), what, "sha256 other there"],
        );
    }
    // a task in two parts
    copy_dir(&d.join("p3"), &d.join("x-task"));
    let (owner, task) = ["p1", "p2"]
        .into_iter()
        .find_map(|p| tasks_of(&d.join(p)).into_iter().next().map(|t| (p, t)))
        .expect("a task outside part 3");
    sql(
        &d.join("x-task"),
        &format!(
            "INSERT INTO tasks SELECT '{task}', family, n_turns, schedule_sha256, sample_json FROM tasks LIMIT 1"
        ),
    );
    refused(
        &["p1", "p2", "x-task"],
        &[&format!(
            "task {task:?} is in two parts: {owner} and x-task"
        )],
    );
    // a part still locked by a run
    let lock = std::fs::File::open(d.join("p2")).unwrap();
    lock.try_lock().unwrap();
    refused(&["p1", "p2", "p3"], &["part p2: still locked"]);
    drop(lock);
    // a spool with a paid reply not yet imported
    copy_dir(&d.join("p3"), &d.join("x-spool"));
    let spool = d.join("x-spool/results.sqlite-spool");
    let mut bytes = std::fs::read(&spool).unwrap_or_default();
    let line = b"{\"kind\":\"attempt\"}\n";
    if bytes.len() < line.len() {
        bytes.resize(line.len(), 0);
    }
    bytes[..line.len()].copy_from_slice(line);
    std::fs::write(&spool, bytes).unwrap();
    refused(
        &["p1", "p2", "x-spool"],
        &["part x-spool: its spool holds paid replies not yet imported"],
    );
    // a folder of a whole run, and an --out that holds one
    ok(d, &["run", "exp.toml", "--out", "whole", "--quiet"]);
    refused(
        &["p1", "p2", "whole"],
        &["part whole: its store was not run with --part"],
    );
    let (code, err) = merge(d, &["p1", "p2", "p3"], "whole");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--out whole: holds a store that is not a merge"),
        "{err}"
    );
    // the parts as they are merge, twice, to the same report
    let (code, err) = merge(d, &["p3", "p1", "p2"], "m");
    assert_eq!(code, 0, "{err}");
    let first = reports(d, "m");
    assert_eq!(merge(d, &["p1", "p2", "p3"], "m").0, 0);
    assert_eq!(reports(d, "m"), first);
    assert_eq!(first, reports(d, "whole"));
    // a part's folder refuses another part, and a whole run
    let o = baton(
        d,
        &["run", "exp.toml", "--part", "2/3", "--out", "p1", "--quiet"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("holds part 1/3 of the experiment, and the run asks for part 2/3"),
        "{}",
        stderr(&o)
    );
    let o = baton(d, &["run", "exp.toml", "--out", "p1", "--quiet"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("the run asks for the whole experiment"),
        "{}",
        stderr(&o)
    );
    // a chat experiment has no phases
    let o = baton(
        d,
        &[
            "run", "exp.toml", "--part", "1/3", "--phase", "anchors", "--out", "p1",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a chat experiment has no barrier; run its parts without --phase"),
        "{}",
        stderr(&o)
    );
}

/// The chat experiment with its models served by `server`, priced as the simulated ones.
fn billed(server: &SimServer) -> String {
    CHAT.replace(
        "model = \"sim/lc\"",
        &format!(
            "model = \"openai-compatible/lc\"\nprice = \"sim/lc\"\nbase_url = \"{}\"",
            server.base_url
        ),
    )
    .replace(
        "model = \"sim/hc\"",
        &format!(
            "model = \"openai-compatible/hc\"\nprice = \"sim/hc\"\nbase_url = \"{}\"",
            server.base_url
        ),
    )
}

/// Every billed attempt's cost in the store of `folder`, in picodollars.
fn spent(folder: &Path) -> i64 {
    Connection::open(folder.join("results.sqlite"))
        .unwrap()
        .query_row(
            "SELECT (SELECT coalesce(sum(cost), 0) FROM calls) + (SELECT coalesce(sum(cost), 0) FROM attempts)",
            [],
            |r| r.get(0),
        )
        .unwrap()
}

#[test]
fn issue_33_max_cost_over_three_parts_is_the_experiments_total() {
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("exp.toml"), billed(&server)).unwrap();
    // the whole run costs about $0.37: a $0.10 cap stops every part
    let cap = 0.10;
    let mut shares = Vec::new();
    for i in 1..=3 {
        let part = format!("{i}/3");
        let out = format!("p{i}");
        let o = baton(
            d,
            &[
                "run",
                "exp.toml",
                "--part",
                &part,
                "--out",
                &out,
                "--max-cost",
                "0.10",
                "--quiet",
            ],
        );
        assert_eq!(
            o.status.code(),
            Some(1),
            "stopped by its share: {}",
            stderr(&o)
        );
        let said = stdout(&o);
        let line = said
            .lines()
            .find(|l| l.starts_with(&format!("part {part}: spending cap $")))
            .unwrap_or_else(|| panic!("no share printed: {said}"));
        assert!(line.contains("of the experiment's $0.100000"), "{line}");
        let share: f64 = line
            .split_once("cap $")
            .unwrap()
            .1
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        shares.push(share);
        // the part kept within its share
        assert!(spent(&d.join(&out)) as f64 <= share * 1e12, "{line}");
    }
    assert!(shares.iter().sum::<f64>() <= cap + 1e-12, "{shares:?}");
    assert!(shares.iter().all(|s| *s > 0.0), "{shares:?}");
    let (code, err) = merge(d, &["p1", "p2", "p3"], "m");
    assert_eq!(code, 1, "unfinished episodes: {err}");
    assert!(err.contains("unfinished in their parts"), "{err}");
    let total = spent(&d.join("m"));
    assert!(total > 0 && total <= 100_000_000_000, "{total}");
    assert_eq!(
        total,
        (1..=3)
            .map(|i| spent(&d.join(format!("p{i}"))))
            .sum::<i64>()
    );
    // every billed attempt the server answered is in the merged store
    let stored: i64 = Connection::open(d.join("m/results.sqlite"))
        .unwrap()
        .query_row(
            "SELECT (SELECT count(*) FROM calls) + (SELECT count(*) FROM attempts)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(server.stats()["requests"].as_i64().unwrap(), stored);
    // the unfinished episodes report as incomplete
    let json: serde_json::Value =
        serde_json::from_str(&ok(d, &["report", "m", "--format", "json"])).unwrap();
    assert!(json.to_string().contains("incomplete"), "{json}");
}

/// The agent handoff study on the bundled agent sample with simulated agents: four
/// tasks (one or two in each of three parts), two percentiles, both directions.
const AGENT: &str = r#"kind = "agent"
name = "agent-split"
dataset = "agent-sample"
limit = 4
seed = 5
concurrency = 8
interfaces = ["raw"]

[agent]
step_limit = 30

[models.lc]
model = "sim/lc"

[models.lc.sim]
skill = 0.45
malformed = 0.05

[models.hc]
model = "sim/hc"

[[pairs]]
low = "lc"
high = "hc"

[handoff]
percentiles = [10, 50]
"#;

fn code(dir: &Path, args: &[&str]) -> (i32, String) {
    let o = baton(dir, args);
    (o.status.code().unwrap_or(-1), stderr(&o))
}

#[test]
fn issue_33_three_agent_parts_anchors_thresholds_handoffs_merged_report_the_unsplit_study() {
    if !crate::env::sandbox_works() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("exp.toml"), AGENT).unwrap();
    ok(d, &["run", "exp.toml", "--out", "whole", "--quiet"]);
    // a part of the study without a phase is told the two phases
    let (c, err) = code(d, &["run", "exp.toml", "--part", "1/3", "--out", "p1"]);
    assert_eq!(c, 2, "{err}");
    assert!(
        err.contains("runs in two phases: `--part 1/3 --phase anchors`"),
        "{err}"
    );
    for i in 1..=3 {
        let part = format!("{i}/3");
        let out = format!("p{i}");
        ok(
            d,
            &[
                "run", "exp.toml", "--part", &part, "--out", &out, "--phase", "anchors", "--quiet",
            ],
        );
    }
    // the anchors phase stops at the barrier: no handoff ran, no threshold stored
    let c = Connection::open(d.join("p1/results.sqlite")).unwrap();
    let stored: i64 = c
        .query_row("SELECT count(*) FROM agent_thresholds", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, 0);
    drop(c);
    // thresholds need every part
    let (c, err) = code(d, &["thresholds", "p1", "p2", "--out", "t.json"]);
    assert_eq!(c, 2, "{err}");
    assert!(err.contains("part(s) 3 of 3 missing"), "{err}");
    // thresholds need every part's anchors finished
    copy_dir(&d.join("p3"), &d.join("x-anchors"));
    sql(
        &d.join("x-anchors"),
        "UPDATE episodes SET status = 'incomplete' WHERE id = (SELECT min(id) FROM episodes)",
    );
    let (c, err) = code(
        d,
        &["thresholds", "p1", "p2", "x-anchors", "--out", "t.json"],
    );
    assert_eq!(c, 2, "{err}");
    assert!(
        err.contains("part x-anchors: its anchors are incomplete (the anchor of model"),
        "{err}"
    );
    let said = ok(d, &["thresholds", "p1", "p2", "p3", "--out", "t.json"]);
    assert!(said.contains("from 8 anchors of 3 parts"), "{said}");
    // handoffs need the thresholds file, and refuse one whose anchors are not theirs
    let (c, err) = code(
        d,
        &[
            "run", "exp.toml", "--part", "2/3", "--out", "p2", "--phase", "handoffs",
        ],
    );
    assert_eq!(c, 2, "{err}");
    assert!(
        err.contains("--phase handoffs needs --thresholds FILE"),
        "{err}"
    );
    let text = std::fs::read_to_string(d.join("t.json")).unwrap();
    let mut file: serde_json::Value = serde_json::from_str(&text).unwrap();
    let p2_task = tasks_of(&d.join("p2"))[0].clone();
    for a in file["anchors"].as_array_mut().unwrap() {
        if a["task"] == p2_task.as_str() {
            a["calls"] = (a["calls"].as_u64().unwrap() + 1).into();
        }
    }
    std::fs::write(d.join("bad.json"), file.to_string()).unwrap();
    let (c, err) = code(
        d,
        &[
            "run",
            "exp.toml",
            "--part",
            "2/3",
            "--out",
            "p2",
            "--phase",
            "handoffs",
            "--thresholds",
            "bad.json",
        ],
    );
    assert_eq!(c, 2, "{err}");
    assert!(
        err.contains("--thresholds bad.json: its anchor of model"),
        "{err}"
    );
    assert!(err.contains(&format!("on task {p2_task:?}")), "{err}");
    for i in 1..=3 {
        let part = format!("{i}/3");
        let out = format!("p{i}");
        ok(
            d,
            &[
                "run",
                "exp.toml",
                "--part",
                &part,
                "--out",
                &out,
                "--phase",
                "handoffs",
                "--thresholds",
                "t.json",
                "--quiet",
            ],
        );
    }
    // parts whose thresholds differ are not merged
    copy_dir(&d.join("p3"), &d.join("x-th"));
    sql(
        &d.join("x-th"),
        "UPDATE agent_thresholds SET s = s + 1 WHERE rowid = (SELECT min(rowid) FROM agent_thresholds)",
    );
    let (c, err) = merge(d, &["p1", "p2", "x-th"], "m");
    assert_eq!(c, 2, "{err}");
    assert!(
        err.contains("part x-th (3/3) differs from part p1 (1/3) in the thresholds"),
        "{err}"
    );
    let said = ok(d, &["merge", "p1", "p2", "p3", "--out", "m"]);
    assert!(
        said.starts_with("merged 3 parts: episodes: 24 scored"),
        "{said}"
    );
    let whole = reports(d, "whole");
    let merged = reports(d, "m");
    assert_eq!(merged.0, whole.0, "Markdown");
    assert_eq!(merged.1, whole.1, "JSON");
    assert!(
        whole.0.contains("p10"),
        "the thresholds are in the report: {}",
        whole.0
    );
}
