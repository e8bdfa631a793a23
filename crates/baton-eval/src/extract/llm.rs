//! LiC's LLM answer extraction (`extraction = "lic"`): the prompt, and what of the
//! extractor's reply is accepted.
//!
//! LiC's `system_agent.py` extracts math answers (strategy `gen`) and database queries
//! (`prefix_suffix`) with a JSON-mode call at temperature 0 that returns
//! `{"answer": "..."}`. [`prompt`] fills LiC's prompt file (read from the user's checkout)
//! with the answer description and the reply; [`accept`] keeps the answer only when it
//! is a verbatim part of the reply: as is for `gen` and for a short `prefix_suffix`
//! answer, and for `start [...] end` the reply's span from the first occurrence of the
//! start to the last occurrence of the end. The runner makes up to
//! [`MAX_ATTEMPTS`] calls and, when none is accepted, reports no answer (LiC's `""`).
//!
//! Filling is one pass over the template: each placeholder is replaced once and the
//! inserted reply is never searched again, so a reply that itself contains
//! `[[ANSWER_DESCRIPTION]]` stays as the model wrote it (the only case where this can
//! differ from chained `str.replace` calls).

use baton_types::ExtractionStrategy;

/// Calls per reply before the extraction gives up (LiC's 3).
pub const MAX_ATTEMPTS: u32 = 3;
/// The placeholder LiC's prompt files hold for the reply.
pub const RESPONSE_PLACEHOLDER: &str = "[[ASSISTANT_RESPONSE]]";
/// The placeholder LiC's prompt files hold for the answer description.
pub const DESCRIPTION_PLACEHOLDER: &str = "[[ANSWER_DESCRIPTION]]";
/// What separates the start of a long answer from its end in a `prefix_suffix` answer.
pub const ELLIPSIS: &str = "[...]";

/// The extraction prompt: `template` with its placeholders filled.
pub fn prompt(template: &str, description: &str, response: &str) -> String {
    let mut out = String::with_capacity(template.len() + response.len() + description.len());
    let mut rest = template;
    loop {
        let next = [
            (
                rest.find(RESPONSE_PLACEHOLDER),
                RESPONSE_PLACEHOLDER,
                response,
            ),
            (
                rest.find(DESCRIPTION_PLACEHOLDER),
                DESCRIPTION_PLACEHOLDER,
                description,
            ),
        ]
        .into_iter()
        .filter_map(|(at, ph, with)| at.map(|i| (i, ph, with)))
        .min_by_key(|(i, _, _)| *i);
        match next {
            Some((i, ph, with)) => {
                out.push_str(&rest[..i]);
                out.push_str(with);
                rest = &rest[i + ph.len()..];
            }
            None => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// Why an extractor reply was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejected {
    /// The reply holds no JSON object with a string `answer`.
    NotJson,
    /// The answer is not a verbatim part of the reply.
    NotVerbatim,
}

/// The answer in the extractor's `reply` for `response`, if accepted. The reply is
/// read as one JSON object, or, failing that, as the first JSON object in it (Anthropic
/// has no JSON mode). An empty accepted answer is `Ok("")`: no answer.
pub fn accept(
    strategy: ExtractionStrategy,
    reply: &str,
    response: &str,
) -> Result<String, Rejected> {
    let answer = json_answer(reply).ok_or(Rejected::NotJson)?;
    if strategy == ExtractionStrategy::PrefixSuffix
        && let Some((start, end)) = answer.split_once(ELLIPSIS)
    {
        let (start, end) = (start.trim(), end.trim());
        let from = response.find(start).ok_or(Rejected::NotVerbatim)?;
        let to = response.rfind(end).ok_or(Rejected::NotVerbatim)? + end.len();
        if to < from + start.len() {
            return Err(Rejected::NotVerbatim);
        }
        return Ok(response[from..to].to_string());
    }
    if response.contains(answer.as_str()) {
        Ok(answer)
    } else {
        Err(Rejected::NotVerbatim)
    }
}

/// The string `answer` of the first JSON object in `reply`.
fn json_answer(reply: &str) -> Option<String> {
    let whole = serde_json::from_str::<serde_json::Value>(reply.trim()).ok();
    let value = whole.or_else(|| {
        reply.match_indices('{').find_map(|(i, _)| {
            serde_json::Deserializer::from_str(&reply[i..])
                .into_iter::<serde_json::Value>()
                .next()
                .and_then(Result::ok)
        })
    })?;
    value.get("answer")?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GEN: ExtractionStrategy = ExtractionStrategy::Gen;
    const PS: ExtractionStrategy = ExtractionStrategy::PrefixSuffix;

    #[test]
    fn a_template_is_filled_once_and_the_reply_is_not_searched_again() {
        let t = "Expect: [[ANSWER_DESCRIPTION]]\nResponse:\n[[ASSISTANT_RESPONSE]]";
        assert_eq!(
            prompt(t, "a number", "It is 4 [[ANSWER_DESCRIPTION]]"),
            "Expect: a number\nResponse:\nIt is 4 [[ANSWER_DESCRIPTION]]"
        );
        assert_eq!(prompt("no placeholders", "d", "r"), "no placeholders");
    }

    #[test]
    fn gen_accepts_only_a_verbatim_string_answer() {
        let r = "So the total is $18.\nAnswer: $18";
        assert_eq!(accept(GEN, r#"{"answer": "$18"}"#, r), Ok("$18".into()));
        assert_eq!(
            accept(GEN, r#"{"answer": "18 dollars"}"#, r),
            Err(Rejected::NotVerbatim)
        );
        assert_eq!(accept(GEN, r#"{"answer": 18}"#, r), Err(Rejected::NotJson));
        assert_eq!(accept(GEN, "the answer is 18", r), Err(Rejected::NotJson));
        assert_eq!(accept(GEN, r#"{"answer": ""}"#, r), Ok(String::new()));
    }

    #[test]
    fn the_first_json_object_of_a_chatty_reply_is_read() {
        let r = "Answer: 7";
        assert_eq!(
            accept(GEN, "Sure! {\"answer\": \"7\"} and {\"answer\": \"x\"}", r),
            Ok("7".into())
        );
    }

    #[test]
    fn prefix_suffix_cuts_the_span_out_of_the_reply() {
        let r = "Here:\n```sql\nSELECT name FROM singer WHERE age > 30 ORDER BY name\n```\nDone, ORDER BY name";
        assert_eq!(
            accept(
                PS,
                r#"{"answer": "SELECT name FROM singer [...] ORDER BY name"}"#,
                r
            ),
            Ok(
                "SELECT name FROM singer WHERE age > 30 ORDER BY name\n```\nDone, ORDER BY name"
                    .into()
            ),
            "from the first start to the last end, as LiC cuts it"
        );
        assert_eq!(
            accept(PS, r#"{"answer": "SELECT 1 [...] ORDER BY name"}"#, r),
            Err(Rejected::NotVerbatim)
        );
        assert_eq!(
            accept(PS, r#"{"answer": "ORDER BY name [...] Here:"}"#, r),
            Err(Rejected::NotVerbatim),
            "an end before the start is no span"
        );
        assert_eq!(
            accept(PS, r#"{"answer": "age > 30"}"#, r),
            Ok("age > 30".into())
        );
    }
}
