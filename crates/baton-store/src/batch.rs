//! Provider batches: the `batches` table (schema version 8; `retry` since 9), the journal a batched
//! model records each submitted batch in before it polls it, so that a resumed run
//! polls the batches it finds instead of submitting their items again.

use rusqlite::{Connection, params};

use crate::connect::sqlite_err;
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
}

impl Store {
    /// Record a submitted batch; durable when it returns. A batch id recorded twice is
    /// refused.
    pub async fn batch_submitted(&self, batch: NewBatch) -> Result<()> {
        self.ask(|tx| Command::BatchSubmitted(Box::new(batch), tx))
            .await
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
        let ids = serde_json::to_string(&b.custom_ids).expect("a list of strings serializes");
        self.conn
            .execute(
                &format!(
                    "INSERT INTO batches (batch_id, model, api, custom_ids, items, gather_ms,
                     retry, submitted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, {NOW})"
                ),
                params![
                    b.batch_id,
                    b.model,
                    b.api,
                    ids,
                    b.custom_ids.len() as i64,
                    i64::try_from(b.gather_ms).unwrap_or(i64::MAX),
                    b.retry
                ],
            )
            .map_err(sqlite_err(&self.path))?;
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

/// The batches of `model` (every model's when `None`), in the order submitted.
pub(crate) fn batches_of(
    conn: &Connection,
    path: &std::path::Path,
    model: Option<&str>,
) -> Result<Vec<BatchRow>> {
    let err = sqlite_err(path);
    let mut stmt = conn
        .prepare_cached(
            "SELECT batch_id, model, api, custom_ids, gather_ms, submitted_at, finished_at, retry
             FROM batches WHERE ?1 IS NULL OR model = ?1 ORDER BY rowid",
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
            ))
        })
        .map_err(&err)?;
    let mut out = Vec::new();
    for row in rows {
        let (batch_id, model, api, ids, gather_ms, submitted_at, finished_at, retry) =
            row.map_err(&err)?;
        let custom_ids: Vec<String> =
            serde_json::from_str(&ids).map_err(|e| StoreError::Decode {
                path: path.to_path_buf(),
                what: format!("batches.custom_ids of batch {batch_id}"),
                message: e.to_string(),
            })?;
        out.push(BatchRow {
            batch: NewBatch {
                batch_id,
                model,
                api,
                custom_ids,
                gather_ms: gather_ms.max(0) as u64,
                retry,
            },
            submitted_at,
            finished_at,
        });
    }
    Ok(out)
}
