//! Adapters from the evaluator crates to the [`Evaluator`] trait: actions
//! (`baton-bfcl`) and database (`baton-spider`).

use baton_spider::{SpiderConfig, SpiderEvaluator};
use baton_types::{Family, Verdict};
use serde_json::Value;

use crate::{EvalError, Evaluator, Extracted, Rules};

/// Actions (BFCL parallel): LiC hands the whole response to the checker.
#[derive(Debug, Default, Clone, Copy)]
pub struct ActionsEvaluator;

impl Evaluator for ActionsEvaluator {
    fn family(&self) -> Family {
        Family::Actions
    }

    /// LiC's `full_response` strategy (the response itself) under [`Rules::Lic`]; calls read
    /// out of prose and fences under [`Rules::Baton`] ([`crate::extract::actions`]).
    fn extract(
        &self,
        response: &str,
        _sample: &Value,
        rules: Rules,
    ) -> Result<Extracted, EvalError> {
        Ok(match rules {
            Rules::Lic => Extracted::found("actions.full_response", response),
            Rules::Baton => crate::extract::actions::extract(response),
        })
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

    /// Our deterministic replacement for LiC's LLM extractor, under both rule sets (see
    /// `baton_spider::read_sql`).
    fn extract(
        &self,
        response: &str,
        _sample: &Value,
        _rules: Rules,
    ) -> Result<Extracted, EvalError> {
        let read = baton_spider::read_sql(response);
        Ok(Extracted {
            answer: read.sql,
            rule: read.rule,
        })
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
