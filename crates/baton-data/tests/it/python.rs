//! The actions system prompt holds Python's `str()` of each sample's function list; CPython
//! must print the same bytes. (The repr rules themselves are checked in `baton-py`.)

use baton_data::{Templates, build_schedule, sample_dataset};
use baton_fixture::run_python;
use baton_types::Family;
use serde_json::Value;

#[test]
fn actions_prompts_hold_pythons_str_of_the_function_list() {
    let ds = sample_dataset();
    let templates = Templates::embedded();
    let tasks: Vec<_> = ds
        .tasks
        .iter()
        .filter(|t| t.family == Family::Actions)
        .collect();
    assert!(!tasks.is_empty(), "the sample set has actions tasks");
    let functions: Vec<&Value> = tasks.iter().map(|t| &t.sample["function"]).collect();
    let script =
        "import json,sys\nprint(json.dumps([str(v) for v in json.loads(sys.stdin.read())]))";
    let Some(out) = run_python(script, &serde_json::to_string(&functions).expect("json")) else {
        return;
    };
    let expected: Vec<String> = serde_json::from_str(&out).expect("python output");
    assert_eq!(expected.len(), tasks.len());
    for (task, want) in tasks.iter().zip(&expected) {
        let schedule = build_schedule(task, &templates).expect("sample tasks are complete");
        assert!(
            schedule.system.contains(want.as_str()),
            "{}: the system prompt does not hold Python's {want}",
            task.task_id
        );
    }
}
