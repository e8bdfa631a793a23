//! The batch client against the in-memory service and against hostile servers, all over
//! real HTTP on 127.0.0.1.

mod hostile;
mod provider;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use baton_batch::{
    BatchApi, BatchClient, BatchItem, BatchService, BatchStatus, ItemResult, Outcome, ServiceConfig,
};
use baton_http::ApiKey;
use serde_json::{Value, json};

pub(crate) async fn serve(router: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{addr}/v1")
}

/// Answers like the direct routes would, echoing the item's first message.
pub(crate) fn answer(api: BatchApi, body: &Value) -> Result<Value, (u16, String)> {
    let text = body
        .pointer("/messages/0/content")
        .and_then(Value::as_str)
        .ok_or((400, "no first message".to_owned()))?;
    Ok(match api {
        BatchApi::Anthropic => json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": format!("echo: {text}")}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 2},
        }),
        _ => json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": body["model"], "created": 0,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": format!("echo: {text}")}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }),
    })
}

fn items(n: usize) -> Vec<BatchItem> {
    (0..n)
        .map(|i| BatchItem {
            custom_id: format!("ep{i}-t0"),
            body: json!({"model": "m", "max_tokens": 10,
                         "messages": [{"role": "user", "content": format!("hello {i}")}]}),
        })
        .collect()
}

pub(crate) async fn service(config: ServiceConfig) -> (Arc<BatchService>, String) {
    let service = BatchService::new(config, Arc::new(answer));
    let url = serve(service.router()).await;
    (service, url)
}

async fn wait(client: &BatchClient, id: &str) -> BatchStatus {
    let start = Instant::now();
    loop {
        let status = client.status(id).await.unwrap();
        if status.ended {
            return status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the batch never ended"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn client(api: BatchApi, url: &str) -> BatchClient {
    BatchClient::new(
        api,
        url,
        Some(ApiKey::new("sk-secret-123")),
        Duration::from_secs(5),
    )
    .unwrap()
}

#[tokio::test]
async fn both_apis_round_trip_every_item_once() {
    for api in [
        BatchApi::OpenAiChat,
        BatchApi::OpenAiResponses,
        BatchApi::Anthropic,
    ] {
        let (service, url) = service(ServiceConfig {
            turnaround: Duration::from_millis(50),
            ..ServiceConfig::default()
        })
        .await;
        let client = client(api, &url);
        let submitted = items(7);
        let id = client.submit(&submitted, "t0").await.unwrap();
        let running = client.status(&id).await.unwrap();
        assert!(!running.ended, "{api:?}: {running:?}");
        assert_eq!(running.total, 7);
        let ended = wait(&client, &id).await;
        assert_eq!(
            (ended.done, ended.total, ended.failed.clone()),
            (7, 7, None),
            "{api:?}"
        );
        let results = client.results(&id).await.unwrap();
        assert_eq!(results.len(), 7, "{api:?}");
        for (item, result) in submitted.iter().zip(&results) {
            assert_eq!(result.custom_id, item.custom_id);
            let Outcome::Succeeded(body) = &result.outcome else {
                panic!("{api:?}: {result:?}");
            };
            let text = body.to_string();
            let want = item
                .body
                .pointer("/messages/0/content")
                .unwrap()
                .as_str()
                .unwrap();
            assert!(text.contains(&format!("echo: {want}")), "{text}");
        }
        let stats = service.stats();
        assert_eq!((stats.batches, stats.items, stats.answered), (1, 7, 7));
        assert!(stats.submitted.values().all(|&n| n == 1));
    }
}

#[tokio::test]
async fn partial_failures_and_expiry_come_back_per_item() {
    for api in [BatchApi::OpenAiChat, BatchApi::Anthropic] {
        let (service, url) = service(ServiceConfig {
            turnaround: Duration::from_millis(10),
            fail_rate: 0.3,
            expire_rate: 0.2,
            seed: 7,
            ..ServiceConfig::default()
        })
        .await;
        let client = client(api, &url);
        let id = client.submit(&items(60), "t1").await.unwrap();
        wait(&client, &id).await;
        let results = client.results(&id).await.unwrap();
        assert_eq!(results.len(), 60, "{api:?}: every item has a line");
        let count = |f: fn(&ItemResult) -> bool| results.iter().filter(|r| f(r)).count();
        let ok = count(|r| matches!(r.outcome, Outcome::Succeeded(_)));
        let failed = count(|r| {
            matches!(
                r.outcome,
                Outcome::Errored {
                    status: Some(500),
                    ..
                }
            )
        });
        let expired = count(|r| matches!(r.outcome, Outcome::Expired));
        assert_eq!(ok + failed + expired, 60);
        assert!(
            failed > 0 && expired > 0 && ok > 0,
            "{api:?}: {ok} {failed} {expired}"
        );
        assert_eq!(
            service.stats().answered,
            ok as u64,
            "only answered items are billed"
        );
    }
}

#[tokio::test]
async fn a_cancelled_batch_reports_every_item_cancelled() {
    for api in [BatchApi::OpenAiResponses, BatchApi::Anthropic] {
        let (service, url) = service(ServiceConfig {
            turnaround: Duration::from_secs(3600),
            ..ServiceConfig::default()
        })
        .await;
        let client = client(api, &url);
        let id = client.submit(&items(3), "t2").await.unwrap();
        client.cancel(&id).await.unwrap();
        let ended = wait(&client, &id).await;
        assert!(
            ended.status == "cancelled" || ended.status == "ended",
            "{ended:?}"
        );
        let results = client.results(&id).await.unwrap();
        assert!(
            results.iter().all(|r| r.outcome == Outcome::Canceled),
            "{results:?}"
        );
        assert_eq!(service.stats().answered, 0);
    }
}

#[tokio::test]
async fn bad_ids_are_refused_before_anything_is_sent() {
    let (service, url) = service(ServiceConfig::default()).await;
    let client = client(BatchApi::Anthropic, &url);
    let mut bad = items(2);
    bad[1].custom_id = "has space".into();
    let err = client.submit(&bad, "t3").await.unwrap_err();
    assert!(err.to_string().contains("has space"), "{err}");
    assert_eq!(service.stats().batches, 0);
    let err = client.status("../../etc").await.unwrap_err();
    assert!(err.to_string().contains("not a batch"), "{err}");
}

#[tokio::test]
async fn hostile_servers_never_get_the_key_elsewhere_or_a_crash() {
    let router = Router::new()
        .route(
            "/v1/messages/batches",
            post(|| async {
                (
                    axum::http::StatusCode::TEMPORARY_REDIRECT,
                    [("location", "http://evil.example/steal")],
                )
                    .into_response()
            }),
        )
        .route(
            "/v1/messages/batches/{id}",
            get(|| async { "not json at all".into_response() }),
        )
        .route(
            "/v1/messages/batches/{id}/results",
            get(|| async { "x".repeat(17 << 20).into_response() }),
        )
        .route(
            "/v1/batches/{id}",
            get(|| async {
                (
                    axum::http::StatusCode::UNAUTHORIZED,
                    "bad key sk-secret-123",
                )
                    .into_response()
            }),
        );
    let url = serve(router).await;
    let anthropic = client(BatchApi::Anthropic, &url);
    let err = anthropic
        .submit(&items(1), "t4")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("evil.example") && err.contains("not followed"),
        "{err}"
    );
    let err = anthropic
        .status("msgbatch_1")
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("not JSON"), "{err}");
    // a line over the cap is one unreadable line, not a lost download
    let results = anthropic.results("msgbatch_1").await.unwrap();
    assert!(results.is_empty(), "{results:?}");
    let openai = client(BatchApi::OpenAiChat, &url);
    let err = openai.status("batch_1").await.unwrap_err().to_string();
    assert!(
        err.contains("401") && !err.contains("sk-secret-123"),
        "{err}"
    );
}

/// The official SDKs' batch methods (`tests/sdk/check_batches.py`, on the interop venv)
/// accept every object the service returns, validated with their own models.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdks_drive_the_service() {
    let Some(venv) = baton_fixture::interop_venv() else {
        return;
    };
    let (service, url) = service(ServiceConfig {
        turnaround: Duration::from_millis(30),
        ..ServiceConfig::default()
    })
    .await;
    let root = url.trim_end_matches("/v1").to_owned();
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/check_batches.py");
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(venv.join("bin/python"))
            .arg(script)
            .arg(root)
            .output()
    })
    .await
    .expect("the script thread")
    .expect("the interop python starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the SDK checks failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("\n0 failed"), "{stdout}");
    assert_eq!(service.stats().batches, 6, "three batches per API");
}
