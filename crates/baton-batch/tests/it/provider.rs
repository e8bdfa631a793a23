//! The batching provider: a round of calls becomes one batch, replies are read like
//! direct ones, failed items come back as retryable errors, and a resumed process polls
//! the batches its journal holds instead of submitting their items again.

use std::sync::Arc;
use std::time::Duration;

use baton_batch::{
    BatchApi, BatchClient, BatchJournal, BatchOptions, BatchService, BatchingProvider,
    MemoryJournal, ServiceConfig,
};
use baton_http::{HttpProvider, Wire};
use baton_models::{GenerateConfig, Provider, ProviderError, Request};
use baton_types::Message;

use crate::{answer, serve};

fn options() -> BatchOptions {
    BatchOptions {
        gather: Duration::from_millis(100),
        poll_min: Duration::from_millis(20),
        poll_max: Duration::from_millis(100),
        limits: BatchApi::OpenAiChat.limits(),
        retry: baton_models::BatchRetry::Round,
    }
}

fn provider(
    url: &str,
    journal: Arc<dyn BatchJournal>,
    options: BatchOptions,
) -> Arc<BatchingProvider> {
    let direct = Arc::new(HttpProvider::new(
        Wire::OpenAiChat,
        url,
        None,
        reqwest::Client::new(),
        Duration::from_secs(5),
        false,
    ));
    let client = BatchClient::new(BatchApi::OpenAiChat, url, None, Duration::from_secs(5)).unwrap();
    Arc::new(BatchingProvider::new(direct, client, journal, options))
}

fn request(i: usize) -> Request {
    Request {
        model: "m".into(),
        messages: vec![Message::user(format!("hello {i}"))],
        config: GenerateConfig {
            max_tokens: Some(10),
            ..GenerateConfig::default()
        },
        seed: None,
        tools: Vec::new(),
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
    let service = BatchService::new(
        ServiceConfig {
            turnaround: Duration::from_millis(50),
            ..ServiceConfig::default()
        },
        Arc::new(answer),
    );
    let url = serve(service.router()).await;
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
    let service = BatchService::new(
        ServiceConfig {
            turnaround: Duration::from_millis(20),
            fail_rate: 0.3,
            ..ServiceConfig::default()
        },
        Arc::new(answer),
    );
    let url = serve(service.router()).await;
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
    let service = BatchService::new(
        ServiceConfig {
            turnaround: Duration::from_millis(800),
            ..ServiceConfig::default()
        },
        Arc::new(answer),
    );
    let url = server_rt.block_on(serve(service.router()));
    let journal = Arc::new(MemoryJournal::default());

    // The first process submits a round and dies while the batch runs.
    let first = tokio::runtime::Runtime::new().unwrap();
    first.block_on(async {
        let provider = provider(&url, journal.clone(), options());
        for i in 0..6 {
            let provider = Arc::clone(&provider);
            tokio::spawn(async move { provider.generate(&request(i)).await });
        }
        while service.stats().batches == 0 {
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
    let service = BatchService::new(
        ServiceConfig {
            turnaround: Duration::from_millis(20),
            ..ServiceConfig::default()
        },
        Arc::new(answer),
    );
    let url = serve(service.router()).await;
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
