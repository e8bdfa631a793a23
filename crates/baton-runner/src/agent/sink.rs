//! The agent loop's sink for a run: each call goes through the run's call ledger (the
//! stop signal, blocked models and the spending cap before it, every billed attempt and
//! the call committed as they happen, the reservation settled after), and every command
//! is committed with its snapshot.

use std::sync::Arc;

use async_trait::async_trait;
use baton_agent::{ActionEvent, AgentError, AgentSink, CallEvent};
use baton_models::{BilledAttempt, Completion, Model, ModelError};
use baton_store::{NewAgentCall, NewAgentStep, StoreError};
use baton_types::{Message, Phase};

use crate::ledger::{CallSite, Reservation, RunContext};

/// Writes one agent episode's events through the store.
pub(crate) struct StoreSink<'a> {
    pub shared: &'a RunContext,
    pub model: &'a Arc<Model>,
    pub task_id: &'a str,
    pub episode_id: i64,
    /// The phase its calls are stored with (`prefix` for an anchor and a live prefix,
    /// `suffix` after a handoff's switch).
    pub phase: Phase,
    /// The conversation node after the last stored event.
    pub context: i64,
    /// The ledger's reservation for the call in flight.
    pub reserved: Option<Reservation<'a>>,
    /// Calls and commands this run stored.
    pub new_calls: u64,
    /// The store error behind the last [`AgentError::Sink`], kept with its cause.
    pub store_error: Option<StoreError>,
}

impl<'a> StoreSink<'a> {
    /// A sink for `episode_id`'s calls of `model`, stored under `phase` after the
    /// conversation node `context`.
    pub fn new(
        shared: &'a RunContext,
        model: &'a Arc<Model>,
        task_id: &'a str,
        episode_id: i64,
        phase: Phase,
        context: i64,
    ) -> Self {
        StoreSink {
            shared,
            model,
            task_id,
            episode_id,
            phase,
            context,
            reserved: None,
            new_calls: 0,
            store_error: None,
        }
    }

    /// The reservation of call `index`, made before it (a call whose reservation is
    /// missing was not announced with `before_call`: reserve it now).
    fn reservation(
        &mut self,
        index: u32,
        messages: &[Message],
    ) -> Result<&mut Reservation<'a>, AgentError> {
        if self.reserved.is_none() {
            let site = self.site(index);
            let request = self.model.request(messages.to_vec(), None);
            let r = self
                .shared
                .reserve(site, &request)
                .map_err(|n| self.stopped(index, n.to_string()))?;
            self.reserved = Some(r);
        }
        Ok(self.reserved.as_mut().expect("just reserved"))
    }

    fn site(&self, index: u32) -> CallSite<'a> {
        CallSite {
            episode_id: self.episode_id,
            turn: index,
            phase: self.phase,
            model: self.model.as_ref(),
        }
    }

    /// Commit a call that is not a step (a handoff's summary): a `calls` row only.
    pub async fn record_plain(&mut self, index: u32, c: &Completion) -> Result<(), AgentError> {
        let call = self.reservation(index, &c.request.messages)?.call_row(c);
        let stored = self.shared.store.record_call(call).await;
        self.stored(stored)?;
        self.new_calls += 1;
        self.recorded(c);
        Ok(())
    }

    /// The call's row is committed: acknowledge, observe, settle. A reply whose cost
    /// cannot be computed blocks the model (the agent loop ends the episode on it).
    fn recorded(&mut self, c: &Completion) {
        if let Some(r) = self.reserved.take() {
            let _ = r.recorded(c);
        }
    }

    fn stored<T>(&mut self, r: Result<T, StoreError>) -> Result<T, AgentError> {
        r.map_err(|e| {
            let err = AgentError::Sink {
                task_id: self.task_id.to_string(),
                message: e.to_string(),
            };
            self.store_error = Some(e);
            err
        })
    }

    fn stopped(&self, call: u32, reason: String) -> AgentError {
        AgentError::Stopped {
            task_id: self.task_id.to_string(),
            call,
            reason,
        }
    }

    /// The run error behind `e`: the store's error with its cause when the sink failed
    /// to commit, else `e` itself as an internal error.
    pub fn run_error(&mut self, e: AgentError) -> crate::RunError {
        match self.store_error.take() {
            Some(store) => crate::RunError::Store(store),
            None => crate::RunError::Internal(format!("{e:#}")),
        }
    }

    /// Settle the reservation of the call in flight (what it paid is known).
    pub fn settle(&mut self) {
        self.reserved = None;
    }
}

/// A message as the JSON text a request carries (the form the store interns).
pub(crate) fn message_json(m: &Message) -> String {
    serde_json::to_string(m).expect("a message always serializes")
}

#[async_trait]
impl AgentSink for StoreSink<'_> {
    async fn before_call(&mut self, index: u32, messages: &[Message]) -> Result<(), AgentError> {
        self.settle();
        self.reservation(index, messages)?;
        Ok(())
    }

    async fn unusable(&mut self, index: u32, attempts: &[BilledAttempt]) -> Result<(), AgentError> {
        if attempts.is_empty() {
            return Ok(());
        }
        let stored = self
            .reservation(index, &[])?
            .record_unusable(attempts)
            .await;
        self.stored(stored)
    }

    async fn call_failed(&mut self, _index: u32, error: &ModelError) {
        // a wrong model id, key or base_url: no later call of this model is sent
        self.shared.block_dead_end(self.model, error);
    }

    async fn call(&mut self, e: &CallEvent<'_>) -> Result<(), AgentError> {
        let call = self
            .reservation(e.index, &e.completion.request.messages)?
            .call_row(e.completion);
        let stored = self
            .shared
            .store
            .record_agent_call(
                NewAgentCall {
                    call,
                    actions_json: serde_json::to_string(e.actions)
                        .expect("actions always serialize"),
                    format_error: e.format_error.map(str::to_string),
                    added: e
                        .added
                        .iter()
                        .map(|m| self.shared.redact(&message_json(m)))
                        .collect(),
                },
                self.context,
            )
            .await;
        let (_, context) = self.stored(stored)?;
        self.context = context;
        self.new_calls += 1;
        self.recorded(e.completion);
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
            snapshot_bytes: Some(e.snapshot_bytes),
        };
        let stored = self
            .shared
            .store
            .record_agent_step(step, self.context)
            .await;
        self.context = self.stored(stored)?;
        Ok(())
    }
}
