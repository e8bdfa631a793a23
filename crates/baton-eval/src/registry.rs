//! The set of evaluators a run uses.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use baton_types::{Family, Verdict};
use serde_json::Value;

use baton_spider::SpiderConfig;

use crate::code::CodeEvaluator;
use crate::data2text::Data2TextEvaluator;
use crate::families::{ActionsEvaluator, DatabaseEvaluator};
use crate::math::MathEvaluator;
use crate::{EvalError, Evaluator, Rules};

/// The evaluator profile this build implements.
pub const PROFILE: &str = "lic";

/// Where evaluators find what they need.
#[derive(Debug, Clone)]
pub struct EvalConfig {
    /// The Spider test-suite folder holding `<db_id>/*.sqlite`.
    pub spider_dir: PathBuf,
    /// Time limit per SQL query.
    pub query_timeout: Duration,
    /// Time limit for scoring one database answer, all its queries together (see
    /// `baton_spider::SpiderConfig::score_budget`).
    pub database_budget: Duration,
    /// Limits of the Python sandbox that grades code.
    pub code: baton_sandbox::GraderConfig,
    /// How answers are read out of responses (default [`Rules::Baton`]).
    pub rules: Rules,
}

impl Default for EvalConfig {
    fn default() -> Self {
        EvalConfig {
            spider_dir: PathBuf::from("datasets/spider/databases"),
            query_timeout: SpiderConfig::DEFAULT_QUERY_TIMEOUT,
            database_budget: SpiderConfig::DEFAULT_SCORE_BUDGET,
            code: baton_sandbox::GraderConfig::default(),
            rules: Rules::default(),
        }
    }
}

/// An extracted answer and its verdict.
#[derive(Debug, Clone)]
pub struct Scored {
    /// What the extraction took from the response (empty when it found nothing; the
    /// verdict then has `no_answer` set).
    pub extracted: String,
    /// The evaluator's verdict.
    pub verdict: Verdict,
}

/// The evaluators of one run, by family.
#[derive(Clone)]
pub struct Evaluators {
    map: BTreeMap<Family, Arc<dyn Evaluator>>,
    rules: Rules,
}

impl std::fmt::Debug for Evaluators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.map.keys()).finish()
    }
}

impl Evaluators {
    /// The `lic` profile's evaluators.
    pub fn lic(config: &EvalConfig) -> Self {
        let mut map: BTreeMap<Family, Arc<dyn Evaluator>> = BTreeMap::new();
        map.insert(Family::Math, Arc::new(MathEvaluator));
        map.insert(Family::Data2Text, Arc::new(Data2TextEvaluator));
        map.insert(Family::Actions, Arc::new(ActionsEvaluator));
        map.insert(
            Family::Code,
            Arc::new(CodeEvaluator::new(config.code.clone())),
        );
        map.insert(
            Family::Database,
            Arc::new(DatabaseEvaluator::new(SpiderConfig {
                databases_dir: config.spider_dir.clone(),
                query_timeout: config.query_timeout,
                score_budget: config.database_budget,
            })),
        );
        Evaluators {
            map,
            rules: config.rules,
        }
    }

    /// The implementation version recorded with every run.
    pub fn version() -> &'static str {
        env!("CARGO_PKG_VERSION")
    }

    /// The extraction rules in use.
    pub fn rules(&self) -> Rules {
        self.rules
    }

    /// Whether the family can be scored.
    pub fn has(&self, family: Family) -> bool {
        self.map.contains_key(&family)
    }

    /// The evaluator for a family.
    pub fn get(&self, family: Family) -> Result<&Arc<dyn Evaluator>, EvalError> {
        self.map.get(&family).ok_or(EvalError::Unavailable(family))
    }

    /// Extract the answer from a final response and score it, on a scoring thread (see
    /// [`SCORING_STACK`]). The verdict names the extraction rule; when there is nothing to
    /// extract, the evaluator scores the empty answer (0, in the family's shape) and the
    /// verdict has `no_answer` set.
    pub fn score_response(
        &self,
        family: Family,
        response: &str,
        sample: &Value,
    ) -> Result<Scored, EvalError> {
        let ev = self.get(family)?;
        let rules = self.rules;
        on_scoring_thread(family, || {
            let found = ev.extract(response, sample, rules)?;
            // Scored from where the extraction put it, then moved into `Scored`: not copied.
            let mut verdict = ev.evaluate(found.answer.as_deref().unwrap_or_default(), sample)?;
            verdict.rule = Some(found.rule.to_owned());
            verdict.no_answer = found.answer.is_none();
            if verdict.no_answer && verdict.error.is_none() {
                verdict.error = Some(format!("no answer found ({})", found.rule));
            }
            Ok(Scored {
                extracted: found.answer.unwrap_or_default(),
                verdict,
            })
        })
    }

    /// Score an already-extracted answer, on a scoring thread (see [`SCORING_STACK`]).
    pub fn score_extracted(
        &self,
        family: Family,
        extracted: &str,
        sample: &Value,
    ) -> Result<Verdict, EvalError> {
        let ev = self.get(family)?;
        on_scoring_thread(family, || ev.evaluate(extracted, sample))
    }
}

/// Stack of the thread every answer is scored on (`baton_bfcl::STACK_SIZE`).
///
/// Scoring reads model output, which may nest without bound, so it never runs on a
/// caller's ordinary thread (a 2 MiB tokio or rayon worker): a stack overflow aborts the
/// whole process, which in a run means every resume would crash again on the stored reply.
/// Each evaluator bounds its recursion instead; the deepest (the actions parser, see
/// `baton_bfcl::STACK_SIZE`) needs at most 12 MiB in a debug build, and nothing else
/// recurses more than a few hundred levels.
///
/// A thread started by [`spawn_scoring_thread`] has this stack, and answers scored on it
/// run inline. Any other caller gets a fresh thread per answer, which costs some tens of
/// microseconds and a few system calls (`clone`, `mmap` and `munmap` of the stack): more
/// than scoring a math or actions answer, so callers that score many answers start their
/// workers with [`spawn_scoring_thread`] (`baton score` builds its pool with it).
pub const SCORING_STACK: usize = baton_bfcl::STACK_SIZE;

/// Start a thread with [`SCORING_STACK`] of stack, on which [`Evaluators`] score inline.
pub fn spawn_scoring_thread<F, T>(name: String, f: F) -> std::io::Result<std::thread::JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    baton_bfcl::spawn_big_stack_thread(name, f)
}

/// Run `score` with [`SCORING_STACK`] of stack: inline on a thread started by
/// [`spawn_scoring_thread`], otherwise on a fresh thread. A panic in an evaluator is a
/// setup error of the family, not a crash and not a score.
fn on_scoring_thread<T: Send>(
    family: Family,
    score: impl FnOnce() -> Result<T, EvalError> + Send,
) -> Result<T, EvalError> {
    if baton_bfcl::on_big_stack_thread() {
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(score))
            .unwrap_or_else(|panic| Err(panicked(family, panic.as_ref())));
    }
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name(format!("baton-score-{family}"))
            .stack_size(SCORING_STACK)
            .spawn_scoped(scope, score)
            .map_err(|e| EvalError::Setup {
                family,
                message: format!("cannot start a scoring thread: {e}"),
            })?;
        handle
            .join()
            .unwrap_or_else(|panic| Err(panicked(family, panic.as_ref())))
    })
}

fn panicked(family: Family, panic: &(dyn std::any::Any + Send)) -> EvalError {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    EvalError::Setup {
        family,
        message: format!("evaluator panicked: {what}"),
    }
}
