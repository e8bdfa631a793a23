//! OpenAI Responses (`POST {base}/responses`), stateless: `store: false`, the system
//! prompt as `instructions`, text turns as `input`, an assistant's tool calls as
//! `function_call` items and tool results as `function_call_output` items. Reasoning
//! items in the output are never part of the text and never sent back.

use baton_models::{ProviderError, Request, Response};
use baton_types::{Role, ToolCall};
use serde_json::{Map, Value, json};

use super::openai_chat::served;
use super::{Reply, check_not_empty, malformed, role, split_system};
use crate::usage::openai_responses_usage;

/// The request body.
pub fn body(request: &Request) -> Value {
    let (system, turns) = split_system(&request.messages);
    let mut input: Vec<Value> = Vec::new();
    for m in turns {
        match m.role {
            Role::Tool => input.push(json!({"type": "function_call_output",
                "call_id": m.tool_call_id.as_deref().unwrap_or_default(), "output": m.content})),
            _ => {
                if !m.content.is_empty() || m.tool_calls.is_empty() {
                    input.push(json!({"role": role(m.role), "content": m.content}));
                }
                for c in &m.tool_calls {
                    input.push(json!({"type": "function_call", "call_id": c.id,
                        "name": c.name, "arguments": c.arguments}));
                }
            }
        }
    }
    let mut b = Map::new();
    b.insert("model".into(), json!(request.model));
    if let Some(s) = system {
        b.insert("instructions".into(), json!(s));
    }
    b.insert("input".into(), Value::Array(input));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name, "description": t.description,
                    "parameters": t.parameters})
            })
            .collect();
        b.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = request.tool_choice {
        b.insert(
            "tool_choice".into(),
            super::openai_chat::tool_choice(choice),
        );
    }
    b.insert("store".into(), json!(false));
    let c = &request.config;
    if let Some(n) = c.max_tokens {
        b.insert("max_output_tokens".into(), json!(n));
    }
    if let Some(effort) = &c.reasoning_effort {
        b.insert("reasoning".into(), json!({"effort": effort}));
    }
    if let Some(t) = c.temperature {
        b.insert("temperature".into(), json!(t));
    }
    if let Some(p) = c.top_p {
        b.insert("top_p".into(), json!(p));
    }
    if c.json_object {
        b.insert("text".into(), json!({"format": {"type": "json_object"}}));
    }
    super::merge_extra(&mut b, c);
    Value::Object(b)
}

/// The response: `output[type=message].content[type=output_text].text`, concatenated,
/// and the `function_call` items as tool calls.
/// A `failed` response becomes an error status carrying its error code; an
/// `incomplete` one is a response whose finish reason says why.
pub fn parse(body: Value) -> Result<Response, ProviderError> {
    read(&body).map(|reply| reply.with_raw(body))
}

/// [`parse`] without taking the body.
pub(crate) fn read(body: &Value) -> Result<Reply, ProviderError> {
    let status = body
        .get("status")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("response has no status"))?;
    let finish_reason = match status {
        "completed" => "completed".to_string(),
        "incomplete" => body
            .pointer("/incomplete_details/reason")
            .and_then(Value::as_str)
            .unwrap_or("incomplete")
            .to_string(),
        "failed" => {
            let code = body
                .pointer("/error/code")
                .and_then(Value::as_str)
                .unwrap_or("failed")
                .to_string();
            let message = body
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("the response failed")
                .to_string();
            let status = if code.contains("rate_limit") {
                429
            } else {
                500
            };
            return Err(ProviderError::Status {
                status,
                kind: code,
                message,
                retry_after: None,
            });
        }
        other => return Err(malformed(&format!("response status {other:?}"))),
    };
    let output = body
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("response has no output array"))?;
    let text: String = output
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("message"))
        .filter_map(|item| item.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    let tool_calls: Vec<ToolCall> = output
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("function_call"))
        .map(|item| {
            let field = |k: &str| item.get(k).and_then(Value::as_str);
            Ok(ToolCall {
                id: field("call_id").unwrap_or_default().to_string(),
                name: field("name")
                    .ok_or_else(|| malformed("function_call has no name"))?
                    .to_string(),
                arguments: field("arguments").unwrap_or_default().to_string(),
            })
        })
        .collect::<Result<_, ProviderError>>()?;
    check_not_empty(&text, &tool_calls, Some(finish_reason.as_str()))?;
    let usage = openai_responses_usage(body.get("usage").unwrap_or(&Value::Null))?;
    Ok(Reply {
        text,
        usage,
        model_served: served(body),
        finish_reason: Some(finish_reason),
        tool_calls,
    })
}

#[cfg(test)]
mod tests {
    use baton_models::{GenerateConfig, ToolChoice};
    use baton_types::Message;

    use super::*;

    #[test]
    fn the_body_is_stateless_text_with_instructions() {
        let r = Request {
            model: "gpt-5-mini".into(),
            messages: vec![
                Message::system("system text"),
                Message::user("shard 1"),
                Message::assistant("draft"),
                Message::user("shard 2"),
            ],
            config: GenerateConfig {
                temperature: None,
                max_tokens: Some(2000),
                reasoning_effort: Some("low".into()),
                seed: None,
                ..GenerateConfig::default()
            },
            seed: Some(3),
            tools: Vec::new(),
            tool_choice: None,
        };
        assert_eq!(
            body(&r),
            json!({"model": "gpt-5-mini", "instructions": "system text",
                "input": [{"role": "user", "content": "shard 1"}, {"role": "assistant", "content": "draft"},
                          {"role": "user", "content": "shard 2"}],
                "store": false, "max_output_tokens": 2000, "reasoning": {"effort": "low"}})
        );
        let mut r = r;
        r.config.temperature = Some(0.0);
        r.config.extra.insert("truncation".into(), json!("auto"));
        let b = body(&r);
        assert_eq!(
            (&b["temperature"], &b["truncation"]),
            (&json!(0.0), &json!("auto"))
        );
        assert!(b.get("text").is_none(), "no JSON mode unless asked");
        r.config.json_object = true;
        assert_eq!(body(&r)["text"], json!({"format": {"type": "json_object"}}));
    }

    #[test]
    fn reasoning_items_are_skipped_and_text_parts_joined() {
        let raw = json!({"id": "resp_1", "object": "response", "created_at": 1717000000, "status": "completed",
            "model": "gpt-5-mini-2025-08-07", "error": null, "incomplete_details": null,
            "output": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"},
                       {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": "Hello, ", "annotations": []},
                                    {"type": "output_text", "text": "world.", "annotations": []}]}],
            "usage": {"input_tokens": 125, "input_tokens_details": {"cached_tokens": 98},
                      "output_tokens": 48, "output_tokens_details": {"reasoning_tokens": 30}, "total_tokens": 173}});
        let r = parse(raw).unwrap();
        assert_eq!(r.text, "Hello, world.");
        assert_eq!(r.model_served, "gpt-5-mini-2025-08-07");
        assert_eq!(
            (r.usage.uncached_in, r.usage.cache_read, r.usage.reasoning),
            (27, 98, 30)
        );
    }

    #[test]
    fn tool_calls_are_function_call_items_both_ways() {
        let r = Request {
            model: "gpt-5-mini".into(),
            messages: vec![
                Message::system("sys"),
                Message::user("fix it"),
                Message::assistant_with_calls(
                    "Looking.",
                    vec![ToolCall {
                        id: "call_1".into(),
                        name: "bash".into(),
                        arguments: r#"{"command":"ls"}"#.into(),
                    }],
                ),
                Message::tool("call_1", "a.py"),
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
        let b = body(&r);
        assert_eq!(
            b["input"],
            json!([{"role": "user", "content": "fix it"},
                {"role": "assistant", "content": "Looking."},
                {"type": "function_call", "call_id": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "a.py"}])
        );
        assert_eq!(
            b["tools"],
            json!([{"type": "function", "name": "bash", "description": "run",
                "parameters": {"type": "object"}}])
        );
        assert!(b.get("tool_choice").is_none());
        let forbid = Request {
            tool_choice: Some(ToolChoice::NoTools),
            ..r
        };
        assert_eq!(body(&forbid)["tool_choice"], json!("none"));
        let raw = json!({"status": "completed", "model": "m",
            "output": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
                       {"type": "function_call", "id": "fc_1", "call_id": "call_2", "name": "bash",
                        "arguments": "{\"command\":\"pwd\"}", "status": "completed"}],
            "usage": {"input_tokens": 10, "output_tokens": 5}});
        let resp = parse(raw).unwrap();
        assert_eq!(resp.text, "");
        assert_eq!(resp.tool_calls.len(), 1);
        assert_eq!(resp.tool_calls[0].id, "call_2");
        assert_eq!(resp.tool_calls[0].arguments, r#"{"command":"pwd"}"#);
    }

    #[test]
    fn failed_and_incomplete_responses() {
        let failed = json!({"status": "failed", "model": "m", "output": [],
            "error": {"code": "rate_limit_exceeded", "message": "slow down"}});
        assert!(matches!(
            parse(failed),
            Err(ProviderError::Status { status: 429, .. })
        ));
        let incomplete = json!({"status": "incomplete", "model": "m",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "reasoning", "id": "rs", "summary": []}],
            "usage": {"input_tokens": 10, "output_tokens": 100,
                      "output_tokens_details": {"reasoning_tokens": 100}}});
        let r = parse(incomplete).unwrap();
        assert_eq!(
            (r.text.as_str(), r.finish_reason.as_deref()),
            ("", Some("max_output_tokens"))
        );
        let empty = json!({"status": "completed", "model": "m", "output": [],
            "usage": {"input_tokens": 10, "output_tokens": 0}});
        assert!(matches!(parse(empty), Err(ProviderError::Malformed(_))));
    }
}
