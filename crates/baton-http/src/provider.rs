//! [`HttpProvider`]: one model's endpoint, key and wire format; one POST per call.

use std::time::Duration;

use async_trait::async_trait;
use baton_models::{Provider, ProviderError, Request, Response};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::key::ApiKey;
use crate::status_body::status_error;
use crate::wire::{anthropic, openai_chat, openai_responses};

/// The wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions at api.openai.com (or a base URL).
    OpenAiChat,
    /// Chat Completions at another server (vLLM, llama.cpp, Ollama, LiteLLM proxy).
    OpenAiCompatible,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
}

impl Wire {
    /// The provider kind as written in model strings.
    pub fn kind(self) -> &'static str {
        match self {
            Wire::OpenAiChat => "openai",
            Wire::OpenAiCompatible => "openai-compatible",
            Wire::OpenAiResponses => "openai-responses",
            Wire::Anthropic => "anthropic",
        }
    }

    /// The wire for a provider kind.
    pub fn from_kind(kind: &str) -> Option<Wire> {
        [
            Wire::OpenAiChat,
            Wire::OpenAiCompatible,
            Wire::OpenAiResponses,
            Wire::Anthropic,
        ]
        .into_iter()
        .find(|w| w.kind() == kind)
    }

    /// The path appended to the base URL.
    fn path(self) -> &'static str {
        match self {
            Wire::OpenAiChat | Wire::OpenAiCompatible => "/chat/completions",
            Wire::OpenAiResponses => "/responses",
            Wire::Anthropic => "/messages",
        }
    }
}

/// A provider for one model over HTTP. It makes exactly one request per
/// [`Provider::generate`]; retries belong to [`baton_models::Model`].
pub struct HttpProvider {
    wire: Wire,
    url: String,
    key: Option<ApiKey>,
    client: reqwest::Client,
    timeout: Duration,
    prompt_caching: bool,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("wire", &self.wire)
            .field("url", &self.url)
            .field("key", &self.key)
            .field("timeout", &self.timeout)
            .field("prompt_caching", &self.prompt_caching)
            .finish()
    }
}

impl HttpProvider {
    /// A provider posting to `base_url` (e.g. `https://api.openai.com/v1`) plus the
    /// wire's path, with an optional key, on a shared client whose timeout is
    /// `timeout`. `prompt_caching` only matters for Anthropic.
    pub fn new(
        wire: Wire,
        base_url: &str,
        key: Option<ApiKey>,
        client: reqwest::Client,
        timeout: Duration,
        prompt_caching: bool,
    ) -> Self {
        HttpProvider {
            wire,
            url: format!("{}{}", base_url.trim_end_matches('/'), wire.path()),
            key,
            client,
            timeout,
            prompt_caching,
        }
    }

    /// The endpoint URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The request body for a request (what goes on the wire, minus headers).
    pub fn body(&self, request: &Request) -> Value {
        match self.wire {
            Wire::OpenAiChat => openai_chat::body(request, openai_chat::Dialect::OpenAi),
            Wire::OpenAiCompatible => openai_chat::body(request, openai_chat::Dialect::Compatible),
            Wire::OpenAiResponses => openai_responses::body(request),
            Wire::Anthropic => anthropic::body(request, self.prompt_caching),
        }
    }

    /// The headers, with the key marked sensitive so that no `Debug` output shows it.
    fn headers(&self) -> HeaderMap {
        let mut h = HeaderMap::new();
        let mut secret = |name: &'static str, value: String| {
            if let Ok(mut v) = HeaderValue::from_str(&value) {
                v.set_sensitive(true);
                h.insert(HeaderName::from_static(name), v);
            }
        };
        match (self.wire, &self.key) {
            (Wire::Anthropic, Some(k)) => secret("x-api-key", k.expose().to_string()),
            (_, Some(k)) => secret("authorization", format!("Bearer {}", k.expose())),
            (_, None) => {}
        }
        if self.wire == Wire::Anthropic {
            h.insert(
                HeaderName::from_static("anthropic-version"),
                HeaderValue::from_static(anthropic::VERSION),
            );
        }
        h
    }

    /// The HTTP request a call would send (for inspection; `generate` sends it).
    pub fn build(&self, request: &Request) -> Result<reqwest::Request, ProviderError> {
        self.client
            .post(&self.url)
            .headers(self.headers())
            .json(&self.body(request))
            .build()
            .map_err(|e| ProviderError::Config(self.describe(&e)))
    }

    /// An error's text with its causes, without the URL and with the key redacted.
    fn describe(&self, error: &reqwest::Error) -> String {
        let mut text = String::new();
        let mut cause: Option<&dyn std::error::Error> = Some(error);
        while let Some(e) = cause {
            if !text.is_empty() {
                text.push_str(": ");
            }
            text.push_str(&e.to_string());
            cause = e.source();
        }
        self.redact(&text)
    }

    fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(k) => k.redact(text),
            None => text.to_string(),
        }
    }

    fn transport(&self, error: reqwest::Error) -> ProviderError {
        let error = error.without_url();
        if error.is_timeout() {
            ProviderError::Timeout(self.timeout)
        } else {
            ProviderError::Connection(self.describe(&error))
        }
    }

    fn redact_error(&self, error: ProviderError) -> ProviderError {
        match error {
            ProviderError::Status {
                status,
                kind,
                message,
                retry_after,
            } => ProviderError::Status {
                status,
                kind,
                message: self.redact(&message),
                retry_after,
            },
            ProviderError::Malformed(m) => ProviderError::Malformed(self.redact(&m)),
            other => other,
        }
    }
}

#[async_trait]
impl Provider for HttpProvider {
    fn kind(&self) -> &str {
        self.wire.kind()
    }

    async fn generate(&self, request: &Request) -> Result<Response, ProviderError> {
        let http = self.build(request)?;
        let reply = self
            .client
            .execute(http)
            .await
            .map_err(|e| self.transport(e))?;
        let status = reply.status();
        let headers = reply.headers().clone();
        let bytes = reply.bytes().await.map_err(|e| self.transport(e))?;
        if !status.is_success() {
            return Err(self.redact_error(status_error(status.as_u16(), &headers, &bytes)));
        }
        let body: Value = serde_json::from_slice(&bytes).map_err(|e| {
            ProviderError::Malformed(format!(
                "response body is not JSON ({e}); {} bytes",
                bytes.len()
            ))
        })?;
        let parsed = match self.wire {
            Wire::OpenAiChat | Wire::OpenAiCompatible => openai_chat::parse(body),
            Wire::OpenAiResponses => openai_responses::parse(body),
            Wire::Anthropic => anthropic::parse(body),
        };
        parsed.map_err(|e| self.redact_error(e))
    }
}
