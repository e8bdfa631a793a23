//! Model access for baton: providers that translate requests, and the [`Model`] wrapper
//! that owns concurrency, retries and pricing.
//!
//! * [`Provider`] turns one [`Request`] into one [`Response`] with normalized
//!   [`baton_types::Usage`], and classifies its errors as [`RetryDecision`]s. It never
//!   retries or sleeps on its own.
//! * [`Model`] is one model role in an experiment: it holds a provider, the provider-side
//!   model id, generation settings, a concurrency limit, a retry policy and its
//!   [`Price`] from a [`PriceCard`] (LiteLLM's JSON format). Costs are exact integers in
//!   picodollars ([`baton_types::Cost`]).
//! * [`SimProvider`] serves the deterministic simulated models (`sim/<name>`) whose rules
//!   are documented in [`sim`]; they answer from the answer key next to them
//!   ([`reference_response`] passes each family's evaluator, [`wrong_response`] fails it).
//! * [`tokens`] is the token-count heuristic (four characters a token) the simulated
//!   models, the simulated HTTP server and the tokens-per-minute limit share;
//!   [`defaults`] holds what baton fills in for a model setting left out; [`claude`]
//!   what a Claude model id says about the settings the API takes for it.
//! * With the `testing` feature, `testing::ScriptedProvider` plays back a script of
//!   replies and errors for other crates' tests.
//!
//! Not here: the HTTP providers and the simulated HTTP server (`baton-http`), the turn
//! loop and forking (`baton-runner`).
#![deny(missing_docs)]

mod answer_key;
pub mod claude;
pub mod defaults;
mod limit;
mod model;
mod price;
mod provider;
mod redact;
pub mod sim;
mod sim_extraction;
mod suggest;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tokens;

pub use answer_key::{
    REFERENCE_SOLUTION_KEY, WRONG_SOLUTIONS_KEY, WRONG_SQL_KEY, reference_response, wrong_response,
};
pub use limit::RateLimits;
pub use model::{
    Accept, BilledAttempt, Completion, Generation, Interrupt, Model, ModelObserver, RetryBudget,
    RetryPolicy,
};
pub use price::{EMBEDDED_PRICE_CARD, Price, PriceCard};
pub use provider::{
    BatchJournal, BatchRetry, BatchSetup, GenerateConfig, InDoubtBatch, JournalBatch, Provider,
    ProviderConfig, ProviderError, ProviderFactory, Request, Response, RetryDecision, TokenClasses,
    ToolChoice, classify_default, redact_url_credentials,
};
pub use redact::{MIN_SECRET_LEN, Secrets, redact_secrets, redactable_secrets};
pub use sim::{SimProvider, SimSettings};
pub use suggest::{closest, with_did_you_mean};

use std::time::Duration;

/// `; the closest card keys: "a", "b"` for the close names found, or nothing.
fn did_you_mean(similar: &[String]) -> String {
    match similar {
        [] => String::new(),
        keys => {
            let keys: Vec<String> = keys.iter().map(|s| format!("{s:?}")).collect();
            format!("; the closest card keys: {}", keys.join(", "))
        }
    }
}

/// Errors from pricing and model calls.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The price card has no entry for a model.
    #[error(
        "no price for {key:?} in the price card ({sources}){}; if the model id is right, add its entry in LiteLLM's format to a card the experiment's `prices` key names",
        did_you_mean(similar)
    )]
    NoPrice {
        /// The card key looked up.
        key: String,
        /// The card files consulted.
        sources: String,
        /// The card's closest keys, closest first (a dot for a dash, a missing date).
        similar: Vec<String>,
    },
    /// A batched model's card entry has no Batch API rates.
    #[error(
        "price card entry {key:?} has no input_cost_per_token_batches and output_cost_per_token_batches ({sources}), which a batched model needs; add them in LiteLLM's format to a card the experiment's `prices` key names"
    )]
    NoBatchPrice {
        /// The card key looked up.
        key: String,
        /// The card files consulted.
        sources: String,
    },
    /// A call used a token class whose rate the card lacks.
    #[error("price card entry {key:?} has no {field}, but a call used that token class")]
    MissingRate {
        /// The card key.
        key: String,
        /// The missing LiteLLM field.
        field: &'static str,
    },
    /// A call's prompt is past the size where the card switches to tiered rates.
    #[error(
        "price card entry {key:?} has tiered rates above {threshold} prompt tokens and a call used {prompt}; refusing to mis-price it"
    )]
    TieredPrice {
        /// The card key.
        key: String,
        /// The tier threshold in prompt tokens.
        threshold: u64,
        /// The call's prompt tokens.
        prompt: u64,
    },
    /// The price card could not be read.
    #[error("price card {source_name}: {message}")]
    PriceCard {
        /// The file or name of the card.
        source_name: String,
        /// What is wrong.
        message: String,
    },
    /// The provider failed and retrying would not help (or retries ran out).
    #[error("model {model:?} ({provider}) failed after {attempts} attempt(s): {source}")]
    Provider {
        /// The model's name in the experiment.
        model: String,
        /// The provider kind.
        provider: String,
        /// Attempts made.
        attempts: u32,
        /// The last error (boxed: an unusable reply carries its body).
        source: Box<ProviderError>,
    },
    /// A task lacks what the simulated models' answer key needs.
    #[error("task {task_id:?}: key {key:?}: {message}")]
    AnswerKey {
        /// The task's id.
        task_id: String,
        /// The sample key involved.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A call's cost does not fit the cost arithmetic (absurd usage).
    #[error(
        "price card entry {key:?}: the cost of {tokens} tokens does not fit in 64-bit picodollars"
    )]
    CostOverflow {
        /// The card key.
        key: String,
        /// The call's tokens in total.
        tokens: u128,
    },
    /// The run was interrupted while a call waited to retry.
    #[error(
        "model {model:?}: interrupted while waiting {wait:?} to retry after attempt {attempts}"
    )]
    Interrupted {
        /// The model's name in the experiment.
        model: String,
        /// Attempts made.
        attempts: u32,
        /// The wait that was cut short.
        wait: Duration,
    },
    /// The run was interrupted while a call waited on a provider batch; the batch keeps
    /// running at the provider and a resume collects its reply.
    #[error(
        "model {model:?}: stopped while waiting on its batch (attempt {attempts}); the batch keeps running and a resume collects it"
    )]
    LeftInBatch {
        /// The model's name in the experiment.
        model: String,
        /// Attempts made.
        attempts: u32,
    },
    /// Waiting for another retry would exceed the run's retry-time budget.
    #[error(
        "model {model:?}: retry-time budget exhausted after {attempts} attempt(s) (next wait {wait:?}); last error: {last}"
    )]
    RetryBudget {
        /// The model's name in the experiment.
        model: String,
        /// Attempts made.
        attempts: u32,
        /// The wait that did not fit.
        wait: Duration,
        /// The last error.
        last: String,
    },
}

impl ModelError {
    pub(crate) fn answer_key(task_id: &str, key: &str, message: impl Into<String>) -> Self {
        ModelError::AnswerKey {
            task_id: task_id.to_owned(),
            key: key.to_owned(),
            message: message.into(),
        }
    }
}
