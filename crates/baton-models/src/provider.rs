//! The `Provider` trait: translate one request into one response, nothing more.
//!
//! Retries, concurrency, rate limits and pricing belong to [`crate::Model`]. A provider
//! only says, through [`Provider::classify`], whether an error is worth retrying.

use std::time::Duration;

use async_trait::async_trait;
use baton_types::{Message, ToolCall, ToolSpec, Usage};
use serde::{Deserialize, Serialize};

/// Generation settings sent with every call of one model role. `None` sends nothing
/// for that setting: a request carries `temperature`, `top_p` and `seed` only when the
/// experiment sets them. The one setting the runner fills in is the output cap
/// (LiC's rule, [`crate::defaults::max_tokens`]), because every API needs a bound
/// for pricing and Anthropic requires one; it is stored with every request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GenerateConfig {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Output token cap (reasoning tokens included where the API counts them so).
    pub max_tokens: Option<u32>,
    /// Reasoning effort for models that take one (`low`, `medium`, `high`; Anthropic
    /// also `xhigh` and `max`).
    pub reasoning_effort: Option<String>,
    /// Nucleus sampling mass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Anthropic extended thinking with this token budget (`thinking: {type: enabled,
    /// budget_tokens}`); at least 1,024 and below `max_tokens`, checked before a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// Keys merged into the request body as given (last, so they win), for parameters
    /// baton does not know yet.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// The sampling seed sent to the provider: only the one the experiment sets for the
    /// model (`seed = N` in its table). Many backends refuse a seed (Anthropic through a
    /// LiteLLM proxy: `UnsupportedParamsError`), so none is sent unless configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Ask for a JSON object as the reply (OpenAI Chat `response_format: {"type":
    /// "json_object"}`, Responses `text.format`; Anthropic has no JSON mode and is sent
    /// the prompt alone). Set only on LiC's answer-extraction calls; left out of the
    /// serialized form when false, so other requests keep their fingerprints.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub json_object: bool,
}

/// One chat request: the provider-side model id, the visible messages (system first)
/// and the settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The id the provider knows the model by (`gpt-4o-mini`, `lc` for `sim/lc`).
    pub model: String,
    /// System prompt first, then alternating user and assistant turns.
    pub messages: Vec<Message>,
    /// Generation settings.
    pub config: GenerateConfig,
    /// The episode's seed: the simulated models draw from it, and it is part of the
    /// request's fingerprint (so replicates never share a cached reply). It is never put
    /// on the wire; the seed a provider is sent is [`GenerateConfig::seed`].
    pub seed: Option<u64>,
    /// Tools the model may call (the agent loop's `bash` under the tool-call protocol);
    /// empty for chat. Left out of the serialized form when empty, so chat requests keep
    /// their fingerprints and stored forms.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Whether the model may call `tools`; `None` sends no `tool_choice` (the API's
    /// default). Each wire crate writes it in its provider's dialect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

/// Whether a request's tools may be called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// A tool call or a text reply, as the model chooses.
    Auto,
    /// A text reply only: the tools are offered (a conversation that holds tool calls
    /// is only valid with them) but must not be called.
    NoTools,
}

impl Request {
    /// A sha256 over the exact request, used as the response-cache key.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let bytes = serde_json::to_vec(self).expect("a request always serializes");
        hex::encode(Sha256::digest(bytes))
    }
}

/// One response with normalized usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The visible text of the reply (reasoning items are never part of it).
    pub text: String,
    /// Normalized token usage.
    pub usage: Usage,
    /// The model id the provider says served the call.
    pub model_served: String,
    /// Why generation stopped (`stop`, `length`, `end_turn`, ...), as reported.
    pub finish_reason: Option<String>,
    /// The raw response body, kept for the store.
    pub raw: Option<serde_json::Value>,
    /// The tool calls the model made, in order (empty for a text reply).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The provider batch the reply came from, when the call went through a batch API
    /// (stored with the call); `None` for a direct call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<String>,
    /// The batch item (its `custom_id`) the reply answered, with `batch_id`: a resume
    /// hands a stored item to no other call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_item: Option<String>,
}

/// Why a call failed, as far as the wire tells.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The server answered with an error status.
    #[error("HTTP {status} ({kind}): {message}")]
    Status {
        /// HTTP status code.
        status: u16,
        /// The error type or code from the body (`rate_limit_exceeded`,
        /// `insufficient_quota`, `overloaded_error`, ...), or empty.
        kind: String,
        /// The error message from the body.
        message: String,
        /// What the server asked us to wait (`retry-after-ms`, `retry-after`).
        retry_after: Option<Duration>,
    },
    /// The connection failed or was reset.
    #[error("connection failed: {0}")]
    Connection(String),
    /// No response within the client timeout.
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The body could not be understood.
    #[error("malformed response: {0}")]
    Malformed(String),
    /// The request cannot be made (a missing key, an unsupported setting, a redirect
    /// that a keyed request must not follow).
    #[error("{0}")]
    Config(String),
    /// The server answered with a success status, so the call is billed, but the reply
    /// cannot be used (empty content, a truncated or oversized body, no text). It
    /// carries the usage when the body still states it, so the attempt can be priced
    /// and stored.
    #[error("unusable reply: {message}")]
    Unusable {
        /// What is wrong with the reply.
        message: String,
        /// The usage the body states, when it could be read.
        usage: Option<Usage>,
        /// The body as received (capped), for the store.
        raw: Option<String>,
        /// The provider batch and item (`custom_id`) it came from, when it went through
        /// a batch API (boxed to keep the error small).
        batch: Option<Box<(String, String)>>,
    },
}

/// Token classes a provider's replies can carry besides uncached input and output;
/// the price card must have a rate for each before the first call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenClasses {
    /// Prompt-cache reads (providers that cache automatically, or where caching is on).
    pub cache_read: bool,
    /// 5-minute cache writes (where caching is on).
    pub cache_write_5m: bool,
    /// Long-lived cache writes.
    pub cache_write_1h: bool,
}

/// `text` with the credentials of every URL in it (`https://user:secret@host/...`)
/// replaced by `****`, for printing or storing a base URL or a file that holds one.
///
/// ```
/// use baton_models::redact_url_credentials;
/// assert_eq!(
///     redact_url_credentials("base_url = \"https://me:s3cret@proxy.example/v1\""),
///     "base_url = \"https://****@proxy.example/v1\""
/// );
/// assert_eq!(redact_url_credentials("http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000/v1");
/// ```
pub fn redact_url_credentials(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| {
                matches!(c, '/' | '?' | '#' | '"' | '\'' | '<' | '>') || c.is_whitespace()
            })
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("****");
                out.push_str(&authority[at..]);
            }
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// Whether and how to retry a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Do not retry: the error will not go away (bad request, no quota, no key).
    No,
    /// A passing fault (5xx, overload, reset, timeout, malformed body).
    Transient {
        /// The server's requested delay, if any.
        retry_after: Option<Duration>,
    },
    /// A rate limit: wait and retry.
    RateLimit {
        /// The server's requested delay, if any.
        retry_after: Option<Duration>,
    },
}

/// Default retry classification shared by the HTTP providers.
pub fn classify_default(error: &ProviderError) -> RetryDecision {
    match error {
        ProviderError::Status {
            status,
            kind,
            retry_after,
            ..
        } => {
            let never = [
                "insufficient_quota",
                "billing_error",
                "enforced_spend_limit_reached",
            ];
            if never.iter().any(|k| kind.contains(k)) {
                RetryDecision::No
            } else if *status == 429 {
                RetryDecision::RateLimit {
                    retry_after: *retry_after,
                }
            } else if *status == 408 || *status == 409 || *status >= 500 {
                RetryDecision::Transient {
                    retry_after: *retry_after,
                }
            } else {
                RetryDecision::No
            }
        }
        ProviderError::Connection(_)
        | ProviderError::Timeout(_)
        | ProviderError::Malformed(_)
        | ProviderError::Unusable { .. } => RetryDecision::Transient { retry_after: None },
        ProviderError::Config(_) => RetryDecision::No,
    }
}

/// Translates requests into responses for one API.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// The provider kind, as written in model strings (`sim`, `openai`, `anthropic`).
    fn kind(&self) -> &str;

    /// Make one call. No retries here.
    async fn generate(&self, request: &Request) -> Result<Response, ProviderError>;

    /// The bytes of the body this provider sends for `request`, every input it carries
    /// included (messages, tools, `extra` settings): the spending cap bounds a call's
    /// prompt by them. Default: the request serialized as JSON, which holds all of
    /// them.
    fn body_bytes(&self, request: &Request) -> u64 {
        serde_json::to_vec(request).map_or(u64::MAX, |b| b.len() as u64)
    }

    /// Where this provider sends its calls (an HTTP provider's endpoint URL, credentials
    /// redacted), for messages that name it; `None` for one with no address.
    fn endpoint(&self) -> Option<String> {
        None
    }

    /// Whether an error from this provider is worth retrying.
    fn classify(&self, error: &ProviderError) -> RetryDecision {
        classify_default(error)
    }

    /// The token classes this provider's replies can carry besides uncached input and
    /// output (default: none).
    fn token_classes(&self) -> TokenClasses {
        TokenClasses::default()
    }

    /// A reply (used or unusable) that came from batch `batch_id` is now stored. A
    /// batching provider journals a batch as finished only once every reply it handed
    /// out is stored, so a crash in between makes a resume fetch those replies again
    /// rather than pay for them twice. Direct providers ignore it (the default).
    fn acknowledge(&self, batch_id: &str) {
        let _ = batch_id;
    }

    /// Whether an attempt may go out as a direct request although the model is batched
    /// (`batch_retry = "direct"`: a failed item's retry). Such an attempt is billed at
    /// the direct rates, so a spending cap reserves at those
    /// ([`crate::Model::reservation_price`]). False by default.
    fn retries_direct(&self) -> bool {
        false
    }

    /// Whether a call may be abandoned when the run is stopped (Ctrl-C): true for a
    /// batching provider, whose request is journaled and keeps running at the provider,
    /// so a resume collects its reply. A direct call is never abandoned, since its
    /// reply is billed (the default); nor is a batching provider's attempt of `request`
    /// that it sends directly (a failed item's direct retry).
    fn abandonable(&self, request: &Request) -> bool {
        let _ = request;
        false
    }
}

/// What an HTTP provider needs to know about one model of an experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderConfig {
    /// The model's name in the experiment.
    pub name: String,
    /// The provider kind (`openai`, `openai-responses`, `anthropic`, `openai-compatible`).
    pub kind: String,
    /// The provider-side model id.
    pub model_id: String,
    /// The base URL, when not the provider's default.
    pub base_url: Option<String>,
    /// The environment variable that holds the API key.
    pub api_key_env: Option<String>,
    /// Send the key over plain `http://` to a host that is not a loopback address
    /// (default false: such a base URL with a key is refused).
    pub allow_http_with_key: bool,
}

/// Builds providers for the provider kinds it knows.
pub trait ProviderFactory: Send + Sync {
    /// The provider kinds it serves.
    fn kinds(&self) -> Vec<String>;
    /// A provider for one model; the error says what is missing (a key variable, a URL).
    fn make(&self, config: &ProviderConfig) -> Result<std::sync::Arc<dyn Provider>, String>;
    /// A provider for one model whose calls go through the provider's batch API
    /// (`batch = true`), recording its batches in `batch.journal`. The default refuses:
    /// a factory without a batch API says so before any call.
    fn make_batched(
        &self,
        config: &ProviderConfig,
        batch: &BatchSetup,
    ) -> Result<std::sync::Arc<dyn Provider>, String> {
        let _ = batch;
        Err(format!(
            "provider kind {:?} has no batch API (batch = true)",
            config.kind
        ))
    }
}

/// A batch a [`BatchJournal`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalBatch {
    /// The provider's batch id.
    pub batch_id: String,
    /// Its items' `custom_id`s.
    pub custom_ids: Vec<String>,
    /// Every item has been handed to its caller (and so stored).
    pub finished: bool,
    /// The items whose reply is stored (as a call or a billed attempt): a resume hands
    /// them to no call.
    pub stored: Vec<String>,
}

/// A batch whose creation was started and never settled: the process stopped (or the
/// create request failed in a way that leaves open whether the provider made it)
/// between [`BatchJournal::submitting`] and [`BatchJournal::submitted`] or
/// [`BatchJournal::not_created`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InDoubtBatch {
    /// The submission token the create request carried.
    pub token: String,
    /// Its items' `custom_id`s.
    pub custom_ids: Vec<String>,
    /// When the submission started (Unix seconds, this machine's clock).
    pub started_unix: i64,
}

/// Where one model's submitted batches are recorded, so that a resumed run polls them
/// instead of submitting their items again. The store implements it for runs; every
/// method is durable when it returns.
///
/// A batch is journaled twice: as a submission ([`submitting`](Self::submitting))
/// before its create request goes out, and with its id once the provider made it
/// ([`submitted`](Self::submitted)). A process killed between the two leaves the
/// submission in doubt; a resume asks the provider whether a batch with that token
/// exists before it submits any of those items again.
#[async_trait]
pub trait BatchJournal: Send + Sync {
    /// A batch is about to be created under `token` with these items.
    async fn submitting(&self, token: &str, custom_ids: &[String]) -> Result<(), String>;
    /// The batch of submission `token` was created: its id and its items' ids. Called
    /// before it is polled; settles the submission.
    async fn submitted(
        &self,
        token: &str,
        batch_id: &str,
        custom_ids: &[String],
    ) -> Result<(), String>;
    /// The batch of submission `token` was not created (the provider refused it, or a
    /// resume found no such batch); settles the submission.
    async fn not_created(&self, token: &str) -> Result<(), String>;
    /// Every item of the batch has been handed to its caller.
    async fn finished(&self, batch_id: &str) -> Result<(), String>;
    /// Every batch recorded for this model, in the order they were submitted.
    async fn batches(&self) -> Result<Vec<JournalBatch>, String>;
    /// Submissions of this model that are neither submitted nor known not created.
    async fn in_doubt(&self) -> Result<Vec<InDoubtBatch>, String>;
    /// The id of every batch recorded where this journal writes, for any model: batches
    /// the search for an in-doubt submission's batch must not take.
    async fn known_batch_ids(&self) -> Result<Vec<String>, String>;
}

/// What a batched model's provider is built with ([`ProviderFactory::make_batched`]).
#[derive(Clone)]
pub struct BatchSetup {
    /// Where its batches are recorded.
    pub journal: std::sync::Arc<dyn BatchJournal>,
    /// A round is sent once no new call has arrived for this long.
    pub gather: Duration,
    /// The first poll interval; it doubles up to `poll_max`.
    pub poll_min: Duration,
    /// The longest poll interval.
    pub poll_max: Duration,
    /// Where the retry of a failed, expired or cancelled item goes.
    pub retry: BatchRetry,
    /// How long a batch may run before it is cancelled and its callers get an error
    /// (the experiment's `batch_deadline`, [`crate::defaults::BATCH_DEADLINE`]).
    pub deadline: Duration,
}

/// Where a batched model retries a call whose batch item failed, expired or was
/// cancelled (the experiment's `batch_retry`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BatchRetry {
    /// Into a later round, at batch rates (the default): cheaper, one more batch
    /// turnaround per failure.
    #[default]
    Round,
    /// As one direct request to the model's HTTP API, at the card's direct rates: the
    /// episode does not wait for another batch.
    Direct,
}

impl BatchRetry {
    /// The setting's value as written in an experiment (`"round"` or `"direct"`).
    pub fn as_str(self) -> &'static str {
        match self {
            BatchRetry::Round => "round",
            BatchRetry::Direct => "direct",
        }
    }
}

impl std::fmt::Debug for BatchSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchSetup")
            .field("gather", &self.gather)
            .field("poll_min", &self.poll_min)
            .field("poll_max", &self.poll_max)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}
