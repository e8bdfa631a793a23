//! How the simulated models answer LiC's answer-extraction prompts.
//!
//! An extraction request is one whose last user message holds a family's answer
//! description (`baton_types::answer_description`, the text baton puts into LiC's
//! prompt); the reply under review is what follows it. A sim reads the answer the way
//! the sims write it (math: the last `Answer: ` line; database: the last ```` ```sql ````
//! block) and returns `{"answer": ...}`: verbatim, or for a database query of ten words
//! or more as LiC's prompt asks, its first four words, ` [...] ` and its last four. With
//! chance `1 − skill` per call (each attempt draws from its own seed) it slips the way
//! small extractors do, rewording the answer so it is no longer verbatim, and the
//! runner's check rejects it. A reply with no answer in it gets `{"answer": ""}`.

use baton_types::{Family, answer_description};
use serde_json::json;

use crate::provider::Request;
use crate::sim::{SimSettings, draw_from};

/// The family whose answer description `prompt` holds and the reviewed reply after it.
pub(crate) fn recognise(prompt: &str) -> Option<(Family, &str)> {
    [Family::Math, Family::Database].into_iter().find_map(|f| {
        let d = answer_description(f)?;
        prompt.find(d).map(|i| (f, &prompt[i + d.len()..]))
    })
}

/// The sim's JSON reply to an extraction request.
pub(crate) fn reply(family: Family, reviewed: &str, request: &Request, s: &SimSettings) -> String {
    let answer = match family {
        Family::Math => reviewed
            .lines()
            .rev()
            .find_map(|l| l.trim_start().strip_prefix("Answer: "))
            .map(|a| a.trim().to_string()),
        _ => reviewed.rfind("```sql\n").and_then(|i| {
            let body = &reviewed[i + "```sql\n".len()..];
            body.find("\n```").map(|j| body[..j].trim().to_string())
        }),
    };
    let Some(answer) = answer.filter(|a| !a.is_empty()) else {
        return json!({"answer": ""}).to_string();
    };
    let slip = draw_from(
        request.seed.unwrap_or(0),
        &["extraction", request.model.as_str()],
        &request.messages,
    ) >= s.skill;
    let answer = if slip {
        format!("The final answer is {answer}.")
    } else if family == Family::Database {
        shorten(&answer)
    } else {
        answer
    };
    json!({ "answer": answer }).to_string()
}

/// A query of ten words or more as `first four words [...] last four words`, each part
/// a verbatim slice of it.
fn shorten(sql: &str) -> String {
    let words: Vec<(usize, &str)> = sql
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - sql.as_ptr() as usize, w))
        .collect();
    if words.len() < 10 {
        return sql.to_string();
    }
    let (start_at, start) = words[3];
    let (end_at, _) = words[words.len() - 4];
    format!(
        "{} [...] {}",
        &sql[..start_at + start.len()],
        &sql[end_at..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_query_is_cut_into_verbatim_ends() {
        let sql = "SELECT name FROM singer\nWHERE age > 30 ORDER BY name DESC";
        assert_eq!(
            shorten(sql),
            "SELECT name FROM singer [...] ORDER BY name DESC"
        );
        assert_eq!(shorten("SELECT 1"), "SELECT 1");
    }

    #[test]
    fn an_extraction_prompt_is_recognised_by_its_description() {
        let d = answer_description(Family::Database).unwrap();
        let prompt = format!("Rules: {d}\nResponse:\n```sql\nSELECT 1\n```");
        let (family, reviewed) = recognise(&prompt).unwrap();
        assert_eq!(family, Family::Database);
        assert!(reviewed.ends_with("```"));
        assert!(recognise("What is 2 + 2?").is_none());
    }
}
