//! Every `data2text` conformance vector: LiC's score is
//! `sacrebleu.corpus_bleu([hyp.strip()], [[r.strip()] for r in refs]).score / 100`, with 0.0
//! where LiC raises (an empty references list).

use baton_bleu::{BleuError, corpus_bleu, python_strip};
use serde_json::Value;

/// LiC's `TaskData2Text.evaluator_function` score for `response` against `references`.
fn lic_score(response: &str, references: &[&str]) -> f64 {
    let streams: Vec<[&str; 1]> = references.iter().map(|r| [python_strip(r)]).collect();
    match corpus_bleu(&[python_strip(response)], &streams) {
        Ok(score) => score.score / 100.0,
        Err(BleuError::NoReferences) => 0.0,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[test]
fn data2text_vectors_all_agree() {
    let Some(dir) = baton_fixture::shared_dir("conformance") else {
        return;
    };
    let path = dir.join("data2text.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut checked = 0;
    let mut failures = Vec::new();
    for (line_no, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), line_no + 1));
        let id = v["id"].as_str().unwrap_or("?");
        let input = v["input"]
            .as_str()
            .unwrap_or_else(|| panic!("{id}: no input"));
        let references: Vec<&str> = v["sample"]["references"]
            .as_array()
            .unwrap_or_else(|| panic!("{id}: no references array"))
            .iter()
            .map(|r| {
                r.as_str()
                    .unwrap_or_else(|| panic!("{id}: non-string reference"))
            })
            .collect();
        let expected = v["expected"]["score"]
            .as_f64()
            .unwrap_or_else(|| panic!("{id}: no expected score"));
        let actual = lic_score(input, &references);
        if (actual - expected).abs() > 1e-9 || actual.is_nan() {
            failures.push(format!("{id}: expected {expected:?}, actual {actual:?}"));
        }
        checked += 1;
    }
    assert!(checked > 0, "{} holds no vectors", path.display());
    assert!(
        failures.is_empty(),
        "{} of {checked} data2text vectors disagree:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
