//! Rebuilding an agent episode's state from the store: the visible conversation from
//! the last stored context node, the counters from the stored calls and billed attempts,
//! and the actions of the last call that have no stored step.

use std::collections::{BTreeSet, VecDeque};

use baton_agent::{Action, AgentConfig, AgentExit, AgentOutcome, AgentState, AgentTask};
use baton_store::{AgentCallRow, AgentProgress, Store};
use baton_types::{Cost, Message, Phase};

use crate::RunError;

/// Where a stored episode stands.
pub(crate) struct Restored {
    /// The loop's state.
    pub state: AgentState,
    /// The conversation node it corresponds to.
    pub context: i64,
    /// Unusable attempts already paid for the next call.
    pub prior_unusable: u32,
    /// The outcome, when the stored steps already end the run (a submission was stored
    /// but the episode's end was not).
    pub ended: Option<AgentOutcome>,
}

fn corrupt(task: &AgentTask, message: String) -> RunError {
    RunError::Corrupt {
        what: format!("the stored episode of task {:?}", task.id),
        message,
    }
}

/// Where a handoff's suffix starts: its first call index s, the conversation node the
/// suffix model starts from, and what the task spent before it that the episode's own
/// calls do not hold (a forked prefix, the handoff call).
pub(crate) struct Base {
    pub first: u32,
    pub context: i64,
    pub cost: Cost,
}

/// The state of `progress` (from `base`, for a handoff's suffix: only its calls from
/// `base.first` on are the suffix's). `Ok(Err(why))`: a stored reply has no cost (`why` names it, for
/// `RunContext::block_unpriced`), so the
/// cost limit cannot be checked and the episode cannot go on.
pub(crate) async fn restore(
    config: &AgentConfig,
    task: &AgentTask,
    progress: &AgentProgress,
    store: &Store,
    base: Option<&Base>,
) -> Result<Result<Restored, String>, RunError> {
    let first = base.map_or(0, |b| b.first);
    let calls: Vec<&AgentCallRow> = progress
        .calls
        .iter()
        .filter(|c| c.index() >= first)
        .collect();
    let next = first + calls.len() as u32;
    let prior_unusable = progress
        .unusable
        .iter()
        .filter(|a| a.call_index == next && a.phase != Phase::Handoff)
        .count() as u32;
    let cost = match progress.paid() {
        Ok(c) => c + base.map_or(Cost::ZERO, |b| b.cost),
        Err(why) => {
            return Ok(Err(format!("task {:?}, a stored reply: {why}", task.id)));
        }
    };
    let start = AgentState::start(config, task).map_err(|e| corrupt(task, format!("{e:#}")))?;
    let Some(last) = calls.last() else {
        let state = match base {
            None => AgentState { cost, ..start },
            Some(b) => AgentState {
                messages: messages_of(task, store, b.context).await?,
                calls: b.first,
                cost,
                ..start
            },
        };
        return Ok(Ok(Restored {
            state,
            context: base.map_or(0, |b| b.context),
            prior_unusable,
            ended: None,
        }));
    };
    for (i, c) in calls.iter().enumerate() {
        let want = first + i as u32;
        if c.index() != want {
            return Err(corrupt(
                task,
                format!("call {want} is missing (found call {})", c.index()),
            ));
        }
    }
    let context = progress.context();
    let messages = messages_of(task, store, context).await?;
    if messages.get(..start.messages.len()) != Some(&start.messages[..]) {
        return Err(corrupt(
            task,
            "the stored conversation does not open with this task's templates".into(),
        ));
    }
    let mut format_errors_in_a_row = 0;
    for c in &calls {
        format_errors_in_a_row = match c.format_error {
            Some(_) => format_errors_in_a_row + 1,
            None => 0,
        };
    }
    let actions: Vec<Action> = serde_json::from_str(&last.actions_json)
        .map_err(|e| corrupt(task, format!("the actions of call {}: {e}", last.index())))?;
    let done: Vec<_> = progress
        .steps
        .iter()
        .filter(|s| s.step.call_index == last.index())
        .collect();
    let ran: BTreeSet<u32> = done.iter().map(|s| s.step.action_index).collect();
    let mut state = AgentState {
        messages,
        calls: next,
        cost,
        format_errors_in_a_row,
        pending: VecDeque::new(),
        // what the episode's snapshots had stored when its last step was recorded (a
        // step stored before the count was kept has none: it starts from zero)
        snapshot_bytes: progress
            .steps
            .iter()
            .filter_map(|s| s.step.snapshot_bytes)
            .max()
            .unwrap_or(0),
    };
    if let Some(s) = done.iter().find(|s| s.step.submission.is_some()) {
        let ended = AgentOutcome {
            exit: AgentExit::Submitted,
            submission: s.step.submission.clone(),
            calls: state.calls,
            cost: state.cost,
            error: None,
        };
        return Ok(Ok(Restored {
            state,
            context,
            prior_unusable,
            ended: Some(ended),
        }));
    }
    state.pending = actions
        .into_iter()
        .enumerate()
        .map(|(i, a)| (i as u32, a))
        .filter(|(i, _)| !ran.contains(i))
        .collect();
    Ok(Ok(Restored {
        state,
        context,
        prior_unusable,
        ended: None,
    }))
}

/// The messages of conversation node `context`.
pub(crate) async fn messages_of(
    task: &AgentTask,
    store: &Store,
    context: i64,
) -> Result<Vec<Message>, RunError> {
    store
        .context_messages(context)
        .await?
        .iter()
        .map(|m| {
            serde_json::from_str(m).map_err(|e| corrupt(task, format!("a stored message: {e}")))
        })
        .collect()
}
