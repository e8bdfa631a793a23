//! LiC's single-turn baselines: the `full` and `concat` user messages.
//!
//! Each is one user message after the family's system prompt, built the way LiC's
//! `tasks/<family>/task_<family>.py` builds it (`populate_fully_specific_prompt`,
//! `populate_concat_prompt`), from LiC's `*_full_prompt.txt` read from the user's
//! checkout ([`Templates::lic`]). The fills, in LiC's order (Python's `str.replace`,
//! every occurrence, one placeholder after the other):
//!
//! | family | `full` | `concat` |
//! |---|---|---|
//! | math | `[[QUESTION]]` ← `question` | `[[QUESTION]]` ← `- shard\n` per shard |
//! | database | `[[DATABASE_SCHEMA]]` ← `schema_sql`, `[[USER_QUERY]]` ← `fully_specified_question` | the same schema; the query is a lead-in line and `- shard\n` per shard |
//! | actions | `[[QUESTION]]` ← `fully_specified_question[0][0].content` | `- shard\n` per shard |
//! | code, HumanEval | `[[INSTRUCTION]]` ← the item's `prompt` in a Python fence after a lead-in line | first shard, `\n`, then `- shard\n` per further shard |
//! | code, LiveCodeBench | `[[QUESTION]]` ← `question_content`, `[[FORMATTING_PREAMBLE]]`, `[[FORMATTING]]` ← `starter_code` fenced (LiveCodeBench's `# YOUR CODE HERE` when empty) | the shards as for HumanEval, same formatting |
//! | data2text | `[[TABLE_HTML]]` ← `table_highlighted_html`, `[[FEWSHOT_DESCRIPTIONS]]` ← `fewshot_descriptions`, `[[CONTEXT]]` ← `key: value\n` per `metadata` entry | table and examples empty; context `Hint <shard_id>:\n<shard>\n\n` per shard |
//!
//! The few connecting words LiC writes in its code rather than its prompt files (the
//! database lead-in, the HumanEval lead-in, LiveCodeBench's formatting preamble) are
//! written here, since no file of the checkout holds them; everything else comes from
//! the checkout. `../conformance/prompts.jsonl` holds the strings LiC's own code builds,
//! and a test reproduces every one of them byte for byte (LiveCodeBench items have no
//! vector there: their fill follows LiC's code, checked by the unit test below).
//!
//! A key LiC reads that the item lacks is an error naming the task and the key, where
//! LiC's code raises a `KeyError` (e.g. a LiveCodeBench item without `starter_code`, a
//! data2text item without `fewshot_descriptions`). baton's own templates have no
//! single-turn prompts: the baselines need `templates = "lic"`, and asking for them
//! otherwise is an error that says so.

use baton_py::json_repr;
use baton_types::{Baseline, Family, Task};
use serde_json::Value;

use crate::error::DataError;
use crate::lic::LicRole;
use crate::templates::Templates;

/// The `source` values of LiveCodeBench code items.
const LCB_SOURCES: [&str; 2] = ["lcb_easy", "lcb_medium"];

/// The user message of baseline `mode` for `task`, byte for byte as LiC's code builds it
/// (see the module docs), from LiC's templates.
pub fn baseline_prompt(
    task: &Task,
    mode: Baseline,
    templates: &Templates,
) -> Result<String, DataError> {
    let role = match (task.family, source(task)) {
        (Family::Code, Some("humaneval")) => LicRole::FullHumanEval,
        (Family::Code, Some(s)) if LCB_SOURCES.contains(&s) => LicRole::Full,
        (Family::Code, other) => {
            return Err(DataError::task(
                &task.task_id,
                "source",
                format!(
                    "LiC's single-turn prompts need humaneval, lcb_easy or lcb_medium, not {other:?}"
                ),
            ));
        }
        _ => LicRole::Full,
    };
    let template = templates.full_prompt(task.family, role).ok_or_else(|| {
        DataError::task(
            &task.task_id,
            "templates",
            format!(
                "the {} baseline is built from LiC's own templates: set templates = \"lic\" and lic_dir (or --templates lic --lic-dir DIR)",
                mode.as_str()
            ),
        )
    })?;
    let key = |k: &str| string(task, k);
    let bullets = |shards: &[baton_types::Shard]| -> String {
        shards.iter().map(|s| format!("- {}\n", s.shard)).collect()
    };
    Ok(match (task.family, mode) {
        (Family::Math, Baseline::Full) => template.replace("[[QUESTION]]", key("question")?),
        (Family::Math | Family::Actions, Baseline::Concat) => {
            template.replace("[[QUESTION]]", &bullets(&task.shards))
        }
        (Family::Database, _) => {
            let schema = key("schema_sql")?;
            let query = match mode {
                Baseline::Full => key("fully_specified_question")?.to_owned(),
                Baseline::Concat => {
                    format!("Consider all the following:\n{}", bullets(&task.shards))
                }
            };
            template
                .replace("[[DATABASE_SCHEMA]]", schema)
                .replace("[[USER_QUERY]]", &query)
        }
        (Family::Actions, Baseline::Full) => {
            let question = task
                .sample
                .get("fully_specified_question")
                .and_then(|v| v.get(0))
                .and_then(|v| v.get(0))
                .and_then(|v| v.get("content"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    DataError::task(
                        &task.task_id,
                        "fully_specified_question",
                        "expected a list of turns of messages, [[{\"role\", \"content\"}]]",
                    )
                })?;
            template.replace("[[QUESTION]]", question)
        }
        (Family::Code, _) => {
            let shards = || -> String {
                match task.shards.split_first() {
                    Some((first, rest)) => format!("{}\n{}", first.shard, bullets(rest)),
                    None => String::new(),
                }
            };
            if role == LicRole::FullHumanEval {
                let instruction = match mode {
                    Baseline::Full => format!(
                        "Complete the following incomplete function signature:\n```python\n{}\n```",
                        key("prompt")?
                    ),
                    Baseline::Concat => shards(),
                };
                template.replace("[[INSTRUCTION]]", &instruction)
            } else {
                let starter = key("starter_code")?;
                let question = match mode {
                    Baseline::Full => key("question_content")?.to_owned(),
                    Baseline::Concat => shards(),
                };
                let starter = if starter.is_empty() {
                    "# YOUR CODE HERE"
                } else {
                    starter
                };
                template
                    .replace("[[QUESTION]]", &question)
                    .replace(
                        "[[FORMATTING_PREAMBLE]]",
                        "You will use the following starter code to write the solution to the problem and enclose your code within delimiters.",
                    )
                    .replace("[[FORMATTING]]", &format!("```python\n{starter}\n```"))
            }
        }
        (Family::Data2Text, Baseline::Full) => {
            let table = key("table_highlighted_html")?;
            let fewshot = key("fewshot_descriptions")?;
            let metadata = task
                .sample
                .get("metadata")
                .and_then(Value::as_object)
                .ok_or_else(|| {
                    DataError::task(&task.task_id, "metadata", "missing or not an object")
                })?;
            let context: String = metadata
                .iter()
                .map(|(k, v)| format!("{k}: {}\n", python_str(v)))
                .collect();
            template
                .replace("[[TABLE_HTML]]", table)
                .replace("[[FEWSHOT_DESCRIPTIONS]]", fewshot)
                .replace("[[CONTEXT]]", &context)
        }
        (Family::Data2Text, Baseline::Concat) => {
            let context: String = task
                .shards
                .iter()
                .map(|s| format!("Hint {}:\n{}\n\n", s.shard_id, s.shard))
                .collect();
            template
                .replace("[[TABLE_HTML]]", "")
                .replace("[[FEWSHOT_DESCRIPTIONS]]", "")
                .replace("[[CONTEXT]]", &context)
        }
    })
}

/// The item's `source`, if it is a string.
fn source(task: &Task) -> Option<&str> {
    task.sample.get("source").and_then(Value::as_str)
}

/// A string key LiC reads, or the error LiC's `KeyError` becomes.
fn string<'a>(task: &'a Task, key: &str) -> Result<&'a str, DataError> {
    match task.sample.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(DataError::task(&task.task_id, key, "not a string")),
        None => Err(DataError::task(
            &task.task_id,
            key,
            "missing: LiC's single-turn prompt reads it",
        )),
    }
}

/// Python's `str()` of a JSON value as `json.loads` builds it: a string as is, anything
/// else as its repr.
fn python_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => json_repr(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_types::Shard;
    use serde_json::json;

    fn lcb(sample: Value) -> Task {
        Task {
            task_id: "t/1".into(),
            family: Family::Code,
            shards: vec![
                Shard {
                    shard_id: 1,
                    shard: "Count pairs.".into(),
                },
                Shard {
                    shard_id: 2,
                    shard: "Use k.".into(),
                },
            ],
            sample,
        }
    }

    fn lic_templates() -> Option<Templates> {
        let dir = baton_fixture::shared_dir("lic")?;
        Some(Templates::lic(&dir).expect("the fixture checkout reads"))
    }

    #[test]
    fn livecodebench_fills_question_preamble_and_starter_code() {
        let Some(t) = lic_templates() else { return };
        let task = lcb(
            json!({"source": "lcb_easy", "question_content": "Q?", "starter_code": "class Solution:\n    pass"}),
        );
        let full = baseline_prompt(&task, Baseline::Full, &t).expect("builds");
        let template = t.full_prompt(Family::Code, LicRole::Full).expect("read");
        assert!(template.contains("[[FORMATTING_PREAMBLE]]"));
        assert!(full.starts_with("### Question:\nQ?\n"), "{full:?}");
        assert!(
            full.contains("```python\nclass Solution:\n    pass\n```"),
            "{full:?}"
        );
        assert!(!full.contains("[["), "{full:?}");
        let concat = baseline_prompt(&task, Baseline::Concat, &t).expect("builds");
        assert!(
            concat.starts_with("### Question:\nCount pairs.\n- Use k.\n\n"),
            "{concat:?}"
        );
        let empty =
            lcb(json!({"source": "lcb_medium", "question_content": "Q?", "starter_code": ""}));
        let full = baseline_prompt(&empty, Baseline::Full, &t).expect("builds");
        assert!(
            full.contains("```python\n# YOUR CODE HERE\n```"),
            "{full:?}"
        );
    }

    #[test]
    fn a_missing_key_names_the_task_and_the_key() {
        let Some(t) = lic_templates() else { return };
        let task = lcb(json!({"source": "lcb_easy", "question_content": "Q?"}));
        let err = baseline_prompt(&task, Baseline::Concat, &t).expect_err("no starter_code");
        assert!(
            matches!(&err, DataError::Task { task_id, key, .. } if task_id == "t/1" && key == "starter_code"),
            "{err}"
        );
    }

    #[test]
    fn baton_templates_say_the_baselines_need_lic() {
        let task = lcb(json!({"source": "lcb_easy"}));
        let err = baseline_prompt(&task, Baseline::Full, &Templates::embedded())
            .expect_err("no single-turn templates");
        assert!(err.to_string().contains("templates = \"lic\""), "{err}");
    }
}
