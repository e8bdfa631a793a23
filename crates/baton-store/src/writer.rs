//! The writer: one thread owns the read-write connection and commits the commands it
//! is sent; [`Store`] is the async handle that sends them.
//!
//! Group commit: with `synchronous=FULL` every commit waits for the disk (about 1.6 ms
//! on the machine the harness benchmark ran on), which one writer thread serving a whole
//! run cannot afford per call. So the writer takes every command already waiting (at
//! most [`MAX_GROUP`]) and runs them in one transaction, each inside its own savepoint
//! so that one command's failure undoes only its own writes; it answers them only once
//! that transaction is on disk. An answer therefore still means "committed", exactly
//! as with one transaction per command. If the group's commit fails, it is rolled back
//! and its commands are run again one at a time, each answered with its own result.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};

use crate::connect::{CALL, Cached, in_savepoint, open_rw, sqlite_err};
use crate::error::{Result, StoreError};
use crate::reader::{calls_of, episode_by_id};
use crate::request::{Edges, intern_list, split};
use crate::rows::{
    CallRow, EpisodeInit, EpisodeRow, ExperimentMeta, NewAttempt, NewCall, Outcome, TaskMeta,
};
use crate::spool::{Kept, SharedSpool, Spool, SpoolClaim};

type Reply<T> = oneshot::Sender<Result<T>>;

pub(crate) enum Command {
    InitExperiment(Box<ExperimentMeta>, Reply<()>),
    UpsertTask(Box<TaskMeta>, Reply<()>),
    Episode(Box<EpisodeInit>, Reply<(EpisodeRow, Vec<CallRow>)>),
    RecordCall(Box<NewCall>, Reply<i64>),
    RecordAttempt(Box<NewAttempt>, Reply<i64>),
    CheckInputs(Vec<(String, String)>, bool, Reply<Vec<String>>),
    Finish(i64, Box<Outcome>, Reply<()>),
    Calls(i64, Reply<Vec<CallRow>>),
    /// Agent episodes' commands (`crate::agent`).
    Agent(crate::agent::AgentCommand),
    Skipped(Vec<(String, String)>, Reply<()>),
    /// Provider batches (`crate::batch`).
    BatchSubmitted(Box<crate::batch::NewBatch>, Reply<()>),
    BatchFinished(String, Reply<()>),
    Batches(Option<String>, Reply<Vec<crate::batch::BatchRow>>),
    BatchSubmitting(Box<crate::batch::NewSubmission>, Reply<()>),
    BatchNotCreated(String, Reply<()>),
    BatchesInDoubt(String, Reply<Vec<crate::batch::SubmissionRow>>),
    /// Episode identity's commands (`crate::identity`).
    Identity(crate::identity::IdentityCommand),
}

/// What to call when the store stops after a failed write ([`Store::on_failure`]).
#[derive(Default)]
pub(crate) struct FailureHooks(std::sync::Mutex<Vec<Box<dyn Fn() + Send + Sync>>>);

impl std::fmt::Debug for FailureHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FailureHooks")
    }
}

impl FailureHooks {
    fn fire(&self) {
        for hook in self.0.lock().expect("failure hooks lock").iter() {
            hook();
        }
    }
}

/// The async handle to an experiment's store. Cloning it is cheap; every clone talks to
/// the same writer thread, which commits each write before it answers.
#[derive(Clone, Debug)]
pub struct Store {
    tx: mpsc::UnboundedSender<Command>,
    path: PathBuf,
    failed: Arc<OnceLock<String>>,
    hooks: Arc<FailureHooks>,
    spool: SharedSpool,
}

impl Store {
    /// Open (creating and migrating as needed) the store at `path`, import the replies
    /// its spool kept from a failed write (`crate::spool`), reserve the spool again, and
    /// start its writer.
    pub fn open(path: &Path) -> Result<Store> {
        let conn = open_rw(path)?;
        let (tx, mut rx) = mpsc::unbounded_channel::<Command>();
        let failed = Arc::new(OnceLock::new());
        let hooks = Arc::new(FailureHooks::default());
        let mut db = Db {
            conn,
            path: path.to_path_buf(),
            spool: SharedSpool::default(),
            failed: failed.clone(),
            hooks: hooks.clone(),
            uncollected: Default::default(),
            edges: Edges::default(),
        };
        let spool = db.spool.clone();
        db.import_spool()?;
        // the import's edges are in the file, but start the run with none
        db.edges.clear();
        if let Err(e) = db.finish_collected_batches() {
            // only a label: the batches stay unfinished, and are polled again
            tracing::warn!(store = %path.display(), "cannot mark the collected batches finished: {e}");
        }
        *db.spool.lock().expect("spool lock") = Some(Spool::open(path));
        thread::Builder::new()
            .name("baton-store-writer".into())
            .spawn(move || {
                while let Some(first) = rx.blocking_recv() {
                    let mut batch = vec![first];
                    while batch.len() < MAX_GROUP {
                        match rx.try_recv() {
                            Ok(cmd) => batch.push(cmd),
                            Err(_) => break,
                        }
                    }
                    db.handle_group(batch);
                }
            })
            .expect("spawning the store writer thread");
        Ok(Store {
            tx,
            path: path.to_path_buf(),
            failed,
            hooks,
            spool,
        })
    }

    /// Claim `bytes` of room in the spool for the record of a call about to be sent,
    /// growing its reserve when the calls in flight need more (see `crate::spool`); the
    /// claim is released when dropped. An error (the disk has no room) means the call
    /// should not be sent: a reply that came back could find no room if the store then
    /// failed.
    pub fn claim_spool(&self, bytes: u64) -> Result<SpoolClaim> {
        crate::spool::claim(&self.spool, bytes).map_err(|e| StoreError::SpoolFull {
            path: crate::spool::spool_path(&self.path),
            bytes,
            cause: e.to_string(),
        })
    }

    /// Call `hook` (once) when the store stops after a failed write, from the writer
    /// thread, as it stops: a run stops its model calls then, retries included, rather
    /// than at its next call. A store that has stopped already calls it at once.
    pub fn on_failure(&self, hook: impl Fn() + Send + Sync + 'static) {
        let mut hooks = self.hooks.0.lock().expect("failure hooks lock");
        if self.failed.get().is_some() {
            hook();
        } else {
            hooks.push(Box::new(hook));
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Why the store stopped taking work, once a write failed on the disk
    /// ([`StoreError::Stopped`]): a run checks it before each call it would pay for.
    pub fn failure(&self) -> Option<&str> {
        self.failed.get().map(String::as_str)
    }

    pub(crate) async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.tx.send(make(tx)).map_err(|_| StoreError::WriterGone)?;
        rx.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Record the experiment, or check that the stored one has the same spec.
    pub async fn init_experiment(&self, meta: ExperimentMeta) -> Result<()> {
        self.ask(|tx| Command::InitExperiment(Box::new(meta), tx))
            .await
    }

    /// Record a task, or check that its stored schedule hash is unchanged.
    pub async fn upsert_task(&self, task: TaskMeta) -> Result<()> {
        self.ask(|tx| Command::UpsertTask(Box::new(task), tx)).await
    }

    /// Find or create an episode, returning it with its stored calls in order. A
    /// stored episode with another schedule hash is refused.
    pub async fn episode(&self, init: EpisodeInit) -> Result<(EpisodeRow, Vec<CallRow>)> {
        self.ask(|tx| Command::Episode(Box::new(init), tx)).await
    }

    /// Commit one completed call; returns its row id once it is on disk.
    pub async fn record_call(&self, call: NewCall) -> Result<i64> {
        self.ask(|tx| Command::RecordCall(Box::new(call), tx)).await
    }

    /// Commit one answered attempt whose reply could not be used (it is billed);
    /// returns its row id once it is on disk.
    pub async fn record_attempt(&self, attempt: NewAttempt) -> Result<i64> {
        self.ask(|tx| Command::RecordAttempt(Box::new(attempt), tx))
            .await
    }

    /// Compare the sha256 of each named input with the stored one, recording inputs
    /// seen for the first time. A changed input is refused with
    /// [`StoreError::InputsChanged`] naming every change, unless `allow_changed`: then
    /// the new hash is stored, the change recorded in `input_changes`, and the changes
    /// returned.
    pub async fn check_inputs(
        &self,
        inputs: Vec<(String, String)>,
        allow_changed: bool,
    ) -> Result<Vec<String>> {
        self.ask(|tx| Command::CheckInputs(inputs, allow_changed, tx))
            .await
    }

    /// Store how an episode ended.
    pub async fn finish(&self, episode_id: i64, outcome: Outcome) -> Result<()> {
        self.ask(|tx| Command::Finish(episode_id, Box::new(outcome), tx))
            .await
    }

    /// Replace the list of tasks this run left out, as (task id, reason).
    pub async fn record_skipped(&self, skipped: Vec<(String, String)>) -> Result<()> {
        self.ask(|tx| Command::Skipped(skipped, tx)).await
    }

    /// The stored calls of an episode, in order.
    pub async fn calls(&self, episode_id: i64) -> Result<Vec<CallRow>> {
        self.ask(|tx| Command::Calls(episode_id, tx)).await
    }
}

pub(crate) struct Db {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
    /// Where a reply the store cannot commit is kept (none while the spool is imported).
    pub(crate) spool: SharedSpool,
    /// Why the store stopped, once a write failed on the disk.
    pub(crate) failed: Arc<OnceLock<String>>,
    /// Told when it stops.
    pub(crate) hooks: Arc<FailureHooks>,
    /// The items of each unfinished batch whose reply is not stored yet, as far as the
    /// writer has looked (`crate::batch`): `None` for a batch that is finished or
    /// unknown.
    pub(crate) uncollected:
        std::collections::HashMap<String, Option<std::collections::HashSet<String>>>,
    /// The message-list edges known to be in the file (`crate::request`).
    pub(crate) edges: Edges,
}

/// The current time as the store writes it (UTC, ISO 8601 with milliseconds).
pub(crate) const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

/// The most commands one group commit takes.
const MAX_GROUP: usize = 256;

/// The waits before each retry of a paid record's commit that the disk refused.
const RETRY_WAITS: [Duration; 3] = [
    Duration::ZERO,
    Duration::from_millis(100),
    Duration::from_millis(400),
];

/// A command's result, held until its group is committed.
enum Answer {
    Unit(Result<()>),
    Episode(Box<Result<(EpisodeRow, Vec<CallRow>)>>),
    Id(Result<i64>),
    Changed(Result<Vec<String>>),
    Calls(Result<Vec<CallRow>>),
    Agent(crate::agent::AgentAnswer),
    Batches(Result<Vec<crate::batch::BatchRow>>),
    InDoubt(Result<Vec<crate::batch::SubmissionRow>>),
    Identity(crate::identity::IdentityAnswer),
}

impl Answer {
    /// The error it carries, if any.
    fn error(&self) -> Option<&StoreError> {
        match self {
            Answer::Unit(r) => r.as_ref().err(),
            Answer::Episode(r) => r.as_ref().as_ref().err(),
            Answer::Id(r) => r.as_ref().err(),
            Answer::Changed(r) => r.as_ref().err(),
            Answer::Calls(r) => r.as_ref().err(),
            Answer::Agent(a) => a.error(),
            Answer::Batches(r) => r.as_ref().err(),
            Answer::InDoubt(r) => r.as_ref().err(),
            Answer::Identity(a) => a.error(),
        }
    }

    /// The disk failure it carries, if any (see [`is_disk_failure`]).
    fn disk_failure(&self) -> Option<&StoreError> {
        self.error().filter(|e| is_disk_failure(e))
    }

    fn is_ok(&self) -> bool {
        match self {
            Answer::Unit(r) => r.is_ok(),
            Answer::Episode(r) => r.is_ok(),
            Answer::Id(r) => r.is_ok(),
            Answer::Changed(r) => r.is_ok(),
            Answer::Calls(r) => r.is_ok(),
            Answer::Agent(a) => a.is_ok(),
            Answer::Batches(r) => r.is_ok(),
            Answer::InDoubt(r) => r.is_ok(),
            Answer::Identity(a) => a.is_ok(),
        }
    }
}

/// Whether `e` is the disk failing rather than the command: full, an I/O error, or
/// read-only. The command itself is sound: retried once there is room, it can succeed.
fn is_disk_failure(e: &StoreError) -> bool {
    use rusqlite::ErrorCode::{DiskFull, ReadOnly, SystemIoFailure};
    matches!(e, StoreError::Sqlite { source, .. }
        if matches!(source.sqlite_error_code(), Some(DiskFull | SystemIoFailure | ReadOnly)))
}

impl Command {
    /// The answer that refuses this command with `e`.
    fn refusal(&self, e: StoreError) -> Answer {
        match self {
            Command::InitExperiment(..)
            | Command::UpsertTask(..)
            | Command::Finish(..)
            | Command::Skipped(..)
            | Command::BatchSubmitted(..)
            | Command::BatchFinished(..)
            | Command::BatchSubmitting(..)
            | Command::BatchNotCreated(..) => Answer::Unit(Err(e)),
            Command::Episode(..) => Answer::Episode(Box::new(Err(e))),
            Command::RecordCall(..) | Command::RecordAttempt(..) => Answer::Id(Err(e)),
            Command::CheckInputs(..) => Answer::Changed(Err(e)),
            Command::Calls(..) => Answer::Calls(Err(e)),
            Command::Agent(c) => Answer::Agent(c.refusal(e)),
            Command::Batches(..) => Answer::Batches(Err(e)),
            Command::BatchesInDoubt(..) => Answer::InDoubt(Err(e)),
            Command::Identity(c) => Answer::Identity(c.refusal(e)),
        }
    }

    /// Send `answer` to whoever sent the command. A dropped receiver means the caller
    /// gave up; nothing to do about it.
    fn answer(self, answer: Answer) {
        match (self, answer) {
            (Command::InitExperiment(_, tx), Answer::Unit(r))
            | (Command::UpsertTask(_, tx), Answer::Unit(r))
            | (Command::Finish(_, _, tx), Answer::Unit(r))
            | (Command::Skipped(_, tx), Answer::Unit(r))
            | (Command::BatchSubmitted(_, tx), Answer::Unit(r))
            | (Command::BatchFinished(_, tx), Answer::Unit(r))
            | (Command::BatchSubmitting(_, tx), Answer::Unit(r))
            | (Command::BatchNotCreated(_, tx), Answer::Unit(r)) => drop(tx.send(r)),
            (Command::Batches(_, tx), Answer::Batches(r)) => drop(tx.send(r)),
            (Command::BatchesInDoubt(_, tx), Answer::InDoubt(r)) => drop(tx.send(r)),
            (Command::Episode(_, tx), Answer::Episode(r)) => drop(tx.send(*r)),
            (Command::RecordCall(_, tx), Answer::Id(r))
            | (Command::RecordAttempt(_, tx), Answer::Id(r)) => drop(tx.send(r)),
            (Command::CheckInputs(_, _, tx), Answer::Changed(r)) => drop(tx.send(r)),
            (Command::Calls(_, tx), Answer::Calls(r)) => drop(tx.send(r)),
            (Command::Agent(c), Answer::Agent(a)) => c.answer(a),
            (Command::Identity(c), Answer::Identity(a)) => c.answer(a),
            _ => unreachable!("Db::execute answers each command with its own kind"),
        }
    }
}

impl Db {
    /// Run one command and answer it (its own transaction, committed before the answer).
    /// A write the disk refuses stops the store: a paid record is kept ([`Db::keep`]),
    /// and every later command but a paid record is refused.
    fn handle(&mut self, cmd: Command) {
        if let Some(why) = self.failed.get() {
            let refused = StoreError::Stopped {
                path: self.path.clone(),
                why: why.clone(),
            };
            match Kept::of(&cmd) {
                Some(kept) => self.keep(cmd, kept, why.clone()),
                None => {
                    let answer = cmd.refusal(refused);
                    cmd.answer(answer);
                }
            }
            return;
        }
        let answer = self.execute(&cmd);
        if let Some(e) = answer.disk_failure() {
            let cause = e.to_string();
            tracing::error!(store = %self.path.display(), "a write failed, the store stops: {cause}");
            {
                let _hooks = self.hooks.0.lock().expect("failure hooks lock");
                let _ = self.failed.set(cause.clone());
            }
            self.hooks.fire();
            if let Some(kept) = Kept::of(&cmd) {
                return self.keep(cmd, kept, cause);
            }
        }
        cmd.answer(answer);
    }

    /// Keep the paid record of `cmd` after a disk failure (`cause`): retry the commit,
    /// after a checkpoint (which lets the WAL reuse the space it has from its start),
    /// and else write it to the spool. A reply that is committed is answered as such;
    /// one that is not is [`StoreError::WriteFailed`] saying where it was kept.
    fn keep(&mut self, cmd: Command, kept: Kept, cause: String) {
        for wait in RETRY_WAITS {
            thread::sleep(wait);
            let _ = self.conn.execute_batch("PRAGMA wal_checkpoint(RESTART)");
            let answer = self.execute(&cmd);
            if answer.disk_failure().is_none() {
                return cmd.answer(answer);
            }
        }
        let call = kept.name();
        let mut spool = self.spool.lock().expect("spool lock");
        let (spooled, kept_where) = match spool.as_mut() {
            Some(spool) => match spool.keep(&kept) {
                Ok(true) => (
                    true,
                    format!(
                        "it was kept in {}, which the next open of the store imports",
                        spool.path().display()
                    ),
                ),
                Ok(false) => (
                    true,
                    format!(
                        "it was kept in {} as a billed unusable attempt without its text (no room for the whole reply), which the next open of the store imports",
                        spool.path().display()
                    ),
                ),
                Err(e) => (
                    false,
                    format!(
                        "it could not be kept in {} either ({e})",
                        spool.path().display()
                    ),
                ),
            },
            None => (false, "it could not be kept: the spool is not open".into()),
        };
        drop(spool);
        tracing::error!(store = %self.path.display(), "{call}: {kept_where}");
        let answer = cmd.refusal(StoreError::WriteFailed {
            path: self.path.clone(),
            call,
            cause,
            kept: kept_where,
            spooled,
        });
        cmd.answer(answer);
    }

    /// Run `cmds` in one transaction, each in a savepoint, and answer them once it is
    /// committed (see the module docs).
    fn handle_group(&mut self, cmds: Vec<Command>) {
        if cmds.len() == 1
            || self.failed.get().is_some()
            || self.conn.execute_batch("BEGIN IMMEDIATE").is_err()
        {
            cmds.into_iter().for_each(|c| self.handle(c));
            return;
        }
        let mut done = Vec::with_capacity(cmds.len());
        for cmd in cmds {
            // the savepoint's statements are prepared once, not parsed per command
            let answer = match self.conn.exec("SAVEPOINT command", []) {
                Ok(_) => {
                    let answer = self.execute(&cmd);
                    let ended = if answer.is_ok() {
                        self.conn.exec("RELEASE command", []).map(drop)
                    } else {
                        self.conn
                            .execute_batch("ROLLBACK TO command; RELEASE command")
                    };
                    match ended {
                        Ok(()) => Some(answer),
                        Err(_) => None,
                    }
                }
                Err(_) => None,
            };
            done.push((cmd, answer));
        }
        // a command the disk refused is run again on its own, where it is kept
        let committed = done
            .iter()
            .all(|(_, a)| a.as_ref().is_some_and(|a| a.disk_failure().is_none()))
            && self.conn.execute_batch("COMMIT").is_ok();
        if committed {
            for (cmd, answer) in done {
                if let Some(answer) = answer {
                    cmd.answer(answer);
                }
            }
        } else {
            // nothing was answered yet: undo the group and run it command by command
            let _ = self.conn.execute_batch("ROLLBACK");
            self.edges.clear();
            done.into_iter().for_each(|(c, _)| self.handle(c));
        }
    }

    /// Run one command. A command that failed may have had its writes undone (its
    /// savepoint rolled back): the message-list edges it saw are forgotten.
    fn execute(&mut self, cmd: &Command) -> Answer {
        let answer = self.run(cmd);
        if !answer.is_ok() {
            self.edges.clear();
        }
        answer
    }

    fn run(&mut self, cmd: &Command) -> Answer {
        match cmd {
            Command::InitExperiment(meta, _) => Answer::Unit(self.init_experiment(meta)),
            Command::UpsertTask(task, _) => Answer::Unit(self.upsert_task(task)),
            Command::Episode(init, _) => Answer::Episode(Box::new(self.episode(init))),
            Command::RecordCall(call, _) => Answer::Id(self.record_call(call)),
            Command::RecordAttempt(a, _) => Answer::Id(self.record_attempt(a)),
            Command::CheckInputs(inputs, allow, _) => {
                Answer::Changed(self.check_inputs(inputs, *allow))
            }
            Command::Finish(id, outcome, _) => Answer::Unit(self.finish(*id, outcome)),
            Command::Calls(id, _) => Answer::Calls(calls_of(&self.conn, &self.path, *id)),
            Command::Agent(c) => Answer::Agent(self.agent(c)),
            Command::Identity(c) => Answer::Identity(self.identity(c)),
            Command::Skipped(list, _) => Answer::Unit(self.record_skipped(list)),
            Command::BatchSubmitted(b, _) => Answer::Unit(self.batch_submitted(b)),
            Command::BatchFinished(id, _) => Answer::Unit(self.batch_finished(id)),
            Command::Batches(model, _) => Answer::Batches(crate::batch::batches_of(
                &self.conn,
                &self.path,
                model.as_deref(),
            )),
            Command::BatchSubmitting(b, _) => Answer::Unit(self.batch_submitting(b)),
            Command::BatchNotCreated(token, _) => Answer::Unit(self.settle_submission(token, None)),
            Command::BatchesInDoubt(model, _) => {
                Answer::InDoubt(crate::batch::in_doubt_of(&self.conn, &self.path, model))
            }
        }
    }

    fn record_skipped(&mut self, list: &[(String, String)]) -> Result<()> {
        let err = sqlite_err(&self.path);
        // a savepoint: a transaction of its own, or nested in a group's
        let tx = self.conn.savepoint().map_err(&err)?;
        tx.exec("DELETE FROM skipped_tasks", []).map_err(&err)?;
        for (task_id, reason) in list {
            tx.exec(
                "INSERT OR REPLACE INTO skipped_tasks (task_id, reason) VALUES (?1, ?2)",
                params![task_id, reason],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)
    }

    fn init_experiment(&self, m: &ExperimentMeta) -> Result<()> {
        let err = sqlite_err(&self.path);
        let stored: Option<String> = self
            .conn
            .row("SELECT spec_sha256 FROM experiment WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(&err)?;
        match stored {
            Some(s) if s == m.spec_sha256 => Ok(()),
            Some(s) => Err(StoreError::SpecMismatch {
                path: self.path.clone(),
                stored: s,
                current: m.spec_sha256.clone(),
            }),
            None => {
                self.conn
                    .exec(
                        &format!(
                            "INSERT INTO experiment (id, name, spec_toml, spec_sha256, price_card_sha256,
                             eval_profile, eval_version, baton_version, git_revision, simulated, kind,
                             created_at)
                             VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, {NOW})"
                        ),
                        params![
                            m.name,
                            m.spec_toml,
                            m.spec_sha256,
                            m.price_card_sha256,
                            m.eval_profile,
                            m.eval_version,
                            m.baton_version,
                            m.git_revision,
                            m.simulated,
                            m.kind.as_str()
                        ],
                    )
                    .map_err(&err)?;
                Ok(())
            }
        }
    }

    fn upsert_task(&self, t: &TaskMeta) -> Result<()> {
        let err = sqlite_err(&self.path);
        let stored: Option<String> = self
            .conn
            .row(
                "SELECT schedule_sha256 FROM tasks WHERE task_id = ?1",
                [&t.task_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(&err)?;
        match stored {
            Some(s) if s == t.schedule_sha256 => Ok(()),
            Some(s) => Err(StoreError::ScheduleMismatch {
                task_id: t.task_id.clone(),
                stored: s,
                current: t.schedule_sha256.clone(),
            }),
            None => {
                self.conn
                    .exec(
                        "INSERT INTO tasks (task_id, family, n_turns, schedule_sha256, sample_json)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![
                            t.task_id,
                            t.family.as_str(),
                            t.n_turns,
                            t.schedule_sha256,
                            t.sample_json
                        ],
                    )
                    .map_err(&err)?;
                Ok(())
            }
        }
    }

    fn episode(&self, init: &EpisodeInit) -> Result<(EpisodeRow, Vec<CallRow>)> {
        let err = sqlite_err(&self.path);
        self.conn
            .exec(
                &format!(
                    "INSERT INTO episodes (task_id, cell_key, cell_json, replicate, seed, k, forked_from,
                     schedule_sha256, status, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'incomplete', {NOW})
                     ON CONFLICT (task_id, cell_key, replicate) DO NOTHING"
                ),
                params![
                    init.task_id,
                    init.cell_key,
                    init.cell_json,
                    init.replicate,
                    init.seed as i64,
                    init.k,
                    init.forked_from,
                    init.schedule_sha256
                ],
            )
            .map_err(&err)?;
        let id: i64 = self
            .conn
            .row(
                "SELECT id FROM episodes WHERE task_id = ?1 AND cell_key = ?2 AND replicate = ?3",
                params![init.task_id, init.cell_key, init.replicate],
                |r| r.get(0),
            )
            .map_err(&err)?;
        let row = episode_by_id(&self.conn, &self.path, id)?;
        if row.init.schedule_sha256 != init.schedule_sha256 {
            return Err(StoreError::ScheduleMismatch {
                task_id: init.task_id.clone(),
                stored: row.init.schedule_sha256,
                current: init.schedule_sha256.clone(),
            });
        }
        Ok((row, calls_of(&self.conn, &self.path, id)?))
    }

    /// One savepoint (a transaction of its own outside a group): the call's new messages
    /// and list nodes, then the call row.
    pub(crate) fn record_call(&mut self, c: &NewCall) -> Result<i64> {
        let id = in_savepoint(&self.conn, &self.path, &CALL, || {
            insert_call(&self.conn, &self.path, &mut self.edges, c)
        })?;
        if let (Some(batch), Some(item)) = (&c.batch_id, &c.batch_item) {
            self.batched_item_stored(batch, item)?;
        }
        Ok(id)
    }

    pub(crate) fn record_attempt(&mut self, a: &NewAttempt) -> Result<i64> {
        let u = a.usage.as_ref();
        let n =
            |f: fn(&baton_types::Usage) -> u64| u.map(|u| i64::try_from(f(u)).unwrap_or(i64::MAX));
        self.conn
            .exec(
                &format!(
                    "INSERT INTO attempts (episode_id, turn, phase, model, attempt, reason,
                     raw_response, uncached_in, cache_read, cache_write_5m, cache_write_1h,
                     output, reasoning, cost, unpriced, latency_ms, batch_id, cost_direct,
                     batch_item, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                     ?16, ?17, ?18, ?19, {NOW})"
                ),
                params![
                    a.episode_id,
                    a.turn,
                    a.phase.as_str(),
                    a.model,
                    a.attempt,
                    a.reason,
                    a.raw_response,
                    n(|u| u.uncached_in),
                    n(|u| u.cache_read),
                    n(|u| u.cache_write_5m),
                    n(|u| u.cache_write_1h),
                    n(|u| u.output),
                    n(|u| u.reasoning),
                    a.cost.as_ref().ok().map(|c| c.0),
                    a.cost.as_ref().err(),
                    i64::try_from(a.latency_ms).unwrap_or(i64::MAX),
                    a.batch_id,
                    a.cost_direct.map(|c| c.0),
                    a.batch_item
                ],
            )
            .map_err(sqlite_err(&self.path))?;
        let id = self.conn.last_insert_rowid();
        if let (Some(batch), Some(item)) = (&a.batch_id, &a.batch_item) {
            self.batched_item_stored(batch, item)?;
        }
        Ok(id)
    }

    fn check_inputs(&mut self, inputs: &[(String, String)], allow: bool) -> Result<Vec<String>> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        let mut changed = Vec::new();
        for (name, sha) in inputs {
            let stored: Option<String> = tx
                .row("SELECT sha256 FROM inputs WHERE name = ?1", [name], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(&err)?;
            match stored {
                Some(s) if &s == sha => {}
                Some(s) => {
                    changed.push(format!("{name} ({} -> {})", short(&s), short(sha)));
                    if allow {
                        tx.exec(
                            &format!(
                                "INSERT INTO input_changes (name, stored, current, changed_at)
                                 VALUES (?1, ?2, ?3, {NOW})"
                            ),
                            params![name, s, sha],
                        )
                        .map_err(&err)?;
                        tx.exec(
                            "UPDATE inputs SET sha256 = ?2 WHERE name = ?1",
                            params![name, sha],
                        )
                        .map_err(&err)?;
                    }
                }
                None => {
                    tx.exec(
                        "INSERT INTO inputs (name, sha256) VALUES (?1, ?2)",
                        params![name, sha],
                    )
                    .map_err(&err)?;
                }
            }
        }
        if !changed.is_empty() && !allow {
            return Err(StoreError::InputsChanged {
                path: self.path.clone(),
                changed,
            });
        }
        tx.commit().map_err(&err)?;
        Ok(changed)
    }

    fn finish(&self, id: i64, o: &Outcome) -> Result<()> {
        update_outcome(&self.conn, &self.path, id, o)
    }
}

/// The first twelve hex digits of a sha256, enough to tell two apart in a message.
fn short(sha: &str) -> &str {
    &sha[..sha.len().min(12)]
}

/// Insert one call on `conn` (inside the caller's savepoint): its new messages and list
/// nodes, then the call row; returns the row id. The request's hash is checked first.
/// A count as SQLite stores it: one past `i64::MAX` (a hostile server's `u64::MAX`)
/// is stored as `i64::MAX`, never wrapped to a negative number the store could not read
/// back. (The model treats such usage as unreadable before it gets here.)
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) fn insert_call(
    conn: &Connection,
    path: &Path,
    edges: &mut Edges,
    c: &NewCall,
) -> Result<i64> {
    let request_hash = Sha256::digest(c.request_json.as_bytes());
    let actual = hex::encode(request_hash);
    if actual != c.request_sha256 {
        return Err(StoreError::RequestHash {
            episode_id: c.episode_id,
            turn: c.turn,
            phase: c.phase.as_str(),
            given: c.request_sha256.clone(),
            actual,
        });
    }
    let err = sqlite_err(path);
    let (whole, params_json, at, list) = match split(&c.request_json) {
        Some(s) => {
            let list = intern_list(conn, edges, &s.messages).map_err(&err)?;
            (None, Some(s.params), Some(s.messages_at as i64), Some(list))
        }
        None => (Some(c.request_json.as_str()), None, None, None),
    };
    let (raw, raw_text_at) = match c
        .raw_response
        .as_deref()
        .map(|r| cut_text(r, &c.response_text))
    {
        Some(Some((cut, at))) => (Some(std::borrow::Cow::Owned(cut)), Some(at as i64)),
        _ => (
            c.raw_response.as_deref().map(std::borrow::Cow::Borrowed),
            None,
        ),
    };
    conn.exec(
        &format!(
            "INSERT INTO calls (episode_id, turn, phase, model, model_served, request_json,
             request_params, request_messages_at, request_messages, request_hash,
             response_text, raw_response, uncached_in, cache_read, cache_write_5m,
             cache_write_1h, output, reasoning, cost, latency_ms, attempts, finish_reason,
             unpriced, batch_id, cost_direct, batch_item, response_hash,
             raw_response_text_at, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
             ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, {NOW})"
        ),
        params![
            c.episode_id,
            c.turn,
            c.phase.as_str(),
            c.model,
            c.model_served,
            whole,
            params_json,
            at,
            list,
            request_hash.as_slice(),
            c.response_text,
            raw,
            count(c.usage.uncached_in),
            count(c.usage.cache_read),
            count(c.usage.cache_write_5m),
            count(c.usage.cache_write_1h),
            count(c.usage.output),
            count(c.usage.reasoning),
            c.cost.0,
            count(c.latency_ms),
            c.attempts,
            c.finish_reason,
            c.unpriced,
            c.batch_id,
            c.cost_direct.map(|c| c.0),
            c.batch_item,
            Sha256::digest(c.response_text.as_bytes()).as_slice(),
            raw_text_at
        ],
    )
    .map_err(&err)?;
    Ok(conn.last_insert_rowid())
}

/// The raw body without the reply's text, and where it was, when the body holds the
/// text as serde_json writes it (quotes included); `None`: the body is stored whole
/// (see [`crate::schema`], version 16). Only a text long enough to be worth it is cut.
pub(crate) fn cut_text(raw: &str, text: &str) -> Option<(String, usize)> {
    if text.len() < 16 {
        return None;
    }
    let quoted = serde_json::to_string(text).ok()?;
    // the first match, as `str::find`; a match begins with `"`, so on a char boundary
    let at = memchr::memmem::find(raw.as_bytes(), quoted.as_bytes())?;
    let mut cut = String::with_capacity(raw.len() - quoted.len());
    cut.push_str(&raw[..at]);
    cut.push_str(&raw[at + quoted.len()..]);
    Some((cut, at))
}

/// The raw body [`cut_text`] cut, whole again; `None` when `at` is not a character
/// boundary of `cut`.
pub(crate) fn uncut_text(cut: &str, at: usize, text: &str) -> Option<String> {
    if !cut.is_char_boundary(at) {
        return None;
    }
    let quoted = serde_json::to_string(text).ok()?;
    let mut raw = String::with_capacity(cut.len() + quoted.len());
    raw.push_str(&cut[..at]);
    raw.push_str(&quoted);
    raw.push_str(&cut[at..]);
    Some(raw)
}

/// Store how episode `id` ended.
pub(crate) fn update_outcome(conn: &Connection, path: &Path, id: i64, o: &Outcome) -> Result<()> {
    update_outcome_costing(conn, path, id, o, o.cost_attributed, o.cost_paid)
}

/// Store how episode `id` ended, with these costs instead of `o`'s.
pub(crate) fn update_outcome_costing(
    conn: &Connection,
    path: &Path,
    id: i64,
    o: &Outcome,
    attributed: baton_types::Cost,
    paid: baton_types::Cost,
) -> Result<()> {
    let v = o.verdict.as_ref();
    conn.exec(
        &format!(
            "UPDATE episodes SET status = ?2, final_response = ?3, extracted = ?4, score = ?5,
                     is_correct = ?6, eval_error = ?7, eval_details = ?8, reason = ?9,
                     cost_attributed = ?10, cost_paid = ?11, extraction_rule = ?12,
                     no_answer = ?13, updated_at = {NOW} WHERE id = ?1"
        ),
        params![
            id,
            o.status.as_str(),
            o.final_response,
            o.extracted,
            v.map(|v| v.score),
            v.and_then(|v| v.is_correct),
            v.and_then(|v| v.error.clone()),
            v.map(|v| v.details.to_string()),
            o.reason,
            attributed.0,
            paid.0,
            v.and_then(|v| v.rule.clone()),
            v.is_some_and(|v| v.no_answer)
        ],
    )
    .map_err(sqlite_err(path))?;
    Ok(())
}
