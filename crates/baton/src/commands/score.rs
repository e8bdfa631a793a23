//! `baton score`: score cases in the conformance JSONL format, in parallel.

use std::io::Write;

use anyhow::{Context, Result, bail};
use baton_eval::{EvalConfig, EvalError, Evaluators};
use baton_types::Family;
use rayon::prelude::*;
use serde_json::{Value, json};

use crate::Outcome;
use crate::cli::ScoreArgs;
use crate::printer::Printer;

struct Case {
    line: usize,
    object: serde_json::Map<String, Value>,
    family: Family,
    response_stage: bool,
    input: String,
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
    if !object.get("sample").is_some_and(Value::is_object) {
        bail!("{}: key \"sample\": expected an object", at());
    }
    let input = object
        .get("input")
        .and_then(Value::as_str)
        .with_context(|| format!("{}: key \"input\": expected a string", at()))?
        .to_string();
    Ok(Case {
        line,
        object,
        family,
        response_stage,
        input,
    })
}

pub fn score(args: ScoreArgs, printer: &Printer) -> Result<Outcome> {
    let name = args.input.display().to_string();
    let text = baton_types::input::read_text_bounded(
        &args.input,
        baton_types::input::DATASET_LIMIT,
        "score input",
    )
    .with_context(|| format!("cannot read {name}"))?;
    let cases = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| parse_case(&name, i + 1, l))
        .collect::<Result<Vec<_>>>()?;
    let mut config = EvalConfig {
        rules: args.rules.into(),
        ..EvalConfig::default()
    };
    if let Some(dir) = args.spider_dir {
        config.spider_dir = dir;
    }
    let evaluators = Evaluators::lic(&config);
    // The cases run on a pool of their own: the first code case compiles the Python
    // sandbox with wasmtime, which compiles on rayon's global pool, and would wait forever
    // for a worker if the cases held every one of them (with no compiled cache yet).
    let pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("baton-score-{i}"))
        .build()
        .context("cannot start the scoring threads")?;
    let results: Vec<(Value, Option<bool>)> = pool.install(|| {
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

/// Score one case; returns the output line and, when the case has `expected`, whether
/// the result agrees with it.
fn score_case(evaluators: &Evaluators, c: &Case) -> (Value, Option<bool>) {
    let sample = &c.object["sample"];
    let result = if c.response_stage {
        evaluators
            .score_response(c.family, &c.input, sample)
            .map(|s| s.verdict)
    } else {
        evaluators.score_extracted(c.family, &c.input, sample)
    };
    let mut object = c.object.clone();
    let actual = match &result {
        Ok(v) => {
            let mut a = json!({ "score": v.score, "is_correct": v.is_correct });
            if let Some(e) = &v.error {
                a["error"] = json!(e);
            }
            a
        }
        Err(e @ (EvalError::Unavailable(_) | EvalError::Setup { .. })) => {
            json!({ "score": null, "is_correct": null, "error": e.to_string() })
        }
        Err(e) => json!({ "score": null, "is_correct": null, "error": e.to_string() }),
    };
    let agrees = object
        .get("expected")
        .map(|exp| agrees(c.family, exp, &actual));
    object.insert("actual".into(), actual);
    (Value::Object(object), agrees)
}

/// Exact agreement on `score` and `is_correct`; data2text scores within 1e-9.
pub fn agrees(family: Family, expected: &Value, actual: &Value) -> bool {
    let (Some(e), Some(a)) = (expected["score"].as_f64(), actual["score"].as_f64()) else {
        return false;
    };
    let score_ok = if family == Family::Data2Text {
        (e - a).abs() <= 1e-9
    } else {
        e == a
    };
    score_ok && expected["is_correct"] == actual["is_correct"]
}
