//! Scoring a finished episode and storing its outcome, with evaluators the caller
//! chooses through [`crate::RunOptions::evaluators`].

use std::path::Path;
use std::sync::Arc;

use baton_eval::{EvalConfig, EvalError, Evaluators};
use baton_store::Outcome;
use baton_types::{Cost, EpisodeStatus, Family, Task};

use crate::RunError;
use crate::episode::{Shared, Unfinished};
use crate::extraction::LlmAnswer;

/// Builds the evaluators of a run, as [`crate::ProviderFactory`] builds providers.
///
/// The runner gives it the folders the experiment names (the Spider databases); the
/// profile and version it reports are stored with the run.
pub trait EvaluatorFactory: Send + Sync {
    /// The profile recorded with the run (`lic`).
    fn profile(&self) -> String;
    /// The implementation version recorded with the run.
    fn version(&self) -> String;
    /// The evaluators, reading databases from `spider_dir`.
    fn make(&self, spider_dir: &Path) -> Evaluators;
}

/// LiC's evaluators ([`Evaluators::lic`]) with the default limits: the default.
#[derive(Debug, Default, Clone, Copy)]
pub struct LicEvaluators;

impl EvaluatorFactory for LicEvaluators {
    fn profile(&self) -> String {
        baton_eval::PROFILE.to_string()
    }

    fn version(&self) -> String {
        Evaluators::version().to_string()
    }

    fn make(&self, spider_dir: &Path) -> Evaluators {
        Evaluators::lic(&EvalConfig {
            spider_dir: spider_dir.to_path_buf(),
            ..EvalConfig::default()
        })
    }
}

/// Whether a family's evaluator is cheap enough to run on the runtime's own thread:
/// math, actions and data2text take microseconds per answer, less than handing the
/// answer to a blocking thread (a thread started per scored episode, at worst) costs.
/// Code and database run programs and queries, and keep to the blocking pool.
fn inline(family: Family) -> bool {
    matches!(family, Family::Math | Family::Actions | Family::Data2Text)
}

/// The verdict on `response`, or on the answer LiC's LLM extraction accepted.
fn score(
    evaluators: &Evaluators,
    task: &Task,
    response: &str,
    llm: Option<LlmAnswer>,
) -> Result<baton_eval::Scored, EvalError> {
    match llm {
        None => evaluators.score_response(task.family, response, &task.sample),
        Some(found) => {
            let extracted = found.answer.clone().unwrap_or_default();
            let mut verdict = evaluators.score_extracted(task.family, &extracted, &task.sample)?;
            verdict.rule = Some(found.rule.to_owned());
            verdict.no_answer = found.answer.is_none();
            if verdict.no_answer && verdict.error.is_none() {
                verdict.error = Some(format!("no answer extracted ({})", found.rule));
            }
            Ok(baton_eval::Scored { extracted, verdict })
        }
    }
}

/// Score a finished transcript (or record why it did not finish) and store the
/// outcome: its final reply through the family's deterministic extraction, or, with
/// `llm`, the answer LiC's LLM extraction accepted. An evaluator that is missing leaves the episode `unscored`, one that
/// cannot run leaves it `errored`; neither is a score of 0.
pub(crate) async fn finish(
    shared: &Shared,
    episode_id: i64,
    task: &Arc<Task>,
    result: Result<String, Unfinished>,
    llm: Option<LlmAnswer>,
    cost_attributed: Cost,
    cost_paid: Cost,
) -> Result<EpisodeStatus, RunError> {
    let outcome = match result {
        Err(Unfinished(reason)) => Outcome {
            reason: Some(reason),
            cost_attributed,
            cost_paid,
            ..Outcome::unfinished()
        },
        Ok(response) => {
            let scored = if inline(task.family) {
                // a panicking evaluator errs the episode, as on the blocking pool
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    score(&shared.evaluators, task, &response, llm)
                }))
                .unwrap_or_else(|_| {
                    Err(EvalError::Setup {
                        family: task.family,
                        message: "evaluator panicked".into(),
                    })
                })
            } else {
                let evaluators = shared.evaluators.clone();
                let task2 = task.clone();
                let resp2 = response.clone();
                tokio::task::spawn_blocking(move || score(&evaluators, &task2, &resp2, llm))
                    .await
                    .unwrap_or_else(|e| {
                        Err(EvalError::Setup {
                            family: task.family,
                            message: format!("evaluator panicked: {e}"),
                        })
                    })
            };
            let (status, extracted, verdict, reason) = match scored {
                Ok(s) => (
                    EpisodeStatus::Scored,
                    Some(s.extracted),
                    Some(s.verdict),
                    None,
                ),
                Err(e @ EvalError::Unavailable(_)) => {
                    (EpisodeStatus::Unscored, None, None, Some(e.to_string()))
                }
                Err(e) => (EpisodeStatus::Errored, None, None, Some(e.to_string())),
            };
            Outcome {
                status,
                final_response: Some(response),
                extracted,
                verdict,
                reason,
                cost_attributed,
                cost_paid,
            }
        }
    };
    let status = outcome.status;
    shared.ctx.store.finish(episode_id, outcome).await?;
    shared.ctx.observer.episode(status);
    Ok(status)
}
