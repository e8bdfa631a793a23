//! The writer's agent commands, their answers, and the [`Store`] methods that send them.

use crate::error::{Result, StoreError};
use crate::rows::Outcome;
use crate::writer::Store;

use super::rows::{
    AgentEnd, AgentEpisodeInit, AgentProgress, AgentTaskMeta, AgentVerdict, HandoverLintRow,
    NewAgentCall, NewAgentStep, NewAgentSwitch, ThresholdRow,
};

pub(crate) enum AgentCommand {
    Task(Box<AgentTaskMeta>, Reply<()>),
    Episode(Box<AgentEpisodeInit>, Reply<AgentProgress>),
    Call(Box<NewAgentCall>, i64, Reply<(i64, i64)>),
    Step(Box<NewAgentStep>, i64, Reply<i64>),
    Finish(i64, Box<Outcome>, Box<AgentEnd>, Reply<()>),
    Context(i64, Reply<Vec<String>>),
    Thresholds(Vec<ThresholdRow>, Reply<Vec<ThresholdRow>>),
    Switch(Box<NewAgentSwitch>, Reply<Option<i64>>),
    Verdict(Box<AgentVerdict>, Reply<()>),
    HandoverLint(Box<HandoverLintRow>, Reply<()>),
    Rerun(Vec<i64>, Vec<String>, Reply<()>),
    Revive(Vec<i64>, Reply<()>),
    Recompute(Vec<ThresholdRow>, Vec<i64>, Reply<Vec<ThresholdRow>>),
}

type Reply<T> = tokio::sync::oneshot::Sender<Result<T>>;

/// An agent command's result, held until its group is committed (see `writer`).
pub(crate) enum AgentAnswer {
    Unit(Result<()>),
    Progress(Box<Result<AgentProgress>>),
    Call(Result<(i64, i64)>),
    Node(Result<i64>),
    Messages(Result<Vec<String>>),
    Thresholds(Result<Vec<ThresholdRow>>),
    Switch(Result<Option<i64>>),
}

impl AgentAnswer {
    /// The error it carries, if any.
    pub(crate) fn error(&self) -> Option<&StoreError> {
        match self {
            AgentAnswer::Unit(r) => r.as_ref().err(),
            AgentAnswer::Progress(r) => r.as_ref().as_ref().err(),
            AgentAnswer::Call(r) => r.as_ref().err(),
            AgentAnswer::Node(r) => r.as_ref().err(),
            AgentAnswer::Messages(r) => r.as_ref().err(),
            AgentAnswer::Thresholds(r) => r.as_ref().err(),
            AgentAnswer::Switch(r) => r.as_ref().err(),
        }
    }

    pub(crate) fn is_ok(&self) -> bool {
        match self {
            AgentAnswer::Unit(r) => r.is_ok(),
            AgentAnswer::Progress(r) => r.is_ok(),
            AgentAnswer::Call(r) => r.is_ok(),
            AgentAnswer::Node(r) => r.is_ok(),
            AgentAnswer::Messages(r) => r.is_ok(),
            AgentAnswer::Thresholds(r) => r.is_ok(),
            AgentAnswer::Switch(r) => r.is_ok(),
        }
    }
}

impl AgentCommand {
    /// The answer that refuses this command with `e`.
    pub(crate) fn refusal(&self, e: StoreError) -> AgentAnswer {
        match self {
            AgentCommand::Task(..)
            | AgentCommand::Finish(..)
            | AgentCommand::Verdict(..)
            | AgentCommand::HandoverLint(..)
            | AgentCommand::Rerun(..)
            | AgentCommand::Revive(..) => AgentAnswer::Unit(Err(e)),
            AgentCommand::Episode(..) => AgentAnswer::Progress(Box::new(Err(e))),
            AgentCommand::Call(..) => AgentAnswer::Call(Err(e)),
            AgentCommand::Step(..) => AgentAnswer::Node(Err(e)),
            AgentCommand::Context(..) => AgentAnswer::Messages(Err(e)),
            AgentCommand::Thresholds(..) | AgentCommand::Recompute(..) => {
                AgentAnswer::Thresholds(Err(e))
            }
            AgentCommand::Switch(..) => AgentAnswer::Switch(Err(e)),
        }
    }

    /// Send `answer` to whoever sent the command (a dropped receiver means the caller
    /// gave up).
    pub(crate) fn answer(self, answer: AgentAnswer) {
        match (self, answer) {
            (AgentCommand::Task(_, tx), AgentAnswer::Unit(r))
            | (AgentCommand::Finish(.., tx), AgentAnswer::Unit(r))
            | (AgentCommand::Verdict(_, tx), AgentAnswer::Unit(r))
            | (AgentCommand::HandoverLint(_, tx), AgentAnswer::Unit(r))
            | (AgentCommand::Rerun(.., tx), AgentAnswer::Unit(r))
            | (AgentCommand::Revive(_, tx), AgentAnswer::Unit(r)) => drop(tx.send(r)),
            (AgentCommand::Episode(_, tx), AgentAnswer::Progress(r)) => drop(tx.send(*r)),
            (AgentCommand::Call(.., tx), AgentAnswer::Call(r)) => drop(tx.send(r)),
            (AgentCommand::Step(.., tx), AgentAnswer::Node(r)) => drop(tx.send(r)),
            (AgentCommand::Context(_, tx), AgentAnswer::Messages(r)) => drop(tx.send(r)),
            (AgentCommand::Thresholds(_, tx), AgentAnswer::Thresholds(r))
            | (AgentCommand::Recompute(.., tx), AgentAnswer::Thresholds(r)) => drop(tx.send(r)),
            (AgentCommand::Switch(_, tx), AgentAnswer::Switch(r)) => drop(tx.send(r)),
            _ => unreachable!("Db::agent answers each command with its own kind"),
        }
    }
}

impl Store {
    /// Record an agent task, or check that its stored hash is unchanged.
    pub async fn agent_task(&self, task: AgentTaskMeta) -> Result<()> {
        self.ask(|tx| agent(AgentCommand::Task(Box::new(task), tx)))
            .await
    }

    /// Find or create an agent episode, returning everything stored of it.
    pub async fn agent_episode(&self, init: AgentEpisodeInit) -> Result<AgentProgress> {
        self.ask(|tx| agent(AgentCommand::Episode(Box::new(init), tx)))
            .await
    }

    /// Commit a model call of an agent episode; returns the call's row id and the
    /// conversation node after it: the request's messages and the call's added ones
    /// (`context`, the node the caller holds, is used only for a request that is kept
    /// whole).
    pub async fn record_agent_call(&self, call: NewAgentCall, context: i64) -> Result<(i64, i64)> {
        self.ask(|tx| agent(AgentCommand::Call(Box::new(call), context, tx)))
            .await
    }

    /// Commit a command that ran, after conversation node `context`; returns the node
    /// after its observation.
    pub async fn record_agent_step(&self, step: NewAgentStep, context: i64) -> Result<i64> {
        self.ask(|tx| agent(AgentCommand::Step(Box::new(step), context, tx)))
            .await
    }

    /// Store how an agent episode ended, with its outcome, in one transaction.
    pub async fn finish_agent(
        &self,
        episode_id: i64,
        outcome: Outcome,
        end: AgentEnd,
    ) -> Result<()> {
        self.ask(|tx| {
            agent(AgentCommand::Finish(
                episode_id,
                Box::new(outcome),
                Box::new(end),
                tx,
            ))
        })
        .await
    }

    /// Store a verdict reached after the episode ended (see [`AgentVerdict`]).
    pub async fn agent_verdict(&self, verdict: AgentVerdict) -> Result<()> {
        self.ask(|tx| agent(AgentCommand::Verdict(Box::new(verdict), tx)))
            .await
    }

    /// The messages of conversation node `context`, first to last, as JSON texts.
    pub async fn context_messages(&self, context: i64) -> Result<Vec<String>> {
        self.ask(|tx| agent(AgentCommand::Context(context, tx)))
            .await
    }

    /// Store the switch calls not stored yet (a stored one of the same pair, direction,
    /// bucket and p is kept: a part's, adopted from every part's anchors), and return
    /// the stored ones.
    pub async fn agent_thresholds(&self, rows: Vec<ThresholdRow>) -> Result<Vec<ThresholdRow>> {
        self.ask(|tx| agent(AgentCommand::Thresholds(rows, tx)))
            .await
    }

    /// Retire the agent episodes `ids` as changed so that they run afresh (each keeps
    /// its calls, attempts and costs; its `cell_key` gets ` #<id>` so the cell's name is
    /// free), and drop the switch calls computed from the anchors of `prefix_models`:
    /// the next handoff phase computes them again from the current anchors. One
    /// transaction.
    pub async fn rerun_agent_episodes(
        &self,
        ids: Vec<i64>,
        prefix_models: Vec<String>,
    ) -> Result<()> {
        self.ask(|tx| agent(AgentCommand::Rerun(ids, prefix_models, tx)))
            .await
    }

    /// Make the agent episodes `ids`, retired as removed, current again (their cell came
    /// back with the identity they have).
    pub async fn revive_agent_episodes(&self, ids: Vec<i64>) -> Result<()> {
        self.ask(|tx| agent(AgentCommand::Revive(ids, tx))).await
    }

    /// Store the switch calls `rows` computed from the current anchors, replacing a
    /// stored one of the same (pair, direction, bucket, p), and retire as changed the
    /// handoff episodes `stale` (those that ran at a switch call that moved), in one
    /// transaction; returns the stored switch calls.
    pub async fn recompute_agent_thresholds(
        &self,
        rows: Vec<ThresholdRow>,
        stale: Vec<i64>,
    ) -> Result<Vec<ThresholdRow>> {
        self.ask(|tx| agent(AgentCommand::Recompute(rows, stale, tx)))
            .await
    }

    /// Store a handoff episode's switch with the texts it used; returns the conversation
    /// node the suffix model starts from (none when it did not fire).
    pub async fn agent_switch(&self, switch: NewAgentSwitch) -> Result<Option<i64>> {
        self.ask(|tx| agent(AgentCommand::Switch(Box::new(switch), tx)))
            .await
    }

    /// Store a `handover` handoff's document lint at the switch, once: a second one for
    /// the same episode is refused (a resume reads the stored one instead of linting).
    pub async fn agent_handover_lint(&self, lint: HandoverLintRow) -> Result<()> {
        self.ask(|tx| agent(AgentCommand::HandoverLint(Box::new(lint), tx)))
            .await
    }
}

fn agent(cmd: AgentCommand) -> crate::writer::Command {
    crate::writer::Command::Agent(cmd)
}
