//! Scoring a finished episode and storing its outcome, with evaluators the caller
//! chooses through [`crate::RunOptions::evaluators`].

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, mpsc};

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

/// Whether a family's evaluator is cheap enough for the scoring threads ([`on_scorer`]):
/// math, actions and data2text take microseconds per answer, less than handing the
/// answer to a blocking thread (a thread started per scored episode, at worst) costs.
/// Code and database run programs and queries, and keep to the blocking pool.
fn inline(family: Family) -> bool {
    matches!(family, Family::Math | Family::Actions | Family::Data2Text)
}

type Job = Box<dyn FnOnce() + Send>;

/// Threads started once with the scoring stack (`baton_eval::spawn_scoring_thread`), on
/// which the cheap families' answers are scored inline. On the runtime's own thread (a 2
/// MiB tokio worker) every answer started a scoring thread of its own: 3,207 thread starts
/// for 3,200 episodes (`strace -f -c` of `bench harness --tasks 100`), each a `clone3`,
/// the `mmap`/`munmap` of a 64 MiB stack and a dozen calls more. `None` when not one
/// could be started.
fn scorers() -> Option<&'static mpsc::Sender<Job>> {
    static SCORERS: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    SCORERS
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let rx = Arc::new(Mutex::new(rx));
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
            let mut started = 0;
            for i in 0..threads {
                let rx = rx.clone();
                let serve = move || {
                    // the lock is held only while waiting for the next job
                    while let Ok(job) = rx
                        .lock()
                        .map_err(drop)
                        .and_then(|rx| rx.recv().map_err(drop))
                    {
                        job();
                    }
                };
                match baton_eval::spawn_scoring_thread(format!("baton-scorer-{i}"), serve) {
                    Ok(_) => started += 1,
                    Err(e) => tracing::warn!("cannot start scoring thread {i}: {e}"),
                }
            }
            (started > 0).then_some(tx)
        })
        .as_ref()
}

/// `score()` on a scoring thread. A panicking evaluator errs its answer and leaves the
/// thread serving; with no scoring thread the answer errs as an evaluator does that
/// cannot start its own.
async fn on_scorer<T: Send + 'static>(
    score: impl FnOnce() -> Result<T, EvalError> + Send + 'static,
    family: Family,
) -> Result<T, EvalError> {
    let setup = move |message: &str| EvalError::Setup {
        family,
        message: message.into(),
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let scored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(score))
            .unwrap_or_else(|_| Err(setup("evaluator panicked")));
        let _ = tx.send(scored);
    });
    let sent = scorers().is_some_and(|s| s.send(job).is_ok());
    if !sent {
        return Err(setup("cannot start a scoring thread"));
    }
    rx.await
        .unwrap_or_else(|_| Err(setup("evaluator panicked")))
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
///
/// What it paid is counted by the store as it stores the outcome, from the calls and
/// attempts it stored ([`crate::ledger::episode_paid`]); its attributed cost is that plus
/// `forked`, the cost of a prefix taken from its anchor. Returns the costs counted.
pub(crate) async fn finish(
    shared: &Shared,
    episode_id: i64,
    task: &Arc<Task>,
    result: Result<String, Unfinished>,
    llm: Option<LlmAnswer>,
    forked: Cost,
) -> Result<baton_store::EpisodeCosts, RunError> {
    let outcome = match result {
        Err(Unfinished(reason)) => Outcome {
            reason: Some(reason),
            ..Outcome::unfinished()
        },
        Ok(response) => {
            let family = task.family;
            let evaluators = shared.evaluators.clone();
            let (task, reply) = (task.clone(), response.clone());
            let job = move || score(&evaluators, &task, &reply, llm);
            let scored = if inline(family) {
                on_scorer(job, family).await
            } else {
                tokio::task::spawn_blocking(job).await.unwrap_or_else(|e| {
                    Err(EvalError::Setup {
                        family,
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
                // counted by the store (below)
                cost_attributed: Cost::ZERO,
                cost_paid: Cost::ZERO,
            }
        }
    };
    let status = outcome.status;
    let costs = shared
        .ctx
        .store
        .finish_counted(episode_id, outcome, forked, |c| {
            crate::ledger::episode_paid(&c.calls, &c.attempts)
        })
        .await?;
    shared.ctx.observer.episode(status);
    Ok(costs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cheap_answers_are_scored_on_the_scoring_threads_and_a_panic_errs_only_its_answer() {
        let name = on_scorer(
            || Ok(std::thread::current().name().map(str::to_string)),
            Family::Math,
        )
        .await
        .unwrap();
        assert!(name.unwrap().starts_with("baton-scorer-"));
        let panicked =
            on_scorer(|| -> Result<(), EvalError> { panic!("boom") }, Family::Math).await;
        assert!(matches!(
            panicked,
            Err(EvalError::Setup {
                family: Family::Math,
                ..
            })
        ));
        // the threads still serve, as many answers as there are
        for i in 0..64 {
            assert_eq!(on_scorer(move || Ok(i), Family::Math).await.unwrap(), i);
        }
    }
}
