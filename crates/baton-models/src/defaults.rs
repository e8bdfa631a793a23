//! What baton fills in when an experiment leaves a model setting out.
//!
//! These are the only places the values are written. The runner puts them into each
//! model's [`crate::GenerateConfig`], so they are sent with every request and every
//! stored request shows them; a wire format that requires a setting the config lacks
//! (Anthropic's `max_tokens`) takes it from here too.

/// Sampling temperature when a model sets none: LiC's default.
pub const TEMPERATURE: f64 = 1.0;

/// Output token cap when a model sets none: LiC's default. The spending cap and
/// `--dry-run` bound every reply by it when a model has no cap of its own.
pub const MAX_TOKENS: u32 = 1000;

/// Calls in flight at once per model when a model sets no `concurrency`.
pub const CONCURRENCY: usize = 8;

/// Retries of a call whose reply was answered (and billed) but unusable, when a model
/// sets no `unusable_retries`: such a reply is paid for, so it is retried at most
/// twice (three answered attempts in all), counting attempts stored by earlier runs.
pub const UNUSABLE_RETRIES: u32 = 2;

/// The longest wait a server's `retry-after` (or `retry-after-ms`) can ask for: a
/// larger, infinite or unparsable value is clamped to this. The wait still counts
/// against the run's retry-time budget, and Ctrl-C interrupts it.
pub const MAX_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(300);
