//! [`BatchProviders`]: the HTTP providers, with batched models wrapped in a
//! [`BatchingProvider`].

use std::sync::Arc;

use baton_http::{HttpProviders, Wire};
use baton_models::{BatchSetup, Provider, ProviderConfig, ProviderFactory};

use crate::{BatchApi, BatchClient, BatchOptions, BatchingProvider};

/// The [`ProviderFactory`] a run uses for HTTP models: [`HttpProviders`] for direct
/// ones, and for a model with `batch = true` its direct provider wrapped in a
/// [`BatchingProvider`] on the same base URL and key (OpenAI and OpenAI-compatible
/// Chat models batch through `/v1/batches` over `/v1/chat/completions`, Responses
/// models over `/v1/responses`, Anthropic models through `/v1/messages/batches`).
#[derive(Debug, Default)]
pub struct BatchProviders {
    http: HttpProviders,
}

impl BatchProviders {
    /// Batch-capable providers over `http`.
    pub fn new(http: HttpProviders) -> Self {
        BatchProviders { http }
    }
}

/// The batch API a wire format's batched calls go through.
pub fn batch_api(wire: Wire) -> BatchApi {
    match wire {
        Wire::OpenAiChat | Wire::OpenAiCompatible => BatchApi::OpenAiChat,
        Wire::OpenAiResponses => BatchApi::OpenAiResponses,
        Wire::Anthropic => BatchApi::Anthropic,
    }
}

impl ProviderFactory for BatchProviders {
    fn kinds(&self) -> Vec<String> {
        self.http.kinds()
    }

    fn make(&self, config: &ProviderConfig) -> Result<Arc<dyn Provider>, String> {
        self.http.make(config)
    }

    fn make_batched(
        &self,
        config: &ProviderConfig,
        batch: &BatchSetup,
    ) -> Result<Arc<dyn Provider>, String> {
        let direct = self.http.provider(config).map_err(|e| e.to_string())?;
        let api = batch_api(direct.wire());
        let client = BatchClient::new(
            api,
            direct.base_url(),
            direct.key().cloned(),
            direct.timeout(),
        )
        .map_err(|e| format!("model {:?}: {e}", config.name))?;
        let options = BatchOptions {
            gather: batch.gather,
            poll_min: batch.poll_min,
            poll_max: batch.poll_max,
            limits: api.limits(),
            retry: batch.retry,
            deadline: batch.deadline,
        };
        Ok(Arc::new(BatchingProvider::new(
            Arc::new(direct),
            client,
            Arc::clone(&batch.journal),
            options,
        )))
    }
}
