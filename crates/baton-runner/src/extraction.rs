//! LiC's LLM answer extraction after an episode's final reply (`extraction = "lic"`).
//!
//! For a math or database episode whose last turn was answered, the runner asks the
//! `[extractor]` model, with LiC's prompt (`baton_eval::extract::llm::prompt`), for the
//! answer, up to [`llm::MAX_ATTEMPTS`] times while the reply is not JSON with a string
//! `answer` or the answer is not a verbatim part of the final reply; every attempt is a
//! stored, priced call of phase `extraction` (turn = the attempt), so a resume replays
//! them and never pays twice. When no attempt is accepted the answer is none (LiC's
//! `""`), and the verdict's rule says `<family>.lic_llm_failed`; an accepted answer is
//! `<family>.lic_llm`. A call that cannot be made (a provider error, the spending cap, a
//! stop) leaves the episode incomplete, to be extracted on resume; it is never scored
//! as no answer. The other families keep the deterministic path.

use baton_eval::extract::llm;
use baton_types::{ExtractionStrategy, Family, answer_description};

use crate::RunError;
use crate::episode::{Shared, Transcript, Unfinished};
use crate::setup::Extractor;

/// What LiC's extraction made of a final reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LlmAnswer {
    /// The accepted answer; `None` when no attempt was accepted (or it was empty).
    pub answer: Option<String>,
    /// `<family>.lic_llm` or `<family>.lic_llm_failed`.
    pub rule: &'static str,
}

/// The rule an LLM extraction reports for `family`: found or failed.
pub(crate) fn rule(family: Family, found: bool) -> &'static str {
    match (family, found) {
        (Family::Math, true) => "math.lic_llm",
        (Family::Math, false) => "math.lic_llm_failed",
        (Family::Database, true) => "database.lic_llm",
        (Family::Database, false) => "database.lic_llm_failed",
        (_, true) => "lic_llm",
        (_, false) => "lic_llm_failed",
    }
}

/// Whether a verdict's rule says an LLM extraction found nothing.
pub fn is_failed_extraction(rule: Option<&str>) -> bool {
    rule.is_some_and(|r| r.ends_with("lic_llm_failed"))
}

/// Extract the answer of `response` for a `family` episode, or `None` when the family
/// is not extracted by an LLM.
pub(crate) async fn extract(
    tr: &mut Transcript<'_>,
    shared: &Shared,
    extractor: &Extractor,
    family: Family,
    response: &str,
) -> Result<Option<Result<LlmAnswer, Unfinished>>, RunError> {
    let (Some(strategy), Some(description)) =
        (ExtractionStrategy::of(family), answer_description(family))
    else {
        return Ok(None);
    };
    let prompt = llm::prompt(extractor.prompts.template(strategy), description, response);
    for attempt in 1..=llm::MAX_ATTEMPTS {
        let reply = match tr
            .extraction_call(shared, &extractor.model, &prompt, attempt)
            .await?
        {
            Ok(r) => r,
            Err(u) => return Ok(Some(Err(u))),
        };
        if let Ok(answer) = llm::accept(strategy, &reply, response) {
            let found = !answer.trim().is_empty();
            return Ok(Some(Ok(LlmAnswer {
                answer: found.then_some(answer),
                rule: rule(family, found),
            })));
        }
    }
    Ok(Some(Ok(LlmAnswer {
        answer: None,
        rule: rule(family, false),
    })))
}
