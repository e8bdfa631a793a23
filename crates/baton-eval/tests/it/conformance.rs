use baton_eval::{EvalConfig, Evaluators, Rules};
use baton_types::Family;
use rayon::prelude::*;
use serde_json::Value;

/// The disagreement of one vector with LiC's verdict, if any.
fn disagreement(evaluators: &Evaluators, family: Family, case: &Value) -> Option<String> {
    let id = case["id"].as_str().unwrap_or("?");
    let input = case["input"].as_str().expect("string input");
    let sample = &case["sample"];
    let verdict = if case["stage"] == "response" {
        evaluators
            .score_response(family, input, sample)
            .map(|s| s.verdict)
    } else {
        evaluators.score_extracted(family, input, sample)
    };
    let verdict = match verdict {
        Ok(v) => v,
        Err(e) => return Some(format!("{id}: setup error {e}")),
    };
    let expected = &case["expected"];
    let want = expected["score"].as_f64().expect("expected score");
    let score_ok = if family == Family::Data2Text {
        (verdict.score - want).abs() <= 1e-9
    } else {
        verdict.score == want
    };
    let want_correct = expected["is_correct"].as_bool();
    (!score_ok || verdict.is_correct != want_correct).then(|| {
        format!(
            "{id}: expected score {want} is_correct {want_correct:?}, got {} {:?} ({:?})",
            verdict.score, verdict.is_correct, verdict.error
        )
    })
}

/// Run every vector of one family through the registry; return the count and the
/// disagreements.
fn run_family(family: Family) -> Option<(usize, Vec<String>)> {
    let dir = baton_fixture::shared_dir("conformance")?;
    // The `response` vectors record what LiC's own code does with a response, so they are
    // read with LiC's extraction rules.
    let evaluators = Evaluators::lic(&EvalConfig {
        spider_dir: dir.join("databases"),
        rules: Rules::Lic,
        ..EvalConfig::default()
    });
    assert!(
        evaluators.has(family),
        "the {family} evaluator is not wired into Evaluators::lic"
    );
    let text =
        std::fs::read_to_string(dir.join(format!("{family}.jsonl"))).expect("readable vectors");
    let cases: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("valid JSON vector"))
        .collect();
    // Slow vectors (code timeouts) run side by side.
    let mut bad: Vec<String> = cases
        .par_iter()
        .filter_map(|case| disagreement(&evaluators, family, case))
        .collect();
    bad.sort();
    Some((cases.len(), bad))
}

fn check(family: Family) {
    let Some((n, bad)) = run_family(family) else {
        return;
    };
    assert!(n > 0, "no {family} vectors");
    assert!(
        bad.is_empty(),
        "{} of {n} {family} vectors disagree with LiC:\n{}",
        bad.len(),
        bad.join("\n")
    );
    eprintln!("{family}: {n} of {n} conformance vectors agree with LiC");
}

#[test]
fn math_vectors_agree_with_lic() {
    check(Family::Math);
}

#[test]
fn data2text_vectors_agree_with_lic() {
    check(Family::Data2Text);
}

#[test]
fn actions_vectors_agree_with_lic() {
    check(Family::Actions);
}

#[test]
fn database_vectors_agree_with_lic() {
    check(Family::Database);
}

#[test]
fn code_vectors_agree_with_lic() {
    check(Family::Code);
}

/// baton's code extraction on LiC's code responses: it may credit what LiC's extractor
/// loses (a helper or constant beside the function, a test block chosen), but must not
/// lose what LiC's extractor passes.
#[test]
fn code_responses_under_baton_rules_lose_nothing_lic_passes() {
    let Some(dir) = baton_fixture::shared_dir("conformance") else {
        return;
    };
    let evaluators = Evaluators::lic(&EvalConfig {
        rules: Rules::Baton,
        ..EvalConfig::default()
    });
    let text = std::fs::read_to_string(dir.join("code.jsonl")).expect("readable vectors");
    let cases: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).expect("valid JSON vector"))
        .filter(|case| case["stage"] == "response")
        .collect();
    let outcomes: Vec<(String, f64, f64, String)> = cases
        .par_iter()
        .map(|case| {
            let input = case["input"].as_str().expect("string input");
            let scored = evaluators
                .score_response(Family::Code, input, &case["sample"])
                .expect("the code evaluator runs");
            (
                case["id"].as_str().unwrap_or("?").to_owned(),
                case["expected"]["score"].as_f64().expect("expected score"),
                scored.verdict.score,
                case["note"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let lost: Vec<_> = outcomes
        .iter()
        .filter(|o| o.1 == 1.0 && o.2 != 1.0)
        .collect();
    let gained: Vec<_> = outcomes
        .iter()
        .filter(|o| o.1 != 1.0 && o.2 == 1.0)
        .collect();
    eprintln!(
        "code under baton's rules: {} response vectors; LiC passes {}, baton passes {}; \
         lost {}, gained {}",
        outcomes.len(),
        outcomes.iter().filter(|o| o.1 == 1.0).count(),
        outcomes.iter().filter(|o| o.2 == 1.0).count(),
        lost.len(),
        gained.len()
    );
    for (id, _, _, note) in &gained {
        eprintln!("  gained {id}: {note}");
    }
    assert!(!outcomes.is_empty(), "no code response vectors");
    assert!(
        lost.is_empty(),
        "baton's rules lose what LiC passes: {lost:?}"
    );
}
