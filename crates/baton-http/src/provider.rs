//! [`HttpProvider`]: one model's endpoint, key and wire format; one POST per call.

use std::time::Duration;

use async_trait::async_trait;
use baton_models::{Provider, ProviderError, Request, Response, TokenClasses};
use baton_types::Usage;
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

/// The most bytes of a response body that are read. A body past it is cut off: on a
/// success status the attempt is billed but unusable, on an error status its message
/// is what fits. 16 MiB is far above any chat reply (LiC's output cap is 1,000 tokens).
pub const MAX_BODY_BYTES: usize = 16 << 20;

/// How much of an unusable body is kept for the store.
const KEPT_BODY_BYTES: usize = 64 << 10;

/// A provider for one model over HTTP. It makes exactly one request per
/// [`Provider::generate`]; retries belong to [`baton_models::Model`].
///
/// Redirects are never followed (the client is built with
/// `reqwest::redirect::Policy::none()`): a 3xx is an error naming the status and the
/// host the `Location` points to, so the key and the prompt never reach another host.
pub struct HttpProvider {
    wire: Wire,
    base_url: String,
    url: String,
    /// `url` parsed, once: what every request is sent to, or why it cannot be (the
    /// error text a request to it gets, redacted).
    target: Result<reqwest::Url, String>,
    /// The headers every request carries, built once: the key (marked sensitive),
    /// `anthropic-version` for Anthropic, and `content-type: application/json`.
    headers: HeaderMap,
    key: Option<ApiKey>,
    client: reqwest::Client,
    timeout: Duration,
    prompt_caching: bool,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("wire", &self.wire)
            .field("url", &baton_models::redact_url_credentials(&self.url))
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
        let base_url = base_url.trim_end_matches('/');
        let url = format!("{base_url}{}", wire.path());
        // the URL is parsed as `Client::post` parses it, so a request's URL and a bad
        // URL's error are what they would be if it were parsed for each request
        let target = client
            .post(&url)
            .build()
            .map(|r| r.url().clone())
            .map_err(|e| describe(&e, key.as_ref()));
        HttpProvider {
            wire,
            base_url: base_url.to_string(),
            url,
            target,
            headers: headers(wire, key.as_ref()),
            key,
            client,
            timeout,
            prompt_caching,
        }
    }

    /// The endpoint URL, with any credentials in it redacted.
    pub fn url(&self) -> String {
        baton_models::redact_url_credentials(&self.url)
    }

    /// The base URL as configured (credentials included, so never print it; the batch
    /// client builds its own routes from it).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The key, when the provider sends one (redacted in `Debug` and `Display`).
    pub fn key(&self) -> Option<&ApiKey> {
        self.key.as_ref()
    }

    /// The client timeout of one call.
    pub fn timeout(&self) -> Duration {
        self.timeout
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

    /// The HTTP request a call would send (for inspection; `generate` sends it).
    pub fn build(&self, request: &Request) -> Result<reqwest::Request, ProviderError> {
        let url = self.target.clone().map_err(ProviderError::Config)?;
        let body = match self.wire {
            Wire::OpenAiChat => openai_chat::body_bytes(request, openai_chat::Dialect::OpenAi),
            Wire::OpenAiCompatible => {
                openai_chat::body_bytes(request, openai_chat::Dialect::Compatible)
            }
            Wire::OpenAiResponses | Wire::Anthropic => serde_json::to_vec(&self.body(request)),
        }
        .map_err(|e| ProviderError::Config(self.redact(&format!("builder error: {e}"))))?;
        let mut http = reqwest::Request::new(reqwest::Method::POST, url);
        *http.headers_mut() = self.headers.clone();
        *http.body_mut() = Some(body.into());
        Ok(http)
    }

    /// An error's text with its causes, without the URL and with the key redacted.
    fn describe(&self, error: &reqwest::Error) -> String {
        describe(error, self.key.as_ref())
    }

    /// The usage a success body states, when it can be read.
    fn usage(&self, body: &Value) -> Option<Usage> {
        self.usage_of(body.get("usage")?)
    }

    /// [`Self::usage`] from the body's `usage` object.
    fn usage_of(&self, usage: &Value) -> Option<Usage> {
        match self.wire {
            Wire::OpenAiChat | Wire::OpenAiCompatible => crate::usage::openai_chat_usage(usage),
            Wire::OpenAiResponses => crate::usage::openai_responses_usage(usage),
            Wire::Anthropic => crate::usage::anthropic_usage(usage),
        }
        .ok()
    }

    /// A success body (the server answered, so the attempt is billed whatever it holds)
    /// read into a [`Response`]; one that cannot be used is
    /// [`ProviderError::Unusable`] with the usage it states. Also used for the bodies a
    /// batch API returns.
    pub fn parse_success(&self, bytes: &[u8]) -> Result<Response, ProviderError> {
        let body: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                return Err(self.unusable(
                    format!("response body is not JSON ({e}); {} bytes", bytes.len()),
                    None,
                    bytes,
                ));
            }
        };
        let read = match self.wire {
            Wire::OpenAiChat | Wire::OpenAiCompatible => openai_chat::read(&body),
            Wire::OpenAiResponses => openai_responses::read(&body),
            Wire::Anthropic => anthropic::read(&body),
        };
        match read {
            // the body is handed over whole as the raw reply
            Ok(reply) => Ok(reply.with_raw(body)),
            Err(e) => Err(self.unusable(e.to_string(), Some(&body), bytes)),
        }
    }

    fn unusable(&self, message: String, body: Option<&Value>, bytes: &[u8]) -> ProviderError {
        self.unusable_with(message, body.and_then(|b| self.usage(b)), bytes)
    }

    fn unusable_with(&self, message: String, usage: Option<Usage>, bytes: &[u8]) -> ProviderError {
        let kept = &bytes[..bytes.len().min(KEPT_BODY_BYTES)];
        ProviderError::Unusable {
            message: self.redact(&message),
            usage,
            raw: Some(self.redact(&String::from_utf8_lossy(kept))),
            batch: None,
        }
    }

    /// The wire format.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    fn redact(&self, text: &str) -> String {
        redact(self.key.as_ref(), text)
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

    fn endpoint(&self) -> Option<String> {
        Some(self.url())
    }

    async fn generate(&self, request: &Request) -> Result<Response, ProviderError> {
        let http = self.build(request)?;
        let mut reply = self
            .client
            .execute(http)
            .await
            .map_err(|e| self.transport(e))?;
        let status = reply.status();
        if status.is_redirection() {
            let host = reply
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(location_host)
                .unwrap_or_else(|| "no Location".to_string());
            return Err(ProviderError::Config(format!(
                "HTTP {} redirect to {host}; redirects are not followed, so the key and the prompt are never sent on (set base_url to the final address)",
                status.as_u16()
            )));
        }
        // an error status's headers say how long to wait; a success's are not read
        let error_headers = (!status.is_success()).then(|| reply.headers().clone());
        let mut bytes = Vec::new();
        let mut cut = false;
        loop {
            let chunk = match reply.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                // a success status means the server answered, so the attempt is billed
                // even though its body did not arrive whole (cut, too slow, endless)
                Err(e) if status.is_success() => {
                    let why = match self.transport(e) {
                        ProviderError::Timeout(t) => format!(
                            "the body of an HTTP {} reply did not arrive within the {}s timeout; {} bytes were read",
                            status.as_u16(),
                            t.as_secs_f64(),
                            bytes.len()
                        ),
                        other => format!(
                            "the body of an HTTP {} reply was cut after {} bytes ({other})",
                            status.as_u16(),
                            bytes.len()
                        ),
                    };
                    return Err(self.unusable(why, None, &bytes));
                }
                Err(e) => return Err(self.transport(e)),
            };
            if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                bytes.extend_from_slice(&chunk[..MAX_BODY_BYTES - bytes.len()]);
                cut = true;
                break;
            }
            bytes.extend_from_slice(&chunk);
        }
        if let Some(headers) = error_headers {
            return Err(self.redact_error(status_error(status.as_u16(), &headers, &bytes)));
        }
        if cut {
            return Err(self.unusable(
                format!("response body is larger than {MAX_BODY_BYTES} bytes; not read"),
                None,
                &bytes,
            ));
        }
        self.parse_success(&bytes)
    }

    fn body_bytes(&self, request: &Request) -> u64 {
        match self.wire {
            Wire::OpenAiChat => openai_chat::body_len(request, openai_chat::Dialect::OpenAi),
            Wire::OpenAiCompatible => {
                openai_chat::body_len(request, openai_chat::Dialect::Compatible)
            }
            Wire::OpenAiResponses | Wire::Anthropic => crate::wire::json_len(&self.body(request)),
        }
    }

    fn token_classes(&self) -> TokenClasses {
        match self.wire {
            // OpenAI caches every prompt past 1,024 tokens on its own; compatible
            // servers report cached tokens in the same field.
            Wire::OpenAiChat | Wire::OpenAiCompatible | Wire::OpenAiResponses => TokenClasses {
                cache_read: true,
                ..TokenClasses::default()
            },
            // baton marks the last user turn with a 5-minute breakpoint when caching is on.
            Wire::Anthropic => TokenClasses {
                cache_read: self.prompt_caching,
                cache_write_5m: self.prompt_caching,
                cache_write_1h: false,
            },
        }
    }
}

/// The headers of every request: the key marked sensitive, so that no `Debug` output
/// shows it (a key that is not a valid header value is not sent), `anthropic-version`
/// for Anthropic, and the JSON content type.
fn headers(wire: Wire, key: Option<&ApiKey>) -> HeaderMap {
    let mut h = HeaderMap::new();
    let mut secret = |name: &'static str, value: String| {
        if let Ok(mut v) = HeaderValue::from_str(&value) {
            v.set_sensitive(true);
            h.insert(HeaderName::from_static(name), v);
        }
    };
    match (wire, key) {
        (Wire::Anthropic, Some(k)) => secret("x-api-key", k.expose().to_string()),
        (_, Some(k)) => secret("authorization", format!("Bearer {}", k.expose())),
        (_, None) => {}
    }
    if wire == Wire::Anthropic {
        h.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(anthropic::VERSION),
        );
    }
    h.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h
}

/// An error's text with its causes, without the URL and with `key` redacted.
fn describe(error: &reqwest::Error, key: Option<&ApiKey>) -> String {
    let mut text = String::new();
    let mut cause: Option<&dyn std::error::Error> = Some(error);
    while let Some(e) = cause {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&e.to_string());
        cause = e.source();
    }
    redact(key, &text)
}

fn redact(key: Option<&ApiKey>, text: &str) -> String {
    match key {
        Some(k) => k.redact(text),
        None => text.to_string(),
    }
}

/// The host (and port) a `Location` header points to, with any credentials dropped;
/// a relative location is on the same host.
fn location_host(location: &str) -> String {
    match reqwest::Url::parse(location) {
        Ok(url) => match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("host {h}:{p}"),
            (Some(h), None) => format!("host {h}"),
            _ => "a location without a host".to_string(),
        },
        Err(_) => "a relative location on the same host".to_string(),
    }
}
