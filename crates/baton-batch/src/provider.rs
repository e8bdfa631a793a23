//! A [`Provider`] that sends its calls through a batch API: calls that arrive together
//! (one turn round of every episode waiting on the model) go out as one batch.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use baton_http::HttpProvider;
use baton_models::{Provider, ProviderError, RetryDecision, TokenClasses};
use baton_models::{Request, Response};
use tokio::sync::oneshot;

use crate::{BatchClient, BatchError, BatchItem, Limits, Outcome, split};

/// Where submitted batches are recorded, so that a resumed run polls them instead of
/// submitting their items again. The store implements it for runs; every method must be
/// durable when it returns.
pub trait BatchJournal: Send + Sync {
    /// A batch was created: its id and its items' ids. Called before it is polled.
    fn submitted(&self, batch_id: &str, custom_ids: &[String]) -> Result<(), String>;
    /// Every item of the batch has been handed to its caller.
    fn finished(&self, batch_id: &str) -> Result<(), String>;
    /// Batches an earlier process submitted and did not finish: (id, items' ids).
    fn pending(&self) -> Vec<(String, Vec<String>)>;
}

/// A journal in memory (for tests and for runs that need no resume).
#[derive(Debug, Default)]
pub struct MemoryJournal {
    batches: Mutex<Vec<(String, Vec<String>, bool)>>,
}

impl BatchJournal for MemoryJournal {
    fn submitted(&self, batch_id: &str, custom_ids: &[String]) -> Result<(), String> {
        let mut batches = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        batches.push((batch_id.to_owned(), custom_ids.to_vec(), false));
        Ok(())
    }

    fn finished(&self, batch_id: &str) -> Result<(), String> {
        let mut batches = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        for batch in batches.iter_mut().filter(|b| b.0 == batch_id) {
            batch.2 = true;
        }
        Ok(())
    }

    fn pending(&self) -> Vec<(String, Vec<String>)> {
        let batches = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        batches
            .iter()
            .filter(|b| !b.2)
            .map(|b| (b.0.clone(), b.1.clone()))
            .collect()
    }
}

/// How rounds are gathered and polled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchOptions {
    /// A round is sent once no new call has arrived for this long.
    pub gather: Duration,
    /// The first poll interval; it doubles up to `poll_max`.
    pub poll_min: Duration,
    /// The longest poll interval.
    pub poll_max: Duration,
    /// Per-batch limits (a round larger than them becomes several batches).
    pub limits: Limits,
}

type Waiter = oneshot::Sender<Result<Outcome, ProviderError>>;

#[derive(Default)]
struct State {
    /// Calls waiting for the next round: (item, who waits).
    queue: Vec<(BatchItem, Waiter)>,
    /// A gatherer task is running for the queue.
    gathering: bool,
    /// Calls of this process per request fingerprint, for distinct ids of equal requests.
    seen: HashMap<String, u32>,
    /// Items of batches an earlier process submitted: id → batch id.
    resumed: HashMap<String, String>,
    /// Callers waiting on a resumed batch's item.
    resumed_waiters: HashMap<String, Vec<(String, Waiter)>>,
    /// Resumed batches being polled.
    polling: std::collections::HashSet<String>,
}

/// Batches the calls of one model (see the module docs). Wraps the model's direct
/// [`HttpProvider`] for request bodies and reply parsing, so a batched reply is read
/// exactly as a direct one (an unusable success body is billed and
/// [`ProviderError::Unusable`]). A failed, expired or cancelled item is an error the
/// [`baton_models::Model`] retries like a direct one, which puts it in a later round.
pub struct BatchingProvider {
    direct: Arc<HttpProvider>,
    client: BatchClient,
    journal: Arc<dyn BatchJournal>,
    options: BatchOptions,
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for BatchingProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchingProvider")
            .field("api", &self.client.api())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl BatchingProvider {
    /// Batches `direct`'s calls through `client`, recording batches in `journal` (whose
    /// pending batches are polled, not resubmitted).
    pub fn new(
        direct: Arc<HttpProvider>,
        client: BatchClient,
        journal: Arc<dyn BatchJournal>,
        options: BatchOptions,
    ) -> Self {
        let mut state = State::default();
        for (batch_id, ids) in journal.pending() {
            for id in ids {
                state.resumed.insert(id, batch_id.clone());
            }
        }
        BatchingProvider {
            direct,
            client,
            journal,
            options,
            state: Arc::new(Mutex::new(state)),
        }
    }

    fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
        state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The item id of a call: its request's fingerprint and how many equal requests this
    /// process made before it, so a resumed process gives the same ids to the same calls.
    fn custom_id(state: &mut State, request: &Request) -> String {
        let fingerprint = request.fingerprint();
        let n = state.seen.entry(fingerprint.clone()).or_default();
        let id = format!("{}-{n}", &fingerprint[..48]);
        *n += 1;
        id
    }

    fn enqueue(&self, item: BatchItem, waiter: Waiter) {
        let mut state = Self::lock(&self.state);
        if let Some(batch_id) = state.resumed.remove(&item.custom_id) {
            state
                .resumed_waiters
                .entry(batch_id.clone())
                .or_default()
                .push((item.custom_id, waiter));
            if state.polling.insert(batch_id.clone()) {
                let (client, journal, options, shared) = self.parts();
                tokio::spawn(async move {
                    // Callers that attach after the poll ends are not lost: the poll waits
                    // a gather window so those of the same round join first.
                    tokio::time::sleep(options.gather).await;
                    let (waiters, last) = {
                        let mut state = Self::lock(&shared);
                        state.polling.remove(&batch_id);
                        let waiters = state.resumed_waiters.remove(&batch_id).unwrap_or_default();
                        // Finished only once every item has gone to a caller.
                        let last = !state.resumed.values().any(|b| b == &batch_id);
                        (waiters, last)
                    };
                    let journal = last.then_some(journal.as_ref());
                    poll_and_deliver(&client, journal, &options, &batch_id, waiters).await;
                });
            }
            return;
        }
        state.queue.push((item, waiter));
        if state.gathering {
            return;
        }
        state.gathering = true;
        let (client, journal, options, shared) = self.parts();
        tokio::spawn(async move {
            // Wait until the queue stops growing for a gather window.
            let mut last = 0;
            loop {
                tokio::time::sleep(options.gather).await;
                let len = Self::lock(&shared).queue.len();
                if len == last {
                    break;
                }
                last = len;
            }
            let round = {
                let mut state = Self::lock(&shared);
                state.gathering = false;
                std::mem::take(&mut state.queue)
            };
            submit_round(&client, journal, &options, round).await;
        });
    }

    fn parts(
        &self,
    ) -> (
        BatchClient,
        Arc<dyn BatchJournal>,
        BatchOptions,
        Arc<Mutex<State>>,
    ) {
        (
            self.client.clone(),
            Arc::clone(&self.journal),
            self.options,
            Arc::clone(&self.state),
        )
    }
}

fn batch_error(e: &BatchError) -> ProviderError {
    match e {
        BatchError::Status {
            status, message, ..
        } => ProviderError::Status {
            status: *status,
            kind: String::new(),
            message: message.clone(),
            retry_after: None,
        },
        BatchError::InvalidId { .. } | BatchError::TooLarge { .. } => {
            ProviderError::Config(e.to_string())
        }
        BatchError::Http { .. } | BatchError::Protocol { .. } => {
            ProviderError::Connection(e.to_string())
        }
    }
}

/// Submits one round (split under the limits), records each batch, and polls them all.
async fn submit_round(
    client: &BatchClient,
    journal: Arc<dyn BatchJournal>,
    options: &BatchOptions,
    round: Vec<(BatchItem, Waiter)>,
) {
    let mut waiters: HashMap<String, Waiter> = HashMap::with_capacity(round.len());
    let mut items = Vec::with_capacity(round.len());
    for (item, waiter) in round {
        waiters.insert(item.custom_id.clone(), waiter);
        items.push(item);
    }
    let batches = match split(items, options.limits) {
        Ok(batches) => batches,
        Err(e) => {
            let error = batch_error(&e);
            for (_, waiter) in waiters {
                let _ = waiter.send(Err(error.clone()));
            }
            return;
        }
    };
    let mut polls = Vec::new();
    for batch in batches {
        let ids: Vec<String> = batch.iter().map(|i| i.custom_id.clone()).collect();
        let batch_waiters: Vec<(String, Waiter)> = ids
            .iter()
            .filter_map(|id| waiters.remove(id).map(|w| (id.clone(), w)))
            .collect();
        match client.submit(&batch).await {
            Ok(batch_id) => {
                if let Err(e) = journal.submitted(&batch_id, &ids) {
                    // Not recorded: a resume would not know it. Stop before polling, and
                    // say which batch is left running.
                    let error = ProviderError::Config(format!(
                        "batch {batch_id} was submitted but could not be recorded ({e}); cancel it or wait for it before resuming"
                    ));
                    for (_, waiter) in batch_waiters {
                        let _ = waiter.send(Err(error.clone()));
                    }
                    continue;
                }
                tracing::info!(batch = %batch_id, items = ids.len(), "batch submitted");
                let client = client.clone();
                let journal = Arc::clone(&journal);
                let options = *options;
                polls.push(tokio::spawn(async move {
                    let journal = Some(journal.as_ref());
                    poll_and_deliver(&client, journal, &options, &batch_id, batch_waiters).await;
                }));
            }
            Err(e) => {
                let error = batch_error(&e);
                for (_, waiter) in batch_waiters {
                    let _ = waiter.send(Err(error.clone()));
                }
            }
        }
    }
    for poll in polls {
        let _ = poll.await;
    }
}

/// Polls one batch with backoff until it ends, then hands each waiter its item's result,
/// and records the batch as finished in `journal` when given.
async fn poll_and_deliver(
    client: &BatchClient,
    journal: Option<&dyn BatchJournal>,
    options: &BatchOptions,
    batch_id: &str,
    waiters: Vec<(String, Waiter)>,
) {
    let mut interval = options.poll_min;
    let ended = loop {
        match client.status(batch_id).await {
            Ok(status) if status.ended => break Ok(status),
            Ok(_) => {}
            Err(e) => tracing::warn!(batch = %batch_id, "polling failed, trying again: {e}"),
        }
        tokio::time::sleep(interval).await;
        interval = (interval * 2).min(options.poll_max);
    };
    let results = match ended {
        Ok(status) if status.failed.is_some() => Err(ProviderError::Status {
            status: 400,
            kind: "batch_failed".into(),
            message: status.failed.unwrap_or_default(),
            retry_after: None,
        }),
        Ok(_) => client.results(batch_id).await.map_err(|e| batch_error(&e)),
        Err(e) => Err(e),
    };
    match results {
        Ok(results) => {
            let mut by_id: HashMap<String, Outcome> = results
                .into_iter()
                .map(|r| (r.custom_id, r.outcome))
                .collect();
            for (id, waiter) in waiters {
                let outcome = by_id.remove(&id).ok_or_else(|| {
                    ProviderError::Connection(format!(
                        "batch {batch_id} returned no result for item {id}"
                    ))
                });
                let _ = waiter.send(outcome);
            }
            if let Some(Err(e)) = journal.map(|j| j.finished(batch_id)) {
                tracing::warn!(batch = %batch_id, "could not record the batch as finished: {e}");
            }
        }
        Err(error) => {
            for (_, waiter) in waiters {
                let _ = waiter.send(Err(error.clone()));
            }
        }
    }
}

#[async_trait]
impl Provider for BatchingProvider {
    fn kind(&self) -> &str {
        self.direct.kind()
    }

    async fn generate(&self, request: &Request) -> Result<Response, ProviderError> {
        let custom_id = Self::custom_id(&mut Self::lock(&self.state), request);
        let item = BatchItem {
            custom_id,
            body: self.direct.body(request),
        };
        let (waiter, result) = oneshot::channel();
        self.enqueue(item, waiter);
        let outcome = result
            .await
            .map_err(|_| ProviderError::Connection("the batch task stopped".into()))??;
        match outcome {
            Outcome::Succeeded(body) => {
                let bytes = serde_json::to_vec(&body).expect("a JSON value serializes");
                self.direct.parse_success(&bytes)
            }
            Outcome::Errored { status, message } => Err(ProviderError::Status {
                status: status.unwrap_or(500),
                kind: "batch_item_errored".into(),
                message,
                retry_after: None,
            }),
            Outcome::Expired => Err(ProviderError::Connection(
                "the batch expired before this item was processed".into(),
            )),
            Outcome::Canceled => Err(ProviderError::Connection(
                "the batch was cancelled before this item was processed".into(),
            )),
        }
    }

    fn classify(&self, error: &ProviderError) -> RetryDecision {
        self.direct.classify(error)
    }

    fn token_classes(&self) -> TokenClasses {
        self.direct.token_classes()
    }
}
