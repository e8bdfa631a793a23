//! The three wire formats: request bodies from a provider-neutral
//! [`baton_models::Request`], and [`baton_models::Response`]s from response bodies.
//!
//! Only visible text and tool calls cross in either direction: requests carry the
//! neutral transcript's text turns, assistant tool calls and tool results (each in its
//! API's shape: Chat's `tool_calls` and `tool` role, Responses' `function_call` and
//! `function_call_output` items, Anthropic's `tool_use` and `tool_result` blocks), and
//! reasoning items, thinking blocks, signatures and encrypted reasoning in a response are
//! dropped (they stay in the raw body kept for the store). A consequence: Anthropic's
//! extended thinking combined with tool use, which requires the thinking blocks of the
//! turn to be sent back, is not supported for agent runs.
//!
//! Settings cross as configured: `temperature`, `top_p` and the seed only when the
//! experiment sets them, the effort in each API's own field, the output cap under each
//! API's name for it, and a model's `extra` table merged into the body last.
//!
//! JSON mode ([`GenerateConfig::json_object`], set only on LiC's answer-extraction calls)
//! is Chat's `response_format: {"type": "json_object"}` and Responses' `text: {"format":
//! {"type": "json_object"}}`. Anthropic's Messages API has no JSON mode: the request is the
//! prompt alone (LiC's extraction prompt already asks for `{"answer": ...}`), and the
//! runner reads the first JSON object in the reply.

pub mod anthropic;
pub mod openai_chat;
pub mod openai_responses;

use baton_models::{GenerateConfig, ProviderError, Response};
use baton_types::{Message, Role, ToolCall, Usage};
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value};

/// Finish reasons that explain an empty reply: the model ran out of room or was
/// stopped, and asking again would give the same.
const LEGITIMATELY_EMPTY: &[&str] = &[
    "length",
    "max_tokens",
    "max_output_tokens",
    "content_filter",
    "refusal",
    "model_context_window_exceeded",
];

/// An empty reply (no text and no tool call) with no such reason is a fault worth
/// retrying.
fn check_not_empty(
    text: &str,
    calls: &[ToolCall],
    finish_reason: Option<&str>,
) -> Result<(), ProviderError> {
    if text.trim().is_empty()
        && calls.is_empty()
        && !finish_reason.is_some_and(|r| LEGITIMATELY_EMPTY.contains(&r))
    {
        return Err(ProviderError::Malformed(format!(
            "empty content (finish reason {})",
            finish_reason.unwrap_or("none")
        )));
    }
    Ok(())
}

/// The system messages joined, and the other turns, for formats with a separate
/// system field.
fn split_system(messages: &[Message]) -> (Option<String>, Vec<&Message>) {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let turns = messages.iter().filter(|m| m.role != Role::System).collect();
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, turns)
}

fn role(r: Role) -> &'static str {
    match r {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// The bytes of `value` as compact JSON (what `serde_json::to_vec` gives), counted
/// without keeping them.
pub(crate) fn json_len<T: Serialize + ?Sized>(value: &T) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => u64::MAX,
    }
}

/// A body written by a `Serialize` of this module as a [`Value`]. Those bodies have
/// string keys only and write nothing that fails, so serde_json cannot refuse them.
fn to_value<T: Serialize + ?Sized>(body: &T) -> Value {
    serde_json::to_value(body).expect("a request body has string keys and no failing part")
}

/// The bytes of `text` as a JSON string, quotes included, escaped as serde_json
/// escapes it: `"`, `\\` and the control characters with a short escape (`\b`, `\t`,
/// `\n`, `\f`, `\r`) take two bytes, the other control characters six (`\u001f`).
///
/// The runner counts every message of the history before every call, so this is one
/// pass the compiler vectorizes: per 255-byte chunk, two counts in `u8` lanes (bytes
/// that are escaped at all, and controls that take the long form), which cannot
/// overflow within a chunk, added up once per chunk.
pub(crate) fn string_len(text: &str) -> u64 {
    let mut extra = 0u64;
    for chunk in text.as_bytes().chunks(255) {
        let (mut escaped, mut long) = (0u8, 0u8);
        for &b in chunk {
            let control = b < 0x20;
            let short = b == 0x08 || b == 0x0c || b == b'\n' || b == b'\r' || b == b'\t';
            escaped += u8::from(control | (b == b'"') | (b == b'\\'));
            long += u8::from(control & !short);
        }
        // an escaped byte takes one more byte, a long-form control five more
        extra += u64::from(escaped) + 4 * u64::from(long);
    }
    text.len() as u64 + 2 + extra
}

/// Merge a model's `extra` keys into a body, replacing what baton put there.
fn merge_extra(body: &mut Map<String, Value>, config: &GenerateConfig) {
    for (k, v) in &config.extra {
        body.insert(k.clone(), v.clone());
    }
}

/// A JSON object written key by key with a model's `extra` table merged as
/// [`merge_extra`] merges it into a built object: a key baton writes that `extra` also
/// sets is written once, in baton's place, with `extra`'s value; `extra`'s other keys
/// follow, in `extra`'s order.
struct Merged<'a, M> {
    map: M,
    extra: &'a Map<String, Value>,
    /// The keys written so far; only kept when `extra` has keys.
    written: Vec<&'static str>,
}

impl<'a, M: SerializeMap> Merged<'a, M> {
    fn new(map: M, extra: &'a Map<String, Value>) -> Self {
        Merged {
            map,
            extra,
            written: Vec::new(),
        }
    }

    /// Write `key`: `value`, or `extra`'s value for `key` when it has one.
    fn entry<V: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &V,
    ) -> Result<(), M::Error> {
        if self.extra.is_empty() {
            return self.map.serialize_entry(key, value);
        }
        self.written.push(key);
        match self.extra.get(key) {
            Some(replaced) => self.map.serialize_entry(key, replaced),
            None => self.map.serialize_entry(key, value),
        }
    }

    /// Write `extra`'s keys that baton did not write, and close the object.
    fn end(mut self) -> Result<M::Ok, M::Error> {
        for (k, v) in self.extra {
            if !self.written.contains(&k.as_str()) {
                self.map.serialize_entry(k, v)?;
            }
        }
        self.map.end()
    }
}

/// What baton reads from a success body; the body itself goes beside it as the raw
/// reply ([`Reply::with_raw`]), or, when it cannot be read, stays with the caller to be
/// billed by the usage it states.
pub(crate) struct Reply {
    text: String,
    usage: Usage,
    model_served: String,
    finish_reason: Option<String>,
    tool_calls: Vec<ToolCall>,
}

impl Reply {
    /// The [`Response`], with `raw` the body this was read from.
    pub(crate) fn with_raw(self, raw: Value) -> Response {
        Response {
            text: self.text,
            usage: self.usage,
            model_served: self.model_served,
            finish_reason: self.finish_reason,
            raw: Some(raw),
            tool_calls: self.tool_calls,
            batch_id: None,
            batch_item: None,
        }
    }
}

fn malformed(what: &str) -> ProviderError {
    ProviderError::Malformed(what.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serialized(text: &str) -> u64 {
        serde_json::to_string(text).unwrap().len() as u64
    }

    #[test]
    fn the_counted_string_length_is_serde_json_s_for_every_ascii_byte() {
        for b in 0u8..=0x7f {
            let c = char::from(b);
            // alone, and repeated past a 255-byte chunk so a chunk's counts fill up
            for n in [1, 254, 255, 256, 1000] {
                let text = String::from(c).repeat(n);
                assert_eq!(string_len(&text), serialized(&text), "byte {b:#04x} x {n}");
            }
            let mixed = format!("ab{c}cd\"{c}\\é{c}");
            assert_eq!(
                string_len(&mixed),
                serialized(&mixed),
                "byte {b:#04x} mixed"
            );
        }
    }

    #[test]
    fn the_counted_string_length_is_serde_json_s_for_multi_byte_text() {
        let texts = [
            "",
            "é ü ß",
            "中文 😀 \u{7f} \u{80} \u{7ff} \u{800} \u{ffff} \u{10000} \u{10ffff}",
            "line\u{2028}separator\u{2029}paragraph",
            "</script> \u{1b}[31m red \u{0} nul \u{1f}",
        ];
        for text in texts {
            assert_eq!(string_len(text), serialized(text), "{text:?}");
            // shifted across every position of a chunk boundary
            for pad in 250..260 {
                let long = format!("{}{text}{text}", "x".repeat(pad));
                assert_eq!(string_len(&long), serialized(&long), "{pad} + {text:?}");
            }
        }
        let every: String = (0u32..0x800).filter_map(char::from_u32).collect();
        assert_eq!(string_len(&every), serialized(&every));
    }
}
