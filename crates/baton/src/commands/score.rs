//! `baton score`: score cases in the conformance JSONL format, in parallel.

use std::io::Write;

use anyhow::{Context, Result, bail};
use std::path::PathBuf;

use baton_eval::{EvalConfig, EvalError, Evaluators, Rules, Scored};
use baton_types::{Family, Verdict};
use rayon::prelude::*;
use serde_json::{Value, json};

use crate::Outcome;
use crate::cli::ScoreArgs;
use crate::printer::Printer;

pub(crate) struct Case {
    line: usize,
    /// The case's `id` (`"?"` when it has none or it is not a string).
    id: String,
    /// The whole case, kept only when it already has an `"actual"` key (its output line is
    /// then written again from it with the key replaced).
    object: Option<serde_json::Map<String, Value>>,
    /// The case's line as read, which its output line repeats.
    text: String,
    family: Family,
    response_stage: bool,
    input: String,
    /// The case's `sample`, taken out of the object once here rather than looked up by key
    /// for every scoring.
    sample: Value,
    /// The case's `expected` verdict, read once here: `score` (`None` when not a number)
    /// and `is_correct`.
    expected: Option<(Option<f64>, Value)>,
}

/// The keys of a case `baton score` reads, deserialized straight from its line: the other
/// keys (a note, ...) are skipped without being built, and no map of the whole case is.
/// A key given as `null` is present (`Some(Value::Null)`), as in the case's object.
#[derive(Debug, PartialEq, serde::Deserialize)]
struct Keys {
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    family: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    stage: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    sample: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    input: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    expected: Option<Value>,
    #[serde(default, deserialize_with = "present_any")]
    actual: Option<()>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    serde::Deserialize::deserialize(d).map(Some)
}

fn present_any<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<()>, D::Error> {
    <serde::de::IgnoredAny as serde::Deserialize>::deserialize(d).map(|_| Some(()))
}

/// The keys of a case line that is a JSON object without an `"actual"` key and without a
/// repeated key (`None` otherwise: such a line is read whole, as before).
fn read_keys(text: &str) -> Option<Keys> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let keys: Keys = serde_json::from_str(text).ok()?;
    keys.actual.is_none().then_some(keys)
}

/// The keys of a case line read as a whole JSON value, and the case's object when it has
/// an `"actual"` key.
type Whole = (Keys, Option<serde_json::Map<String, Value>>);

fn whole_keys(value: Value) -> Option<Whole> {
    let Value::Object(object) = value else {
        return None;
    };
    let get = |key: &str| object.get(key).cloned();
    let keys = Keys {
        id: get("id"),
        family: get("family"),
        stage: get("stage"),
        sample: get("sample"),
        input: get("input"),
        expected: get("expected"),
        actual: object.contains_key("actual").then_some(()),
    };
    let object = keys.actual.is_some().then_some(object);
    Some((keys, object))
}

fn parse_case(path: &str, line: usize, text: &str) -> Result<Case> {
    let at = || format!("{path}: line {line}");
    let (keys, object) = match read_keys(text) {
        Some(keys) => (keys, None),
        None => {
            let value: Value =
                serde_json::from_str(text).with_context(|| format!("{}: not JSON", at()))?;
            whole_keys(value).with_context(|| format!("{}: expected a JSON object", at()))?
        }
    };
    let id = keys
        .id
        .as_ref()
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let at = || format!("{path}: line {line} (id {id:?})");
    let family: Family = keys
        .family
        .as_ref()
        .and_then(Value::as_str)
        .with_context(|| format!("{}: key \"family\": expected a string", at()))?
        .parse()
        .map_err(|e: String| anyhow::anyhow!("{}: key \"family\": {e}", at()))?;
    let response_stage = match keys.stage.as_ref().and_then(Value::as_str) {
        Some("evaluator") => false,
        Some("response") | None => true,
        Some(other) => bail!(
            "{}: key \"stage\": {other:?} is neither \"evaluator\" nor \"response\"",
            at()
        ),
    };
    let sample = match keys.sample {
        Some(sample @ Value::Object(_)) => sample,
        _ => bail!("{}: key \"sample\": expected an object", at()),
    };
    let expected = keys
        .expected
        .map(|e| (e["score"].as_f64(), e["is_correct"].clone()));
    let input = match keys.input {
        Some(Value::String(input)) => input,
        _ => bail!("{}: key \"input\": expected a string", at()),
    };
    Ok(Case {
        line,
        id,
        object,
        text: text.trim().to_owned(),
        family,
        response_stage,
        input,
        sample,
        expected,
    })
}

/// Read a file of cases (one JSON object per line), refusing the first malformed one.
pub(crate) fn read_cases(path: &std::path::Path) -> Result<Vec<Case>> {
    let name = path.display().to_string();
    let text = baton_types::input::read_text_bounded(
        path,
        baton_types::input::DATASET_LIMIT,
        "score input",
    )
    .with_context(|| format!("cannot read {name}"))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| parse_case(&name, i + 1, l))
        .collect()
}

/// The evaluators `baton score` uses.
pub(crate) fn evaluators(rules: Rules, spider_dir: Option<PathBuf>) -> Evaluators {
    let mut config = EvalConfig {
        rules,
        ..EvalConfig::default()
    };
    if let Some(dir) = spider_dir {
        config.spider_dir = dir;
    }
    Evaluators::lic(&config)
}

pub fn score(args: ScoreArgs, printer: &Printer) -> Result<Outcome> {
    let cases = read_cases(&args.input)?;
    let evaluators = evaluators(args.rules.into(), args.spider_dir);
    let pool = scoring_pool()?;
    let results: Vec<(String, Option<bool>)> = pool.install(|| {
        cases
            .par_iter()
            .map(|c| score_case(&evaluators, c))
            .collect()
    });

    let mut out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let (mut with_expected, mut agreed, mut disagree) = (0, 0, Vec::new());
    for (case, (line, agrees)) in cases.iter().zip(results) {
        writeln!(out, "{line}")?;
        if let Some(a) = agrees {
            with_expected += 1;
            if a {
                agreed += 1;
            } else {
                disagree.push(format!("{} (line {})", case.id, case.line));
            }
        }
    }
    out.flush()?;
    let mut summary = format!(
        "{} cases; {agreed} of {with_expected} agree with expected",
        cases.len()
    );
    if !disagree.is_empty() {
        summary.push_str(&format!("; disagreements: {}", disagree.join(", ")));
    }
    printer.error(&summary);
    Ok(Outcome::Success)
}

/// The pool the cases are scored on. Its own, not rayon's global pool: the first code case
/// compiles the Python sandbox with wasmtime, which compiles on the global pool, and would
/// wait forever for a worker if the cases held every one of them (with no compiled cache
/// yet). Its workers have the scoring stack, so each answer is scored inline rather than
/// on a thread started for it.
pub fn scoring_pool() -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .spawn_handler(|worker| {
            baton_eval::spawn_scoring_thread(format!("baton-score-{}", worker.index()), || {
                worker.run()
            })?;
            Ok(())
        })
        .build()
        .context("cannot start the scoring threads")
}

/// Score one case; returns the output line and, when the case has `expected`, whether
/// the result agrees with it.
fn score_case(evaluators: &Evaluators, c: &Case) -> (String, Option<bool>) {
    let result = verdict(evaluators, c);
    let actual = match &result {
        Ok(v) => {
            let mut a = json!({ "score": v.score, "is_correct": v.is_correct });
            if let Some(e) = &v.error {
                a["error"] = json!(e);
            }
            a
        }
        Err(e) => json!({ "score": null, "is_correct": null, "error": e.to_string() }),
    };
    (with_actual(c, &actual), agrees_with_expected(c, &result))
}

/// The case's line with `"actual"` added as its last key. The line as read is kept and
/// the key written after it, rather than the parsed case copied and written again: copying
/// and serializing each case cost more than scoring it on the larger families. A case that
/// already has an `"actual"` key is written again with the key replaced.
fn with_actual(c: &Case, actual: &Value) -> String {
    if let Some(object) = &c.object {
        let mut object = object.clone();
        object.insert("actual".into(), actual.clone());
        return Value::Object(object).to_string();
    }
    // The line is a JSON object, so it ends with `}`.
    let body = c.text[..c.text.len() - 1].trim_end();
    let comma = if body.ends_with('{') { "" } else { "," };
    format!("{body}{comma}\"actual\":{actual}}}")
}

/// The case's verdict: its response extracted and scored, or its answer scored.
pub(crate) fn verdict(evaluators: &Evaluators, c: &Case) -> Result<Verdict, EvalError> {
    let sample = &c.sample;
    if c.response_stage {
        evaluators
            .score_response(c.family, &c.input, sample)
            .map(|s: Scored| s.verdict)
    } else {
        evaluators.score_extracted(c.family, &c.input, sample)
    }
}

/// Whether a case's verdict agrees with its `expected` (`None` when it has none): exact
/// agreement on `score` and `is_correct`, data2text scores within 1e-9.
pub(crate) fn agrees_with_expected(c: &Case, verdict: &Result<Verdict, EvalError>) -> Option<bool> {
    let (score, is_correct) = c.expected.as_ref()?;
    let Ok(v) = verdict else { return Some(false) };
    let Some(e) = *score else {
        return Some(false);
    };
    let score_ok = if c.family == Family::Data2Text {
        (e - v.score).abs() <= 1e-9
    } else {
        e == v.score
    };
    let correct_ok = match (is_correct, v.is_correct) {
        (Value::Null, None) => true,
        (Value::Bool(e), Some(a)) => *e == a,
        _ => false,
    };
    Some(score_ok && correct_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_whole(text: &str) -> Option<Whole> {
        whole_keys(serde_json::from_str(text).unwrap())
    }

    /// Every conformance line gives the same keys read straight into [`Keys`] as read
    /// whole, and lines the typed reading leaves alone are read whole as before.
    #[test]
    fn issue_37_typed_reading_of_cases_matches_the_whole_reading() {
        let Some(dir) = baton_fixture::shared_dir("conformance") else {
            return;
        };
        let mut lines = 0;
        for family in ["actions", "math", "data2text", "database", "code"] {
            let text = std::fs::read_to_string(dir.join(format!("{family}.jsonl"))).unwrap();
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                let typed = read_keys(line).expect("a conformance line is read typed");
                let (whole, object) = read_whole(line).unwrap();
                assert_eq!(typed, whole, "{line}");
                assert!(object.is_none());
                lines += 1;
            }
        }
        assert!(lines > 2900, "{lines} lines");
        let null = r#"{"id": null, "family": "math", "sample": {}, "input": "1", "expected": null, "note": [1]}"#;
        let typed = read_keys(null).unwrap();
        assert_eq!(typed.expected, Some(Value::Null));
        assert_eq!(typed, read_whole(null).unwrap().0);
        for whole in [
            r#"[1, 2]"#,
            r#"{"family": "math", "family": "code"}"#,
            r#"{"family": "math", "actual": {"score": 1}}"#,
        ] {
            assert!(read_keys(whole).is_none(), "{whole}");
        }
        assert_eq!(
            read_whole(r#"{"family": "math", "family": "code"}"#)
                .unwrap()
                .0
                .family,
            Some(Value::String("code".into()))
        );
    }

    /// The output line repeats the line as read with `actual` last, or the case written
    /// again with its `actual` replaced.
    #[test]
    fn issue_37_output_lines_are_unchanged() {
        let actual = serde_json::json!({"score": 1.0, "is_correct": true});
        let plain = r#"{"id": "m1", "family": "math", "sample": {"answer": "= 4"}, "input": "4", "note": "x"}"#;
        let case = parse_case("f", 1, plain).unwrap();
        assert_eq!(
            with_actual(&case, &actual),
            r#"{"id": "m1", "family": "math", "sample": {"answer": "= 4"}, "input": "4", "note": "x","actual":{"score":1.0,"is_correct":true}}"#
        );
        let again =
            r#"{"id": "m1", "actual": {"score": 0}, "family": "math", "sample": {}, "input": "4"}"#;
        let case = parse_case("f", 2, again).unwrap();
        assert_eq!(
            with_actual(&case, &actual),
            r#"{"id":"m1","actual":{"score":1.0,"is_correct":true},"family":"math","sample":{},"input":"4"}"#
        );
        let refused = parse_case("f", 3, "[1]").err().unwrap().to_string();
        assert_eq!(refused, "f: line 3: expected a JSON object");
        let refused = parse_case("f", 4, "{").err().unwrap();
        assert!(
            format!("{refused:#}").starts_with("f: line 4: not JSON: "),
            "{refused:#}"
        );
    }
}
