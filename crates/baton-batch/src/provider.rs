//! A [`Provider`] that sends its calls through a batch API: calls that arrive together
//! (one turn round of every episode waiting on the model) go out as one batch.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use baton_http::HttpProvider;
use baton_models::{
    BatchJournal, BatchRetry, InDoubtBatch, JournalBatch, Provider, ProviderError, RetryDecision,
    TokenClasses,
};
use baton_models::{Request, Response};
use tokio::sync::{OnceCell, oneshot};

use crate::poll::{Ending, MIN_POLL, RESULT_TRIES, poll_and_deliver, record_finished};
use crate::{BatchClient, BatchError, BatchItem, Limits, Outcome, split};

/// A journal in memory (for tests and for runs that need no resume).
#[derive(Debug, Default)]
pub struct MemoryJournal {
    batches: Mutex<Vec<JournalBatch>>,
    submissions: Mutex<Vec<(InDoubtBatch, Option<Option<String>>)>>,
}

impl MemoryJournal {
    /// Batches submitted and not finished: (id, items' ids).
    pub fn pending(&self) -> Vec<(String, Vec<String>)> {
        let batches = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        batches
            .iter()
            .filter(|b| !b.finished)
            .map(|b| (b.batch_id.clone(), b.custom_ids.clone()))
            .collect()
    }

    /// Records that the reply of item `custom_id` of batch `batch_id` is stored, as a
    /// run's store records it with the call.
    pub fn store_item(&self, batch_id: &str, custom_id: &str) {
        let mut batches = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        for batch in batches.iter_mut().filter(|b| b.batch_id == batch_id) {
            batch.stored.push(custom_id.to_owned());
        }
    }

    /// Every submission: its token and, once settled, the batch it made (`None`: none).
    pub fn submissions(&self) -> Vec<(String, Option<Option<String>>)> {
        let submissions = self.submissions.lock().unwrap_or_else(|e| e.into_inner());
        submissions
            .iter()
            .map(|(s, settled)| (s.token.clone(), settled.clone()))
            .collect()
    }

    fn settle(&self, token: &str, batch_id: Option<&str>) -> Result<(), String> {
        let mut submissions = self.submissions.lock().unwrap_or_else(|e| e.into_inner());
        match submissions
            .iter_mut()
            .find(|(s, settled)| s.token == token && settled.is_none())
        {
            Some((_, settled)) => {
                *settled = Some(batch_id.map(str::to_owned));
                Ok(())
            }
            None => Err(format!(
                "submission {token} is not journaled or already settled"
            )),
        }
    }
}

#[async_trait]
impl BatchJournal for MemoryJournal {
    async fn submitting(&self, token: &str, custom_ids: &[String]) -> Result<(), String> {
        let mut submissions = self.submissions.lock().unwrap_or_else(|e| e.into_inner());
        submissions.push((
            InDoubtBatch {
                token: token.to_owned(),
                custom_ids: custom_ids.to_vec(),
                started_unix: now_unix(),
            },
            None,
        ));
        Ok(())
    }

    async fn submitted(
        &self,
        token: &str,
        batch_id: &str,
        custom_ids: &[String],
    ) -> Result<(), String> {
        self.settle(token, Some(batch_id))?;
        let mut batches = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        batches.push(JournalBatch {
            batch_id: batch_id.to_owned(),
            custom_ids: custom_ids.to_vec(),
            finished: false,
            stored: Vec::new(),
        });
        Ok(())
    }

    async fn not_created(&self, token: &str) -> Result<(), String> {
        self.settle(token, None)
    }

    async fn finished(&self, batch_id: &str) -> Result<(), String> {
        let mut batches = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        for batch in batches.iter_mut().filter(|b| b.batch_id == batch_id) {
            batch.finished = true;
        }
        Ok(())
    }

    async fn batches(&self) -> Result<Vec<JournalBatch>, String> {
        Ok(self
            .batches
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone())
    }

    async fn in_doubt(&self) -> Result<Vec<InDoubtBatch>, String> {
        let submissions = self.submissions.lock().unwrap_or_else(|e| e.into_inner());
        Ok(submissions
            .iter()
            .filter(|(_, settled)| settled.is_none())
            .map(|(s, _)| s.clone())
            .collect())
    }

    async fn known_batch_ids(&self) -> Result<Vec<String>, String> {
        let batches = self.batches.lock().unwrap_or_else(|e| e.into_inner());
        Ok(batches.iter().map(|b| b.batch_id.clone()).collect())
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
    /// Where a failed, expired or cancelled item's retry goes: a later round, or one
    /// direct request (whose reply has no batch id).
    pub retry: BatchRetry,
    /// How long a batch may run, from its creation (by the provider's clock when it
    /// says, else from when this process started polling it): past it the batch is
    /// asked to cancel, and if it still has not ended after a grace (a tenth of the
    /// deadline, ten minutes at most) its callers get an error, never a poll forever.
    pub deadline: Duration,
}

/// What a caller gets: the item's outcome, the batch it came from and the item's id.
pub(crate) type Delivered = Result<(Outcome, String, String), ProviderError>;
pub(crate) type Waiter = oneshot::Sender<Delivered>;

/// Characters of the request fingerprint an item id starts with.
const FINGERPRINT_CHARS: usize = 48;

#[derive(Default)]
pub(crate) struct State {
    /// Calls waiting for the next round: (item, who waits).
    queue: Vec<(BatchItem, Waiter)>,
    /// A gatherer task is running for the queue.
    gathering: bool,
    /// The next number per request fingerprint, so equal requests get distinct ids; it
    /// starts past every id the journal holds, so no id is ever submitted twice.
    next: HashMap<String, u32>,
    /// Unclaimed items of batches an earlier process submitted and did not finish, by
    /// request fingerprint: (item id, batch id), oldest first.
    resumed: HashMap<String, Vec<(String, String)>>,
    /// Callers waiting on a resumed batch's item, by batch id.
    resumed_waiters: HashMap<String, Vec<(String, Waiter)>>,
    /// Resumed batches being polled.
    polling: HashSet<String>,
    /// Per batch: answered items handed to callers and not yet acknowledged as stored
    /// ([`Provider::acknowledge`]), and whether every item has been handed out. A batch
    /// is journaled as finished only when both say so, so a crash between a reply's
    /// delivery and its commit leaves the batch unfinished and a resume fetches that
    /// reply again instead of paying for it twice.
    pub(crate) outstanding: HashMap<String, (usize, bool)>,
    /// Under [`BatchRetry::Direct`]: per request fingerprint, how many retries of failed
    /// items are owed a direct request (the [`baton_models::Model`]'s next attempt of
    /// that request takes one).
    direct: HashMap<String, u32>,
}

impl State {
    /// Takes in the journal: ids already used, and the unfinished batches' items. Gives
    /// the unfinished batches every item of which is stored: nothing is left to collect.
    fn load(&mut self, batches: Vec<JournalBatch>) -> Vec<String> {
        let mut complete = Vec::new();
        for batch in batches {
            let stored: HashSet<String> = batch.stored.into_iter().collect();
            if !batch.finished && batch.custom_ids.iter().all(|id| stored.contains(id)) {
                complete.push(batch.batch_id.clone());
            }
            for id in batch.custom_ids {
                let Some(fingerprint) = self.reserve(&id) else {
                    continue;
                };
                if !batch.finished && !stored.contains(&id) {
                    self.resumed
                        .entry(fingerprint)
                        .or_default()
                        .push((id, batch.batch_id.clone()));
                }
            }
        }
        complete
    }

    /// Never use item id `id` (`<fingerprint>-<n>`) again: its fingerprint's ids go on
    /// past `n`. Gives the fingerprint.
    fn reserve(&mut self, id: &str) -> Option<String> {
        let (fingerprint, n) = id.rsplit_once('-')?;
        let next = self.next.entry(fingerprint.to_owned()).or_default();
        if let Ok(n) = n.parse::<u32>() {
            *next = (*next).max(n.saturating_add(1));
        }
        Some(fingerprint.to_owned())
    }

    /// Whether any item of `batch_id` is still unclaimed.
    fn unclaimed(&self, batch_id: &str) -> bool {
        self.resumed
            .values()
            .any(|items| items.iter().any(|(_, b)| b == batch_id))
    }
}

/// Batches the calls of one model (see the module docs). Wraps the model's direct
/// [`HttpProvider`] for request bodies and reply parsing, so a batched reply is read
/// exactly as a direct one (an unusable success body is billed and
/// [`ProviderError::Unusable`]), and carries its batch id. A failed, expired or
/// cancelled item is an error the [`baton_models::Model`] retries like a direct one:
/// with [`BatchRetry::Round`] the retry goes into a later round under a new id; with
/// [`BatchRetry::Direct`] it is one request to the direct provider (a transient failure
/// of that request is retried directly too), so its reply carries no batch id and is
/// priced at the direct rates. A direct retry is an ordinary direct call: stored when it
/// returns, never part of a batch, so a resume neither repeats nor loses it.
///
/// Resume: on its first call the provider reads every batch of the journal. A call
/// whose request matches an unclaimed item of an unfinished batch (by fingerprint)
/// waits for that item instead of being submitted again; ids continue past every id
/// the journal holds.
pub struct BatchingProvider {
    direct: Arc<HttpProvider>,
    client: BatchClient,
    journal: Arc<dyn BatchJournal>,
    options: BatchOptions,
    state: Arc<Mutex<State>>,
    loaded: OnceCell<()>,
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
    /// unfinished batches are polled, not resubmitted).
    pub fn new(
        direct: Arc<HttpProvider>,
        client: BatchClient,
        journal: Arc<dyn BatchJournal>,
        options: BatchOptions,
    ) -> Self {
        BatchingProvider {
            direct,
            client,
            journal,
            options,
            state: Arc::new(Mutex::new(State::default())),
            loaded: OnceCell::new(),
        }
    }

    pub(crate) fn lock(state: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
        state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the journal once, before the first call is queued, after settling the
    /// submissions an earlier process left in doubt.
    async fn load(&self) -> Result<(), ProviderError> {
        self.loaded
            .get_or_try_init(|| async {
                let reserved = self.settle_in_doubt().await?;
                let batches = self.journal.batches().await.map_err(|e| {
                    ProviderError::Config(format!("the batch journal could not be read: {e}"))
                })?;
                let complete = {
                    let mut state = Self::lock(&self.state);
                    let complete = state.load(batches);
                    // ids of submissions that made no batch: sent under new ones
                    for id in &reserved {
                        state.reserve(id);
                    }
                    complete
                };
                for batch_id in complete {
                    record_finished(self.journal.as_ref(), &batch_id).await;
                }
                Ok(())
            })
            .await
            .map(|_| ())
    }

    /// Settles every submission an earlier process journaled and never settled: the
    /// batch the provider made for it is recorded as submitted (and then polled like
    /// any unfinished batch); one it did not make is recorded as not created, and its
    /// items' ids are returned so that none is used again. Until the provider can be
    /// asked, no call goes out (a retryable error: the model's retries ask again).
    async fn settle_in_doubt(&self) -> Result<Vec<String>, ProviderError> {
        let journal_error = |e: String| {
            ProviderError::Config(format!(
                "the batch journal could not be read or written: {e}"
            ))
        };
        let in_doubt = self.journal.in_doubt().await.map_err(journal_error)?;
        if in_doubt.is_empty() {
            return Ok(Vec::new());
        }
        let mut known: HashSet<String> = self
            .journal
            .known_batch_ids()
            .await
            .map_err(journal_error)?
            .into_iter()
            .collect();
        let mut reserved = Vec::new();
        for submission in in_doubt {
            let found = find_batch(&self.client, &self.options, &submission, &known)
                .await
                .map_err(|e| {
                    ProviderError::Connection(format!(
                        "batch submission {}: cannot tell whether the provider made its batch ({e}); none of its items is sent again until it can",
                        submission.token
                    ))
                })?;
            match found {
                Some(batch_id) => {
                    tracing::info!(batch = %batch_id, submission = %submission.token, "found the batch of a submission left in doubt");
                    self.journal
                        .submitted(&submission.token, &batch_id, &submission.custom_ids)
                        .await
                        .map_err(journal_error)?;
                    known.insert(batch_id);
                }
                None => {
                    self.journal
                        .not_created(&submission.token)
                        .await
                        .map_err(journal_error)?;
                    reserved.extend(submission.custom_ids);
                }
            }
        }
        Ok(reserved)
    }

    fn enqueue(&self, request: &Request, waiter: Waiter) {
        let fingerprint = request.fingerprint()[..FINGERPRINT_CHARS].to_owned();
        let mut state = Self::lock(&self.state);
        let claimed = state
            .resumed
            .get_mut(&fingerprint)
            .and_then(|items| (!items.is_empty()).then(|| items.remove(0)));
        if let Some((custom_id, batch_id)) = claimed {
            state
                .resumed_waiters
                .entry(batch_id.clone())
                .or_default()
                .push((custom_id, waiter));
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
                        (waiters, !state.unclaimed(&batch_id))
                    };
                    let end = Ending {
                        shared: &shared,
                        journal: &journal,
                        finish: last,
                    };
                    poll_and_deliver(&client, &end, &options, &batch_id, waiters).await;
                });
            }
            return;
        }
        let n = state.next.entry(fingerprint.clone()).or_default();
        let custom_id = format!("{fingerprint}-{n}");
        *n += 1;
        let item = BatchItem {
            custom_id,
            body: self.direct.body(request),
        };
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
            submit_round(&client, journal, &shared, &options, round).await;
        });
    }

    /// One attempt through the batch API: queued for the next round, answered once its
    /// batch ends.
    async fn batched(&self, request: &Request) -> Result<Response, ProviderError> {
        let (waiter, result) = oneshot::channel();
        self.enqueue(request, waiter);
        let (outcome, batch_id, item) = result
            .await
            .map_err(|_| ProviderError::Connection("the batch task stopped".into()))??;
        match outcome {
            Outcome::Succeeded(body) => {
                let bytes = serde_json::to_vec(&body).expect("a JSON value serializes");
                match self.direct.parse_success(&bytes) {
                    Ok(mut response) => {
                        response.batch_id = Some(batch_id);
                        response.batch_item = Some(item);
                        Ok(response)
                    }
                    Err(ProviderError::Unusable {
                        message,
                        usage,
                        raw,
                        ..
                    }) => Err(ProviderError::Unusable {
                        message,
                        usage,
                        raw,
                        batch: Some(Box::new((batch_id, item))),
                    }),
                    Err(e) => Err(e),
                }
            }
            Outcome::Errored { status, message } => Err(self.item_failed(
                request,
                ProviderError::Status {
                    status: status.unwrap_or(500),
                    kind: "batch_item_errored".into(),
                    message,
                    retry_after: None,
                },
            )),
            Outcome::Unreadable {
                billed: true,
                message,
                excerpt,
            } => Err(ProviderError::Unusable {
                message: format!("batch result line unreadable: {message}"),
                usage: None,
                raw: (!excerpt.is_empty()).then_some(excerpt),
                batch: Some(Box::new((batch_id, item))),
            }),
            Outcome::Unreadable {
                billed: false,
                message,
                ..
            } => Err(self.item_failed(
                request,
                ProviderError::Connection(format!(
                    "the batch's error line for this item is unreadable: {message}"
                )),
            )),
            Outcome::Expired => Err(self.item_failed(
                request,
                ProviderError::Connection(
                    "the batch expired before this item was processed".into(),
                ),
            )),
            Outcome::Canceled => Err(self.item_failed(
                request,
                ProviderError::Connection(
                    "the batch was cancelled before this item was processed".into(),
                ),
            )),
        }
    }

    /// A failed, expired or cancelled item: under [`BatchRetry::Direct`] its retry is
    /// owed a direct request.
    fn item_failed(&self, request: &Request, error: ProviderError) -> ProviderError {
        if self.options.retry == BatchRetry::Direct {
            self.owe_direct(request, &error);
        }
        error
    }

    /// Whether this attempt of `request` is a retry owed a direct request (and takes it).
    fn take_direct(&self, request: &Request) -> bool {
        let mut state = Self::lock(&self.state);
        match state.direct.get_mut(&request.fingerprint()) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    /// After `error`, the model's next attempt of `request` (if it retries) goes direct.
    fn owe_direct(&self, request: &Request, error: &ProviderError) {
        if matches!(self.direct.classify(error), RetryDecision::No) {
            return;
        }
        *Self::lock(&self.state)
            .direct
            .entry(request.fingerprint())
            .or_default() += 1;
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
        BatchError::InvalidId { .. }
        | BatchError::TooLarge { .. }
        | BatchError::Redirected { .. } => ProviderError::Config(e.to_string()),
        BatchError::Http { .. } | BatchError::Protocol { .. } => {
            ProviderError::Connection(e.to_string())
        }
    }
}

/// Submits one round (split under the limits), records each batch, and polls them all.
async fn submit_round(
    client: &BatchClient,
    journal: Arc<dyn BatchJournal>,
    shared: &Arc<Mutex<State>>,
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
        let batch_id = match create(client, journal.as_ref(), options, &batch, &ids).await {
            Ok(batch_id) => batch_id,
            Err(error) => {
                for (_, waiter) in batch_waiters {
                    let _ = waiter.send(Err(error.clone()));
                }
                continue;
            }
        };
        tracing::info!(batch = %batch_id, items = ids.len(), "batch submitted");
        let client = client.clone();
        let journal = Arc::clone(&journal);
        let shared = Arc::clone(shared);
        let options = *options;
        polls.push(tokio::spawn(async move {
            let end = Ending {
                shared: &shared,
                journal: &journal,
                finish: true,
            };
            poll_and_deliver(&client, &end, &options, &batch_id, batch_waiters).await;
        }));
    }
    for poll in polls {
        let _ = poll.await;
    }
}

/// Creates one batch, journaled on both sides of the create request: as a submission
/// before it, with its id after, so a process killed in between leaves a submission a
/// resume settles ([`BatchingProvider::settle_in_doubt`]). When the request fails
/// without a clear answer (no response, an unreadable one, a server error), the
/// provider may have made the batch anyway, so it is looked up by its token before
/// its items may go out again.
async fn create(
    client: &BatchClient,
    journal: &dyn BatchJournal,
    options: &BatchOptions,
    batch: &[BatchItem],
    ids: &[String],
) -> Result<String, ProviderError> {
    let token = submission_token(ids);
    let started_unix = now_unix();
    journal.submitting(&token, ids).await.map_err(|e| {
        ProviderError::Config(format!(
            "a batch of {} items could not be journaled before its submission ({e}); nothing was sent",
            ids.len()
        ))
    })?;
    let token_ref = token.as_str();
    let not_created = |error: ProviderError| async move {
        if let Err(e) = journal.not_created(token_ref).await {
            tracing::warn!(submission = %token_ref, "could not record a batch as not created: {e}");
        }
        error
    };
    let batch_id = match client.submit(batch, &token).await {
        Ok(batch_id) => batch_id,
        Err(e) if !unanswered(&e) => return Err(not_created(batch_error(&e)).await),
        Err(e) => {
            tracing::warn!(submission = %token, "creating a batch got no clear answer, looking for it: {e}");
            // A create still in progress when its request gave up may take a moment to
            // show in the provider's list.
            tokio::time::sleep(options.poll_min.max(MIN_POLL)).await;
            let submission = InDoubtBatch {
                token: token.clone(),
                custom_ids: ids.to_vec(),
                started_unix,
            };
            let known: HashSet<String> = journal
                .known_batch_ids()
                .await
                .map_err(|j| {
                    ProviderError::Config(format!("the batch journal could not be read: {j}"))
                })?
                .into_iter()
                .collect();
            match find_batch(client, options, &submission, &known).await {
                Ok(Some(batch_id)) => batch_id,
                Ok(None) => return Err(not_created(batch_error(&e)).await),
                Err(f) => {
                    return Err(ProviderError::Config(format!(
                        "batch submission {token}: creating it failed ({e}) and the provider could not be asked whether it made the batch ({f}); resume the run once it answers (the resume looks again before sending any of its items)"
                    )));
                }
            }
        }
    };
    journal
        .submitted(&token, &batch_id, ids)
        .await
        .map_err(|e| {
            // Not recorded: a resume settles the submission by asking the provider.
            ProviderError::Config(format!(
                "batch {batch_id} was submitted but could not be recorded ({e}); resume the run to collect it"
            ))
        })?;
    Ok(batch_id)
}

/// Whether a failed create request may still have made its batch: no answer, an
/// unreadable one, or a server error. A refusal (4xx) or a bad item made none.
fn unanswered(error: &BatchError) -> bool {
    match error {
        BatchError::Http { .. } | BatchError::Protocol { .. } => true,
        BatchError::Status { status, .. } => *status >= 500,
        BatchError::InvalidId { .. }
        | BatchError::TooLarge { .. }
        | BatchError::Redirected { .. } => false,
    }
}

/// Looks a submission's batch up at the provider ([`BatchClient::find`]), trying again
/// with backoff when the provider does not answer.
async fn find_batch(
    client: &BatchClient,
    options: &BatchOptions,
    submission: &InDoubtBatch,
    known: &HashSet<String>,
) -> Result<Option<String>, BatchError> {
    let mut wait = options.poll_min.max(MIN_POLL);
    let mut tries = 0;
    loop {
        tries += 1;
        let found = client
            .find(
                &submission.token,
                submission.custom_ids.len() as u64,
                submission.started_unix,
                known,
            )
            .await;
        match found {
            Err(e) if tries < RESULT_TRIES => {
                tracing::warn!(submission = %submission.token, "looking for a batch failed, trying again: {e}");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(options.poll_max.max(MIN_POLL));
            }
            found => return found,
        }
    }
}

/// A token no other submission has: the sha256 of the batch's first item id, its size,
/// the time in nanoseconds, the process id and a counter, cut to 32 hex digits.
fn submission_token(ids: &[String]) -> String {
    use sha2::Digest as _;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let digest = sha2::Sha256::new()
        .chain_update(ids.first().map_or("", String::as_str))
        .chain_update(ids.len().to_le_bytes())
        .chain_update(nanos.to_le_bytes())
        .chain_update(std::process::id().to_le_bytes())
        .chain_update(
            COUNTER
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                .to_le_bytes(),
        )
        .finalize();
    let mut hex = String::with_capacity(32);
    for b in &digest[..16] {
        use std::fmt::Write as _;
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

pub(crate) fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[async_trait]
impl Provider for BatchingProvider {
    fn kind(&self) -> &str {
        self.direct.kind()
    }

    async fn generate(&self, request: &Request) -> Result<Response, ProviderError> {
        self.load().await?;
        if self.options.retry == BatchRetry::Direct && self.take_direct(request) {
            let result = self.direct.generate(request).await;
            if let Err(e) = &result {
                self.owe_direct(request, e);
            }
            return result;
        }
        self.batched(request).await
    }

    fn classify(&self, error: &ProviderError) -> RetryDecision {
        self.direct.classify(error)
    }

    fn retries_direct(&self) -> bool {
        self.options.retry == BatchRetry::Direct
    }

    fn abandonable(&self, request: &Request) -> bool {
        // a direct retry is an ordinary direct call: billed once answered, so it is
        // waited for
        let state = Self::lock(&self.state);
        !matches!(state.direct.get(&request.fingerprint()), Some(n) if *n > 0)
    }

    fn acknowledge(&self, batch_id: &str) {
        let finished = {
            let mut state = Self::lock(&self.state);
            match state.outstanding.get_mut(batch_id) {
                Some(entry) => {
                    entry.0 = entry.0.saturating_sub(1);
                    let done = *entry == (0, true);
                    if done {
                        state.outstanding.remove(batch_id);
                    }
                    done
                }
                None => false,
            }
        };
        if finished {
            let journal = Arc::clone(&self.journal);
            let batch_id = batch_id.to_owned();
            tokio::spawn(async move { record_finished(journal.as_ref(), &batch_id).await });
        }
    }

    fn token_classes(&self) -> TokenClasses {
        self.direct.token_classes()
    }
}
