//! The simulated server's prompt cache: per (API, model), the set of message prefixes
//! it has seen. A request's longest seen prefix counts as cache read; on Anthropic's
//! route the rest up to the breakpoint is written. There is no minimum cacheable size
//! and no expiry (real providers need 1,024+ tokens and forget after minutes), so short
//! simulated prompts still show cache reads from their second turn on.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use baton_models::tokens::message_tokens;
use baton_types::{Message, Usage};
use sha2::{Digest, Sha256};

use super::api::{Api, CacheMode};

/// The hash of one message prefix.
type PrefixHash = [u8; 32];

/// Prefix hashes seen, per (API, model).
#[derive(Debug, Default)]
pub(crate) struct PrefixCache {
    seen: Mutex<HashMap<(Api, String), HashSet<PrefixHash>>>,
}

/// Hashes of `messages[..1]`, `messages[..2]`, ...: each chains the previous.
fn chain(messages: &[Message]) -> Vec<PrefixHash> {
    let mut prev = [0u8; 32];
    messages
        .iter()
        .map(|m| {
            let mut h = Sha256::new();
            h.update(prev);
            h.update([m.role as u8]);
            h.update((m.content.len() as u64).to_le_bytes());
            h.update(m.content.as_bytes());
            for c in &m.tool_calls {
                for part in [&c.id, &c.name, &c.arguments] {
                    h.update((part.len() as u64).to_le_bytes());
                    h.update(part.as_bytes());
                }
            }
            if let Some(id) = &m.tool_call_id {
                h.update(id.as_bytes());
            }
            prev = h.finalize().into();
            prev
        })
        .collect()
}

impl PrefixCache {
    /// The prompt part of a request's usage, and remember its prefixes.
    pub(crate) fn prompt_usage(
        &self,
        api: Api,
        model: &str,
        messages: &[Message],
        mode: CacheMode,
    ) -> Usage {
        let tokens: Vec<u64> = messages.iter().map(message_tokens).collect();
        let sum = |r: std::ops::Range<usize>| -> u64 { tokens[r].iter().sum() };
        let n = messages.len();
        let upto = match mode {
            CacheMode::Automatic => n,
            CacheMode::Breakpoint { upto, .. } => upto.min(n),
            CacheMode::Off => {
                return Usage {
                    uncached_in: sum(0..n),
                    ..Usage::default()
                };
            }
        };
        let hashes = chain(&messages[..upto]);
        let mut seen = self.seen.lock().expect("prefix cache lock");
        let set = seen.entry((api, model.to_string())).or_default();
        let hit = hashes
            .iter()
            .rposition(|h| set.contains(h))
            .map_or(0, |i| i + 1);
        set.extend(hashes);
        drop(seen);
        match mode {
            CacheMode::Breakpoint { long, .. } => {
                let write = sum(hit..upto);
                Usage {
                    uncached_in: sum(upto..n),
                    cache_read: sum(0..hit),
                    cache_write_5m: if long { 0 } else { write },
                    cache_write_1h: if long { write } else { 0 },
                    ..Usage::default()
                }
            }
            _ => Usage {
                uncached_in: sum(hit..n),
                cache_read: sum(0..hit),
                ..Usage::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_turns_read_the_earlier_prompt() {
        let c = PrefixCache::default();
        let t1 = vec![Message::system("s".repeat(40)), Message::user("u1")];
        let u = c.prompt_usage(Api::Chat, "lc", &t1, CacheMode::Automatic);
        assert_eq!((u.uncached_in, u.cache_read), (14 + 5, 0));
        let mut t2 = t1.clone();
        t2.extend([Message::assistant("a1"), Message::user("u2")]);
        let u = c.prompt_usage(Api::Chat, "lc", &t2, CacheMode::Automatic);
        assert_eq!((u.uncached_in, u.cache_read), (10, 19));
        // another model, another API: cold
        let u = c.prompt_usage(
            Api::Messages,
            "lc",
            &t2,
            CacheMode::Breakpoint {
                upto: 4,
                long: false,
            },
        );
        assert_eq!((u.uncached_in, u.cache_read, u.cache_write_5m), (0, 0, 29));
        let mut t3 = t2.clone();
        t3.extend([Message::assistant("a2"), Message::user("u3")]);
        let u = c.prompt_usage(
            Api::Messages,
            "lc",
            &t3,
            CacheMode::Breakpoint {
                upto: 6,
                long: true,
            },
        );
        assert_eq!(
            (u.cache_read, u.cache_write_1h, u.total_input()),
            (29, 10, 39)
        );
        let u = c.prompt_usage(Api::Messages, "lc", &t3, CacheMode::Off);
        assert_eq!((u.uncached_in, u.cache_read), (39, 0));
    }
}
