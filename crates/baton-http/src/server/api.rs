//! The simulated server's side of the three wire formats: read a request body into a
//! neutral request (rejecting what the real APIs reject and what baton must never
//! send), and write replies and errors in each API's shape.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, StatusCode};
use baton_models::{GenerateConfig, Request, ToolChoice};
use baton_types::{Message, Role, ToolCall, ToolSpec, Usage};
use serde_json::{Value, json};

/// Which API a route speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Api {
    /// `POST /v1/chat/completions`
    Chat,
    /// `POST /v1/responses`
    Responses,
    /// `POST /v1/messages`
    Messages,
}

/// How the prompt cache treats a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CacheMode {
    /// OpenAI: every prompt is cached automatically; hits are reads.
    Automatic,
    /// Anthropic with a breakpoint after message `upto` (exclusive end): the prefix up
    /// to it is read where seen and written where not; `long` for a 1-hour TTL.
    Breakpoint { upto: usize, long: bool },
    /// Anthropic without `cache_control`: no caching.
    Off,
}

/// A parsed request.
pub(crate) struct Parsed {
    pub request: Request,
    pub cache: CacheMode,
}

/// A request the API would refuse.
pub(crate) struct Refusal {
    pub status: StatusCode,
    pub kind: &'static str,
    pub message: String,
}

fn bad(message: impl Into<String>) -> Refusal {
    Refusal {
        status: StatusCode::BAD_REQUEST,
        kind: "invalid_request_error",
        message: message.into(),
    }
}

fn text_of(content: &Value, allowed: &[&str], what: &str) -> Result<String, Refusal> {
    match content {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut text = String::new();
            for p in parts {
                let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
                if !allowed.contains(&ty) {
                    return Err(bad(format!(
                        "{what}: content part of type {ty:?} is not accepted here"
                    )));
                }
                text.push_str(p.get("text").and_then(Value::as_str).unwrap_or(""));
            }
            Ok(text)
        }
        other => Err(bad(format!("{what}: content must be text, got {other}"))),
    }
}

fn role_of(r: &str, what: &str) -> Result<Role, Refusal> {
    match r {
        "system" | "developer" => Ok(Role::System),
        "user" => Ok(Role::User),
        "assistant" => Ok(Role::Assistant),
        "tool" => Ok(Role::Tool),
        other => Err(bad(format!("{what}: unsupported role {other:?}"))),
    }
}

fn model_of(body: &Value) -> Result<String, Refusal> {
    let m = body
        .get("model")
        .and_then(Value::as_str)
        .ok_or_else(|| bad("model is required"))?;
    Ok(m.strip_prefix("sim/").unwrap_or(m).to_string())
}

fn u32_field(body: &Value, names: &[&str]) -> Option<u32> {
    names
        .iter()
        .find_map(|n| body.get(*n).and_then(Value::as_u64))
        .map(|v| v.min(u32::MAX as u64) as u32)
}

/// The reasoning efforts the Anthropic route accepts in `output_config.effort`.
const ANTHROPIC_EFFORTS: [&str; 5] = ["low", "medium", "high", "xhigh", "max"];

/// Anthropic's smallest thinking budget.
const MIN_THINKING_BUDGET: u64 = 1024;

/// Read a request body.
pub(crate) fn parse(api: Api, headers: &HeaderMap, body: &Value) -> Result<Parsed, Refusal> {
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        return Err(bad(
            "stream: streaming is not served by baton sim-server; send \"stream\": false or leave it out",
        ));
    }
    let model = model_of(body)?;
    let temperature = body.get("temperature").and_then(Value::as_f64);
    match api {
        Api::Chat => {
            if body.get("reasoning_effort").is_some() && body.get("max_tokens").is_some() {
                return Err(bad(
                    "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                ));
            }
            let msgs = body
                .get("messages")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("messages is required"))?;
            let messages = msgs
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let what = format!("messages[{i}]");
                    let role = role_of(m.get("role").and_then(Value::as_str).unwrap_or(""), &what)?;
                    let content = match m.get("content") {
                        Some(Value::Null) | None if role == Role::Assistant => String::new(),
                        c => text_of(c.unwrap_or(&Value::Null), &["text"], &what)?,
                    };
                    if role == Role::Tool {
                        let id = m
                            .get("tool_call_id")
                            .and_then(Value::as_str)
                            .ok_or_else(|| bad(format!("{what}: tool_call_id is required")))?;
                        return Ok(Message::tool(id, content));
                    }
                    let calls = chat_calls(m.get("tool_calls"), &what)?;
                    Ok(Message::assistant_with_calls(content, calls).with_role(role))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Parsed {
                request: Request {
                    model,
                    messages,
                    config: GenerateConfig {
                        temperature,
                        max_tokens: u32_field(body, &["max_completion_tokens", "max_tokens"]),
                        reasoning_effort: body
                            .get("reasoning_effort")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        seed: None,
                        json_object: body.pointer("/response_format/type")
                            == Some(&Value::from("json_object")),
                        ..GenerateConfig::default()
                    },
                    seed: body.get("seed").and_then(Value::as_u64),
                    tools: tools_of(body, true)?,
                    tool_choice: tool_choice_of(body),
                },
                cache: CacheMode::Automatic,
            })
        }
        Api::Responses => {
            let mut messages = Vec::new();
            if let Some(s) = body.get("instructions").and_then(Value::as_str) {
                messages.push(Message::system(s));
            }
            match body.get("input") {
                Some(Value::String(s)) => messages.push(Message::user(s.clone())),
                Some(Value::Array(items)) => {
                    for (i, item) in items.iter().enumerate() {
                        let what = format!("input[{i}]");
                        let ty = item
                            .get("type")
                            .and_then(Value::as_str)
                            .unwrap_or("message");
                        let field = |k: &str| item.get(k).and_then(Value::as_str);
                        match ty {
                            "message" => {}
                            "function_call" => {
                                let call = ToolCall {
                                    id: field("call_id").unwrap_or_default().to_string(),
                                    name: field("name")
                                        .ok_or_else(|| bad(format!("{what}: name is required")))?
                                        .to_string(),
                                    arguments: field("arguments").unwrap_or_default().to_string(),
                                };
                                match messages.last_mut() {
                                    Some(m) if m.role == Role::Assistant => m.tool_calls.push(call),
                                    _ => {
                                        messages.push(Message::assistant_with_calls("", vec![call]))
                                    }
                                }
                                continue;
                            }
                            "function_call_output" => {
                                let id = field("call_id")
                                    .ok_or_else(|| bad(format!("{what}: call_id is required")))?;
                                messages
                                    .push(Message::tool(id, field("output").unwrap_or_default()));
                                continue;
                            }
                            _ => {
                                return Err(bad(format!(
                                    "{what}: items of type {ty:?} cannot be replayed with store=false; send text turns"
                                )));
                            }
                        }
                        let role = role_of(
                            item.get("role").and_then(Value::as_str).unwrap_or(""),
                            &what,
                        )?;
                        let content = text_of(
                            item.get("content").unwrap_or(&Value::Null),
                            &["input_text", "output_text"],
                            &what,
                        )?;
                        if role == Role::Tool {
                            return Err(bad(format!(
                                "{what}: tool results are function_call_output items"
                            )));
                        }
                        messages.push(Message::user(content).with_role(role));
                    }
                }
                _ => return Err(bad("input is required")),
            }
            Ok(Parsed {
                request: Request {
                    model,
                    messages,
                    config: GenerateConfig {
                        temperature,
                        max_tokens: u32_field(body, &["max_output_tokens"]),
                        reasoning_effort: body
                            .pointer("/reasoning/effort")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        seed: None,
                        json_object: body.pointer("/text/format/type")
                            == Some(&Value::from("json_object")),
                        ..GenerateConfig::default()
                    },
                    seed: None,
                    tools: tools_of(body, false)?,
                    tool_choice: tool_choice_of(body),
                },
                cache: CacheMode::Automatic,
            })
        }
        Api::Messages => {
            if headers.get("anthropic-version").is_none() {
                return Err(bad("anthropic-version header is required"));
            }
            let max_tokens = u32_field(body, &["max_tokens"])
                .ok_or_else(|| bad("max_tokens: field required"))?;
            // The current API has no sampling parameters for the newest models.
            for key in ["temperature", "top_p", "top_k"] {
                if body.get(key).is_some() && !baton_models::claude::takes_temperature(&model) {
                    return Err(bad(format!(
                        "{key}: Extra inputs are not permitted (model {model} takes no {key})"
                    )));
                }
            }
            let mut messages = Vec::new();
            let mut breakpoint: Option<(usize, bool)> = None;
            let mut mark = |upto: usize, block: &Value| {
                if let Some(cc) = block.get("cache_control") {
                    let long = cc.get("ttl").and_then(Value::as_str) == Some("1h");
                    breakpoint = Some((upto, long));
                }
            };
            match body.get("system") {
                None => {}
                Some(Value::String(s)) => messages.push(Message::system(s.clone())),
                Some(blocks @ Value::Array(list)) => {
                    messages.push(Message::system(text_of(blocks, &["text"], "system")?));
                    for b in list {
                        mark(1, b);
                    }
                }
                Some(other) => return Err(bad(format!("system must be text, got {other}"))),
            }
            let msgs = body
                .get("messages")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("messages: field required"))?;
            let reasoning_effort = anthropic_reasoning(body, max_tokens)?;
            for (i, m) in msgs.iter().enumerate() {
                let what = format!("messages.{i}");
                let last = i + 1 == msgs.len();
                let role = match m.get("role").and_then(Value::as_str) {
                    Some("user") => Role::User,
                    Some("assistant") => Role::Assistant,
                    other => return Err(bad(format!("{what}: unexpected role {other:?}"))),
                };
                if messages.iter().all(|m: &Message| m.role == Role::System) && role != Role::User {
                    return Err(bad("messages: the first message must use the user role"));
                }
                let content = m.get("content").unwrap_or(&Value::Null);
                let (text, calls, results) = anthropic_blocks(content, role, &what)?;
                // Anthropic: "all messages must have non-empty content except for the
                // optional final assistant message" (a prefill).
                if text.trim().is_empty()
                    && calls.is_empty()
                    && results.is_empty()
                    && !(last && role == Role::Assistant)
                {
                    return Err(bad(format!(
                        "{what}: all messages must have non-empty content except for the optional final assistant message"
                    )));
                }
                messages.extend(results);
                if !text.is_empty() || !calls.is_empty() {
                    messages.push(Message::assistant_with_calls(text, calls).with_role(role));
                }
                if let Value::Array(blocks) = content {
                    for b in blocks {
                        mark(messages.len(), b);
                    }
                }
            }
            if let Some(cc) = body.get("cache_control") {
                let long = cc.get("ttl").and_then(Value::as_str) == Some("1h");
                breakpoint = Some((messages.len(), long));
            }
            Ok(Parsed {
                request: Request {
                    model,
                    messages,
                    config: GenerateConfig {
                        temperature,
                        max_tokens: Some(max_tokens),
                        reasoning_effort,
                        seed: None,
                        ..GenerateConfig::default()
                    },
                    seed: None,
                    tools: tools_of(body, false)?,
                    tool_choice: tool_choice_of(body),
                },
                cache: match breakpoint {
                    Some((upto, long)) => CacheMode::Breakpoint { upto, long },
                    None => CacheMode::Off,
                },
            })
        }
    }
}

/// Chat's `tool_calls` of an assistant message.
fn chat_calls(calls: Option<&Value>, what: &str) -> Result<Vec<ToolCall>, Refusal> {
    let Some(Value::Array(calls)) = calls else {
        return Ok(Vec::new());
    };
    calls
        .iter()
        .map(|c| {
            let field = |p: &str| c.pointer(p).and_then(Value::as_str);
            Ok(ToolCall {
                id: field("/id")
                    .ok_or_else(|| bad(format!("{what}: tool call id is required")))?
                    .to_string(),
                name: field("/function/name")
                    .ok_or_else(|| bad(format!("{what}: tool call function name is required")))?
                    .to_string(),
                arguments: field("/function/arguments").unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// `tool_choice` as the OpenAI APIs (`"none"`) and Anthropic's (`{"type": "none"}`)
/// write it; a choice the simulated models do not act on (a named tool, `required`) is
/// read as none given.
fn tool_choice_of(body: &Value) -> Option<ToolChoice> {
    let choice = body.get("tool_choice")?;
    match choice.as_str().or_else(|| choice.get("type")?.as_str())? {
        "none" => Some(ToolChoice::NoTools),
        "auto" => Some(ToolChoice::Auto),
        _ => None,
    }
}

/// The `tools` of a request: each entry holds `name`, `description` and the schema
/// (`parameters`, or Anthropic's `input_schema`), under `function` when `nested` (Chat).
fn tools_of(body: &Value, nested: bool) -> Result<Vec<ToolSpec>, Refusal> {
    let Some(list) = body.get("tools") else {
        return Ok(Vec::new());
    };
    let list = list.as_array().ok_or_else(|| bad("tools must be a list"))?;
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            let f = if nested { t.get("function") } else { Some(t) };
            let f = f.ok_or_else(|| bad(format!("tools[{i}]: not a function tool")))?;
            Ok(ToolSpec {
                name: f
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad(format!("tools[{i}]: name is required")))?
                    .to_string(),
                description: f
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                parameters: f
                    .get("parameters")
                    .or_else(|| f.get("input_schema"))
                    .cloned()
                    .unwrap_or(Value::Null),
            })
        })
        .collect()
}

/// An Anthropic message's content: its text, its `tool_use` blocks (assistant) and its
/// `tool_result` blocks (user, as tool messages). Thinking blocks are refused.
fn anthropic_blocks(
    content: &Value,
    role: Role,
    what: &str,
) -> Result<(String, Vec<ToolCall>, Vec<Message>), Refusal> {
    let Value::Array(blocks) = content else {
        return Ok((text_of(content, &["text"], what)?, Vec::new(), Vec::new()));
    };
    let (mut text, mut calls, mut results) = (String::new(), Vec::new(), Vec::new());
    for b in blocks {
        let ty = b.get("type").and_then(Value::as_str).unwrap_or("");
        match (ty, role) {
            ("text", _) => text.push_str(b.get("text").and_then(Value::as_str).unwrap_or("")),
            ("tool_use", Role::Assistant) => calls.push(ToolCall {
                id: b
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                name: b
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad(format!("{what}: tool_use.name: field required")))?
                    .to_string(),
                arguments: b.get("input").unwrap_or(&Value::Null).to_string(),
            }),
            ("tool_result", Role::User) => {
                let id = b
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        bad(format!("{what}: tool_result.tool_use_id: field required"))
                    })?;
                let out = text_of(b.get("content").unwrap_or(&json!("")), &["text"], what)?;
                results.push(Message::tool(id, out));
            }
            _ => {
                return Err(bad(format!(
                    "{what}: content block of type {ty:?} is not accepted here (thinking blocks are only valid for the model that wrote them)"
                )));
            }
        }
    }
    Ok((text, calls, results))
}

/// The reasoning an Anthropic request asks for, as an effort: `output_config.effort` when
/// set, else `medium` for `thinking` of type `enabled` or `adaptive`. Refuses what the
/// real API refuses: an unknown effort or thinking type, and an `enabled` budget below
/// 1,024 tokens or not below `max_tokens`.
fn anthropic_reasoning(body: &Value, max_tokens: u32) -> Result<Option<String>, Refusal> {
    let effort = match body.pointer("/output_config/effort") {
        None | Some(Value::Null) => None,
        Some(Value::String(e)) if ANTHROPIC_EFFORTS.contains(&e.as_str()) => Some(e.clone()),
        Some(other) => {
            return Err(bad(format!(
                "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max', got {other}"
            )));
        }
    };
    let thinking = match body.get("thinking") {
        None | Some(Value::Null) => false,
        Some(t) => match t.get("type").and_then(Value::as_str) {
            Some("disabled") => false,
            Some("adaptive") => true,
            Some("enabled") => {
                let budget = t
                    .get("budget_tokens")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| bad("thinking.enabled.budget_tokens: Field required"))?;
                if budget < MIN_THINKING_BUDGET {
                    return Err(bad(format!(
                        "thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_THINKING_BUDGET}"
                    )));
                }
                if budget >= u64::from(max_tokens) {
                    return Err(bad(format!(
                        "`max_tokens` must be greater than `thinking.budget_tokens` ({max_tokens} <= {budget})"
                    )));
                }
                true
            }
            other => {
                return Err(bad(format!(
                    "thinking.type: Input should be 'enabled', 'adaptive' or 'disabled', got {other:?}"
                )));
            }
        },
    };
    Ok(effort.or_else(|| thinking.then(|| "medium".to_string())))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A successful reply in the API's shape, with its tool calls (Chat's `tool_calls`,
/// Responses' `function_call` items, Anthropic's `tool_use` blocks) when it has any.
pub(crate) fn reply(
    api: Api,
    id: &str,
    model: &str,
    text: &str,
    calls: &[ToolCall],
    usage: &Usage,
) -> Value {
    match api {
        Api::Chat => json!({
            "id": format!("chatcmpl-{id}"), "object": "chat.completion", "created": now(),
            "model": model, "system_fingerprint": "fp_sim", "service_tier": "default",
            "choices": [{"index": 0, "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" },
                "logprobs": null,
                "message": if calls.is_empty() {
                    json!({"role": "assistant", "content": text, "refusal": null})
                } else {
                    json!({"role": "assistant",
                        "content": if text.is_empty() { Value::Null } else { json!(text) },
                        "refusal": null,
                        "tool_calls": calls.iter().map(|c| json!({"id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}})).collect::<Vec<_>>()})
                }}],
            "usage": {
                "prompt_tokens": usage.total_input(), "completion_tokens": usage.output,
                "total_tokens": usage.total_input() + usage.output,
                "prompt_tokens_details": {"cached_tokens": usage.cache_read, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": usage.reasoning, "audio_tokens": 0,
                    "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
        }),
        Api::Responses => {
            let mut output = Vec::new();
            if usage.reasoning > 0 {
                output.push(
                    json!({"type": "reasoning", "id": format!("rs_{id}"), "summary": [],
                    "encrypted_content": format!("sim-opaque-{id}")}),
                );
            }
            if !text.is_empty() || calls.is_empty() {
                output.push(
                    json!({"type": "message", "id": format!("msg_{id}"), "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]}),
                );
            }
            for (i, c) in calls.iter().enumerate() {
                output.push(
                    json!({"type": "function_call", "id": format!("fc_{id}_{i}"),
                    "call_id": c.id, "name": c.name, "arguments": c.arguments,
                    "status": "completed"}),
                );
            }
            json!({
                "id": format!("resp_{id}"), "object": "response", "created_at": now(),
                "status": "completed", "model": model, "error": null, "incomplete_details": null,
                "output": output,
                "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
                "usage": {"input_tokens": usage.total_input(),
                    "input_tokens_details": {"cached_tokens": usage.cache_read,
                        "cache_write_tokens": usage.cache_write_5m + usage.cache_write_1h},
                    "output_tokens": usage.output,
                    "output_tokens_details": {"reasoning_tokens": usage.reasoning},
                    "total_tokens": usage.total_input() + usage.output}
            })
        }
        Api::Messages => {
            let mut blocks = Vec::new();
            if usage.reasoning > 0 {
                blocks.push(
                    json!({"type": "thinking", "thinking": "(simulated reasoning)",
                    "signature": format!("sim-signature-{id}")}),
                );
            }
            if !text.is_empty() {
                blocks.push(json!({"type": "text", "text": text}));
            }
            for c in calls {
                let input = serde_json::from_str::<Value>(&c.arguments)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({"arguments": c.arguments}));
                blocks
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
            let stop = if calls.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            };
            json!({
                "id": format!("msg_{id}"), "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": stop, "stop_sequence": null,
                "usage": {"input_tokens": usage.uncached_in,
                    "cache_creation_input_tokens": usage.cache_write_5m + usage.cache_write_1h,
                    "cache_read_input_tokens": usage.cache_read,
                    "cache_creation": {"ephemeral_5m_input_tokens": usage.cache_write_5m,
                        "ephemeral_1h_input_tokens": usage.cache_write_1h},
                    "output_tokens": usage.output, "service_tier": "standard"}
            })
        }
    }
}

/// An error body in the API's shape. `code` is OpenAI's `code` or Anthropic's
/// `details.error_code`.
pub(crate) fn error(api: Api, kind: &str, code: Option<&str>, message: &str) -> Value {
    match api {
        Api::Chat | Api::Responses => json!({"error": {"message": message, "type": kind,
            "param": null, "code": code}}),
        Api::Messages => {
            let mut err = json!({"type": kind, "message": message});
            if let Some(c) = code {
                err["details"] = json!({"error_code": c});
            }
            json!({"type": "error", "error": err, "request_id": "req_sim"})
        }
    }
}
