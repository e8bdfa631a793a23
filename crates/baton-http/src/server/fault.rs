//! Faults the simulated server injects, and how it draws them.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

use crate::HttpError;

/// One kind of injected fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// HTTP 429 rate limit with `retry-after` (and `retry-after-ms` on OpenAI routes).
    RateLimit,
    /// HTTP 429 that must not be retried: OpenAI `insufficient_quota`, Anthropic
    /// `enforced_spend_limit_reached`.
    InsufficientQuota,
    /// HTTP 500.
    ServerError,
    /// Overload: HTTP 529 `overloaded_error` on the Anthropic route, 503 on OpenAI's.
    Overloaded,
    /// The connection is closed without a response.
    Reset,
    /// No response until the configured stall time (past the client's timeout).
    Stall,
    /// HTTP 200 with a truncated JSON body.
    Malformed,
    /// HTTP 200 with a well-formed reply whose content is empty.
    Empty,
}

impl FaultKind {
    /// Every fault.
    pub const ALL: [FaultKind; 8] = [
        FaultKind::RateLimit,
        FaultKind::InsufficientQuota,
        FaultKind::ServerError,
        FaultKind::Overloaded,
        FaultKind::Reset,
        FaultKind::Stall,
        FaultKind::Malformed,
        FaultKind::Empty,
    ];

    /// Every fault a client should retry (all but `insufficient-quota`): the default
    /// list, under which a run completes.
    pub const RETRYABLE: [FaultKind; 7] = [
        FaultKind::RateLimit,
        FaultKind::ServerError,
        FaultKind::Overloaded,
        FaultKind::Reset,
        FaultKind::Stall,
        FaultKind::Malformed,
        FaultKind::Empty,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::RateLimit => "rate-limit",
            FaultKind::InsufficientQuota => "insufficient-quota",
            FaultKind::ServerError => "server-error",
            FaultKind::Overloaded => "overloaded",
            FaultKind::Reset => "reset",
            FaultKind::Stall => "stall",
            FaultKind::Malformed => "malformed",
            FaultKind::Empty => "empty",
        }
    }

    /// Whether a client should retry it.
    pub fn retryable(self) -> bool {
        self != FaultKind::InsufficientQuota
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FaultKind {
    type Err = HttpError;

    /// A fault name, or an alias: `429`, `quota`, `500`, `529`, `503`,
    /// `connection-reset`, `timeout`, `malformed-json`, `empty-content`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().to_ascii_lowercase().replace('_', "-");
        let kind = match s.as_str() {
            "rate-limit" | "429" => FaultKind::RateLimit,
            "insufficient-quota" | "quota" => FaultKind::InsufficientQuota,
            "server-error" | "500" => FaultKind::ServerError,
            "overloaded" | "529" | "503" => FaultKind::Overloaded,
            "reset" | "connection-reset" => FaultKind::Reset,
            "stall" | "timeout" => FaultKind::Stall,
            "malformed" | "malformed-json" => FaultKind::Malformed,
            "empty" | "empty-content" => FaultKind::Empty,
            _ => return Err(HttpError::UnknownFault(s)),
        };
        Ok(kind)
    }
}

/// A list of faults, written comma-separated (`rate-limit,reset,529`), or `all`,
/// `retryable` (the default) or `none`.
///
/// ```
/// use baton_http::{FaultKind, FaultList};
/// let list: FaultList = "429,reset".parse().unwrap();
/// assert_eq!(list.0, vec![FaultKind::RateLimit, FaultKind::Reset]);
/// assert_eq!(list.to_string(), "rate-limit,reset");
/// assert_eq!("retryable".parse::<FaultList>().unwrap(), FaultList::default());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultList(pub Vec<FaultKind>);

impl Default for FaultList {
    fn default() -> Self {
        FaultList(FaultKind::RETRYABLE.to_vec())
    }
}

impl FromStr for FaultList {
    type Err = HttpError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "all" => Ok(FaultList(FaultKind::ALL.to_vec())),
            "retryable" => Ok(FaultList::default()),
            "none" | "" => Ok(FaultList(Vec::new())),
            list => list
                .split(',')
                .filter(|p| !p.trim().is_empty())
                .map(FaultKind::from_str)
                .collect::<Result<Vec<_>, _>>()
                .map(FaultList),
        }
    }
}

impl fmt::Display for FaultList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|k| k.name()).collect();
        f.write_str(&names.join(","))
    }
}

/// The fault for the `occurrence`-th arrival (0-based) of a request with this
/// fingerprint: a pure function of the seed, the request and how often the same
/// request came before, so a run's faults do not depend on scheduling order and a
/// retried request gets a fresh draw.
pub(crate) fn draw(
    seed: u64,
    fingerprint: &[u8; 32],
    occurrence: u64,
    rate: f64,
    faults: &[FaultKind],
) -> Option<FaultKind> {
    if faults.is_empty() || rate <= 0.0 {
        return None;
    }
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    h.update(fingerprint);
    h.update(occurrence.to_le_bytes());
    let d = h.finalize();
    let x = u64::from_le_bytes(d[..8].try_into().expect("8 bytes"));
    let u = (x >> 11) as f64 / (1u64 << 53) as f64;
    if u >= rate {
        return None;
    }
    let pick = u64::from_le_bytes(d[8..16].try_into().expect("8 bytes"));
    Some(faults[(pick % faults.len() as u64) as usize])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_named() {
        for k in FaultKind::ALL {
            assert_eq!(k.name().parse::<FaultKind>().unwrap(), k);
        }
        assert_eq!(
            "all".parse::<FaultList>().unwrap().0.len(),
            FaultKind::ALL.len()
        );
        assert!(
            !FaultList::default()
                .0
                .contains(&FaultKind::InsufficientQuota)
        );
        let err = "429,bogus".parse::<FaultList>().unwrap_err().to_string();
        assert!(err.contains("bogus"), "{err}");
    }

    #[test]
    fn draws_are_deterministic_and_near_the_rate() {
        let faults = FaultKind::RETRYABLE;
        let fp = [7u8; 32];
        let a: Vec<_> = (0..2000).map(|n| draw(1, &fp, n, 0.2, &faults)).collect();
        let b: Vec<_> = (0..2000).map(|n| draw(1, &fp, n, 0.2, &faults)).collect();
        assert_eq!(a, b);
        let hits = a.iter().filter(|f| f.is_some()).count();
        assert!((330..470).contains(&hits), "{hits} of 2000 at rate 0.2");
        for k in faults {
            assert!(a.contains(&Some(k)), "{k} never drawn");
        }
        assert_eq!(draw(1, &fp, 0, 0.0, &faults), None);
        assert!((0..50).all(|n| draw(1, &fp, n, 1.0, &faults).is_some()));
    }
}
