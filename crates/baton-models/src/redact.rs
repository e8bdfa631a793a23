//! Keeping API keys out of what is stored: the one redaction rule.
//!
//! A server may echo the key it was sent, in a reply, an error message or an unusable
//! body, and not always verbatim: a JSON body may carry it `\u`-escaped, a URL
//! percent-encoded, a header dump base64-encoded. [`redact_secrets`] replaces every one
//! of those forms of a key by `****`.
//!
//! Only keys of at least [`MIN_SECRET_LEN`] characters are redacted. A local server is
//! often given a throwaway key such as `EMPTY`, `x` or `e`; replacing every `e` of every
//! stored reply would rewrite the replies (and change their scores) to hide nothing
//! secret. [`redactable_secrets`] drops such a key with a warning that it is not
//! redacted.

/// The shortest key that is redacted: a key shorter than this is not a secret worth
/// rewriting replies for (`EMPTY`, `x`, `dummy`), and is left in what is stored, with a
/// warning ([`redactable_secrets`]).
pub const MIN_SECRET_LEN: usize = 8;

/// The keys among `secrets` that [`redact_secrets`] redacts: trimmed, non-empty and at
/// least [`MIN_SECRET_LEN`] characters long. A shorter one is dropped with a warning
/// naming where it came from (`source`, for example the environment variable).
pub fn redactable_secrets<'a>(secrets: impl IntoIterator<Item = (&'a str, String)>) -> Vec<String> {
    let mut kept = Vec::new();
    for (source, s) in secrets {
        let s = s.trim().to_string();
        if s.is_empty() {
            continue;
        }
        let n = s.chars().count();
        if n < MIN_SECRET_LEN {
            tracing::warn!(
                "the key in {source} has {n} characters, fewer than {MIN_SECRET_LEN}: it is not redacted from what is stored (a key that short would rewrite ordinary text)"
            );
            continue;
        }
        kept.push(s);
    }
    kept
}

/// `text` with every one of `secrets` (key values) of at least [`MIN_SECRET_LEN`]
/// characters replaced by `****`, in any of the forms a server may echo it in: as is,
/// with any of its characters `\u`-escaped (JSON) or percent-encoded (URLs), and
/// base64-encoded (standard or URL-safe alphabet, at any alignment). Shorter keys are
/// left alone. The one rule for keeping a key out of what is stored or sent on, used by
/// [`crate::Model::with_secrets`] and by the runner for every text it stores.
pub fn redact_secrets(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets
        .iter()
        .filter(|s| s.chars().count() >= MIN_SECRET_LEN)
    {
        if out.contains('\\') || out.contains('%') {
            out = redact_escaped(&out, s);
        } else if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), "****");
        }
        for core in base64_cores(s.as_bytes()) {
            if out.contains(core.as_str()) {
                out = out.replace(core.as_str(), "****");
            }
        }
    }
    out
}

/// `text` with every occurrence of `secret` replaced, each of its characters matched
/// as itself, as a `\uXXXX` escape or as its percent-encoded UTF-8 bytes.
fn redact_escaped(text: &str, secret: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        match match_at(&text[i..], secret) {
            Some(len) => {
                out.push_str(&text[copied..i]);
                out.push_str("****");
                i += len;
                copied = i;
            }
            None => {
                i += 1;
                while i < bytes.len() && !text.is_char_boundary(i) {
                    i += 1;
                }
            }
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The length of the form of `secret` that `text` starts with, if it starts with one.
fn match_at(text: &str, secret: &str) -> Option<usize> {
    let t = text.as_bytes();
    let mut at = 0;
    for c in secret.chars() {
        let mut buf = [0u8; 4];
        let lit = c.encode_utf8(&mut buf).as_bytes();
        if t[at..].starts_with(lit) {
            at += lit.len();
        } else if let Some(n) = unicode_escape(&t[at..], c) {
            at += n;
        } else if let Some(n) = percent_encoded(&t[at..], lit) {
            at += n;
        } else {
            return None;
        }
    }
    Some(at)
}

/// The length of a `\uXXXX` escape of `c` (a surrogate pair for a character outside the
/// basic plane) at the start of `t`.
fn unicode_escape(t: &[u8], c: char) -> Option<usize> {
    let mut units = [0u16; 2];
    let mut at = 0;
    for unit in c.encode_utf16(&mut units) {
        let e = t.get(at..at + 6)?;
        if &e[..2] != b"\\u" {
            return None;
        }
        let hex = std::str::from_utf8(&e[2..]).ok()?;
        if u16::from_str_radix(hex, 16).ok()? != *unit {
            return None;
        }
        at += 6;
    }
    Some(at)
}

/// The length of `%XX` escapes of the bytes `lit` at the start of `t`.
fn percent_encoded(t: &[u8], lit: &[u8]) -> Option<usize> {
    let mut at = 0;
    for b in lit {
        let e = t.get(at..at + 3)?;
        if e[0] != b'%' {
            return None;
        }
        let hex = std::str::from_utf8(&e[1..]).ok()?;
        if u8::from_str_radix(hex, 16).ok()? != *b {
            return None;
        }
        at += 3;
    }
    Some(at)
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// The base64 characters that encode `secret` alone, at each of the three alignments it
/// can have inside a longer encoded text, in both alphabets: the characters whose six
/// bits all come from the key. Any base64 text that holds the key holds one of them.
fn base64_cores(secret: &[u8]) -> Vec<String> {
    let mut cores = Vec::new();
    for offset in 0..3usize {
        let mut bytes = vec![0u8; offset];
        bytes.extend_from_slice(secret);
        while bytes.len() % 3 != 0 {
            bytes.push(0);
        }
        // output character j holds bits 6j..6j+6; the key's bits are 8*offset..8*(offset+n)
        let first = (8 * offset).div_ceil(6);
        let end = (8 * (offset + secret.len())) / 6;
        for alphabet in [STANDARD, URL_SAFE] {
            let encoded = encode(&bytes, alphabet);
            if end > first && end - first >= MIN_SECRET_LEN {
                let core = encoded[first..end].to_string();
                if !cores.contains(&core) {
                    cores.push(core);
                }
            }
        }
    }
    cores
}

fn encode(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for k in 0..4 {
            out.push(char::from(alphabet[((n >> (18 - 6 * k)) & 63) as usize]));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-live-0123456789abcdef";

    fn redact(text: &str) -> String {
        redact_secrets(text, &[KEY.to_string()])
    }

    #[test]
    fn issue_32_a_short_key_is_never_redacted() {
        // See: issue 32 (the key `e` put `****` into 202 of 202 stored replies)
        let text = "not redacted: = 1235 and e";
        for short in ["e", "1", "EMPTY", "x", "sk-1234"] {
            assert_eq!(redact_secrets(text, &[short.to_string()]), text);
        }
        let kept = redactable_secrets([
            ("A", "e".to_string()),
            ("B", format!("  {KEY} ")),
            ("C", String::new()),
        ]);
        assert_eq!(kept, vec![KEY.to_string()]);
    }

    #[test]
    fn issue_32_escaped_forms_of_a_long_key_are_redacted() {
        // See: issue 32 (a `\u`-escaped key in an unusable body was stored recoverably)
        assert_eq!(redact(&format!("key {KEY}!")), "key ****!");
        let escaped: String = KEY
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        assert_eq!(
            redact(&format!("{{\"k\":\"{escaped}\"}}")),
            "{\"k\":\"****\"}"
        );
        // mixed: some characters escaped, upper-case hex
        let mixed = KEY.replace('s', "\\u0073").replace('-', "\\u002D");
        assert_eq!(redact(&format!("a {mixed} b")), "a **** b");
        let percent: String = KEY.bytes().map(|b| format!("%{b:02X}")).collect();
        assert_eq!(redact(&format!("?key={percent}&x")), "?key=****&x");
        let partly = KEY.replace('-', "%2d");
        assert_eq!(redact(&partly), "****");
        // base64, at every alignment, in both alphabets
        for prefix in ["", "a", "ab", "Bearer "] {
            for alphabet in [STANDARD, URL_SAFE] {
                let mut bytes = prefix.as_bytes().to_vec();
                bytes.extend_from_slice(KEY.as_bytes());
                bytes.extend_from_slice(b" tail");
                let encoded = encode(&bytes, alphabet);
                let out = redact(&encoded);
                assert!(out.contains("****"), "{prefix:?}: {encoded} -> {out}");
                for core in base64_cores(KEY.as_bytes()) {
                    assert!(!out.contains(&core));
                }
            }
        }
        // ordinary text, backslashes and percent signs included, is untouched
        let plain = "100% of \\u0041 and sk-live-012345678 is not the key";
        assert_eq!(redact(plain), plain);
    }
}
