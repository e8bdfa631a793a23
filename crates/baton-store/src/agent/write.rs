//! How the writer thread stores agent commands, each in one transaction.

use rusqlite::{OptionalExtension, params};

use crate::connect::{Cached, sqlite_err};
use crate::error::{Result, StoreError};
use crate::request::{EMPTY_LIST, intern_after, list_messages};
use crate::rows::Outcome;
use crate::writer::{Db, NOW, insert_call, update_outcome};

use super::command::{AgentAnswer, AgentCommand};
use super::read::{progress, read_thresholds};
use super::rows::{
    AGENT_FAMILY, AgentEnd, AgentEpisodeInit, AgentProgress, AgentTaskMeta, AgentVerdict,
    HandoverLintRow, NewAgentCall, NewAgentStep, NewAgentSwitch, ThresholdRow,
};

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
            AgentCommand::HandoverLint(l, _) => AgentAnswer::Unit(self.handover_lint(l)),
            AgentCommand::Rerun(ids, models, _) => AgentAnswer::Unit(self.rerun(ids, models)),
            AgentCommand::Revive(ids, _) => AgentAnswer::Unit(self.revive(ids)),
            AgentCommand::Recompute(rows, stale, _) => {
                AgentAnswer::Thresholds(self.recompute(rows, stale))
            }
        }
    }

    fn recompute(&mut self, rows: &[ThresholdRow], stale: &[i64]) -> Result<Vec<ThresholdRow>> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        retire_changed(&tx, stale).map_err(&err)?;
        put_thresholds(&tx, rows, true).map_err(&err)?;
        let out = read_thresholds(&tx, &self.path)?;
        tx.commit().map_err(&err)?;
        Ok(out)
    }

    fn revive(&mut self, ids: &[i64]) -> Result<()> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        for id in ids {
            tx.exec(
                "UPDATE episodes SET retired = NULL WHERE id = ?1 AND retired = ?2",
                params![id, crate::RETIRED_REMOVED],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)
    }

    fn rerun(&mut self, ids: &[i64], prefix_models: &[String]) -> Result<()> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        retire_changed(&tx, ids).map_err(&err)?;
        for m in prefix_models {
            tx.exec(
                "DELETE FROM agent_thresholds WHERE prefix_model = ?1",
                params![m],
            )
            .map_err(&err)?;
        }
        tx.commit().map_err(&err)
    }

    fn handover_lint(&mut self, l: &HandoverLintRow) -> Result<()> {
        let err = sqlite_err(&self.path);
        let claims = serde_json::to_string(&l.claims).expect("claims always serialize");
        self.conn
            .exec(
                &format!(
                    "INSERT INTO agent_handover_lints (episode_id, commit_sha, snapshot, rubric,
                     score, valid, verdict, claims_json, created_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, {NOW})"
                ),
                params![
                    l.episode_id,
                    l.commit_sha,
                    l.snapshot,
                    l.rubric,
                    l.score,
                    l.valid,
                    l.verdict,
                    claims
                ],
            )
            .map_err(&err)?;
        Ok(())
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
        // a stored switch call is never replaced; one of a (pair, direction, bucket, p)
        // not stored yet (a bucket the experiment grew into) is added
        put_thresholds(&tx, rows, false).map_err(&err)?;
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
                Some(intern_after(&tx, &mut self.edges, EMPTY_LIST, &m).map_err(&err)?)
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
                sw.switch.s,
                sw.switch.bucket.name(),
                sw.switch.fired,
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
            params![
                t.task_id,
                t.origin,
                t.difficulty.name(),
                t.format,
                t.task_sha256
            ],
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

    pub(crate) fn agent_call(&mut self, c: &NewAgentCall, context: i64) -> Result<(i64, i64)> {
        let err = sqlite_err(&self.path);
        let tx = self.conn.savepoint().map_err(&err)?;
        let id = insert_call(&tx, &self.path, &mut self.edges, &c.call)?;
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
        let node =
            intern_after(&tx, &mut self.edges, before.unwrap_or(context), &added).map_err(&err)?;
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
                let node = intern_after(&tx, &mut self.edges, context, &[o]).map_err(&err)?;
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
                 observation, submission, snapshot, context, snapshot_bytes, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, {NOW})"
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
                node,
                s.snapshot_bytes
                    .map(|b| i64::try_from(b).unwrap_or(i64::MAX))
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
            params![id, e.exit.name(), e.calls, e.error],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)
    }
}

/// Write switch calls: one of a (pair, direction, bucket, p) already stored is replaced
/// when `replace` (the switch calls recomputed from the current anchors), else kept (a
/// stored switch call is never moved; only a bucket the experiment grew into is added).
fn put_thresholds(
    conn: &rusqlite::Connection,
    rows: &[ThresholdRow],
    replace: bool,
) -> rusqlite::Result<()> {
    let sql = if replace {
        "INSERT OR REPLACE INTO agent_thresholds (pair, direction, prefix_model, bucket, p, s,
         n_anchors) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    } else {
        "INSERT OR IGNORE INTO agent_thresholds (pair, direction, prefix_model, bucket, p, s,
         n_anchors) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
    };
    for t in rows {
        conn.exec(
            sql,
            params![
                t.pair,
                t.direction.as_str(),
                t.prefix_model,
                t.bucket.name(),
                t.p,
                t.s,
                t.n_anchors
            ],
        )?;
    }
    Ok(())
}

/// Retire the current episodes `ids` as changed: kept in the store and out of the report,
/// their cell key freed (suffixed with the id) for the episodes that run in their place.
fn retire_changed(conn: &rusqlite::Connection, ids: &[i64]) -> rusqlite::Result<()> {
    for id in ids {
        conn.exec(
            "UPDATE episodes SET retired = ?2, cell_key = cell_key || ' #' || id
             WHERE id = ?1 AND retired IS NULL",
            params![id, crate::RETIRED_CHANGED],
        )?;
    }
    Ok(())
}
