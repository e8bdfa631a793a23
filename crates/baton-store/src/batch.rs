//! Provider batches: the `batches` table (schema version 8; `retry` since 9), the journal a batched
//! model records each submitted batch in before it polls it, so that a resumed run
//! polls the batches it finds instead of submitting their items again; and the
//! `batch_submissions` table (version 10), where each batch is journaled before its
//! create request, so a resume can tell a batch the provider made but the store never
//! heard of from one that was never made.

use rusqlite::{Connection, OptionalExtension, params};

use crate::connect::{Cached, sqlite_err};
use crate::error::{Result, StoreError};
use crate::writer::{Command, Db, NOW, Store};

/// A submitted batch, to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewBatch {
    /// The provider's batch id (`batch_…`, `msgbatch_…`).
    pub batch_id: String,
    /// The model's name in the experiment.
    pub model: String,
    /// The batch API (`openai-chat`, `openai-responses`, `anthropic`).
    pub api: String,
    /// Its items' `custom_id`s, in the order submitted.
    pub custom_ids: Vec<String>,
    /// The gather window its round was collected under, in milliseconds (a setting baton
    /// fills in, stored with every batch).
    pub gather_ms: u64,
    /// Where its failed, expired or cancelled items were retried: `round` or `direct`
    /// (the experiment's `batch_retry`, a setting baton fills in; schema version 9).
    pub retry: String,
    /// The submission it settles ([`NewSubmission::token`]), if it was journaled as one.
    pub submission: Option<String>,
}

/// A batch about to be created, to store before its create request goes out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSubmission {
    /// The random token the create request carries.
    pub token: String,
    /// The model's name in the experiment.
    pub model: String,
    /// The batch API.
    pub api: String,
    /// Its items' `custom_id`s.
    pub custom_ids: Vec<String>,
}

/// A submission neither settled as created nor as not created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionRow {
    /// The submission as it was written.
    pub submission: NewSubmission,
    /// When it started (Unix seconds).
    pub started_unix: i64,
}

/// A stored batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchRow {
    /// The batch as it was written.
    pub batch: NewBatch,
    /// When it was recorded (UTC, ISO 8601): right after the provider created it.
    pub submitted_at: String,
    /// When every item had been handed to its call (and so stored), if it has.
    pub finished_at: Option<String>,
    /// Until then, the items whose reply is stored, as a call or a billed attempt
    /// (`calls.batch_item`, `attempts.batch_item`); empty once finished.
    pub stored: Vec<String>,
}

impl BatchRow {
    /// Whether nothing is left to collect from it: it finished, or every one of its
    /// items has a stored reply (a batch whose download outlived its run, collected
    /// since; the next open of the store marks it finished).
    pub fn collected(&self) -> bool {
        self.finished_at.is_some()
            || (!self.batch.custom_ids.is_empty()
                && self
                    .batch
                    .custom_ids
                    .iter()
                    .all(|id| self.stored.contains(id)))
    }
}

impl Store {
    /// Record a submitted batch (settling its submission, if it names one, in the same
    /// transaction); durable when it returns. A batch id recorded twice is refused.
    pub async fn batch_submitted(&self, batch: NewBatch) -> Result<()> {
        self.ask(|tx| Command::BatchSubmitted(Box::new(batch), tx))
            .await
    }

    /// Record a batch about to be created; durable when it returns.
    pub async fn batch_submitting(&self, submission: NewSubmission) -> Result<()> {
        self.ask(|tx| Command::BatchSubmitting(Box::new(submission), tx))
            .await
    }

    /// Record that the batch of submission `token` was not created.
    pub async fn batch_not_created(&self, token: String) -> Result<()> {
        self.ask(|tx| Command::BatchNotCreated(token, tx)).await
    }

    /// The batches of every model, in the order they were submitted.
    pub async fn all_batches(&self) -> Result<Vec<BatchRow>> {
        self.ask(|tx| Command::Batches(None, tx)).await
    }

    /// The unsettled submissions of one model, oldest first.
    pub async fn batches_in_doubt(&self, model: String) -> Result<Vec<SubmissionRow>> {
        self.ask(|tx| Command::BatchesInDoubt(model, tx)).await
    }

    /// Record that every item of a batch was handed to its call.
    pub async fn batch_finished(&self, batch_id: String) -> Result<()> {
        self.ask(|tx| Command::BatchFinished(batch_id, tx)).await
    }

    /// The batches of one model, in the order they were submitted.
    pub async fn batches(&self, model: String) -> Result<Vec<BatchRow>> {
        self.ask(|tx| Command::Batches(Some(model), tx)).await
    }
}

impl Db {
    pub(crate) fn batch_submitted(&self, b: &NewBatch) -> Result<()> {
        // The batch's row and its submission's settling commit together: a savepoint
        // is its own transaction alone and nests inside a group commit.
        let err = sqlite_err(&self.path);
        self.conn
            .execute_batch("SAVEPOINT batch_submitted")
            .map_err(&err)?;
        let written = self.insert_batch(b);
        let end = if written.is_ok() {
            "RELEASE batch_submitted"
        } else {
            "ROLLBACK TO batch_submitted; RELEASE batch_submitted"
        };
        self.conn.execute_batch(end).map_err(&err)?;
        written
    }

    fn insert_batch(&self, b: &NewBatch) -> Result<()> {
        let ids = serde_json::to_string(&b.custom_ids).expect("a list of strings serializes");
        self.conn
            .execute(
                &format!(
                    "INSERT INTO batches (batch_id, model, api, custom_ids, items, gather_ms,
                     retry, submission, submitted_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, {NOW})"
                ),
                params![
                    b.batch_id,
                    b.model,
                    b.api,
                    ids,
                    b.custom_ids.len() as i64,
                    i64::try_from(b.gather_ms).unwrap_or(i64::MAX),
                    b.retry,
                    b.submission
                ],
            )
            .map_err(sqlite_err(&self.path))?;
        if let Some(token) = &b.submission {
            self.settle_submission(token, Some(&b.batch_id))?;
        }
        Ok(())
    }

    pub(crate) fn batch_submitting(&self, s: &NewSubmission) -> Result<()> {
        let ids = serde_json::to_string(&s.custom_ids).expect("a list of strings serializes");
        self.conn
            .execute(
                &format!(
                    "INSERT INTO batch_submissions (token, model, api, custom_ids, started_at)
                     VALUES (?1, ?2, ?3, ?4, {NOW})"
                ),
                params![s.token, s.model, s.api, ids],
            )
            .map_err(sqlite_err(&self.path))?;
        Ok(())
    }

    /// Settles submission `token` with the batch it made (`None`: none). Settling a
    /// submission that is not journaled, or twice, is refused.
    pub(crate) fn settle_submission(&self, token: &str, batch_id: Option<&str>) -> Result<()> {
        let changed = self
            .conn
            .execute(
                &format!(
                    "UPDATE batch_submissions SET batch_id = ?2, settled_at = {NOW}
                     WHERE token = ?1 AND settled_at IS NULL"
                ),
                params![token, batch_id],
            )
            .map_err(sqlite_err(&self.path))?;
        if changed != 1 {
            return Err(StoreError::Decode {
                path: self.path.clone(),
                what: format!("batch submission {token}"),
                message: "not journaled, or already settled".into(),
            });
        }
        Ok(())
    }

    /// Mark finished every unfinished batch whose items all have a stored reply (a call
    /// or a billed attempt): a batch whose download outlived the run that submitted it,
    /// collected item by item since. Nothing is left to collect from it, so it is no
    /// longer reported as running. Returns how many were marked.
    pub(crate) fn finish_collected_batches(&self) -> Result<usize> {
        let unfinished: Vec<(String, String)> = {
            let mut stmt = self
                .conn
                .prepare("SELECT batch_id, custom_ids FROM batches WHERE finished_at IS NULL")
                .map_err(sqlite_err(&self.path))?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .and_then(|rows| rows.collect())
                .map_err(sqlite_err(&self.path))?
        };
        let mut n = 0;
        for (batch_id, ids) in unfinished {
            n += usize::from(self.finish_if_collected(&batch_id, &ids)?);
        }
        Ok(n)
    }

    /// Mark batch `batch_id` finished if it is not and every one of its items has a
    /// stored reply (`ids`: its custom ids as stored); returns whether it did.
    fn finish_if_collected(&self, batch_id: &str, ids: &str) -> Result<bool> {
        let ids = custom_ids(&self.path, ids, &format!("batch {batch_id}"))?;
        let stored: std::collections::HashSet<String> =
            stored_items(&self.conn, &self.path, batch_id)?
                .into_iter()
                .collect();
        if ids.is_empty() || !ids.iter().all(|id| stored.contains(id)) {
            return Ok(false);
        }
        self.batch_finished(batch_id)?;
        Ok(true)
    }

    /// The reply of item `item` of batch `batch_id` was just stored: once every item of
    /// an unfinished batch has one, the batch is marked finished (nothing is left to
    /// collect from it, though it outlived the run that submitted it). The items still
    /// missing are read once per batch and then kept in memory, so a large batch costs
    /// one lookup per reply.
    pub(crate) fn batched_item_stored(&mut self, batch_id: &str, item: &str) -> Result<()> {
        if !self.uncollected.contains_key(batch_id) {
            let ids: Option<String> = self
                .conn
                .row(
                    "SELECT custom_ids FROM batches WHERE batch_id = ?1 AND finished_at IS NULL",
                    [batch_id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(sqlite_err(&self.path))?;
            let missing = match ids {
                Some(ids) => {
                    let stored: std::collections::HashSet<String> =
                        stored_items(&self.conn, &self.path, batch_id)?
                            .into_iter()
                            .collect();
                    let ids = custom_ids(&self.path, &ids, &format!("batch {batch_id}"))?;
                    Some(ids.into_iter().filter(|id| !stored.contains(id)).collect())
                }
                None => None,
            };
            self.uncollected.insert(batch_id.to_string(), missing);
        }
        let Some(Some(missing)) = self.uncollected.get_mut(batch_id) else {
            return Ok(());
        };
        missing.remove(item);
        if missing.is_empty() {
            self.batch_finished(batch_id)?;
            self.uncollected.insert(batch_id.to_string(), None);
        }
        Ok(())
    }

    pub(crate) fn batch_finished(&self, batch_id: &str) -> Result<()> {
        self.conn
            .execute(
                &format!(
                    "UPDATE batches SET finished_at = {NOW}
                     WHERE batch_id = ?1 AND finished_at IS NULL"
                ),
                [batch_id],
            )
            .map_err(sqlite_err(&self.path))?;
        Ok(())
    }
}

/// The unsettled submissions of `model`, oldest first.
pub(crate) fn in_doubt_of(
    conn: &Connection,
    path: &std::path::Path,
    model: &str,
) -> Result<Vec<SubmissionRow>> {
    let err = sqlite_err(path);
    let mut stmt = conn
        .prepare_cached(
            "SELECT token, api, custom_ids, CAST(strftime('%s', started_at) AS INTEGER)
             FROM batch_submissions
             WHERE model = ?1 AND settled_at IS NULL ORDER BY rowid",
        )
        .map_err(&err)?;
    let rows = stmt
        .query_map([model], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, i64>(3)?,
            ))
        })
        .map_err(&err)?;
    let mut out = Vec::new();
    for row in rows {
        let (token, api, ids, started_unix) = row.map_err(&err)?;
        out.push(SubmissionRow {
            submission: NewSubmission {
                custom_ids: custom_ids(path, &ids, &format!("submission {token}"))?,
                token,
                model: model.to_owned(),
                api,
            },
            started_unix,
        });
    }
    Ok(out)
}

/// The items of batch `batch_id` whose reply is stored, as a call or a billed attempt.
fn stored_items(conn: &Connection, path: &std::path::Path, batch_id: &str) -> Result<Vec<String>> {
    let err = sqlite_err(path);
    let mut stmt = conn
        .prepare_cached(
            "SELECT batch_item FROM calls WHERE batch_id = ?1 AND batch_item IS NOT NULL
             UNION ALL
             SELECT batch_item FROM attempts WHERE batch_id = ?1 AND batch_item IS NOT NULL",
        )
        .map_err(&err)?;
    let items = stmt
        .query_map([batch_id], |r| r.get::<_, String>(0))
        .map_err(&err)?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(&err)?;
    Ok(items)
}

fn custom_ids(path: &std::path::Path, json: &str, of: &str) -> Result<Vec<String>> {
    serde_json::from_str(json).map_err(|e| StoreError::Decode {
        path: path.to_path_buf(),
        what: format!("the custom_ids of {of}"),
        message: e.to_string(),
    })
}

/// The batches of `model` (every model's when `None`), in the order submitted.
pub(crate) fn batches_of(
    conn: &Connection,
    path: &std::path::Path,
    model: Option<&str>,
) -> Result<Vec<BatchRow>> {
    let err = sqlite_err(path);
    let mut stmt = conn
        .prepare_cached(
            "SELECT batch_id, model, api, custom_ids, gather_ms, submitted_at, finished_at, retry,
             submission FROM batches WHERE ?1 IS NULL OR model = ?1 ORDER BY rowid",
        )
        .map_err(&err)?;
    let rows = stmt
        .query_map([model], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, String>(7)?,
                r.get::<_, Option<String>>(8)?,
            ))
        })
        .map_err(&err)?;
    let mut out = Vec::new();
    for row in rows {
        let (batch_id, model, api, ids, gather_ms, submitted_at, finished_at, retry, submission) =
            row.map_err(&err)?;
        let stored = if finished_at.is_some() {
            Vec::new()
        } else {
            stored_items(conn, path, &batch_id)?
        };
        out.push(BatchRow {
            stored,
            batch: NewBatch {
                custom_ids: custom_ids(path, &ids, &format!("batch {batch_id}"))?,
                batch_id,
                model,
                api,
                gather_ms: gather_ms.max(0) as u64,
                retry,
                submission,
            },
            submitted_at,
            finished_at,
        });
    }
    Ok(out)
}
