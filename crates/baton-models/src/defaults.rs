//! What baton fills in when an experiment leaves a model setting out.
//!
//! These are the only places the values are written. The runner puts the output cap into
//! each model's [`crate::GenerateConfig`], so it is sent with every request and every
//! stored request shows it; a wire format that requires a setting the config lacks
//! (Anthropic's `max_tokens`) takes it from here too. Temperature, `top_p` and the seed
//! have no default: they are sent only when the experiment sets them.

/// Output token cap when a model sets none and does not reason: LiC's default. The
/// spending cap and `--dry-run` bound every reply by it when a model has no cap of its
/// own.
pub const MAX_TOKENS: u32 = 1000;

/// Output token cap when a model sets none but sets a `reasoning_effort` or a
/// `thinking_budget`: LiC's cap for reasoning models (`simulator_sharded.py`), since
/// the reasoning counts against the cap.
pub const MAX_TOKENS_REASONING: u32 = 10_000;

/// The output bound the spending cap reserves for a call whose model sets no
/// `max_tokens` (an agent call sends none unless configured): no current API returns
/// more output tokens in one reply. Setting `max_tokens` lets the cap reserve less.
pub const UNCAPPED_OUTPUT_BOUND: u64 = 128_000;

/// The most tokens of one class (input, cache read or write, output, reasoning) one
/// reply may state: ten million, five times the longest context any API serves today. A
/// reply stating more is a hostile or broken server; its usage is treated as unreadable
/// (the attempt is billed at its call's upper bound), so no such number reaches the
/// store or a cost sum.
pub const MAX_PLAUSIBLE_TOKENS: u64 = 10_000_000;

/// LiC's rule for the output cap: `configured`, else [`MAX_TOKENS_REASONING`] for a
/// reasoning model, else [`MAX_TOKENS`].
///
/// ```
/// use baton_models::defaults::max_tokens;
/// assert_eq!(max_tokens(None, false), 1000);
/// assert_eq!(max_tokens(None, true), 10_000);
/// assert_eq!(max_tokens(Some(64), true), 64);
/// ```
pub fn max_tokens(configured: Option<u32>, reasoning: bool) -> u32 {
    configured.unwrap_or(if reasoning {
        MAX_TOKENS_REASONING
    } else {
        MAX_TOKENS
    })
}

/// What an assistant turn is re-sent as when the model's reply had no text (an empty
/// or length-cut reply with nothing visible): APIs refuse empty assistant content, and
/// an empty string would also hide from the next model that a turn was answered. The
/// stored reply keeps its real (empty) text and finish reason.
pub const EMPTY_REPLY_PLACEHOLDER: &str = "(no reply)";

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

/// A batched model's round is sent once no new call has arrived for this many
/// milliseconds, when the experiment sets no `batch_gather_ms`. Every episode waiting on
/// the model sends its next request within moments of its previous reply being stored,
/// so two seconds gathers a whole round while adding nothing that matters to a batch's
/// minutes-to-hours turnaround. Stored with every batch (`batches.gather_ms`).
pub const BATCH_GATHER_MS: u64 = 2_000;

/// The first poll of a submitted batch comes after this many milliseconds, when the
/// experiment sets no `batch_poll_ms`; the interval doubles after every poll, up to
/// [`BATCH_POLL_MAX_MS`].
pub const BATCH_POLL_MS: u64 = 1_000;

/// The longest interval between two polls of a batch (one minute).
pub const BATCH_POLL_MAX_MS: u64 = 60_000;

/// How long a batch may run when the experiment sets no `batch_deadline`: 24 hours,
/// the providers' own window (OpenAI's `completion_window`, Anthropic's expiry).
pub const BATCH_DEADLINE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Calls in flight at once for a batched model: unbounded in effect, since a round is
/// every episode waiting on the model and the provider queues a batch's items itself.
pub const BATCH_CONCURRENCY: usize = 1 << 20;
