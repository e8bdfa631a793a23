//! The simulated server's side of the three wire formats: read a request body into a
//! neutral request (rejecting what the real APIs reject and what baton must never
//! send), and write replies and errors in each API's shape.

use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, StatusCode};
use baton_models::{GenerateConfig, Request};
use baton_types::{Message, Role, Usage};
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

/// Read a request body.
pub(crate) fn parse(api: Api, headers: &HeaderMap, body: &Value) -> Result<Parsed, Refusal> {
    let model = model_of(body)?;
    let temperature = body.get("temperature").and_then(Value::as_f64);
    match api {
        Api::Chat => {
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
                    let content =
                        text_of(m.get("content").unwrap_or(&Value::Null), &["text"], &what)?;
                    Ok(Message { role, content })
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
                    },
                    seed: body.get("seed").and_then(Value::as_u64),
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
                        if ty != "message" {
                            return Err(bad(format!(
                                "{what}: items of type {ty:?} cannot be replayed with store=false; send text turns"
                            )));
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
                        messages.push(Message { role, content });
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
                    },
                    seed: None,
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
            for (i, m) in msgs.iter().enumerate() {
                let what = format!("messages.{i}");
                let role = match m.get("role").and_then(Value::as_str) {
                    Some("user") => Role::User,
                    Some("assistant") => Role::Assistant,
                    other => return Err(bad(format!("{what}: unexpected role {other:?}"))),
                };
                if messages.iter().all(|m: &Message| m.role == Role::System) && role != Role::User {
                    return Err(bad("messages: the first message must use the user role"));
                }
                let content = m.get("content").unwrap_or(&Value::Null);
                let text = text_of(content, &["text"], &what).map_err(|mut r| {
                    r.message.push_str(
                        " (thinking blocks are only valid for the model that wrote them)",
                    );
                    r
                })?;
                if text.trim().is_empty() {
                    return Err(bad(format!(
                        "{what}: text content blocks must be non-empty"
                    )));
                }
                messages.push(Message {
                    role,
                    content: text,
                });
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
                        reasoning_effort: None,
                    },
                    seed: None,
                },
                cache: match breakpoint {
                    Some((upto, long)) => CacheMode::Breakpoint { upto, long },
                    None => CacheMode::Off,
                },
            })
        }
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A successful reply in the API's shape.
pub(crate) fn reply(api: Api, id: &str, model: &str, text: &str, usage: &Usage) -> Value {
    match api {
        Api::Chat => json!({
            "id": format!("chatcmpl-{id}"), "object": "chat.completion", "created": now(),
            "model": model, "system_fingerprint": "fp_sim", "service_tier": "default",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null,
                "message": {"role": "assistant", "content": text, "refusal": null}}],
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
            output.push(
                json!({"type": "message", "id": format!("msg_{id}"), "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}),
            );
            json!({
                "id": format!("resp_{id}"), "object": "response", "created_at": now(),
                "status": "completed", "model": model, "error": null, "incomplete_details": null,
                "store": false, "output": output,
                "usage": {"input_tokens": usage.total_input(),
                    "input_tokens_details": {"cached_tokens": usage.cache_read},
                    "output_tokens": usage.output,
                    "output_tokens_details": {"reasoning_tokens": usage.reasoning},
                    "total_tokens": usage.total_input() + usage.output}
            })
        }
        Api::Messages => json!({
            "id": format!("msg_{id}"), "type": "message", "role": "assistant", "model": model,
            "content": if text.is_empty() { json!([]) } else { json!([{"type": "text", "text": text}]) },
            "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": usage.uncached_in,
                "cache_creation_input_tokens": usage.cache_write_5m + usage.cache_write_1h,
                "cache_read_input_tokens": usage.cache_read,
                "cache_creation": {"ephemeral_5m_input_tokens": usage.cache_write_5m,
                    "ephemeral_1h_input_tokens": usage.cache_write_1h},
                "output_tokens": usage.output, "service_tier": "standard"}
        }),
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
