//! Integration tests: every actions conformance vector from LiC's own evaluator, and
//! hostile answers.

mod hostile;

use serde_json::Value;

#[test]
#[allow(clippy::print_stdout)]
fn all_actions_conformance_vectors_agree() {
    let Some(dir) = baton_fixture::shared_dir("conformance") else {
        return;
    };
    let path = dir.join("actions.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut total = 0;
    let mut disagreements = Vec::new();
    for (line_no, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {}: invalid JSON: {e}", line_no + 1));
        let id = record["id"].as_str().unwrap_or("?").to_string();
        let input = record["input"]
            .as_str()
            .unwrap_or_else(|| panic!("{id}: no input"));
        let want_score = record["expected"]["score"]
            .as_f64()
            .unwrap_or_else(|| panic!("{id}: no score"));
        let want_correct = record["expected"]["is_correct"].as_bool();
        let verdict = baton_bfcl::evaluate_response(input, &record["sample"]);
        total += 1;
        if verdict.score != want_score || verdict.is_correct != want_correct {
            disagreements.push(format!(
                "{id}: expected score={want_score} is_correct={want_correct:?}, got score={} is_correct={:?} error={:?} ({})",
                verdict.score,
                verdict.is_correct,
                verdict.error,
                record["note"].as_str().unwrap_or("")
            ));
        }
    }
    println!(
        "actions conformance: {} agree, {} disagree, of {total}",
        total - disagreements.len(),
        disagreements.len()
    );
    assert!(total > 0, "no vectors in {}", path.display());
    assert!(
        disagreements.is_empty(),
        "disagreeing vectors:\n{}",
        disagreements.join("\n")
    );
}

#[test]
fn verdict_reports_bfcl_reasons() {
    let sample = serde_json::json!({
        "function": [{"name": "f", "parameters": {"type": "dict",
            "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["city"]}}],
        "reference_answer": [{"f": {"city": ["Paris"], "n": [3, ""]}}],
        "language": "Python",
        "test_category": "simple",
    });
    let cases = [
        ("f(city='Paris', n=3)", None),
        ("f(city='Lyon')", Some("value_error:string")),
        ("f(city='Paris', n='3')", Some("type_error:simple")),
        ("f(n=3)", Some("simple_function_checker:missing_required")),
        (
            "f(city='Paris', m=1)",
            Some("simple_function_checker:unexpected_param"),
        ),
        (
            "f(city='Paris'), f(city='Paris')",
            Some("simple_function_checker:wrong_count"),
        ),
        ("Here: f(city='Paris')", Some(baton_bfcl::DECODER_FAILED)),
    ];
    for (response, want) in cases {
        let verdict = baton_bfcl::evaluate_response(response, &sample);
        assert_eq!(verdict.error.as_deref(), want, "{response}");
        assert_eq!(verdict.is_correct, Some(want.is_none()), "{response}");
    }
}
