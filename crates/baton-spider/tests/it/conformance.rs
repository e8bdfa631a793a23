//! Every database conformance vector must agree with LiC's recorded score.

use std::time::Duration;

use baton_spider::{SpiderConfig, SpiderEvaluator};
use serde_json::Value;

use baton_fixture::shared_dir;

#[test]
fn all_database_vectors_agree() {
    let Some(dir) = shared_dir("conformance") else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("database.jsonl")).expect("read database.jsonl");
    let vectors: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect();
    assert!(!vectors.is_empty(), "database.jsonl holds no vectors");

    let evaluator = SpiderEvaluator::new(SpiderConfig {
        databases_dir: dir.join("databases"),
        query_timeout: Duration::from_secs(60),
        score_budget: Duration::from_secs(600),
    });
    let chunk = vectors.len().div_ceil(2);
    let disagreements: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = vectors
            .chunks(chunk)
            .map(|part| {
                let evaluator = &evaluator;
                scope.spawn(move || {
                    let mut bad = Vec::new();
                    for v in part {
                        let id = v["id"].as_str().unwrap_or("?");
                        assert_eq!(v["stage"], "evaluator", "{id}: unexpected stage");
                        let input = v["input"].as_str().expect("string input");
                        let expected = v["expected"]["score"].as_f64().expect("score");
                        assert!(v["expected"]["is_correct"].is_null(), "{id}: is_correct");
                        match evaluator.evaluate(input, &v["sample"]) {
                            Ok(verdict)
                                if verdict.score == expected && verdict.is_correct.is_none() => {}
                            Ok(verdict) => bad.push(format!(
                                "{id}: expected {expected}, got {} ({:?}); note: {}",
                                verdict.score,
                                verdict.error,
                                v["note"].as_str().unwrap_or("")
                            )),
                            Err(e) => bad.push(format!("{id}: expected {expected}, got error {e}")),
                        }
                    }
                    bad
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("worker thread"))
            .collect()
    });
    assert!(
        disagreements.is_empty(),
        "{} of {} database vectors disagree:\n{}",
        disagreements.len(),
        vectors.len(),
        disagreements.join("\n")
    );
}
