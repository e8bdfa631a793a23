//! Credential-shaped strings, removed from everything baton prints about a document.
//!
//! A claim's output, a check's detail or the document itself may carry a secret (a check
//! that `cat`s a `.env`, a key pasted into prose). Reports are shared, pasted into pull
//! requests and uploaded as SARIF, so every text, JSON and SARIF report goes through
//! [`redact`] first: provider keys (`sk-…`, `sk-ant-…`), GitHub, GitLab, Slack, AWS, Google,
//! npm and Stripe tokens, JSON web tokens, private key blocks, `Bearer`/`Basic`
//! authorizations, passwords in URLs (`scheme://user:password@host`), and the values of
//! `NAME=value` / `name: value` pairs whose name says key, token, secret, password,
//! credential or auth (`DATABASE_URL`, `SENTRY_DSN`, `DOCKER_AUTH_CONFIG`,
//! `NPM_CONFIG__AUTH` included). Each becomes `[redacted]`; what surrounds it is kept, so
//! a JSON string stays a JSON string.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

static TOKENS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
        r"|\bsk-(?:ant-|proj-|live_|test_)?[A-Za-z0-9_\-]{16,}",
        r"|\b(?:rk|pk|sk)_(?:live|test)_[A-Za-z0-9]{16,}",
        r"|\bgh[pousr]_[A-Za-z0-9]{20,}",
        r"|\bgithub_pat_[A-Za-z0-9_]{20,}",
        r"|\bglpat-[A-Za-z0-9_\-]{20,}",
        r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}",
        r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        r"|\bAIza[0-9A-Za-z_\-]{35}",
        r"|\bnpm_[A-Za-z0-9]{36}\b",
        r"|\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
    ))
    .expect("a valid built-in pattern")
});

/// `Bearer xyz`, `Basic xyz`: group 1 is the scheme.
static AUTHORIZATION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9_\-.~+/]{12,}=*"#)
        .expect("a valid built-in pattern")
});

/// `scheme://user:password@`: group 1 keeps the scheme and user.
static URL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@"'\\]+:)[^\s@/"'\\]+@"#)
        .expect("a valid built-in pattern")
});

/// A credential-named variable or key and its value: group 1 keeps the name and separator.
static NAMED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?i)(\b[A-Z0-9_.\-]*(?:api[_\-]?key|access[_\-]?key|secret|token|passw(?:or)?d|passwd"#,
        r#"|credential|_auth|auth[_\-]?token|authorization|private[_\-]?key|database_url|dsn)[A-Z0-9_.\-]*"#,
        r#"["']?\s*[:=]\s*["']?)([^\s"'\\,;&]{4,})"#,
    ))
    .expect("a valid built-in pattern")
});

/// A JSON `"auth": "…"` field (Docker and npm configs) and a whole `DOCKER_AUTH_CONFIG`
/// value: group 1 keeps the name.
static AUTH_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)("auth"\s*:\s*")[^"]{4,}|(\bDOCKER_AUTH_CONFIG\s*[=:]\s*)\S+"#)
        .expect("a valid built-in pattern")
});

/// `password secret` as `.netrc` writes it: group 1 keeps the word.
static NETRC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(\bpassword[ \t]+)([^\s"'\\,;&]{4,})"#).expect("a valid built-in pattern")
});

/// `value` with [`redact`] applied to every string in it (a JSON or SARIF report, before it
/// is written, so escaping cannot hide a secret from the patterns).
pub fn redact_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) => {
            if let Cow::Owned(clean) = redact(s) {
                *s = clean;
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_json),
        serde_json::Value::Object(map) => map.values_mut().for_each(redact_json),
        _ => {}
    }
}

/// `text` with every credential-shaped string replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if TOKENS.is_match(&out) {
        out = Cow::Owned(TOKENS.replace_all(&out, REDACTED).into_owned());
    }
    if AUTHORIZATION.is_match(&out) {
        out = Cow::Owned(
            AUTHORIZATION
                .replace_all(&out, format!("$1 {REDACTED}").as_str())
                .into_owned(),
        );
    }
    if URL_PASSWORD.is_match(&out) {
        out = Cow::Owned(
            URL_PASSWORD
                .replace_all(&out, format!("${{1}}{REDACTED}@").as_str())
                .into_owned(),
        );
    }
    if AUTH_FIELD.is_match(&out) {
        out = Cow::Owned(
            AUTH_FIELD
                .replace_all(&out, |c: &regex::Captures<'_>| match (c.get(1), c.get(2)) {
                    (Some(name), _) => format!("{}{REDACTED}", name.as_str()),
                    (_, Some(name)) => format!("{}{REDACTED}", name.as_str()),
                    _ => REDACTED.to_string(),
                })
                .into_owned(),
        );
    }
    if NETRC.is_match(&out) {
        out = Cow::Owned(
            NETRC
                .replace_all(&out, format!("${{1}}{REDACTED}").as_str())
                .into_owned(),
        );
    }
    if NAMED.is_match(&out) {
        out = Cow::Owned(
            NAMED
                .replace_all(&out, |c: &regex::Captures<'_>| {
                    if c[2].starts_with('[') || c[2] == *"[redacted]" {
                        c[0].to_string()
                    } else {
                        format!("{}{REDACTED}", &c[1])
                    }
                })
                .into_owned(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_shapes_are_redacted() {
        for (text, want) in [
            (
                "key sk-proj-abcdefghijklmnopqrstuv1234 end",
                "key [redacted] end",
            ),
            ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[redacted]"),
            ("AKIAABCDEFGHIJKLMNOP", "[redacted]"),
            (
                "DATABASE_URL=postgres://app:hunter2@db/prod",
                "DATABASE_URL=[redacted]",
            ),
            (
                "SENTRY_DSN=https://abc123@o1.ingest/1",
                "SENTRY_DSN=[redacted]",
            ),
            (
                "NPM_CONFIG__AUTH=dXNlcjpwYXNz",
                "NPM_CONFIG__AUTH=[redacted]",
            ),
            (
                r#"DOCKER_AUTH_CONFIG={"auths":{"r":{"auth":"dXNlcjpwYXNzd29yZA=="}}}"#,
                "DOCKER_AUTH_CONFIG=[redacted]",
            ),
            (
                r#"{"auths":{"r":{"auth":"dXNlcjpwYXNzd29yZA=="}}}"#,
                r#"{"auths":{"r":{"auth":"[redacted]"}}}"#,
            ),
            (
                "Authorization: Bearer abcdefghijklmnop",
                "Authorization: [redacted] [redacted]",
            ),
            (
                "clone https://dana:s3cretpass@git.example.com/x",
                "clone https://dana:[redacted]@git.example.com/x",
            ),
            (
                "machine api.example.com login dana password hunter22",
                "machine api.example.com login dana password [redacted]",
            ),
            ("\"password\": \"hunter22\"", "\"password\": \"[redacted]\""),
        ] {
            assert_eq!(redact(text), want, "{text}");
        }
        for plain in [
            "ls migrations/ | grep guest_orders",
            "commit a1b2c3d4e5f6 exists",
            "tokens: 12",
            "the session ended",
            "relative date \"this session\": write an ISO date (H3)",
            "auth: the login flow",
        ] {
            assert_eq!(redact(plain), plain);
        }
    }
}
