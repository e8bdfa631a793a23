//! The API key newtype: it never prints.

use std::fmt;

/// An API key. `Debug` and `Display` print `****`; the only way to the secret is
/// [`ApiKey::expose`], used where a header is built (and the header is marked
/// sensitive, so `reqwest` redacts it too).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wrap a key.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// Read a key from an environment variable; `None` when unset or blank.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .map(ApiKey)
    }

    /// The secret, for building a request header. Never log or store it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key, in any form a server may echo it in,
    /// replaced by `****` ([`baton_models::redact_secrets`]: a key shorter than
    /// [`baton_models::MIN_SECRET_LEN`] is left alone).
    pub fn redact(&self, text: &str) -> String {
        baton_models::redact_secrets(text, std::slice::from_ref(&self.0))
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(****)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("****")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_never_prints() {
        let key = ApiKey::new("sk-test-SECRET-123");
        assert_eq!(key.to_string(), "****");
        assert_eq!(format!("{key:?}"), "ApiKey(****)");
        assert_eq!(format!("{:?}", Some(&key)), "Some(ApiKey(****))");
        assert_eq!(
            key.redact("Incorrect API key provided: sk-test-SECRET-123."),
            "Incorrect API key provided: ****."
        );
    }
}
