//! Every injected fault is classified as the real one would be, and a `Model` either
//! retries through it to a response or stops with the right error.

use std::time::Duration;

use baton_http::FaultKind;
use baton_models::{ModelError, ProviderError, RetryDecision, RetryPolicy};

use crate::{fake_key, model, opening, provider, server, tasks};

const TIMEOUT: Duration = Duration::from_millis(400);

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_retries: 12,
        base_delay: Duration::from_millis(5),
        max_delay: Duration::from_millis(40),
        max_unusable_retries: 12,
    }
}

/// What the provider must say about one fault.
fn expect(kind: FaultKind, error: &ProviderError, decision: RetryDecision, wire: &str) {
    let ctx = format!("{wire}: {kind}: {error:?} -> {decision:?}");
    match kind {
        FaultKind::RateLimit => {
            assert!(
                matches!(error, ProviderError::Status { status: 429, .. }),
                "{ctx}"
            );
            let want = if wire == "anthropic" {
                Duration::from_secs(1)
            } else {
                Duration::from_millis(20)
            };
            assert_eq!(
                decision,
                RetryDecision::RateLimit {
                    retry_after: Some(want)
                },
                "{ctx}"
            );
        }
        FaultKind::InsufficientQuota => {
            assert!(
                matches!(error, ProviderError::Status { status: 429, .. }),
                "{ctx}"
            );
            assert_eq!(decision, RetryDecision::No, "{ctx}");
        }
        FaultKind::ServerError => {
            assert!(
                matches!(error, ProviderError::Status { status: 500, .. }),
                "{ctx}"
            );
            assert_eq!(
                decision,
                RetryDecision::Transient { retry_after: None },
                "{ctx}"
            );
        }
        FaultKind::Overloaded => {
            let want = if wire == "anthropic" { 529 } else { 503 };
            assert!(
                matches!(error, ProviderError::Status { status, kind, .. }
                    if *status == want && kind.contains("overloaded")),
                "{ctx}"
            );
            assert_eq!(
                decision,
                RetryDecision::Transient { retry_after: None },
                "{ctx}"
            );
        }
        FaultKind::Reset => {
            assert!(matches!(error, ProviderError::Connection(_)), "{ctx}");
            assert_eq!(
                decision,
                RetryDecision::Transient { retry_after: None },
                "{ctx}"
            );
        }
        FaultKind::Stall => {
            assert!(
                matches!(error, ProviderError::Timeout(t) if *t == TIMEOUT),
                "{ctx}"
            );
            assert_eq!(
                decision,
                RetryDecision::Transient { retry_after: None },
                "{ctx}"
            );
        }
        FaultKind::Malformed => {
            assert!(
                // billed, no usage to read in a truncated body
                matches!(error, ProviderError::Unusable { message, usage: None, raw: Some(_), .. }
                    if message.contains("not JSON")),
                "{ctx}"
            );
            assert_eq!(
                decision,
                RetryDecision::Transient { retry_after: None },
                "{ctx}"
            );
        }
        FaultKind::Empty => {
            assert!(
                // billed, with the usage the reply states
                matches!(error, ProviderError::Unusable { message, usage: Some(u), .. }
                    if message.contains("empty content") && u.total_input() > 0),
                "{ctx}"
            );
            assert_eq!(
                decision,
                RetryDecision::Transient { retry_after: None },
                "{ctx}"
            );
        }
    }
}

#[tokio::test]
async fn every_fault_is_classified_and_retried_or_not() {
    let task = &tasks()[1];
    let key = Some("BATON_IT_FAULTS_KEY");
    fake_key("BATON_IT_FAULTS_KEY", "sk-faults-not-a-real-key");
    for kind in FaultKind::ALL {
        // every request faults: the provider's error and decision
        let always = server(|c| {
            c.fault_rate = 1.0;
            c.faults = vec![kind];
            c.retry_after_ms = 20;
            c.stall_ms = 5_000;
        })
        .await;
        // half the requests fault: the model gets through, or stops at once
        let half = server(|c| {
            c.fault_rate = 0.5;
            c.faults = vec![kind];
            c.retry_after_ms = 20;
            c.stall_ms = 5_000;
            c.seed = 3;
        })
        .await;
        for wire in [
            "openai",
            "openai-responses",
            "anthropic",
            "openai-compatible",
        ] {
            let p = provider(&always, wire, key, TIMEOUT);
            let m = model(p.clone(), "lc");
            let req = m.request(opening(task), Some(1));
            let err = p
                .generate(&req)
                .await
                .expect_err(&format!("{wire}: {kind} must fail"));
            expect(kind, &err, p.classify(&err), wire);

            // a fault that must not be retried is tried once, on the always-failing server
            let target = if kind.retryable() { &half } else { &always };
            let m = model(provider(target, wire, key, TIMEOUT), "lc").with_retry(fast_retries());
            let result = m
                .generate(m.request(opening(task), Some(1)), 0)
                .await
                .result;
            if kind.retryable() {
                let c = result.unwrap_or_else(|e| panic!("{wire}: {kind}: {e}"));
                assert!(!c.response.text.is_empty());
            } else {
                let e = result.unwrap_err();
                assert!(
                    matches!(e, ModelError::Provider { attempts: 1, .. }),
                    "{wire}: {kind}: {e}"
                );
            }
        }
        let s = half.stats();
        assert!(s.faults.get(&kind).copied().unwrap_or(0) > 0 || !kind.retryable());
        always.shutdown().await.unwrap();
        half.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn fault_draws_repeat_with_the_seed() {
    let task = &tasks()[2];
    fake_key("BATON_IT_SEEDED_KEY", "sk-seeded-not-a-real-key");
    let mut runs = Vec::new();
    for _ in 0..2 {
        let srv = server(|c| {
            c.fault_rate = 0.3;
            c.faults = vec![
                FaultKind::ServerError,
                FaultKind::Malformed,
                FaultKind::Empty,
            ];
            c.seed = 42;
        })
        .await;
        let m = model(
            provider(&srv, "openai", Some("BATON_IT_SEEDED_KEY"), TIMEOUT),
            "lc",
        )
        .with_retry(fast_retries());
        let mut attempts = Vec::new();
        for seed in 0..12 {
            let c = m
                .generate(m.request(opening(task), Some(seed)), 0)
                .await
                .result
                .unwrap();
            attempts.push(c.attempts);
        }
        runs.push((attempts, srv.stats().faults));
        srv.shutdown().await.unwrap();
    }
    assert_eq!(runs[0], runs[1]);
    assert!(runs[0].0.iter().any(|a| *a > 1), "some call was retried");
}
