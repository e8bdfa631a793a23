//! OpenAI Chat Completions (`POST {base}/chat/completions`), also spoken by vLLM,
//! llama.cpp's server, Ollama and LiteLLM's proxy.

use baton_models::{ProviderError, Request, Response, ToolChoice};
use baton_types::{Message, Role, ToolCall, ToolSpec};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use super::{Merged, Reply, check_not_empty, malformed, role};
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
struct WireMessage<'a>(&'a Message);

impl Serialize for WireMessage<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut map = s.serialize_map(None)?;
        match m.role {
            Role::Assistant if !m.tool_calls.is_empty() => {
                map.serialize_entry("role", "assistant")?;
                if !m.content.is_empty() {
                    map.serialize_entry("content", &m.content)?;
                }
                map.serialize_entry("tool_calls", &Calls(&m.tool_calls))?;
            }
            Role::Tool => {
                map.serialize_entry("role", "tool")?;
                map.serialize_entry(
                    "tool_call_id",
                    m.tool_call_id.as_deref().unwrap_or_default(),
                )?;
                map.serialize_entry("content", &m.content)?;
            }
            _ => {
                map.serialize_entry("role", role(m.role))?;
                map.serialize_entry("content", &m.content)?;
            }
        }
        map.end()
    }
}

/// An assistant's tool calls: `{id, type: function, function: {name, arguments}}`.
struct Calls<'a>(&'a [ToolCall]);

impl Serialize for Calls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Call<'a> {
            id: &'a str,
            r#type: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            arguments: &'a str,
        }
        s.collect_seq(self.0.iter().map(|c| Call {
            id: &c.id,
            r#type: "function",
            function: Function {
                name: &c.name,
                arguments: &c.arguments,
            },
        }))
    }
}

/// `tools` in the Chat shape: `{type: function, function: {name, description,
/// parameters}}` (also what the simulated server reads back).
pub(crate) struct Tools<'a>(pub(crate) &'a [ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tool<'a> {
            r#type: &'static str,
            function: Function<'a>,
        }
        #[derive(Serialize)]
        struct Function<'a> {
            name: &'a str,
            description: &'a str,
            parameters: &'a Value,
        }
        s.collect_seq(self.0.iter().map(|t| Tool {
            r#type: "function",
            function: Function {
                name: &t.name,
                description: &t.description,
                parameters: &t.parameters,
            },
        }))
    }
}

/// `tool_choice` in the OpenAI shape (Chat Completions and Responses alike).
pub(crate) fn tool_choice(choice: ToolChoice) -> Value {
    Value::from(tool_choice_str(choice))
}

fn tool_choice_str(choice: ToolChoice) -> &'static str {
    match choice {
        ToolChoice::Auto => "auto",
        ToolChoice::NoTools => "none",
    }
}

/// The request body, written straight from the request it borrows: the system prompt
/// is a `system` message; tools, when the request has any, go in `tools` (with
/// `tool_choice` only when the request sets one, and no `parallel_tool_calls`, so the
/// API's defaults hold). `temperature`, `top_p`, `seed` and `reasoning_effort` are sent
/// only when configured, `response_format: {"type": "json_object"}` only for a
/// JSON-mode request; `extra` is merged last ([`super::Merged`]).
struct Body<'a> {
    request: &'a Request,
    dialect: Dialect,
    /// The messages written into `messages` (none, for [`body_len`], which counts them
    /// apart).
    messages: &'a [Message],
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.request;
        let c = &r.config;
        let mut b = Merged::new(s.serialize_map(None)?, &c.extra);
        b.entry("model", &r.model)?;
        b.entry("messages", &Messages(self.messages))?;
        if !r.tools.is_empty() {
            b.entry("tools", &Tools(&r.tools))?;
        }
        if let Some(choice) = r.tool_choice {
            b.entry("tool_choice", tool_choice_str(choice))?;
        }
        if self.dialect == Dialect::OpenAi {
            b.entry("n", &1)?;
        }
        if let Some(t) = c.temperature {
            b.entry("temperature", &t)?;
        }
        if let Some(p) = c.top_p {
            b.entry("top_p", &p)?;
        }
        if let Some(n) = c.max_tokens {
            let field = match self.dialect {
                Dialect::Compatible if c.reasoning_effort.is_none() => "max_tokens",
                _ => "max_completion_tokens",
            };
            b.entry(field, &n)?;
        }
        if let Some(seed) = c.seed {
            b.entry("seed", &seed)?;
        }
        if let Some(effort) = &c.reasoning_effort {
            b.entry("reasoning_effort", effort)?;
        }
        if c.json_object {
            #[derive(Serialize)]
            struct Format {
                r#type: &'static str,
            }
            b.entry(
                "response_format",
                &Format {
                    r#type: "json_object",
                },
            )?;
        }
        b.end()
    }
}

struct Messages<'a>(&'a [Message]);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(WireMessage))
    }
}

/// The request body as a value (what a batch API's request line carries); what a
/// direct call sends is [`body_bytes`], the same JSON.
pub fn body(request: &Request, dialect: Dialect) -> Value {
    super::to_value(&Body {
        request,
        dialect,
        messages: &request.messages,
    })
}

/// The request body as sent: compact JSON written straight from the request, with no
/// [`Value`] tree built per call; byte for byte what serializing [`body`] gives.
pub fn body_bytes(request: &Request, dialect: Dialect) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&Body {
        request,
        dialect,
        messages: &request.messages,
    })
}

/// The bytes of [`body_bytes`], counted without writing them: the body around an
/// empty `messages` array, plus each message's length, worked out from its text for a
/// plain `{role, content}` turn (the common case, and the history that grows with each
/// turn), plus the commas between them. A model's `extra` table that sets `messages`
/// itself is counted from the whole body.
pub fn body_len(request: &Request, dialect: Dialect) -> u64 {
    let whole = Body {
        request,
        dialect,
        messages: &request.messages,
    };
    if request.config.extra.contains_key("messages") {
        return super::json_len(&whole);
    }
    let around = super::json_len(&Body {
        messages: &[],
        ..whole
    });
    let messages: u64 = request.messages.iter().map(message_len).sum();
    around + messages + request.messages.len().saturating_sub(1) as u64
}

/// The serialized length of one [`WireMessage`].
fn message_len(m: &Message) -> u64 {
    match m.role {
        Role::Assistant if !m.tool_calls.is_empty() => super::json_len(&WireMessage(m)),
        Role::Tool => super::json_len(&WireMessage(m)),
        // {"role":"…","content":…}
        _ => {
            (r#"{"role":""#.len() + role(m.role).len() + r#"","content":"#.len() + 1) as u64
                + super::string_len(&m.content)
        }
    }
}

/// The response: the first choice's text and tool calls, normalized usage, the served
/// model id.
pub fn parse(body: Value) -> Result<Response, ProviderError> {
    read(&body).map(|reply| reply.with_raw(body))
}

/// [`parse`] without taking the body.
pub(crate) fn read(body: &Value) -> Result<Reply, ProviderError> {
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
    Ok(Reply {
        text,
        usage,
        model_served: served(body),
        finish_reason,
        tool_calls,
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
    use serde_json::json;

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

    /// Requests whose bodies are pinned byte for byte: every optional field, numbers
    /// whose spelling could drift, tool calls, text that needs escaping, and `extra`
    /// keys that replace baton's in place, add new ones and replace `messages`.
    fn pinned_requests() -> Vec<(Request, Dialect)> {
        let mut all = vec![
            (request(), Dialect::OpenAi),
            (request(), Dialect::Compatible),
        ];
        let mut r = request();
        r.messages.push(Message::assistant_with_calls(
            "calling",
            vec![ToolCall {
                id: "call_1".into(),
                name: "bash".into(),
                arguments: r#"{"command":"printf \"a\\n\""}"#.into(),
            }],
        ));
        r.messages
            .push(Message::tool("call_1", "out\u{1}\t\"é😀\""));
        r.messages.push(Message::assistant_with_calls(
            "",
            vec![ToolCall {
                id: "call_2".into(),
                name: "submit".into(),
                arguments: String::new(),
            }],
        ));
        r.tools = vec![ToolSpec {
            name: "bash".into(),
            description: "run \"it\"".into(),
            parameters: json!({"type": "object", "properties": {"z": {"type": "string"},
                "a": {"type": "integer", "minimum": -1.5e-7}}, "required": ["z"]}),
        }];
        r.tool_choice = Some(ToolChoice::NoTools);
        r.config.temperature = Some(0.1 + 0.2);
        r.config.top_p = Some(0.7);
        r.config.seed = Some(u64::MAX);
        r.config.reasoning_effort = Some("low".into());
        r.config.json_object = true;
        all.push((r.clone(), Dialect::OpenAi));
        all.push((r.clone(), Dialect::Compatible));
        let mut extra = serde_json::Map::new();
        extra.insert("temperature".into(), json!(0.5));
        extra.insert("logprobs".into(), json!(true));
        extra.insert("max_tokens".into(), json!(7));
        extra.insert("model".into(), json!("other"));
        extra.insert("zeta".into(), Value::Null);
        extra.insert("n".into(), json!(3));
        r.config.extra = extra.clone();
        all.push((r.clone(), Dialect::OpenAi));
        all.push((r.clone(), Dialect::Compatible));
        extra.insert("messages".into(), json!([{"role": "user", "content": "x"}]));
        r.config.extra = extra;
        r.config.temperature = Some(f64::NAN);
        r.config.top_p = Some(1e21);
        r.config.max_tokens = None;
        r.config.reasoning_effort = None;
        all.push((r.clone(), Dialect::Compatible));
        let mut odd = request();
        odd.config.temperature = Some(f64::NAN);
        odd.config.top_p = Some(f64::INFINITY);
        odd.config.max_tokens = Some(u32::MAX);
        all.push((odd, Dialect::OpenAi));
        let mut plain = request();
        plain.config = GenerateConfig::default();
        plain.messages = vec![];
        all.push((plain, Dialect::Compatible));
        all
    }

    #[test]
    fn the_sent_body_is_pinned_byte_for_byte() {
        // written by the serde_json::Value this body was built as before it was
        // serialized straight from the request: same keys, order and numbers
        let pinned = [
            r##"{"model":"gpt-4o-mini","messages":[{"role":"system","content":"sys"},{"role":"user","content":"shard 1"},{"role":"assistant","content":"draft"},{"role":"user","content":"shard 2"}],"n":1,"temperature":1.0,"max_completion_tokens":1000,"seed":1234}"##,
            r##"{"model":"gpt-4o-mini","messages":[{"role":"system","content":"sys"},{"role":"user","content":"shard 1"},{"role":"assistant","content":"draft"},{"role":"user","content":"shard 2"}],"temperature":1.0,"max_tokens":1000,"seed":1234}"##,
            r##"{"model":"gpt-4o-mini","messages":[{"role":"system","content":"sys"},{"role":"user","content":"shard 1"},{"role":"assistant","content":"draft"},{"role":"user","content":"shard 2"},{"role":"assistant","content":"calling","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"printf \\\"a\\\\n\\\"\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"out\u0001\t\"é😀\""},{"role":"assistant","tool_calls":[{"id":"call_2","type":"function","function":{"name":"submit","arguments":""}}]}],"tools":[{"type":"function","function":{"name":"bash","description":"run \"it\"","parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer","minimum":-1.5e-7}},"required":["z"]}}}],"tool_choice":"none","n":1,"temperature":0.30000000000000004,"top_p":0.7,"max_completion_tokens":1000,"seed":18446744073709551615,"reasoning_effort":"low","response_format":{"type":"json_object"}}"##,
            r##"{"model":"gpt-4o-mini","messages":[{"role":"system","content":"sys"},{"role":"user","content":"shard 1"},{"role":"assistant","content":"draft"},{"role":"user","content":"shard 2"},{"role":"assistant","content":"calling","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"printf \\\"a\\\\n\\\"\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"out\u0001\t\"é😀\""},{"role":"assistant","tool_calls":[{"id":"call_2","type":"function","function":{"name":"submit","arguments":""}}]}],"tools":[{"type":"function","function":{"name":"bash","description":"run \"it\"","parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer","minimum":-1.5e-7}},"required":["z"]}}}],"tool_choice":"none","temperature":0.30000000000000004,"top_p":0.7,"max_completion_tokens":1000,"seed":18446744073709551615,"reasoning_effort":"low","response_format":{"type":"json_object"}}"##,
            r##"{"model":"other","messages":[{"role":"system","content":"sys"},{"role":"user","content":"shard 1"},{"role":"assistant","content":"draft"},{"role":"user","content":"shard 2"},{"role":"assistant","content":"calling","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"printf \\\"a\\\\n\\\"\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"out\u0001\t\"é😀\""},{"role":"assistant","tool_calls":[{"id":"call_2","type":"function","function":{"name":"submit","arguments":""}}]}],"tools":[{"type":"function","function":{"name":"bash","description":"run \"it\"","parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer","minimum":-1.5e-7}},"required":["z"]}}}],"tool_choice":"none","n":3,"temperature":0.5,"top_p":0.7,"max_completion_tokens":1000,"seed":18446744073709551615,"reasoning_effort":"low","response_format":{"type":"json_object"},"logprobs":true,"max_tokens":7,"zeta":null}"##,
            r##"{"model":"other","messages":[{"role":"system","content":"sys"},{"role":"user","content":"shard 1"},{"role":"assistant","content":"draft"},{"role":"user","content":"shard 2"},{"role":"assistant","content":"calling","tool_calls":[{"id":"call_1","type":"function","function":{"name":"bash","arguments":"{\"command\":\"printf \\\"a\\\\n\\\"\"}"}}]},{"role":"tool","tool_call_id":"call_1","content":"out\u0001\t\"é😀\""},{"role":"assistant","tool_calls":[{"id":"call_2","type":"function","function":{"name":"submit","arguments":""}}]}],"tools":[{"type":"function","function":{"name":"bash","description":"run \"it\"","parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer","minimum":-1.5e-7}},"required":["z"]}}}],"tool_choice":"none","temperature":0.5,"top_p":0.7,"max_completion_tokens":1000,"seed":18446744073709551615,"reasoning_effort":"low","response_format":{"type":"json_object"},"logprobs":true,"max_tokens":7,"zeta":null,"n":3}"##,
            r##"{"model":"other","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"bash","description":"run \"it\"","parameters":{"type":"object","properties":{"z":{"type":"string"},"a":{"type":"integer","minimum":-1.5e-7}},"required":["z"]}}}],"tool_choice":"none","temperature":0.5,"top_p":1e+21,"seed":18446744073709551615,"response_format":{"type":"json_object"},"logprobs":true,"max_tokens":7,"zeta":null,"n":3}"##,
            r##"{"model":"gpt-4o-mini","messages":[{"role":"system","content":"sys"},{"role":"user","content":"shard 1"},{"role":"assistant","content":"draft"},{"role":"user","content":"shard 2"}],"n":1,"temperature":null,"top_p":null,"max_completion_tokens":4294967295,"seed":1234}"##,
            r##"{"model":"gpt-4o-mini","messages":[]}"##,
        ];
        let requests = pinned_requests();
        assert_eq!(requests.len(), pinned.len());
        for ((r, dialect), want) in requests.iter().zip(pinned) {
            let sent = body_bytes(r, *dialect).unwrap();
            assert_eq!(String::from_utf8(sent).unwrap(), want);
            assert_eq!(serde_json::to_string(&body(r, *dialect)).unwrap(), want);
            assert_eq!(body_len(r, *dialect), want.len() as u64, "{want}");
        }
    }
}
