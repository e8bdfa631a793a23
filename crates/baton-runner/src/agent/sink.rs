//! The agent loop's sink for a run: every billed attempt, call and command committed to
//! the store as it happens, the spending cap reserved before each call, the stop signal
//! and blocked models honoured before it.

use std::sync::Arc;

use async_trait::async_trait;
use baton_agent::{ActionEvent, AgentError, AgentSink, CallEvent};
use baton_models::{BilledAttempt, Completion, Model};
use baton_store::{NewAgentCall, NewAgentStep, NewAttempt, NewCall};
use baton_types::{Cost, Message, Phase};

use crate::agent::AgentShared as Shared;
use crate::agent::models::output_bound;
use crate::budget::over_every_attempt;

/// Writes one agent episode's events through the store.
pub(crate) struct StoreSink<'a> {
    pub shared: &'a Shared,
    pub model: &'a Arc<Model>,
    pub task_id: &'a str,
    pub episode_id: i64,
    /// The phase its calls are stored with (`prefix` for an anchor and a live prefix,
    /// `suffix` after a handoff's switch).
    pub phase: Phase,
    /// The conversation node after the last stored event.
    pub context: i64,
    /// The spending-cap reservation of the call in flight, and what it paid so far.
    pub reserved: Option<(Cost, Cost)>,
    /// Calls and commands this run stored.
    pub new_calls: u64,
}

impl StoreSink<'_> {
    /// The `calls` row of call `index`, its cost settled against the reservation.
    fn new_call(&mut self, index: u32, c: &Completion) -> NewCall {
        let (cost, unpriced) = match &c.cost {
            Ok(cost) => (*cost, None),
            Err(why) => (Cost::ZERO, Some(why.clone())),
        };
        if let Some(r) = self.reserved.as_mut() {
            r.1 += cost;
        }
        self.settle();
        NewCall {
            episode_id: self.episode_id,
            turn: index,
            phase: self.phase,
            model: self.model.name().to_string(),
            model_served: c.response.model_served.clone(),
            request_json: serde_json::to_string(&c.request).expect("a request always serializes"),
            request_sha256: c.request.fingerprint(),
            response_text: c.response.text.clone(),
            raw_response: c.response.raw.as_ref().map(|r| r.to_string()),
            usage: c.response.usage,
            cost,
            unpriced,
            latency_ms: c.latency.as_millis() as u64,
            attempts: c.attempts,
            finish_reason: c.response.finish_reason.clone(),
            batch_id: c.response.batch_id.clone(),
            batch_item: c.response.batch_item.clone(),
            cost_direct: None,
        }
    }

    /// Commit a call that is not a step (a handoff's summary): a `calls` row only.
    pub async fn record_plain(&mut self, index: u32, c: &Completion) -> Result<(), AgentError> {
        let call = self.new_call(index, c);
        let cost = call.cost;
        self.shared
            .store
            .record_call(call)
            .await
            .map_err(|e| self.sink_err(e))?;
        self.new_calls += 1;
        self.shared.observer.call(self.model.name(), cost);
        Ok(())
    }

    fn sink_err(&self, e: impl std::fmt::Display) -> AgentError {
        AgentError::Sink {
            task_id: self.task_id.to_string(),
            message: e.to_string(),
        }
    }

    fn stopped(&self, call: u32, reason: String) -> AgentError {
        AgentError::Stopped {
            task_id: self.task_id.to_string(),
            call,
            reason,
        }
    }

    /// Settle the reservation of the call in flight (what it paid is known).
    pub fn settle(&mut self) {
        if let Some((upper, paid)) = self.reserved.take() {
            self.shared.budget.settle(upper, paid);
        }
    }
}

/// The most one call with `messages` can cost: a token per byte of every message,
/// tool-call arguments included, plus framing, and a full output cap (an uncapped agent
/// call's reserve), for every attempt the call can be billed for.
fn upper_bound(model: &Model, messages: &[Message]) -> Cost {
    let prompt: u64 = messages
        .iter()
        .map(|m| {
            let calls: u64 = m
                .tool_calls
                .iter()
                .map(|c| (c.id.len() + c.name.len() + c.arguments.len()) as u64 + 8)
                .sum();
            m.content.len() as u64 + 8 + calls
        })
        .sum();
    over_every_attempt(
        model,
        model.price().upper_bound(prompt, output_bound(model)),
    )
}

/// A message as the JSON text a request carries (the form the store interns).
pub(crate) fn message_json(m: &Message) -> String {
    serde_json::to_string(m).expect("a message always serializes")
}

#[async_trait]
impl AgentSink for StoreSink<'_> {
    async fn before_call(&mut self, index: u32, messages: &[Message]) -> Result<(), AgentError> {
        if self.shared.stop.is_stopped() {
            return Err(self.stopped(index, "the run was stopped".into()));
        }
        if let Some(why) = self.shared.blocked(self.model.name()) {
            return Err(self.stopped(index, why));
        }
        let upper = upper_bound(self.model, messages);
        if !self.shared.budget.reserve(upper) {
            let cap = self.shared.budget.cap().unwrap_or_default();
            return Err(self.stopped(index, format!("spending cap {cap} reached")));
        }
        self.reserved = Some((upper, Cost::ZERO));
        Ok(())
    }

    async fn unusable(&mut self, index: u32, attempts: &[BilledAttempt]) -> Result<(), AgentError> {
        for a in attempts {
            if let (Some(r), Ok(c)) = (self.reserved.as_mut(), &a.cost) {
                r.1 += *c;
            }
            self.shared
                .store
                .record_attempt(NewAttempt {
                    episode_id: self.episode_id,
                    turn: index,
                    phase: self.phase,
                    model: self.model.name().to_string(),
                    attempt: a.attempt,
                    reason: a.reason.clone(),
                    raw_response: a.raw.clone(),
                    usage: a.usage,
                    cost: a.cost.clone(),
                    latency_ms: a.latency.as_millis() as u64,
                    batch_id: a.batch_id.clone(),
                    batch_item: a.batch_item.clone(),
                    cost_direct: None,
                })
                .await
                .map_err(|e| self.sink_err(e))?;
            self.shared.observer.billed_unusable(self.model.name());
        }
        Ok(())
    }

    async fn call(&mut self, e: &CallEvent<'_>) -> Result<(), AgentError> {
        let call = self.new_call(e.index, e.completion);
        let cost = call.cost;
        let (_, context) = self
            .shared
            .store
            .record_agent_call(
                NewAgentCall {
                    call,
                    actions_json: serde_json::to_string(e.actions)
                        .expect("actions always serialize"),
                    format_error: e.format_error.map(str::to_string),
                    added: e.added.iter().map(message_json).collect(),
                },
                self.context,
            )
            .await
            .map_err(|e| self.sink_err(e))?;
        self.context = context;
        self.new_calls += 1;
        self.shared.observer.call(self.model.name(), cost);
        Ok(())
    }

    async fn action(&mut self, e: &ActionEvent<'_>) -> Result<(), AgentError> {
        let step = NewAgentStep {
            episode_id: self.episode_id,
            call_index: e.call_index,
            action_index: e.action_index,
            command: e.action.command.clone(),
            tool_call_id: e.action.call_id.clone(),
            status_json: serde_json::to_string(&e.output.status)
                .expect("a status always serializes"),
            return_code: e.output.return_code(),
            duration_ms: e.output.duration.as_millis() as u64,
            output_bytes: e.output.output.total_bytes,
            observation: e.observation.map(message_json),
            submission: e.submission.map(str::to_string),
            snapshot: e.snapshot.map(|s| s.as_str().to_string()),
        };
        self.context = self
            .shared
            .store
            .record_agent_step(step, self.context)
            .await
            .map_err(|e| self.sink_err(e))?;
        Ok(())
    }
}
