//! Polling a submitted batch until it ends, within its deadline, and streaming its
//! results to the calls waiting on it, no faster than they are stored.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_models::{BatchJournal, ProviderError};
use tokio::time::Instant;

use crate::provider::{BatchingProvider, State, Waiter, now_unix};
use crate::{BatchClient, BatchError, BatchOptions, BatchStatus, ItemResult, Outcome, ResultSink};

/// Replies of one batch handed to their callers and not yet stored
/// ([`baton_models::Provider::acknowledge`]) at which its results download pauses:
/// results are read no faster than they are stored, so a large results file is never
/// held in memory.
pub const UNSTORED_REPLIES: usize = 256;

/// The shortest poll interval, whatever `poll_min` says: 0 would be a busy loop.
pub const MIN_POLL: Duration = Duration::from_millis(10);

/// The longest grace after a deadline's cancel request.
const MAX_CANCEL_GRACE: Duration = Duration::from_secs(600);

/// How many times in a row the provider must refuse a batch (404, 410, 401, 403, a
/// redirect) before polling gives up on it: a batch can take a moment to show after
/// its create request was answered.
const REFUSALS: u32 = 3;

/// Where a polled batch's results go besides its waiters.
pub(crate) struct Ending<'a> {
    pub(crate) shared: &'a Arc<Mutex<State>>,
    pub(crate) journal: &'a Arc<dyn BatchJournal>,
    /// These waiters are the batch's last: it is finished once their replies are
    /// acknowledged.
    pub(crate) finish: bool,
}

impl Ending<'_> {
    /// Counts `billed` replies about to be handed out, and with `last` that every
    /// waiter has its result; true when the batch is now finished (nothing outstanding
    /// and every item handed out).
    fn handing_out(&self, batch_id: &str, billed: usize, last: bool) -> bool {
        let mut state = BatchingProvider::lock(self.shared);
        let entry = state.outstanding.entry(batch_id.to_owned()).or_default();
        entry.0 += billed;
        entry.1 |= last && self.finish;
        let done = *entry == (0, true);
        if done {
            state.outstanding.remove(batch_id);
        }
        done
    }
}

/// Tries to record that a batch is finished (a late record is harmless: it only tells
/// a resume that the batch needs no polling).
pub(crate) async fn record_finished(journal: &dyn BatchJournal, batch_id: &str) {
    if let Err(e) = journal.finished(batch_id).await {
        tracing::warn!(batch = %batch_id, "could not record the batch as finished: {e}");
    }
}

/// How many times the results of an ended batch are downloaded before its callers are
/// given an error (with backoff from the first poll interval). A results file that was
/// produced is the provider's bill, so its items are never submitted again: the batch
/// stays recorded and a resume downloads it again.
pub(crate) const RESULT_TRIES: u32 = 10;

/// What a caller whose batch is left recorded is told: the call fails (no retry sends
/// its item again) and a resume collects the batch.
fn left_recorded(batch_id: &str, why: &str) -> ProviderError {
    ProviderError::Config(format!(
        "batch {batch_id}: {why}; nothing of it is submitted again: the batch stays recorded and resuming the run (--resume) collects it"
    ))
}

/// Whether the provider refuses a batch outright (it does not know it, the key may not
/// see it, or the answer points elsewhere), as opposed to a passing fault.
fn refused(error: &BatchError) -> bool {
    match error {
        BatchError::Status { status, .. } => matches!(status, 401 | 403 | 404 | 410),
        BatchError::Redirected { .. } | BatchError::InvalidId { .. } => true,
        BatchError::Http { .. } | BatchError::Protocol { .. } | BatchError::TooLarge { .. } => {
            false
        }
    }
}

/// Polls batch `batch_id` with backoff (never faster than [`MIN_POLL`]) until it ends,
/// within [`BatchOptions::deadline`]; an error is what its callers get.
async fn wait_until_ended(
    client: &BatchClient,
    options: &BatchOptions,
    batch_id: &str,
) -> Result<BatchStatus, ProviderError> {
    let start = Instant::now();
    let mut deadline = start + options.deadline;
    let grace = (options.deadline / 10).min(MAX_CANCEL_GRACE);
    let poll_max = options.poll_max.max(MIN_POLL);
    let mut interval = options.poll_min.clamp(MIN_POLL, poll_max);
    let mut refusals = 0;
    let mut last: String;
    let mut cancelled: Option<Instant> = None;
    loop {
        match client.status(batch_id).await {
            Ok(status) if status.ended => return Ok(status),
            Ok(status) => {
                refusals = 0;
                // A batch made long ago (a resumed one) has less time left.
                if let Some(created) = status.created_unix {
                    let age = Duration::from_secs(u64::try_from(now_unix() - created).unwrap_or(0));
                    let by_provider = Instant::now() + options.deadline.saturating_sub(age);
                    deadline = deadline.min(by_provider.max(start));
                }
                last = format!(
                    "{:?}, {} of {} items done",
                    status.status, status.done, status.total
                );
            }
            Err(e) if refused(&e) => {
                refusals += 1;
                tracing::warn!(batch = %batch_id, refusals, "the provider refused the batch: {e}");
                if refusals >= REFUSALS {
                    return Err(left_recorded(
                        batch_id,
                        &format!(
                            "polling stopped after the provider refused the batch {refusals} times in a row ({e})"
                        ),
                    ));
                }
                last = e.to_string();
            }
            Err(e) => {
                refusals = 0;
                tracing::warn!(batch = %batch_id, "polling failed, trying again: {e}");
                last = e.to_string();
            }
        }
        let now = Instant::now();
        if now >= deadline {
            match cancelled {
                None => {
                    tracing::warn!(batch = %batch_id, deadline = ?options.deadline, "the batch is past its deadline; asking the provider to cancel it");
                    if let Err(e) = client.cancel(batch_id).await {
                        tracing::warn!(batch = %batch_id, "cancelling failed: {e}");
                    }
                    cancelled = Some(Instant::now());
                }
                Some(at) if at.elapsed() >= grace => {
                    return Err(left_recorded(
                        batch_id,
                        &format!(
                            "it did not end within batch_deadline ({:?}) and a cancel request (last seen: {last})",
                            options.deadline
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        // never sleep past the deadline or the end of the grace
        let until = match cancelled {
            Some(at) => at + grace,
            None => deadline,
        };
        let wait = interval.min(
            until
                .saturating_duration_since(Instant::now())
                .max(MIN_POLL),
        );
        tokio::time::sleep(wait).await;
        interval = (interval * 2).min(poll_max);
    }
}

/// The callers of one batch, handed their items as its results stream in.
struct Delivery<'a, 'b> {
    end: &'a Ending<'b>,
    batch_id: &'a str,
    waiters: HashMap<String, Waiter>,
}

impl Delivery<'_, '_> {
    fn deliver(&mut self, custom_id: String, outcome: Outcome) {
        let Some(waiter) = self.waiters.remove(&custom_id) else {
            return;
        };
        // counted before it is handed out, so no acknowledgement comes first; a caller
        // gone (the run stopped) never acknowledges, so the batch stays unfinished and
        // a resume collects the reply
        if outcome.billed() {
            self.end.handing_out(self.batch_id, 1, false);
        }
        let _ = waiter.send(Ok((outcome, self.batch_id.to_owned(), custom_id)));
    }

    fn fail_all(&mut self, error: &ProviderError) {
        for (_, waiter) in self.waiters.drain() {
            let _ = waiter.send(Err(error.clone()));
        }
    }
}

impl ResultSink for Delivery<'_, '_> {
    fn wants(&self, custom_id: &str) -> bool {
        self.waiters.contains_key(custom_id)
    }

    fn take(&mut self, result: ItemResult) {
        self.deliver(result.custom_id, result.outcome);
    }

    fn full(&self) -> bool {
        let state = BatchingProvider::lock(self.end.shared);
        state
            .outstanding
            .get(self.batch_id)
            .is_some_and(|(unstored, _)| *unstored >= UNSTORED_REPLIES)
    }
}

/// Polls one batch until it ends, then streams its results to the waiters; the batch
/// is journaled as finished once `end` says so and every billed item was acknowledged.
/// A batch whose polling or download gives up stays unfinished (so a resume collects
/// it), and its callers get an error no retry resubmits.
pub(crate) async fn poll_and_deliver(
    client: &BatchClient,
    end: &Ending<'_>,
    options: &BatchOptions,
    batch_id: &str,
    waiters: Vec<(String, Waiter)>,
) {
    let mut delivery = Delivery {
        end,
        batch_id,
        waiters: waiters.into_iter().collect(),
    };
    let status = match wait_until_ended(client, options, batch_id).await {
        Ok(status) => status,
        Err(error) => return delivery.fail_all(&error),
    };
    if let Some(why) = status.failed {
        // failed validation: nothing ran, nothing is billed, there is nothing to collect
        delivery.fail_all(&ProviderError::Status {
            status: 400,
            kind: "batch_failed".into(),
            message: why,
            retry_after: None,
        });
        if end.handing_out(batch_id, 0, true) {
            record_finished(end.journal.as_ref(), batch_id).await;
        }
        return;
    }
    let mut wait = options
        .poll_min
        .clamp(MIN_POLL, options.poll_max.max(MIN_POLL));
    let mut tries = 0;
    let read = loop {
        tries += 1;
        match client.results_each(batch_id, &mut delivery).await {
            Ok(read) => break read,
            Err(e) if tries >= RESULT_TRIES || refused(&e) => {
                let why = format!(
                    "it ended, but its results could not be downloaded ({tries} tries; last: {e})"
                );
                return delivery.fail_all(&left_recorded(batch_id, &why));
            }
            Err(e) => {
                tracing::warn!(batch = %batch_id, tries, "downloading results failed, trying again: {e}");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(options.poll_max.max(MIN_POLL));
            }
        }
    };
    if read.skipped > 0 {
        tracing::debug!(batch = %batch_id, skipped = read.skipped, "result lines of items no caller waits for");
    }
    // Items without a line: when some lines could not be read, each may be one of
    // them, so it is an unusable billed item; else the provider has no result for it.
    let missing: Vec<String> = delivery.waiters.keys().cloned().collect();
    for custom_id in missing {
        if read.unreadable > 0 {
            let message = format!(
                "no readable result line for this item; {} line(s) of the results could not be read (first: {})",
                read.unreadable,
                read.first_unreadable.as_deref().unwrap_or("?")
            );
            delivery.deliver(
                custom_id,
                Outcome::Unreadable {
                    billed: true,
                    message,
                    excerpt: String::new(),
                },
            );
        } else if let Some(waiter) = delivery.waiters.remove(&custom_id) {
            let _ = waiter.send(Err(ProviderError::Connection(format!(
                "batch {batch_id} returned no result for item {custom_id}"
            ))));
        }
    }
    if end.handing_out(batch_id, 0, true) {
        record_finished(end.journal.as_ref(), batch_id).await;
    }
}
