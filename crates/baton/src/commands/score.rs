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
    object: serde_json::Map<String, Value>,
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

fn parse_case(path: &str, line: usize, text: &str) -> Result<Case> {
    let at = || format!("{path}: line {line}");
    let value: Value = serde_json::from_str(text).with_context(|| format!("{}: not JSON", at()))?;
    let Value::Object(object) = value else {
        bail!("{}: expected a JSON object", at())
    };
    let id = object
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_string();
    let at = || format!("{path}: line {line} (id {id:?})");
    let family: Family = object
        .get("family")
        .and_then(Value::as_str)
        .with_context(|| format!("{}: key \"family\": expected a string", at()))?
        .parse()
        .map_err(|e: String| anyhow::anyhow!("{}: key \"family\": {e}", at()))?;
    let response_stage = match object.get("stage").and_then(Value::as_str) {
        Some("evaluator") => false,
        Some("response") | None => true,
        Some(other) => bail!(
            "{}: key \"stage\": {other:?} is neither \"evaluator\" nor \"response\"",
            at()
        ),
    };
    let sample = match object.get("sample") {
        Some(sample @ Value::Object(_)) => sample.clone(),
        _ => bail!("{}: key \"sample\": expected an object", at()),
    };
    let expected = object
        .get("expected")
        .map(|e| (e["score"].as_f64(), e["is_correct"].clone()));
    let input = object
        .get("input")
        .and_then(Value::as_str)
        .with_context(|| format!("{}: key \"input\": expected a string", at()))?
        .to_string();
    Ok(Case {
        line,
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
                let id = case.object.get("id").and_then(Value::as_str).unwrap_or("?");
                disagree.push(format!("{id} (line {})", case.line));
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
    if c.object.contains_key("actual") {
        let mut object = c.object.clone();
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
