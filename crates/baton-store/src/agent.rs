//! Agent episodes in the store: tasks, each model call with the actions read from it,
//! each command with its observation and working-tree snapshot, and how the episode
//! ended ([`schema`](crate::schema) documents the tables).
//!
//! The visible conversation is never copied: each call and each command records the
//! `message_lists` node of the conversation after it, built on the node before it, so an
//! observation is one `messages` row shared with every later request, and 150 steps add
//! about 150 list nodes. A resume reads the last node back ([`AgentProgress::context`])
//! with the commands of the last call that have no stored step; a handoff can fork at
//! call s from the last step before it (its context node and snapshot). A verdict reached
//! after an episode ended (`baton swebench eval`) replaces only the episode's verdict
//! columns ([`AgentVerdict`]).

use std::path::Path;

use baton_types::{Cost, EpisodeStatus, Interface, Phase, Verdict};
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::connect::{Cached, sqlite_err};
use crate::error::{Result, StoreError};
use crate::reader::{Reader, calls_of};
use crate::request::{EMPTY_LIST, intern_after, list_messages};
use crate::rows::{CallRow, NewCall, Outcome};
use crate::writer::{Db, NOW, Store, insert_call, update_outcome};

/// The family agent tasks carry in the `tasks` table.
pub const AGENT_FAMILY: &str = "agent";

/// An agent task as recorded with an experiment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTaskMeta {
    /// Task id.
    pub task_id: String,
    /// Where it was loaded from (a folder, a JSONL line, the bundled sample).
    pub origin: String,
    /// Difficulty bucket (`easy`, `medium`, `hard`).
    pub difficulty: String,
    /// Task format (`baton`, `polyglot`, `swebench`).
    pub format: String,
    /// The sha256 of what the task is; a changed task refuses to resume.
    pub task_sha256: String,
}

/// The cell of an agent episode, as `episodes.cell_json` holds it (a single-model cell
/// is written as the chat side's `single`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AgentCell {
    /// One model makes every call (an anchor).
    Single {
        /// The model's name in the experiment.
        model: String,
    },
    /// The sender makes calls `0..s`, the receiver the rest, s the sender's p-th
    /// percentile termination step in the task's bucket.
    AgentHandoff {
        /// The prefix model.
        sender: String,
        /// The suffix model.
        receiver: String,
        /// The percentile the switch call comes from.
        p: u32,
        /// What the receiver is shown.
        interface: Interface,
        /// Whether the prefix is run live (else forked from the sender's anchor).
        independent: bool,
    },
}

impl AgentCell {
    /// The cell's key in the store: `single(m)` or `handoff(a -> b, p25, raw)` (with
    /// `, independent` when the prefix runs live).
    pub fn label(&self) -> String {
        match self {
            AgentCell::Single { model } => format!("single({model})"),
            AgentCell::AgentHandoff {
                sender,
                receiver,
                p,
                interface,
                independent,
            } => format!(
                "handoff({sender} -> {receiver}, p{p}, {}{})",
                interface.as_str(),
                if *independent { ", independent" } else { "" }
            ),
        }
    }

    /// The model that makes the first call.
    pub fn first_model(&self) -> &str {
        match self {
            AgentCell::Single { model } => model,
            AgentCell::AgentHandoff { sender, .. } => sender,
        }
    }
}

/// Identity of an agent episode: one per (task, cell, replicate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEpisodeInit {
    /// Task id.
    pub task_id: String,
    /// The cell.
    pub cell: AgentCell,
    /// A handoff's switch call s (`episodes.k`).
    pub k: Option<u32>,
    /// The anchor a forked handoff takes its prefix from (`episodes.forked_from`).
    pub forked_from: Option<i64>,
    /// Replicate index.
    pub replicate: u32,
    /// The seed of the (task, replicate).
    pub seed: u64,
    /// The task's sha256 (checked against the stored episode).
    pub task_sha256: String,
}

/// A model call of an agent episode, to store with its `calls` row in one transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAgentCall {
    /// The call (`turn` is the call index, from 0).
    pub call: NewCall,
    /// The actions read from the reply, as JSON.
    pub actions_json: String,
    /// Why the reply had no runnable command, when it had none.
    pub format_error: Option<String>,
    /// The messages the call added to the conversation (the reply and any answer to a
    /// format error), each as the JSON text a request carries.
    pub added: Vec<String>,
}

/// A stored model call of an agent episode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCallRow {
    /// The `calls` row (its request rebuilt and checked).
    pub call: CallRow,
    /// The actions read from the reply, as JSON.
    pub actions_json: String,
    /// Why the reply had no runnable command, when it had none.
    pub format_error: Option<String>,
    /// The conversation node after the call (its added messages are the last ones).
    pub context: i64,
}

impl AgentCallRow {
    /// The call index q (from 0).
    pub fn index(&self) -> u32 {
        self.call.call.turn
    }
}

/// A command that ran, to store once it ran and the tree was snapshotted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAgentStep {
    /// The episode.
    pub episode_id: i64,
    /// The call whose reply asked for it.
    pub call_index: u32,
    /// Its position among that reply's actions.
    pub action_index: u32,
    /// The command.
    pub command: String,
    /// The tool call it came from, under the tool-call protocol.
    pub tool_call_id: Option<String>,
    /// How it ended, as JSON (`baton_env::ExitStatus`).
    pub status_json: String,
    /// The shell-style return code (none after a timeout).
    pub return_code: Option<i32>,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// Bytes of output it produced (before truncation).
    pub output_bytes: u64,
    /// The observation message as JSON, unless it submitted.
    pub observation: Option<String>,
    /// The submission, when it submitted.
    pub submission: Option<String>,
    /// The snapshot of the working tree after it.
    pub snapshot: Option<String>,
}

/// A stored command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentStepRow {
    /// The step as written.
    pub step: NewAgentStep,
    /// The conversation node after it.
    pub context: i64,
    /// When it was stored (UTC, ISO 8601).
    pub created_at: String,
}

/// How an agent episode ended (beside the episode's own outcome and verdict).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEnd {
    /// `submitted`, `step_limit`, `cost_limit`, `format_errors` or `error`.
    pub exit: String,
    /// Model calls made.
    pub calls: u32,
    /// What went wrong, for `error`.
    pub error: Option<String>,
}

/// A verdict reached after an agent episode ended (`baton swebench eval` judging a
/// stored patch): the status, verdict and reason replace the stored ones; the
/// submission, the costs and how the episode ended are kept as they are.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentVerdict {
    /// The episode (it must have ended: an incomplete one is refused).
    pub episode_id: i64,
    /// `scored` with a verdict, or `unscored` with the reason.
    pub status: EpisodeStatus,
    /// The verdict, when there is one.
    pub verdict: Option<Verdict>,
    /// Why there is no verdict.
    pub reason: Option<String>,
}

/// An unusable billed attempt of an agent episode: its call and its cost (or why none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentAttempt {
    /// The call index it was an attempt of.
    pub call_index: u32,
    /// The phase of that call (`handoff` for a compaction summary's attempts).
    pub phase: Phase,
    /// Its cost, or why it has none.
    pub cost: std::result::Result<Cost, String>,
}

/// Everything stored of one agent episode, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentProgress {
    /// Episode id.
    pub episode_id: i64,
    /// Its status.
    pub status: EpisodeStatus,
    /// Its calls, by index.
    pub calls: Vec<AgentCallRow>,
    /// Its commands, by (call, action).
    pub steps: Vec<AgentStepRow>,
    /// Its unusable billed attempts.
    pub unusable: Vec<AgentAttempt>,
    /// How it ended, once it did.
    pub end: Option<AgentEnd>,
    /// A handoff's switch, once its prefix is settled.
    pub switch: Option<AgentSwitchRow>,
    /// A compaction's handoff call (the summary), once made.
    pub handoff_call: Option<CallRow>,
}

/// A handoff episode's switch, to store once its prefix is settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAgentSwitch {
    /// The episode.
    pub episode_id: i64,
    /// The switch call s.
    pub s: u32,
    /// The task's difficulty bucket.
    pub bucket: String,
    /// Whether the prefix reached call s (else the prefix's run is the episode's).
    pub fired: bool,
    /// The conversation node before the switch.
    pub prefix_context: Option<i64>,
    /// The conversation the suffix model starts from, as JSON messages (fired only).
    pub messages: Option<Vec<String>>,
    /// The working tree at the switch.
    pub snapshot: Option<String>,
    /// The texts the interface used: (sha256, version, JSON).
    pub texts: Option<(String, String, String)>,
}

impl NewAgentSwitch {
    /// The switch of a handoff whose prefix ended before call `s`: not fired, nothing
    /// carried over.
    pub fn unfired(episode_id: i64, s: u32, bucket: String) -> Self {
        NewAgentSwitch {
            episode_id,
            s,
            bucket,
            fired: false,
            prefix_context: None,
            messages: None,
            snapshot: None,
            texts: None,
        }
    }
}

/// A stored switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSwitchRow {
    /// The switch call s.
    pub s: u32,
    /// The task's difficulty bucket.
    pub bucket: String,
    /// Whether it fired.
    pub fired: bool,
    /// The conversation node before the switch (for `traj_drop`, the removed
    /// trajectory's audit record).
    pub prefix_context: Option<i64>,
    /// The conversation node the suffix model starts from.
    pub context: Option<i64>,
    /// The working tree at the switch.
    pub snapshot: Option<String>,
    /// The sha256 of the texts used.
    pub texts_sha256: Option<String>,
}

/// A switch call s, per (pair, direction, bucket, p).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThresholdRow {
    /// The pair, `lc/hc`.
    pub pair: String,
    /// `escalation` or `downshift`.
    pub direction: String,
    /// The prefix model, whose termination steps it comes from.
    pub prefix_model: String,
    /// The difficulty bucket.
    pub bucket: String,
    /// The percentile.
    pub p: u32,
    /// The switch call.
    pub s: u32,
    /// The anchors it was computed from.
    pub n_anchors: u32,
}

impl AgentProgress {
    /// The conversation node after the last stored event (0 before the first call).
    pub fn context(&self) -> i64 {
        let last_call = self.calls.last();
        let last_step = self
            .steps
            .last()
            .filter(|s| Some(s.step.call_index) == last_call.map(AgentCallRow::index));
        match (last_step, last_call) {
            (Some(s), _) => s.context,
            (None, Some(c)) => c.context,
            (None, None) => EMPTY_LIST,
        }
    }

    /// The last snapshot stored (the tree after the last command that ran).
    pub fn last_snapshot(&self) -> Option<&str> {
        self.steps
            .iter()
            .rev()
            .find_map(|s| s.step.snapshot.as_deref())
    }

    /// What every stored answered attempt cost, or the first reason one has no cost.
    pub fn paid(&self) -> std::result::Result<Cost, String> {
        let mut total = Cost::ZERO;
        for c in &self.calls {
            match &c.call.call.unpriced {
                Some(why) => return Err(why.clone()),
                None => total += c.call.call.cost,
            }
        }
        for a in &self.unusable {
            total += a.cost.clone()?;
        }
        Ok(total)
    }
}

/// An agent episode as the report reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEpisodeRow {
    /// Episode id.
    pub id: i64,
    /// Task id.
    pub task_id: String,
    /// The task's difficulty bucket.
    pub difficulty: String,
    /// The first call's model (the prefix model of a handoff).
    pub model: String,
    /// The cell.
    pub cell: AgentCell,
    /// A handoff's switch call s.
    pub k: Option<u32>,
    /// The anchor a forked handoff takes its prefix from.
    pub forked_from: Option<i64>,
    /// A handoff's switch, once settled.
    pub switch: Option<AgentSwitchRow>,
    /// What the episode's own answered attempts cost per phase (prefix, handoff,
    /// suffix; unpriced ones count 0).
    pub phase_paid: [Cost; 3],
    /// A forked handoff's prefix cost: the anchor's calls `0..s` and their attempts.
    pub forked_prefix: Cost,
    /// Replicate index.
    pub replicate: u32,
    /// Status, outcome, verdict and costs.
    pub outcome: Outcome,
    /// How it ended, once it did.
    pub end: Option<AgentEnd>,
    /// Calls stored (steps).
    pub calls: u32,
    /// Commands stored.
    pub commands: u32,
    /// What every answered attempt of the episode cost (unpriced ones left out).
    pub paid: Cost,
}

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
    /// Send `answer` to whoever sent the command (a dropped receiver means the caller
    /// gave up).
    pub(crate) fn answer(self, answer: AgentAnswer) {
        match (self, answer) {
            (AgentCommand::Task(_, tx), AgentAnswer::Unit(r))
            | (AgentCommand::Finish(.., tx), AgentAnswer::Unit(r))
            | (AgentCommand::Verdict(_, tx), AgentAnswer::Unit(r)) => drop(tx.send(r)),
            (AgentCommand::Episode(_, tx), AgentAnswer::Progress(r)) => drop(tx.send(*r)),
            (AgentCommand::Call(.., tx), AgentAnswer::Call(r)) => drop(tx.send(r)),
            (AgentCommand::Step(.., tx), AgentAnswer::Node(r)) => drop(tx.send(r)),
            (AgentCommand::Context(_, tx), AgentAnswer::Messages(r)) => drop(tx.send(r)),
            (AgentCommand::Thresholds(_, tx), AgentAnswer::Thresholds(r)) => drop(tx.send(r)),
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

    /// Store the switch calls unless some are stored already, and return the stored
    /// ones: thresholds are fixed once, before any handoff runs, and a resume reuses them.
    pub async fn agent_thresholds(&self, rows: Vec<ThresholdRow>) -> Result<Vec<ThresholdRow>> {
        self.ask(|tx| agent(AgentCommand::Thresholds(rows, tx)))
            .await
    }

    /// Store a handoff episode's switch with the texts it used; returns the conversation
    /// node the suffix model starts from (none when it did not fire).
    pub async fn agent_switch(&self, switch: NewAgentSwitch) -> Result<Option<i64>> {
        self.ask(|tx| agent(AgentCommand::Switch(Box::new(switch), tx)))
            .await
    }
}

fn agent(cmd: AgentCommand) -> crate::writer::Command {
    crate::writer::Command::Agent(cmd)
}

impl Db {
    pub(crate) fn agent(&mut self, cmd: &AgentCommand) -> AgentAnswer {
        match cmd {
            AgentCommand::Task(t, _) => AgentAnswer::Unit(self.agent_task(t)),
            AgentCommand::Episode(i, _) => AgentAnswer::Progress(Box::new(self.agent_episode(i))),
            AgentCommand::Call(c, ctx, _) => AgentAnswer::Call(self.agent_call(c, *ctx)),
            AgentCommand::Step(st, ctx, _) => AgentAnswer::Node(self.agent_step(st, *ctx)),
            AgentCommand::Finish(id, o, e, _) => AgentAnswer::Unit(self.finish_agent(*id, o, e)),
            AgentCommand::Context(node, _) => AgentAnswer::Messages(
                list_messages(&self.conn, *node).map_err(sqlite_err(&self.path)),
            ),
            AgentCommand::Thresholds(rows, _) => AgentAnswer::Thresholds(self.thresholds(rows)),
            AgentCommand::Switch(sw, _) => AgentAnswer::Switch(self.switch(sw)),
            AgentCommand::Verdict(v, _) => AgentAnswer::Unit(self.verdict(v)),
        }
    }

    fn verdict(&mut self, v: &AgentVerdict) -> Result<()> {
        let err = sqlite_err(&self.path);
        let verdict = v.verdict.as_ref();
        let changed = self
            .conn
            .exec(
                &format!(
                    "UPDATE episodes SET status = ?2, score = ?3, is_correct = ?4,
                     eval_error = ?5, eval_details = ?6, reason = ?7, no_answer = ?8,
                     updated_at = {NOW}
                     WHERE id = ?1 AND status != 'incomplete'
                     AND EXISTS (SELECT 1 FROM agent_outcomes o WHERE o.episode_id = ?1)"
                ),
                params![
                    v.episode_id,
                    v.status.as_str(),
                    verdict.map(|x| x.score),
                    verdict.and_then(|x| x.is_correct),
                    verdict.and_then(|x| x.error.clone()),
                    verdict.map(|x| x.details.to_string()),
                    v.reason,
                    verdict.is_some_and(|x| x.no_answer)
                ],
            )
            .map_err(&err)?;
        if changed == 0 {
            return Err(StoreError::Decode {
                path: self.path.clone(),
                what: format!("episode {}", v.episode_id),
                message: "no ended agent episode with this id: a verdict is stored only once the episode ended".into(),
            });
        }
        Ok(())
    }

    fn thresholds(&mut self, rows: &[ThresholdRow]) -> Result<Vec<ThresholdRow>> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        let stored: i64 = tx
            .row("SELECT count(*) FROM agent_thresholds", [], |r| r.get(0))
            .map_err(&err)?;
        if stored == 0 {
            for t in rows {
                tx.exec(
                    "INSERT INTO agent_thresholds (pair, direction, prefix_model, bucket, p, s,
                     n_anchors) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        t.pair,
                        t.direction,
                        t.prefix_model,
                        t.bucket,
                        t.p,
                        t.s,
                        t.n_anchors
                    ],
                )
                .map_err(&err)?;
            }
        }
        let out = read_thresholds(&tx, &self.path)?;
        tx.commit().map_err(&err)?;
        Ok(out)
    }

    fn switch(&mut self, sw: &NewAgentSwitch) -> Result<Option<i64>> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        if let Some((sha, version, json)) = &sw.texts {
            tx.exec(
                "INSERT OR IGNORE INTO agent_texts (sha256, version, json) VALUES (?1, ?2, ?3)",
                params![sha, version, json],
            )
            .map_err(&err)?;
        }
        let context = match &sw.messages {
            Some(m) => {
                let m: Vec<&str> = m.iter().map(String::as_str).collect();
                Some(intern_after(&tx, EMPTY_LIST, &m).map_err(&err)?)
            }
            None => None,
        };
        tx.exec(
            &format!(
                "INSERT INTO agent_switches (episode_id, s, bucket, fired, prefix_context,
                 context, snapshot, texts_sha256, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, {NOW})"
            ),
            params![
                sw.episode_id,
                sw.s,
                sw.bucket,
                sw.fired,
                sw.prefix_context,
                context,
                sw.snapshot,
                sw.texts.as_ref().map(|t| &t.0)
            ],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(context)
    }

    fn agent_task(&mut self, t: &AgentTaskMeta) -> Result<()> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        let stored: Option<String> = tx
            .row(
                "SELECT schedule_sha256 FROM tasks WHERE task_id = ?1",
                [&t.task_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(&err)?;
        match stored {
            Some(s) if s == t.task_sha256 => return Ok(()),
            Some(s) => {
                return Err(StoreError::ScheduleMismatch {
                    task_id: t.task_id.clone(),
                    stored: s,
                    current: t.task_sha256.clone(),
                });
            }
            None => {}
        }
        tx.exec(
            "INSERT INTO tasks (task_id, family, n_turns, schedule_sha256, sample_json)
             VALUES (?1, ?2, 0, ?3, '{}')",
            params![t.task_id, AGENT_FAMILY, t.task_sha256],
        )
        .map_err(&err)?;
        tx.exec(
            "INSERT INTO agent_tasks (task_id, origin, difficulty, format, task_sha256)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![t.task_id, t.origin, t.difficulty, t.format, t.task_sha256],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)
    }

    fn agent_episode(&self, init: &AgentEpisodeInit) -> Result<AgentProgress> {
        let err = sqlite_err(&self.path);
        let cell = &init.cell;
        self.conn
            .exec(
                &format!(
                    "INSERT INTO episodes (task_id, cell_key, cell_json, replicate, seed,
                     k, forked_from, schedule_sha256, status, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'incomplete', {NOW})
                     ON CONFLICT (task_id, cell_key, replicate) DO NOTHING"
                ),
                params![
                    init.task_id,
                    cell.label(),
                    serde_json::to_string(cell).expect("a cell always serializes"),
                    init.replicate,
                    init.seed as i64,
                    init.k,
                    init.forked_from,
                    init.task_sha256
                ],
            )
            .map_err(&err)?;
        let (id, sha, status): (i64, String, String) = self
            .conn
            .row(
                "SELECT id, schedule_sha256, status FROM episodes
                 WHERE task_id = ?1 AND cell_key = ?2 AND replicate = ?3",
                params![init.task_id, cell.label(), init.replicate],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(&err)?;
        if sha != init.task_sha256 {
            return Err(StoreError::ScheduleMismatch {
                task_id: init.task_id.clone(),
                stored: sha,
                current: init.task_sha256.clone(),
            });
        }
        progress(&self.conn, &self.path, id, &status)
    }

    fn agent_call(&mut self, c: &NewAgentCall, context: i64) -> Result<(i64, i64)> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        let id = insert_call(&tx, &self.path, &c.call)?;
        // The conversation before the call is its request's messages, when the request
        // was stored by reference; else the context the caller holds.
        let before: Option<i64> = tx
            .row(
                "SELECT request_messages FROM calls WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .map_err(&err)?;
        let added: Vec<&str> = c.added.iter().map(String::as_str).collect();
        let node = intern_after(&tx, before.unwrap_or(context), &added).map_err(&err)?;
        tx.exec(
            "INSERT INTO agent_calls (episode_id, call_index, call_id, actions_json,
             format_error, context) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                c.call.episode_id,
                c.call.turn,
                id,
                c.actions_json,
                c.format_error,
                node
            ],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok((id, node))
    }

    fn agent_step(&mut self, s: &NewAgentStep, context: i64) -> Result<i64> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        let (node, message) = match &s.observation {
            Some(o) => {
                let node = intern_after(&tx, context, &[o]).map_err(&err)?;
                let message: i64 = tx
                    .row(
                        "SELECT message FROM message_lists WHERE id = ?1",
                        [node],
                        |r| r.get(0),
                    )
                    .map_err(&err)?;
                (node, Some(message))
            }
            None => (context, None),
        };
        tx.exec(
            &format!(
                "INSERT INTO agent_steps (episode_id, call_index, action_index, command,
                 tool_call_id, status_json, return_code, duration_ms, output_bytes,
                 observation, submission, snapshot, context, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, {NOW})"
            ),
            params![
                s.episode_id,
                s.call_index,
                s.action_index,
                s.command,
                s.tool_call_id,
                s.status_json,
                s.return_code,
                i64::try_from(s.duration_ms).unwrap_or(i64::MAX),
                i64::try_from(s.output_bytes).unwrap_or(i64::MAX),
                message,
                s.submission,
                s.snapshot,
                node
            ],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(node)
    }

    fn finish_agent(&mut self, id: i64, o: &Outcome, e: &AgentEnd) -> Result<()> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        update_outcome(&tx, &self.path, id, o)?;
        tx.exec(
            "INSERT OR REPLACE INTO agent_outcomes (episode_id, exit, calls, error)
             VALUES (?1, ?2, ?3, ?4)",
            params![id, e.exit, e.calls, e.error],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)
    }
}

/// Everything stored of episode `id`.
fn progress(conn: &Connection, path: &Path, id: i64, status: &str) -> Result<AgentProgress> {
    let err = sqlite_err(path);
    let status = parse_status(path, id, status)?;
    let mut calls = Vec::new();
    let handoff_call;
    {
        let mut stmt = conn
            .prepare_cached(
                "SELECT call_id, actions_json, format_error, context FROM agent_calls
                 WHERE episode_id = ?1 ORDER BY call_index",
            )
            .map_err(&err)?;
        let rows: Vec<(i64, String, Option<String>, i64)> = stmt
            .query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .map_err(&err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(&err)?;
        let mut by_id: std::collections::HashMap<i64, CallRow> = calls_of(conn, path, id)?
            .into_iter()
            .map(|c| (c.id, c))
            .collect();
        handoff_call = by_id
            .values()
            .find(|c| c.call.phase == Phase::Handoff)
            .cloned();
        for (call_id, actions_json, format_error, context) in rows {
            let call = by_id.remove(&call_id).ok_or_else(|| StoreError::Decode {
                path: path.to_path_buf(),
                what: format!("agent_calls of episode {id}"),
                message: format!("call {call_id} is missing"),
            })?;
            calls.push(AgentCallRow {
                call,
                actions_json,
                format_error,
                context,
            });
        }
    }
    let mut stmt = conn
        .prepare_cached(
            "SELECT s.call_index, s.action_index, s.command, s.tool_call_id, s.status_json,
             s.return_code, s.duration_ms, s.output_bytes, m.json, s.submission, s.snapshot,
             s.context, s.created_at
             FROM agent_steps s LEFT JOIN messages m ON m.id = s.observation
             WHERE s.episode_id = ?1 ORDER BY s.call_index, s.action_index",
        )
        .map_err(&err)?;
    let steps = stmt
        .query_map([id], |r| {
            Ok(AgentStepRow {
                step: NewAgentStep {
                    episode_id: id,
                    call_index: r.get(0)?,
                    action_index: r.get(1)?,
                    command: r.get(2)?,
                    tool_call_id: r.get(3)?,
                    status_json: r.get(4)?,
                    return_code: r.get(5)?,
                    duration_ms: r.get::<_, i64>(6)? as u64,
                    output_bytes: r.get::<_, i64>(7)? as u64,
                    observation: r.get(8)?,
                    submission: r.get(9)?,
                    snapshot: r.get(10)?,
                },
                context: r.get(11)?,
                created_at: r.get(12)?,
            })
        })
        .map_err(&err)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(&err)?;
    let mut stmt = conn
        .prepare_cached(
            "SELECT turn, cost, unpriced, phase FROM attempts WHERE episode_id = ?1 ORDER BY id",
        )
        .map_err(&err)?;
    let unusable = stmt
        .query_map([id], |r| {
            let cost: Option<i64> = r.get(1)?;
            let unpriced: Option<String> = r.get(2)?;
            let phase: String = r.get(3)?;
            Ok((
                r.get(0)?,
                cost.map(Cost).ok_or_else(|| unpriced.unwrap_or_default()),
                phase,
            ))
        })
        .map_err(&err)?
        .collect::<rusqlite::Result<Vec<(u32, _, String)>>>()
        .map_err(&err)?
        .into_iter()
        .map(|(call_index, cost, phase)| {
            Ok(AgentAttempt {
                call_index,
                phase: phase.parse().map_err(|message| StoreError::Decode {
                    path: path.to_path_buf(),
                    what: format!("attempts.phase of episode {id}"),
                    message,
                })?,
                cost,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let end = conn
        .row(
            "SELECT exit, calls, error FROM agent_outcomes WHERE episode_id = ?1",
            [id],
            |r| {
                Ok(AgentEnd {
                    exit: r.get(0)?,
                    calls: r.get(1)?,
                    error: r.get(2)?,
                })
            },
        )
        .optional()
        .map_err(&err)?;
    Ok(AgentProgress {
        episode_id: id,
        status,
        calls,
        steps,
        unusable,
        end,
        switch: switch_of(conn, path, id)?,
        handoff_call,
    })
}

/// The switch of episode `id`, once stored.
fn switch_of(conn: &Connection, path: &Path, id: i64) -> Result<Option<AgentSwitchRow>> {
    conn.row(
        "SELECT s, bucket, fired, prefix_context, context, snapshot, texts_sha256
         FROM agent_switches WHERE episode_id = ?1",
        [id],
        |r| {
            Ok(AgentSwitchRow {
                s: r.get(0)?,
                bucket: r.get(1)?,
                fired: r.get(2)?,
                prefix_context: r.get(3)?,
                context: r.get(4)?,
                snapshot: r.get(5)?,
                texts_sha256: r.get(6)?,
            })
        },
    )
    .optional()
    .map_err(sqlite_err(path))
}

/// The stored switch calls, in (pair, direction, bucket, p) order.
fn read_thresholds(conn: &Connection, path: &Path) -> Result<Vec<ThresholdRow>> {
    let err = sqlite_err(path);
    let mut stmt = conn
        .prepare_cached(
            "SELECT pair, direction, prefix_model, bucket, p, s, n_anchors FROM agent_thresholds
             ORDER BY pair, direction, bucket, p",
        )
        .map_err(&err)?;
    stmt.query_map([], |r| {
        Ok(ThresholdRow {
            pair: r.get(0)?,
            direction: r.get(1)?,
            prefix_model: r.get(2)?,
            bucket: r.get(3)?,
            p: r.get(4)?,
            s: r.get(5)?,
            n_anchors: r.get(6)?,
        })
    })
    .map_err(&err)?
    .collect::<rusqlite::Result<_>>()
    .map_err(&err)
}

fn parse_status(path: &Path, id: i64, s: &str) -> Result<EpisodeStatus> {
    s.parse().map_err(|message| StoreError::Decode {
        path: path.to_path_buf(),
        what: format!("episodes.status of episode {id}"),
        message,
    })
}

impl Reader {
    /// Whether the store holds an agent experiment (any agent task).
    pub fn is_agent(&self) -> Result<bool> {
        self.conn
            .row("SELECT EXISTS (SELECT 1 FROM agent_tasks)", [], |r| {
                r.get(0)
            })
            .map_err(sqlite_err(&self.path))
    }

    /// The agent tasks, by id.
    pub fn agent_tasks(&self) -> Result<Vec<AgentTaskMeta>> {
        let err = sqlite_err(&self.path);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT task_id, origin, difficulty, format, task_sha256 FROM agent_tasks
                 ORDER BY task_id",
            )
            .map_err(&err)?;
        stmt.query_map([], |r| {
            Ok(AgentTaskMeta {
                task_id: r.get(0)?,
                origin: r.get(1)?,
                difficulty: r.get(2)?,
                format: r.get(3)?,
                task_sha256: r.get(4)?,
            })
        })
        .map_err(&err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(&err)
    }

    /// Every agent episode with its outcome, counts and spend, by id.
    pub fn agent_episodes(&self) -> Result<Vec<AgentEpisodeRow>> {
        self.agent_episode_rows(None)
    }

    /// Agent episode `id`, when stored.
    pub fn agent_episode(&self, id: i64) -> Result<Option<AgentEpisodeRow>> {
        Ok(self.agent_episode_rows(Some(id))?.pop())
    }

    fn agent_episode_rows(&self, only: Option<i64>) -> Result<Vec<AgentEpisodeRow>> {
        let err = sqlite_err(&self.path);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT e.id, e.task_id, a.difficulty, e.cell_json, e.replicate, e.status,
                 e.final_response, e.extracted, e.score, e.is_correct, e.eval_error,
                 e.eval_details, e.reason, e.cost_attributed, e.cost_paid,
                 o.exit, o.calls, o.error,
                 (SELECT count(*) FROM agent_calls c WHERE c.episode_id = e.id),
                 (SELECT count(*) FROM agent_steps s WHERE s.episode_id = e.id),
                 (SELECT coalesce(sum(cost), 0) FROM calls c WHERE c.episode_id = e.id)
                 + (SELECT coalesce(sum(cost), 0) FROM attempts t WHERE t.episode_id = e.id),
                 e.k, e.forked_from
                 FROM episodes e JOIN agent_tasks a ON a.task_id = e.task_id
                 LEFT JOIN agent_outcomes o ON o.episode_id = e.id
                 -- a range on the row id, so one episode is a lookup, not a scan
                 WHERE e.id BETWEEN coalesce(?1, -9223372036854775808)
                                AND coalesce(?1, 9223372036854775807)
                 ORDER BY e.id",
            )
            .map_err(&err)?;
        type Raw = (
            (i64, String, String, String, u32, String),
            (Option<String>, Option<String>, Option<f64>, Option<bool>),
            (Option<String>, Option<String>, Option<String>, i64, i64),
            (Option<String>, Option<u32>, Option<String>, u32, u32, i64),
            (Option<u32>, Option<i64>),
        );
        let rows: Vec<Raw> = stmt
            .query_map([only], |r| {
                Ok((
                    (
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ),
                    (r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?),
                    (r.get(10)?, r.get(11)?, r.get(12)?, r.get(13)?, r.get(14)?),
                    (
                        r.get(15)?,
                        r.get(16)?,
                        r.get(17)?,
                        r.get(18)?,
                        r.get(19)?,
                        r.get(20)?,
                    ),
                    (r.get(21)?, r.get(22)?),
                ))
            })
            .map_err(&err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(&err)?;
        rows.into_iter()
            .map(|(a, b, c, d, f)| {
                let (id, task_id, difficulty, cell_json, replicate, status) = a;
                let (final_response, extracted, score, is_correct) = b;
                let (eval_error, details, reason, attributed, paid_col) = c;
                let (exit, calls, error, n_calls, n_steps, paid) = d;
                let (k, forked_from) = f;
                let decode = |what: &str, message: String| StoreError::Decode {
                    path: self.path.clone(),
                    what: format!("{what} of episode {id}"),
                    message,
                };
                let cell: AgentCell = serde_json::from_str(&cell_json)
                    .map_err(|e| decode("episodes.cell_json", e.to_string()))?;
                let model = cell.first_model().to_string();
                let phase_paid = self.phase_paid(id)?;
                let forked_prefix = match (forked_from, k) {
                    (Some(anchor), Some(s)) => self.paid_before(anchor, s)?,
                    _ => Cost::ZERO,
                };
                let verdict = match score {
                    Some(score) => Some(Verdict {
                        score,
                        is_correct,
                        error: eval_error,
                        details: match details {
                            Some(d) => serde_json::from_str(&d)
                                .map_err(|e| decode("episodes.eval_details", e.to_string()))?,
                            None => serde_json::Value::Null,
                        },
                        // an agent's submission is a diff, not an extracted answer
                        rule: None,
                        no_answer: false,
                    }),
                    None => None,
                };
                Ok(AgentEpisodeRow {
                    id,
                    task_id,
                    difficulty,
                    model,
                    cell,
                    k,
                    forked_from,
                    switch: switch_of(&self.conn, &self.path, id)?,
                    phase_paid,
                    forked_prefix,
                    replicate,
                    outcome: Outcome {
                        status: parse_status(&self.path, id, &status)?,
                        final_response,
                        extracted,
                        verdict,
                        reason,
                        cost_attributed: Cost(attributed),
                        cost_paid: Cost(paid_col),
                    },
                    end: match (exit, calls) {
                        (Some(exit), Some(calls)) => Some(AgentEnd { exit, calls, error }),
                        _ => None,
                    },
                    calls: n_calls,
                    commands: n_steps,
                    paid: Cost(paid),
                })
            })
            .collect()
    }

    /// What every answered attempt of episode `episode_id` cost (calls and unusable
    /// attempts; unpriced ones count 0).
    pub fn episode_paid(&self, episode_id: i64) -> Result<Cost> {
        self.conn
            .row(
                "SELECT (SELECT coalesce(sum(cost), 0) FROM calls WHERE episode_id = ?1)
                 + (SELECT coalesce(sum(cost), 0) FROM attempts WHERE episode_id = ?1)",
                [episode_id],
                |r| r.get(0).map(Cost),
            )
            .map_err(sqlite_err(&self.path))
    }

    /// What episode `id`'s own answered attempts cost per phase: prefix, handoff, suffix.
    fn phase_paid(&self, id: i64) -> Result<[Cost; 3]> {
        let mut out = [Cost::ZERO; 3];
        for (i, phase) in [Phase::Prefix, Phase::Handoff, Phase::Suffix]
            .iter()
            .enumerate()
        {
            out[i] = self
                .conn
                .row(
                    "SELECT (SELECT coalesce(sum(cost), 0) FROM calls
                             WHERE episode_id = ?1 AND phase = ?2)
                     + (SELECT coalesce(sum(cost), 0) FROM attempts
                        WHERE episode_id = ?1 AND phase = ?2)",
                    params![id, phase.as_str()],
                    |r| r.get(0).map(Cost),
                )
                .map_err(sqlite_err(&self.path))?;
        }
        Ok(out)
    }

    /// What episode `id`'s calls `0..s` and their billed attempts cost: a forked
    /// handoff's prefix.
    pub fn paid_before(&self, id: i64, s: u32) -> Result<Cost> {
        self.conn
            .row(
                "SELECT (SELECT coalesce(sum(cost), 0) FROM calls
                         WHERE episode_id = ?1 AND turn < ?2 AND phase = 'prefix')
                 + (SELECT coalesce(sum(cost), 0) FROM attempts
                    WHERE episode_id = ?1 AND turn < ?2 AND phase = 'prefix')",
                params![id, s],
                |r| r.get(0).map(Cost),
            )
            .map_err(sqlite_err(&self.path))
    }

    /// The stored switch calls (empty before any handoff ran).
    pub fn agent_thresholds(&self) -> Result<Vec<ThresholdRow>> {
        read_thresholds(&self.conn, &self.path)
    }

    /// The handoff texts stored with the run: (sha256, version, JSON).
    pub fn agent_texts(&self) -> Result<Vec<(String, String, String)>> {
        let err = sqlite_err(&self.path);
        let mut stmt = self
            .conn
            .prepare_cached("SELECT sha256, version, json FROM agent_texts ORDER BY sha256")
            .map_err(&err)?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(&err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(&err)
    }

    /// Everything stored of agent episode `episode_id`.
    pub fn agent_progress(&self, episode_id: i64) -> Result<AgentProgress> {
        let status: String = self
            .conn
            .row(
                "SELECT status FROM episodes WHERE id = ?1",
                [episode_id],
                |r| r.get(0),
            )
            .map_err(sqlite_err(&self.path))?;
        progress(&self.conn, &self.path, episode_id, &status)
    }

    /// The messages of conversation node `context`, first to last, as JSON texts.
    pub fn context_messages(&self, context: i64) -> Result<Vec<String>> {
        list_messages(&self.conn, context).map_err(sqlite_err(&self.path))
    }
}
