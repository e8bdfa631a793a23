//! The batching provider: a round of calls becomes one batch, replies are read like
//! direct ones, failed items come back as retryable errors, and a resumed process polls
//! the batches its journal holds instead of submitting their items again.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::response::IntoResponse;
use baton_batch::{
    BatchApi, BatchClient, BatchJournal, BatchOptions, BatchService, BatchingProvider,
    JournalBatch, MemoryJournal, ServiceConfig,
};
use baton_http::{HttpProvider, Wire};
use baton_models::{GenerateConfig, InDoubtBatch, Provider, ProviderError, Request};
use baton_types::Message;

use crate::{answer, serve, service};

/// A service whose batches end after `ms` milliseconds.
fn turnaround(ms: u64) -> ServiceConfig {
    ServiceConfig {
        turnaround: Duration::from_millis(ms),
        ..ServiceConfig::default()
    }
}

fn options() -> BatchOptions {
    BatchOptions {
        gather: Duration::from_millis(100),
        poll_min: Duration::from_millis(20),
        poll_max: Duration::from_millis(100),
        limits: BatchApi::OpenAiChat.limits(),
        retry: baton_models::BatchRetry::Round,
        deadline: Duration::from_secs(60),
    }
}

fn provider(
    url: &str,
    journal: Arc<dyn BatchJournal>,
    options: BatchOptions,
) -> Arc<BatchingProvider> {
    provider_for(BatchApi::OpenAiChat, url, journal, options)
}

fn provider_for(
    api: BatchApi,
    url: &str,
    journal: Arc<dyn BatchJournal>,
    options: BatchOptions,
) -> Arc<BatchingProvider> {
    let wire = match api {
        BatchApi::Anthropic => Wire::Anthropic,
        BatchApi::OpenAiChat => Wire::OpenAiChat,
        BatchApi::OpenAiResponses => Wire::OpenAiResponses,
    };
    let direct = Arc::new(HttpProvider::new(
        wire,
        url,
        None,
        reqwest::Client::new(),
        Duration::from_secs(5),
        false,
    ));
    let client = BatchClient::new(api, url, None, Duration::from_secs(5)).unwrap();
    Arc::new(BatchingProvider::new(direct, client, journal, options))
}

pub(crate) fn request(i: usize) -> Request {
    Request {
        model: "m".into(),
        messages: vec![Message::user(format!("hello {i}"))],
        config: GenerateConfig {
            max_tokens: Some(10),
            ..GenerateConfig::default()
        },
        seed: None,
        tools: Vec::new(),
        tool_choice: None,
    }
}

/// Lets the spawned journal writes run.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

async fn call_all(
    provider: &Arc<BatchingProvider>,
    n: usize,
) -> Vec<Result<String, ProviderError>> {
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let provider = Arc::clone(provider);
            tokio::spawn(async move {
                let reply = provider.generate(&request(i)).await?;
                // stored, as the runner would
                provider.acknowledge(reply.batch_id.as_deref().expect("a batched reply"));
                Ok(reply.text)
            })
        })
        .collect();
    let mut out = Vec::new();
    for call in calls {
        out.push(call.await.unwrap());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_of_calls_is_one_batch_read_like_direct_replies() {
    let (service, url) = service(turnaround(50)).await;
    let journal = Arc::new(MemoryJournal::default());
    let provider = provider(&url, journal.clone(), options());
    let replies = call_all(&provider, 25).await;
    for (i, reply) in replies.iter().enumerate() {
        assert_eq!(reply.as_ref().unwrap(), &format!("echo: hello {i}"));
    }
    let stats = service.stats();
    assert_eq!(
        (stats.batches, stats.items),
        (1, 25),
        "one round, one batch"
    );
    settle().await;
    assert!(
        journal.pending().is_empty(),
        "the batch is recorded as finished"
    );
    // Equal requests get distinct items.
    let twice = call_all(&provider, 2).await;
    assert!(twice.iter().all(Result::is_ok));
    assert_eq!(service.stats().items, 27);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_past_the_limits_is_split_and_failed_items_are_retryable_errors() {
    let (service, url) = service(ServiceConfig {
        fail_rate: 0.3,
        ..turnaround(20)
    })
    .await;
    let mut options = options();
    options.limits.requests = 10;
    let provider = provider(&url, Arc::new(MemoryJournal::default()), options);
    let replies = call_all(&provider, 25).await;
    assert_eq!(service.stats().batches, 3, "25 items at 10 per batch");
    let failed: Vec<_> = replies.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(!failed.is_empty() && failed.len() < 25, "{failed:?}");
    for error in failed {
        assert!(
            matches!(
                provider.classify(error),
                baton_models::RetryDecision::Transient { .. }
            ),
            "{error}"
        );
    }
}

#[test]
fn a_resumed_process_polls_the_journal_and_submits_nothing_twice() {
    let server_rt = tokio::runtime::Runtime::new().unwrap();
    let (service, url) = server_rt.block_on(service(turnaround(800)));
    let journal = Arc::new(MemoryJournal::default());

    // The first process submits a round and dies while the batch runs.
    let first = tokio::runtime::Runtime::new().unwrap();
    first.block_on(async {
        let provider = provider(&url, journal.clone(), options());
        for i in 0..6 {
            let provider = Arc::clone(&provider);
            tokio::spawn(async move { provider.generate(&request(i)).await });
        }
        // until the batch is recorded (a kill before that is the in-doubt case, below)
        while journal.pending().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    first.shutdown_background();
    assert_eq!(journal.pending().len(), 1, "submitted and not finished");

    // The second makes the same calls: they are answered from the recorded batch.
    let second = tokio::runtime::Runtime::new().unwrap();
    let replies = second.block_on(async {
        let provider = provider(&url, journal.clone(), options());
        let replies = call_all(&provider, 6).await;
        settle().await;
        replies
    });
    for (i, reply) in replies.iter().enumerate() {
        assert_eq!(reply.as_ref().unwrap(), &format!("echo: hello {i}"));
    }
    let stats = service.stats();
    assert_eq!(
        (stats.batches, stats.items),
        (1, 6),
        "nothing submitted twice"
    );
    assert!(journal.pending().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_finished_only_once_every_reply_it_handed_out_is_stored() {
    let (_service, url) = service(turnaround(20)).await;
    let journal = Arc::new(MemoryJournal::default());
    let provider = provider(&url, journal.clone(), options());
    let (r0, r1) = (request(0), request(1));
    let (a, b) = tokio::join!(provider.generate(&r0), provider.generate(&r1));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.batch_id, b.batch_id, "one round");
    let batch = a.batch_id.unwrap();
    provider.acknowledge(&batch);
    settle().await;
    assert_eq!(journal.pending().len(), 1, "one reply is not stored yet");
    provider.acknowledge(&batch);
    settle().await;
    assert!(journal.pending().is_empty());
}

/// A journal whose process dies right after the provider created a batch: the
/// submission is journaled, the batch id never is.
struct DiesAfterCreate(Arc<MemoryJournal>);

#[async_trait]
impl BatchJournal for DiesAfterCreate {
    async fn submitting(&self, token: &str, custom_ids: &[String]) -> Result<(), String> {
        self.0.submitting(token, custom_ids).await
    }
    async fn submitted(&self, _: &str, _: &str, _: &[String]) -> Result<(), String> {
        Err("killed".into())
    }
    async fn not_created(&self, token: &str) -> Result<(), String> {
        self.0.not_created(token).await
    }
    async fn finished(&self, batch_id: &str) -> Result<(), String> {
        self.0.finished(batch_id).await
    }
    async fn batches(&self) -> Result<Vec<JournalBatch>, String> {
        self.0.batches().await
    }
    async fn in_doubt(&self) -> Result<Vec<InDoubtBatch>, String> {
        self.0.in_doubt().await
    }
    async fn known_batch_ids(&self) -> Result<Vec<String>, String> {
        self.0.known_batch_ids().await
    }
}

/// A first process creates a batch and dies before recording its id; the second finds
/// it at the provider (OpenAI: by the token in its metadata; Anthropic: by its size and
/// time, past a batch of the same size the journal already knows) and collects it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_created_but_never_recorded_is_found_by_the_resume_not_submitted_again() {
    for api in [BatchApi::OpenAiChat, BatchApi::Anthropic] {
        let (service, url) = service(turnaround(300)).await;
        let journal = Arc::new(MemoryJournal::default());
        // An earlier, recorded batch of the same size, finished: not to be taken.
        let earlier = provider_for(api, &url, journal.clone(), options());
        let replies = call_all(&earlier, 6).await;
        assert!(replies.iter().all(Result::is_ok), "{api:?}: {replies:?}");
        settle().await;
        // Another client's batch of another size.
        let other = BatchClient::new(api, &url, None, Duration::from_secs(5)).unwrap();
        let foreign: Vec<_> = (0..2)
            .map(|i| baton_batch::BatchItem {
                custom_id: format!("foreign-{i}"),
                body: json_body(i),
            })
            .collect();
        other.submit(&foreign, "someone-else").await.unwrap();

        let dying = provider_for(
            api,
            &url,
            Arc::new(DiesAfterCreate(journal.clone())),
            options(),
        );
        let lost: Vec<_> = (100..106).map(request).collect();
        let outcomes = futures_all(&dying, &lost).await;
        assert!(
            outcomes
                .iter()
                .all(|r| matches!(r, Err(ProviderError::Config(_)))),
            "{api:?}: {outcomes:?}"
        );
        assert_eq!(journal.in_doubt().await.unwrap().len(), 1, "{api:?}");
        let before = service.stats();

        let resumed = provider_for(api, &url, journal.clone(), options());
        let replies = futures_all(&resumed, &lost).await;
        for (i, reply) in replies.iter().enumerate() {
            let reply = reply.as_ref().unwrap();
            assert_eq!(reply.text, format!("echo: hello {}", 100 + i), "{api:?}");
            resumed.acknowledge(reply.batch_id.as_deref().unwrap());
        }
        let after = service.stats();
        assert_eq!(
            (after.batches, after.items),
            (before.batches, before.items),
            "{api:?}: nothing submitted again"
        );
        assert!(journal.in_doubt().await.unwrap().is_empty(), "{api:?}");
        let settled = journal.submissions();
        assert!(
            settled
                .iter()
                .all(|(_, batch)| matches!(batch, Some(Some(_)))),
            "{api:?}: {settled:?}"
        );
    }
}

/// A submission journaled whose create request never reached the provider is settled
/// as not created, and its items go out again under new ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_the_provider_never_saw_is_settled_and_sent_once() {
    for api in [BatchApi::OpenAiChat, BatchApi::Anthropic] {
        let (service, url) = service(turnaround(20)).await;
        let journal = Arc::new(MemoryJournal::default());
        let ids: Vec<String> = (0..3)
            .map(|i| format!("{}-0", "a".repeat(48 - i)))
            .collect();
        journal.submitting("never-sent", &ids).await.unwrap();
        let resumed = provider_for(api, &url, journal.clone(), options());
        let replies = call_all(&resumed, 3).await;
        assert!(replies.iter().all(Result::is_ok), "{api:?}: {replies:?}");
        assert_eq!(
            journal.submissions()[0],
            ("never-sent".to_string(), Some(None)),
            "{api:?}"
        );
        assert_eq!((service.stats().batches, service.stats().items), (1, 3));
    }
}

/// A create request that made the batch but whose answer was lost (a gateway's 502)
/// is not retried blindly: the batch is looked up and collected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_whose_answer_is_lost_collects_the_batch_it_made() {
    for api in [BatchApi::OpenAiChat, BatchApi::Anthropic] {
        let service = BatchService::new(turnaround(20), Arc::new(answer));
        let router = service
            .router()
            .layer(axum::middleware::from_fn(lose_create_answers));
        let url = serve(router).await;
        let journal = Arc::new(MemoryJournal::default());
        let provider = provider_for(api, &url, journal.clone(), options());
        let replies = call_all(&provider, 4).await;
        assert!(replies.iter().all(Result::is_ok), "{api:?}: {replies:?}");
        let stats = service.stats();
        assert_eq!((stats.batches, stats.items), (1, 4), "{api:?}: {stats:?}");
        assert!(journal.in_doubt().await.unwrap().is_empty());
    }
}

/// Lets a create request through and answers 502 in place of the batch it made.
async fn lose_create_answers(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let create = request.method() == axum::http::Method::POST
        && matches!(request.uri().path(), "/v1/batches" | "/v1/messages/batches");
    let response = next.run(request).await;
    if create {
        return (axum::http::StatusCode::BAD_GATEWAY, "upstream timed out").into_response();
    }
    response
}

/// A request body either API takes.
fn json_body(i: usize) -> serde_json::Value {
    serde_json::json!({"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": format!("other {i}")}]})
}

/// Calls `requests` at once and gives each reply (unacknowledged).
async fn futures_all(
    provider: &Arc<BatchingProvider>,
    requests: &[Request],
) -> Vec<Result<baton_models::Response, ProviderError>> {
    let calls: Vec<_> = requests
        .iter()
        .cloned()
        .map(|r| {
            let provider = Arc::clone(provider);
            tokio::spawn(async move { provider.generate(&r).await })
        })
        .collect();
    let mut out = Vec::new();
    for call in calls {
        out.push(call.await.unwrap());
    }
    out
}

/// Two equal requests in one batch, and the process dies with only one reply stored:
/// the resumed call gets the other item, never the stored one a second time.
#[test]
fn a_resumed_call_gets_the_item_not_yet_stored_when_equal_requests_shared_a_batch() {
    let server_rt = tokio::runtime::Runtime::new().unwrap();
    let (service, url) = server_rt.block_on(service(turnaround(50)));
    let journal = Arc::new(MemoryJournal::default());

    let first = tokio::runtime::Runtime::new().unwrap();
    let items = first.block_on(async {
        let provider = provider(&url, journal.clone(), options());
        let (r, r2) = (request(7), request(7));
        let (a, b) = tokio::join!(provider.generate(&r), provider.generate(&r2));
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.batch_id, b.batch_id, "one round");
        // Only the first reply is stored before the process dies.
        journal.store_item(
            a.batch_id.as_deref().unwrap(),
            a.batch_item.as_deref().unwrap(),
        );
        (a.batch_item.unwrap(), b.batch_item.unwrap())
    });
    first.shutdown_background();
    assert_ne!(items.0, items.1);

    let second = tokio::runtime::Runtime::new().unwrap();
    let resumed = second.block_on(async {
        let provider = provider(&url, journal.clone(), options());
        provider.generate(&request(7)).await.unwrap()
    });
    assert_eq!(resumed.batch_item.as_deref(), Some(items.1.as_str()));
    assert_eq!(service.stats().items, 2, "nothing submitted again");
}
