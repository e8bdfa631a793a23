//! Stores of an experiment run in parts: which part a store holds, and merging the
//! parts' stores into one.
//!
//! A part's store records `I/N` in `meta` (key `part`). [`merge_into`] copies every
//! row of each part into a new store: ids of episodes, calls, attempts and agent steps
//! are shifted past the rows already copied (every reference shifted with them), each
//! message is stored once (by its sha256, as in one store) and the message-list prefix
//! tree is rebuilt node by node, so two parts' identical conversation prefixes are one
//! node. Rows keyed by text (tasks, inputs, handoff texts, thresholds, batches) are
//! copied once. The merged store records `merged` (the number of parts) in `meta`.
//!
//! What may be merged (the same experiment, price card, inputs, part count and
//! thresholds; no task in two parts; no part locked or with a spool) is the runner's
//! check (`baton_runner::merge`); here rows are only copied.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, params};

use crate::connect::{open_ro, open_rw, sqlite_err};
use crate::error::{Result, StoreError};

/// The `meta` key of the part a store holds (`I/N`).
const PART_KEY: &str = "part";
/// The `meta` key of a merged store: how many parts it was merged from.
const MERGED_KEY: &str = "merged";

/// The part (`I/N`) the store at `path` holds, if it holds one.
pub fn stored_part(path: &Path) -> Result<Option<String>> {
    meta_value(&open_ro(path)?, path, PART_KEY)
}

/// How many parts the store at `path` was merged from, if it is a merge.
pub fn merged_parts(path: &Path) -> Result<Option<String>> {
    meta_value(&open_ro(path)?, path, MERGED_KEY)
}

fn meta_value(conn: &Connection, path: &Path, key: &str) -> Result<Option<String>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| {
        r.get::<_, String>(0)
    })
    .optional()
    .map_err(sqlite_err(path))
}

/// Record that the store at `path` (created when missing) holds part `label` (`I/N`);
/// call it before [`crate::Store::open`]. Returns the part it held before, if any.
pub fn record_part(path: &Path, label: &str) -> Result<Option<String>> {
    let conn = open_rw(path)?;
    let before = meta_value(&conn, path, PART_KEY)?;
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
        params![PART_KEY, label],
    )
    .map_err(sqlite_err(path))?;
    Ok(before)
}

impl crate::Reader {
    /// The id of every stored task, either study's, in order.
    pub fn task_ids(&self) -> Result<Vec<String>> {
        let err = sqlite_err(&self.path);
        let mut stmt = self
            .conn
            .prepare("SELECT task_id FROM tasks ORDER BY task_id")
            .map_err(&err)?;
        let ids = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(&err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(&err)?;
        Ok(ids)
    }
}

/// Whether the store at `path` has paid replies in its spool, kept from a failed write
/// and not yet imported (the next open of the store imports them).
pub fn spool_pending(path: &Path) -> bool {
    crate::spool::pending(path)
}

/// Id columns that are shifted by the table's offset, and columns that reference
/// another table's ids, for each table copied.
struct Shift {
    table: &'static str,
    /// `(column, how)`: the new value of the column, as SQL over the part's row `t`.
    columns: &'static [(&'static str, Map)],
}

#[derive(Clone, Copy)]
enum Map {
    /// Shifted by the offset of the named table's ids.
    Offset(&'static str),
    /// A message id, through the part's message map.
    Message,
    /// A message-list node, through the part's node map (0, the empty list, stays 0).
    List,
    /// Left for SQLite to number.
    Renumber,
}

/// Tables whose rows are copied with every id mapped, in an order that copies a row
/// after those it references.
const SHIFTED: &[Shift] = &[
    Shift {
        table: "episodes",
        columns: &[
            ("id", Map::Offset("episodes")),
            ("forked_from", Map::Offset("episodes")),
        ],
    },
    Shift {
        table: "calls",
        columns: &[
            ("id", Map::Offset("calls")),
            ("episode_id", Map::Offset("episodes")),
            ("request_messages", Map::List),
        ],
    },
    Shift {
        table: "attempts",
        columns: &[
            ("id", Map::Offset("attempts")),
            ("episode_id", Map::Offset("episodes")),
        ],
    },
    Shift {
        table: "agent_calls",
        columns: &[
            ("episode_id", Map::Offset("episodes")),
            ("call_id", Map::Offset("calls")),
            ("context", Map::List),
        ],
    },
    Shift {
        table: "agent_steps",
        columns: &[
            ("id", Map::Offset("agent_steps")),
            ("episode_id", Map::Offset("episodes")),
            ("observation", Map::Message),
            ("context", Map::List),
        ],
    },
    Shift {
        table: "agent_outcomes",
        columns: &[("episode_id", Map::Offset("episodes"))],
    },
    Shift {
        table: "agent_switches",
        columns: &[
            ("episode_id", Map::Offset("episodes")),
            ("prefix_context", Map::List),
            ("context", Map::List),
        ],
    },
    Shift {
        table: "agent_handover_lints",
        columns: &[("episode_id", Map::Offset("episodes"))],
    },
    Shift {
        table: "input_changes",
        columns: &[("id", Map::Renumber)],
    },
];

/// Tables whose rows are keyed by text and copied once, before the rows that
/// reference them (the first part's row wins; the runner checks beforehand that the
/// parts agree where that matters).
const ONCE: &[&str] = &[
    "tasks",
    "agent_tasks",
    "inputs",
    "skipped_tasks",
    "agent_thresholds",
    "agent_texts",
    "batches",
    "batch_submissions",
    "spool_imports",
];

/// What [`merge_into`] copied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeCounts {
    /// Episodes, retired ones included.
    pub episodes: u64,
    /// Calls.
    pub calls: u64,
}

/// Build the store `out` (which must not exist) from the stores `parts`, in order: the
/// experiment row of the first, every row of each. See the module's documentation.
pub fn merge_into(out: &Path, parts: &[&Path]) -> Result<MergeCounts> {
    if out.exists() {
        return Err(StoreError::NotAStore {
            path: out.to_path_buf(),
            why: "a merge writes a new store, and this file exists".into(),
        });
    }
    let conn = open_rw(out)?;
    let err = sqlite_err(out);
    // SQLite attaches outside a transaction: one transaction per part, in a new file
    // the runner renames into place once every part is in
    for (n, part) in parts.iter().enumerate() {
        // the part at this build's schema (an older one is migrated on open)
        drop(open_ro(part)?);
        let name = part.to_str().ok_or_else(|| StoreError::NotAStore {
            path: part.to_path_buf(),
            why: "its path is not UTF-8".into(),
        })?;
        conn.execute("ATTACH DATABASE ?1 AS p", [name])
            .map_err(&err)?;
        let copied = (|| {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            copy_part(&conn, n == 0)?;
            conn.execute_batch("COMMIT")
        })()
        .map_err(sqlite_err(part));
        if copied.is_err() {
            let _ = conn.execute_batch("ROLLBACK");
        }
        conn.execute("DETACH DATABASE p", []).map_err(&err)?;
        copied?;
    }
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
        params![MERGED_KEY, parts.len().to_string()],
    )
    .map_err(&err)?;
    let counts = MergeCounts {
        episodes: conn
            .query_row("SELECT count(*) FROM episodes", [], |r| r.get(0))
            .map_err(&err)?,
        calls: conn
            .query_row("SELECT count(*) FROM calls", [], |r| r.get(0))
            .map_err(&err)?,
    };
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
        .map_err(&err)?;
    Ok(counts)
}

fn columns(conn: &Connection, schema: &str, table: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA {schema}.table_info({table})"))?;
    let names = stmt
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(names)
}

fn copy_part(conn: &Connection, first: bool) -> rusqlite::Result<()> {
    if first {
        let cols = columns(conn, "main", "experiment")?.join(", ");
        conn.execute(
            &format!("INSERT INTO main.experiment ({cols}) SELECT {cols} FROM p.experiment"),
            [],
        )?;
    }
    // messages once each, by sha256, and the part's ids mapped to the merged ones
    conn.execute_batch(
        "DROP TABLE IF EXISTS temp.message_map;
         DROP TABLE IF EXISTS temp.list_map;
         CREATE TEMP TABLE message_map (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
         CREATE TEMP TABLE list_map (old INTEGER PRIMARY KEY, new INTEGER NOT NULL);
         INSERT OR IGNORE INTO main.messages (sha256, json)
             SELECT sha256, json FROM p.messages ORDER BY id;
         INSERT INTO temp.message_map (old, new)
             SELECT pm.id, m.id FROM p.messages pm JOIN main.messages m ON m.sha256 = pm.sha256;",
    )?;
    copy_lists(conn)?;
    let mut offsets: HashMap<&str, i64> = HashMap::new();
    for table in ["episodes", "calls", "attempts", "agent_steps"] {
        let max: i64 = conn.query_row(
            &format!("SELECT coalesce(max(id), 0) FROM main.{table}"),
            [],
            |r| r.get(0),
        )?;
        offsets.insert(table, max);
    }
    for table in ONCE {
        let cols = columns(conn, "main", table)?.join(", ");
        conn.execute(
            &format!("INSERT OR IGNORE INTO main.{table} ({cols}) SELECT {cols} FROM p.{table}"),
            [],
        )?;
    }
    for shift in SHIFTED {
        let cols = columns(conn, "main", shift.table)?;
        let values: Vec<String> = cols
            .iter()
            .map(|c| match shift.columns.iter().find(|(name, _)| name == c) {
                None => format!("t.{c}"),
                Some((_, Map::Offset(of))) => format!("t.{c} + {}", offsets[of]),
                Some((_, Map::Message)) => format!(
                    "(SELECT new FROM temp.message_map WHERE old = t.{c})"
                ),
                Some((_, Map::List)) => format!(
                    "CASE WHEN t.{c} = 0 THEN 0 ELSE (SELECT new FROM temp.list_map WHERE old = t.{c}) END"
                ),
                Some((_, Map::Renumber)) => "NULL".to_string(),
            })
            .collect();
        conn.execute(
            &format!(
                "INSERT INTO main.{table} ({cols}) SELECT {values} FROM p.{table} t ORDER BY 1",
                table = shift.table,
                cols = cols.join(", "),
                values = values.join(", "),
            ),
            [],
        )?;
    }
    Ok(())
}

/// The part's message-list nodes, parents first, each as the merged tree's node with
/// the same parent and message (made when missing).
fn copy_lists(conn: &Connection) -> rusqlite::Result<()> {
    let messages: HashMap<i64, i64> = conn
        .prepare("SELECT old, new FROM temp.message_map")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let nodes: Vec<(i64, i64, i64)> = conn
        .prepare("SELECT id, parent, message FROM p.message_lists ORDER BY id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let mut map: HashMap<i64, i64> = HashMap::with_capacity(nodes.len());
    let mut insert =
        conn.prepare("INSERT OR IGNORE INTO main.message_lists (parent, message) VALUES (?1, ?2)")?;
    let mut find =
        conn.prepare("SELECT id FROM main.message_lists WHERE parent = ?1 AND message = ?2")?;
    let mut record = conn.prepare("INSERT INTO temp.list_map (old, new) VALUES (?1, ?2)")?;
    for (id, parent, message) in nodes {
        let parent = if parent == 0 {
            0
        } else {
            *map.get(&parent)
                .ok_or(rusqlite::Error::QueryReturnedNoRows)?
        };
        let message = *messages
            .get(&message)
            .ok_or(rusqlite::Error::QueryReturnedNoRows)?;
        insert.execute(params![parent, message])?;
        let new: i64 = find.query_row(params![parent, message], |r| r.get(0))?;
        map.insert(id, new);
        record.execute(params![id, new])?;
    }
    Ok(())
}
