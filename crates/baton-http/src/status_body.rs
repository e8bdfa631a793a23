//! Parsing a non-success response: its OpenAI or Anthropic error body and the delay
//! the server asks for become a [`ProviderError::Status`].
//!
//! The retry decision itself is [`baton_models::classify_default`]: 429 is a rate
//! limit, 408/409/5xx (529 overload included) are transient, and `insufficient_quota`,
//! `billing_error` and `enforced_spend_limit_reached` are never retried. This module
//! only makes sure those words reach `kind`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use baton_models::ProviderError;
use reqwest::header::HeaderMap;
use serde_json::Value;

/// Build the error for a non-success status from its headers and body.
///
/// `kind` is the body's error type and code joined by `:` when both exist and differ
/// (OpenAI: `type`, `code`; Anthropic: `error.type`, `error.details.error_code`), so
/// an `insufficient_quota` or `enforced_spend_limit_reached` anywhere is seen.
pub fn status_error(status: u16, headers: &HeaderMap, body: &[u8]) -> ProviderError {
    let (kind, message) = match serde_json::from_slice::<Value>(body) {
        Ok(v) => error_fields(&v),
        Err(_) => (String::new(), snippet(body)),
    };
    ProviderError::Status {
        status,
        kind,
        message,
        retry_after: retry_after(headers, SystemTime::now()),
    }
}

/// `(kind, message)` from an OpenAI or Anthropic error body.
fn error_fields(v: &Value) -> (String, String) {
    let err = v.get("error").unwrap_or(v);
    let text = |k: &str| err.get(k).and_then(Value::as_str).map(str::to_string);
    let mut kinds: Vec<String> = Vec::new();
    for k in [
        text("type"),
        text("code"),
        err.pointer("/details/error_code")
            .and_then(Value::as_str)
            .map(str::to_string),
    ]
    .into_iter()
    .flatten()
    {
        if !k.is_empty() && !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let message = match err.get("message") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => snippet(v.to_string().as_bytes()),
    };
    (kinds.join(":"), message)
}

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    match text.char_indices().nth(300) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

/// The delay the server asked for: `retry-after-ms` (milliseconds), else
/// `retry-after` in seconds or as an HTTP date (relative to `now`; a past date is zero).
///
/// Whatever the server sends, the result is at most
/// [`baton_models::defaults::MAX_RETRY_AFTER`]: a huge or infinite number is clamped to
/// it (never a panic), and a negative or unparsable one is ignored.
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let max = baton_models::defaults::MAX_RETRY_AFTER;
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let seconds = |secs: f64| {
        (secs >= 0.0).then(|| Duration::try_from_secs_f64(secs).map_or(max, |d| d.min(max)))
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok())
        && let Some(d) = seconds(ms / 1000.0)
    {
        return Some(d);
    }
    let value = header("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return seconds(secs);
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO).min(max))
}

/// Parse an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form RFC 9110 requires
/// senders to use.
fn parse_http_date(s: &str) -> Option<SystemTime> {
    let (_, rest) = s.split_once(", ")?;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else {
        return None;
    };
    let day: u32 = day.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| m == month)? as u32
        + 1;
    let year: i64 = year.parse().ok()?;
    let hms: Vec<u64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let [h, m, sec] = hms.as_slice() else {
        return None;
    };
    if !(1..=31).contains(&day) || *h > 23 || *m > 59 || *sec > 60 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + (*h * 3600 + *m * 60 + *sec) as i64;
    u64::try_from(secs)
        .ok()
        .map(|s| UNIX_EPOCH + Duration::from_secs(s))
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use baton_models::{RetryDecision, classify_default};
    use reqwest::header::HeaderValue;

    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn openai_rate_limit_and_quota_share_429_but_not_a_decision() {
        let rl = status_error(
            429,
            &headers(&[("retry-after-ms", "250"), ("retry-after", "1")]),
            br#"{"error": {"message": "Rate limit reached for gpt-4o-mini", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}"#,
        );
        assert_eq!(
            classify_default(&rl),
            RetryDecision::RateLimit {
                retry_after: Some(Duration::from_millis(250))
            }
        );
        assert!(
            rl.to_string().contains("requests:rate_limit_exceeded"),
            "{rl}"
        );
        let quota = status_error(
            429,
            &HeaderMap::new(),
            br#"{"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}"#,
        );
        assert_eq!(classify_default(&quota), RetryDecision::No);
    }

    #[test]
    fn anthropic_bodies_overload_billing_and_spend_limits() {
        let overloaded = status_error(
            529,
            &HeaderMap::new(),
            br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_1"}"#,
        );
        assert!(
            matches!(&overloaded, ProviderError::Status { kind, .. } if kind == "overloaded_error")
        );
        assert_eq!(
            classify_default(&overloaded),
            RetryDecision::Transient { retry_after: None }
        );
        let billing = status_error(
            402,
            &HeaderMap::new(),
            br#"{"type": "error", "error": {"type": "billing_error", "message": "credit balance too low"}}"#,
        );
        assert_eq!(classify_default(&billing), RetryDecision::No);
        let spend = status_error(
            429,
            &headers(&[("retry-after", "30")]),
            br#"{"type": "error", "error": {"type": "rate_limit_error", "message": "spend limit", "details": {"error_code": "enforced_spend_limit_reached"}}}"#,
        );
        assert_eq!(classify_default(&spend), RetryDecision::No);
        let rl = status_error(
            429,
            &headers(&[("retry-after", "30")]),
            br#"{"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}"#,
        );
        assert_eq!(
            classify_default(&rl),
            RetryDecision::RateLimit {
                retry_after: Some(Duration::from_secs(30))
            }
        );
    }

    #[test]
    fn non_json_bodies_keep_a_snippet() {
        let e = status_error(502, &HeaderMap::new(), b"<html>Bad Gateway</html>");
        assert!(e.to_string().contains("Bad Gateway"), "{e}");
        assert!(matches!(
            classify_default(&e),
            RetryDecision::Transient { .. }
        ));
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_and_http_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2.5")]), now),
            Some(Duration::from_millis(2500))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:50:07 GMT")]),
                now
            ),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Sun, 06 Nov 1994 08:00:00 GMT")]),
                now
            ),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        let max = baton_models::defaults::MAX_RETRY_AFTER;
        for huge in ["1e20", "inf", "3600", "1e400"] {
            assert_eq!(
                retry_after(&headers(&[("retry-after", huge)]), now),
                Some(max),
                "{huge}"
            );
        }
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "1e300")]), now),
            Some(max)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")]), now), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "NaN")]), now), None);
        assert_eq!(
            retry_after(
                &headers(&[("retry-after", "Fri, 01 Jan 9999 00:00:00 GMT")]),
                now
            ),
            Some(max)
        );
        assert_eq!(retry_after(&HeaderMap::new(), now), None);
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(UNIX_EPOCH)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(1_835_438_400))
        );
    }
}
