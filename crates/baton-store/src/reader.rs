//! Reading a store back: the [`Reader`] for reports and checks, and the row decoding
//! the writer shares.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use baton_types::{Cost, Phase, Spend, Usage, Verdict};
use rusqlite::Connection;

use crate::connect::{column_names, open_ro, read_err, sqlite_err};
use crate::error::{Result, StoreError};
use crate::request::{Lists, join, sha256_hex};
use crate::rows::{CallRow, EpisodeInit, EpisodeRow, ExperimentMeta, ExperimentRow, NewCall};
use crate::rows::{Outcome, TaskMeta};
use crate::writer::uncut_text;

/// Read-only access to a store, for reports and checks. Opening a file of an older
/// schema migrates it first; a newer one is refused.
pub struct Reader {
    pub(crate) conn: Connection,
    pub(crate) path: PathBuf,
}

impl Reader {
    /// Open an existing store read-only.
    pub fn open(path: &Path) -> Result<Reader> {
        if crate::spool::pending(path) {
            tracing::warn!(store = %path.display(), "the store has replies kept in its spool after a failed write; they are not read until a run on it resumes and imports them");
        }
        Ok(Reader {
            conn: open_ro(path)?,
            path: path.to_path_buf(),
        })
    }

    /// The experiment row.
    pub fn experiment(&self) -> Result<ExperimentRow> {
        self.conn
            .query_row(
                "SELECT name, spec_toml, spec_sha256, price_card_sha256, eval_profile,
                 eval_version, baton_version, git_revision, simulated, created_at, kind
                 FROM experiment WHERE id = 1",
                [],
                |r| {
                    let kind: String = r.get(10)?;
                    let kind = baton_types::ExperimentKind::parse(&kind).ok_or_else(|| {
                        rusqlite::Error::FromSqlConversionFailure(
                            10,
                            rusqlite::types::Type::Text,
                            format!("{kind:?} is not an experiment kind (chat, agent)").into(),
                        )
                    })?;
                    Ok(ExperimentRow {
                        meta: ExperimentMeta {
                            name: r.get(0)?,
                            spec_toml: r.get(1)?,
                            spec_sha256: r.get(2)?,
                            price_card_sha256: r.get(3)?,
                            eval_profile: r.get(4)?,
                            eval_version: r.get(5)?,
                            baton_version: r.get(6)?,
                            git_revision: r.get(7)?,
                            simulated: r.get(8)?,
                            kind,
                        },
                        created_at: r.get(9)?,
                    })
                },
            )
            .map_err(sqlite_err(&self.path))
    }

    /// Every task, ordered by id.
    pub fn tasks(&self) -> Result<Vec<TaskMeta>> {
        let err = sqlite_err(&self.path);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT task_id, family, n_turns, schedule_sha256, sample_json FROM tasks
                 ORDER BY task_id",
            )
            .map_err(&err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                ))
            })
            .map_err(&err)?;
        rows.map(|row| {
            let (task_id, family, n_turns, schedule_sha256, sample_json) = row.map_err(&err)?;
            Ok(TaskMeta {
                family: parse(
                    &self.path,
                    || format!("tasks.family of {task_id:?}"),
                    &family,
                )?,
                task_id,
                n_turns,
                schedule_sha256,
                sample_json,
            })
        })
        .collect()
    }

    /// The experiment's current episodes, ordered by id: not those retired because
    /// their identity changed or their cell left the experiment (see
    /// [`Reader::all_episodes`]).
    pub fn episodes(&self) -> Result<Vec<EpisodeRow>> {
        episodes_where(
            &self.conn,
            &self.path,
            "e.retired IS NULL ORDER BY e.id",
            [],
        )
    }

    /// Every stored episode, retired ones included, ordered by id.
    pub fn all_episodes(&self) -> Result<Vec<EpisodeRow>> {
        episodes_where(&self.conn, &self.path, "1 ORDER BY e.id", [])
    }

    /// The calls of one episode, in order, each request rebuilt and checked against
    /// its sha256.
    pub fn calls(&self, episode_id: i64) -> Result<Vec<CallRow>> {
        calls_of(&self.conn, &self.path, episode_id)
    }

    /// Number of stored calls.
    pub fn call_count(&self) -> Result<u64> {
        self.conn
            .query_row("SELECT count(*) FROM calls", [], |r| r.get::<_, i64>(0))
            .map(|n| n as u64)
            .map_err(sqlite_err(&self.path))
    }

    /// Number of stored calls per model name (the experiment's name for the model).
    pub fn call_count_by_model(&self) -> Result<BTreeMap<String, u64>> {
        let mut stmt = self
            .conn
            .prepare("SELECT model, count(*) FROM calls GROUP BY model ORDER BY model")
            .map_err(sqlite_err(&self.path))?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
            })
            .map_err(sqlite_err(&self.path))?;
        rows.collect::<rusqlite::Result<_>>()
            .map_err(sqlite_err(&self.path))
    }

    /// Whether any stored reply says a simulated model served it (`model_served` starting
    /// with `sim/`), whatever provider carried it: a run against `baton sim-server` through
    /// an HTTP provider is as simulated as one with `sim/...` models.
    pub fn served_by_simulated_model(&self) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM calls WHERE model_served LIKE 'sim/%')",
                [],
                |r| r.get(0),
            )
            .map_err(sqlite_err(&self.path))
    }

    /// Per episode, what its own calls (not a forked prefix's) carried: input tokens in
    /// all, of them read from a prompt cache, and replies with no text or cut at the
    /// output cap (finish reason `length`, `max_tokens`, `max_output_tokens`); and apart,
    /// how many answer-extraction calls were made for it.
    pub fn call_figures(&self) -> Result<HashMap<i64, CallFigures>> {
        let err = sqlite_err(&self.path);
        let mut stmt = self
            .conn
            .prepare(
                "SELECT episode_id,
                        sum(own * (uncached_in + cache_read + cache_write_5m + cache_write_1h)),
                        sum(own * cache_read),
                        sum(own * (trim(response_text) = '')),
                        sum(own * coalesce(finish_reason IN ('length', 'max_tokens', 'max_output_tokens'), 0)),
                        sum(1 - own)
                 FROM (SELECT *, phase != 'extraction' AS own FROM calls) GROUP BY episode_id",
            )
            .map_err(&err)?;
        let rows = stmt
            .query_map([], |r| {
                let n = |i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
                Ok((
                    r.get::<_, i64>(0)?,
                    CallFigures {
                        input_tokens: n(1)?,
                        cache_read_tokens: n(2)?,
                        empty_replies: n(3)?,
                        cut_replies: n(4)?,
                        extraction_calls: n(5)?,
                    },
                ))
            })
            .map_err(&err)?;
        rows.collect::<std::result::Result<_, _>>().map_err(&err)
    }

    /// The tasks the last run left out, as (task id, reason), by task id.
    pub fn skipped_tasks(&self) -> Result<Vec<(String, String)>> {
        let err = sqlite_err(&self.path);
        let mut stmt = self
            .conn
            .prepare("SELECT task_id, reason FROM skipped_tasks ORDER BY task_id")
            .map_err(&err)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(&err)?;
        rows.collect::<std::result::Result<_, _>>().map_err(&err)
    }

    /// Every provider batch the run's batched models submitted, in order.
    pub fn batches(&self) -> Result<Vec<crate::batch::BatchRow>> {
        crate::batch::batches_of(&self.conn, &self.path, None)
    }

    /// The money actually spent: the cost of every stored call and of every stored
    /// answered-but-unusable attempt (what could not be priced is not in it; see
    /// [`Reader::spend`]).
    pub fn total_paid(&self) -> Result<Cost> {
        self.spend().map(|s| s.paid)
    }

    /// What the experiment paid for, over every answered attempt, used or not.
    pub fn spend(&self) -> Result<Spend> {
        self.conn
            .query_row(
                "SELECT
                   0,
                   (SELECT count(*) FROM attempts WHERE uncached_in IS NULL AND cost IS NOT NULL),
                   (SELECT count(*) FROM calls),
                   (SELECT count(*) FROM attempts),
                   (SELECT count(*) FROM attempts WHERE uncached_in IS NULL),
                   (SELECT count(*) FROM calls WHERE unpriced IS NOT NULL)
                   + (SELECT count(*) FROM attempts WHERE uncached_in IS NOT NULL AND cost IS NULL),
                   (SELECT count(*) FROM calls WHERE batch_id IS NOT NULL)
                   + (SELECT count(*) FROM attempts WHERE batch_id IS NOT NULL),
                   (SELECT coalesce(sum(cost_direct - cost), 0) FROM calls
                    WHERE cost_direct IS NOT NULL AND unpriced IS NULL)
                   + (SELECT coalesce(sum(cost_direct - cost), 0) FROM attempts
                      WHERE cost_direct IS NOT NULL AND cost IS NOT NULL)",
                [],
                |r| {
                    let n = |i: usize| r.get::<_, i64>(i).map(|n| n as u64);
                    Ok(Spend {
                        paid: Cost::ZERO,
                        billed_attempts: n(2)? + n(3)?,
                        unusable_attempts: n(3)?,
                        unknown_usage_attempts: n(4)?,
                        estimated_attempts: n(1)?,
                        estimated: Cost::ZERO,
                        unpriced_attempts: n(5)?,
                        batched_attempts: n(6)?,
                        saved_by_batching: Cost(r.get(7)?),
                    })
                },
            )
            .map_err(sqlite_err(&self.path))
            .and_then(|mut spend| {
                spend.paid = self.cost_sum(
                    "SELECT cost FROM calls WHERE cost IS NOT NULL
                     UNION ALL SELECT cost FROM attempts WHERE cost IS NOT NULL",
                )?;
                spend.estimated = self.cost_sum(
                    "SELECT cost FROM attempts WHERE uncached_in IS NULL AND cost IS NOT NULL",
                )?;
                Ok(spend)
            })
    }

    /// The sum of the costs `sql` selects, added in Rust and saturating: SQLite's
    /// `sum()` fails the whole query on an overflow, which a store holding a hostile
    /// server's costs must never do to its reports.
    fn cost_sum(&self, sql: &str) -> Result<Cost> {
        let err = sqlite_err(&self.path);
        let mut stmt = self.conn.prepare(sql).map_err(&err)?;
        let mut rows = stmt.query([]).map_err(&err)?;
        let mut total = Cost::ZERO;
        while let Some(row) = rows.next().map_err(&err)? {
            total += Cost(row.get::<_, i64>(0).map_err(&err)?);
        }
        Ok(total)
    }

    /// What each episode paid in each phase, for the episodes and phases that have
    /// calls (no request is read).
    pub fn paid_by_phase(&self) -> Result<HashMap<(i64, Phase), Cost>> {
        let err = sqlite_err(&self.path);
        let mut stmt = self
            .conn
            .prepare("SELECT episode_id, phase, sum(cost) FROM calls GROUP BY episode_id, phase")
            .map_err(&err)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get(2)?))
            })
            .map_err(&err)?;
        rows.map(|row| {
            let (episode, phase, cost) = row.map_err(&err)?;
            let phase = parse(
                &self.path,
                || format!("calls.phase of episode {episode}"),
                &phase,
            )?;
            Ok(((episode, phase), Cost(cost)))
        })
        .collect()
    }
}

/// Parse a stored text column, naming `what` when it is not a known value.
fn parse<T: FromStr<Err = String>>(path: &Path, what: impl Fn() -> String, s: &str) -> Result<T> {
    s.parse().map_err(|message| StoreError::Decode {
        path: path.to_path_buf(),
        what: what(),
        message,
    })
}

const EPISODE_COLUMNS: &str = "e.id, t.family AS \"tasks.family\", t.n_turns AS \"tasks.n_turns\", e.task_id, e.cell_key, e.cell_json,
    e.replicate, e.seed, e.k, e.forked_from, e.schedule_sha256, e.status, e.final_response,
    e.extracted, e.score, e.is_correct, e.eval_error, e.eval_details, e.reason,
    e.cost_attributed, e.cost_paid, e.updated_at, e.extraction_rule, e.no_answer";

/// The columns of one episode row before the text ones are decoded.
struct RawEpisode {
    id: i64,
    family: String,
    n_turns: u32,
    init: EpisodeInit,
    status: String,
    final_response: Option<String>,
    extracted: Option<String>,
    score: Option<f64>,
    is_correct: Option<bool>,
    eval_error: Option<String>,
    eval_details: Option<String>,
    reason: Option<String>,
    cost_attributed: i64,
    cost_paid: i64,
    updated_at: String,
    extraction_rule: Option<String>,
    no_answer: bool,
}

fn raw_episode(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawEpisode> {
    Ok(RawEpisode {
        id: r.get(0)?,
        family: r.get(1)?,
        n_turns: r.get(2)?,
        init: EpisodeInit {
            task_id: r.get(3)?,
            cell_key: r.get(4)?,
            cell_json: r.get(5)?,
            replicate: r.get(6)?,
            seed: r.get::<_, i64>(7)? as u64,
            k: r.get(8)?,
            forked_from: r.get(9)?,
            schedule_sha256: r.get(10)?,
        },
        status: r.get(11)?,
        final_response: r.get(12)?,
        extracted: r.get(13)?,
        score: r.get(14)?,
        is_correct: r.get(15)?,
        eval_error: r.get(16)?,
        eval_details: r.get(17)?,
        reason: r.get(18)?,
        cost_attributed: r.get(19)?,
        cost_paid: r.get(20)?,
        updated_at: r.get(21)?,
        extraction_rule: r.get(22)?,
        no_answer: r.get(23)?,
    })
}

impl RawEpisode {
    fn decode(self, path: &Path) -> Result<EpisodeRow> {
        let id = self.id;
        let what = |column: &str| format!("episodes.{column} of episode {id}");
        let verdict = match self.score {
            None => None,
            Some(score) => Some(Verdict {
                score,
                is_correct: self.is_correct,
                error: self.eval_error,
                details: match &self.eval_details {
                    None => serde_json::Value::Null,
                    Some(text) => serde_json::from_str(text).map_err(|e| StoreError::Decode {
                        path: path.to_path_buf(),
                        what: what("eval_details"),
                        message: e.to_string(),
                    })?,
                },
                rule: self.extraction_rule,
                no_answer: self.no_answer,
            }),
        };
        Ok(EpisodeRow {
            id,
            family: parse(path, || what("family"), &self.family)?,
            n_turns: self.n_turns,
            init: self.init,
            outcome: Outcome {
                status: parse(path, || what("status"), &self.status)?,
                final_response: self.final_response,
                extracted: self.extracted,
                verdict,
                reason: self.reason,
                cost_attributed: Cost(self.cost_attributed),
                cost_paid: Cost(self.cost_paid),
            },
            updated_at: self.updated_at,
        })
    }
}

fn episodes_where(
    conn: &Connection,
    path: &Path,
    condition: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<EpisodeRow>> {
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {EPISODE_COLUMNS} FROM episodes e JOIN tasks t USING (task_id) WHERE {condition}"
        ))
        .map_err(sqlite_err(path))?;
    let columns = column_names(&stmt);
    let err = read_err(path, "episodes", &columns, "");
    let rows = stmt
        .query_map(params, raw_episode)
        .map_err(&err)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(&err)?;
    rows.into_iter().map(|r| r.decode(path)).collect()
}

pub(crate) fn episode_by_id(conn: &Connection, path: &Path, id: i64) -> Result<EpisodeRow> {
    episodes_where(conn, path, "e.id = ?1", [id])?
        .pop()
        .ok_or_else(|| StoreError::Sqlite {
            path: path.to_path_buf(),
            source: rusqlite::Error::QueryReturnedNoRows,
        })
}

/// How a call's request is stored: whole, or as parameters plus a message list.
enum StoredRequest {
    Whole(String),
    Split { params: String, at: i64, list: i64 },
}

/// The calls of an episode in order (by turn; within a turn prefix, handoff, suffix),
/// each request rebuilt and checked against its sha256.
pub(crate) fn calls_of(conn: &Connection, path: &Path, episode_id: i64) -> Result<Vec<CallRow>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, turn, phase, model, model_served, request_json, request_params,
             request_messages_at, request_messages, request_sha256, response_text,
             raw_response, uncached_in, cache_read, cache_write_5m, cache_write_1h, output,
             reasoning, cost, latency_ms, attempts, finish_reason, created_at, unpriced,
             batch_id, cost_direct, batch_item, response_sha256, raw_response_text_at
             FROM calls WHERE episode_id = ?1
             ORDER BY turn, CASE phase WHEN 'prefix' THEN 0 WHEN 'handoff' THEN 1 ELSE 2 END, id",
        )
        .map_err(sqlite_err(path))?;
    let columns = column_names(&stmt);
    let row_name = format!("of episode {episode_id}");
    let err = read_err(path, "calls", &columns, &row_name);
    let rows = stmt
        .query_map([episode_id], |r| {
            let request = match r.get::<_, Option<String>>(5)? {
                Some(whole) => StoredRequest::Whole(whole),
                None => StoredRequest::Split {
                    params: r.get(6)?,
                    at: r.get(7)?,
                    list: r.get(8)?,
                },
            };
            let phase: String = r.get(2)?;
            let call = NewCall {
                episode_id,
                turn: r.get(1)?,
                // decoded below, where a bad value can name the call
                phase: Phase::Prefix,
                model: r.get(3)?,
                model_served: r.get(4)?,
                request_json: String::new(),
                request_sha256: r.get(9)?,
                response_text: r.get(10)?,
                raw_response: r.get(11)?,
                usage: Usage {
                    uncached_in: r.get(12)?,
                    cache_read: r.get(13)?,
                    cache_write_5m: r.get(14)?,
                    cache_write_1h: r.get(15)?,
                    output: r.get(16)?,
                    reasoning: r.get(17)?,
                },
                cost: Cost(r.get(18)?),
                unpriced: r.get(23)?,
                latency_ms: r.get(19)?,
                attempts: r.get(20)?,
                finish_reason: r.get(21)?,
                batch_id: r.get(24)?,
                cost_direct: r.get::<_, Option<i64>>(25)?.map(Cost),
                batch_item: r.get(26)?,
            };
            let row = CallRow {
                id: r.get(0)?,
                call,
                created_at: r.get(22)?,
            };
            let checksum: Option<String> = r.get(27)?;
            let raw_text_at: Option<i64> = r.get(28)?;
            Ok((row, phase, request, checksum, raw_text_at))
        })
        .map_err(&err)?;
    let mut out = Vec::new();
    let mut lists = Lists::default();
    for row in rows {
        let (mut row, phase, request, checksum, raw_text_at) = row.map_err(&err)?;
        let id = row.id;
        row.call.phase = parse(path, || format!("calls.phase of call {id}"), &phase)?;
        let actual = sha256_hex(&row.call.response_text);
        if checksum.as_deref() != Some(actual.as_str()) {
            return Err(StoreError::ReplyChecksum {
                path: path.to_path_buf(),
                episode_id,
                turn: row.call.turn,
                phase: row.call.phase.as_str(),
                stored: checksum.unwrap_or_else(|| "none".into()),
                actual,
            });
        }
        if let (Some(at), Some(cut)) = (raw_text_at, &row.call.raw_response) {
            row.call.raw_response = Some(
                usize::try_from(at)
                    .ok()
                    .and_then(|at| uncut_text(cut, at, &row.call.response_text))
                    .ok_or_else(|| StoreError::Decode {
                        path: path.to_path_buf(),
                        what: format!("calls.raw_response_text_at of call {id}"),
                        message: format!("{at} is not a position in its raw_response"),
                    })?,
            );
        }
        row.call.request_json = rebuild(conn, path, id, request, &mut lists)?;
        let actual = sha256_hex(&row.call.request_json);
        if actual != row.call.request_sha256 {
            return Err(StoreError::Decode {
                path: path.to_path_buf(),
                what: format!("the request of call {id}"),
                message: format!(
                    "its sha256 is {actual}, but {} was stored",
                    row.call.request_sha256
                ),
            });
        }
        out.push(row);
    }
    Ok(out)
}

fn rebuild(
    conn: &Connection,
    path: &Path,
    call: i64,
    request: StoredRequest,
    lists: &mut Lists,
) -> Result<String> {
    match request {
        StoredRequest::Whole(text) => Ok(text),
        StoredRequest::Split { params, at, list } => {
            let messages = lists.messages(conn, list).map_err(sqlite_err(path))?;
            usize::try_from(at)
                .ok()
                .and_then(|at| join(&params, at, &messages))
                .ok_or_else(|| StoreError::Decode {
                    path: path.to_path_buf(),
                    what: format!("calls.request_messages_at of call {call}"),
                    message: format!("{at} is not a position in its request_params"),
                })
        }
    }
}

/// What one episode's own calls carried ([`Reader::call_figures`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallFigures {
    /// Input tokens over the calls, cached or not.
    pub input_tokens: u64,
    /// Of them, read from a prompt cache.
    pub cache_read_tokens: u64,
    /// Replies with no text.
    pub empty_replies: u64,
    /// Replies cut at the output cap.
    pub cut_replies: u64,
    /// Answer-extraction calls (phase `extraction`), which the figures above leave out.
    pub extraction_calls: u64,
}
