//! LiC's whole protocol end to end: single-turn baselines and LiC's metrics over
//! replicates on the sample set, offline with the simulated models.

use serde_json::Value;

use crate::support::{baton_ok, report_json, sim_pair, write_experiment};
use crate::{baton, stdout};

/// See: issue 13, "Done when": a run with `baselines = ["full", "concat"]`,
/// `replicates = 3` and `extraction = "lic"` on the sample set completes offline, and
/// its JSON report carries the baseline cells (`interface` `full` / `concat`, with the
/// degradation against the sharded anchor), `aptitude` / `unreliability` per anchor and
/// handoff cell, and the extraction's spend and failures apart from the cells' cost.
#[test]
fn issue_13_baselines_and_lic_metrics_on_the_sample_set() {
    let Some(lic) = baton_fixture::shared_dir("lic") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = format!(
        concat!(
            r#"name = "protocol"
dataset = "sample"
limit = 2
replicates = 3
seed = 5
switch_points = ["middle"]
directions = ["escalation"]
templates = "lic"
lic_dir = {:?}
baselines = ["full", "concat"]
extraction = "lic"

[extractor]
model = "sim/lc"

"#,
            sim_pair!()
        ),
        lic.display().to_string()
    );
    write_experiment(dir.path(), &spec);
    baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let json = report_json(dir.path(), "out");

    let baselines = json["baselines"].as_array().expect("baseline rows");
    for interface in ["full", "concat"] {
        for model in ["lc", "hc"] {
            let cell = format!("{interface}({model})");
            let rows: Vec<&Value> = baselines.iter().filter(|r| r["cell"] == cell).collect();
            // five families and the all-families row
            assert_eq!(rows.len(), 6, "{cell}");
            for r in rows {
                assert_eq!(r["interface"], interface);
                // 2 tasks x 3 replicates per family, every one scored
                if r["family"] != "all" {
                    assert_eq!(r["n_attempted"], 6, "{cell} {}", r["family"]);
                    assert_eq!(r["n_scored"], 6, "{cell} {}", r["family"]);
                }
                assert!(r["degradation"].is_number(), "{cell}: {r}");
                assert!(r["sharded_score"].is_number(), "{cell}: {r}");
            }
        }
    }

    let cells = json["cells"].as_array().expect("cells");
    let per_cell: Vec<&Value> = cells
        .iter()
        .filter(|c| c["cell"].is_string() && c["family"] != "all")
        .collect();
    assert!(per_cell.iter().any(|c| c["interface"] == "single"));
    assert!(per_cell.iter().any(|c| c["interface"] == "raw"));
    for c in &per_cell {
        assert!(c["aptitude"].is_number(), "{c}");
        assert!(c["unreliability"].is_number(), "{c}");
        assert_eq!(c["n_reliability_tasks"], 2, "{c}");
        let (a, u) = (
            c["aptitude"].as_f64().unwrap(),
            c["unreliability"].as_f64().unwrap(),
        );
        // BLEU of a verbatim match is 1.0000000000000004, as in sacreBLEU
        assert!(
            (0.0..=100.0 + 1e-9).contains(&a) && (0.0..=a).contains(&u),
            "{c}"
        );
        if c["interface"] == "raw" {
            assert!(c["unreliability_lc"].is_number() && c["unreliability_hc"].is_number());
        }
    }

    // LiC's extraction: its spend apart and nonzero, its failures counted (the sim/lc
    // extractor slips often), only for math and database
    let total = &json["extraction"];
    assert!(total["extraction_calls"].as_u64().unwrap() > 0, "{total}");
    assert!(
        total["extraction_cost_usd"].as_f64().unwrap() > 0.0,
        "{total}"
    );
    let failed = total["extraction_failed"].as_u64().unwrap();
    assert!(failed > 0, "{total}");
    let mut failed_in_cells = 0;
    for c in &per_cell {
        let llm = c["family"] == "math" || c["family"] == "database";
        assert_eq!(c["extraction_calls"].as_u64().unwrap() > 0, llm, "{c}");
        assert_eq!(c["extraction_cost_usd"].as_f64().unwrap() > 0.0, llm, "{c}");
        assert!(c["extraction_failed"].as_u64().unwrap() <= c["n_no_answer"].as_u64().unwrap());
        failed_in_cells += c["extraction_failed"].as_u64().unwrap();
    }
    let failed_in_baselines: u64 = baselines
        .iter()
        .filter(|r| r["family"] != "all")
        .map(|r| r["extraction_failed"].as_u64().unwrap())
        .sum();
    assert_eq!(failed_in_cells + failed_in_baselines, failed);
    assert!(
        baselines
            .iter()
            .any(|r| r["extraction_cost_usd"].as_f64().unwrap() > 0.0)
    );
    // Which rule read each final reply: LiC's extractor for math and database, the
    // deterministic rules elsewhere; every rule's no-answer count within its replies.
    let rules = json["extraction_rules"]
        .as_array()
        .expect("extraction_rules");
    let rule_of = |family: &str| -> Vec<&str> {
        rules
            .iter()
            .filter(|r| r["family"] == family)
            .map(|r| r["rule"].as_str().unwrap())
            .collect()
    };
    assert!(
        rule_of("math")
            .iter()
            .all(|r| r.starts_with("math.lic_llm")),
        "{rules:?}"
    );
    assert!(
        rule_of("database")
            .iter()
            .all(|r| r.starts_with("database.lic_llm"))
    );
    assert!(
        rule_of("code").iter().all(|r| r.starts_with("code.")),
        "{rules:?}"
    );
    assert!(!rule_of("actions").is_empty() && !rule_of("data2text").is_empty());
    for r in rules {
        assert!(r["n_no_answer"].as_u64() <= r["n"].as_u64(), "{r}");
    }
    let scored: u64 = rules.iter().map(|r| r["n"].as_u64().unwrap()).sum();
    assert!(scored > 0);

    let md = baton(dir.path(), &["report", "out"]);
    let md = stdout(&md);
    assert!(md.contains("Single-turn baselines") && md.contains("LiC's metrics over replicates"));
    assert!(
        md.contains("Answer extraction (LiC's LLM extractor)")
            && md.contains("## Extraction rules"),
        "{md}"
    );
}

/// See: issue 24. The simulated models answer LiC's `full` prompt (the original
/// instruction in one turn) instead of summarising it: on an offline run of the whole
/// sample set every `full(M)` cell scores above 0 in every family, no `full` reply lacks an
/// answer, and `concat(M)`, which carries the shards, still does too.
#[test]
fn issue_24_full_cells_of_an_offline_sample_run_score_above_zero() {
    let Some(lic) = baton_fixture::shared_dir("lic") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = format!(
        concat!(
            r#"name = "full"
dataset = "sample"
seed = 3
switch_points = ["middle"]
directions = ["escalation"]
interfaces = ["raw"]
templates = "lic"
lic_dir = {:?}
baselines = ["full", "concat"]

"#,
            sim_pair!()
        ),
        lic.display().to_string()
    );
    write_experiment(dir.path(), &spec);
    baton_ok(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let json = report_json(dir.path(), "out");
    let baselines = json["baselines"].as_array().expect("baseline rows");
    for interface in ["full", "concat"] {
        for model in ["lc", "hc"] {
            let cell = format!("{interface}({model})");
            let rows: Vec<&Value> = baselines.iter().filter(|r| r["cell"] == cell).collect();
            assert_eq!(rows.len(), 6, "{cell}: five families and all");
            for r in rows {
                let score = r["score"].as_f64().unwrap_or(0.0);
                assert!(score > 0.0, "{cell} {}: {r}", r["family"]);
                assert_eq!(r["n_no_answer"], 0, "{cell} {}: {r}", r["family"]);
                assert_eq!(r["n_scored"], r["n_attempted"], "{cell}: {r}");
            }
        }
    }
}
