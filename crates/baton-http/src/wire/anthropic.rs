//! Anthropic Messages (`POST {base}/messages`): top-level `system`, required
//! `max_tokens`, and a prompt-cache breakpoint on the last user turn.

use baton_models::{ProviderError, Request, Response, ToolChoice};
use baton_types::{Message, Role, ToolCall};
use serde_json::{Map, Value, json};

use super::openai_chat::served;
use super::{Reply, check_not_empty, malformed, split_system};
use crate::usage::anthropic_usage;

/// The API version header value.
pub const VERSION: &str = "2023-06-01";

/// One wire message: a role and its content blocks.
struct Turn {
    role: &'static str,
    blocks: Vec<Value>,
}

/// The transcript (system messages removed) as Anthropic turns: an assistant's tool
/// calls become `tool_use` blocks after its text; tool results become `tool_result`
/// blocks of a user turn, and consecutive results and the user text after them share
/// that one turn (results first, as the API requires).
fn turns(messages: &[&Message]) -> Vec<Turn> {
    let mut out: Vec<Turn> = Vec::new();
    for m in messages {
        let mut blocks = Vec::new();
        if m.role == Role::Tool {
            blocks.push(json!({"type": "tool_result",
                "tool_use_id": m.tool_call_id.as_deref().unwrap_or_default(), "content": m.content}));
        } else if !m.content.is_empty() || m.tool_calls.is_empty() {
            blocks.push(json!({"type": "text", "text": m.content}));
        }
        for c in &m.tool_calls {
            blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name,
                "input": tool_input(&c.arguments)}));
        }
        let role = if m.role == Role::Assistant {
            "assistant"
        } else {
            "user"
        };
        let joins = out.last().is_some_and(|t| {
            t.role == "user"
                && role == "user"
                && t.blocks.last().is_some_and(|b| b["type"] == "tool_result")
        });
        match out.last_mut() {
            Some(last) if joins => last.blocks.extend(blocks),
            _ => out.push(Turn { role, blocks }),
        }
    }
    out
}

/// A tool call's arguments as the `input` object Anthropic requires. Arguments that are
/// not a JSON object (written by another provider's model) are wrapped as
/// `{"arguments": TEXT}` rather than dropped.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"arguments": arguments}),
    }
}

/// The request body. With `prompt_caching`, the last block of the last user turn
/// carries `cache_control: {type: ephemeral}`, so the whole prompt up to it is written to
/// (and on the next turn read from) the 5-minute cache. A turn that is one text block
/// without a breakpoint is sent as a plain string. Tools go in `tools` with their schema
/// as `input_schema`, and `tool_choice: {type}` only when the request sets one. `temperature` and `top_p` go only when
/// configured (current Claude models refuse them); a `reasoning_effort` is
/// `output_config.effort`, plus adaptive thinking where [`baton_models::claude::adaptive_thinking`] says the
/// model needs it; a `thinking_budget` is `thinking: {type: enabled, budget_tokens}`.
pub fn body(request: &Request, prompt_caching: bool) -> Value {
    let (system, rest) = split_system(&request.messages);
    let mut wire = turns(&rest);
    if prompt_caching
        && let Some(last_user) = wire.iter_mut().rev().find(|t| t.role == "user")
        && let Some(Value::Object(block)) = last_user.blocks.last_mut()
    {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    let messages: Vec<Value> = wire
        .into_iter()
        .map(|t| {
            let content = match t.blocks.as_slice() {
                [b] if b["type"] == "text" && b.get("cache_control").is_none() => b["text"].clone(),
                _ => Value::Array(t.blocks),
            };
            json!({"role": t.role, "content": content})
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
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"name": t.name, "description": t.description,
                    "input_schema": t.parameters})
            })
            .collect();
        b.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = request.tool_choice {
        let kind = match choice {
            ToolChoice::Auto => "auto",
            ToolChoice::NoTools => "none",
        };
        b.insert("tool_choice".into(), json!({"type": kind}));
    }
    let c = &request.config;
    if let Some(t) = c.temperature {
        b.insert("temperature".into(), json!(t));
    }
    if let Some(p) = c.top_p {
        b.insert("top_p".into(), json!(p));
    }
    if let Some(effort) = &c.reasoning_effort {
        b.insert("output_config".into(), json!({"effort": effort}));
    }
    if let Some(budget) = c.thinking_budget {
        b.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
    } else if c.reasoning_effort.is_some()
        && baton_models::claude::adaptive_thinking(&request.model)
    {
        b.insert("thinking".into(), json!({"type": "adaptive"}));
    }
    super::merge_extra(&mut b, c);
    Value::Object(b)
}

/// The response: its `text` blocks joined and its `tool_use` blocks as tool calls (the
/// `input` object as JSON text); `thinking` and `redacted_thinking` blocks (valid only
/// for the model that wrote them) are left out.
pub fn parse(body: Value) -> Result<Response, ProviderError> {
    read(&body).map(|reply| reply.with_raw(body))
}

/// [`parse`] without taking the body.
pub(crate) fn read(body: &Value) -> Result<Reply, ProviderError> {
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
    let tool_calls: Vec<ToolCall> = content
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
        .map(|b| {
            Ok(ToolCall {
                id: b
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                name: b
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("tool_use block has no name"))?
                    .to_string(),
                arguments: b.get("input").unwrap_or(&Value::Null).to_string(),
            })
        })
        .collect::<Result<_, ProviderError>>()?;
    check_not_empty(&text, &tool_calls, finish_reason.as_deref())?;
    let usage = anthropic_usage(body.get("usage").unwrap_or(&Value::Null))?;
    Ok(Reply {
        text,
        usage,
        model_served: served(body),
        finish_reason,
        tool_calls,
    })
}

#[cfg(test)]
mod tests {
    use baton_models::GenerateConfig;

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
                seed: None,
                ..GenerateConfig::default()
            },
            seed: Some(9),
            tools: Vec::new(),
            tool_choice: None,
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
    fn settings_go_only_where_configured() {
        let mut r = Request {
            model: "claude-opus-4-7".into(),
            messages: vec![Message::system("sys"), Message::user("q")],
            config: GenerateConfig {
                max_tokens: Some(10_000),
                reasoning_effort: Some("high".into()),
                ..GenerateConfig::default()
            },
            seed: Some(9),
            tools: Vec::new(),
            tool_choice: None,
        };
        let b = body(&r, false);
        assert_eq!(
            b,
            json!({"model": "claude-opus-4-7", "max_tokens": 10000, "system": "sys",
                "messages": [{"role": "user", "content": "q"}],
                "output_config": {"effort": "high"}, "thinking": {"type": "adaptive"}})
        );
        r.model = "claude-haiku-4-5".into();
        r.config.reasoning_effort = None;
        r.config.temperature = Some(0.0);
        r.config.thinking_budget = Some(2048);
        r.config
            .extra
            .insert("service_tier".into(), json!("standard_only"));
        let b = body(&r, false);
        assert_eq!(b["temperature"], 0.0);
        assert_eq!(
            b["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(b["service_tier"], "standard_only");
        assert!(b.get("output_config").is_none() && b.get("seed").is_none());
    }

    #[test]
    fn tool_results_share_one_user_turn_and_carry_the_breakpoint() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: r#"{"command":"ls"}"#.into(),
        };
        let r = Request {
            model: "claude-haiku-4-5".into(),
            messages: vec![
                Message::system("sys"),
                Message::user("fix it"),
                Message::assistant_with_calls("Two looks.", vec![call("t1"), call("t2")]),
                Message::tool("t1", "a"),
                Message::tool("t2", "b"),
                Message::user("note"),
            ],
            config: GenerateConfig::default(),
            seed: None,
            tools: vec![baton_types::ToolSpec {
                name: "bash".into(),
                description: "run".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: None,
        };
        let b = body(&r, true);
        assert_eq!(
            b["messages"],
            json!([{"role": "user", "content": "fix it"},
                {"role": "assistant", "content": [{"type": "text", "text": "Two looks."},
                    {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}},
                    {"type": "tool_use", "id": "t2", "name": "bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "a"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "b"},
                    {"type": "text", "text": "note", "cache_control": {"type": "ephemeral"}}]}])
        );
        assert_eq!(
            b["tools"],
            json!([{"name": "bash", "description": "run", "input_schema": {"type": "object"}}])
        );
        assert!(b.get("tool_choice").is_none());
        let forbid = Request {
            tool_choice: Some(ToolChoice::NoTools),
            ..r.clone()
        };
        assert_eq!(body(&forbid, true)["tool_choice"], json!({"type": "none"}));
        let free = Request {
            tool_choice: Some(ToolChoice::Auto),
            ..r
        };
        assert_eq!(body(&free, true)["tool_choice"], json!({"type": "auto"}));
        assert_eq!(tool_input("not json"), json!({"arguments": "not json"}));
        let raw = json!({"type": "message", "model": "m", "stop_reason": "tool_use",
            "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                        {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "pwd"}}],
            "usage": {"input_tokens": 3, "output_tokens": 4}});
        let resp = parse(raw).unwrap();
        assert_eq!(resp.text, "");
        assert_eq!(resp.tool_calls[0].id, "toolu_1");
        assert_eq!(resp.tool_calls[0].arguments, r#"{"command":"pwd"}"#);
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
