//! Shared fixtures: one sandbox per test binary, graders with short limits.

use std::sync::OnceLock;
use std::time::Duration;

use baton_sandbox::{CodeGrader, GraderConfig, Sandbox};
use serde_json::{Value, json};

/// The sandbox, opened (and built if needed) once for the whole binary.
pub fn sandbox() -> &'static Sandbox {
    static SANDBOX: OnceLock<Sandbox> = OnceLock::new();
    SANDBOX.get_or_init(|| Sandbox::open().expect("the sandbox runtime opens (or builds)"))
}

/// A grader with LiC's real limits.
pub fn lic_grader() -> CodeGrader {
    CodeGrader::from_sandbox(sandbox().clone(), GraderConfig::default())
}

/// A grader with a 1 s per-test limit, for hostile programs.
pub fn quick_grader() -> CodeGrader {
    CodeGrader::from_sandbox(
        sandbox().clone(),
        GraderConfig {
            test_time_limit: Duration::from_secs(1),
            ..GraderConfig::default()
        },
    )
}

/// A call-based sample: `fn_name` with `(input, output)` test pairs.
pub fn sample(fn_name: &str, tests: &[(&str, &str)]) -> Value {
    let cases: Vec<Value> = tests
        .iter()
        .map(|(input, output)| json!({"input": input, "output": output, "testtype": "functional"}))
        .collect();
    json!({
        "metadata": {"func_name": fn_name},
        "public_test_cases": serde_json::to_string(&cases).unwrap(),
    })
}
