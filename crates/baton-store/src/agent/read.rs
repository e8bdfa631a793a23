//! Reading agent episodes back: the progress a resume continues from, and the report's
//! rows.

use std::path::Path;
use std::str::FromStr;

use baton_types::agent::{AgentExit, AgentSwitch, Difficulty};
use baton_types::{Cost, EpisodeStatus, Phase, Verdict};
use rusqlite::{Connection, params};

use crate::connect::{Cached, column_names, read_err, rows_of, sqlite_err};
use crate::error::{Result, StoreError};
use crate::reader::{Reader, calls_of};
use crate::request::list_messages;
use crate::rows::{CallRow, Outcome};

use super::rows::{
    AgentAttempt, AgentCallRow, AgentCell, AgentEnd, AgentEpisodeRow, AgentProgress, AgentStepRow,
    AgentSwitchRow, AgentTaskMeta, HandoverLintRow, NewAgentStep, ThresholdRow,
};

/// Everything stored of episode `id`.
pub(super) fn progress(
    conn: &Connection,
    path: &Path,
    id: i64,
    status: &str,
) -> Result<AgentProgress> {
    let of = format!("of episode {id}");
    let status = parse_status(path, id, status)?;
    let mut calls = Vec::new();
    let handoff_call;
    {
        let rows: Vec<(i64, String, Option<String>, i64)> = rows_of(
            conn,
            path,
            ("agent_calls", &of),
            "SELECT call_id, actions_json, format_error, context FROM agent_calls
             WHERE episode_id = ?1 ORDER BY call_index",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
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
    let steps = rows_of(
        conn,
        path,
        ("agent_steps", &of),
        "SELECT s.call_index, s.action_index, s.command, s.tool_call_id, s.status_json,
         s.return_code, s.duration_ms, s.output_bytes, m.json AS \"messages.json\",
         s.submission, s.snapshot, s.context, s.created_at, s.snapshot_bytes
         FROM agent_steps s LEFT JOIN messages m ON m.id = s.observation
         WHERE s.episode_id = ?1 ORDER BY s.call_index, s.action_index",
        [id],
        |r| {
            Ok(AgentStepRow {
                step: NewAgentStep {
                    episode_id: id,
                    call_index: r.get(0)?,
                    action_index: r.get(1)?,
                    command: r.get(2)?,
                    tool_call_id: r.get(3)?,
                    status_json: r.get(4)?,
                    return_code: r.get(5)?,
                    duration_ms: r.get(6)?,
                    output_bytes: r.get(7)?,
                    observation: r.get(8)?,
                    submission: r.get(9)?,
                    snapshot: r.get(10)?,
                    snapshot_bytes: r
                        .get::<_, Option<i64>>(13)?
                        .map(|b| u64::try_from(b).unwrap_or(0)),
                },
                context: r.get(11)?,
                created_at: r.get(12)?,
            })
        },
    )?;
    let unusable: Vec<(u32, _, String)> = rows_of(
        conn,
        path,
        ("attempts", &of),
        "SELECT turn, cost, unpriced, phase FROM attempts WHERE episode_id = ?1 ORDER BY id",
        [id],
        |r| {
            let cost: Option<i64> = r.get(1)?;
            let unpriced: Option<String> = r.get(2)?;
            let phase: String = r.get(3)?;
            Ok((
                r.get(0)?,
                cost.map(Cost).ok_or_else(|| unpriced.unwrap_or_default()),
                phase,
            ))
        },
    )?;
    let unusable = unusable
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
    let end = rows_of(
        conn,
        path,
        ("agent_outcomes", &of),
        "SELECT exit, calls, error FROM agent_outcomes WHERE episode_id = ?1",
        [id],
        |r| {
            Ok(AgentEnd {
                exit: named(r, 0)?,
                calls: r.get(1)?,
                error: r.get(2)?,
            })
        },
    )?
    .pop();
    Ok(AgentProgress {
        episode_id: id,
        status,
        calls,
        steps,
        unusable,
        end,
        switch: switch_of(conn, path, id)?,
        handoff_call,
        handover_lint: handover_lints(conn, path, Some(id))?.pop(),
    })
}

/// The stored `handover` lints: episode `id`'s, or every one (by episode).
fn handover_lints(conn: &Connection, path: &Path, id: Option<i64>) -> Result<Vec<HandoverLintRow>> {
    let of = id.map_or(String::new(), |id| format!("of episode {id}"));
    let rows: Vec<(HandoverLintRow, String)> = rows_of(
        conn,
        path,
        ("agent_handover_lints", &of),
        "SELECT episode_id, commit_sha, snapshot, rubric, score, valid, verdict, claims_json
         FROM agent_handover_lints WHERE ?1 IS NULL OR episode_id = ?1 ORDER BY episode_id",
        [id],
        |r| {
            Ok((
                HandoverLintRow {
                    episode_id: r.get(0)?,
                    commit_sha: r.get(1)?,
                    snapshot: r.get(2)?,
                    rubric: r.get(3)?,
                    score: r.get(4)?,
                    valid: r.get(5)?,
                    verdict: r.get(6)?,
                    claims: Vec::new(),
                },
                r.get(7)?,
            ))
        },
    )?;
    rows.into_iter()
        .map(|(mut row, json)| {
            row.claims = serde_json::from_str(&json).map_err(|e| StoreError::Decode {
                path: path.to_path_buf(),
                what: format!("agent_handover_lints of episode {}", row.episode_id),
                message: format!("claims_json: {e}"),
            })?;
            Ok(row)
        })
        .collect()
}

/// The switch of episode `id`, once stored.
fn switch_of(conn: &Connection, path: &Path, id: i64) -> Result<Option<AgentSwitchRow>> {
    let of = format!("of episode {id}");
    Ok(rows_of(
        conn,
        path,
        ("agent_switches", &of),
        "SELECT s, bucket, fired, prefix_context, context, snapshot, texts_sha256
         FROM agent_switches WHERE episode_id = ?1",
        [id],
        |r| {
            Ok(AgentSwitchRow {
                switch: AgentSwitch {
                    s: r.get(0)?,
                    bucket: named(r, 1)?,
                    fired: r.get(2)?,
                },
                prefix_context: r.get(3)?,
                context: r.get(4)?,
                snapshot: r.get(5)?,
                texts_sha256: r.get(6)?,
            })
        },
    )?
    .pop())
}

/// The stored switch calls, in (pair, direction, bucket, p) order.
pub(super) fn read_thresholds(conn: &Connection, path: &Path) -> Result<Vec<ThresholdRow>> {
    rows_of(
        conn,
        path,
        ("agent_thresholds", ""),
        "SELECT pair, direction, prefix_model, bucket, p, s, n_anchors FROM agent_thresholds
         ORDER BY pair, direction, bucket, p",
        [],
        |r| {
            Ok(ThresholdRow {
                pair: r.get(0)?,
                direction: named(r, 1)?,
                prefix_model: r.get(2)?,
                bucket: named(r, 3)?,
                p: r.get(4)?,
                s: r.get(5)?,
                n_anchors: r.get(6)?,
            })
        },
    )
}

/// Column `i` of `r`, a name that parses as `T` (an exit status, a difficulty): a name
/// no version of baton writes is a conversion failure, which [`read_err`] names as
/// `table.column`.
fn named<T: FromStr<Err = String>>(r: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<T> {
    let text: String = r.get(i)?;
    text.parse().map_err(|e: String| {
        rusqlite::Error::FromSqlConversionFailure(i, rusqlite::types::Type::Text, e.into())
    })
}

/// [`named`], of a column that may be NULL (an episode that has not ended).
fn named_opt<T: FromStr<Err = String>>(
    r: &rusqlite::Row<'_>,
    i: usize,
) -> rusqlite::Result<Option<T>> {
    match r.get::<_, Option<String>>(i)? {
        None => Ok(None),
        Some(_) => named(r, i).map(Some),
    }
}

fn parse_status(path: &Path, id: i64, s: &str) -> Result<EpisodeStatus> {
    s.parse().map_err(|message| StoreError::Decode {
        path: path.to_path_buf(),
        what: format!("episodes.status of episode {id}"),
        message,
    })
}

impl Reader {
    /// Whether the store holds an agent experiment (its stored kind).
    pub fn is_agent(&self) -> Result<bool> {
        self.conn
            .row(
                "SELECT EXISTS (SELECT 1 FROM experiment WHERE kind = 'agent')",
                [],
                |r| r.get(0),
            )
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
                difficulty: named(r, 2)?,
                format: r.get(3)?,
                task_sha256: r.get(4)?,
            })
        })
        .map_err(&err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(&err)
    }

    /// Every current agent episode (not retired: see [`crate::identity`]) with its
    /// outcome, counts and spend, by id.
    pub fn agent_episodes(&self) -> Result<Vec<AgentEpisodeRow>> {
        self.agent_episode_rows(None)
    }

    /// Agent episode `id`, when stored.
    pub fn agent_episode(&self, id: i64) -> Result<Option<AgentEpisodeRow>> {
        Ok(self.agent_episode_rows(Some(id))?.pop())
    }

    fn agent_episode_rows(&self, only: Option<i64>) -> Result<Vec<AgentEpisodeRow>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT e.id, e.task_id, a.difficulty AS \"agent_tasks.difficulty\", e.cell_json,
                 e.replicate, e.status,
                 e.final_response, e.extracted, e.score, e.is_correct, e.eval_error,
                 e.eval_details, e.reason, e.cost_attributed, e.cost_paid,
                 o.exit AS \"agent_outcomes.exit\", o.calls AS \"agent_outcomes.calls\",
                 o.error AS \"agent_outcomes.error\",
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
                 -- one episode by id whatever it is; the list holds current ones
                 AND (?1 IS NOT NULL OR e.retired IS NULL)
                 ORDER BY e.id",
            )
            .map_err(sqlite_err(&self.path))?;
        let columns = column_names(&stmt);
        let err = read_err(&self.path, "episodes", &columns, "");
        type Raw = (
            (i64, String, Difficulty, String, u32, String),
            (Option<String>, Option<String>, Option<f64>, Option<bool>),
            (Option<String>, Option<String>, Option<String>, i64, i64),
            (
                Option<AgentExit>,
                Option<u32>,
                Option<String>,
                u32,
                u32,
                i64,
            ),
            (Option<u32>, Option<i64>),
        );
        let rows: Vec<Raw> = stmt
            .query_map([only], |r| {
                Ok((
                    (
                        r.get(0)?,
                        r.get(1)?,
                        named(r, 2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ),
                    (r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?),
                    (r.get(10)?, r.get(11)?, r.get(12)?, r.get(13)?, r.get(14)?),
                    (
                        named_opt(r, 15)?,
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
                let switch = switch_of(&self.conn, &self.path, id)?;
                let forked_prefix = match (forked_from, k) {
                    // unfired: the anchor ended before call s, and its whole run is the
                    // episode's (the attempts of a call s it never made included)
                    (Some(anchor), Some(_))
                        if switch.as_ref().is_some_and(|sw| !sw.switch.fired) =>
                    {
                        self.episode_paid(anchor)?
                    }
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
                    switch,
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

    /// Every stored `handover` document lint, by episode.
    pub fn agent_handover_lints(&self) -> Result<Vec<HandoverLintRow>> {
        handover_lints(&self.conn, &self.path, None)
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
