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
//!
//! Shapes miss what is not shaped like a credential, and an encoded copy of anything
//! (`base64 -w0 .env`). So the values baton itself finds, in files that look like secrets
//! ([`crate::stage::secret_like`], read by [`remember_file`]) and in its own environment's
//! credential-named variables, are remembered ([`remember`]) and removed too: as written,
//! in hex (either case), URL-encoded, and in base64 (standard and URL-safe alphabets) at each
//! of the three byte alignments a value can have inside a larger encoded text, so the base64
//! of a whole `.env` loses every value in it. Encodings are only matched from 8 characters
//! up, so short values do not redact ordinary text. A line-wrapped encoding (`base64` without
//! `-w0`) that splits a value across lines is not matched.

use std::borrow::Cow;
use std::sync::{LazyLock, Mutex};

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

/// Remembered secret values and their encodings, longest first.
static KNOWN: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Credential-named variables of baton's own environment, remembered once.
static FROM_ENV: LazyLock<()> = LazyLock::new(|| {
    for (name, value) in std::env::vars() {
        let upper = name.to_ascii_uppercase();
        if ["KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL"]
            .iter()
            .any(|w| upper.contains(w))
        {
            remember(&value);
        }
    }
});

/// The shortest encoded form matched.
const MIN_ENCODED: usize = 8;
/// The shortest value remembered.
const MIN_VALUE: usize = 6;

/// Remember `value` as a secret: it, and its hex, URL-encoded and base64 forms, are redacted
/// from then on.
pub fn remember(value: &str) {
    let value = value.trim();
    if value.chars().count() < MIN_VALUE || value.starts_with('[') {
        return;
    }
    let mut forms = vec![value.to_string()];
    let bytes = value.as_bytes();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    forms.push(hex.to_ascii_uppercase());
    forms.push(hex);
    for upper in [true, false] {
        let url: String = bytes
            .iter()
            .map(
                |&b| match (b.is_ascii_alphanumeric() || b"-._~".contains(&b), upper) {
                    (true, _) => (b as char).to_string(),
                    (false, true) => format!("%{b:02X}"),
                    (false, false) => format!("%{b:02x}"),
                },
            )
            .collect();
        forms.push(url);
    }
    for alphabet in [BASE64, BASE64_URL] {
        for shift in 0..3usize {
            let mut padded = vec![0u8; shift];
            padded.extend_from_slice(bytes);
            let encoded = base64(&padded, alphabet);
            // Characters that mix the value with what comes before or after are dropped.
            let skip = [0, 2, 3][shift];
            let keep = (padded.len() * 8) / 6;
            if keep > skip {
                forms.push(encoded[skip..keep].to_string());
            }
        }
    }
    let Ok(mut known) = KNOWN.lock() else {
        return;
    };
    for form in forms {
        if form.len() >= MIN_ENCODED.min(value.len()) && !known.contains(&form) {
            known.push(form);
        }
    }
    known.sort_by_key(|f| std::cmp::Reverse(f.len()));
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const BASE64_URL: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `bytes` in base64 without padding (RFC 4648; a dozen lines rather than a dependency).
fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(alphabet[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

/// Remember the values in a file that looks like a secret (at most `limit` bytes read):
/// the value of every `NAME=value` or `name: value` line, the word after `password`, and
/// every word of 12 characters or more (key material, tokens).
pub fn remember_file(path: &std::path::Path, limit: u64) {
    use std::io::Read as _;
    let Ok(file) = std::fs::File::open(path) else {
        return;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return;
    }
    let mut text = String::new();
    let mut bytes = Vec::new();
    if file.take(limit).read_to_end(&mut bytes).is_err() {
        return;
    }
    text.push_str(&String::from_utf8_lossy(&bytes));
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with("-----") {
            continue;
        }
        let line = line.strip_prefix("export ").unwrap_or(line);
        if let Some(i) = line.find(['=', ':']) {
            let value = line[i + 1..].trim().trim_matches(['"', '\'', ',']);
            remember(value);
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            if (w.len() >= 12) || (i > 0 && words[i - 1].eq_ignore_ascii_case("password")) {
                remember(w.trim_matches(['"', '\'', ',']));
            }
        }
    }
}

/// `85/100`: a score, which is never a secret.
fn score_like(value: &str) -> bool {
    value
        .strip_suffix("/100")
        .is_some_and(|n| !n.is_empty() && n.len() <= 3 && n.bytes().all(|b| b.is_ascii_digit()))
}

fn known_values(text: &str) -> Option<String> {
    LazyLock::force(&FROM_ENV);
    let known = KNOWN.lock().ok()?;
    let hits: Vec<&String> = known.iter().filter(|k| text.contains(k.as_str())).collect();
    if hits.is_empty() {
        return None;
    }
    let mut out = text.to_string();
    for k in hits {
        out = out.replace(k.as_str(), REDACTED);
    }
    Some(out)
}

/// `text` with every credential-shaped string and every remembered secret value (in any of
/// its encodings) replaced by [`REDACTED`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(text);
    if let Some(clean) = known_values(&out) {
        out = Cow::Owned(clean);
    }
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
                    if c[2].starts_with('[') || c[2] == *"[redacted]" || score_like(&c[2]) {
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
    fn remembered_values_are_redacted_in_every_encoding() {
        let secret = "zq9-Remembered-Value-4471";
        remember(secret);
        let env = format!("A=1\nSTRIPE_HOOK={secret}\nB=2\n");
        for shift in ["", "x", "xy"] {
            let b64 = base64(format!("{shift}{env}").as_bytes(), BASE64);
            let red = redact(&b64);
            let back = red
                .split(REDACTED)
                .map(|p| p.len())
                .max()
                .unwrap_or_default();
            assert!(red.contains(REDACTED), "{shift:?}: {red}");
            assert!(back < b64.len(), "{red}");
        }
        let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        assert_eq!(redact(&hex), REDACTED);
        assert_eq!(redact(&hex.to_ascii_uppercase()), REDACTED);
        assert_eq!(
            base64(b"any carnal pleas", BASE64),
            "YW55IGNhcm5hbCBwbGVhcw"
        );
        assert_eq!(base64(b"\xfb\xff", BASE64_URL), "-_8");
        assert_eq!(redact("v=zq9-Remembered-Value-4471"), "v=[redacted]");
        assert_eq!(redact("plain text 85/100"), "plain text 85/100");
    }

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
