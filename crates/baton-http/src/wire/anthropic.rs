//! Anthropic Messages (`POST {base}/messages`): top-level `system`, required
//! `max_tokens`, and a prompt-cache breakpoint on the last user turn.

use baton_models::{ProviderError, Request, Response};
use baton_types::Role;
use serde_json::{Map, Value, json};

use super::openai_chat::served;
use super::{check_not_empty, malformed, role, split_system};
use crate::usage::anthropic_usage;

/// The API version header value.
pub const VERSION: &str = "2023-06-01";

/// The request body. With `prompt_caching`, the last user turn's content is a text
/// block carrying `cache_control: {type: ephemeral}`, so the whole prompt up to it is
/// written to (and on the next turn read from) the 5-minute cache.
pub fn body(request: &Request, prompt_caching: bool) -> Value {
    let (system, turns) = split_system(&request.messages);
    let last_user = turns.iter().rposition(|m| m.role == Role::User);
    let messages: Vec<Value> = turns
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let content = if prompt_caching && Some(i) == last_user {
                json!([{"type": "text", "text": m.content, "cache_control": {"type": "ephemeral"}}])
            } else {
                json!(m.content)
            };
            json!({"role": role(m.role), "content": content})
        })
        .collect();
    let mut b = Map::new();
    b.insert("model".into(), json!(request.model));
    b.insert(
        "max_tokens".into(),
        // required by the API: a config without a cap gets baton's default
        json!(
            request
                .config
                .max_tokens
                .unwrap_or(baton_models::defaults::MAX_TOKENS)
        ),
    );
    if let Some(s) = system {
        b.insert("system".into(), json!(s));
    }
    b.insert("messages".into(), Value::Array(messages));
    if let Some(t) = request.config.temperature {
        b.insert("temperature".into(), json!(t));
    }
    Value::Object(b)
}

/// The response: its `text` blocks joined; `thinking` and `redacted_thinking` blocks
/// (valid only for the model that wrote them) are left out of the text.
pub fn parse(body: Value) -> Result<Response, ProviderError> {
    if body.get("type").and_then(Value::as_str) != Some("message") {
        return Err(malformed("body is not a message"));
    }
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("message has no content array"))?;
    let text: String = content
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let finish_reason = body
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    check_not_empty(&text, finish_reason.as_deref())?;
    let usage = anthropic_usage(body.get("usage").unwrap_or(&Value::Null))?;
    Ok(Response {
        text,
        usage,
        model_served: served(&body),
        finish_reason,
        raw: Some(body),
    })
}

#[cfg(test)]
mod tests {
    use baton_models::GenerateConfig;
    use baton_types::Message;

    use super::*;

    #[test]
    fn system_is_top_level_and_the_breakpoint_is_on_the_last_user_turn() {
        let r = Request {
            model: "claude-haiku-4-5".into(),
            messages: vec![
                Message::system("sys"),
                Message::user("shard 1"),
                Message::assistant("draft"),
                Message::user("shard 2"),
            ],
            config: GenerateConfig {
                temperature: Some(1.0),
                max_tokens: None,
                reasoning_effort: None,
            },
            seed: Some(9),
        };
        assert_eq!(
            body(&r, true),
            json!({"model": "claude-haiku-4-5", "max_tokens": 1000, "system": "sys",
                "messages": [{"role": "user", "content": "shard 1"},
                             {"role": "assistant", "content": "draft"},
                             {"role": "user", "content": [{"type": "text", "text": "shard 2",
                                "cache_control": {"type": "ephemeral"}}]}],
                "temperature": 1.0})
        );
        let plain = body(&r, false);
        assert_eq!(plain["messages"][2]["content"], "shard 2");
    }

    #[test]
    fn thinking_blocks_never_reach_the_text() {
        let raw = json!({"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "thinking", "thinking": "let me see", "signature": "EqQB"},
                        {"type": "redacted_thinking", "data": "xyz"},
                        {"type": "text", "text": "The answer is 4."}],
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": 9, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 17102,
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                "output_tokens": 120, "service_tier": "standard"}});
        let r = parse(raw).unwrap();
        assert_eq!(r.text, "The answer is 4.");
        assert_eq!(r.model_served, "claude-sonnet-4-5-20250929");
        assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
        assert_eq!((r.usage.uncached_in, r.usage.cache_read), (9, 17102));
        let empty = json!({"type": "message", "model": "m", "content": [], "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 0}});
        assert!(matches!(parse(empty), Err(ProviderError::Malformed(_))));
    }
}
