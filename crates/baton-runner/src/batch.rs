//! The store as a batched model's [`BatchJournal`]: each batch is committed to the
//! `batch_submissions` table before its create request and to the `batches` table
//! before it is polled, so a resumed run finds it, or asks the provider for it.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use baton_models::{BatchJournal, BatchRetry, InDoubtBatch, JournalBatch};
use baton_store::{NewBatch, NewSubmission, Store};

/// One model's batches in the run's store. The store opens after the models are built
/// (setup checks every model and price first), so the journal holds a cell the runner
/// fills once the store is open; no call is made before that.
pub(crate) struct StoreJournal {
    store: Arc<OnceLock<Store>>,
    model: String,
    api: String,
    gather_ms: u64,
    retry: BatchRetry,
}

impl StoreJournal {
    pub(crate) fn new(
        store: Arc<OnceLock<Store>>,
        model: &str,
        api: &str,
        gather: Duration,
        retry: BatchRetry,
    ) -> Self {
        StoreJournal {
            store,
            model: model.to_string(),
            api: api.to_string(),
            gather_ms: gather.as_millis() as u64,
            retry,
        }
    }

    fn store(&self) -> Result<&Store, String> {
        self.store
            .get()
            .ok_or_else(|| format!("model {:?}: the store is not open yet", self.model))
    }
}

#[async_trait]
impl BatchJournal for StoreJournal {
    async fn submitting(&self, token: &str, custom_ids: &[String]) -> Result<(), String> {
        self.store()?
            .batch_submitting(NewSubmission {
                token: token.to_string(),
                model: self.model.clone(),
                api: self.api.clone(),
                custom_ids: custom_ids.to_vec(),
            })
            .await
            .map_err(|e| e.to_string())
    }

    async fn submitted(
        &self,
        token: &str,
        batch_id: &str,
        custom_ids: &[String],
    ) -> Result<(), String> {
        self.store()?
            .batch_submitted(NewBatch {
                batch_id: batch_id.to_string(),
                model: self.model.clone(),
                api: self.api.clone(),
                custom_ids: custom_ids.to_vec(),
                gather_ms: self.gather_ms,
                retry: self.retry.as_str().to_string(),
                submission: Some(token.to_string()),
            })
            .await
            .map_err(|e| e.to_string())
    }

    async fn not_created(&self, token: &str) -> Result<(), String> {
        self.store()?
            .batch_not_created(token.to_string())
            .await
            .map_err(|e| e.to_string())
    }

    async fn finished(&self, batch_id: &str) -> Result<(), String> {
        self.store()?
            .batch_finished(batch_id.to_string())
            .await
            .map_err(|e| e.to_string())
    }

    async fn batches(&self) -> Result<Vec<JournalBatch>, String> {
        let rows = self
            .store()?
            .batches(self.model.clone())
            .await
            .map_err(|e| e.to_string())?;
        Ok(rows
            .into_iter()
            .map(|r| JournalBatch {
                batch_id: r.batch.batch_id,
                custom_ids: r.batch.custom_ids,
                finished: r.finished_at.is_some(),
                stored: r.stored,
            })
            .collect())
    }

    async fn in_doubt(&self) -> Result<Vec<InDoubtBatch>, String> {
        let rows = self
            .store()?
            .batches_in_doubt(self.model.clone())
            .await
            .map_err(|e| e.to_string())?;
        Ok(rows
            .into_iter()
            .map(|r| InDoubtBatch {
                token: r.submission.token,
                custom_ids: r.submission.custom_ids,
                started_unix: r.started_unix,
            })
            .collect())
    }

    async fn known_batch_ids(&self) -> Result<Vec<String>, String> {
        let rows = self
            .store()?
            .all_batches()
            .await
            .map_err(|e| e.to_string())?;
        Ok(rows.into_iter().map(|r| r.batch.batch_id).collect())
    }
}
