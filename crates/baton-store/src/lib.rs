//! The experiment store: one SQLite file per experiment.
//!
//! Every completed model call is committed the moment it completes, by a single writer
//! thread that owns the connection (WAL mode), so a crash loses at most the calls in
//! flight and never a paid result. Resuming reads back what is stored and repeats
//! nothing. The schema is documented and versioned in [`schema`]; older files are
//! migrated forward when opened, and a file from a newer baton is refused.
//!
//! Main types: [`Store`] (the async handle used while running), [`Reader`] (read-only
//! access for reports), [`NewCall`], [`CallRow`], [`EpisodeRow`].
//!
//! Not here: deciding what to run (`baton-runner`) or computing metrics (`baton-report`).
#![deny(missing_docs)]

pub mod schema;

use std::path::{Path, PathBuf};
use std::thread;

use baton_types::{EpisodeStatus, Phase, Usage, Verdict};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::{mpsc, oneshot};

/// Errors from the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// SQLite failed.
    #[error("store {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// The SQLite error.
        source: rusqlite::Error,
    },
    /// The file was written by a newer baton.
    #[error(
        "store {path} has schema version {found}, newer than this baton understands ({supported}); upgrade baton"
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// Ours.
        supported: i64,
    },
    /// The file belongs to a different experiment spec.
    #[error(
        "store {path} was created for a different experiment (spec sha256 {stored}, now {current}); use another --out folder or restore the original experiment file"
    )]
    SpecMismatch {
        /// The database file.
        path: PathBuf,
        /// The stored spec hash.
        stored: String,
        /// The current spec hash.
        current: String,
    },
    /// A task's schedule changed between runs: resuming would mix two protocols.
    #[error(
        "task {task_id:?}: schedule sha256 changed from {stored} to {current}; the stored episodes were run with other prompts"
    )]
    ScheduleMismatch {
        /// The task.
        task_id: String,
        /// The stored hash.
        stored: String,
        /// The current hash.
        current: String,
    },
    /// The writer thread is gone (it failed earlier).
    #[error("store writer stopped")]
    WriterGone,
    /// A stored value could not be decoded.
    #[error("store {path}: bad value in {what}: {message}")]
    Decode {
        /// The database file.
        path: PathBuf,
        /// Where.
        what: String,
        /// What is wrong.
        message: String,
    },
}

type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Run metadata stored once per experiment.
#[derive(Debug, Clone)]
pub struct ExperimentMeta {
    /// Experiment name.
    pub name: String,
    /// The experiment file's text, as run.
    pub spec_toml: String,
    /// Its sha256 (of the normalized spec).
    pub spec_sha256: String,
    /// The price card's sha256.
    pub price_card_sha256: String,
    /// Evaluator profile (`lic`).
    pub eval_profile: String,
    /// Evaluator implementation version.
    pub eval_version: String,
    /// baton's version.
    pub baton_version: String,
    /// The git revision baton was built from, when known.
    pub git_revision: Option<String>,
    /// Whether any model is simulated.
    pub simulated: bool,
}

/// Identity and set-up of an episode, used to find or create it.
#[derive(Debug, Clone)]
pub struct EpisodeInit {
    /// Task id.
    pub task_id: String,
    /// The cell's stable label.
    pub cell_key: String,
    /// The cell as JSON.
    pub cell_json: String,
    /// Replicate index.
    pub replicate: u32,
    /// The sampling seed of the (task, replicate).
    pub seed: u64,
    /// Sender turns, for handoff cells.
    pub k: Option<u32>,
    /// The anchor episode whose first K calls are this episode's prefix.
    pub forked_from: Option<i64>,
    /// The schedule hash.
    pub schedule_sha256: String,
}

/// A completed call to store.
#[derive(Debug, Clone)]
pub struct NewCall {
    /// The episode.
    pub episode_id: i64,
    /// The user turn it answers (1-based); a handoff call carries the turn after which
    /// it was made.
    pub turn: u32,
    /// Prefix, handoff or suffix.
    pub phase: Phase,
    /// The model's name in the experiment.
    pub model: String,
    /// The model id the provider reported.
    pub model_served: String,
    /// The exact request (messages and settings) as JSON.
    pub request_json: String,
    /// The request's sha256.
    pub request_sha256: String,
    /// The reply's visible text.
    pub response_text: String,
    /// The raw response body, when there is one.
    pub raw_response: Option<String>,
    /// Normalized usage.
    pub usage: Usage,
    /// Exact cost in picodollars.
    pub cost: i64,
    /// Latency of the successful attempt, in milliseconds.
    pub latency_ms: u64,
    /// Attempts made.
    pub attempts: u32,
    /// The finish reason.
    pub finish_reason: Option<String>,
}

/// A stored call.
#[derive(Debug, Clone)]
pub struct CallRow {
    /// Row id.
    pub id: i64,
    /// The episode.
    pub episode_id: i64,
    /// The turn.
    pub turn: u32,
    /// The phase.
    pub phase: Phase,
    /// The model's name in the experiment.
    pub model: String,
    /// The model id served.
    pub model_served: String,
    /// The exact request as JSON.
    pub request_json: String,
    /// The reply's text.
    pub response_text: String,
    /// Usage.
    pub usage: Usage,
    /// Cost in picodollars.
    pub cost: i64,
    /// Latency in milliseconds.
    pub latency_ms: u64,
    /// Attempts.
    pub attempts: u32,
}

/// How an episode ended, to store.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Final status.
    pub status: EpisodeStatus,
    /// The last reply, when every turn was answered.
    pub final_response: Option<String>,
    /// The extracted answer.
    pub extracted: Option<String>,
    /// The verdict, when scored.
    pub verdict: Option<Verdict>,
    /// Why it is incomplete, errored or unscored.
    pub reason: Option<String>,
    /// Attributed cost (prefix at the sender's rates, even when forked), picodollars.
    pub cost_attributed: i64,
    /// Money this episode actually spent, picodollars.
    pub cost_paid: i64,
}

/// A stored episode.
#[derive(Debug, Clone)]
pub struct EpisodeRow {
    /// Row id.
    pub id: i64,
    /// Task id.
    pub task_id: String,
    /// Family name.
    pub family: String,
    /// Number of turns of the task.
    pub n_turns: u32,
    /// The cell label.
    pub cell_key: String,
    /// The cell as JSON.
    pub cell_json: String,
    /// Replicate.
    pub replicate: u32,
    /// Seed.
    pub seed: u64,
    /// K, for handoff cells.
    pub k: Option<u32>,
    /// The anchor the prefix is forked from.
    pub forked_from: Option<i64>,
    /// The schedule hash.
    pub schedule_sha256: String,
    /// Status.
    pub status: EpisodeStatus,
    /// Final response.
    pub final_response: Option<String>,
    /// Extracted answer.
    pub extracted: Option<String>,
    /// Score (0..=1) when scored.
    pub score: Option<f64>,
    /// LiC's `is_correct`, when the family returns one.
    pub is_correct: Option<bool>,
    /// Evaluator error text.
    pub eval_error: Option<String>,
    /// Reason for incomplete/errored/unscored.
    pub reason: Option<String>,
    /// Attributed cost, picodollars.
    pub cost_attributed: i64,
    /// Paid cost, picodollars.
    pub cost_paid: i64,
}

enum Command {
    InitExperiment(Box<ExperimentMeta>, oneshot::Sender<Result<()>>),
    UpsertTask(
        String,
        String,
        u32,
        String,
        String,
        oneshot::Sender<Result<()>>,
    ),
    Episode(
        Box<EpisodeInit>,
        oneshot::Sender<Result<(EpisodeRow, Vec<CallRow>)>>,
    ),
    RecordCall(Box<NewCall>, oneshot::Sender<Result<i64>>),
    Finish(i64, Box<Outcome>, oneshot::Sender<Result<()>>),
    Calls(i64, oneshot::Sender<Result<Vec<CallRow>>>),
}

/// The async handle to an experiment's store. Cloning it is cheap; every clone talks to
/// the same writer thread.
#[derive(Clone, Debug)]
pub struct Store {
    tx: mpsc::UnboundedSender<Command>,
    path: PathBuf,
}

impl Store {
    /// Open (creating and migrating as needed) the store at `path` and start its writer.
    pub fn open(path: &Path) -> Result<Store> {
        let conn = open_rw(path)?;
        let (tx, mut rx) = mpsc::unbounded_channel::<Command>();
        let db = Db {
            conn,
            path: path.to_path_buf(),
        };
        thread::Builder::new()
            .name("baton-store-writer".into())
            .spawn(move || {
                while let Some(cmd) = rx.blocking_recv() {
                    db.handle(cmd);
                }
            })
            .expect("spawning the store writer thread");
        Ok(Store {
            tx,
            path: path.to_path_buf(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<Result<T>>) -> Command) -> Result<T> {
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
    pub async fn upsert_task(
        &self,
        task_id: &str,
        family: &str,
        n_turns: u32,
        schedule_sha256: &str,
        sample_json: String,
    ) -> Result<()> {
        let (a, b, c) = (
            task_id.to_string(),
            family.to_string(),
            schedule_sha256.to_string(),
        );
        self.ask(|tx| Command::UpsertTask(a, b, n_turns, c, sample_json, tx))
            .await
    }

    /// Find or create an episode, returning it with its stored calls in order.
    pub async fn episode(&self, init: EpisodeInit) -> Result<(EpisodeRow, Vec<CallRow>)> {
        self.ask(|tx| Command::Episode(Box::new(init), tx)).await
    }

    /// Commit one completed call.
    pub async fn record_call(&self, call: NewCall) -> Result<i64> {
        self.ask(|tx| Command::RecordCall(Box::new(call), tx)).await
    }

    /// Store how an episode ended.
    pub async fn finish(&self, episode_id: i64, outcome: Outcome) -> Result<()> {
        self.ask(|tx| Command::Finish(episode_id, Box::new(outcome), tx))
            .await
    }

    /// The stored calls of an episode, in order.
    pub async fn calls(&self, episode_id: i64) -> Result<Vec<CallRow>> {
        self.ask(|tx| Command::Calls(episode_id, tx)).await
    }
}

fn open_rw(path: &Path) -> Result<Connection> {
    let err = |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!("cannot create {}: {e}", dir.display())),
            ))
        })?;
    }
    let mut conn = Connection::open(path).map_err(err)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(err)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(err)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(err)?;
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(err)?;
    migrate(&mut conn, path)?;
    Ok(conn)
}

fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let err = |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    conn.execute(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        [],
    )
    .map_err(err)?;
    let version: i64 = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get::<_, String>(0),
        )
        .optional()
        .map_err(err)?
        .map_or(0, |v| v.parse().unwrap_or(0));
    if version > schema::SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found: version,
            supported: schema::SCHEMA_VERSION,
        });
    }
    for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.transaction().map_err(err)?;
        tx.execute_batch(sql).map_err(err)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [(i as i64 + 1).to_string()],
        )
        .map_err(err)?;
        tx.commit().map_err(err)?;
    }
    Ok(())
}

struct Db {
    conn: Connection,
    path: PathBuf,
}

const NOW: &str = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')";

impl Db {
    fn handle(&self, cmd: Command) {
        // A dropped receiver means the caller gave up; nothing to do about it.
        match cmd {
            Command::InitExperiment(meta, tx) => drop(tx.send(self.init_experiment(&meta))),
            Command::UpsertTask(id, fam, n, sha, sample, tx) => {
                drop(tx.send(self.upsert_task(&id, &fam, n, &sha, &sample)))
            }
            Command::Episode(init, tx) => drop(tx.send(self.episode(&init))),
            Command::RecordCall(call, tx) => drop(tx.send(self.record_call(&call))),
            Command::Finish(id, outcome, tx) => drop(tx.send(self.finish(id, &outcome))),
            Command::Calls(id, tx) => drop(tx.send(calls(&self.conn, &self.path, id))),
        }
    }

    fn err(&self) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
        |source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        }
    }

    fn init_experiment(&self, m: &ExperimentMeta) -> Result<()> {
        let stored: Option<String> = self
            .conn
            .query_row("SELECT spec_sha256 FROM experiment WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(self.err())?;
        match stored {
            Some(s) if s == m.spec_sha256 => Ok(()),
            Some(s) => Err(StoreError::SpecMismatch {
                path: self.path.clone(),
                stored: s,
                current: m.spec_sha256.clone(),
            }),
            None => {
                self.conn
                    .execute(
                        &format!(
                            "INSERT INTO experiment (id, name, spec_toml, spec_sha256, price_card_sha256,
                             eval_profile, eval_version, baton_version, git_revision, simulated, created_at)
                             VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, {NOW})"
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
                            m.simulated
                        ],
                    )
                    .map_err(self.err())?;
                Ok(())
            }
        }
    }

    fn upsert_task(&self, id: &str, fam: &str, n: u32, sha: &str, sample: &str) -> Result<()> {
        let stored: Option<String> = self
            .conn
            .query_row(
                "SELECT schedule_sha256 FROM tasks WHERE task_id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()
            .map_err(self.err())?;
        match stored {
            Some(s) if s == sha => Ok(()),
            Some(s) => Err(StoreError::ScheduleMismatch {
                task_id: id.to_string(),
                stored: s,
                current: sha.to_string(),
            }),
            None => {
                self.conn
                    .execute(
                        "INSERT INTO tasks (task_id, family, n_turns, schedule_sha256, sample_json)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![id, fam, n, sha, sample],
                    )
                    .map_err(self.err())?;
                Ok(())
            }
        }
    }

    fn episode(&self, init: &EpisodeInit) -> Result<(EpisodeRow, Vec<CallRow>)> {
        self.conn
            .execute(
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
            .map_err(self.err())?;
        let id: i64 = self
            .conn
            .query_row(
                "SELECT id FROM episodes WHERE task_id = ?1 AND cell_key = ?2 AND replicate = ?3",
                params![init.task_id, init.cell_key, init.replicate],
                |r| r.get(0),
            )
            .map_err(self.err())?;
        let row = episode_by_id(&self.conn, &self.path, id)?;
        if row.schedule_sha256 != init.schedule_sha256 {
            return Err(StoreError::ScheduleMismatch {
                task_id: init.task_id.clone(),
                stored: row.schedule_sha256,
                current: init.schedule_sha256.clone(),
            });
        }
        Ok((row, calls(&self.conn, &self.path, id)?))
    }

    fn record_call(&self, c: &NewCall) -> Result<i64> {
        self.conn
            .execute(
                &format!(
                    "INSERT INTO calls (episode_id, turn, phase, model, model_served, request_json,
                     request_sha256, response_text, raw_response, uncached_in, cache_read, cache_write_5m,
                     cache_write_1h, output, reasoning, cost, latency_ms, attempts, finish_reason, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, {NOW})"
                ),
                params![
                    c.episode_id,
                    c.turn,
                    c.phase.as_str(),
                    c.model,
                    c.model_served,
                    c.request_json,
                    c.request_sha256,
                    c.response_text,
                    c.raw_response,
                    c.usage.uncached_in as i64,
                    c.usage.cache_read as i64,
                    c.usage.cache_write_5m as i64,
                    c.usage.cache_write_1h as i64,
                    c.usage.output as i64,
                    c.usage.reasoning as i64,
                    c.cost,
                    c.latency_ms as i64,
                    c.attempts,
                    c.finish_reason
                ],
            )
            .map_err(self.err())?;
        Ok(self.conn.last_insert_rowid())
    }

    fn finish(&self, id: i64, o: &Outcome) -> Result<()> {
        let v = o.verdict.as_ref();
        self.conn
            .execute(
                &format!(
                    "UPDATE episodes SET status = ?2, final_response = ?3, extracted = ?4, score = ?5,
                     is_correct = ?6, eval_error = ?7, eval_details = ?8, reason = ?9,
                     cost_attributed = ?10, cost_paid = ?11, updated_at = {NOW} WHERE id = ?1"
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
                    o.cost_attributed,
                    o.cost_paid
                ],
            )
            .map_err(self.err())?;
        Ok(())
    }
}

const EPISODE_COLUMNS: &str =
    "e.id, e.task_id, t.family, t.n_turns, e.cell_key, e.cell_json, e.replicate,
    e.seed, e.k, e.forked_from, e.schedule_sha256, e.status, e.final_response, e.extracted, e.score,
    e.is_correct, e.eval_error, e.reason, e.cost_attributed, e.cost_paid";

fn episode_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<EpisodeRow> {
    let status: String = r.get(11)?;
    Ok(EpisodeRow {
        id: r.get(0)?,
        task_id: r.get(1)?,
        family: r.get(2)?,
        n_turns: r.get(3)?,
        cell_key: r.get(4)?,
        cell_json: r.get(5)?,
        replicate: r.get(6)?,
        seed: r.get::<_, i64>(7)? as u64,
        k: r.get(8)?,
        forked_from: r.get(9)?,
        schedule_sha256: r.get(10)?,
        status: status.parse().map_err(|e: String| {
            rusqlite::Error::FromSqlConversionFailure(11, rusqlite::types::Type::Text, e.into())
        })?,
        final_response: r.get(12)?,
        extracted: r.get(13)?,
        score: r.get(14)?,
        is_correct: r.get(15)?,
        eval_error: r.get(16)?,
        reason: r.get(17)?,
        cost_attributed: r.get(18)?,
        cost_paid: r.get(19)?,
    })
}

fn episode_by_id(conn: &Connection, path: &Path, id: i64) -> Result<EpisodeRow> {
    conn.query_row(
        &format!(
            "SELECT {EPISODE_COLUMNS} FROM episodes e JOIN tasks t USING (task_id) WHERE e.id = ?1"
        ),
        [id],
        episode_from_row,
    )
    .map_err(|source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    })
}

fn calls(conn: &Connection, path: &Path, episode_id: i64) -> Result<Vec<CallRow>> {
    let err = |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    };
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, episode_id, turn, phase, model, model_served, request_json, response_text,
             uncached_in, cache_read, cache_write_5m, cache_write_1h, output, reasoning, cost,
             latency_ms, attempts
             FROM calls WHERE episode_id = ?1
             ORDER BY turn, CASE phase WHEN 'prefix' THEN 0 WHEN 'handoff' THEN 1 ELSE 2 END",
        )
        .map_err(err)?;
    let rows = stmt
        .query_map([episode_id], |r| {
            let phase: String = r.get(3)?;
            Ok(CallRow {
                id: r.get(0)?,
                episode_id: r.get(1)?,
                turn: r.get(2)?,
                phase: match phase.as_str() {
                    "prefix" => Phase::Prefix,
                    "handoff" => Phase::Handoff,
                    _ => Phase::Suffix,
                },
                model: r.get(4)?,
                model_served: r.get(5)?,
                request_json: r.get(6)?,
                response_text: r.get(7)?,
                usage: Usage {
                    uncached_in: r.get::<_, i64>(8)? as u64,
                    cache_read: r.get::<_, i64>(9)? as u64,
                    cache_write_5m: r.get::<_, i64>(10)? as u64,
                    cache_write_1h: r.get::<_, i64>(11)? as u64,
                    output: r.get::<_, i64>(12)? as u64,
                    reasoning: r.get::<_, i64>(13)? as u64,
                },
                cost: r.get(14)?,
                latency_ms: r.get::<_, i64>(15)? as u64,
                attempts: r.get(16)?,
            })
        })
        .map_err(err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err)
}

/// Stored experiment metadata, as read back.
#[derive(Debug, Clone)]
pub struct ExperimentInfo {
    /// Experiment name.
    pub name: String,
    /// The spec as run.
    pub spec_toml: String,
    /// Price-card sha256.
    pub price_card_sha256: String,
    /// Evaluator profile.
    pub eval_profile: String,
    /// Whether any model is simulated.
    pub simulated: bool,
    /// baton's version.
    pub baton_version: String,
    /// Creation time (UTC, ISO 8601).
    pub created_at: String,
}

/// Read-only access to a store, for reports and checks.
pub struct Reader {
    conn: Connection,
    path: PathBuf,
}

impl Reader {
    /// Open a store read-only.
    pub fn open(path: &Path) -> Result<Reader> {
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(
            |source| StoreError::Sqlite {
                path: path.to_path_buf(),
                source,
            },
        )?;
        Ok(Reader {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The experiment row.
    pub fn experiment(&self) -> Result<ExperimentInfo> {
        self.conn
            .query_row(
                "SELECT name, spec_toml, price_card_sha256, eval_profile, simulated, baton_version, created_at
                 FROM experiment WHERE id = 1",
                [],
                |r| {
                    Ok(ExperimentInfo {
                        name: r.get(0)?,
                        spec_toml: r.get(1)?,
                        price_card_sha256: r.get(2)?,
                        eval_profile: r.get(3)?,
                        simulated: r.get(4)?,
                        baton_version: r.get(5)?,
                        created_at: r.get(6)?,
                    })
                },
            )
            .map_err(|source| StoreError::Sqlite { path: self.path.clone(), source })
    }

    /// Every episode, ordered by id.
    pub fn episodes(&self) -> Result<Vec<EpisodeRow>> {
        let err = |source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        };
        let mut stmt = self
            .conn
            .prepare(&format!(
                "SELECT {EPISODE_COLUMNS} FROM episodes e JOIN tasks t USING (task_id) ORDER BY e.id"
            ))
            .map_err(err)?;
        let rows = stmt.query_map([], episode_from_row).map_err(err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(err)
    }

    /// The calls of one episode, in order.
    pub fn calls(&self, episode_id: i64) -> Result<Vec<CallRow>> {
        calls(&self.conn, &self.path, episode_id)
    }

    /// Number of stored calls.
    pub fn call_count(&self) -> Result<u64> {
        self.conn
            .query_row("SELECT count(*) FROM calls", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(|source| StoreError::Sqlite {
                path: self.path.clone(),
                source,
            })
    }

    /// Sum of the cost of every stored call, in picodollars (money actually spent).
    pub fn total_paid(&self) -> Result<i64> {
        self.conn
            .query_row("SELECT coalesce(sum(cost), 0) FROM calls", [], |r| r.get(0))
            .map_err(|source| StoreError::Sqlite {
                path: self.path.clone(),
                source,
            })
    }
}
