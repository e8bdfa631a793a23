//! The `Model` wrapper: one model role in an experiment, above a provider.
//!
//! It owns what a provider must not: the concurrency limit (a semaphore whose permit is
//! held for one attempt only, halved on rate limits and grown back after successes),
//! optional requests- and tokens-per-minute buckets ([`RateLimits`]), retries with
//! exponential backoff and jitter that honour the server's `retry-after`, a per-run
//! retry-time budget, and pricing. A call that returns is priced before it is handed
//! back, so a response never exists without its cost (or the reason it has none).
//!
//! Every attempt the server *answered* (a success status) is billed by the provider,
//! whether or not its reply could be used. [`Model::generate`] therefore hands back,
//! next to the result, every answered-but-unusable attempt with its usage and cost
//! ([`BilledAttempt`]), for the caller to store and count. Unusable replies are retried
//! under their own small limit ([`RetryPolicy::max_unusable_retries`]), which counts
//! the attempts earlier runs already stored, so a reply that is empty every time is not
//! paid for again at every resume. A caller that can use only some replies (a summary
//! must be text) says so with an [`Accept`] rule: a reply that fails it is such an
//! attempt too, in the same loop. A server's `retry-after` is clamped to
//! [`crate::defaults::MAX_RETRY_AFTER`], and an [`Interrupt`] cuts a retry wait short.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_types::{Cost, Message, Usage};
use rand::Rng;

use crate::ModelError;
use crate::limit::{Concurrency, RateLimits, TokenBucket};
use crate::price::Price;
use crate::provider::{GenerateConfig, Provider, ProviderError, Request, Response, RetryDecision};
use crate::redact::Secrets;

/// How a model retries failed calls.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First backoff delay.
    pub base_delay: Duration,
    /// Largest backoff delay (a server's `retry-after` may ask for more, up to
    /// [`crate::defaults::MAX_RETRY_AFTER`]).
    pub max_delay: Duration,
    /// Retries of a call whose reply was answered but unusable (default
    /// [`crate::defaults::UNUSABLE_RETRIES`]); such attempts are billed.
    pub max_unusable_retries: u32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 6,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_unusable_retries: crate::defaults::UNUSABLE_RETRIES,
        }
    }
}

impl RetryPolicy {
    /// The delay before retry number `attempt` (1-based): the server's request if it made
    /// one, else `min(base * 2^(attempt-1), max)` less up to 25 % jitter.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(d) = retry_after {
            return d.min(crate::defaults::MAX_RETRY_AFTER);
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

/// Hears about retries as they happen.
pub trait ModelObserver: Send + Sync {
    /// Model `model` will wait `wait` before attempt `attempt + 1`; `rate_limited` when
    /// the server said so (429).
    fn retrying(&self, model: &str, attempt: u32, wait: Duration, rate_limited: bool);
}

/// A flag that cuts retry waits short: once fired, a model waiting to retry gives up
/// at once with [`ModelError::Interrupted`]. Cloning shares the flag.
#[derive(Debug, Clone)]
pub struct Interrupt(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Interrupt {
    fn default() -> Self {
        Interrupt(Arc::new(tokio::sync::watch::Sender::new(false)))
    }
}

impl Interrupt {
    /// Fire it.
    pub fn fire(&self) {
        self.0.send_replace(true);
    }

    /// Whether it has fired.
    pub fn is_fired(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolve once it has fired.
    pub async fn fired(&self) {
        let mut rx = self.0.subscribe();
        // the sender lives in self, so the channel cannot close while we wait
        let _ = rx.wait_for(|fired| *fired).await;
    }
}

/// An attempt the server answered with a success status (so it is billed) whose reply
/// could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct BilledAttempt {
    /// Its number among the call's attempts (1-based, this run).
    pub attempt: u32,
    /// Why the reply could not be used.
    pub reason: String,
    /// The usage the reply stated, when it could be read.
    pub usage: Option<Usage>,
    /// Its exact cost: `Ok` when usage was read and priced, else why not.
    pub cost: Result<Cost, String>,
    /// The body as received (capped by the provider).
    pub raw: Option<String>,
    /// Wall time of the attempt.
    pub latency: Duration,
    /// The provider batch it came from, when it went through a batch API.
    pub batch_id: Option<String>,
    /// The batch item (`custom_id`) it answered, with `batch_id`.
    pub batch_item: Option<String>,
}

/// What a reply must be for its caller to use it ([`Model::generate_accepting`]). A reply
/// that fails the rule was answered, so it is billed: like a reply the provider itself
/// cannot use ([`ProviderError::Unusable`]), it becomes a [`BilledAttempt`] with the
/// rule's reason, priced from the usage it states, and is retried under
/// [`RetryPolicy::max_unusable_retries`] with the attempts earlier runs stored counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Accept {
    /// Any reply the provider could read: text, tool calls, or both.
    #[default]
    Any,
    /// Some text and no tool call, for a document the caller names (`what`: "a summary",
    /// "a Handover document"). Such a request may offer tools (a conversation that holds
    /// tool calls is only valid with them) while forbidding their use
    /// ([`crate::ToolChoice::NoTools`]); a model may call one all the same.
    Text {
        /// The document asked for, as the refusal's reason names it.
        what: &'static str,
    },
}

impl Accept {
    /// A compaction summary: `Text { what: "a summary" }`.
    pub const SUMMARY: Accept = Accept::Text { what: "a summary" };

    /// `Ok` when `response` may be used, else why not (the reason its billed attempt is
    /// stored with: "a summary must be text, and the reply made a tool call", "... and
    /// the reply has none").
    pub fn check(self, response: &Response) -> Result<(), String> {
        match self {
            Accept::Any => Ok(()),
            Accept::Text { what } if !response.tool_calls.is_empty() => Err(format!(
                "{what} must be text, and the reply made a tool call"
            )),
            Accept::Text { what } if response.text.trim().is_empty() => {
                Err(format!("{what} must be text, and the reply has none"))
            }
            Accept::Text { .. } => Ok(()),
        }
    }
}

/// What [`Model::generate`] did: the result, and every answered attempt it paid for
/// without being able to use, in order.
#[derive(Debug)]
pub struct Generation {
    /// The usable reply, or why there is none.
    pub result: Result<Completion, ModelError>,
    /// Answered but unusable attempts (billed; store and count them).
    pub unusable: Vec<BilledAttempt>,
}

/// A priced, timed response.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The provider's response.
    pub response: Response,
    /// Exact cost from the price card, or why it cannot be computed (a token class or
    /// tier without a rate, an overflow). The reply is paid for either way.
    pub cost: Result<Cost, String>,
    /// Attempts made (1 when the first try succeeded).
    pub attempts: u32,
    /// Wall time of the successful attempt (the request itself, not the wait for a
    /// concurrency slot or a rate-limit bucket).
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
    direct_price: Option<Price>,
    limit: Concurrency,
    requests: Option<TokenBucket>,
    tokens: Option<TokenBucket>,
    retry: RetryPolicy,
    budget: Option<Arc<RetryBudget>>,
    observer: Option<Arc<dyn ModelObserver>>,
    interrupt: Option<Interrupt>,
    /// Key values a reply must not carry on (a server may echo the key it was sent).
    secrets: Secrets,
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
            direct_price: None,
            limit: Concurrency::new(concurrency, true),
            requests: None,
            tokens: None,
            retry: RetryPolicy::default(),
            budget: None,
            observer: None,
            interrupt: None,
            secrets: Secrets::default(),
        }
    }

    /// Cut retry waits short when `interrupt` fires.
    pub fn with_interrupt(mut self, interrupt: Interrupt) -> Self {
        self.interrupt = Some(interrupt);
        self
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry
    }

    /// The token classes the provider's replies can carry besides uncached input and
    /// output.
    pub fn token_classes(&self) -> crate::TokenClasses {
        self.provider.token_classes()
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

    /// Set request and token rate limits, and whether rate limits shrink concurrency.
    pub fn with_rate_limits(mut self, limits: RateLimits) -> Self {
        self.requests = limits
            .requests_per_minute
            .map(|n| TokenBucket::per_minute(n.into()));
        self.tokens = limits.tokens_per_minute.map(TokenBucket::per_minute);
        self.limit.set_adaptive(limits.adaptive_concurrency);
        self
    }

    /// The effective concurrency now (the configured limit, less any rate-limit cuts).
    pub fn effective_concurrency(&self) -> usize {
        self.limit.current()
    }

    /// Tell `observer` about every retry (for progress displays).
    pub fn with_observer(mut self, observer: Arc<dyn ModelObserver>) -> Self {
        self.observer = Some(observer);
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

    /// Where its calls go (the provider's endpoint URL), when it has an address.
    pub fn endpoint(&self) -> Option<String> {
        self.provider.endpoint()
    }

    /// The price-card key.
    pub fn price_key(&self) -> &str {
        &self.price_key
    }

    /// Its rates from the price card.
    pub fn price(&self) -> &Price {
        &self.price
    }

    /// For a model priced at batch rates: its direct rates, to tell what batching saved,
    /// and to price a reply that came back without a batch id (a failed item retried
    /// directly, `batch_retry = "direct"`).
    pub fn with_direct_price(mut self, price: Price) -> Self {
        self.direct_price = Some(price);
        self
    }

    /// The most one attempt with `input_tokens` in and `output_tokens` out can be billed,
    /// at the rates it can be billed at ([`Model::reservation_price`]).
    pub fn billed_upper_bound(&self, input_tokens: u64, output_tokens: u64) -> Cost {
        self.reservation_price()
            .upper_bound(input_tokens, output_tokens)
    }

    /// The rates a reply is priced at: [`Model::price`], except that a reply from no
    /// batch of a model with direct rates set ([`Model::with_direct_price`]) pays those.
    fn price_for(&self, batch_id: Option<&str>) -> &Price {
        match (&self.direct_price, batch_id) {
            (Some(direct), None) => direct,
            _ => &self.price,
        }
    }

    /// The highest rates an attempt of this model may be billed at, which a spending
    /// cap reserves at: the direct rates ([`Model::with_direct_price`]) when its
    /// provider may send a batched call's retry directly
    /// ([`Provider::retries_direct`], `batch_retry = "direct"`), else [`Model::price`].
    pub fn reservation_price(&self) -> &Price {
        match &self.direct_price {
            Some(direct) if self.provider.retries_direct() => direct,
            _ => &self.price,
        }
    }

    /// What `usage` would have cost at the direct rates, for a model priced at batch
    /// rates whose card has them (`None` otherwise, or when it cannot be computed).
    pub fn direct_cost(&self, usage: &Usage) -> Option<Cost> {
        self.direct_price?.cost(&self.price_key, usage).ok()
    }

    /// The generation settings.
    pub fn config(&self) -> &GenerateConfig {
        &self.config
    }

    /// Tell the provider that a reply from batch `batch_id` (a [`Response::batch_id`]
    /// or [`BilledAttempt::batch_id`]) is stored ([`Provider::acknowledge`]).
    pub fn acknowledge(&self, batch_id: &str) {
        self.provider.acknowledge(batch_id);
    }

    /// The bytes of the body this model's provider would send for `request`
    /// ([`Provider::body_bytes`]): every input it carries (messages, tools, and any
    /// `extra` setting such as `tools` or `prediction`), for the spending cap's bound.
    pub fn body_bytes(&self, request: &Request) -> u64 {
        self.provider.body_bytes(request)
    }

    /// The request this model would send for these messages.
    pub fn request(&self, messages: Vec<Message>, seed: Option<u64>) -> Request {
        Request {
            model: self.provider_model.clone(),
            messages,
            config: self.config.clone(),
            seed,
            tools: Vec::new(),
            tool_choice: None,
        }
    }

    /// Send a request, retrying what the provider calls retryable, and price the result.
    ///
    /// `prior_unusable` is how many answered-but-unusable attempts of this call earlier
    /// runs stored; they count against [`RetryPolicy::max_unusable_retries`], so with
    /// the limit spent no request is sent at all. Any reply the provider can read is
    /// used ([`Accept::Any`]).
    pub async fn generate(&self, request: Request, prior_unusable: u32) -> Generation {
        self.generate_accepting(request, prior_unusable, Accept::Any)
            .await
    }

    /// [`Model::generate`], using only a reply that passes `accept`: one that fails it is
    /// an unusable billed attempt with the rule's reason, retried in the same loop and
    /// under the same limit as a reply the provider cannot use. With the limit spent the
    /// result is the same [`ModelError::Provider`] error, its source
    /// [`ProviderError::Unusable`] with the last reason.
    pub async fn generate_accepting(
        &self,
        request: Request,
        prior_unusable: u32,
        accept: Accept,
    ) -> Generation {
        let mut unusable = Vec::new();
        let mut result = self
            .generate_inner(request, prior_unusable, accept, &mut unusable)
            .await;
        if !self.secrets.is_empty() {
            if let Ok(c) = &mut result {
                self.redact_response(&mut c.response);
            }
            for a in &mut unusable {
                a.reason = self.redact(&a.reason);
                a.raw = a.raw.as_deref().map(|r| self.redact(r));
            }
        }
        Generation { result, unusable }
    }

    /// Replace these key values by `****` in every reply this model returns (its text,
    /// tool-call arguments and raw body, and unusable attempts' reasons and bodies), so
    /// a key a server echoes is never stored, nor sent on in a later turn or to another
    /// model.
    pub fn with_secrets(mut self, secrets: Vec<String>) -> Self {
        self.secrets = Secrets::new(secrets);
        self
    }

    fn redact(&self, text: &str) -> String {
        self.secrets.redact(text).into_owned()
    }

    fn redact_response(&self, r: &mut Response) {
        r.text = self.secrets.redact_owned(std::mem::take(&mut r.text));
        for call in &mut r.tool_calls {
            call.arguments = self
                .secrets
                .redact_owned(std::mem::take(&mut call.arguments));
        }
        if let Some(raw) = &mut r.raw {
            self.secrets.redact_json(raw);
        }
    }

    async fn generate_inner(
        &self,
        request: Request,
        prior_unusable: u32,
        accept: Accept,
        billed: &mut Vec<BilledAttempt>,
    ) -> Result<Completion, ModelError> {
        let unusable_limit = self.retry.max_unusable_retries.saturating_add(1);
        if prior_unusable >= unusable_limit {
            return Err(self.failed(
                0,
                ProviderError::Unusable {
                    message: format!(
                        "{prior_unusable} answered attempt(s) stored by earlier runs were unusable; the limit is {unusable_limit} (unusable_retries = {})",
                        self.retry.max_unusable_retries
                    ),
                    usage: None,
                    raw: None,
                    batch: None,
                },
            ));
        }
        let estimate = estimate_tokens(&request);
        let mut attempt = 0u32;
        let mut unusable_seen = prior_unusable;
        loop {
            attempt += 1;
            // a stopped run (Ctrl-C, or a store that stopped after a failed write) sends
            // no further attempt, a retry included
            if let Some(stop) = &self.interrupt
                && stop.is_fired()
            {
                return Err(ModelError::Interrupted {
                    model: self.name.clone(),
                    attempts: attempt - 1,
                    wait: Duration::ZERO,
                });
            }
            let (result, latency) = {
                let _slot = self.limit.acquire().await;
                if let Some(bucket) = &self.requests {
                    bucket.acquire(1).await;
                }
                if let Some(bucket) = &self.tokens {
                    bucket.acquire(estimate).await;
                }
                // latency is the call's own time, not the wait for a slot or a bucket
                let started = Instant::now();
                let result = match &self.interrupt {
                    Some(stop) if self.provider.abandonable(&request) => {
                        tokio::select! {
                            r = self.provider.generate(&request) => r,
                            () = stop.fired() => {
                                return Err(ModelError::LeftInBatch {
                                    model: self.name.clone(),
                                    attempts: attempt,
                                });
                            }
                        }
                    }
                    _ => self.provider.generate(&request).await,
                };
                (result, started.elapsed())
            };
            let settle = |usage: &Usage| {
                if let Some(bucket) = &self.tokens {
                    let used = usage.total_input().saturating_add(usage.output);
                    bucket.settle(i64::try_from(used).unwrap_or(i64::MAX) - estimate as i64);
                }
            };
            let result = result
                .and_then(implausible_usage)
                .and_then(|r| accepted(r, accept));
            let error = match result {
                Ok(response) => {
                    settle(&response.usage);
                    self.limit.on_success();
                    let cost = self
                        .price_for(response.batch_id.as_deref())
                        .cost(&self.price_key, &response.usage)
                        .map_err(|e| e.to_string());
                    return Ok(Completion {
                        response,
                        cost,
                        attempts: attempt,
                        latency,
                        request,
                    });
                }
                Err(e) => e,
            };
            if let ProviderError::Unusable {
                message,
                usage,
                raw,
                batch,
            } = &error
            {
                let batch_id = batch.as_ref().map(|b| b.0.as_str());
                let usage = &usage.filter(|u| plausible(u).is_ok());
                if let Some(u) = usage {
                    settle(u);
                }
                let cost = match usage {
                    Some(u) => self
                        .price_for(batch_id)
                        .cost(&self.price_key, u)
                        .map_err(|e| e.to_string()),
                    None => Err("the reply states no readable usage".to_string()),
                };
                billed.push(BilledAttempt {
                    attempt,
                    reason: message.clone(),
                    usage: *usage,
                    cost,
                    raw: raw.clone(),
                    latency,
                    batch_id: batch_id.map(str::to_string),
                    batch_item: batch.as_ref().map(|b| b.1.clone()),
                });
                unusable_seen += 1;
                if unusable_seen >= unusable_limit {
                    return Err(self.failed(attempt, error));
                }
            }
            let retry_after = match self.provider.classify(&error) {
                RetryDecision::No => return Err(self.failed(attempt, error)),
                RetryDecision::Transient { retry_after } => retry_after,
                RetryDecision::RateLimit { retry_after } => {
                    self.limit.on_rate_limit();
                    retry_after
                }
            };
            if attempt > self.retry.max_retries {
                return Err(self.failed(attempt, error));
            }
            let wait = self.retry.delay(attempt, retry_after);
            if let Some(budget) = &self.budget
                && !budget.take(wait)
            {
                return Err(ModelError::RetryBudget {
                    model: self.name.clone(),
                    attempts: attempt,
                    wait,
                    last: error.to_string(),
                });
            }
            tracing::debug!(model = %self.name, attempt, ?wait, %error, "retrying");
            if let Some(observer) = &self.observer {
                let rate_limited = matches!(
                    self.provider.classify(&error),
                    RetryDecision::RateLimit { .. }
                );
                observer.retrying(&self.name, attempt, wait, rate_limited);
            }
            match &self.interrupt {
                Some(stop) => {
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = stop.fired() => {
                            return Err(ModelError::Interrupted {
                                model: self.name.clone(),
                                attempts: attempt,
                                wait,
                            });
                        }
                    }
                }
                None => tokio::time::sleep(wait).await,
            }
        }
    }

    fn failed(&self, attempts: u32, source: ProviderError) -> ModelError {
        ModelError::Provider {
            model: self.name.clone(),
            provider: self.provider.kind().to_string(),
            attempts,
            source: Box::new(source),
        }
    }
}

/// `Ok` when every count of `usage` is at most [`crate::defaults::MAX_PLAUSIBLE_TOKENS`],
/// else which count is not.
pub fn plausible(usage: &Usage) -> Result<(), String> {
    let max = crate::defaults::MAX_PLAUSIBLE_TOKENS;
    [
        ("input", usage.uncached_in),
        ("cache read", usage.cache_read),
        ("cache write", usage.cache_write_5m),
        ("long cache write", usage.cache_write_1h),
        ("output", usage.output),
        ("reasoning", usage.reasoning),
    ]
    .into_iter()
    .find(|(_, n)| *n > max)
    .map_or(Ok(()), |(class, n)| {
        Err(format!(
            "the reply states {n} {class} tokens, more than any API serves ({max}); its usage is treated as unreadable"
        ))
    })
}

/// A reply whose stated usage is implausible ([`plausible`]) as what it is: answered
/// (billed) but unusable, with no readable usage, so it is billed at its call's bound
/// rather than at a number that would break every sum.
fn implausible_usage(response: Response) -> Result<Response, ProviderError> {
    match plausible(&response.usage) {
        Ok(()) => Ok(response),
        Err(why) => Err(ProviderError::Unusable {
            message: why,
            usage: None,
            raw: response.raw.as_ref().map(|r| r.to_string()),
            batch: response
                .batch_id
                .clone()
                .map(|b| Box::new((b, response.batch_item.clone().unwrap_or_default()))),
        }),
    }
}

/// A reply that fails `accept` as what it is: answered (billed) but unusable, with the
/// usage it states, so the attempt is priced and retried as any unusable reply.
fn accepted(response: Response, accept: Accept) -> Result<Response, ProviderError> {
    match accept.check(&response) {
        Ok(()) => Ok(response),
        Err(why) => Err(ProviderError::Unusable {
            message: why,
            usage: Some(response.usage),
            raw: response.raw.as_ref().map(|r| r.to_string()),
            batch: response
                .batch_id
                .clone()
                .map(|b| Box::new((b, response.batch_item.clone().unwrap_or_default()))),
        }),
    }
}

/// What a request may count against a tokens-per-minute limit: its prompt estimated
/// by the [`crate::tokens`] heuristic, plus its output cap.
fn estimate_tokens(request: &Request) -> u64 {
    let prompt: u64 = request
        .messages
        .iter()
        .map(crate::tokens::message_tokens)
        .sum();
    prompt + u64::from(request.config.max_tokens.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PriceCard;
    use crate::limit::RateLimits;
    use crate::testing::ScriptedProvider;

    fn scripted(errors: Vec<ProviderError>) -> Arc<ScriptedProvider> {
        Arc::new(ScriptedProvider::new().then_errs(errors))
    }

    fn status(status: u16, kind: &str, retry_after: Option<Duration>) -> ProviderError {
        ProviderError::Status {
            status,
            kind: kind.into(),
            message: "m".into(),
            retry_after,
        }
    }

    fn model(p: Arc<ScriptedProvider>, concurrency: usize) -> Model {
        let price = PriceCard::embedded().get("sim/lc").unwrap();
        Model::new("m", p, "x", "sim/lc", price, concurrency)
    }

    fn request(m: &Model) -> Request {
        let mut r = m.request(vec![Message::user("abcd".repeat(10))], None);
        r.config.max_tokens = Some(100);
        r
    }

    #[tokio::test(start_paused = true)]
    async fn transient_errors_back_off_exponentially_with_jitter() {
        let p = scripted(vec![
            status(500, "api_error", None),
            status(529, "overloaded_error", None),
            ProviderError::Connection("reset".into()),
        ]);
        let m = model(p.clone(), 4);
        let c = m.generate(request(&m), 0).await.result.unwrap();
        assert_eq!(c.attempts, 4);
        let t = p.call_offsets();
        let gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
        for (gap, full) in gaps.iter().zip([0.5, 1.0, 2.0]) {
            assert!(*gap > full * 0.75 - 1e-9 && *gap <= full, "{gaps:?}");
        }
        // 529 and 5xx never shrink concurrency
        assert_eq!(m.effective_concurrency(), 4);
        // 10 uncached input tokens at 2e-7 USD, 5 output tokens at 1.2e-6 USD
        assert_eq!(c.cost, Ok(Cost(10 * 200_000 + 5 * 1_200_000)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_delay_is_followed_exactly_and_rate_limits_shrink_concurrency() {
        let p = scripted(vec![status(
            429,
            "rate_limit_exceeded",
            Some(Duration::from_secs(7)),
        )]);
        let m = model(p.clone(), 8);
        m.generate(request(&m), 0).await.result.unwrap();
        assert_eq!(p.call_offsets()[1], Duration::from_secs(7));
        // halved by the 429, then the success starts a window to grow back
        assert_eq!(m.effective_concurrency(), 4);
        for _ in 0..4 {
            m.generate(request(&m), 0).await.result.unwrap();
        }
        assert_eq!(m.effective_concurrency(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn quota_and_billing_errors_are_never_retried() {
        for kind in [
            "insufficient_quota",
            "billing_error",
            "enforced_spend_limit_reached",
        ] {
            let p = scripted(vec![status(429, kind, Some(Duration::from_secs(1)))]);
            let m = model(p.clone(), 1);
            let err = m.generate(request(&m), 0).await.result.unwrap_err();
            assert!(
                matches!(err, ModelError::Provider { attempts: 1, .. }),
                "{err}"
            );
            assert_eq!(p.call_offsets().len(), 1);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retries_run_out_and_the_budget_is_a_distinct_error() {
        let p = scripted((0..10).map(|_| status(500, "", None)).collect());
        let m = model(p.clone(), 1).with_retry(RetryPolicy {
            max_retries: 2,
            ..RetryPolicy::default()
        });
        let err = m.generate(request(&m), 0).await.result.unwrap_err();
        assert!(
            matches!(err, ModelError::Provider { attempts: 3, .. }),
            "{err}"
        );

        let p = scripted(vec![status(
            429,
            "rate_limit_exceeded",
            Some(Duration::from_secs(60)),
        )]);
        let m = model(p.clone(), 1).with_budget(RetryBudget::new(Duration::from_secs(30)));
        let t0 = tokio::time::Instant::now();
        let err = m.generate(request(&m), 0).await.result.unwrap_err();
        assert!(
            matches!(&err, ModelError::RetryBudget { attempts: 1, wait, .. } if *wait == Duration::from_secs(60)),
            "{err}"
        );
        assert_eq!(t0.elapsed(), Duration::ZERO, "it fails without waiting");
    }

    #[tokio::test(start_paused = true)]
    async fn requests_per_minute_pace_calls() {
        let p = scripted(vec![]);
        let m = Arc::new(model(p.clone(), 8).with_rate_limits(RateLimits {
            requests_per_minute: Some(3),
            ..RateLimits::default()
        }));
        let handles: Vec<_> = (0..5)
            .map(|_| {
                let m = m.clone();
                tokio::spawn(async move { m.generate(request(&m), 0).await.result.unwrap() })
            })
            .collect();
        for h in handles {
            h.await.unwrap();
        }
        let t = p.call_offsets();
        let secs: Vec<u64> = t.iter().map(|d| d.as_secs()).collect();
        assert_eq!(secs, vec![0, 0, 0, 20, 40]);
    }

    #[tokio::test(start_paused = true)]
    async fn tokens_per_minute_reserve_the_estimate_and_settle_to_usage() {
        let p = scripted(vec![]);
        // each request is estimated at 14 prompt tokens + 100 output cap = 114,
        // and settles to 15 tokens of actual usage
        let m = model(p.clone(), 1).with_rate_limits(RateLimits {
            tokens_per_minute: Some(120),
            ..RateLimits::default()
        });
        let t0 = tokio::time::Instant::now();
        m.generate(request(&m), 0).await.result.unwrap();
        m.generate(request(&m), 0).await.result.unwrap();
        // after settling, 105 tokens were left; the second call's 114 needed 9 more
        // at 2 tokens per second
        assert_eq!(t0.elapsed(), Duration::from_millis(4500));
    }

    fn unusable(usage: Option<Usage>) -> ProviderError {
        ProviderError::Unusable {
            message: "empty content".into(),
            usage,
            raw: Some("{}".into()),
            batch: None,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn unusable_replies_are_billed_attempts_under_their_own_limit() {
        let used = Usage {
            uncached_in: 10,
            output: 1,
            ..Usage::default()
        };
        let p = scripted(vec![unusable(Some(used)), unusable(None)]);
        let m = model(p.clone(), 1);
        let g = m.generate(request(&m), 0).await;
        assert_eq!(g.result.unwrap().attempts, 3);
        assert_eq!(g.unusable.len(), 2);
        assert_eq!(g.unusable[0].cost, Ok(Cost(10 * 200_000 + 1_200_000)));
        assert_eq!(g.unusable[0].attempt, 1);
        assert!(g.unusable[1].cost.is_err(), "no usage, no cost");

        // three unusable replies in a row: the default limit (two retries) is spent
        let p = scripted((0..5).map(|_| unusable(Some(used))).collect());
        let m = model(p.clone(), 1);
        let g = m.generate(request(&m), 0).await;
        assert!(g.result.is_err());
        assert_eq!(g.unusable.len(), 3);
        assert_eq!(p.requests().len(), 3);

        // attempts stored by an earlier run count: one left, then none
        let p = scripted((0..5).map(|_| unusable(Some(used))).collect());
        let m = model(p.clone(), 1);
        assert_eq!(m.generate(request(&m), 2).await.unusable.len(), 1);
        let g = m.generate(request(&m), 3).await;
        let err = g.result.unwrap_err().to_string();
        assert!(err.contains("earlier runs"), "{err}");
        assert_eq!(p.requests().len(), 1, "no request once the limit is spent");
    }

    #[tokio::test(start_paused = true)]
    async fn a_reply_the_rule_refuses_is_billed_and_shares_the_unusable_limit() {
        // an empty text the output cap explains passes the provider (finish reason
        // `length`), but is no summary
        let cut = Response {
            text: "  \n".into(),
            usage: Usage {
                uncached_in: 10,
                output: 100,
                ..Usage::default()
            },
            finish_reason: Some("length".into()),
            raw: Some(serde_json::json!({"cut": true})),
            ..ScriptedProvider::reply("")
        };
        let p = Arc::new(
            ScriptedProvider::new()
                .then_ok(cut.clone())
                .then_err(unusable(None))
                .then_ok(ScriptedProvider::reply("the summary")),
        );
        let m = model(p.clone(), 1);
        let g = m.generate_accepting(request(&m), 0, Accept::SUMMARY).await;
        let c = g.result.unwrap();
        assert_eq!(c.response.text, "the summary");
        assert_eq!(c.attempts, 3);
        let reasons: Vec<&str> = g.unusable.iter().map(|a| a.reason.as_str()).collect();
        assert_eq!(
            reasons,
            [
                "a summary must be text, and the reply has none",
                "empty content"
            ]
        );
        let a = &g.unusable[0];
        assert_eq!(a.attempt, 1);
        assert_eq!(a.usage, Some(cut.usage));
        // 10 uncached input tokens at 2e-7 USD, 100 output tokens at 1.2e-6 USD
        assert_eq!(a.cost, Ok(Cost(10 * 200_000 + 100 * 1_200_000)));
        assert_eq!(a.raw.as_deref(), Some(r#"{"cut":true}"#));
        // the rule's failures and the provider's count against one limit (two retries)
        let p = Arc::new(
            ScriptedProvider::new()
                .then_err(unusable(None))
                .then_ok(cut.clone())
                .then_err(unusable(None)),
        );
        let m = model(p.clone(), 1);
        let g = m.generate_accepting(request(&m), 0, Accept::SUMMARY).await;
        assert!(
            matches!(g.result, Err(ModelError::Provider { attempts: 3, .. })),
            "{:?}",
            g.result
        );
        assert_eq!(g.unusable.len(), 3);
        assert_eq!(p.requests().len(), 3);
        // any reply is used when no rule is asked for
        let p = Arc::new(ScriptedProvider::new().then_ok(cut.clone()));
        let m = model(p, 1);
        let c = m.generate(request(&m), 0).await.result.unwrap();
        assert_eq!((c.response.text.as_str(), c.attempts), ("  \n", 1));
    }

    #[test]
    fn a_summary_or_a_document_is_text_without_a_tool_call() {
        let text = ScriptedProvider::reply("done: fixed the parser");
        let call = Response {
            tool_calls: vec![baton_types::ToolCall {
                id: "c".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            }],
            ..text.clone()
        };
        let blank = ScriptedProvider::reply("\t\n ");
        assert_eq!(Accept::SUMMARY.check(&text), Ok(()));
        assert_eq!(
            Accept::SUMMARY.check(&call).unwrap_err(),
            "a summary must be text, and the reply made a tool call"
        );
        assert_eq!(
            Accept::SUMMARY.check(&blank).unwrap_err(),
            "a summary must be text, and the reply has none"
        );
        let document = Accept::Text {
            what: "a Handover document",
        };
        assert_eq!(document.check(&text), Ok(()));
        assert_eq!(
            document.check(&call).unwrap_err(),
            "a Handover document must be text, and the reply made a tool call"
        );
        assert_eq!(
            document.check(&blank).unwrap_err(),
            "a Handover document must be text, and the reply has none"
        );
        for r in [&text, &call, &blank] {
            assert_eq!(Accept::Any.check(r), Ok(()));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn issue_32_implausible_usage_is_unreadable_usage() {
        // See: issue 32 (`u64::MAX` output tokens was stored as -1, and 4e11 tokens
        // overflowed every cost sum)
        for output in [u64::MAX, 400_000_000_000] {
            let reply = Response {
                usage: Usage {
                    uncached_in: 10,
                    output,
                    ..Usage::default()
                },
                ..ScriptedProvider::reply("absurd")
            };
            let p = Arc::new(ScriptedProvider::new().then_ok(reply));
            let m = model(p.clone(), 1);
            let g = m.generate(request(&m), 0).await;
            assert_eq!(g.unusable.len(), 1);
            let a = &g.unusable[0];
            assert_eq!(a.usage, None);
            assert!(a.reason.contains(&output.to_string()), "{}", a.reason);
            assert!(a.cost.is_err());
            // the retry got a plausible reply
            assert_eq!(g.result.unwrap().attempts, 2);
        }
        assert!(
            plausible(&Usage {
                output: crate::defaults::MAX_PLAUSIBLE_TOKENS,
                ..Usage::default()
            })
            .is_ok()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn issue_32_a_fired_interrupt_sends_no_further_attempt() {
        // See: issue 32 (calls in flight kept retrying after the store stopped)
        let stop = Interrupt::default();
        let p = scripted(vec![unusable(None), unusable(None)]);
        let m = model(p.clone(), 1).with_interrupt(stop.clone());
        stop.fire();
        let g = m.generate(request(&m), 0).await;
        assert!(matches!(
            g.result,
            Err(ModelError::Interrupted { attempts: 0, .. })
        ));
        assert_eq!(p.requests().len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_used_reply_without_a_rate_is_kept_with_the_reason() {
        let reply = Response {
            usage: Usage {
                cache_write_1h: 5,
                ..Usage::default()
            },
            ..ScriptedProvider::reply("paid")
        };
        let p = Arc::new(ScriptedProvider::new().then_ok(reply));
        let m = model(p, 1);
        let c = m.generate(request(&m), 0).await.result.unwrap();
        assert_eq!(c.response.text, "paid");
        let why = c.cost.unwrap_err();
        assert!(
            why.contains("cache_creation_input_token_cost_above_1hr"),
            "{why}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_huge_retry_after_is_clamped_and_an_interrupt_cuts_the_wait() {
        let p = scripted(vec![status(
            429,
            "rate_limit_exceeded",
            Some(Duration::MAX),
        )]);
        let m = model(p.clone(), 1);
        m.generate(request(&m), 0).await.result.unwrap();
        assert_eq!(p.call_offsets()[1], crate::defaults::MAX_RETRY_AFTER);

        let stop = Interrupt::default();
        let p = scripted(vec![status(
            429,
            "rate_limit_exceeded",
            Some(Duration::from_secs(200)),
        )]);
        let m = Arc::new(model(p.clone(), 1).with_interrupt(stop.clone()));
        let t0 = tokio::time::Instant::now();
        let task = {
            let m = m.clone();
            tokio::spawn(async move { m.generate(request(&m), 0).await })
        };
        tokio::time::sleep(Duration::from_secs(1)).await;
        stop.fire();
        let g = task.await.unwrap();
        assert!(matches!(g.result, Err(ModelError::Interrupted { .. })));
        assert!(t0.elapsed() < Duration::from_secs(2));
        assert_eq!(p.requests().len(), 1);
    }
}
