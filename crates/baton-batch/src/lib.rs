//! Batch APIs: OpenAI's Batch API and Anthropic's Message Batches, which bill half the
//! direct price in exchange for latency (OpenAI: a 24-hour window; Anthropic: most batches
//! within an hour, 24 hours at most).
//!
//! * [`BatchClient`] submits a list of [`BatchItem`]s (a `custom_id` and the request body
//!   baton would have sent directly), polls a batch ([`BatchStatus`]), streams its
//!   results into a [`ResultSink`] ([`ItemResult`], one [`Outcome`] per item, read line
//!   by line: a results file is never held whole, and a line that cannot be read is
//!   that item's [`Outcome::Unreadable`], never the whole batch's loss) and cancels it. OpenAI: the items
//!   go up as a JSONL file (`POST /v1/files`, purpose `batch`), then `POST /v1/batches`
//!   for `/v1/chat/completions` or `/v1/responses`; results come from the output and error
//!   files. Anthropic: `POST /v1/messages/batches` with the items inline; results from
//!   `/v1/messages/batches/{id}/results` (built from the base URL, never from the
//!   `results_url` the server names, so the key never goes to another host).
//! * [`split`] cuts a round's items into batches under an API's [`Limits`] (requests and
//!   bytes per batch).
//! * [`BatchingProvider`] is a [`baton_models::Provider`] that sends a model's calls
//!   through a batch: calls that arrive together (a turn round of every episode waiting on
//!   the model) are gathered until none has come for [`BatchOptions::gather`], sent as one
//!   batch (several past the limits), polled with backoff, and each reply is read by the
//!   model's direct [`baton_http::HttpProvider`], so it is priced and stored as a direct
//!   one would be. Items are named by their request's fingerprint, and every submitted
//!   batch is recorded in a [`BatchJournal`] before it is polled, so a resumed process
//!   polls the batches it finds there instead of submitting their items again. A failed,
//!   expired or cancelled item goes back to the caller as a retryable error; its retry
//!   joins a later round or, under [`baton_models::BatchRetry::Direct`]
//!   ([`BatchOptions::retry`]), is one request to the direct provider, whose reply has
//!   no batch id (so the model prices it at the direct rates).
//! * [`BatchProviders`] is the run's factory for HTTP models: direct providers, and for a
//!   model with `batch = true` its direct provider wrapped in a [`BatchingProvider`]
//!   whose [`BatchJournal`] the runner gives it (the store's `batches` table).
//! * [`BatchService`] is an in-memory implementation of both APIs for the simulated
//!   server, with a configurable turnaround, deterministic partial failures and expiry
//!   ([`ServiceConfig`]), and a hostile provider's faults ([`BatchFaults`]: a malformed
//!   line, failed and stalled downloads, stuck, unknown and redirected batches, a
//!   padded results file, an echoed key); a closure answers each item as the direct
//!   route would.
//!
//! A results file that was produced is the provider's bill, so no item of an ended batch
//! is ever submitted again: its download is retried with backoff (a 5xx, a broken-off
//! or stalled body: each read has the call timeout, the whole download an hour), and
//! when every try failed the callers get an error no retry resubmits while the batch
//! stays recorded, so resuming the run collects it. Polling is bounded: never faster
//! than [`MIN_POLL`], past [`BatchOptions::deadline`] (the experiment's
//! `batch_deadline`, 24 hours by default) the batch is asked to cancel and then given
//! up on, and a batch the provider refuses (404, 410, 401, 403, a redirect) three times
//! in a row is given up on at once, the same way. A download pauses while
//! [`UNSTORED_REPLIES`] of its replies wait to be stored, so results are read no faster
//! than they are stored.
//!
//! What this crate does not do: decide what goes in a batch, store results or price them
//! (the runner and the store do), or decide when to retry (a failed or expired item is
//! returned as a retryable error; the [`baton_models::Model`]'s retry loop asks again, and
//! the provider only chooses where that attempt goes).
//!
//! Every batch is journaled twice: as a submission, under a random token, before its
//! create request, and with its id once the provider answered. A process killed in
//! between (or a create request that failed without a clear answer: no response, an
//! unreadable one, a 5xx) leaves the submission in doubt, and before any of its items
//! goes out again the provider is asked for it ([`BatchClient::find`]): OpenAI's batch
//! carries the token in its `metadata`; Anthropic's Message Batches have no metadata,
//! so the batch taken is the oldest one of the same size created since the submission
//! started that the store does not know. A batch found is polled like any other; a
//! submission with none is recorded as not created, and its items are sent under new
//! ids. Left open for Anthropic: another client on the same key creating a batch of the
//! same size in that window could be taken instead; its results name none of baton's
//! items, so they are retried (delivered to no wrong call), but baton's own batch, if
//! it was made, is then paid for and not used.
//!
//! Each reply names its item ([`baton_models::Response::batch_item`]), which the store
//! keeps with the call, so a resume hands an unfinished batch's stored items to no call:
//! of two equal requests whose batch was delivered with only one reply stored, the
//! resumed call gets the other item.
//!
//! Like `baton-http`, the client never follows a redirect, caps every body it reads, and
//! keeps the key in an [`baton_http::ApiKey`] whose value is redacted from every error,
//! and from every item's error message and unreadable line a results file carries.
#![deny(missing_docs)]

mod client;
mod factory;
mod poll;
mod provider;
mod results;
mod service;
mod split;

pub use baton_models::{BatchJournal, JournalBatch};
pub use client::{BatchClient, DOWNLOAD_TIMEOUT};
pub use factory::{BatchProviders, batch_api};
pub use poll::{MIN_POLL, UNSTORED_REPLIES};
pub use provider::{BatchOptions, BatchingProvider, MemoryJournal};
pub use service::{BatchFaults, BatchService, ServiceConfig, ServiceStats};
pub use split::{Limits, split};

use serde_json::Value;

/// Which batch API, and for OpenAI which endpoint its items call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BatchApi {
    /// OpenAI's Batch API over `/v1/chat/completions`.
    OpenAiChat,
    /// OpenAI's Batch API over `/v1/responses`.
    OpenAiResponses,
    /// Anthropic's Message Batches (`/v1/messages/batches`).
    Anthropic,
}

impl BatchApi {
    /// The endpoint each item calls (OpenAI's `url` field; Anthropic's is implied).
    pub fn endpoint(self) -> &'static str {
        match self {
            BatchApi::OpenAiChat => "/v1/chat/completions",
            BatchApi::OpenAiResponses => "/v1/responses",
            BatchApi::Anthropic => "/v1/messages",
        }
    }

    /// The provider's published limits per batch.
    pub fn limits(self) -> Limits {
        match self {
            // OpenAI: 50,000 requests and a 200 MB input file per batch.
            BatchApi::OpenAiChat | BatchApi::OpenAiResponses => Limits {
                requests: 50_000,
                bytes: 200_000_000,
            },
            // Anthropic: 100,000 requests or 256 MB per batch.
            BatchApi::Anthropic => Limits {
                requests: 100_000,
                bytes: 256_000_000,
            },
        }
    }
}

/// One request of a batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchItem {
    /// The caller's id for the item, unique within the batch: 1–64 characters from
    /// `A–Z a–z 0–9 _ -` (Anthropic's rule, applied to both APIs).
    pub custom_id: String,
    /// The request body exactly as it would be sent directly.
    pub body: Value,
}

/// Where a submitted batch stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchStatus {
    /// The provider's own status word (`in_progress`, `completed`, `ended`, …).
    pub status: String,
    /// No item will change any more: results can be fetched.
    pub ended: bool,
    /// Why the whole batch failed (OpenAI's `failed`: validation errors), if it did; it
    /// then has no results.
    pub failed: Option<String>,
    /// Items the provider has finished (succeeded or not), of `total`.
    pub done: u64,
    /// Items in the batch.
    pub total: u64,
    /// When the provider says it created the batch (Unix seconds), when it says: a
    /// resumed process measures the batch's deadline from it.
    pub created_unix: Option<i64>,
}

/// What became of one item.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Answered: the response body, as a direct call's would be (billed).
    Succeeded(Value),
    /// Refused or failed; `status` is the HTTP status the direct call would have had,
    /// when the provider says.
    Errored {
        /// The status, when known.
        status: Option<u16>,
        /// The provider's message.
        message: String,
    },
    /// Not processed before the batch expired.
    Expired,
    /// Not processed because the batch was cancelled.
    Canceled,
    /// The item's result line could not be read (not JSON, over the line cap, or not
    /// the API's shape). `billed` says whether the line stood for an answered item (an
    /// OpenAI output-file line, any Anthropic line): such an item is paid for, so it is
    /// one unusable billed attempt, never a lost batch.
    Unreadable {
        /// Whether the provider billed the item.
        billed: bool,
        /// What was wrong with the line (the configured key redacted).
        message: String,
        /// The start of the line, as text (the configured key redacted).
        excerpt: String,
    },
}

impl Outcome {
    /// Whether the provider bills this item: answered, or an unreadable line that stood
    /// for an answered item.
    pub fn billed(&self) -> bool {
        matches!(
            self,
            Outcome::Succeeded(_) | Outcome::Unreadable { billed: true, .. }
        )
    }
}

/// Where a streamed results download ([`BatchClient::results_each`]) hands its items,
/// one line at a time, so no results file is ever held whole.
pub trait ResultSink: Send {
    /// Whether the item is wanted: lines of other items are skipped without being
    /// parsed further.
    fn wants(&self, custom_id: &str) -> bool;
    /// Takes one wanted item's result.
    fn take(&mut self, result: ItemResult);
    /// Whether the sink holds as many results as it should until some are used: the
    /// download then pauses (for a while at most) before the next line, so results are
    /// read no faster than they are stored.
    fn full(&self) -> bool {
        false
    }
}

/// What a results download read besides the items it handed to its [`ResultSink`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResultsRead {
    /// Lines handed to the sink.
    pub taken: u64,
    /// Lines of items the sink did not want.
    pub skipped: u64,
    /// Lines that could not be read and name no item (each may be an answered item
    /// whose result is lost).
    pub unreadable: u64,
    /// What was wrong with the first of them.
    pub first_unreadable: Option<String>,
}

/// One item's result, by its `custom_id`.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemResult {
    /// The item's id.
    pub custom_id: String,
    /// What became of it.
    pub outcome: Outcome,
}

/// Errors from the batch client and from splitting.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    /// The request did not get an answer (connection, timeout, redirect).
    #[error("batch request to {url} failed: {message}")]
    Http {
        /// The URL, without credentials.
        url: String,
        /// What happened.
        message: String,
    },
    /// The server answered with a redirect, which is never followed (the key must not
    /// go to another host).
    #[error(
        "batch request to {url} was redirected (HTTP {status}) to {to}; redirects are not followed"
    )]
    Redirected {
        /// The URL.
        url: String,
        /// The redirect status.
        status: u16,
        /// The host it pointed to (`elsewhere` when unreadable).
        to: String,
    },
    /// The server answered with an error status.
    #[error("batch request to {url} was refused with HTTP {status}: {message}")]
    Status {
        /// The URL.
        url: String,
        /// The status.
        status: u16,
        /// The start of the body.
        message: String,
    },
    /// The server answered with something that is not the API's shape.
    #[error("batch response from {url}: {message}")]
    Protocol {
        /// The URL.
        url: String,
        /// What is wrong.
        message: String,
    },
    /// An item's `custom_id` breaks the id rule or repeats.
    #[error("batch item id {custom_id:?}: {message}")]
    InvalidId {
        /// The id.
        custom_id: String,
        /// What is wrong.
        message: String,
    },
    /// One item alone is larger than a batch may be.
    #[error("batch item {custom_id:?} is {bytes} bytes, over the {limit}-byte batch limit")]
    TooLarge {
        /// The item.
        custom_id: String,
        /// Its serialized size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
}

/// Checks one id against the rule both APIs accept.
pub fn check_custom_id(custom_id: &str) -> Result<(), BatchError> {
    let ok = (1..=64).contains(&custom_id.len())
        && custom_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(BatchError::InvalidId {
            custom_id: custom_id.to_owned(),
            message: "must be 1-64 characters from A-Z a-z 0-9 _ -".into(),
        })
    }
}
