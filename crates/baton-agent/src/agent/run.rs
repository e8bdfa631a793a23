//! The agent loop: call the model, run what it asked for, show it what happened, until it
//! submits or a limit ends the run.
//!
//! One *step* is one model call. Before every call the step limit and then the cost limit
//! are checked (`calls >= step_limit` ends with `step_limit`, `cost >= cost_limit` with
//! `cost_limit`), so a run never makes a call past either. A reply with no runnable
//! command is a *format error*: it was billed, counts as a step and is stored, but it is
//! not kept in the conversation (as mini-SWE-agent drops it); only the format-error
//! template's answer is. Three in a row end the run with `format_errors`. A model call
//! the provider refuses for good ([`model_side_terminal`]: HTTP 400, e.g. a context too
//! long) ends it with `error`; any other failed call stops the run with
//! [`AgentError::Model`], so a resume makes the call again.
//!
//! A command whose output (leading whitespace skipped) has the submission marker as its
//! first line, and which exits 0, ends the run with `submitted`; the submission is the rest
//! of the output. Other commands of the same reply after it do not run.
//!
//! The state ([`AgentState`]) is plain data: the visible messages, the counters, and the
//! actions of the last reply not yet run. A run can start from any stored state with the
//! environment restored to the matching snapshot: that is how a resume re-runs only the
//! action whose observation was not committed, and how a handoff will continue another
//! model's trajectory (swap the model, rewrite `messages`, keep the tree). Every call and
//! every observation is handed to an [`AgentSink`] as it happens, before the next one;
//! billed attempts that could not be used go to it first, so a store sees every paid
//! reply. A reply, used or not, whose cost cannot be computed is handed to the sink and
//! then stops the run with [`AgentError::Unpriced`]: the cost limit cannot be checked
//! past an unknown cost.

use std::collections::VecDeque;
use std::time::Duration;

use async_trait::async_trait;
use baton_env::{
    BlobStore, CappedBlobs, EnvError, Environment, Exec, ExecOutput, ExitStatus, SnapshotId,
};
use baton_models::{BilledAttempt, Completion, Model, ModelError, ProviderError};
use baton_types::{Cost, Message};
use serde::{Deserialize, Serialize};

use crate::agent::protocol::{Action, Protocol, bash_tool, parse_actions};
use crate::agent::templates::AgentTemplates;
use crate::error::AgentError;
use crate::task::AgentTask;

/// The default step limit (the handoff paper's).
pub const DEFAULT_STEP_LIMIT: u32 = 150;

/// The default cost limit per task, in US dollars (mini-SWE-agent's SWE-bench setting).
pub const DEFAULT_COST_LIMIT_USD: f64 = 3.0;

/// Format errors in a row that end a run.
pub const MAX_FORMAT_ERRORS: u32 = 3;

/// How the loop runs; stored with the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentConfig {
    /// How commands travel.
    pub protocol: Protocol,
    /// Model calls allowed per task.
    pub step_limit: u32,
    /// Spend allowed per task; no call starts once it is reached.
    pub cost_limit: Cost,
    /// The templates and protocol strings.
    pub templates: AgentTemplates,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            protocol: Protocol::default(),
            step_limit: DEFAULT_STEP_LIMIT,
            cost_limit: Cost::from_usd(DEFAULT_COST_LIMIT_USD),
            templates: AgentTemplates::default(),
        }
    }
}

pub use baton_types::agent::AgentExit;

/// Where a run stands: everything needed to take the next step.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AgentState {
    /// The visible conversation, system message first.
    pub messages: Vec<Message>,
    /// Model calls made (the next call's index).
    pub calls: u32,
    /// What they cost.
    pub cost: Cost,
    /// Format errors since the last reply that had a runnable command.
    pub format_errors_in_a_row: u32,
    /// Actions of the last reply not run yet, with their index in that reply.
    pub pending: VecDeque<(u32, Action)>,
    /// New bytes this episode's snapshots added to the snapshot store (counted against
    /// the environment's `limits.episode_snapshot_bytes`). A resume starts from the count
    /// its last stored step recorded.
    #[serde(default)]
    pub snapshot_bytes: u64,
}

impl AgentState {
    /// The opening state of `task`: the system and instance templates rendered.
    pub fn start(config: &AgentConfig, task: &AgentTask) -> Result<Self, AgentError> {
        Self::start_with(config, &task.instruction)
    }

    /// The opening state of a task given by its instruction alone (one that is not an
    /// [`AgentTask`], such as a trap-bench scenario).
    pub fn start_with(config: &AgentConfig, instruction: &str) -> Result<Self, AgentError> {
        let t = &config.templates;
        let ctx = minijinja::context! {
            task => instruction,
            submit_marker => &t.submit_marker,
            fence => &t.fence,
            protocol => config.protocol.name(),
        };
        let system = t.render("agent.system_template", &ctx)?;
        let instance = t.render("agent.instance_template", &ctx)?;
        Ok(AgentState {
            messages: vec![Message::system(system), Message::user(instance)],
            ..AgentState::default()
        })
    }
}

/// One model call as the loop saw it.
#[derive(Debug)]
pub struct CallEvent<'a> {
    /// Its index (0 for the first call of the task).
    pub index: u32,
    /// The priced completion (request, response, cost, attempts, latency).
    pub completion: &'a Completion,
    /// The actions read from the reply (empty on a format error).
    pub actions: &'a [Action],
    /// Why the reply could not be run, when it could not.
    pub format_error: Option<&'a str>,
    /// The messages this call added to the conversation: the reply, or on a format
    /// error only the answer to it.
    pub added: &'a [Message],
}

/// One command as the loop ran it.
#[derive(Debug)]
pub struct ActionEvent<'a> {
    /// The call whose reply asked for it.
    pub call_index: u32,
    /// Its position among that reply's actions.
    pub action_index: u32,
    /// The command.
    pub action: &'a Action,
    /// How it ran.
    pub output: &'a ExecOutput,
    /// The observation message added to the conversation (none when it submitted).
    pub observation: Option<&'a Message>,
    /// The submission, when it submitted.
    pub submission: Option<&'a str>,
    /// The working tree after it, when the loop has a blob store.
    pub snapshot: Option<&'a SnapshotId>,
    /// New bytes the episode's snapshots have added to the blob store so far (this one
    /// included): the running count its cap is checked against, stored so that a resume
    /// goes on from it.
    pub snapshot_bytes: u64,
}

/// Receives every call and every command as it happens. An error stops the run (with the
/// error), so nothing unrecorded goes on.
#[async_trait]
pub trait AgentSink: Send {
    /// Call `index` is about to be made with `messages` (after the step and cost limits
    /// passed). Returning an error ([`AgentError::Stopped`]) makes no call.
    async fn before_call(&mut self, index: u32, messages: &[Message]) -> Result<(), AgentError> {
        let _ = (index, messages);
        Ok(())
    }
    /// Call `index` was answered, but these billed attempts could not be used; handed
    /// over before the call's result, whatever it is.
    async fn unusable(&mut self, index: u32, attempts: &[BilledAttempt]) -> Result<(), AgentError> {
        let _ = (index, attempts);
        Ok(())
    }
    /// Call `index` failed with `error` (after the model's retries); the run ends next.
    /// The runner uses it to stop a model none of whose calls can succeed.
    async fn call_failed(&mut self, index: u32, error: &ModelError) {
        let _ = (index, error);
    }
    /// A model call returned.
    async fn call(&mut self, event: &CallEvent<'_>) -> Result<(), AgentError>;
    /// A command ran.
    async fn action(&mut self, event: &ActionEvent<'_>) -> Result<(), AgentError>;
}

/// A sink that keeps nothing (for tests and one-off runs).
#[derive(Debug, Default)]
pub struct NoSink;

#[async_trait]
impl AgentSink for NoSink {
    async fn call(&mut self, _: &CallEvent<'_>) -> Result<(), AgentError> {
        Ok(())
    }
    async fn action(&mut self, _: &ActionEvent<'_>) -> Result<(), AgentError> {
        Ok(())
    }
}

/// How a run ended, with its totals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentOutcome {
    /// The exit status.
    pub exit: AgentExit,
    /// The submission (what followed the marker), when submitted.
    pub submission: Option<String>,
    /// Model calls made (steps).
    pub calls: u32,
    /// Their cost.
    pub cost: Cost,
    /// What went wrong, for `error`.
    pub error: Option<String>,
}

/// The loop for one task: a model, an environment, a state, and where events go.
pub struct AgentLoop<'a> {
    /// How it runs.
    pub config: &'a AgentConfig,
    /// The task's id (for messages).
    pub task_id: &'a str,
    /// The sampling seed sent with every call.
    pub seed: Option<u64>,
    /// Where snapshots go after each command (none: no snapshots).
    pub blobs: Option<&'a dyn BlobStore>,
    /// Unusable attempts already paid for the first call this run makes (stored by an
    /// earlier run); they count against the model's retry limit.
    pub prior_unusable: u32,
}

impl AgentLoop<'_> {
    /// Run from `state` until the run ends. The environment is moved onto a blocking
    /// thread for each command and handed back.
    pub async fn run(
        &self,
        model: &Model,
        env: &mut Option<Box<dyn Environment>>,
        state: &mut AgentState,
        sink: &mut dyn AgentSink,
    ) -> Result<AgentOutcome, AgentError> {
        let outcome = |state: &AgentState, exit, submission, error| AgentOutcome {
            exit,
            submission,
            calls: state.calls,
            cost: state.cost,
            error,
        };
        let mut prior_unusable = self.prior_unusable;
        loop {
            if let Some((action_index, action)) = state.pending.pop_front() {
                let call_index = state.calls.saturating_sub(1);
                let output = match &action.exception {
                    // mini's Popen fails before anything runs: return code -1, no output
                    Some(_) => ExecOutput {
                        status: ExitStatus::Exited(-1),
                        output: Default::default(),
                        duration: Duration::ZERO,
                    },
                    None => self.exec(env, &action.command).await?,
                };
                let submission = submission_of(&output, &self.config.templates.submit_marker);
                let observation = match &submission {
                    Some(_) => None,
                    None => {
                        let timeout = env
                            .as_ref()
                            .map_or(Duration::ZERO, |e| e.info().limits.timeout());
                        let text = self.observation(&action, &output, timeout)?;
                        Some(match &action.call_id {
                            Some(id) => Message::tool(id.clone(), text),
                            None => Message::user(text),
                        })
                    }
                };
                let (snapshot, capped) = match self.blobs {
                    Some(blobs) => match self.snapshot(env, blobs, state)? {
                        Ok(id) => (Some(id), None),
                        Err(why) => (None, Some(why)),
                    },
                    None => (None, None),
                };
                if let Some(m) = &observation {
                    state.messages.push(m.clone());
                }
                sink.action(&ActionEvent {
                    call_index,
                    action_index,
                    action: &action,
                    output: &output,
                    observation: observation.as_ref(),
                    submission: submission.as_deref(),
                    snapshot: snapshot.as_ref(),
                    snapshot_bytes: state.snapshot_bytes,
                })
                .await?;
                if let Some(s) = submission {
                    state.pending.clear();
                    return Ok(outcome(state, AgentExit::Submitted, Some(s), None));
                }
                if let Some(why) = capped {
                    // the command ran and is stored; its tree is not, so the run ends here
                    state.pending.clear();
                    let why = format!("task {:?}: {why}", self.task_id);
                    return Ok(outcome(state, AgentExit::SnapshotLimit, None, Some(why)));
                }
                continue;
            }
            if state.format_errors_in_a_row >= MAX_FORMAT_ERRORS {
                return Ok(outcome(state, AgentExit::FormatErrors, None, None));
            }
            if state.calls >= self.config.step_limit {
                return Ok(outcome(state, AgentExit::StepLimit, None, None));
            }
            if state.cost >= self.config.cost_limit {
                return Ok(outcome(state, AgentExit::CostLimit, None, None));
            }
            let index = state.calls;
            sink.before_call(index, &state.messages).await?;
            let mut request = model.request(state.messages.clone(), self.seed);
            if self.config.protocol == Protocol::ToolCalls {
                request.tools = vec![bash_tool()];
            }
            let generation = model.generate(request, prior_unusable).await;
            prior_unusable = 0;
            // Answered-but-unusable attempts were billed: the sink keeps them, and they
            // count against the cost limit. One without a cost stops the run below.
            sink.unusable(index, &generation.unusable).await?;
            let mut unpriced = None;
            for attempt in &generation.unusable {
                match &attempt.cost {
                    Ok(c) => state.cost += *c,
                    Err(why) => unpriced = unpriced.or(Some(why.clone())),
                }
            }
            let completion = match generation.result {
                Ok(c) => c,
                Err(e) => {
                    sink.call_failed(index, &e).await;
                    if let Some(reason) = unpriced {
                        return Err(self.unpriced(index, reason));
                    }
                    let message = format!("task {:?}: {e}", self.task_id);
                    if model_side_terminal(&e) {
                        return Ok(outcome(state, AgentExit::Error, None, Some(message)));
                    }
                    return Err(AgentError::Model {
                        task_id: self.task_id.to_string(),
                        call: index,
                        message: e.to_string(),
                    });
                }
            };
            if let Err(why) = &completion.cost {
                unpriced = unpriced.or(Some(why.clone()));
            }
            state.calls += 1;
            state.cost += completion.cost.clone().unwrap_or_default();
            let r = &completion.response;
            let t = &self.config.templates;
            let parsed = parse_actions(self.config.protocol, &t.fence, &r.text, &r.tool_calls);
            // A reply that cannot run is not kept in the conversation (mini-SWE-agent drops
            // it too): only the answer to it is. The call itself, paid, is always stored.
            let (actions, format_error, added, render_error) = match parsed {
                Ok(actions) => {
                    state.format_errors_in_a_row = 0;
                    let reply = Message::assistant_with_calls(r.text.clone(), r.tool_calls.clone());
                    (actions, None, vec![reply], None)
                }
                Err(e) => {
                    state.format_errors_in_a_row += 1;
                    let rendered = t.render(
                        "model.format_error_template",
                        minijinja::context! {
                            error => &e.error,
                            actions => &e.actions,
                            finish_reason => &r.finish_reason,
                            has_tool_calls => !r.tool_calls.is_empty(),
                            submit_marker => &t.submit_marker,
                            fence => &t.fence,
                            protocol => self.config.protocol.name(),
                            n_model_calls => state.calls,
                            step_limit => self.config.step_limit,
                        },
                    );
                    match rendered {
                        Ok(text) => (Vec::new(), Some(e.error), vec![Message::user(text)], None),
                        Err(render) => (Vec::new(), Some(e.error), Vec::new(), Some(render)),
                    }
                }
            };
            state.messages.extend(added.iter().cloned());
            sink.call(&CallEvent {
                index,
                completion: &completion,
                actions: &actions,
                format_error: format_error.as_deref(),
                added: &added,
            })
            .await?;
            if let Some(reason) = unpriced {
                return Err(self.unpriced(index, reason));
            }
            if let Some(e) = render_error {
                // the paid reply is stored above; the template is the user's to fix
                return Err(e);
            }
            state.pending = actions
                .into_iter()
                .enumerate()
                .map(|(i, a)| (i as u32, a))
                .collect();
        }
    }

    fn unpriced(&self, call: u32, reason: String) -> AgentError {
        AgentError::Unpriced {
            task_id: self.task_id.to_string(),
            call,
            reason,
        }
    }

    /// The observation of `action`'s `output`. A timeout, or a command that could not
    /// run, is reported in mini-SWE-agent's words (`timeout` is the environment's limit);
    /// the output is read as mini reads it ([`observed_text`]).
    fn observation(
        &self,
        action: &Action,
        output: &ExecOutput,
        timeout: Duration,
    ) -> Result<String, AgentError> {
        let command = &action.command;
        let exception = match (&action.exception, output.status) {
            (Some(e), _) => format!("An error occurred while executing the command: {e}"),
            (None, ExitStatus::TimedOut) => format!(
                "An error occurred while executing the command: Command '{command}' timed out after {} seconds",
                seconds(timeout)
            ),
            _ => String::new(),
        };
        self.config.templates.render(
            "model.observation_template",
            minijinja::context! {
                output => minijinja::context! {
                    returncode => output.return_code().map_or(-1, i64::from),
                    output => observed_text(output),
                    exception_info => &exception,
                },
            },
        )
    }

    async fn exec(
        &self,
        env: &mut Option<Box<dyn Environment>>,
        command: &str,
    ) -> Result<ExecOutput, AgentError> {
        let mut e = env.take().expect("the loop holds an environment");
        let exec = Exec::new(command);
        let (e, result) = tokio::task::spawn_blocking(move || {
            let r = e.exec(&exec);
            (e, r)
        })
        .await
        .expect("the command thread does not panic");
        *env = Some(e);
        result.map_err(|source| AgentError::Env {
            task_id: self.task_id.to_string(),
            source,
        })
    }

    /// Snapshot the tree within the episode's snapshot cap. `Ok(Err(why))`: the tree
    /// is over the per-snapshot limit or its new content over what the cap leaves.
    fn snapshot(
        &self,
        env: &mut Option<Box<dyn Environment>>,
        blobs: &dyn BlobStore,
        state: &mut AgentState,
    ) -> Result<Result<SnapshotId, String>, AgentError> {
        // The tree walk is quick for task-sized trees; it runs here, not on a thread,
        // because the blob store is borrowed.
        let e = env.as_mut().expect("the loop holds an environment");
        let cap = e.info().limits.episode_snapshot_cap();
        let capped = CappedBlobs::new(blobs, cap, state.snapshot_bytes);
        let result = e.snapshot(&capped);
        state.snapshot_bytes = capped.written();
        match result {
            Ok(s) => Ok(Ok(s.id)),
            Err(e @ (EnvError::SnapshotCap { .. } | EnvError::TreeTooLarge { .. })) => {
                Ok(Err(e.to_string()))
            }
            Err(source) => Err(AgentError::Env {
                task_id: self.task_id.to_string(),
                source,
            }),
        }
    }
}

/// The submission, when `output` submits: exit 0 and the marker as the first line of the
/// output with leading whitespace skipped; the submission is every line after it.
pub fn submission_of(output: &ExecOutput, marker: &str) -> Option<String> {
    if output.return_code() != Some(0) {
        return None;
    }
    let text = observed_text(output);
    let text = text.trim_start();
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    (first.trim() == marker).then(|| rest.to_string())
}

/// A command's output as mini-SWE-agent reads it: Python's text mode with universal
/// newlines turns `\r\n` and a lone `\r` into `\n` (a CRLF file, a progress bar), before
/// the observation template counts characters or the submission is read.
pub fn observed_text(output: &ExecOutput) -> String {
    let text = output.output.text();
    if text.contains('\r') {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text
    }
}

/// Whether a failed model call ended on the model's side for good: the provider refused
/// the request as it stands (HTTP 400, 413 or 422: a context too long, a request the
/// model will not take) or kept answering with replies that cannot be used. Sending the
/// same conversation again would fail the same way, so the run ends with `error` (and
/// counts as unresolved) instead of staying incomplete. Anything else (a connection, a
/// rate limit or server error whose retries ran out, a stop, a missing key) is the
/// infrastructure's, and a resume tries again.
pub fn model_side_terminal(e: &ModelError) -> bool {
    match e {
        ModelError::Provider { source, .. } => match source.as_ref() {
            ProviderError::Status { status, .. } => matches!(status, 400 | 413 | 422),
            ProviderError::Unusable { .. } => true,
            _ => false,
        },
        _ => false,
    }
}

/// Whole seconds as an integer, else as a decimal (Python's `str` of the configured
/// timeout, as mini-SWE-agent prints it).
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s}")
    }
}

/// The commands that make the task's working directory a git repository with one commit
/// of the unchanged tree, when it is not one already, so `git diff` shows the agent's
/// change. Run once before the first call.
pub const GIT_BASELINE: &str = "git rev-parse --is-inside-work-tree >/dev/null 2>&1 || \
    { git init -q && git add -A && git -c user.name=baton -c user.email=baton@localhost \
    commit -q --allow-empty -m 'task baseline'; }";

#[cfg(test)]
mod tests {
    use baton_env::Output;

    use super::*;

    fn out(code: i32, text: &str) -> ExecOutput {
        ExecOutput {
            status: ExitStatus::Exited(code),
            output: Output {
                head: text.into(),
                total_bytes: text.len() as u64,
                ..Output::default()
            },
            duration: Duration::from_millis(3),
        }
    }

    #[test]
    fn the_marker_must_be_the_first_line_of_a_successful_command() {
        let m = "BATON_SUBMIT_FINAL_DIFF";
        assert_eq!(
            submission_of(
                &out(0, "\n BATON_SUBMIT_FINAL_DIFF\ndiff --git a/x b/x\n"),
                m
            )
            .as_deref(),
            Some("diff --git a/x b/x\n")
        );
        assert_eq!(
            submission_of(&out(0, "BATON_SUBMIT_FINAL_DIFF"), m).as_deref(),
            Some("")
        );
        assert_eq!(submission_of(&out(1, "BATON_SUBMIT_FINAL_DIFF\n"), m), None);
        assert_eq!(
            submission_of(&out(0, "x\nBATON_SUBMIT_FINAL_DIFF\n"), m),
            None
        );
    }

    #[test]
    fn exits_round_trip_by_name() {
        for e in AgentExit::ALL {
            assert_eq!(AgentExit::parse(e.name()), Some(e));
            assert_eq!(
                serde_json::to_value(e).unwrap(),
                serde_json::json!(e.name())
            );
        }
    }
}
