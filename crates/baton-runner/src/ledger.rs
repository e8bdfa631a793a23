//! The call ledger: the one money path every paid call of either study takes.
//!
//! A chat turn, a LiC answer extraction, an agent step and an agent handoff's summary are
//! different calls, but what a call may cost and what must be kept of it are the same
//! rules, so they live here once ([`RunContext`] holds what the run shares):
//!
//! 1. **Before the call**, in this order: the stop signal, then a store that stopped after
//!    a failed write (which also stops the run, at once, retries included: replies in
//!    flight are kept, committed or spooled, nothing new is paid for), then a model
//!    blocked earlier in the run (a paid reply whose cost could not be computed), then
//!    room for the reply in the store's spool ([`spool_bound`]), then the spending cap,
//!    which bounds the call by its serialized body. A
//!    call that passes all three holds a [`Reservation`] of its upper-bound cost at the
//!    rate it can be billed at ([`call_upper_bound`]); one that does not is
//!    [`NotSent`], and nothing went out.
//! 2. **Every answered attempt is billed**, used or not: unusable attempts are committed
//!    as they are handed over ([`Reservation::record_unusable`]), each with its cost, its
//!    batch and item, and its direct-rate cost when it came from a batch.
//! 3. **The call** is committed next ([`Reservation::call_row`] builds the row, the caller
//!    stores it, with whatever else its study keeps beside it); only then is its batch
//!    acknowledged and the observer told ([`Reservation::recorded`]).
//! 4. **Settling**: the reservation is replaced by what the call paid when it is dropped,
//!    however the call ended (stored, failed, or the store failed), so a reservation can
//!    never leak out of the cap.
//!
//! The configured API keys are redacted (`****`) from every text this path stores: a
//! server may echo a key in a reply or an error message ([`RunContext::redact`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use baton_models::{
    BilledAttempt, Completion, Model, ModelError, ProviderError, Request, defaults,
};
use baton_store::{NewAttempt, NewCall, SpoolClaim, Store, StoreError};
use baton_types::{Cost, Message, Phase};

use crate::budget::Budget;
use crate::control::{Observer, StopSignal};

/// What every episode of a run shares, whichever study it belongs to.
pub(crate) struct RunContext {
    /// The run's store.
    pub store: Store,
    /// The stop signal (Ctrl-C, SIGTERM, a fatal error elsewhere).
    pub stop: StopSignal,
    /// Progress events.
    pub observer: Arc<dyn Observer>,
    /// The spending cap.
    pub budget: Budget,
    /// Models that may make no further call this run, with why.
    blocked: Mutex<BTreeMap<String, String>>,
    /// The blocked models whose calls cannot succeed this run (a dead end: a missing
    /// model, a refused key, no server), with why; the run ends its other work and
    /// says so.
    dead_ends: Mutex<BTreeMap<String, String>>,
    /// The configured API keys' values, never to be stored.
    secrets: baton_models::Secrets,
}

impl RunContext {
    /// A context over `store`, with no model blocked.
    pub fn new(
        store: Store,
        stop: StopSignal,
        observer: Arc<dyn Observer>,
        budget: Budget,
        secrets: Vec<String>,
    ) -> Self {
        // a store that stops after a failed write stops the run at once, so that no
        // model sends a further attempt (a retry included) that it might not keep
        let on_failure = stop.clone();
        store.on_failure(move || on_failure.stop());
        RunContext {
            store,
            stop,
            observer,
            budget,
            blocked: Mutex::default(),
            dead_ends: Mutex::default(),
            secrets: baton_models::Secrets::new(secrets),
        }
    }

    /// Why `model` may make no further call, if it may not.
    pub fn blocked(&self, model: &str) -> Option<String> {
        self.blocked
            .lock()
            .expect("blocked lock")
            .get(model)
            .cloned()
    }

    /// `model` makes no further call this run (the first reason given is kept).
    pub fn block(&self, model: &str, why: String) {
        self.blocked
            .lock()
            .expect("blocked lock")
            .entry(model.to_string())
            .or_insert(why);
    }

    /// Block `model` because a billed reply of it cannot be priced (`what`: which reply,
    /// `task "t1", call 3`; `reason`: the price card's): the one place and the one
    /// wording both studies use. Returns the message, which the run's error repeats.
    pub fn block_unpriced(&self, model: &str, what: &str, reason: &str) -> String {
        let why = format!(
            "model {model:?}: the cost of a billed reply ({what}) cannot be computed: {}",
            self.redact(reason)
        );
        self.block(model, why.clone());
        why
    }

    /// Why the first model blocked for an unpriced reply may make no further call, if
    /// any is (dead ends, [`RunContext::dead_ends`], are said apart).
    pub fn first_block(&self) -> Option<String> {
        let dead = self.dead_ends.lock().expect("dead-end lock");
        self.blocked
            .lock()
            .expect("blocked lock")
            .iter()
            .find(|(model, _)| !dead.contains_key(*model))
            .map(|(_, why)| why.clone())
    }

    /// Block `model` when `error` says that none of its calls can succeed this run: the
    /// server refused the model or the key (HTTP 401, 402, 403, 404, or a quota error),
    /// the request cannot be made, or no server answered at all after the retries. Each
    /// later call of the model is then not sent, so a wrong model id costs a few
    /// requests, not one per episode. Returns the message (model, endpoint, status,
    /// the provider's words and the fix) when it blocked.
    pub fn block_dead_end(&self, model: &Model, error: &ModelError) -> Option<String> {
        let ModelError::Provider {
            source, attempts, ..
        } = error
        else {
            return None;
        };
        let fix = match source.as_ref() {
            ProviderError::Status { status, kind, .. } => match status {
                401 | 403 => {
                    "check the API key the model's api_key_env names, and that it may use this model"
                }
                402 => "the account cannot pay for calls: check its billing",
                404 => {
                    "check the model id (model = \"provider/id\") and base_url: the server does not serve this model there"
                }
                429 if kind.contains("quota") || kind.contains("billing") => {
                    "the account's quota is spent: check its billing"
                }
                _ => return None,
            },
            ProviderError::Config(_) => "fix the model's settings",
            ProviderError::Connection(_) => "start the server, or fix base_url",
            _ => return None,
        };
        let name = model.name();
        let at = model
            .endpoint()
            .map(|url| format!(" at {url}"))
            .unwrap_or_default();
        let why = self.redact(&format!(
            "model {name:?}{at} failed after {attempts} attempt(s): {source}; no further call of it was sent this run: {fix}, then run the same command again"
        ));
        self.dead_ends
            .lock()
            .expect("dead-end lock")
            .entry(name.to_owned())
            .or_insert_with(|| why.clone());
        self.block(name, why.clone());
        Some(why)
    }

    /// Each model that met a dead end ([`RunContext::block_dead_end`]), with why it was
    /// stopped.
    pub fn dead_ends(&self) -> Vec<(String, String)> {
        self.dead_ends
            .lock()
            .expect("dead-end lock")
            .iter()
            .map(|(model, why)| (model.clone(), why.clone()))
            .collect()
    }

    /// `text` with every configured API key replaced by `****`.
    pub fn redact(&self, text: &str) -> String {
        self.secrets.redact(text).into_owned()
    }

    fn redact_opt(&self, text: Option<&str>) -> Option<String> {
        text.map(|t| self.redact(t))
    }

    /// Check the stop signal, the model's block and the cap, in that order, and reserve
    /// the upper-bound cost of sending `request`.
    pub fn reserve<'a>(
        &'a self,
        site: CallSite<'a>,
        request: &Request,
    ) -> Result<Reservation<'a>, NotSent> {
        if self.stop.is_stopped() {
            return Err(NotSent::Stopped);
        }
        if let Some(why) = self.store.failure() {
            // a write failed on the disk: the replies in flight are kept (committed or
            // spooled), but nothing new is paid for until the store can take it
            self.stop.stop();
            return Err(NotSent::StoreFailed(why.to_string()));
        }
        if let Some(why) = self.blocked(site.model.name()) {
            return Err(NotSent::Blocked(why));
        }
        // room for the reply in the spool, should the store fail while it is in flight
        // the request's body is measured once, for both the spool's room and the cap
        let body = site.model.body_bytes(request);
        let spool = match self.store.claim_spool(spool_bound(body, site.model)) {
            Ok(claim) => claim,
            Err(e) => {
                self.stop.stop();
                return Err(NotSent::StoreFailed(e.to_string()));
            }
        };
        let upper = call_upper_bound_from(body, site.model, &request.messages);
        let one = Cost(upper.0 / billed_attempts(site.model));
        if !self.budget.reserve(upper) {
            return Err(NotSent::CapReached(self.budget.cap().unwrap_or_default()));
        }
        Ok(Reservation {
            ctx: self,
            site,
            upper,
            one,
            paid: Cost::ZERO,
            _spool: spool,
        })
    }
}

/// The values of the API keys in these environment variables (the ones set), for
/// [`RunContext::new`] to redact.
/// A key shorter than [`baton_models::MIN_SECRET_LEN`] is not redacted, with a warning
/// naming its variable (see [`baton_models::redactable_secrets`]).
pub(crate) fn secrets_in<'a>(vars: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    baton_models::redactable_secrets(
        vars.into_iter()
            .filter_map(|v| std::env::var(v).ok().map(|value| (v, value))),
    )
}

/// What the reason of an attempt whose usage could not be read ends with: its stored
/// cost is an estimate, the call's upper bound for one attempt.
pub(crate) const ESTIMATED: &str = "usage unreadable: cost estimated at the call's upper bound";

/// Which call a reservation is for: the episode, the call's place in it, and the model.
#[derive(Clone, Copy)]
pub(crate) struct CallSite<'a> {
    /// The episode's row id.
    pub episode_id: i64,
    /// The turn (chat), call index (agent) or extraction attempt.
    pub turn: u32,
    /// The phase the call is stored under.
    pub phase: Phase,
    /// The model that answers it.
    pub model: &'a Model,
}

/// Why a call was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotSent {
    /// The run was stopped.
    Stopped,
    /// The call's upper bound would pass the spending cap.
    CapReached(Cost),
    /// The model makes no further call this run, with why.
    Blocked(String),
    /// A write failed on the disk; the store takes no new work this run.
    StoreFailed(String),
}

impl std::fmt::Display for NotSent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotSent::Stopped => f.write_str("the run was stopped"),
            NotSent::CapReached(cap) => write!(f, "spending cap {cap} reached"),
            NotSent::Blocked(why) => f.write_str(why),
            NotSent::StoreFailed(why) => write!(
                f,
                "the store stopped after a failed write ({why}); free space and resume"
            ),
        }
    }
}

/// One call's hold on the spending cap, and the record of what it paid. Dropping it
/// settles the cap to what was paid.
pub(crate) struct Reservation<'a> {
    ctx: &'a RunContext,
    site: CallSite<'a>,
    upper: Cost,
    /// One attempt's upper bound: what an attempt whose cost is unknown counts.
    one: Cost,
    paid: Cost,
    /// The call's room in the store's spool, released when dropped.
    _spool: SpoolClaim,
}

impl Reservation<'_> {
    /// Commit every billed attempt that could not be used, as it is handed over.
    ///
    /// An attempt whose cost is unknown counts its upper bound (one attempt's share of
    /// [`call_upper_bound`]) against the cap; one whose usage could not be read is
    /// stored at that bound with no usage, its reason saying the cost is
    /// [`ESTIMATED`], so that the spend line counts it too. An attempt the store could not commit but
    /// kept in its spool does not stop the others (nor the call's reply) from being
    /// handed over and kept the same way; the first such error is returned after.
    pub async fn record_unusable(&mut self, attempts: &[BilledAttempt]) -> Result<(), StoreError> {
        let model = self.site.model;
        let mut spooled = None;
        for a in attempts {
            let (cost, reason) = match (&a.cost, &a.usage) {
                (Ok(c), _) => (Ok(*c), self.ctx.redact(&a.reason)),
                (Err(_), None) => (
                    Ok(self.one),
                    format!("{}; {ESTIMATED}", self.ctx.redact(&a.reason)),
                ),
                (Err(why), Some(_)) => (Err(self.ctx.redact(why)), self.ctx.redact(&a.reason)),
            };
            self.paid += *cost.as_ref().unwrap_or(&self.one);
            let stored = self
                .ctx
                .store
                .record_attempt(NewAttempt {
                    episode_id: self.site.episode_id,
                    turn: self.site.turn,
                    phase: self.site.phase,
                    model: model.name().to_string(),
                    attempt: a.attempt,
                    reason,
                    raw_response: self.ctx.redact_opt(a.raw.as_deref()),
                    usage: a.usage,
                    cost,
                    latency_ms: a.latency.as_millis() as u64,
                    batch_id: a.batch_id.clone(),
                    batch_item: a.batch_item.clone(),
                    cost_direct: a
                        .batch_id
                        .as_ref()
                        .and(a.usage.as_ref())
                        .and_then(|u| model.direct_cost(u)),
                })
                .await;
            match stored {
                Ok(_) => {}
                Err(e @ StoreError::WriteFailed { spooled: true, .. }) => {
                    spooled.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
            if let Some(batch) = &a.batch_id {
                model.acknowledge(batch);
            }
            self.ctx.observer.billed_unusable(model.name());
        }
        match spooled {
            // kept in the spool: the caller goes on to hand over the reply too (the
            // store has stopped, so it is spooled as well) and then stops
            Some(_) if self.ctx.store.failure().is_some() => Ok(()),
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// The `calls` row of the completed call, its cost counted as paid. The response
    /// text in it is redacted: use it, not the completion's, for what the conversation
    /// carries on.
    pub fn call_row(&mut self, c: &Completion) -> NewCall {
        let model = self.site.model;
        let (cost, unpriced) = match &c.cost {
            Ok(cost) => (*cost, None),
            Err(why) => (Cost::ZERO, Some(self.ctx.redact(why))),
        };
        self.paid += cost;
        // serialized once: the stored text and its hash (the request's fingerprint)
        let request_json = serde_json::to_string(&c.request).expect("a request always serializes");
        let request_sha256 = {
            use sha2::{Digest, Sha256};
            hex::encode(Sha256::digest(request_json.as_bytes()))
        };
        NewCall {
            episode_id: self.site.episode_id,
            turn: self.site.turn,
            phase: self.site.phase,
            model: model.name().to_string(),
            model_served: c.response.model_served.clone(),
            request_json,
            request_sha256,
            response_text: self.ctx.redact(&c.response.text),
            raw_response: c
                .response
                .raw
                .as_ref()
                .map(|r| self.ctx.secrets.redact_owned(r.to_string())),
            usage: c.response.usage,
            cost,
            unpriced,
            latency_ms: c.latency.as_millis() as u64,
            attempts: c.attempts,
            finish_reason: c.response.finish_reason.clone(),
            batch_id: c.response.batch_id.clone(),
            batch_item: c.response.batch_item.clone(),
            cost_direct: c
                .response
                .batch_id
                .as_ref()
                .and_then(|_| model.direct_cost(&c.response.usage)),
        }
    }

    /// The call's row is committed: acknowledge its batch, tell the observer, settle.
    /// A reply whose cost cannot be computed blocks its model for the rest of the run;
    /// the error says why.
    pub fn recorded(self, c: &Completion) -> Result<(), String> {
        let model = self.site.model;
        if let Some(batch) = &c.response.batch_id {
            model.acknowledge(batch);
        }
        let cost = *c.cost.as_ref().unwrap_or(&Cost::ZERO);
        self.ctx.observer.call(model.name(), cost);
        match &c.cost {
            Ok(_) => Ok(()),
            Err(why) => Err(self.ctx.block_unpriced(
                model.name(),
                &format!(
                    "episode {}, turn {}, {}",
                    self.site.episode_id,
                    self.site.turn,
                    self.site.phase.as_str()
                ),
                why,
            )),
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.ctx.budget.settle(self.upper, self.paid);
    }
}

/// The most output tokens one call of `model` can bill: its configured cap, or, with
/// none, [`defaults::UNCAPPED_OUTPUT_BOUND`] (no current API returns more in one reply).
pub(crate) fn output_cap(model: &Model) -> u64 {
    model
        .config()
        .max_tokens
        .map_or(defaults::UNCAPPED_OUTPUT_BOUND, u64::from)
}

/// An upper bound on the tokens of a prompt's messages: one token per UTF-8 byte of
/// every message, tool-call ids, names and arguments included, plus eight per message
/// and per tool call for the wire format's framing. Byte-level tokenizers never produce
/// more tokens than bytes. A request carries more than its messages (tools, `extra`
/// settings such as `prediction`): [`request_tokens_upper_bound`] counts those too.
pub(crate) fn prompt_tokens_upper_bound(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| {
            let calls: u64 = m
                .tool_calls
                .iter()
                .map(|c| (c.id.len() + c.name.len() + c.arguments.len()) as u64 + 8)
                .sum();
            m.content.len() as u64 + 8 + calls
        })
        .sum()
}

/// The most bytes the store's spool needs to keep one call of `model` with these
/// messages, should the store fail while it is in flight: the serialized request twice
/// (its JSON escaped again inside the record), the reply three times (its text, its raw
/// body, and their escapes) at four bytes per output token, and 4 KiB for the rest of
/// the row. A reply past that (a server ignoring the output cap) is kept in its short
/// form, as a billed attempt without its text.
/// `request` is the serialized request's length ([`request_body_bytes`]).
pub(crate) fn spool_bound(request: u64, model: &Model) -> u64 {
    request
        .saturating_mul(2)
        .saturating_add(output_cap(model).saturating_mul(12))
        .saturating_add(4096)
}

/// The most answered (so billed) attempts one call of `model` can make: the reply it
/// uses plus up to `unusable_retries` unusable ones.
pub(crate) fn billed_attempts(model: &Model) -> i64 {
    i64::from(model.retry_policy().max_unusable_retries) + 1
}

/// An upper bound on the billed input tokens of the request `model` sends with these
/// messages: one token per byte of the serialized body its provider sends
/// ([`Model::body_bytes`]), which holds every input the request carries (`extra.tools`,
/// `extra.prediction` and any other `extra` content), and never less than
/// [`prompt_tokens_upper_bound`].
/// `body` is the serialized request's length ([`request_body_bytes`]).
pub(crate) fn request_tokens_upper_bound(body: u64, messages: &[Message]) -> u64 {
    body.max(prompt_tokens_upper_bound(messages))
}

/// The length of the body `model`'s provider sends for these messages
/// ([`Model::body_bytes`] of the request it builds).
pub(crate) fn request_body_bytes(model: &Model, messages: &[Message]) -> u64 {
    model.body_bytes(&model.request(messages.to_vec(), None))
}

/// The most one attempt of a call of `model` with these messages can cost, at the
/// dearest rate it can be billed at (a batched model whose failed items are retried
/// directly can pay the direct rates: [`Model::reservation_price`]).
/// `body` is the serialized request's length ([`request_body_bytes`]).
fn attempt_upper_bound(body: u64, model: &Model, messages: &[Message]) -> Cost {
    model.billed_upper_bound(
        request_tokens_upper_bound(body, messages),
        output_cap(model),
    )
}

/// The most one call of `model` with these messages can cost, over every attempt it can
/// be billed for ([`attempt_upper_bound`] each).
pub(crate) fn call_upper_bound(model: &Model, messages: &[Message]) -> Cost {
    call_upper_bound_from(request_body_bytes(model, messages), model, messages)
}

/// [`call_upper_bound`] from the request's serialized length ([`request_body_bytes`]
/// of the same model and messages).
pub(crate) fn call_upper_bound_from(body: u64, model: &Model, messages: &[Message]) -> Cost {
    let one = attempt_upper_bound(body, model, messages);
    Cost(one.0.saturating_mul(billed_attempts(model)))
}

/// What an episode paid, the one rule of both studies: every billed attempt of its own
/// calls (each used reply's call and each unusable attempt before it), its answer
/// extraction apart (reported as the extraction's spend).
pub(crate) fn episode_paid(
    calls: &[baton_store::CallCost],
    attempts: &[baton_store::AttemptCost],
) -> Cost {
    let calls: Cost = calls
        .iter()
        .filter(|c| c.phase != baton_types::Phase::Extraction)
        .map(|c| c.cost)
        .sum();
    let attempts: Cost = attempts
        .iter()
        .filter(|a| a.phase != baton_types::Phase::Extraction)
        .map(|a| a.cost)
        .sum();
    calls + attempts
}

/// What a prefix forked from an anchor costs the cell it is attributed to: the anchor's
/// prefix calls of turns 1..=k and their billed unusable attempts.
pub(crate) fn forked_prefix_cost(
    calls: &[baton_store::CallRow],
    attempts: &[baton_store::AttemptCost],
    k: usize,
) -> Cost {
    let prefix = |phase: baton_types::Phase, turn: u32| {
        phase == baton_types::Phase::Prefix && (turn as usize) <= k
    };
    let calls: Cost = calls
        .iter()
        .filter(|c| prefix(c.call.phase, c.call.turn))
        .map(|c| c.call.cost)
        .sum();
    let attempts: Cost = attempts
        .iter()
        .filter(|a| prefix(a.phase, a.turn))
        .map(|a| a.cost)
        .sum();
    calls + attempts
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use baton_models::testing::ScriptedProvider;
    use baton_models::{GenerateConfig, PriceCard, RetryPolicy};

    use super::*;

    fn model(retries: u32, max_tokens: Option<u32>) -> Model {
        let price = PriceCard::embedded().get("sim/lc").unwrap();
        Model::new(
            "lc",
            Arc::new(ScriptedProvider::new()),
            "lc",
            "sim/lc",
            price,
            1,
        )
        .with_config(GenerateConfig {
            max_tokens,
            ..GenerateConfig::default()
        })
        .with_retry(RetryPolicy {
            max_unusable_retries: retries,
            ..RetryPolicy::default()
        })
    }

    #[test]
    fn a_call_reserves_every_attempt_it_can_be_billed_for() {
        let price = PriceCard::embedded().get("sim/lc").unwrap();
        let messages = [Message::user("What is 2 + 2?")];
        // 14 bytes + 8 framing
        assert_eq!(prompt_tokens_upper_bound(&messages), 22);
        // the serialized request is longer than its messages' bytes
        let m = model(0, Some(1000));
        let body = request_tokens_upper_bound(request_body_bytes(&m, &messages), &messages);
        assert!(body > 22, "{body}");
        let one = price.upper_bound(body, 1000);
        assert!(one > Cost::ZERO);
        assert_eq!(call_upper_bound(&model(0, Some(1000)), &messages), one);
        assert_eq!(
            call_upper_bound(&model(2, Some(1000)), &messages),
            Cost(one.0 * 3)
        );
        // a cap that one attempt fits but three do not refuses the call
        let b = Budget::new(Some(Cost(one.0 * 2)), Cost::ZERO);
        assert!(!b.reserve(call_upper_bound(&model(2, Some(1000)), &messages)));
        assert!(b.reserve(call_upper_bound(&model(0, Some(1000)), &messages)));
    }

    #[test]
    fn a_call_with_no_output_cap_reserves_the_largest_reply_an_api_returns() {
        let price = PriceCard::embedded().get("sim/lc").unwrap();
        let messages = [Message::user("hi")];
        let m = model(0, None);
        assert_eq!(
            call_upper_bound(&m, &messages),
            price.upper_bound(
                request_tokens_upper_bound(request_body_bytes(&m, &messages), &messages),
                defaults::UNCAPPED_OUTPUT_BOUND
            )
        );
    }

    #[test]
    fn issue_32_extra_content_counts_toward_the_bound() {
        // See: issue 32 (`extra.tools` and `extra.prediction` paid $0.0638 against
        // `--max-cost 0.03`: the bound counted the messages only)
        let messages = [Message::user("What is 2 + 2?")];
        let plain = model(0, Some(10));
        let tools = "x".repeat(50_000);
        let mut config = plain.config().clone();
        config
            .extra
            .insert("tools".into(), serde_json::json!([{"description": tools}]));
        config.extra.insert(
            "prediction".into(),
            serde_json::json!({"content": "y".repeat(30_000)}),
        );
        let heavy = model(0, Some(10)).with_config(config);
        let light = request_tokens_upper_bound(request_body_bytes(&plain, &messages), &messages);
        let bound = request_tokens_upper_bound(request_body_bytes(&heavy, &messages), &messages);
        assert!(bound >= light + 80_000, "{light} -> {bound}");
        assert!(call_upper_bound(&heavy, &messages) > call_upper_bound(&plain, &messages));
    }

    #[test]
    fn tool_call_arguments_count_toward_the_prompt_bound() {
        let m = Message::assistant_with_calls(
            "",
            vec![baton_types::ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: "{\"command\":\"ls\"}".into(),
            }],
        );
        // 0 content + 8 framing, and 2 + 4 + 16 + 8 for the call
        assert_eq!(prompt_tokens_upper_bound(&[m]), 38);
    }

    /// A context over a fresh store with these keys configured.
    fn context(secrets: Vec<String>) -> (tempfile::TempDir, RunContext) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("results.sqlite")).unwrap();
        let ctx = RunContext::new(
            store,
            StopSignal::default(),
            Arc::new(crate::SilentObserver),
            Budget::new(None, Cost::ZERO),
            secrets,
        );
        (dir, ctx)
    }

    #[test]
    fn every_configured_key_is_redacted() {
        let (_dir, ctx) = context(vec![
            "sk-one-0001".into(),
            String::new(),
            "sk-two-0002".into(),
        ]);
        assert_eq!(
            ctx.redact("echo sk-one-0001 and sk-two-0002, twice sk-one-0001"),
            "echo **** and ****, twice ****"
        );
        assert_eq!(ctx.redact("nothing here"), "nothing here");
    }

    /// Both studies block a model through one call with one wording; the first reason
    /// is kept and a configured key never reaches it.
    // See: issue 31
    #[test]
    fn issue_31_a_model_is_blocked_in_one_place_with_one_message() {
        let (_dir, ctx) = context(vec!["sk-secret-0001".into()]);
        let why = ctx.block_unpriced("lc", "task \"t1\", call 3", "no rate for sk-secret-0001");
        assert_eq!(
            why,
            "model \"lc\": the cost of a billed reply (task \"t1\", call 3) cannot be computed: no rate for ****"
        );
        ctx.block_unpriced("lc", "task \"t2\", call 0", "later");
        assert_eq!(ctx.blocked("lc").as_deref(), Some(why.as_str()));
        assert_eq!(ctx.first_block().as_deref(), Some(why.as_str()));
        assert_eq!(ctx.blocked("hc"), None);
    }
}
