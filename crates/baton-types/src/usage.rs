use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

/// Token usage of one call, normalized across wire formats so that no token is
/// counted twice.
///
/// `uncached_in + cache_read + cache_write_5m + cache_write_1h` is the whole prompt.
/// `output` includes reasoning tokens; `reasoning` is the part of `output` that was
/// reasoning, kept for observability and never priced on top of `output`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens billed at the base input rate.
    pub uncached_in: u64,
    /// Prompt tokens served from the provider's prompt cache.
    pub cache_read: u64,
    /// Prompt tokens written to a 5-minute cache.
    pub cache_write_5m: u64,
    /// Prompt tokens written to a 1-hour cache.
    pub cache_write_1h: u64,
    /// Completion tokens, reasoning included.
    pub output: u64,
    /// Reasoning tokens (a part of `output`).
    pub reasoning: u64,
}

impl Usage {
    /// All prompt tokens, cached or not.
    pub fn total_input(&self) -> u64 {
        self.uncached_in + self.cache_read + self.cache_write_5m + self.cache_write_1h
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.uncached_in += o.uncached_in;
        self.cache_read += o.cache_read;
        self.cache_write_5m += o.cache_write_5m;
        self.cache_write_1h += o.cache_write_1h;
        self.output += o.output;
        self.reasoning += o.reasoning;
    }
}
