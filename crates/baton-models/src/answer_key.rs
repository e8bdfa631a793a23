//! Right and wrong final responses for a task, in the family's answer format.
//!
//! Simulated models answer with these. A reference response must pass the
//! family's real evaluator and a wrong response must fail it, so both are
//! written for the exact LiC scoring rules:
//!
//! - **math**: the solution's working (calculator `<<…>>` notes removed), then
//!   `Answer: <gold>`; wrong responses end in `gold + 1` or `gold * 2`.
//! - **database**: the reference SQL in a ```` ```sql ```` block. LiC plugs the
//!   gold query's literal values into the prediction, so a wrong query must
//!   differ in structure, not in a literal: the sample set carries hand-written
//!   ones (`baton_wrong_sql`); other tasks get the reference wrapped so that it
//!   returns no rows (wrong whenever the gold query returns rows).
//! - **actions**: the possible answer rendered as `[f(a='x', b=2), g(...)]`,
//!   each parameter taking its first acceptable value other than `""` and
//!   parameters whose first value is `""` left out; wrong responses drop the
//!   last call or give a required parameter a value that is not acceptable.
//! - **code**: the sample's `baton_reference_solution` in a ```` ```python ````
//!   block (LiC's own data has no reference solution, so this fails there);
//!   wrong ones come from `baton_wrong_solutions` (functions with an
//!   off-by-one), or a function returning `None`.
//! - **data2text**: the first reference; wrong ones are unrelated sentences.

use baton_py::json_repr as py_repr;
use baton_types::{Family, Task};
use serde_json::{Map, Value};

use crate::ModelError;

/// Sample key holding a complete, correct top-level Python function (code).
pub const REFERENCE_SOLUTION_KEY: &str = "baton_reference_solution";
/// Sample key holding wrong Python functions (code), an array of strings.
pub const WRONG_SOLUTIONS_KEY: &str = "baton_wrong_solutions";
/// Sample key holding wrong but plausible SQL queries (database), an array of strings.
pub const WRONG_SQL_KEY: &str = "baton_wrong_sql";

/// Unrelated sentences used as wrong data2text answers.
const OFF_TOPIC: [&str; 3] = [
    "The committee postponed the annual garden show because heavy rain flooded the riverside meadow.",
    "Local volunteers repainted the old lighthouse during a quiet week in early spring.",
    "A small bakery on the corner now sells rye bread every Thursday morning.",
];

/// The correct final response in the family's answer format; it must pass the
/// real evaluator.
pub fn reference_response(task: &Task) -> Result<String, ModelError> {
    match task.family {
        Family::Math => {
            let (working, gold) = math_parts(task)?;
            Ok(math_response(&working, &gold))
        }
        Family::Database => Ok(sql_block(str_key(task, "reference_sql")?)),
        Family::Actions => {
            let calls = actions_calls(task)?;
            Ok(render_calls(&calls))
        }
        Family::Code => {
            let solution = str_key(task, REFERENCE_SOLUTION_KEY)?;
            Ok(python_block(solution))
        }
        Family::Data2Text => task
            .sample
            .get("references")
            .and_then(Value::as_array)
            .and_then(|refs| refs.first())
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                ModelError::answer_key(
                    &task.task_id,
                    "references",
                    "expected a non-empty list of strings",
                )
            }),
    }
}

/// A plausible wrong final response; `variant` picks among a few. It must fail
/// the evaluator (for data2text: a sentence with a clearly lower BLEU).
pub fn wrong_response(task: &Task, variant: u64) -> Result<String, ModelError> {
    match task.family {
        Family::Math => {
            let (working, gold) = math_parts(task)?;
            Ok(math_response(&working, &wrong_number(&gold, variant)))
        }
        Family::Database => {
            if let Some(sql) = pick(task, WRONG_SQL_KEY, variant) {
                return Ok(sql_block(sql));
            }
            let gold = str_key(task, "reference_sql")?;
            let gold = gold.trim().trim_end_matches(';').trim_end();
            Ok(sql_block(&format!("SELECT * FROM ({gold}) WHERE NULL")))
        }
        Family::Actions => {
            let calls = actions_calls(task)?;
            let docs = task.sample.get("function").and_then(Value::as_array);
            Ok(render_calls(&wrong_calls(calls, docs, variant)))
        }
        Family::Code => {
            if let Some(code) = pick(task, WRONG_SOLUTIONS_KEY, variant) {
                return Ok(python_block(code));
            }
            let name = task
                .sample
                .pointer("/metadata/func_name")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    ModelError::answer_key(
                        &task.task_id,
                        "metadata.func_name",
                        "missing or not a string",
                    )
                })?;
            Ok(python_block(&format!(
                "def {name}(*args):\n    return None"
            )))
        }
        Family::Data2Text => Ok(OFF_TOPIC[(variant % OFF_TOPIC.len() as u64) as usize].to_owned()),
    }
}

fn str_key<'t>(task: &'t Task, key: &str) -> Result<&'t str, ModelError> {
    task.sample
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ModelError::answer_key(&task.task_id, key, "missing or not a string"))
}

/// The `variant`-th string of an array extension key, if there is one.
fn pick<'t>(task: &'t Task, key: &str, variant: u64) -> Option<&'t str> {
    let items: Vec<&str> = task
        .sample
        .get(key)?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if items.is_empty() {
        return None;
    }
    Some(items[(variant % items.len() as u64) as usize])
}

fn sql_block(sql: &str) -> String {
    format!("```sql\n{}\n```", sql.trim())
}

fn python_block(code: &str) -> String {
    format!("```python\n{}\n```", code.trim_end())
}

// ---------------------------------------------------------------- math

/// The working before the first `####` and the gold after it (LiC's
/// `answer.split("####")[1].strip()`).
fn math_parts(task: &Task) -> Result<(String, String), ModelError> {
    let answer = str_key(task, "answer")?;
    let mut pieces = answer.split("####");
    let working = pieces.next().unwrap_or_default();
    let gold = pieces.next().map(str::trim).ok_or_else(|| {
        ModelError::answer_key(
            &task.task_id,
            "answer",
            "expected a string containing \"####\"",
        )
    })?;
    Ok((
        strip_calculator_notes(working).trim().to_owned(),
        gold.to_owned(),
    ))
}

/// Remove GSM8K's `<<expr=value>>` calculator annotations.
fn strip_calculator_notes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<<") {
        match rest[start..].find(">>") {
            Some(len) => {
                out.push_str(&rest[..start]);
                rest = &rest[start + len + 2..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

fn math_response(working: &str, answer: &str) -> String {
    if working.is_empty() {
        format!("Answer: {answer}")
    } else {
        format!("{working}\nAnswer: {answer}")
    }
}

/// A number that LiC's math rule will not match with `gold`.
fn wrong_number(gold: &str, variant: u64) -> String {
    let plain: String = gold.chars().filter(|c| !matches!(c, ',' | '$')).collect();
    if let Ok(n) = plain.parse::<i64>() {
        let wrong = if variant % 2 == 1 && n != 0 {
            n.saturating_mul(2)
        } else {
            n.saturating_add(1)
        };
        return wrong.to_string();
    }
    if let Ok(x) = plain.parse::<f64>()
        && x.is_finite()
    {
        let wrong = if variant % 2 == 1 && x != 0.0 {
            x * 2.0
        } else {
            x + 1.0
        };
        let text = wrong.to_string();
        if text != plain {
            return text;
        }
    }
    if plain.trim() == "0" { "1" } else { "0" }.to_owned()
}

// ---------------------------------------------------------------- actions

/// One expected call: function name and `(param, acceptable values)` pairs.
struct Call {
    name: String,
    params: Vec<(String, Value)>,
}

fn actions_calls(task: &Task) -> Result<Vec<Call>, ModelError> {
    let bad = |msg: &str| ModelError::answer_key(&task.task_id, "reference_answer", msg);
    let list = task
        .sample
        .get("reference_answer")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("missing or not an array"))?;
    let mut calls = Vec::with_capacity(list.len());
    for entry in list {
        let (name, params) = entry
            .as_object()
            .filter(|o| o.len() == 1)
            .and_then(|o| o.iter().next())
            .ok_or_else(|| bad("each entry must be an object with exactly one function name"))?;
        let params = params
            .as_object()
            .ok_or_else(|| bad("each call's parameters must be an object"))?;
        let mut chosen = Vec::new();
        for (param, acceptable) in params {
            let values = acceptable
                .as_array()
                .ok_or_else(|| bad("each parameter must map to a list of acceptable values"))?;
            match values.first() {
                None => return Err(bad("a parameter has no acceptable value")),
                Some(Value::String(s)) if s.is_empty() => {}
                Some(_) => {
                    let value = values
                        .iter()
                        .find(|v| v.as_str() != Some(""))
                        .cloned()
                        .unwrap_or(Value::Null);
                    chosen.push((param.clone(), value));
                }
            }
        }
        calls.push(Call {
            name: name.clone(),
            params: chosen,
        });
    }
    Ok(calls)
}

fn render_calls(calls: &[Call]) -> String {
    let rendered: Vec<String> = calls
        .iter()
        .map(|call| {
            let args: Vec<String> = call
                .params
                .iter()
                .map(|(k, v)| format!("{k}={}", py_repr(v)))
                .collect();
            format!("{}({})", call.name, args.join(", "))
        })
        .collect();
    format!("[{}]", rendered.join(", "))
}

fn wrong_calls(mut calls: Vec<Call>, docs: Option<&Vec<Value>>, variant: u64) -> Vec<Call> {
    if variant.is_multiple_of(2) && calls.len() >= 2 {
        calls.pop();
        return calls;
    }
    if perturb_required_value(&mut calls, docs) {
        return calls;
    }
    if calls.len() >= 2 {
        calls.pop();
    } else if let Some(call) = calls.first_mut() {
        call.name.push_str("_all");
    }
    calls
}

/// Give the first perturbable required parameter a value outside its
/// acceptable list. Returns false when no parameter could be changed.
fn perturb_required_value(calls: &mut [Call], docs: Option<&Vec<Value>>) -> bool {
    for call in calls.iter_mut() {
        let Some(doc) = docs.and_then(|d| {
            d.iter()
                .find(|f| f.get("name").and_then(Value::as_str) == Some(call.name.as_str()))
        }) else {
            continue;
        };
        let required: Vec<&str> = doc
            .pointer("/parameters/required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let properties = doc
            .pointer("/parameters/properties")
            .and_then(Value::as_object);
        for (param, value) in call.params.iter_mut() {
            if !required.contains(&param.as_str()) {
                continue;
            }
            let ty = properties
                .and_then(|p: &Map<String, Value>| p.get(param.as_str()))
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            if let Some(changed) = changed_value(ty, value) {
                *value = changed;
                return true;
            }
        }
    }
    false
}

fn changed_value(ty: &str, value: &Value) -> Option<Value> {
    match (ty, value) {
        ("string", Value::String(s)) => Some(Value::String(format!("New {s}"))),
        ("integer", Value::Number(n)) => n.as_i64().map(|i| Value::from(i + 1)),
        ("float", Value::Number(n)) => n.as_f64().map(|x| Value::from(x + 1.5)),
        ("boolean", Value::Bool(b)) => Some(Value::Bool(!b)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_types::Shard;
    use serde_json::json;

    fn task(family: Family, sample: Value) -> Task {
        Task {
            task_id: "t".into(),
            family,
            shards: vec![Shard {
                shard_id: 1,
                shard: "q".into(),
            }],
            sample,
        }
    }

    #[test]
    fn math_working_loses_calculator_notes() {
        let t = task(
            Family::Math,
            json!({"answer": "2 * 3 = <<2*3=6>>6 apples.\n#### 6"}),
        );
        assert_eq!(
            reference_response(&t).expect("ok"),
            "2 * 3 = 6 apples.\nAnswer: 6"
        );
        assert_eq!(
            wrong_response(&t, 0).expect("ok"),
            "2 * 3 = 6 apples.\nAnswer: 7"
        );
        assert_eq!(
            wrong_response(&t, 1).expect("ok"),
            "2 * 3 = 6 apples.\nAnswer: 12"
        );
    }

    #[test]
    fn wrong_numbers_never_equal_gold() {
        assert_eq!(wrong_number("0", 1), "1");
        assert_eq!(wrong_number("1,000", 0), "1001");
        assert_eq!(wrong_number("2.5", 0), "3.5");
        assert_eq!(wrong_number("3/4", 0), "0");
        assert_eq!(wrong_number("0", 7), "1");
    }

    #[test]
    fn actions_render_first_acceptable_values() {
        let t = task(
            Family::Actions,
            json!({
                "function": [{"name": "m.f", "parameters": {"type": "dict", "properties": {
                    "a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "string"}},
                    "required": ["a", "b"]}}],
                "reference_answer": [
                    {"m.f": {"a": ["it's", "x"], "b": [2], "c": ["", "z"]}},
                    {"m.f": {"a": ["y"], "b": [3, 4], "c": ["k", ""]}}
                ]
            }),
        );
        assert_eq!(
            reference_response(&t).expect("ok"),
            "[m.f(a=\"it's\", b=2), m.f(a='y', b=3, c='k')]"
        );
        assert_eq!(wrong_response(&t, 0).expect("ok"), "[m.f(a=\"it's\", b=2)]");
        assert_eq!(
            wrong_response(&t, 1).expect("ok"),
            "[m.f(a=\"New it's\", b=2), m.f(a='y', b=3, c='k')]"
        );
    }

    #[test]
    fn generic_fallbacks_for_tasks_without_extension_keys() {
        let db = task(
            Family::Database,
            json!({"reference_sql": "SELECT a FROM t;"}),
        );
        assert_eq!(
            reference_response(&db).expect("ok"),
            "```sql\nSELECT a FROM t;\n```"
        );
        assert_eq!(
            wrong_response(&db, 3).expect("ok"),
            "```sql\nSELECT * FROM (SELECT a FROM t) WHERE NULL\n```"
        );
        let code = task(Family::Code, json!({"metadata": {"func_name": "solve"}}));
        let err = reference_response(&code).expect_err("LiC data has no solution");
        assert!(err.to_string().contains(REFERENCE_SOLUTION_KEY), "{err}");
        assert_eq!(
            wrong_response(&code, 0).expect("ok"),
            "```python\ndef solve(*args):\n    return None\n```"
        );
    }
}
