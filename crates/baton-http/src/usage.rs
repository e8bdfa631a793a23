//! Usage normalization: one function per wire format, so no cached token is ever
//! counted twice.
//!
//! | wire | prompt total | cache read | cache write | output |
//! |---|---|---|---|---|
//! | OpenAI Chat Completions | `prompt_tokens` (cached **inside**) | `prompt_tokens_details.cached_tokens` | `prompt_tokens_details.cache_write_tokens` | `completion_tokens` |
//! | OpenAI Responses | `input_tokens` (cached **inside**) | `input_tokens_details.cached_tokens` | `input_tokens_details.cache_write_tokens` (TTL split in `cache_write_tokens_details`) | `output_tokens` |
//! | Anthropic Messages | `input_tokens` + read + write (cached **beside**) | `cache_read_input_tokens` | `cache_creation_input_tokens` (TTL split in `cache_creation`) | `output_tokens` |
//!
//! Output always includes reasoning; `reasoning` is recorded for observability and is
//! never priced on top. Missing or `null` optional counters count as zero; a missing
//! required counter, or cached counts larger than the prompt, is a malformed response.

use baton_models::ProviderError;
use baton_types::Usage;
use serde_json::Value;

fn count(usage: &Value, path: &[&str]) -> Result<u64, ProviderError> {
    let mut v = usage;
    for p in path {
        v = match v.get(p) {
            Some(next) => next,
            None => return Ok(0),
        };
    }
    match v {
        Value::Null => Ok(0),
        v => v.as_u64().ok_or_else(|| {
            ProviderError::Malformed(format!("usage.{} is not a count: {v}", path.join(".")))
        }),
    }
}

fn required(usage: &Value, field: &str) -> Result<u64, ProviderError> {
    usage
        .get(field)
        .and_then(Value::as_u64)
        .ok_or_else(|| ProviderError::Malformed(format!("usage has no count {field:?}")))
}

fn present(usage: &Value) -> Result<&Value, ProviderError> {
    match usage {
        Value::Object(_) => Ok(usage),
        _ => Err(ProviderError::Malformed(
            "the response has no usage object; it cannot be priced".into(),
        )),
    }
}

/// Uncached input when the cached counts are *inside* the prompt total.
fn inside(total: u64, read: u64, write: u64) -> Result<u64, ProviderError> {
    total
        .checked_sub(read)
        .and_then(|t| t.checked_sub(write))
        .ok_or_else(|| {
            ProviderError::Malformed(format!(
                "cached tokens ({read} read + {write} written) exceed the prompt ({total})"
            ))
        })
}

/// Normalize an OpenAI Chat Completions `usage` object (also what vLLM, llama.cpp,
/// Ollama and LiteLLM's proxy return). Cache writes carry no TTL here and count as
/// short-lived.
pub fn openai_chat_usage(usage: &Value) -> Result<Usage, ProviderError> {
    let u = present(usage)?;
    let prompt = required(u, "prompt_tokens")?;
    let read = count(u, &["prompt_tokens_details", "cached_tokens"])?;
    let write = count(u, &["prompt_tokens_details", "cache_write_tokens"])?;
    Ok(Usage {
        uncached_in: inside(prompt, read, write)?,
        cache_read: read,
        cache_write_5m: write,
        cache_write_1h: 0,
        output: required(u, "completion_tokens")?,
        reasoning: count(u, &["completion_tokens_details", "reasoning_tokens"])?,
    })
}

/// Normalize an OpenAI Responses `usage` object. A cache-write TTL split
/// (`ttl_30m_tokens`, `ttl_12h_tokens`) maps to the short- and long-lived write
/// classes; writes the split does not cover count as short-lived.
pub fn openai_responses_usage(usage: &Value) -> Result<Usage, ProviderError> {
    let u = present(usage)?;
    let input = required(u, "input_tokens")?;
    let read = count(u, &["input_tokens_details", "cached_tokens"])?;
    let write = count(u, &["input_tokens_details", "cache_write_tokens"])?;
    let long = count(
        u,
        &[
            "input_tokens_details",
            "cache_write_tokens_details",
            "ttl_12h_tokens",
        ],
    )?
    .min(write);
    Ok(Usage {
        uncached_in: inside(input, read, write)?,
        cache_read: read,
        cache_write_5m: write - long,
        cache_write_1h: long,
        output: required(u, "output_tokens")?,
        reasoning: count(u, &["output_tokens_details", "reasoning_tokens"])?,
    })
}

/// Normalize an Anthropic Messages `usage` object: `input_tokens` excludes cache
/// reads and writes, which are reported beside it. Writes split by TTL in
/// `cache_creation` when present; otherwise (or for any remainder) they count as
/// 5-minute writes.
pub fn anthropic_usage(usage: &Value) -> Result<Usage, ProviderError> {
    let u = present(usage)?;
    let write = count(u, &["cache_creation_input_tokens"])?;
    let split_5m = count(u, &["cache_creation", "ephemeral_5m_input_tokens"])?;
    let split_1h = count(u, &["cache_creation", "ephemeral_1h_input_tokens"])?;
    let (w5, w1) = if split_5m + split_1h == 0 {
        (write, 0)
    } else if split_5m + split_1h <= write || write == 0 {
        (write.max(split_5m + split_1h) - split_1h, split_1h)
    } else {
        return Err(ProviderError::Malformed(format!(
            "cache_creation split ({split_5m} + {split_1h}) exceeds cache_creation_input_tokens ({write})"
        )));
    };
    Ok(Usage {
        uncached_in: required(u, "input_tokens")?,
        cache_read: count(u, &["cache_read_input_tokens"])?,
        cache_write_5m: w5,
        cache_write_1h: w1,
        output: required(u, "output_tokens")?,
        reasoning: count(u, &["output_tokens_details", "thinking_tokens"])?,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn openai_chat_cached_tokens_are_inside_the_prompt() {
        // The documented response shape, with a cache hit.
        let body = json!({"usage": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 64, "audio_tokens": 0,
                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}});
        let u = openai_chat_usage(&body["usage"]).unwrap();
        assert_eq!(
            u,
            Usage {
                uncached_in: 86,
                cache_read: 1920,
                cache_write_5m: 0,
                cache_write_1h: 0,
                output: 300,
                reasoning: 64
            }
        );
        assert_eq!(u.total_input(), 2006, "the prompt is counted once");
    }

    #[test]
    fn openai_chat_cache_writes_and_bare_servers() {
        let u = openai_chat_usage(&json!({"prompt_tokens": 1500, "completion_tokens": 20,
            "prompt_tokens_details": {"cached_tokens": 1024, "cache_write_tokens": 400}}))
        .unwrap();
        assert_eq!(
            (u.uncached_in, u.cache_read, u.cache_write_5m),
            (76, 1024, 400)
        );
        // llama.cpp / Ollama: no details at all; vLLM: details null
        let u = openai_chat_usage(
            &json!({"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22,
            "prompt_tokens_details": null}),
        )
        .unwrap();
        assert_eq!((u.uncached_in, u.cache_read, u.output), (17, 0, 5));
    }

    #[test]
    fn openai_responses_cached_inside_and_ttl_split() {
        let body = json!({"usage": {"input_tokens": 125, "input_tokens_details": {"cached_tokens": 98},
            "output_tokens": 48, "output_tokens_details": {"reasoning_tokens": 32}, "total_tokens": 173}});
        let u = openai_responses_usage(&body["usage"]).unwrap();
        assert_eq!(
            u,
            Usage {
                uncached_in: 27,
                cache_read: 98,
                cache_write_5m: 0,
                cache_write_1h: 0,
                output: 48,
                reasoning: 32
            }
        );
        let u = openai_responses_usage(&json!({"input_tokens": 5000,
            "input_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 3000,
                "cache_write_tokens_details": {"ttl_30m_tokens": 1000, "ttl_12h_tokens": 2000}},
            "output_tokens": 10}))
        .unwrap();
        assert_eq!(
            (
                u.uncached_in,
                u.cache_read,
                u.cache_write_5m,
                u.cache_write_1h
            ),
            (1000, 1000, 1000, 2000)
        );
        assert_eq!(u.total_input(), 5000);
    }

    #[test]
    fn anthropic_cached_tokens_are_beside_input() {
        // The documented response shape: a cache read.
        let body = json!({"usage": {"input_tokens": 9, "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 17102,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 120, "service_tier": "standard"}});
        let u = anthropic_usage(&body["usage"]).unwrap();
        assert_eq!(
            u,
            Usage {
                uncached_in: 9,
                cache_read: 17102,
                cache_write_5m: 0,
                cache_write_1h: 0,
                output: 120,
                reasoning: 0
            }
        );
        assert_eq!(u.total_input(), 9 + 17102);
    }

    #[test]
    fn anthropic_cache_writes_split_by_ttl_or_all_to_5m() {
        let u = anthropic_usage(
            &json!({"input_tokens": 3, "cache_creation_input_tokens": 2500,
            "cache_read_input_tokens": 1000,
            "cache_creation": {"ephemeral_5m_input_tokens": 500, "ephemeral_1h_input_tokens": 2000},
            "output_tokens": 7, "output_tokens_details": {"thinking_tokens": 2}}),
        )
        .unwrap();
        assert_eq!(
            (
                u.uncached_in,
                u.cache_read,
                u.cache_write_5m,
                u.cache_write_1h,
                u.reasoning
            ),
            (3, 1000, 500, 2000, 2)
        );
        // older responses: no split, nulls
        let u = anthropic_usage(
            &json!({"input_tokens": 3, "cache_creation_input_tokens": 2500,
            "cache_read_input_tokens": null, "output_tokens": 7}),
        )
        .unwrap();
        assert_eq!(
            (u.cache_read, u.cache_write_5m, u.cache_write_1h),
            (0, 2500, 0)
        );
        assert_eq!(u.total_input(), 2503);
    }

    #[test]
    fn impossible_counts_are_malformed() {
        assert!(
            openai_chat_usage(&json!({"prompt_tokens": 10, "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": 11}}))
            .is_err()
        );
        assert!(openai_chat_usage(&json!({"completion_tokens": 1})).is_err());
        assert!(anthropic_usage(&Value::Null).is_err());
        assert!(
            anthropic_usage(&json!({"input_tokens": 1, "output_tokens": 1,
            "cache_creation_input_tokens": 10,
            "cache_creation": {"ephemeral_5m_input_tokens": 8, "ephemeral_1h_input_tokens": 8}}))
            .is_err()
        );
    }
}
