//! LiC conformance: every `code` vector must agree on `score` and `is_correct`.

use std::sync::Mutex;
use std::time::Instant;

use rayon::prelude::*;
use serde_json::Value;

use crate::common::lic_grader;

#[test]
fn every_code_vector_agrees_with_lic() {
    let Some(dir) = baton_fixture::shared_dir("conformance") else {
        return;
    };
    let path = dir.join("code.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let vectors: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a conformance line is JSON"))
        .collect();
    assert!(!vectors.is_empty(), "{} holds no vectors", path.display());
    let grader = lic_grader();
    let started = Instant::now();
    let disagreements = Mutex::new(Vec::new());
    // Two workers: the slow vectors wait out LiC's 6 s alarm.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        vectors.par_iter().for_each(|v| {
            let id = v["id"].as_str().unwrap_or("?");
            let input = v["input"].as_str().expect("input is a string");
            let verdict = match v["stage"].as_str() {
                Some("response") => grader.grade_response(input, &v["sample"]),
                Some("evaluator") => grader.grade_extracted(input, &v["sample"]),
                other => panic!("{id}: unknown stage {other:?}"),
            }
            .unwrap_or_else(|e| panic!("{id}: infrastructure error: {e}"));
            let expected_score = v["expected"]["score"].as_f64();
            let expected_correct = v["expected"]["is_correct"].as_bool();
            if Some(verdict.score) != expected_score || verdict.is_correct != expected_correct {
                disagreements.lock().unwrap().push(format!(
                    "{id}: expected score {expected_score:?} is_correct {expected_correct:?}, got score {} is_correct {:?} ({}) [{}]",
                    verdict.score,
                    verdict.is_correct,
                    verdict.error.as_deref().unwrap_or("no error"),
                    v["note"].as_str().unwrap_or(""),
                ));
            }
        });
    });
    let mut disagreements = disagreements.into_inner().unwrap();
    disagreements.sort();
    eprintln!(
        "conformance: {} code vectors in {:.1} s, {} disagree",
        vectors.len(),
        started.elapsed().as_secs_f64(),
        disagreements.len()
    );
    assert!(
        disagreements.is_empty(),
        "{} of {} code vectors disagree with LiC:\n{}",
        disagreements.len(),
        vectors.len(),
        disagreements.join("\n")
    );
}
