//! HTTP model providers for baton, and a simulated HTTP server to test them against.
//!
//! * [`HttpProviders`] is the [`baton_models::ProviderFactory`] for the kinds
//!   `openai` (Chat Completions), `openai-responses` (Responses, stateless),
//!   `anthropic` (Messages, prompt caching on by default) and `openai-compatible`
//!   (Chat Completions at any base URL: vLLM, llama.cpp, Ollama, a LiteLLM proxy).
//!   Each [`HttpProvider`] makes exactly one non-streaming request per call and
//!   normalizes its usage ([`usage`]); retries, backoff, rate limits and pricing live
//!   in [`baton_models::Model`]. Error statuses become
//!   [`baton_models::ProviderError::Status`] with the server's requested delay
//!   ([`status_body`]). A reply with a success status is billed whatever its body
//!   holds; one that cannot be used (empty, truncated, not JSON, past
//!   [`MAX_BODY_BYTES`]) becomes [`baton_models::ProviderError::Unusable`] with the
//!   usage it states, so the attempt is stored and counted.
//! * Redirects are never followed (a 3xx is an error naming the status and the
//!   `Location` host); a plain `http://` base URL with a key is refused unless its
//!   host is a loopback address or the model sets `allow_http_with_key`; credentials
//!   inside a base URL are redacted wherever it is shown.
//! * Keys come from environment variables and live in an [`ApiKey`], which prints
//!   `****`; header values are marked sensitive and error texts are redacted, so a key
//!   never reaches a log, an error, the store or a report.
//! * [`serve`] starts the simulated server ([`server`]): the same three APIs answered by
//!   the simulated models, with a prompt cache and deterministic fault injection
//!   ([`FaultKind`]).
//!
//! Only visible text crosses a handoff: requests are built from baton's text-only
//! [`baton_types::Message`]s, and reasoning items and thinking blocks in a response
//! never enter its text.
//!
//! Not here: retries and limits (`baton-models`), the turn loop (`baton-runner`), the
//! `baton sim-server` command (`baton`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), baton_http::HttpError> {
//! use baton_http::{SimServerConfig, serve};
//! let server = serve(SimServerConfig::new(Vec::new())).await?;
//! println!("{}", server.base_url()); // http://127.0.0.1:PORT/v1
//! server.shutdown().await?;
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod factory;
mod key;
mod provider;
pub mod server;
pub mod status_body;
pub mod usage;
pub mod wire;

pub use factory::{DEFAULT_TIMEOUT, HttpProviders};
pub use key::ApiKey;
pub use provider::{HttpProvider, MAX_BODY_BYTES, Wire};
pub use server::{
    FaultKind, FaultList, RECEIVED_KEPT, ServedProvider, SimAnswerer, SimServerConfig,
    SimServerHandle, SimServerStats, serve, serve_with,
};

use std::net::SocketAddr;

/// Errors from building providers and running the simulated server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// A model names a key variable that is not set.
    #[error(
        "model {model:?}: environment variable {var} is not set (it should hold the API key; name another with api_key_env)"
    )]
    MissingKey {
        /// The model's name in the experiment.
        model: String,
        /// The variable.
        var: String,
    },
    /// A model's provider settings are unusable.
    #[error("model {model:?}: {message}")]
    Config {
        /// The model's name in the experiment.
        model: String,
        /// What is wrong.
        message: String,
    },
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// The simulated server could not bind its address.
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// The simulated server's settings are unusable.
    #[error("simulated server: {0}")]
    SimConfig(String),
    /// A fault name is not known.
    #[error(
        "unknown fault {0:?}; known: rate-limit, insufficient-quota, server-error, overloaded, reset, stall, malformed, empty (or all, retryable, none)"
    )]
    UnknownFault(String),
    /// The simulated server stopped with an error.
    #[error("simulated server: {0}")]
    Serve(std::io::Error),
}
