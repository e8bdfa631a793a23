//! OpenAI Chat Completions (`POST {base}/chat/completions`), also spoken by vLLM,
//! llama.cpp's server, Ollama and LiteLLM's proxy.

use baton_models::{ProviderError, Request, Response, ToolChoice};
use baton_types::{Message, Role, ToolCall, ToolSpec};
use serde_json::{Map, Value, json};

use super::{check_not_empty, malformed, merge_extra, role};
use crate::usage::openai_chat_usage;

/// How the body names the output cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// api.openai.com: `max_completion_tokens` (what reasoning models require).
    OpenAi,
    /// Other servers: `max_tokens` (the field every compatible server knows), or
    /// `max_completion_tokens` when a `reasoning_effort` is sent (LiteLLM and vLLM take
    /// it, and OpenAI-backed routes refuse `max_tokens` with an effort).
    Compatible,
}

/// One message: text turns as `{role, content}`; an assistant's tool calls as
/// `tool_calls` of type `function` (no `content` key when it wrote no text, as
/// mini-SWE-agent re-sends such a reply); a tool
/// result as role `tool` with the `tool_call_id` it answers.
fn message(m: &Message) -> Value {
    match m.role {
        Role::Assistant if !m.tool_calls.is_empty() => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    json!({"id": c.id, "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments}})
                })
                .collect();
            if m.content.is_empty() {
                json!({"role": "assistant", "tool_calls": calls})
            } else {
                json!({"role": "assistant", "content": m.content, "tool_calls": calls})
            }
        }
        Role::Tool => json!({"role": "tool",
            "tool_call_id": m.tool_call_id.as_deref().unwrap_or_default(), "content": m.content}),
        _ => json!({"role": role(m.role), "content": m.content}),
    }
}

/// `tools` in the Chat shape (also what the simulated server reads back).
pub(crate) fn tools(tools: &[ToolSpec]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {"name": t.name,
                "description": t.description, "parameters": t.parameters}})
        })
        .collect()
}

/// `tool_choice` in the OpenAI shape (Chat Completions and Responses alike).
pub(crate) fn tool_choice(choice: ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::NoTools => json!("none"),
    }
}

/// The request body. The system prompt is a `system` message; tools, when the request
/// has any, go in `tools` (with `tool_choice` only when the request sets one, and no
/// `parallel_tool_calls`, so the API's defaults hold). `temperature`, `top_p`, `seed`
/// and `reasoning_effort` are sent only when configured, `response_format: {"type":
/// "json_object"}` only for a JSON-mode request; `extra` is merged last.
pub fn body(request: &Request, dialect: Dialect) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message).collect();
    body_around(request, dialect, messages)
}

/// The bytes of [`body`] serialized, counted without building it: the body around an
/// empty `messages` array, plus each message's length, worked out from its text for a
/// plain `{role, content}` turn (the common case, and the history that grows with each
/// turn), plus the commas between them. A model's `extra` table that sets `messages`
/// itself is counted from the whole body.
pub fn body_len(request: &Request, dialect: Dialect) -> u64 {
    if request.config.extra.contains_key("messages") {
        return super::json_len(&body(request, dialect));
    }
    let around = super::json_len(&body_around(request, dialect, Vec::new()));
    let messages: u64 = request.messages.iter().map(message_len).sum();
    around + messages + request.messages.len().saturating_sub(1) as u64
}

/// The serialized length of [`message`]`(m)`.
fn message_len(m: &Message) -> u64 {
    match m.role {
        Role::Assistant if !m.tool_calls.is_empty() => super::json_len(&message(m)),
        Role::Tool => super::json_len(&message(m)),
        // {"role":"…","content":…}
        _ => {
            (r#"{"role":""#.len() + role(m.role).len() + r#"","content":"#.len() + 1) as u64
                + super::string_len(&m.content)
        }
    }
}

/// The body with `messages` as its `messages` array.
fn body_around(request: &Request, dialect: Dialect, messages: Vec<Value>) -> Value {
    let mut b = Map::new();
    b.insert("model".into(), json!(request.model));
    b.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        b.insert("tools".into(), tools(&request.tools));
    }
    if let Some(choice) = request.tool_choice {
        b.insert("tool_choice".into(), tool_choice(choice));
    }
    if dialect == Dialect::OpenAi {
        b.insert("n".into(), json!(1));
    }
    let c = &request.config;
    if let Some(t) = c.temperature {
        b.insert("temperature".into(), json!(t));
    }
    if let Some(p) = c.top_p {
        b.insert("top_p".into(), json!(p));
    }
    if let Some(n) = c.max_tokens {
        let field = match dialect {
            Dialect::Compatible if c.reasoning_effort.is_none() => "max_tokens",
            _ => "max_completion_tokens",
        };
        b.insert(field.into(), json!(n));
    }
    if let Some(seed) = c.seed {
        b.insert("seed".into(), json!(seed));
    }
    if let Some(effort) = &c.reasoning_effort {
        b.insert("reasoning_effort".into(), json!(effort));
    }
    if c.json_object {
        b.insert("response_format".into(), json!({"type": "json_object"}));
    }
    merge_extra(&mut b, c);
    Value::Object(b)
}

/// The response: the first choice's text and tool calls, normalized usage, the served
/// model id.
pub fn parse(body: Value) -> Result<Response, ProviderError> {
    let choice = body
        .pointer("/choices/0")
        .ok_or_else(|| malformed("chat completion has no choices"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| malformed("chat completion choice has no message"))?;
    let text = match (message.get("content"), message.get("refusal")) {
        (Some(Value::String(s)), _) if !s.is_empty() => s.clone(),
        (_, Some(Value::String(r))) => r.clone(),
        (Some(Value::String(s)), _) => s.clone(),
        (Some(Value::Null) | None, _) => String::new(),
        (Some(other), _) => {
            return Err(malformed(&format!(
                "message content is neither text nor null: {other}"
            )));
        }
    };
    let tool_calls = match message.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls
            .iter()
            .map(|c| {
                let field = |p: &str| c.pointer(p).and_then(Value::as_str);
                Ok(ToolCall {
                    id: field("/id").unwrap_or_default().to_string(),
                    name: field("/function/name")
                        .ok_or_else(|| malformed("tool call has no function name"))?
                        .to_string(),
                    arguments: field("/function/arguments").unwrap_or_default().to_string(),
                })
            })
            .collect::<Result<_, ProviderError>>()?,
        Some(other) => {
            return Err(malformed(&format!("tool_calls is not a list: {other}")));
        }
    };
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    check_not_empty(&text, &tool_calls, finish_reason.as_deref())?;
    let usage = openai_chat_usage(body.get("usage").unwrap_or(&Value::Null))?;
    Ok(Response {
        text,
        usage,
        model_served: served(&body),
        finish_reason,
        raw: Some(body),
        tool_calls,
        batch_id: None,
        batch_item: None,
    })
}

pub(super) fn served(body: &Value) -> String {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use baton_models::GenerateConfig;

    use super::*;

    fn request() -> Request {
        Request {
            model: "gpt-4o-mini".into(),
            messages: vec![
                Message::system("sys"),
                Message::user("shard 1"),
                Message::assistant("draft"),
                Message::user("shard 2"),
            ],
            config: GenerateConfig {
                temperature: Some(1.0),
                max_tokens: Some(1000),
                reasoning_effort: None,
                seed: Some(1234),
                ..GenerateConfig::default()
            },
            seed: Some(99),
            tools: Vec::new(),
            tool_choice: None,
        }
    }

    #[test]
    fn the_body_has_the_documented_shape() {
        let b = body(&request(), Dialect::OpenAi);
        assert_eq!(
            b,
            json!({"model": "gpt-4o-mini", "messages": [
                {"role": "system", "content": "sys"}, {"role": "user", "content": "shard 1"},
                {"role": "assistant", "content": "draft"}, {"role": "user", "content": "shard 2"}],
                "n": 1, "temperature": 1.0, "max_completion_tokens": 1000, "seed": 1234})
        );
        let b = body(&request(), Dialect::Compatible);
        assert_eq!(b["max_tokens"], 1000);
        assert_eq!(b["temperature"], 1.0);
        assert!(b.get("max_completion_tokens").is_none());
        assert!(b.get("n").is_none(), "some servers do not know n");
    }

    #[test]
    fn json_mode_is_response_format_json_object_and_only_when_asked() {
        assert!(
            body(&request(), Dialect::OpenAi)
                .get("response_format")
                .is_none()
        );
        let mut r = request();
        r.config.json_object = true;
        assert_eq!(
            body(&r, Dialect::Compatible)["response_format"],
            json!({"type": "json_object"})
        );
    }

    #[test]
    fn only_a_configured_seed_is_sent() {
        let mut r = request();
        r.config.seed = None;
        let b = body(&r, Dialect::Compatible);
        assert!(b.get("seed").is_none(), "the episode seed stays home: {b}");
        assert_eq!(body(&request(), Dialect::OpenAi)["seed"], 1234);
    }

    #[test]
    fn a_documented_response_parses() {
        let raw = json!({"id": "chatcmpl-1", "object": "chat.completion", "created": 1717000000,
            "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_1", "service_tier": "default",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "The answer is 4.", "refusal": null}, "logprobs": null}],
            "usage": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0}}});
        let r = parse(raw.clone()).unwrap();
        assert_eq!(r.text, "The answer is 4.");
        assert_eq!(r.model_served, "gpt-4o-mini-2024-07-18");
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!((r.usage.uncached_in, r.usage.cache_read), (86, 1920));
        assert_eq!(r.raw, Some(raw));
    }

    #[test]
    fn empty_content_is_a_fault_unless_the_cap_explains_it() {
        let mk = |content: Value, finish: &str| {
            json!({"model": "m", "choices": [{"finish_reason": finish, "message": {"content": content}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 0}})
        };
        assert!(matches!(
            parse(mk(json!(""), "stop")),
            Err(ProviderError::Malformed(_))
        ));
        assert!(matches!(
            parse(mk(Value::Null, "stop")),
            Err(ProviderError::Malformed(_))
        ));
        assert_eq!(parse(mk(Value::Null, "length")).unwrap().text, "");
        assert!(parse(json!({"model": "m"})).is_err());
    }

    #[test]
    fn tool_calls_go_out_and_come_back_in_the_chat_shape() {
        let mut r = request();
        r.messages = vec![
            Message::system("sys"),
            Message::user("fix it"),
            Message::assistant_with_calls(
                "",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }],
            ),
            Message::tool("call_1", "<returncode>0</returncode>"),
        ];
        r.tools = vec![ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            parameters: json!({"type": "object"}),
        }];
        let b = body(&r, Dialect::OpenAi);
        assert_eq!(
            b["messages"][2],
            json!({"role": "assistant", "tool_calls": [{"id": "call_1",
                "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]})
        );
        assert_eq!(
            b["messages"][3],
            json!({"role": "tool", "tool_call_id": "call_1", "content": "<returncode>0</returncode>"})
        );
        assert_eq!(
            b["tools"],
            json!([{"type": "function", "function": {"name": "bash", "description": "run",
                "parameters": {"type": "object"}}}])
        );
        assert!(b.get("tool_choice").is_none());
        r.tool_choice = Some(ToolChoice::NoTools);
        assert_eq!(body(&r, Dialect::OpenAi)["tool_choice"], json!("none"));
        r.tool_choice = Some(ToolChoice::Auto);
        assert_eq!(body(&r, Dialect::Compatible)["tool_choice"], json!("auto"));
        let raw = json!({"model": "m", "choices": [{"finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": null, "tool_calls": [{"id": "call_2",
                "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"cat a.py\"}"}}]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}});
        let resp = parse(raw).unwrap();
        assert_eq!(resp.text, "");
        assert_eq!(
            resp.tool_calls,
            [ToolCall {
                id: "call_2".into(),
                name: "bash".into(),
                arguments: r#"{"command": "cat a.py"}"#.into()
            }]
        );
    }

    #[test]
    fn the_counted_body_length_is_the_serialized_length() {
        let tricky = "quote \" backslash \\ newline \n tab \t cr \r bell \u{7} nul \u{0} \
                      escape \u{1b} del \u{7f} formfeed \u{c} backspace \u{8} é ü 中文 😀 </script>";
        let call = ToolCall {
            id: "call_1".into(),
            name: "bash".into(),
            arguments: r#"{"command":"printf \"a\\n\""}"#.into(),
        };
        let histories = [
            vec![],
            vec![Message::user("")],
            request().messages,
            vec![
                Message::system(tricky),
                Message::user(tricky),
                Message::assistant(tricky),
                Message::assistant_with_calls("", vec![call.clone()]),
                Message::assistant_with_calls(tricky, vec![call.clone(), call]),
                Message::tool("call_1", tricky),
            ],
        ];
        let mut extra = serde_json::Map::new();
        extra.insert("logprobs".into(), json!(true));
        let mut replacing = serde_json::Map::new();
        replacing.insert("messages".into(), json!([{"role": "user", "content": "x"}]));
        replacing.insert("model".into(), json!("other"));
        for messages in histories {
            for extra in [serde_json::Map::new(), extra.clone(), replacing.clone()] {
                for tools in [false, true] {
                    for dialect in [Dialect::OpenAi, Dialect::Compatible] {
                        let mut r = request();
                        r.messages = messages.clone();
                        r.config.extra = extra.clone();
                        r.config.reasoning_effort = tools.then(|| "low".to_string());
                        if tools {
                            r.tools = vec![ToolSpec {
                                name: "bash".into(),
                                description: tricky.into(),
                                parameters: json!({"type": "object"}),
                            }];
                            r.tool_choice = Some(ToolChoice::Auto);
                        }
                        let whole = serde_json::to_vec(&body(&r, dialect)).unwrap();
                        assert_eq!(
                            body_len(&r, dialect),
                            whole.len() as u64,
                            "{}",
                            String::from_utf8_lossy(&whole)
                        );
                    }
                }
            }
        }
    }
}
