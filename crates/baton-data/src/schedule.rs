//! The fixed message plan of one task: system prompt and user turns.

use baton_py::json_repr;
use baton_types::{Family, Task};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::DataError;
use crate::templates::{FUNCTIONS_PLACEHOLDER, SCHEMA_PLACEHOLDER, Templates};

/// What every model sees for one task, whoever answers which turn.
///
/// The system prompt is the family template filled from the sample (LiC's
/// `generate_system_prompt`); user turn `t` is shard `t` verbatim, and the last
/// turn also carries `"\n\n"` plus the family's final instruction. The plan is
/// a pure function of the task and the templates, so it is byte-identical
/// across models, cells and switch points; `sha256` lets every episode prove it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// The filled system prompt.
    pub system: String,
    /// One user message per shard, in reveal order.
    pub user_turns: Vec<String>,
    /// Hex sha256 of the JSON array `[system, turn_1, ..., turn_n]` (compact
    /// serde_json encoding).
    pub sha256: String,
}

/// Build the schedule of `task` with `templates`.
///
/// Fails when the task has no shards or lacks what its system prompt needs
/// (`schema_sql` for database, `function` for actions).
pub fn build_schedule(task: &Task, templates: &Templates) -> Result<Schedule, DataError> {
    if task.shards.is_empty() {
        return Err(DataError::task(
            &task.task_id,
            "shards",
            "expected at least one shard",
        ));
    }
    let system = system_prompt(task, templates)?;
    let mut user_turns: Vec<String> = task.shards.iter().map(|s| s.shard.clone()).collect();
    if let Some(last) = user_turns.last_mut() {
        last.push_str("\n\n");
        last.push_str(templates.final_instruction(task.family));
    }
    let sha256 = schedule_sha256(&system, &user_turns);
    Ok(Schedule {
        system,
        user_turns,
        sha256,
    })
}

/// The family's system prompt with its placeholder filled from the sample.
pub fn system_prompt(task: &Task, templates: &Templates) -> Result<String, DataError> {
    let template = templates.system(task.family);
    Ok(match task.family {
        Family::Database => {
            let schema = task
                .sample
                .get("schema_sql")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    DataError::task(&task.task_id, "schema_sql", "missing or not a string")
                })?;
            template.replace(SCHEMA_PLACEHOLDER, schema)
        }
        Family::Actions => {
            let functions = task
                .sample
                .get("function")
                .filter(|v| v.is_array())
                .ok_or_else(|| {
                    DataError::task(&task.task_id, "function", "missing or not an array")
                })?;
            template.replace(FUNCTIONS_PLACEHOLDER, &json_repr(functions))
        }
        Family::Code | Family::Math | Family::Data2Text => template.to_owned(),
    })
}

fn schedule_sha256(system: &str, user_turns: &[String]) -> String {
    let mut parts: Vec<&str> = Vec::with_capacity(user_turns.len() + 1);
    parts.push(system);
    parts.extend(user_turns.iter().map(String::as_str));
    let canonical = serde_json::to_string(&parts).unwrap_or_default();
    hex::encode(Sha256::digest(canonical.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_types::Shard;
    use serde_json::json;

    fn task(family: Family, sample: Value, shards: &[&str]) -> Task {
        Task {
            task_id: "t/1".into(),
            family,
            shards: shards
                .iter()
                .enumerate()
                .map(|(i, s)| Shard {
                    shard_id: i as i64 + 1,
                    shard: (*s).to_owned(),
                })
                .collect(),
            sample,
        }
    }

    #[test]
    fn last_turn_carries_the_final_instruction() {
        let t = task(Family::Math, json!({}), &["a", "b", "c"]);
        let templates = Templates::embedded();
        let s = build_schedule(&t, &templates).expect("schedule");
        assert_eq!(s.user_turns[0], "a");
        assert_eq!(s.user_turns[1], "b");
        assert_eq!(
            s.user_turns[2],
            format!("c\n\n{}", templates.final_instruction(Family::Math))
        );
        assert_eq!(s.system, templates.system(Family::Math));
    }

    #[test]
    fn single_shard_task_gets_instruction_on_its_only_turn() {
        let t = task(Family::Data2Text, json!({}), &["only"]);
        let s = build_schedule(&t, &Templates::embedded()).expect("schedule");
        assert_eq!(s.user_turns.len(), 1);
        assert!(s.user_turns[0].starts_with("only\n\n"));
    }

    #[test]
    fn schema_is_pasted_verbatim() {
        let schema = "CREATE TABLE a (x int);\n\nCREATE TABLE b (y text);";
        let t = task(Family::Database, json!({"schema_sql": schema}), &["q"]);
        let s = build_schedule(&t, &Templates::embedded()).expect("schedule");
        assert!(s.system.ends_with(&format!("\n        \n{schema}")));
        assert!(!s.system.contains("[[SCHEMA]]"));
    }

    #[test]
    fn functions_are_python_repr() {
        let f = json!([{"name": "f", "parameters": {"type": "dict", "required": []}, "x": 1.5}]);
        let t = task(Family::Actions, json!({"function": f}), &["q"]);
        let s = build_schedule(&t, &Templates::embedded()).expect("schedule");
        assert!(s.system.ends_with(
            "\n\n[{'name': 'f', 'parameters': {'type': 'dict', 'required': []}, 'x': 1.5}]"
        ));
    }

    #[test]
    fn missing_fill_data_is_an_error() {
        let t = task(Family::Database, json!({}), &["q"]);
        let err = build_schedule(&t, &Templates::embedded()).expect_err("no schema");
        assert_eq!(
            err.to_string(),
            "task \"t/1\": key \"schema_sql\": missing or not a string"
        );
        let t = task(Family::Math, json!({}), &[]);
        assert!(build_schedule(&t, &Templates::embedded()).is_err());
    }

    #[test]
    fn hash_is_deterministic_and_sensitive() {
        let templates = Templates::embedded();
        let a = build_schedule(&task(Family::Math, json!({}), &["x", "y"]), &templates)
            .expect("schedule");
        let b = build_schedule(
            &task(Family::Math, json!({"z": 1}), &["x", "y"]),
            &templates,
        )
        .expect("schedule");
        assert_eq!(a, b, "unused sample keys do not change the plan");
        let c = build_schedule(&task(Family::Math, json!({}), &["x", "y!"]), &templates)
            .expect("schedule");
        assert_ne!(a.sha256, c.sha256);
        // Moving text across the turn boundary changes the hash too.
        let d = build_schedule(&task(Family::Math, json!({}), &["xy", ""]), &templates)
            .expect("schedule");
        assert_ne!(a.sha256, d.sha256);
    }
}
