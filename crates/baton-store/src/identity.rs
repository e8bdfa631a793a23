//! Episode identity in the store (version 14): what lets an experiment grow on the same
//! folder without paying twice.
//!
//! Each chat episode carries `identity`, the sha256 its runner computed from everything
//! that decides what the episode sends and how it is scored (the task's content, the
//! cell, the replicate and its seed, each model's request settings, the templates,
//! interface texts and evaluator). The store does not compute it; it keeps it and
//! compares it:
//!
//! * an episode opened with the identity it has is reused (its calls replay);
//! * one opened with another identity is *retired* (`retired = 'changed'`, its
//!   `cell_key` suffixed with ` #<id>` so the cell's name is free) and a new episode is
//!   made in its place; its calls, attempts and costs stay stored;
//! * an episode of a cell the experiment no longer has is retired as `removed` (it
//!   keeps its cell key, and is reused if the cell comes back with the same identity).
//!
//! [`Reader::episodes`](crate::Reader::episodes) lists current episodes only;
//! [`Reader::all_episodes`](crate::Reader::all_episodes) every one. Episodes stored
//! before version 14 have no identity until a run adopts one for them
//! ([`Store::set_identities`]): the runner computes what they would have had from the
//! stored experiment and inputs.
//!
//! The experiment's normalized form is stored beside its TOML text
//! (`experiment.experiment_json`), so a later run can say what changed, key by key.
//! A price card that changed re-prices stored usage ([`Store::reprice`]) instead of
//! running anything again.

use baton_types::Cost;
use rusqlite::{OptionalExtension, params};

use crate::connect::{Cached, EPISODE, in_savepoint, sqlite_err};
use crate::error::{Result, StoreError};
use crate::reader::{Reader, calls_of, episode_by_id};
use crate::rows::{CallRow, EpisodeInit, EpisodeRow, ExperimentMeta, Outcome, TaskMeta};
use crate::writer::{Db, NOW, Store};

type Reply<T> = tokio::sync::oneshot::Sender<Result<T>>;

/// Why an episode is no longer part of its experiment.
pub const RETIRED_CHANGED: &str = "changed";
/// An episode of a cell (or task) the experiment no longer runs.
pub const RETIRED_REMOVED: &str = "removed";

/// An episode as identity bookkeeping sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredIdentity {
    /// Row id.
    pub id: i64,
    /// Task id.
    pub task_id: String,
    /// Cell label.
    pub cell_key: String,
    /// The cell as JSON.
    pub cell_json: String,
    /// Replicate index.
    pub replicate: u32,
    /// Seed it ran with.
    pub seed: u64,
    /// Switch point K (handoffs).
    pub k: Option<u32>,
    /// Its schedule's sha256.
    pub schedule_sha256: String,
    /// Its status (`scored`, `incomplete`, ...).
    pub status: String,
    /// Its identity; `None` for an episode stored before version 14 and not yet adopted.
    pub identity: Option<String>,
    /// Why it was retired, if it was.
    pub retired: Option<String>,
}

/// New costs for stored rows after a price card changed: each call's cost, each
/// attempt's cost (or why it cannot be priced), and each episode's paid and attributed
/// cost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Repricing {
    /// (call id, cost in picodollars, why it is unpriced).
    pub calls: Vec<(i64, i64, Option<String>)>,
    /// (attempt id, cost in picodollars or why it cannot be priced).
    pub attempts: Vec<(i64, std::result::Result<i64, String>)>,
    /// (episode id, paid, attributed), picodollars.
    pub episodes: Vec<(i64, i64, i64)>,
    /// The new card's sha256, stored with the experiment.
    pub price_card_sha256: String,
}

pub(crate) enum IdentityCommand {
    Experiment(Box<ExperimentMeta>, String, Reply<()>),
    Task(Box<TaskMeta>, Reply<()>),
    Set(Vec<(i64, String)>, Reply<()>),
    Episode(Box<EpisodeInit>, String, Reply<OpenEpisode>),
    Retire(Vec<(String, String, u32)>, Reply<u64>),
    Reprice(Box<Repricing>, Reply<()>),
    Finish(Box<Counted>, Reply<EpisodeCosts>),
}

/// An episode's outcome to store with its cost counted from what it stored
/// ([`Store::finish_counted`]).
pub(crate) struct Counted {
    episode_id: i64,
    outcome: Outcome,
    forked: Cost,
    paid: fn(&EpisodeCosts) -> Cost,
}

/// An identity command's result, held until its group is committed (see `writer`).
pub(crate) enum IdentityAnswer {
    Unit(Result<()>),
    Episode(Box<Result<OpenEpisode>>),
    Count(Result<u64>),
    Costs(Result<EpisodeCosts>),
}

impl IdentityAnswer {
    pub(crate) fn error(&self) -> Option<&StoreError> {
        match self {
            IdentityAnswer::Unit(r) => r.as_ref().err(),
            IdentityAnswer::Episode(r) => r.as_ref().as_ref().err(),
            IdentityAnswer::Count(r) => r.as_ref().err(),
            IdentityAnswer::Costs(r) => r.as_ref().err(),
        }
    }

    pub(crate) fn is_ok(&self) -> bool {
        self.error().is_none()
    }
}

impl IdentityCommand {
    /// The answer that refuses this command with `e`.
    pub(crate) fn refusal(&self, e: StoreError) -> IdentityAnswer {
        match self {
            IdentityCommand::Episode(..) => IdentityAnswer::Episode(Box::new(Err(e))),
            IdentityCommand::Retire(..) => IdentityAnswer::Count(Err(e)),
            IdentityCommand::Finish(..) => IdentityAnswer::Costs(Err(e)),
            _ => IdentityAnswer::Unit(Err(e)),
        }
    }

    /// Send `answer` to whoever sent the command.
    pub(crate) fn answer(self, answer: IdentityAnswer) {
        match (self, answer) {
            (IdentityCommand::Experiment(.., tx), IdentityAnswer::Unit(r))
            | (IdentityCommand::Task(_, tx), IdentityAnswer::Unit(r))
            | (IdentityCommand::Set(_, tx), IdentityAnswer::Unit(r))
            | (IdentityCommand::Reprice(_, tx), IdentityAnswer::Unit(r)) => drop(tx.send(r)),
            (IdentityCommand::Episode(.., tx), IdentityAnswer::Episode(r)) => drop(tx.send(*r)),
            (IdentityCommand::Retire(_, tx), IdentityAnswer::Count(r)) => drop(tx.send(r)),
            (IdentityCommand::Finish(_, tx), IdentityAnswer::Costs(r)) => drop(tx.send(r)),
            _ => unreachable!("Db::identity answers each command with its own kind"),
        }
    }
}

impl Store {
    /// Store how an episode ended, its paid cost counted in the same transaction from
    /// what it stored: `paid` of what each of its calls and unusable billed attempts cost
    /// (no request or reply is read back), and its attributed cost that plus `forked`
    /// (`outcome`'s own two costs are replaced). Returns the costs it counted.
    pub async fn finish_counted(
        &self,
        episode_id: i64,
        outcome: Outcome,
        forked: Cost,
        paid: fn(&EpisodeCosts) -> Cost,
    ) -> Result<EpisodeCosts> {
        let counted = Box::new(Counted {
            episode_id,
            outcome,
            forked,
            paid,
        });
        self.ask(|tx| crate::writer::Command::Identity(IdentityCommand::Finish(counted, tx)))
            .await
    }

    /// Record the experiment, or replace the stored record with this one (the
    /// experiment grew or changed; what changed is the runner's to say), with its
    /// normalized form `experiment_json`. The creation time and the kind are kept (the
    /// runner refuses a store of the other kind before this).
    pub async fn put_experiment(
        &self,
        meta: ExperimentMeta,
        experiment_json: String,
    ) -> Result<()> {
        self.ask(|tx| {
            crate::writer::Command::Identity(IdentityCommand::Experiment(
                Box::new(meta),
                experiment_json,
                tx,
            ))
        })
        .await
    }

    /// Record a task, replacing what is stored for it (each episode keeps the schedule
    /// hash it ran with).
    pub async fn put_task(&self, task: TaskMeta) -> Result<()> {
        self.ask(|tx| crate::writer::Command::Identity(IdentityCommand::Task(Box::new(task), tx)))
            .await
    }

    /// Give episodes stored before identities existed the identity a run computed for
    /// them, as (episode id, identity).
    pub async fn set_identities(&self, identities: Vec<(i64, String)>) -> Result<()> {
        self.ask(|tx| crate::writer::Command::Identity(IdentityCommand::Set(identities, tx)))
            .await
    }

    /// Find or create the episode of `init` with `identity`, with its stored calls in
    /// order and its stored unusable attempts: the stored episode of the same (task, cell, replicate) when its identity
    /// is this one (or it has none yet: it takes this one), else a new episode, the
    /// stored one retired as changed (see the module docs).
    pub async fn episode_as(&self, init: EpisodeInit, identity: String) -> Result<OpenEpisode> {
        self.ask(|tx| {
            crate::writer::Command::Identity(IdentityCommand::Episode(Box::new(init), identity, tx))
        })
        .await
    }

    /// Retire as removed every current episode whose (task id, cell key, replicate) is
    /// not in `planned`; returns how many were retired.
    pub async fn retire_removed(&self, planned: Vec<(String, String, u32)>) -> Result<u64> {
        self.ask(|tx| crate::writer::Command::Identity(IdentityCommand::Retire(planned, tx)))
            .await
    }

    /// Store the costs of a price card that changed (see [`Repricing`]), in one
    /// transaction.
    pub async fn reprice(&self, repricing: Repricing) -> Result<()> {
        self.ask(|tx| {
            crate::writer::Command::Identity(IdentityCommand::Reprice(Box::new(repricing), tx))
        })
        .await
    }
}

/// An episode as [`Store::episode_as`] opens it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenEpisode {
    /// Its row.
    pub row: EpisodeRow,
    /// Its stored calls, in order.
    pub calls: Vec<CallRow>,
    /// Its stored unusable billed attempts, in order: those of a call not stored yet
    /// count against its model's limit when the call is made again.
    pub attempts: Vec<AttemptCost>,
}

/// What an episode's stored calls and unusable attempts cost ([`Store::finish_counted`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EpisodeCosts {
    /// Its calls, in the order of [`Store::calls`].
    pub calls: Vec<CallCost>,
    /// Its unusable billed attempts, in the order they were stored.
    pub attempts: Vec<AttemptCost>,
}

/// An unusable billed attempt of an episode: its turn, phase and cost (zero when its
/// cost is unknown: unpriced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptCost {
    /// The call's turn.
    pub turn: u32,
    /// The call's phase.
    pub phase: baton_types::Phase,
    /// What it cost.
    pub cost: baton_types::Cost,
}

/// What a stored call cost ([`Store::finish_counted`]): the money fields of its
/// [`crate::NewCall`], without its request and reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallCost {
    /// The call's turn.
    pub turn: u32,
    /// The call's phase.
    pub phase: baton_types::Phase,
    /// What it cost (0 when `unpriced` is set).
    pub cost: baton_types::Cost,
    /// Why its cost could not be computed, when it could not.
    pub unpriced: Option<String>,
    /// Its normalized usage.
    pub usage: baton_types::Usage,
    /// Attempts made.
    pub attempts: u32,
}

/// The calls of an episode as [`CallCost`]s, in the order of `reader::calls_of`.
pub(crate) fn call_costs(
    conn: &rusqlite::Connection,
    path: &std::path::Path,
    episode_id: i64,
) -> Result<Vec<CallCost>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT turn, phase, cost, unpriced, uncached_in, cache_read, cache_write_5m,
             cache_write_1h, output, reasoning, attempts
             FROM calls WHERE episode_id = ?1
             ORDER BY turn, CASE phase WHEN 'prefix' THEN 0 WHEN 'handoff' THEN 1 ELSE 2 END, id",
        )
        .map_err(sqlite_err(path))?;
    let columns = crate::connect::column_names(&stmt);
    let row_name = format!("of episode {episode_id}");
    let err = crate::connect::read_err(path, "calls", &columns, &row_name);
    let rows: Vec<(String, CallCost)> = stmt
        .query_map([episode_id], |r| {
            Ok((
                r.get(1)?,
                CallCost {
                    turn: r.get(0)?,
                    // decoded below, where a bad value can name the episode
                    phase: baton_types::Phase::Prefix,
                    cost: baton_types::Cost(r.get(2)?),
                    unpriced: r.get(3)?,
                    usage: baton_types::Usage {
                        uncached_in: r.get(4)?,
                        cache_read: r.get(5)?,
                        cache_write_5m: r.get(6)?,
                        cache_write_1h: r.get(7)?,
                        output: r.get(8)?,
                        reasoning: r.get(9)?,
                    },
                    attempts: r.get(10)?,
                },
            ))
        })
        .and_then(|rows| rows.collect())
        .map_err(&err)?;
    rows.into_iter()
        .map(|(phase, mut call)| {
            call.phase = phase.parse().map_err(|message| StoreError::Decode {
                path: path.to_path_buf(),
                what: format!("calls of episode {episode_id}"),
                message,
            })?;
            Ok(call)
        })
        .collect()
}

fn attempt_costs(
    conn: &rusqlite::Connection,
    path: &std::path::Path,
    episode_id: i64,
) -> Result<Vec<AttemptCost>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT turn, phase, coalesce(cost, 0) FROM attempts WHERE episode_id = ?1 ORDER BY id",
        )
        .map_err(sqlite_err(path))?;
    let rows: Vec<(u32, String, i64)> = stmt
        .query_map([episode_id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .and_then(|rows| rows.collect())
        .map_err(sqlite_err(path))?;
    rows.into_iter()
        .map(|(turn, phase, cost)| {
            let phase = phase.parse().map_err(|message| StoreError::Decode {
                path: path.to_path_buf(),
                what: format!("attempts of episode {episode_id}"),
                message,
            })?;
            Ok(AttemptCost {
                turn,
                phase,
                cost: baton_types::Cost(cost),
            })
        })
        .collect()
}

impl Db {
    pub(crate) fn identity(&mut self, cmd: &IdentityCommand) -> IdentityAnswer {
        match cmd {
            IdentityCommand::Experiment(meta, json, _) => {
                IdentityAnswer::Unit(self.put_experiment(meta, json))
            }
            IdentityCommand::Task(task, _) => IdentityAnswer::Unit(self.put_task(task)),
            IdentityCommand::Set(list, _) => IdentityAnswer::Unit(self.set_identities(list)),
            IdentityCommand::Episode(init, identity, _) => {
                IdentityAnswer::Episode(Box::new(self.episode_as(init, identity)))
            }
            IdentityCommand::Retire(planned, _) => {
                IdentityAnswer::Count(self.retire_removed(planned))
            }
            IdentityCommand::Reprice(r, _) => IdentityAnswer::Unit(self.reprice(r)),
            IdentityCommand::Finish(counted, _) => {
                IdentityAnswer::Costs(self.finish_counted(counted))
            }
        }
    }

    fn finish_counted(&self, c: &Counted) -> Result<EpisodeCosts> {
        let costs = EpisodeCosts {
            calls: call_costs(&self.conn, &self.path, c.episode_id)?,
            attempts: attempt_costs(&self.conn, &self.path, c.episode_id)?,
        };
        let paid = (c.paid)(&costs);
        crate::writer::update_outcome_costing(
            &self.conn,
            &self.path,
            c.episode_id,
            &c.outcome,
            c.forked + paid,
            paid,
        )?;
        Ok(costs)
    }

    fn put_experiment(&mut self, m: &ExperimentMeta, json: &str) -> Result<()> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        tx.exec(
            &format!(
                "INSERT INTO experiment (id, name, spec_toml, spec_sha256, price_card_sha256,
                 eval_profile, eval_version, baton_version, git_revision, simulated, kind,
                 experiment_json, created_at)
                 VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, {NOW})
                 ON CONFLICT (id) DO UPDATE SET name = excluded.name,
                 spec_toml = excluded.spec_toml, spec_sha256 = excluded.spec_sha256,
                 price_card_sha256 = excluded.price_card_sha256,
                 eval_profile = excluded.eval_profile, eval_version = excluded.eval_version,
                 baton_version = excluded.baton_version, git_revision = excluded.git_revision,
                 simulated = excluded.simulated, experiment_json = excluded.experiment_json"
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
                m.kind.as_str(),
                json
            ],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)
    }

    fn put_task(&self, t: &TaskMeta) -> Result<()> {
        self.conn
            .exec(
                "INSERT INTO tasks (task_id, family, n_turns, schedule_sha256, sample_json)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (task_id) DO UPDATE SET family = excluded.family,
                 n_turns = excluded.n_turns, schedule_sha256 = excluded.schedule_sha256,
                 sample_json = excluded.sample_json",
                params![
                    t.task_id,
                    t.family.as_str(),
                    t.n_turns,
                    t.schedule_sha256,
                    t.sample_json
                ],
            )
            .map(drop)
            .map_err(sqlite_err(&self.path))
    }

    fn set_identities(&mut self, list: &[(i64, String)]) -> Result<()> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        for (id, identity) in list {
            tx.exec(
                "UPDATE episodes SET identity = ?2 WHERE id = ?1 AND identity IS NULL",
                params![id, identity],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)
    }

    fn episode_as(&mut self, init: &EpisodeInit, identity: &str) -> Result<OpenEpisode> {
        in_savepoint(&self.conn, &self.path, &EPISODE, || {
            self.open_as(init, identity)
        })
    }

    /// [`Db::episode_as`] inside its savepoint.
    fn open_as(&self, init: &EpisodeInit, identity: &str) -> Result<OpenEpisode> {
        let err = sqlite_err(&self.path);
        let tx = &self.conn;
        let stored: Option<(i64, Option<String>)> = tx
            .row(
                "SELECT id, identity FROM episodes
                 WHERE task_id = ?1 AND cell_key = ?2 AND replicate = ?3",
                params![init.task_id, init.cell_key, init.replicate],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(&err)?;
        let id = match stored {
            Some((id, found)) if found.as_deref().is_none_or(|f| f == identity) => {
                tx.exec(
                    "UPDATE episodes SET identity = ?2, retired = NULL WHERE id = ?1",
                    params![id, identity],
                )
                .map_err(&err)?;
                id
            }
            stored => {
                if let Some((old, _)) = stored {
                    tx.exec(
                        "UPDATE episodes SET retired = ?2, cell_key = cell_key || ' #' || id
                         WHERE id = ?1",
                        params![old, RETIRED_CHANGED],
                    )
                    .map_err(&err)?;
                }
                tx.exec(
                    &format!(
                        "INSERT INTO episodes (task_id, cell_key, cell_json, replicate, seed, k,
                         forked_from, schedule_sha256, status, identity, updated_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'incomplete', ?9, {NOW})"
                    ),
                    params![
                        init.task_id,
                        init.cell_key,
                        init.cell_json,
                        init.replicate,
                        init.seed as i64,
                        init.k,
                        init.forked_from,
                        init.schedule_sha256,
                        identity
                    ],
                )
                .map_err(&err)?;
                tx.last_insert_rowid()
            }
        };
        let row = episode_by_id(tx, &self.path, id)?;
        if row.init.schedule_sha256 != init.schedule_sha256 {
            // the same identity with another schedule: the identity left the schedule out
            return Err(StoreError::ScheduleMismatch {
                task_id: init.task_id.clone(),
                stored: row.init.schedule_sha256,
                current: init.schedule_sha256.clone(),
            });
        }
        let calls = calls_of(tx, &self.path, id)?;
        let attempts = attempt_costs(tx, &self.path, id)?;
        Ok(OpenEpisode {
            row,
            calls,
            attempts,
        })
    }

    fn retire_removed(&mut self, planned: &[(String, String, u32)]) -> Result<u64> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        tx.execute_batch(
            "CREATE TEMP TABLE IF NOT EXISTS planned_episodes
             (task_id TEXT, cell_key TEXT, replicate INTEGER);
             DELETE FROM temp.planned_episodes;",
        )
        .map_err(&err)?;
        for (task, cell, replicate) in planned {
            tx.exec(
                "INSERT INTO temp.planned_episodes VALUES (?1, ?2, ?3)",
                params![task, cell, replicate],
            )
            .map_err(&err)?;
        }
        let n = tx
            .exec(
                "UPDATE episodes SET retired = ?1 WHERE retired IS NULL AND NOT EXISTS
                 (SELECT 1 FROM temp.planned_episodes p WHERE p.task_id = episodes.task_id
                  AND p.cell_key = episodes.cell_key AND p.replicate = episodes.replicate)",
                [RETIRED_REMOVED],
            )
            .map_err(&err)?;
        tx.execute_batch("DELETE FROM temp.planned_episodes")
            .map_err(&err)?;
        tx.commit().map_err(&err)?;
        Ok(n as u64)
    }

    fn reprice(&mut self, r: &Repricing) -> Result<()> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        for (id, cost, unpriced) in &r.calls {
            tx.exec(
                "UPDATE calls SET cost = ?2, unpriced = ?3 WHERE id = ?1",
                params![id, cost, unpriced],
            )
            .map_err(&err)?;
        }
        for (id, cost) in &r.attempts {
            let (cost, unpriced) = match cost {
                Ok(c) => (Some(*c), None),
                Err(why) => (None, Some(why)),
            };
            tx.exec(
                "UPDATE attempts SET cost = ?2, unpriced = ?3 WHERE id = ?1",
                params![id, cost, unpriced],
            )
            .map_err(&err)?;
        }
        for (id, paid, attributed) in &r.episodes {
            tx.exec(
                "UPDATE episodes SET cost_paid = ?2, cost_attributed = ?3 WHERE id = ?1",
                params![id, paid, attributed],
            )
            .map_err(&err)?;
        }
        tx.exec(
            "UPDATE experiment SET price_card_sha256 = ?1 WHERE id = 1",
            [&r.price_card_sha256],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)
    }
}

impl Reader {
    /// The stored experiment's normalized form, when a run of version 14 or later
    /// stored one.
    pub fn experiment_json(&self) -> Result<Option<String>> {
        self.conn
            .row(
                "SELECT experiment_json FROM experiment WHERE id = 1",
                [],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()
            .map(Option::flatten)
            .map_err(sqlite_err(&self.path))
    }

    /// The stored sha256 of every input by name (`spec`, `price card`, `task <id>`, ...).
    pub fn inputs(&self) -> Result<std::collections::BTreeMap<String, String>> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, sha256 FROM inputs")
            .map_err(sqlite_err(&self.path))?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .and_then(|rows| rows.collect())
            .map_err(sqlite_err(&self.path))
    }

    /// Every episode's identity bookkeeping, retired ones included, by id.
    pub fn identities(&self) -> Result<Vec<StoredIdentity>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, task_id, cell_key, replicate, seed, k, schedule_sha256, status,
                 identity, retired, cell_json FROM episodes ORDER BY id",
            )
            .map_err(sqlite_err(&self.path))?;
        stmt.query_map([], |r| {
            Ok(StoredIdentity {
                id: r.get(0)?,
                task_id: r.get(1)?,
                cell_key: r.get(2)?,
                replicate: r.get(3)?,
                seed: r.get::<_, i64>(4)? as u64,
                k: r.get(5)?,
                schedule_sha256: r.get(6)?,
                status: r.get(7)?,
                identity: r.get(8)?,
                retired: r.get(9)?,
                cell_json: r.get(10)?,
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(sqlite_err(&self.path))
    }

    /// Every stored call's id, episode, model, batch id and usage (`None` for a row
    /// whose usage could not be read), for re-pricing.
    pub fn call_usage(&self) -> Result<Vec<StoredUsage>> {
        self.usage_of(
            "SELECT id, episode_id, model, batch_id, uncached_in, cache_read, cache_write_5m,
             cache_write_1h, output, reasoning, phase, turn, cost FROM calls ORDER BY id",
        )
    }

    /// Every stored unusable attempt's id, episode, model, batch id and usage.
    pub fn attempt_usage(&self) -> Result<Vec<StoredUsage>> {
        self.usage_of(
            "SELECT id, episode_id, model, batch_id, uncached_in, cache_read, cache_write_5m,
             cache_write_1h, output, reasoning, phase, turn, cost FROM attempts ORDER BY id",
        )
    }

    fn usage_of(&self, sql: &str) -> Result<Vec<StoredUsage>> {
        let mut stmt = self.conn.prepare(sql).map_err(sqlite_err(&self.path))?;
        stmt.query_map([], |r| {
            let n = |i: usize| -> rusqlite::Result<Option<u64>> {
                Ok(r.get::<_, Option<i64>>(i)?.map(|v| v.max(0) as u64))
            };
            let usage = match (n(4)?, n(5)?, n(6)?, n(7)?, n(8)?, n(9)?) {
                (Some(a), Some(b), Some(c), Some(d), Some(e), Some(f)) => {
                    Some(baton_types::Usage {
                        uncached_in: a,
                        cache_read: b,
                        cache_write_5m: c,
                        cache_write_1h: d,
                        output: e,
                        reasoning: f,
                    })
                }
                _ => None,
            };
            Ok(StoredUsage {
                id: r.get(0)?,
                episode_id: r.get(1)?,
                model: r.get(2)?,
                batched: r.get::<_, Option<String>>(3)?.is_some(),
                usage,
                phase: r.get(10)?,
                turn: r.get(11)?,
                cost: r.get::<_, Option<i64>>(12)?.map(baton_types::Cost),
            })
        })
        .and_then(|rows| rows.collect())
        .map_err(sqlite_err(&self.path))
    }
}

/// A stored call's or attempt's usage, for re-pricing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredUsage {
    /// Row id.
    pub id: i64,
    /// Its episode.
    pub episode_id: i64,
    /// The model's name in the experiment.
    pub model: String,
    /// Whether it came from a provider batch (priced at batch rates).
    pub batched: bool,
    /// Its usage, when readable.
    pub usage: Option<baton_types::Usage>,
    /// Its phase (`prefix`, `handoff`, `suffix`, `extraction`).
    pub phase: String,
    /// Its turn.
    pub turn: u32,
    /// Its stored cost (`None` when unknown).
    pub cost: Option<baton_types::Cost>,
}
