//! Hostile servers: a redirect never carries the key, a plain-http host that is not
//! loopback never gets one, credentials in a base URL never print, an oversized body
//! is not read, and an absurd `retry-after` neither panics nor hangs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use baton_http::{HttpProviders, MAX_BODY_BYTES};
use baton_models::{ModelError, ProviderConfig, ProviderError, ProviderFactory, RetryBudget};
use baton_types::Message;

use crate::{fake_key, model};

const TIMEOUT: Duration = Duration::from_secs(10);
const SECRET: &str = "sk-hostile-SECRET-never-leaves";

/// Serve `app` on 127.0.0.1:0; returns its base URL.
async fn spawn(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/v1")
}

fn config(kind: &str, base_url: &str, var: &str) -> ProviderConfig {
    ProviderConfig {
        name: "m".into(),
        kind: kind.into(),
        model_id: "lc".into(),
        base_url: Some(base_url.into()),
        api_key_env: Some(var.into()),
        allow_http_with_key: false,
    }
}

#[tokio::test]
async fn a_redirect_never_carries_the_key_or_the_prompt() {
    // The "evil" server records every request and whether it carried a key.
    let seen = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let evil = {
        let seen = seen.clone();
        spawn(Router::new().fallback(any(move |headers: HeaderMap| {
            let seen = seen.clone();
            async move {
                seen.0.fetch_add(1, Ordering::SeqCst);
                let keyed = headers.contains_key(header::AUTHORIZATION)
                    || headers.contains_key("x-api-key");
                if keyed {
                    seen.1.fetch_add(1, Ordering::SeqCst);
                }
                StatusCode::OK
            }
        })))
        .await
    };
    let evil_host = evil
        .trim_start_matches("http://")
        .trim_end_matches("/v1")
        .to_string();
    for status in [301u16, 302, 307, 308] {
        let location = format!("{evil}/chat/completions");
        let redirect = spawn(Router::new().fallback(any(move || {
            let location = location.clone();
            async move {
                let mut r = StatusCode::from_u16(status).unwrap().into_response();
                r.headers_mut()
                    .insert(header::LOCATION, location.parse().unwrap());
                r
            }
        })))
        .await;
        for (kind, var) in [
            ("openai", "BATON_IT_REDIRECT_OPENAI"),
            ("anthropic", "BATON_IT_REDIRECT_ANTHROPIC"),
            ("openai-responses", "BATON_IT_REDIRECT_RESPONSES"),
        ] {
            fake_key(var, SECRET);
            let p = HttpProviders::new(TIMEOUT)
                .make(&config(kind, &redirect, var))
                .unwrap();
            let m = model(p, "lc");
            let g = m
                .generate(m.request(vec![Message::user("hello")], None), 0)
                .await;
            let err = g.result.unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains(&format!("HTTP {status} redirect")) && text.contains(&evil_host),
                "{kind}: {text}"
            );
            assert!(
                matches!(&err, ModelError::Provider { attempts: 1, .. }),
                "a redirect is not retried: {err:?}"
            );
            assert!(!text.contains(SECRET));
        }
    }
    assert_eq!(
        seen.0.load(Ordering::SeqCst),
        0,
        "no request reached the other host"
    );
    assert_eq!(seen.1.load(Ordering::SeqCst), 0, "the key never reached it");
}

#[test]
fn plain_http_with_a_key_is_for_loopback_only_unless_allowed() {
    fake_key("BATON_IT_PLAIN_HTTP", SECRET);
    let p = HttpProviders::new(TIMEOUT);
    let err = p
        .provider(&config(
            "openai",
            "http://models.example.org/v1",
            "BATON_IT_PLAIN_HTTP",
        ))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("allow_http_with_key") && err.contains("loopback"),
        "{err}"
    );
    for ok in [
        "http://localhost:8000/v1",
        "http://127.0.0.1:8000/v1",
        "http://[::1]:8000/v1",
        "https://models.example.org/v1",
    ] {
        assert!(
            p.provider(&config("openai", ok, "BATON_IT_PLAIN_HTTP"))
                .is_ok(),
            "{ok}"
        );
    }
    let mut allowed = config(
        "openai",
        "http://models.example.org/v1",
        "BATON_IT_PLAIN_HTTP",
    );
    allowed.allow_http_with_key = true;
    assert!(p.provider(&allowed).is_ok());
    // without a key, plain http anywhere is fine
    let mut keyless = config("openai-compatible", "http://models.example.org/v1", "x");
    keyless.api_key_env = None;
    assert!(p.provider(&keyless).is_ok());
}

#[tokio::test]
async fn credentials_in_a_base_url_never_print() {
    fake_key("BATON_IT_URL_CREDS", SECRET);
    let url = "https://alice:hunter2-url-secret@127.0.0.1:9/v1";
    let p = HttpProviders::new(Duration::from_millis(500))
        .provider(&config("openai", url, "BATON_IT_URL_CREDS"))
        .unwrap();
    let shown = format!("{p:?} {}", p.url());
    assert!(
        !shown.contains("hunter2") && !shown.contains("alice"),
        "{shown}"
    );
    assert!(shown.contains("https://****@127.0.0.1:9/v1"), "{shown}");
    let req = model(Arc::new(p), "lc").request(vec![Message::user("hi")], None);
    let bad = HttpProviders::new(TIMEOUT)
        .provider(&config(
            "openai",
            "ftp://bob:pw-url-secret@host/v1",
            "BATON_IT_URL_CREDS",
        ))
        .unwrap_err()
        .to_string();
    assert!(!bad.contains("pw-url-secret"), "{bad}");
    drop(req);
}

#[tokio::test]
async fn an_oversized_success_body_is_billed_but_not_read() {
    let big = spawn(Router::new().fallback(any(|| async {
        let body = vec![b' '; MAX_BODY_BYTES + 1024];
        (StatusCode::OK, body).into_response()
    })))
    .await;
    fake_key("BATON_IT_BIG_BODY", SECRET);
    let p = HttpProviders::new(TIMEOUT)
        .provider(&config("openai", &big, "BATON_IT_BIG_BODY"))
        .unwrap();
    let req = model(
        Arc::new(
            HttpProviders::new(TIMEOUT)
                .provider(&config("openai", &big, "BATON_IT_BIG_BODY"))
                .unwrap(),
        ),
        "lc",
    )
    .request(vec![Message::user("hi")], None);
    let err = baton_models::Provider::generate(&p, &req)
        .await
        .unwrap_err();
    match err {
        ProviderError::Unusable {
            message,
            usage,
            raw,
            ..
        } => {
            assert!(message.contains("larger than"), "{message}");
            assert_eq!(usage, None);
            assert!(raw.is_some_and(|r| r.len() <= 64 << 10));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_absurd_retry_after_neither_panics_nor_hangs() {
    let hits = Arc::new(AtomicU64::new(0));
    let server = {
        let hits = hits.clone();
        spawn(Router::new().fallback(any(move || {
            let hits = hits.clone();
            async move {
                hits.fetch_add(1, Ordering::SeqCst);
                let mut r: Response = (
                    StatusCode::TOO_MANY_REQUESTS,
                    r#"{"error":{"type":"requests","code":"rate_limit_exceeded","message":"slow down"}}"#,
                )
                    .into_response();
                r.headers_mut().insert("retry-after", "1e20".parse().unwrap());
                r
            }
        })))
        .await
    };
    fake_key("BATON_IT_RETRY_AFTER", SECRET);
    let p = HttpProviders::new(TIMEOUT)
        .make(&config("openai", &server, "BATON_IT_RETRY_AFTER"))
        .unwrap();
    let m = model(p, "lc").with_budget(RetryBudget::new(Duration::from_secs(60)));
    let t0 = std::time::Instant::now();
    let err = m
        .generate(m.request(vec![Message::user("hi")], None), 0)
        .await
        .result
        .unwrap_err();
    assert!(
        matches!(&err, ModelError::RetryBudget { wait, .. } if *wait == baton_models::defaults::MAX_RETRY_AFTER),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}
