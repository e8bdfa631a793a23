//! The `Model` wrapper: one model role in an experiment, above a provider.
//!
//! It owns what a provider must not: the concurrency limit (a semaphore whose permit is
//! held for the call only), retries with exponential backoff and jitter that honour the
//! server's `retry-after`, a per-run retry-time budget, and pricing. A call that
//! returns is priced before it is handed back, so a response never exists without its
//! cost.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_types::Message;
use rand::Rng;
use tokio::sync::Semaphore;

use crate::ModelError;
use crate::price::{Cost, Price};
use crate::provider::{GenerateConfig, Provider, ProviderError, Request, Response, RetryDecision};

/// How a model retries failed calls.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff delay.
    pub base_delay: Duration,
    /// Largest backoff delay (a server's `retry-after` may ask for more).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 6,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `attempt` (1-based): the server's request if it made
    /// one, else `min(base * 2^(attempt-1), max)` less up to 25 % jitter.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d;
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << (attempt - 1).min(16));
        let capped = exp.min(self.max_delay);
        let jitter = rand::thread_rng().gen_range(0.0..0.25);
        capped.mul_f64(1.0 - jitter)
    }
}

/// Wall time all retries of one run may spend waiting, shared by every model.
#[derive(Debug)]
pub struct RetryBudget {
    remaining: Mutex<Duration>,
}

impl RetryBudget {
    /// A budget of `total` waiting time.
    pub fn new(total: Duration) -> Arc<Self> {
        Arc::new(RetryBudget {
            remaining: Mutex::new(total),
        })
    }

    /// Take `wait` from the budget; false when it does not fit.
    fn take(&self, wait: Duration) -> bool {
        let mut left = self.remaining.lock().expect("retry budget lock");
        if *left >= wait {
            *left -= wait;
            true
        } else {
            false
        }
    }
}

/// A priced, timed response.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The provider's response.
    pub response: Response,
    /// Exact cost from the price card.
    pub cost: Cost,
    /// Attempts made (1 when the first try succeeded).
    pub attempts: u32,
    /// Wall time of the successful attempt.
    pub latency: Duration,
    /// The request as sent.
    pub request: Request,
}

/// One model role: a provider, a provider-side model id, settings, rates and limits.
pub struct Model {
    name: String,
    provider: Arc<dyn Provider>,
    provider_model: String,
    config: GenerateConfig,
    price_key: String,
    price: Price,
    limit: Arc<Semaphore>,
    retry: RetryPolicy,
    budget: Option<Arc<RetryBudget>>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("name", &self.name)
            .field("provider", &self.provider.kind())
            .field("provider_model", &self.provider_model)
            .field("price_key", &self.price_key)
            .finish()
    }
}

impl Model {
    /// A model named `name` in the experiment, served by `provider` as `provider_model`,
    /// priced by `price` (looked up under `price_key`), with at most `concurrency`
    /// calls in flight.
    pub fn new(
        name: impl Into<String>,
        provider: Arc<dyn Provider>,
        provider_model: impl Into<String>,
        price_key: impl Into<String>,
        price: Price,
        concurrency: usize,
    ) -> Self {
        Model {
            name: name.into(),
            provider,
            provider_model: provider_model.into(),
            config: GenerateConfig::default(),
            price_key: price_key.into(),
            price,
            limit: Arc::new(Semaphore::new(concurrency.max(1))),
            retry: RetryPolicy::default(),
            budget: None,
        }
    }

    /// Set the generation settings.
    pub fn with_config(mut self, config: GenerateConfig) -> Self {
        self.config = config;
        self
    }

    /// Set the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Share a run-wide retry-time budget.
    pub fn with_budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The model's name in the experiment.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The price-card key.
    pub fn price_key(&self) -> &str {
        &self.price_key
    }

    /// The rates.
    pub fn price(&self) -> &Price {
        &self.price
    }

    /// The generation settings.
    pub fn config(&self) -> &GenerateConfig {
        &self.config
    }

    /// The request this model would send for these messages.
    pub fn request(&self, messages: Vec<Message>, seed: Option<u64>) -> Request {
        Request {
            model: self.provider_model.clone(),
            messages,
            config: self.config.clone(),
            seed,
        }
    }

    /// Send a request, retrying what the provider calls retryable, and price the result.
    pub async fn generate(&self, request: Request) -> Result<Completion, ModelError> {
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let started = Instant::now();
            let result = {
                let _permit = self
                    .limit
                    .acquire()
                    .await
                    .expect("model semaphore is never closed");
                self.provider.generate(&request).await
            };
            let error = match result {
                Ok(response) => {
                    let cost = self.price.cost(&self.price_key, &response.usage)?;
                    return Ok(Completion {
                        response,
                        cost,
                        attempts: attempt,
                        latency: started.elapsed(),
                        request,
                    });
                }
                Err(e) => e,
            };
            let retry_after = match self.provider.classify(&error) {
                RetryDecision::No => return Err(self.failed(attempt, error)),
                RetryDecision::Transient { retry_after }
                | RetryDecision::RateLimit { retry_after } => retry_after,
            };
            if attempt > self.retry.max_retries {
                return Err(self.failed(attempt, error));
            }
            let wait = self.retry.delay(attempt, retry_after);
            if let Some(budget) = &self.budget {
                if !budget.take(wait) {
                    return Err(ModelError::RetryBudget {
                        model: self.name.clone(),
                        attempts: attempt,
                        wait,
                        last: error.to_string(),
                    });
                }
            }
            tracing::debug!(model = %self.name, attempt, ?wait, %error, "retrying");
            tokio::time::sleep(wait).await;
        }
    }

    fn failed(&self, attempts: u32, source: ProviderError) -> ModelError {
        ModelError::Provider {
            model: self.name.clone(),
            provider: self.provider.kind().to_string(),
            attempts,
            source,
        }
    }
}
