//! Adapters from the evaluator crates to the [`Evaluator`] trait: actions
//! (`baton-bfcl`) and database (`baton-spider`).

use baton_spider::{SpiderConfig, SpiderEvaluator};
use baton_types::{Family, Verdict};
use serde_json::Value;

use crate::{EvalError, Evaluator};

/// Actions (BFCL parallel): LiC hands the whole response to the checker.
#[derive(Debug, Default, Clone, Copy)]
pub struct ActionsEvaluator;

impl Evaluator for ActionsEvaluator {
    fn family(&self) -> Family {
        Family::Actions
    }

    /// LiC's `full_response` strategy: the response itself.
    fn extract(&self, response: &str, _sample: &Value) -> Result<String, EvalError> {
        Ok(response.to_string())
    }

    fn evaluate(&self, extracted: &str, sample: &Value) -> Result<Verdict, EvalError> {
        Ok(baton_bfcl::evaluate_response(extracted, sample))
    }
}

/// Database (Spider test-suite execution match).
#[derive(Debug, Clone)]
pub struct DatabaseEvaluator(SpiderEvaluator);

impl DatabaseEvaluator {
    /// An evaluator over the databases in `config.databases_dir`.
    pub fn new(config: SpiderConfig) -> Self {
        DatabaseEvaluator(SpiderEvaluator::new(config))
    }
}

impl Evaluator for DatabaseEvaluator {
    fn family(&self) -> Family {
        Family::Database
    }

    /// Our deterministic replacement for LiC's LLM extractor (see `baton_spider::extract_sql`).
    fn extract(&self, response: &str, _sample: &Value) -> Result<String, EvalError> {
        Ok(baton_spider::extract_sql(response))
    }

    fn evaluate(&self, extracted: &str, sample: &Value) -> Result<Verdict, EvalError> {
        self.0
            .evaluate(extracted, sample)
            .map_err(|e| EvalError::Setup {
                family: Family::Database,
                message: e.to_string(),
            })
    }
}
