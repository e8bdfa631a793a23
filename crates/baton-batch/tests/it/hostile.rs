//! A hostile or broken batch provider (issue 23): results that cannot be fetched or
//! parsed, downloads slower than the timeout, stuck, unknown and redirected batches, and
//! a server that echoes the key. A produced results file is the provider's bill: its
//! items are never submitted again, a bad line is one unusable billed item, and polling
//! always ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use baton_batch::{
    BatchApi, BatchClient, BatchFaults, BatchOptions, BatchService, BatchingProvider,
    MemoryJournal, Outcome, ResultSink, ServiceConfig,
};
use baton_http::{ApiKey, HttpProvider, Wire};
use baton_models::{BatchRetry, Provider, ProviderError, RetryDecision};

use crate::provider::request;
use crate::{answer, serve};

/// A service whose batches end after 20 ms, with `faults`.
fn faulty(faults: BatchFaults) -> ServiceConfig {
    ServiceConfig {
        turnaround: Duration::from_millis(20),
        faults,
        ..ServiceConfig::default()
    }
}

fn options(deadline: Duration) -> BatchOptions {
    BatchOptions {
        gather: Duration::from_millis(50),
        poll_min: Duration::from_millis(10),
        poll_max: Duration::from_millis(40),
        limits: BatchApi::OpenAiChat.limits(),
        retry: BatchRetry::Round,
        deadline,
    }
}

/// The batching provider for `api` at `url`, its calls timing out after `timeout`.
fn provider(
    api: BatchApi,
    url: &str,
    journal: Arc<MemoryJournal>,
    options: BatchOptions,
    timeout: Duration,
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
        timeout,
        false,
    ));
    let client = BatchClient::new(api, url, None, timeout).unwrap();
    Arc::new(BatchingProvider::new(direct, client, journal, options))
}

/// The service with `config` behind a real server; also counts its batch-status polls.
async fn start(config: ServiceConfig) -> (Arc<BatchService>, String, Arc<AtomicU64>) {
    let service = BatchService::new(config, Arc::new(answer));
    let polls = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&polls);
    let router = service.router().layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let counter = Arc::clone(&counter);
            async move {
                let path = request.uri().path().to_owned();
                let status = request.method() == axum::http::Method::GET
                    && (path.starts_with("/v1/batches/")
                        || (path.starts_with("/v1/messages/batches/")
                            && !path.ends_with("/results")));
                if status {
                    counter.fetch_add(1, Ordering::Relaxed);
                }
                next.run(request).await
            }
        },
    ));
    let url = serve(router).await;
    (service, url, polls)
}

/// A service with `faults` behind a real server, an empty journal, and the batching
/// provider for `api` in front of them (batches given up after `deadline`, each HTTP call
/// after `timeout`).
type Lab = (Arc<BatchService>, Arc<MemoryJournal>, Arc<BatchingProvider>);

async fn lab(api: BatchApi, faults: BatchFaults, deadline: Duration, timeout: Duration) -> Lab {
    let (service, url, _) = start(faulty(faults)).await;
    let journal = Arc::new(MemoryJournal::default());
    let provider = provider(api, &url, journal.clone(), options(deadline), timeout);
    (service, journal, provider)
}

/// Sends `n` different calls at once (one round) and gives each outcome, acknowledging
/// every billed reply as the runner does once it is stored.
async fn round(
    provider: &Arc<BatchingProvider>,
    n: usize,
) -> Vec<Result<baton_models::Response, ProviderError>> {
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let provider = Arc::clone(provider);
            tokio::spawn(async move {
                let result = provider.generate(&request(i)).await;
                match &result {
                    Ok(reply) => provider.acknowledge(reply.batch_id.as_deref().unwrap()),
                    Err(ProviderError::Unusable {
                        batch: Some(batch), ..
                    }) => provider.acknowledge(&batch.0),
                    Err(_) => {}
                }
                result
            })
        })
        .collect();
    let mut out = Vec::new();
    for call in calls {
        out.push(call.await.unwrap());
    }
    out
}

/// Lets the spawned journal writes run.
async fn settle() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_23_a_malformed_result_line_is_one_unusable_billed_item_not_a_lost_batch() {
    for api in [BatchApi::OpenAiChat, BatchApi::Anthropic] {
        let faults = BatchFaults {
            malformed_line: true,
            ..BatchFaults::default()
        };
        let (service, journal, provider) =
            lab(api, faults, Duration::from_secs(30), Duration::from_secs(5)).await;
        let outcomes = round(&provider, 6).await;
        let ok = outcomes.iter().filter(|o| o.is_ok()).count();
        let unusable: Vec<_> = outcomes
            .iter()
            .filter_map(|o| match o {
                Err(ProviderError::Unusable {
                    batch: Some(batch),
                    usage: None,
                    message,
                    ..
                }) => Some((batch.clone(), message.clone())),
                _ => None,
            })
            .collect();
        assert_eq!((ok, unusable.len()), (5, 1), "{api:?}: {outcomes:?}");
        assert!(
            unusable[0].1.contains("result line 1"),
            "{api:?}: {unusable:?}"
        );
        let stats = service.stats();
        assert_eq!(
            (stats.batches, stats.items, stats.answered),
            (1, 6, 6),
            "{api:?}: six billed, six handed out as billed"
        );
        settle().await;
        assert!(
            journal.pending().is_empty(),
            "{api:?}: every item was handed out and acknowledged: the batch is finished"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_23_five_failed_results_downloads_are_retried_and_nothing_is_resubmitted() {
    for api in [BatchApi::OpenAiChat, BatchApi::Anthropic] {
        let faults = BatchFaults {
            failed_downloads: 5,
            ..BatchFaults::default()
        };
        let (service, journal, provider) =
            lab(api, faults, Duration::from_secs(30), Duration::from_secs(5)).await;
        let outcomes = round(&provider, 6).await;
        for (i, o) in outcomes.iter().enumerate() {
            assert_eq!(
                o.as_ref().map(|r| r.text.as_str()).ok(),
                Some(format!("echo: hello {i}").as_str()),
                "{api:?}: {o:?}"
            );
        }
        let stats = service.stats();
        assert_eq!((stats.batches, stats.items), (1, 6), "{api:?}");
        settle().await;
        assert!(journal.pending().is_empty(), "{api:?}");
    }
}

/// Downloads that keep failing past every try: the callers get an error no retry
/// resubmits, the batch stays recorded, and a resumed process collects it.
#[test]
fn issue_23_results_that_cannot_be_downloaded_are_collected_by_the_resume_not_paid_again() {
    let server_rt = tokio::runtime::Runtime::new().unwrap();
    let faults = BatchFaults {
        failed_downloads: 12,
        ..BatchFaults::default()
    };
    let (service, url, _) = server_rt.block_on(start(faulty(faults)));
    let journal = Arc::new(MemoryJournal::default());
    let first = tokio::runtime::Runtime::new().unwrap();
    let outcomes = first.block_on(async {
        let provider = provider(
            BatchApi::Anthropic,
            &url,
            journal.clone(),
            options(Duration::from_secs(30)),
            Duration::from_secs(5),
        );
        let outcomes = round(&provider, 4).await;
        for o in &outcomes {
            let e = o.as_ref().unwrap_err();
            assert_eq!(provider.classify(e), RetryDecision::No, "{e}");
            let text = e.to_string();
            assert!(
                text.contains("could not be downloaded") && text.contains("--resume"),
                "{text}"
            );
        }
        outcomes
    });
    first.shutdown_background();
    assert_eq!(outcomes.len(), 4);
    assert_eq!(journal.pending().len(), 1, "the batch stays recorded");

    let second = tokio::runtime::Runtime::new().unwrap();
    let replies = second.block_on(async {
        let provider = provider(
            BatchApi::Anthropic,
            &url,
            journal.clone(),
            options(Duration::from_secs(30)),
            Duration::from_secs(5),
        );
        let replies = round(&provider, 4).await;
        settle().await;
        replies
    });
    for (i, reply) in replies.iter().enumerate() {
        assert_eq!(reply.as_ref().unwrap().text, format!("echo: hello {i}"));
    }
    let stats = service.stats();
    assert_eq!(
        (stats.batches, stats.items, stats.answered),
        (1, 4, 4),
        "collected, not paid again"
    );
    assert!(
        journal.pending().is_empty(),
        "collected: the batch is finished"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_23_a_download_slower_than_the_timeout_is_retried_and_nothing_is_resubmitted() {
    for api in [BatchApi::OpenAiChat, BatchApi::Anthropic] {
        let faults = BatchFaults {
            stalled_download: Some(Duration::from_millis(1500)),
            ..BatchFaults::default()
        };
        let (service, journal, provider) = lab(
            api,
            faults,
            Duration::from_secs(30),
            Duration::from_millis(400),
        )
        .await;
        let started = Instant::now();
        let outcomes = round(&provider, 8).await;
        assert!(outcomes.iter().all(Result::is_ok), "{api:?}: {outcomes:?}");
        assert!(
            started.elapsed() < Duration::from_millis(1400),
            "{api:?}: the stalled download was cut off, not waited for"
        );
        let stats = service.stats();
        assert_eq!((stats.batches, stats.items), (1, 8), "{api:?}");
        settle().await;
        assert!(journal.pending().is_empty(), "{api:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_23_polling_ends_on_a_stuck_an_unknown_and_a_redirected_batch() {
    let stuck = BatchFaults {
        stuck: true,
        ..BatchFaults::default()
    };
    let unknown = BatchFaults {
        not_found: true,
        ..BatchFaults::default()
    };
    let redirected = BatchFaults {
        redirect: true,
        ..BatchFaults::default()
    };
    for api in [BatchApi::OpenAiChat, BatchApi::Anthropic] {
        for (faults, says) in [
            (stuck.clone(), "batch_deadline"),
            (unknown.clone(), "404"),
            (redirected.clone(), "redirect"),
        ] {
            let (service, journal, provider) = lab(
                api,
                faults,
                Duration::from_millis(800),
                Duration::from_secs(5),
            )
            .await;
            let started = Instant::now();
            let outcomes = round(&provider, 3).await;
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{api:?} {says}: polling ended"
            );
            for o in &outcomes {
                let e = o.as_ref().unwrap_err();
                let text = e.to_string();
                assert!(
                    text.contains(says) && text.contains("--resume"),
                    "{api:?}: {text}"
                );
                assert_eq!(provider.classify(e), RetryDecision::No, "{text}");
            }
            assert_eq!(service.stats().items, 3, "{api:?} {says}");
            assert_eq!(
                journal.pending().len(),
                1,
                "{api:?} {says}: left recorded for a resume"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_23_a_poll_interval_of_zero_is_not_a_busy_loop() {
    let stuck = BatchFaults {
        stuck: true,
        ..BatchFaults::default()
    };
    let (_service, url, polls) = start(faulty(stuck)).await;
    let mut options = options(Duration::from_millis(1000));
    options.poll_min = Duration::ZERO;
    options.poll_max = Duration::from_secs(60);
    let provider = provider(
        BatchApi::OpenAiChat,
        &url,
        Arc::new(MemoryJournal::default()),
        options,
        Duration::from_secs(5),
    );
    let outcomes = round(&provider, 1).await;
    assert!(outcomes[0].is_err());
    let polls = polls.load(Ordering::Relaxed);
    // 10 ms, doubling, over the 1 s deadline and its 100 ms grace
    assert!(polls <= 15, "{polls} polls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_23_a_key_echoed_in_a_batch_item_error_never_leaves_the_client() {
    let key = "sk-echoed-SECRET-4242";
    for api in [BatchApi::OpenAiChat, BatchApi::Anthropic] {
        let (_service, url, _) = start(ServiceConfig {
            fail_rate: 1.0,
            ..faulty(BatchFaults {
                echo_key: true,
                ..BatchFaults::default()
            })
        })
        .await;
        let client =
            BatchClient::new(api, &url, Some(ApiKey::new(key)), Duration::from_secs(5)).unwrap();
        let items: Vec<_> = (0..3)
            .map(|i| baton_batch::BatchItem {
                custom_id: format!("item-{i}"),
                body: serde_json::json!({"model": "m", "max_tokens": 10,
                    "messages": [{"role": "user", "content": "hi"}]}),
            })
            .collect();
        let id = client.submit(&items, "t").await.unwrap();
        while !client.status(&id).await.unwrap().ended {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let results = client.results(&id).await.unwrap();
        assert_eq!(results.len(), 3);
        for r in &results {
            let Outcome::Errored { message, .. } = &r.outcome else {
                panic!("{r:?}");
            };
            assert!(
                message.contains("****") && !message.contains(key),
                "{api:?}: {message}"
            );
        }
    }
}

/// Lines of one results file: a line naming no item, a line over the cap naming one,
/// a line of an item no one waits for, and good lines.
#[tokio::test]
async fn issue_23_each_result_line_is_read_on_its_own() {
    let good = |id: &str| {
        serde_json::json!({"custom_id": id, "result": {"type": "succeeded", "message": {"id": "m"}}})
            .to_string()
    };
    let huge = format!(
        "{{\"custom_id\": \"big-1\", \"result\": {{\"pad\": \"{}\"}}}}",
        "x".repeat(40 << 20)
    );
    let body = format!(
        "{}\nnot json at all\n{huge}\n{}\n{{\"custom_id\": \"ok-2\", \"result\": {{\"type\": \"surprise\"}}}}\n{}",
        good("ok-1"),
        good("stranger"),
        good("ok-3")
    );
    let router = Router::new().route(
        "/v1/messages/batches/{id}/results",
        get(move || {
            let body = body.clone();
            async move { body }
        }),
    );
    let url = serve(router).await;
    let client = BatchClient::new(BatchApi::Anthropic, &url, None, Duration::from_secs(5)).unwrap();
    struct Waiting(Vec<String>, Vec<(String, Outcome)>);
    impl ResultSink for Waiting {
        fn wants(&self, id: &str) -> bool {
            self.0.iter().any(|w| w == id)
        }
        fn take(&mut self, r: baton_batch::ItemResult) {
            self.1.push((r.custom_id, r.outcome));
        }
    }
    let mut sink = Waiting(
        ["ok-1", "big-1", "ok-2", "ok-3"].map(String::from).to_vec(),
        Vec::new(),
    );
    let read = client.results_each("msgbatch_1", &mut sink).await.unwrap();
    assert_eq!(
        (read.taken, read.skipped, read.unreadable),
        (4, 1, 1),
        "{read:?}"
    );
    assert!(
        read.first_unreadable.as_deref().unwrap().contains("line 2"),
        "{read:?}"
    );
    let kinds: Vec<(&str, &str)> = sink
        .1
        .iter()
        .map(|(id, o)| {
            let kind = match o {
                Outcome::Succeeded(_) => "ok",
                Outcome::Unreadable { billed: true, .. } => "unreadable",
                _ => "other",
            };
            (id.as_str(), kind)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("ok-1", "ok"),
            ("big-1", "unreadable"),
            ("ok-2", "unreadable"),
            ("ok-3", "ok")
        ]
    );
}

/// Under `batch_retry = "direct"` a call's retry is billed at the direct rates, so the
/// model reserves at those; under `"round"` every attempt pays batch rates.
#[tokio::test]
async fn issue_23_a_model_that_may_retry_directly_reserves_at_the_direct_rates() {
    let card = baton_models::PriceCard::embedded();
    let batch = card.get_batch("sim/lc").unwrap();
    let direct = card.get("sim/lc").unwrap();
    assert_ne!(batch, direct);
    for (retry, reserved) in [(BatchRetry::Direct, direct), (BatchRetry::Round, batch)] {
        let mut options = options(Duration::from_secs(30));
        options.retry = retry;
        let provider = provider(
            BatchApi::OpenAiChat,
            "http://127.0.0.1:9/v1",
            Arc::new(MemoryJournal::default()),
            options,
            Duration::from_secs(5),
        );
        assert_eq!(provider.retries_direct(), retry == BatchRetry::Direct);
        let model = baton_models::Model::new("lc", provider, "lc", "sim/lc", batch, 8)
            .with_direct_price(direct);
        assert_eq!(model.reservation_price(), &reserved, "{retry:?}");
        assert_eq!(
            model.price(),
            &batch,
            "replies from a batch pay batch rates"
        );
    }
}

/// Results are read no faster than they are stored: with callers slow to store their
/// replies, no more than [`baton_batch::UNSTORED_REPLIES`] of one batch are ever handed
/// out and unstored, so a results file of any size is never held in memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_23_results_are_read_no_faster_than_they_are_stored() {
    let (service, _, provider) = lab(
        BatchApi::OpenAiChat,
        BatchFaults::default(),
        Duration::from_secs(60),
        Duration::from_secs(5),
    )
    .await;
    let unstored = Arc::new(AtomicU64::new(0));
    let most = Arc::new(AtomicU64::new(0));
    let n = 1000;
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let (provider, unstored, most) = (
                Arc::clone(&provider),
                Arc::clone(&unstored),
                Arc::clone(&most),
            );
            tokio::spawn(async move {
                let reply = provider.generate(&request(i)).await.unwrap();
                let now = unstored.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // a slow store
                tokio::time::sleep(Duration::from_millis(400)).await;
                unstored.fetch_sub(1, Ordering::SeqCst);
                provider.acknowledge(reply.batch_id.as_deref().unwrap());
            })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }
    assert_eq!(service.stats().items, n as u64);
    let most = most.load(Ordering::SeqCst);
    assert!(
        most <= baton_batch::UNSTORED_REPLIES as u64 && most > 10,
        "{most} replies handed out and unstored at once"
    );
}

/// A batch left unfinished whose every item is stored (its replies came in, the process
/// stopped before recording it finished) is recorded finished by the next process,
/// not reported as running for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_23_a_batch_whose_every_item_is_stored_is_finished_on_resume() {
    let (service, url, _) = start(faulty(BatchFaults::default())).await;
    let journal = Arc::new(MemoryJournal::default());
    let ids = vec!["a-0".to_string(), "b-0".to_string()];
    baton_batch::BatchJournal::submitting(journal.as_ref(), "t", &ids)
        .await
        .unwrap();
    baton_batch::BatchJournal::submitted(journal.as_ref(), "t", "batch_old", &ids)
        .await
        .unwrap();
    for id in &ids {
        journal.store_item("batch_old", id);
    }
    assert_eq!(journal.pending().len(), 1);
    let provider = provider(
        BatchApi::OpenAiChat,
        &url,
        journal.clone(),
        options(Duration::from_secs(30)),
        Duration::from_secs(5),
    );
    let replies = round(&provider, 1).await;
    assert!(replies[0].is_ok(), "{replies:?}");
    settle().await;
    assert!(journal.pending().is_empty(), "{:?}", journal.pending());
    assert_eq!(service.stats().items, 1);
}
