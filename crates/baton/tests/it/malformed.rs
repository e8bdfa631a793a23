//! Malformed experiment files and hostile input paths: each one exits 2 naming the file
//! and the key, without a panic, without a call and without a store.
// See: issue 23 (13 of 61 malformed experiment files ran anyway; /dev/zero inputs grew
// past 2.5 GB).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::sim_pair;
use crate::{baton, stderr};

const BASE: &str = concat!(
    r#"name = "bad"
dataset = "sample"
families = ["math"]
limit = 1
switch_points = ["middle"]
directions = ["escalation"]
"#,
    sim_pair!()
);

/// `BASE` with `line` added to the top level (before any table).
fn top(line: &str) -> String {
    format!("{line}\n{BASE}")
}

/// `BASE` with `line` added to `[models.lc]`.
fn lc(line: &str) -> String {
    BASE.replace(
        "model = \"sim/lc\"\n",
        &format!("model = \"sim/lc\"\n{line}\n"),
    )
}

/// `BASE` with `from` replaced by `to`.
fn edit(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "{from}");
    BASE.replacen(from, to, 1)
}

/// (what, experiment text, a word the error must contain)
fn cases() -> Vec<(&'static str, String, &'static str)> {
    vec![
        ("K = 0", edit("[\"middle\"]", "[0]"), "switch_points"),
        (
            "K past every task",
            edit("[\"middle\"]", "[99]"),
            "switch_points",
        ),
        (
            "no switch point",
            edit("[\"middle\"]", "[]"),
            "switch_points",
        ),
        ("no direction", edit("[\"escalation\"]", "[]"), "directions"),
        ("no interface", top("interfaces = []"), "interfaces"),
        (
            "unknown interface",
            top("interfaces = [\"teleport\"]"),
            "teleport",
        ),
        ("limit 0", edit("limit = 1", "limit = 0"), "limit"),
        ("negative limit", edit("limit = 1", "limit = -1"), "limit"),
        ("replicates 0", top("replicates = 0"), "replicates"),
        (
            "replicates u32::MAX",
            top("replicates = 4294967295"),
            "replicates",
        ),
        (
            "replicates past u32",
            top("replicates = 4294967296"),
            "replicates",
        ),
        ("concurrency 0", top("concurrency = 0"), "concurrency"),
        (
            "concurrency 1e9 as integer",
            top("concurrency = 1000000000"),
            "concurrency",
        ),
        (
            "concurrency 1e9 as float",
            top("concurrency = 1e9"),
            "concurrency",
        ),
        ("negative seed", top("seed = -1"), "seed"),
        (
            "negative retry budget",
            top("retry_budget_secs = -1"),
            "retry_budget_secs",
        ),
        (
            "unknown top-level key",
            top("famlies = [\"math\"]"),
            "famlies",
        ),
        (
            "unknown family",
            edit("[\"math\"]", "[\"poetry\"]"),
            "poetry",
        ),
        (
            "family with no task",
            edit("dataset = \"sample\"", "dataset = \"one.jsonl\""),
            "families",
        ),
        (
            "missing dataset",
            edit("\"sample\"", "\"missing.json\""),
            "missing.json",
        ),
        (
            "dataset is a folder",
            edit("\"sample\"", "\"folder\""),
            "folder",
        ),
        (
            "dataset is /dev/zero",
            edit("\"sample\"", "\"/dev/zero\""),
            "/dev/zero",
        ),
        ("no name", edit("name = \"bad\"\n", ""), "name"),
        (
            "no pairs",
            edit("[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n", ""),
            "pairs",
        ),
        (
            "pair with a missing model",
            edit("low = \"lc\"", "low = \"mc\""),
            "mc",
        ),
        (
            "pair of one model",
            edit("high = \"hc\"", "high = \"lc\""),
            "same model",
        ),
        (
            "unknown pair key",
            edit("high = \"hc\"", "high = \"hc\"\nmiddle = \"x\""),
            "middle",
        ),
        (
            "model without a provider",
            edit("\"sim/lc\"", "\"lc\""),
            "provider/model",
        ),
        (
            "unknown provider",
            edit("\"sim/lc\"", "\"nosuch/lc\""),
            "nosuch",
        ),
        ("max_tokens 0", lc("max_tokens = 0"), "max_tokens"),
        ("negative max_tokens", lc("max_tokens = -5"), "max_tokens"),
        (
            "max_tokens past u32",
            lc("max_tokens = 4294967296"),
            "max_tokens",
        ),
        ("top_p nan", lc("top_p = nan"), "top_p"),
        ("top_p 1.5", lc("top_p = 1.5"), "top_p"),
        ("top_p 0", lc("top_p = 0.0"), "top_p"),
        ("temperature -1", lc("temperature = -1.0"), "temperature"),
        ("temperature inf", lc("temperature = inf"), "temperature"),
        (
            "temperature as text",
            lc("temperature = \"hot\""),
            "temperature",
        ),
        (
            "requests_per_minute 0",
            lc("requests_per_minute = 0"),
            "requests_per_minute",
        ),
        (
            "tokens_per_minute 0",
            lc("tokens_per_minute = 0"),
            "tokens_per_minute",
        ),
        ("model concurrency 0", lc("concurrency = 0"), "concurrency"),
        (
            "model concurrency huge",
            lc("concurrency = 1000000000"),
            "concurrency",
        ),
        (
            "unusable_retries 1000",
            lc("unusable_retries = 1000"),
            "unusable_retries",
        ),
        ("extra n", lc("extra = { n = 8 }"), "extra.n"),
        (
            "extra best_of",
            lc("extra = { best_of = 3 }"),
            "extra.best_of",
        ),
        (
            "extra max_completion_tokens",
            lc("extra = { max_completion_tokens = 20000 }"),
            "extra.max_completion_tokens",
        ),
        (
            "extra max_output_tokens",
            lc("extra = { max_output_tokens = 20000 }"),
            "extra.max_output_tokens",
        ),
        (
            "extra max_tokens",
            lc("extra = { max_tokens = 20000 }"),
            "extra.max_tokens",
        ),
        (
            "extra model",
            lc("extra = { model = \"x\" }"),
            "extra.model",
        ),
        (
            "extra priority tier",
            lc("extra = { service_tier = \"priority\" }"),
            "service_tier",
        ),
        ("batch as text", lc("batch = \"yes\""), "batch"),
        ("unknown model key", lc("temprature = 1.0"), "temprature"),
        (
            "thinking budget off Anthropic",
            edit(
                "\"sim/lc\"",
                "\"openai/gpt-4o-mini\"\nthinking_budget = 2048",
            ),
            "thinking_budget",
        ),
        (
            "sim settings on an HTTP model",
            edit(
                "model = \"sim/lc\"",
                "model = \"openai/gpt-4o-mini\"\n[models.lc.sim]\nskill = 0.5",
            ),
            "[sim]",
        ),
        ("unknown sim key", lc("[models.lc.sim]\nskil = 0.5"), "skil"),
        (
            "price past any real rate",
            top("prices = \"huge.json\""),
            "output_cost_per_token",
        ),
        (
            "missing price card",
            top("prices = \"nope.json\""),
            "nope.json",
        ),
        (
            "price card is /dev/zero",
            top("prices = \"/dev/zero\""),
            "/dev/zero",
        ),
        (
            "missing templates",
            top("templates = \"no-such-dir\""),
            "no-such-dir",
        ),
        (
            "lic extraction without an extractor",
            top("extraction = \"lic\""),
            "extractor",
        ),
        ("not TOML", "this is not toml = = =".to_string(), "exp.toml"),
        ("empty file", String::new(), "name"),
    ]
}

fn fixtures(dir: &Path) {
    std::fs::create_dir(dir.join("folder")).unwrap();
    std::fs::write(
        dir.join("huge.json"),
        r#"{"sim/lc": {"input_cost_per_token": 2e-07, "output_cost_per_token": 1e308}}"#,
    )
    .unwrap();
    // one valid task of a family the experiment does not run
    let sample = baton_data::sample_dataset();
    let task = sample
        .tasks
        .iter()
        .find(|t| t.family.as_str() == "actions")
        .unwrap();
    std::fs::write(
        dir.join("one.jsonl"),
        serde_json::to_string(&task.sample).unwrap() + "\n",
    )
    .unwrap();
}

#[test]
fn issue_23_every_malformed_experiment_exits_2_naming_the_key_without_a_call() {
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    let mut failures = Vec::new();
    let cases = cases();
    for (what, text, word) in &cases {
        std::fs::write(dir.path().join("exp.toml"), text).unwrap();
        let out_dir = dir.path().join("out");
        let _ = std::fs::remove_dir_all(&out_dir);
        let t0 = Instant::now();
        let out = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
        let err = stderr(&out);
        let problems = [
            (out.status.code() != Some(2), "exit code is not 2"),
            (err.contains("panicked"), "panicked"),
            (!err.contains("exp.toml"), "the file is not named"),
            (!err.contains(word), "the key is not named"),
            (out_dir.join("results.sqlite").exists(), "a store was made"),
            (t0.elapsed() > Duration::from_secs(5), "took over 5 s"),
        ];
        for (bad, why) in problems {
            if bad {
                failures.push(format!(
                    "{what}: {why} ({:?}): {}",
                    out.status.code(),
                    err.trim()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} malformed files:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn issue_23_dev_zero_and_fifo_inputs_exit_2_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.toml");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for args in [
        vec!["run", "/dev/zero"],
        vec!["run", "fifo.toml"],
        vec!["run", "/dev/zero", "--dry-run"],
        vec!["data", "check", "/dev/zero"],
        vec!["data", "stats", "fifo.toml"],
        vec!["score", "--input", "/dev/zero"],
        vec!["score", "--input", "fifo.toml"],
    ] {
        let t0 = Instant::now();
        let out = baton(dir.path(), &args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("not a regular file"), "{args:?}: {err}");
        assert!(t0.elapsed() < Duration::from_secs(5), "{args:?}");
    }
}

/// An agent experiment's price card is refused as a chat experiment's is: exit 2 naming
/// the experiment, the `prices` key and the card, before any store is made.
#[test]
fn an_agent_experiments_bad_price_card_names_the_experiment_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    fixtures(dir.path());
    for (card, word) in [
        ("huge.json", "output_cost_per_token"),
        ("nope.json", "nope.json"),
        ("/dev/zero", "not a regular file"),
    ] {
        let text = format!(
            "kind = \"agent\"\nname = \"a\"\ndataset = \"agent-sample\"\nprices = {card:?}\n[models.lc]\nmodel = \"sim/lc\"\n"
        );
        std::fs::write(dir.path().join("exp.toml"), text).unwrap();
        let out = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{card}: {err}");
        assert!(
            err.contains(&format!("experiment exp.toml: prices = {card:?}: "))
                && err.contains(word),
            "{card}: {err}"
        );
        assert!(!dir.path().join("out/results.sqlite").exists(), "{card}");
    }
}
