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
/// left alone. The one rule for keeping a key out of what is stored or sent on; a
/// caller that redacts many texts keeps a [`Secrets`] instead.
pub fn redact_secrets(text: &str, secrets: &[String]) -> String {
    Secrets::new(secrets.iter().cloned())
        .redact(text)
        .into_owned()
}

/// Keys to redact, prepared once: each key's first byte and the base64 characters that
/// encode it, searched for with `memchr`'s vectorized scans, so a text that holds no
/// form of any key is read a few times at memory speed and given back borrowed
/// (`redact_secrets` built the base64 forms per text and tried an escaped match at every
/// character of a text holding a `\` or `%`: 13 % of `baton run`'s CPU in `bench
/// harness --latency-ms 0`).
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    keys: Vec<Key>,
    /// The bytes of the shortest key: no form of a key is shorter than the key (escapes
    /// lengthen it, and its base64 cores are about 4/3 as long), so a shorter text holds
    /// none and is given back without a scan (most strings of a reply's raw body are
    /// short: its object keys, ids, roles).
    shortest: usize,
}

#[derive(Debug, Clone)]
struct Key {
    text: String,
    /// The bytes a form of the key can start with: its own first byte, `\` (a `\u`
    /// escape) and `%` (percent-encoding).
    first: u8,
    /// The base64 characters that encode the key alone ([`base64_cores`]).
    cores: Vec<memchr::memmem::Finder<'static>>,
}

impl Secrets {
    /// The keys among `secrets` of at least [`MIN_SECRET_LEN`] characters (shorter ones
    /// are not redacted; [`redactable_secrets`] warns of them).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Secrets {
        let keys = secrets
            .into_iter()
            .filter(|s| s.chars().count() >= MIN_SECRET_LEN)
            .map(|text| Key {
                first: text.as_bytes()[0],
                cores: base64_cores(text.as_bytes())
                    .into_iter()
                    .map(|c| memchr::memmem::Finder::new(c.as_bytes()).into_owned())
                    .collect(),
                text,
            })
            .collect::<Vec<Key>>();
        let shortest = keys
            .iter()
            .map(|k| k.text.len())
            .min()
            .unwrap_or(usize::MAX);
        Secrets { keys, shortest }
    }

    /// Whether there is no key to redact.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// `text` with every form of every key replaced by `****` (see [`redact_secrets`]),
    /// borrowed when it holds none.
    pub fn redact<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        let mut out = std::borrow::Cow::Borrowed(text);
        if text.len() < self.shortest {
            return out;
        }
        for key in &self.keys {
            if let Some(redacted) = redact_escaped(&out, key) {
                out = redacted.into();
            }
            for core in &key.cores {
                if let Some(redacted) = replace_all(&out, core) {
                    out = redacted.into();
                }
            }
        }
        out
    }

    /// `text` with every form of every key replaced, reusing `text` when it holds none.
    pub fn redact_owned(&self, text: String) -> String {
        match self.redact(&text) {
            std::borrow::Cow::Borrowed(_) => text,
            std::borrow::Cow::Owned(redacted) => redacted,
        }
    }

    /// Redact every string of `value` in place, object keys included (a number that
    /// spells a key, possible only for a key of digits, becomes the string `****`).
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(s) => {
                if let std::borrow::Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Number(n) => {
                if self
                    .keys
                    .iter()
                    .any(|k| k.text.bytes().all(|b| b.is_ascii_digit()))
                {
                    let text = n.to_string();
                    if let std::borrow::Cow::Owned(r) = self.redact(&text) {
                        *value = Value::String(r);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                let renamed = map
                    .keys()
                    .any(|k| matches!(self.redact(k), std::borrow::Cow::Owned(_)));
                if renamed {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(k, v)| (self.redact(&k).into_owned(), v))
                        .collect();
                }
                map.values_mut().for_each(|v| self.redact_json(v));
            }
            Value::Null | Value::Bool(_) => {}
        }
    }
}

/// `text` with every occurrence of `core` replaced by `****`, when it holds one.
fn replace_all(text: &str, core: &memchr::memmem::Finder<'_>) -> Option<String> {
    let mut found = core.find_iter(text.as_bytes()).peekable();
    found.peek()?;
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut last_end = 0;
    for at in found {
        // non-overlapping, left to right, as str::replace
        if at < last_end {
            continue;
        }
        out.push_str(&text[copied..at]);
        out.push_str("****");
        last_end = at + core.needle().len();
        copied = last_end;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// `text` with every occurrence of `key` replaced, each of its characters matched as
/// itself, as a `\uXXXX` escape or as its percent-encoded UTF-8 bytes, when it holds
/// one. A form can only start at the key's first byte, a `\` or a `%`: only those
/// places are tried.
fn redact_escaped(text: &str, key: &Key) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(found) = memchr::memchr3(key.first, b'\\', b'%', &bytes[i..]) {
        let at = i + found;
        let candidate = could_start(&bytes[at..], key).then(|| match_at(&text[at..], &key.text));
        match candidate.flatten() {
            Some(len) => {
                let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
                o.push_str(&text[copied..at]);
                o.push_str("****");
                i = at + len;
                copied = i;
            }
            None => i = at + 1,
        }
        if i >= bytes.len() {
            break;
        }
    }
    let mut out = out?;
    out.push_str(&text[copied..]);
    Some(out)
}

/// Whether a form of `key` can start at `t[0]` (one of the key's first byte, `\` and
/// `%`), from the byte after it alone: the key's own first byte must be followed by its
/// second byte or an escape, a `\` by `u`. Most places the scan stops at fail this (the
/// first byte of an `sk-…` key is every `s` of a text), without trying a match.
fn could_start(t: &[u8], key: &Key) -> bool {
    let next = t.get(1).copied();
    let own = t[0] == key.first
        && next.is_some_and(|b| b == key.text.as_bytes()[1] || b == b'\\' || b == b'%');
    own || (t[0] == b'\\' && next == Some(b'u')) || t[0] == b'%'
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
        // the second character escaped: a form that starts with the key's own first byte
        for second in ["\\u006b", "\\u006B", "%6b", "%6B"] {
            let form = format!("s{second}{}", &KEY[2..]);
            assert_eq!(redact(&format!("ss {form}s")), "ss ****s", "{form}");
        }
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

    #[test]
    fn nothing_to_redact_is_given_back_borrowed_and_forms_after_other_characters_are_found() {
        let secrets = Secrets::new([KEY.to_string(), "short".to_string()]);
        let plain = "100% of \\u0041, é and sk-live-012345678";
        assert!(matches!(
            secrets.redact(plain),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            secrets.redact(&format!("é✓ {KEY}{KEY} ü%{KEY}")),
            "é✓ ******** ü%****"
        );
        assert_eq!(secrets.redact_owned(format!("[{KEY}]")), "[****]");
        // a second key is redacted too; a short one never is
        let two = Secrets::new([KEY.to_string(), "other-secret-42".to_string()]);
        assert_eq!(
            two.redact(&format!("{KEY} other-secret-42 short")),
            "**** **** short"
        );
        assert!(Secrets::new(["short".to_string()]).is_empty());
        // no form of a key is shorter than the key: its base64 cores are longer (31
        // characters at least for this 24-byte key), so the shortest key bounds the scan
        let cores = base64_cores(KEY.as_bytes());
        assert_eq!(cores.iter().map(String::len).min(), Some(31));
        assert_eq!(two.shortest, "other-secret-42".len());
        // a text exactly as long as a key is still scanned
        assert_eq!(two.redact("other-secret-42"), "****");
        assert_eq!(two.redact(KEY), "****");
        assert_eq!(two.redact(&cores[0]), "****");
    }

    #[test]
    fn a_json_body_is_redacted_in_its_strings_and_keys() {
        let secrets = Secrets::new([KEY.to_string()]);
        let mut body = serde_json::json!({
            "error": {"message": format!("bad key {KEY}"), "code": 401},
            KEY: [format!("x{KEY}y"), 1.5, null, true],
        });
        secrets.redact_json(&mut body);
        assert_eq!(
            body,
            serde_json::json!({
                "error": {"message": "bad key ****", "code": 401},
                "****": ["x****y", 1.5, null, true],
            })
        );
        // a key of digits can only show as a number
        let digits = Secrets::new(["1234567890123".to_string()]);
        let mut body = serde_json::json!({"n": 1234567890123_u64, "m": 7});
        digits.redact_json(&mut body);
        assert_eq!(body, serde_json::json!({"n": "****", "m": 7}));
    }
}
