//! `--rubric handover-0.4` against what Handover 0.4.1 printed for each of its fixtures.

use std::collections::BTreeSet;

use baton_handover::{Document, Rubric, Severity};
use serde_json::Value;

use crate::support::handover_dir;

#[test]
fn handover_04_rubric_reproduces_reference_on_every_fixture() {
    let Some(dir) = handover_dir() else { return };
    let reference: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reference-0.4.1.json")).unwrap())
            .unwrap();
    let results = reference["results"].as_object().unwrap();
    assert_eq!(results.len(), 8, "eight fixtures");
    let mut failures = Vec::new();
    for (path, want) in results {
        let text = std::fs::read_to_string(dir.join(path)).unwrap();
        let got = Rubric::Handover04.score(&Document::parse(&text));
        let s = &got.subscores;
        let subscores = serde_json::json!({
            "header": s.header, "negative": s.negative, "sections": s.sections,
            "selfContainment": s.self_containment, "prose": s.prose,
        });
        let mut check = |what: &str, got: Value, want: &Value| {
            if &got != want {
                failures.push(format!("{path}: {what}: got {got}, want {want}"));
            }
        };
        check("score", got.score.into(), &want["score"]);
        check("valid", got.valid.into(), &want["valid"]);
        check("subscores", subscores, &want["subscores"]);
        let cats: BTreeSet<&str> = got.cues.negative.iter().copied().collect();
        let want_cats: BTreeSet<&str> = want["structure"]["negCategories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        check(
            "negCategories",
            format!("{cats:?}").into(),
            &format!("{want_cats:?}").into(),
        );
        for (key, ours) in [
            ("canonicalSources", got.cues.canonical),
            ("nextAction", got.cues.next_action),
            ("verification", got.cues.verification),
        ] {
            check(key, ours.into(), &want["structure"][key]);
        }
        let prose: Vec<Value> = got
            .findings
            .iter()
            .filter(|f| matches!(f.rule, "H1" | "H3" | "H4"))
            .map(|f| serde_json::json!([f.rule, f.line]))
            .collect();
        let want_prose: Vec<Value> = want["prose"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| serde_json::json!([p["rule"], p["line"]]))
            .collect();
        check("prose", prose.into(), &want_prose.into());
        let errors = got
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count();
        check(
            "header error count",
            errors.into(),
            &want["headerErrors"].as_array().unwrap().len().into(),
        );
        check(
            "injection count",
            got.findings
                .iter()
                .filter(|f| f.rule == "injection")
                .count()
                .into(),
            &want["injection"].as_array().unwrap().len().into(),
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
