//! [`HttpProviders`]: the [`ProviderFactory`] for the four HTTP provider kinds.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use baton_models::{Provider, ProviderConfig, ProviderFactory, redact_url_credentials};

use crate::HttpError;
use crate::key::ApiKey;
use crate::provider::{HttpProvider, Wire};

/// The default client timeout for one HTTP call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The default base URL and key variable of each kind (`openai-compatible` has
/// neither: its base URL is required and its key optional).
fn defaults(wire: Wire) -> (Option<&'static str>, Option<&'static str>) {
    match wire {
        Wire::OpenAiChat | Wire::OpenAiResponses => {
            (Some("https://api.openai.com/v1"), Some("OPENAI_API_KEY"))
        }
        Wire::Anthropic => (
            Some("https://api.anthropic.com/v1"),
            Some("ANTHROPIC_API_KEY"),
        ),
        Wire::OpenAiCompatible => (None, None),
    }
}

/// Builds HTTP providers for `openai`, `openai-responses`, `anthropic` and
/// `openai-compatible` models. Keys are read from the environment when a model is
/// built, so a missing variable fails the run before any call.
///
/// ```
/// use std::time::Duration;
/// use baton_http::HttpProviders;
/// let providers = HttpProviders::new(Duration::from_secs(60)).with_prompt_caching(false);
/// ```
#[derive(Debug)]
pub struct HttpProviders {
    timeout: Duration,
    prompt_caching: bool,
    keys_optional: bool,
    client: OnceLock<reqwest::Client>,
}

impl Default for HttpProviders {
    fn default() -> Self {
        HttpProviders::new(DEFAULT_TIMEOUT)
    }
}

impl HttpProviders {
    /// Providers whose calls time out after `timeout` (connect, send and read).
    pub fn new(timeout: Duration) -> Self {
        HttpProviders {
            timeout,
            prompt_caching: true,
            keys_optional: false,
            client: OnceLock::new(),
        }
    }

    /// Turn Anthropic prompt caching on (the default) or off.
    pub fn with_prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }

    /// Build providers even when a key variable is unset (for `--dry-run`, which makes
    /// no call): such a provider has no key. Never use it for a real run.
    pub fn keys_optional(mut self) -> Self {
        self.keys_optional = true;
        self
    }

    /// The client timeout.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    fn client(&self) -> Result<reqwest::Client, HttpError> {
        if let Some(c) = self.client.get() {
            return Ok(c.clone());
        }
        let c = reqwest::Client::builder()
            // a redirect would carry the key (reqwest strips only `authorization`) and
            // the prompt to another host: never follow one
            .redirect(reqwest::redirect::Policy::none())
            // retries belong to baton_models::Model, which counts and stores each
            // attempt; reqwest's own layer (which, built without HTTP/2, never finds a
            // protocol NACK to retry) would still copy every request's headers in case
            .retry(reqwest::retry::never().max_retries_per_request(0))
            .timeout(self.timeout)
            .connect_timeout(self.timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|e| HttpError::Client(e.to_string()))?;
        Ok(self.client.get_or_init(|| c).clone())
    }

    /// Build the provider for one model.
    pub fn provider(&self, config: &ProviderConfig) -> Result<HttpProvider, HttpError> {
        let wire = Wire::from_kind(&config.kind).ok_or_else(|| HttpError::Config {
            model: config.name.clone(),
            message: format!("unknown provider kind {:?}", config.kind),
        })?;
        let (default_url, default_var) = defaults(wire);
        let base_url =
            config
                .base_url
                .as_deref()
                .or(default_url)
                .ok_or_else(|| HttpError::Config {
                    model: config.name.clone(),
                    message: format!(
                        "{} models need base_url (e.g. http://localhost:8000/v1)",
                        wire.kind()
                    ),
                })?;
        let shown = redact_url_credentials(base_url);
        let url = reqwest::Url::parse(base_url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
            .ok_or_else(|| HttpError::Config {
                model: config.name.clone(),
                message: format!("base_url {shown:?} is not an http(s) URL"),
            })?;
        let key = match config.api_key_env.as_deref().or(default_var) {
            Some(var) => match ApiKey::from_env(var) {
                Some(k) => Some(k),
                None if self.keys_optional => None,
                None => {
                    return Err(HttpError::MissingKey {
                        model: config.name.clone(),
                        var: var.to_string(),
                    });
                }
            },
            None => None,
        };
        if key.is_some()
            && url.scheme() == "http"
            && !is_loopback(&url)
            && !config.allow_http_with_key
        {
            return Err(HttpError::Config {
                model: config.name.clone(),
                message: format!(
                    "base_url {shown:?} is plain http to a host that is not a loopback address, and the model sends an API key; use https, or set allow_http_with_key = true for this model to send it anyway"
                ),
            });
        }
        Ok(HttpProvider::new(
            wire,
            base_url,
            key,
            self.client()?,
            self.timeout,
            self.prompt_caching,
        ))
    }
}

/// Whether a URL's host is a loopback address (`localhost`, 127.0.0.0/8, `::1`).
fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl ProviderFactory for HttpProviders {
    fn kinds(&self) -> Vec<String> {
        [
            Wire::OpenAiChat,
            Wire::OpenAiResponses,
            Wire::Anthropic,
            Wire::OpenAiCompatible,
        ]
        .iter()
        .map(|w| w.kind().to_string())
        .collect()
    }

    fn make(&self, config: &ProviderConfig) -> Result<Arc<dyn Provider>, String> {
        self.provider(config)
            .map(|p| Arc::new(p) as Arc<dyn Provider>)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(kind: &str, var: Option<&str>, url: Option<&str>) -> ProviderConfig {
        ProviderConfig {
            name: "m".into(),
            kind: kind.into(),
            model_id: "x".into(),
            base_url: url.map(str::to_string),
            api_key_env: var.map(str::to_string),
            allow_http_with_key: false,
        }
    }

    #[test]
    fn a_missing_key_variable_is_named_before_any_call() {
        let p = HttpProviders::default();
        let err = p
            .provider(&config(
                "anthropic",
                Some("BATON_HTTP_UNIT_NO_SUCH_KEY"),
                None,
            ))
            .unwrap_err()
            .to_string();
        assert!(err.contains("BATON_HTTP_UNIT_NO_SUCH_KEY"), "{err}");
        let err = p
            .provider(&config("openai-compatible", None, None))
            .unwrap_err()
            .to_string();
        assert!(err.contains("base_url"), "{err}");
        // a compatible server without a key is fine
        let ok = p
            .provider(&config(
                "openai-compatible",
                None,
                Some("http://localhost:8000/v1/"),
            ))
            .unwrap();
        assert_eq!(ok.url(), "http://localhost:8000/v1/chat/completions");
        assert!(p.make(&config("gemini", None, None)).is_err());
    }
}
