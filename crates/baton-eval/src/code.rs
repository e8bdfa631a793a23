//! Code (HumanEval + LiveCodeBench): LiC's extraction and grading, run in the WASI
//! sandbox of `baton-sandbox`.

use std::sync::OnceLock;

use baton_sandbox::{CodeGrader, GraderConfig};
use baton_types::{Family, Verdict};
use serde_json::Value;

use crate::{EvalError, Evaluator, Extracted, Rules};

/// The code evaluator (`lic` profile). The sandbox runtime is opened on first use (and
/// built then if this machine has none), so runs without code tasks never pay for it.
#[derive(Debug)]
pub struct CodeEvaluator {
    config: GraderConfig,
    grader: OnceLock<Result<CodeGrader, String>>,
}

impl CodeEvaluator {
    /// An evaluator that opens the sandbox with `config` when first used.
    pub fn new(config: GraderConfig) -> Self {
        CodeEvaluator {
            config,
            grader: OnceLock::new(),
        }
    }

    fn grader(&self) -> Result<&CodeGrader, EvalError> {
        self.grader
            .get_or_init(|| CodeGrader::new(self.config.clone()).map_err(|e| format!("{e:#}")))
            .as_ref()
            .map_err(|message| EvalError::Setup {
                family: Family::Code,
                message: format!(
                    "the Python sandbox is not available: {message} (try `baton sandbox install`)"
                ),
            })
    }
}

/// The rule names `extract_kept` gives, as the static names verdicts carry.
fn kept_rule(rule: &str) -> &'static str {
    match rule {
        "code.named" => "code.named",
        "code.last_def" => "code.last_def",
        "code.class" => "code.class",
        "code.unfenced_named" => "code.unfenced_named",
        "code.unfenced_last_def" => "code.unfenced_last_def",
        "code.unfenced_class" => "code.unfenced_class",
        "code.lic" => "code.lic",
        _ => "code.none",
    }
}

fn setup(e: baton_sandbox::SandboxError) -> EvalError {
    EvalError::Setup {
        family: Family::Code,
        message: e.to_string(),
    }
}

impl Evaluator for CodeEvaluator {
    fn family(&self) -> Family {
        Family::Code
    }

    /// Under [`Rules::Lic`], LiC's `TaskCode.extract_answer`; under [`Rules::Baton`], the
    /// chosen function with the constants, helpers and imports it needs and never a block
    /// of tests ([`CodeGrader::extract_kept`], with the task's `metadata.func_name`). Both
    /// run with Python's `ast` inside the sandbox.
    fn extract(
        &self,
        response: &str,
        sample: &Value,
        rules: Rules,
    ) -> Result<Extracted, EvalError> {
        let grader = self.grader()?;
        match rules {
            Rules::Lic => {
                let code = grader.extract(response).map_err(setup)?;
                Ok(Extracted::unless_empty("code.lic", code, "code.none"))
            }
            Rules::Baton => {
                let fn_name = sample
                    .pointer("/metadata/func_name")
                    .and_then(Value::as_str);
                let (rule, code) = grader.extract_kept(response, fn_name).map_err(setup)?;
                Ok(Extracted::unless_empty(kept_rule(&rule), code, "code.none"))
            }
        }
    }

    fn evaluate(&self, extracted: &str, sample: &Value) -> Result<Verdict, EvalError> {
        self.grader()?
            .grade_extracted(extracted, sample)
            .map_err(setup)
    }
}
