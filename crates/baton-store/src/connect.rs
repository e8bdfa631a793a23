//! Opening a store file: pragmas, the schema version check and migrations.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::error::{Result, StoreError};
use crate::schema::{MIGRATIONS, SCHEMA_VERSION};

/// A closure that wraps a SQLite error with the file it happened in.
pub(crate) fn sqlite_err(path: &Path) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |source| StoreError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

/// A closure that wraps an error of reading rows of `table` through a statement whose
/// result columns are `columns` ([`column_names`]): a stored value that does not decode
/// (a wrong type, a number out of range) is [`StoreError::Decode`] naming
/// `table.column` and `row` (`of episode 3`); any other error is SQLite's. A result
/// column named `table.column` (an alias, for a column of a joined table) names
/// itself.
pub(crate) fn read_err<'a>(
    path: &'a Path,
    table: &'a str,
    columns: &'a [String],
    row: &'a str,
) -> impl Fn(rusqlite::Error) -> StoreError + 'a {
    move |source| {
        let (i, message) = match &source {
            rusqlite::Error::FromSqlConversionFailure(i, ty, e) => {
                (*i, format!("a stored {ty} value does not decode: {e}"))
            }
            rusqlite::Error::InvalidColumnType(i, _, ty) => (
                *i,
                format!("a stored {ty} value is not of the column's type"),
            ),
            rusqlite::Error::IntegralValueOutOfRange(i, v) => {
                (*i, format!("the stored value {v} is out of range"))
            }
            _ => {
                return StoreError::Sqlite {
                    path: path.to_path_buf(),
                    source,
                };
            }
        };
        let column = columns
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("column {i}"));
        let what = if column.contains('.') {
            column
        } else {
            format!("{table}.{column}")
        };
        StoreError::Decode {
            path: path.to_path_buf(),
            what: if row.is_empty() {
                what
            } else {
                format!("{what} {row}")
            },
            message,
        }
    }
}

/// The rows of `sql` with `params`, each made by `f`, reading `table` (see [`read_err`]
/// for how a value that does not decode is named, with `row`).
pub(crate) fn rows_of<T, P, F>(
    conn: &Connection,
    path: &Path,
    (table, row): (&str, &str),
    sql: &str,
    params: P,
    f: F,
) -> Result<Vec<T>>
where
    P: rusqlite::Params,
    F: FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
{
    let mut stmt = conn.prepare_cached(sql).map_err(sqlite_err(path))?;
    let columns = column_names(&stmt);
    let err = read_err(path, table, &columns, row);
    stmt.query_map(params, f)
        .map_err(&err)?
        .collect::<rusqlite::Result<Vec<T>>>()
        .map_err(&err)
}

/// The result column names of `stmt`, for [`read_err`].
pub(crate) fn column_names(stmt: &rusqlite::Statement<'_>) -> Vec<String> {
    stmt.column_names().into_iter().map(String::from).collect()
}

/// Open for writing, in WAL mode (a rollback journal on a network file system), and migrate it to [`SCHEMA_VERSION`]. A missing file
/// (and its folder) is created whole: migrated under a temporary name, then renamed into
/// place, so a store file that exists was always a baton store. An existing file is
/// inspected read-only first: one that is not a baton store, or is newer, is refused
/// without a byte of it changed.
pub(crate) fn open_rw(path: &Path) -> Result<Connection> {
    let err = sqlite_err(path);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| io_err(path, &format!("cannot create {}", dir.display()), e))?;
    }
    match std::fs::metadata(path) {
        Ok(_) => {
            let version = inspect(path)?;
            if version > SCHEMA_VERSION {
                return Err(too_new(path, version));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => create(path)?,
        Err(e) => return Err(io_err(path, "cannot read", e)),
    }
    // no CREATE flag: a file removed since it was checked is an error, not a fresh store
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(&err)?;
    configure(&conn, path)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    migrate(&mut conn, path)?;
    Ok(conn)
}

/// The page size of a new store, in bytes (see [`create`]).
const PAGE_SIZE: i64 = 8192;

/// The pragmas of a writing connection.
fn configure(conn: &Connection, path: &Path) -> Result<()> {
    let err = sqlite_err(path);
    // WAL, or a rollback journal on a network file system (`crate::filesystem`)
    conn.pragma_update(None, "journal_mode", crate::filesystem::journal_mode(path))
        .map_err(&err)?;
    // FULL: every commit is synced to disk before the writer answers, so not even a
    // power cut loses a call that was reported stored (NORMAL in WAL mode could lose
    // the last commits). One fsync per call; `baton bench` measures what it costs.
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(&err)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(&err)?;
    // MEMORY: the statement journal of each savepoint (the writer runs every command
    // of a group in one, `crate::writer`) is kept in memory. By default SQLite spills
    // one past 64 KB to a new temporary file, and a group's savepoints wrote about four
    // pages per call there (4 KB writes to an unlinked file, for nothing on disk).
    conn.pragma_update(None, "temp_store", "MEMORY")
        .map_err(&err)?;
    conn.busy_timeout(Duration::from_secs(30)).map_err(&err)?;
    Ok(())
}

/// Create a new store at `path`: migrate it under `<path>.new`, close it (which folds
/// its WAL into the file), sync it and rename it into place.
fn create(path: &Path) -> Result<()> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal = PathBuf::from(wal);
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        // SQLite would apply that log to the new file: the missing store's last writes
        return Err(StoreError::NotAStore {
            path: path.to_path_buf(),
            why: format!(
                "the file is missing but its write-ahead log {} remains; restore the file or move the log away",
                wal.display()
            ),
        });
    }
    let mut name = path.as_os_str().to_owned();
    name.push(".new");
    let tmp = PathBuf::from(name);
    // a leftover of a creation that was interrupted: never a store anyone used
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut p = tmp.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
    {
        // a rollback journal, not a WAL: each commit is in the file itself when it
        // returns, so a disk that fills during creation fails a commit here instead of
        // leaving the file's last pages in a log that closing could not fold back (the
        // renamed file would be malformed for good)
        let mut conn = Connection::open(&tmp).map_err(sqlite_err(&tmp))?;
        let err = sqlite_err(&tmp);
        conn.pragma_update(None, "journal_mode", "DELETE")
            .map_err(&err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(&err)?;
        // 8 KB pages (SQLite's default is 4 KB): a chat call's row (its reply and raw
        // body, about 1.5 KB) fits two to a 4 KB page with a quarter of it empty, and
        // five to an 8 KB one; the store of bench harness shrinks by a tenth, at the same
        // CPU per call. Set before the first table; stores made with 4 KB pages keep them.
        conn.pragma_update(None, "page_size", PAGE_SIZE)
            .map_err(&err)?;
        migrate(&mut conn, &tmp)?;
        let check: String = conn
            .query_row("PRAGMA quick_check", [], |r| r.get(0))
            .map_err(&err)?;
        if check != "ok" {
            return Err(StoreError::Decode {
                path: tmp.clone(),
                what: "the new store".into(),
                message: format!("it failed its check after creation: {check}"),
            });
        }
        conn.close().map_err(|(_, e)| sqlite_err(&tmp)(e))?;
    }
    for suffix in ["-wal", "-journal"] {
        let mut p = tmp.as_os_str().to_owned();
        p.push(suffix);
        if std::fs::metadata(PathBuf::from(&p)).is_ok_and(|m| m.len() > 0) {
            return Err(io_err(
                path,
                "cannot create",
                std::io::Error::other(format!(
                    "{} remains after creation: the disk may be full",
                    PathBuf::from(p).display()
                )),
            ));
        }
    }
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| io_err(&tmp, "cannot sync", e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_err(path, "cannot create", e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        // the rename is durable once the folder is synced (best effort: not every
        // platform lets a folder be opened)
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
}

/// The schema version of the existing file `path`, read without changing it; a file
/// that is not a baton store is [`StoreError::NotAStore`].
fn inspect(path: &Path) -> Result<i64> {
    let not_a_store = |why: String| StoreError::NotAStore {
        path: path.to_path_buf(),
        why,
    };
    let meta = std::fs::metadata(path).map_err(|e| io_err(path, "cannot read", e))?;
    if meta.is_dir() {
        return Err(not_a_store("it is a directory".into()));
    }
    if !meta.is_file() {
        // SQLite would block opening a FIFO, or read a device without end
        return Err(not_a_store(
            "it is not a regular file (a FIFO, socket or device)".into(),
        ));
    }
    let len = meta.len();
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(sqlite_err(path))?;
    conn.busy_timeout(Duration::from_secs(30))
        .map_err(sqlite_err(path))?;
    let tables = table_names(&conn).map_err(|e| match e.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            not_a_store(format!("it is not a SQLite database ({len} bytes)"))
        }
        _ => sqlite_err(path)(e),
    })?;
    if tables.is_empty() {
        return Err(not_a_store(if len == 0 {
            "it is empty (0 bytes)".into()
        } else {
            "it is a SQLite database with no tables".into()
        }));
    }
    match schema_version(&conn, path)? {
        0 => Err(not_a_store(format!(
            "it is a SQLite database without a baton schema version; its tables: {}",
            tables.join(", ")
        ))),
        v => Ok(v),
    }
}

/// The names of the file's tables.
fn table_names(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect()
}

/// An I/O failure on the store's file, as the store reports SQLite's own.
fn io_err(path: &Path, doing: &str, e: std::io::Error) -> StoreError {
    sqlite_err(path)(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
        Some(format!("{doing} {}: {e}", path.display())),
    ))
}

/// How many prepared statements a writing connection keeps: more than the writer's
/// distinct statements, so none is parsed twice.
const STATEMENT_CACHE: usize = 128;

/// Statements through the connection's statement cache. The writer runs the same few
/// dozen statements for every call and step; `Connection::execute` and `query_row` parse
/// the SQL each time, which cost more CPU than running it.
pub(crate) trait Cached {
    /// `execute`, with the statement prepared once.
    fn exec<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize>;
    /// `query_row`, with the statement prepared once.
    fn row<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>;
}

/// A savepoint whose statements [`in_savepoint`] prepares once.
pub(crate) struct Savepoint {
    begin: &'static str,
    release: &'static str,
    undo: &'static str,
}

/// The savepoint of one call's writes.
pub(crate) const CALL: Savepoint = Savepoint {
    begin: "SAVEPOINT call",
    release: "RELEASE call",
    undo: "ROLLBACK TO call",
};

/// The savepoint of opening an episode.
pub(crate) const EPISODE: Savepoint = Savepoint {
    begin: "SAVEPOINT episode",
    release: "RELEASE episode",
    undo: "ROLLBACK TO episode",
};

/// Run `f` inside savepoint `sp` (a transaction of its own outside one, nested in a
/// group's command savepoint inside one), its writes undone when it fails or its
/// release does (a release that commits can fail on a full disk, and would leave the
/// transaction open). rusqlite's `Connection::savepoint` formats and parses its
/// SAVEPOINT and RELEASE text at every use; these are prepared once, which the writes
/// of every call go through.
pub(crate) fn in_savepoint<T>(
    conn: &Connection,
    path: &Path,
    sp: &Savepoint,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let err = sqlite_err(path);
    conn.exec(sp.begin, []).map_err(&err)?;
    let done = f().and_then(|v| conn.exec(sp.release, []).map(|_| v).map_err(&err));
    if done.is_err() {
        // as rusqlite's savepoint does when dropped unreleased; the error says what
        // went wrong, and an undo that fails too leaves it to the enclosing rollback
        if conn.exec(sp.undo, []).is_ok() {
            let _ = conn.exec(sp.release, []);
        }
    }
    done
}

impl Cached for Connection {
    fn exec<P: rusqlite::Params>(&self, sql: &str, params: P) -> rusqlite::Result<usize> {
        self.prepare_cached(sql)?.execute(params)
    }

    fn row<T, P, F>(&self, sql: &str, params: P, f: F) -> rusqlite::Result<T>
    where
        P: rusqlite::Params,
        F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    {
        self.prepare_cached(sql)?.query_row(params, f)
    }
}

/// Open an existing store read-only. A file of an older schema is migrated first
/// (through a short-lived writable connection); a newer one, or one that is not a baton
/// store, is refused.
pub(crate) fn open_ro(path: &Path) -> Result<Connection> {
    let err = sqlite_err(path);
    let open = || {
        let conn =
            Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(&err)?;
        conn.busy_timeout(Duration::from_secs(30)).map_err(&err)?;
        Ok::<_, StoreError>(conn)
    };
    match inspect(path)? {
        v if v > SCHEMA_VERSION => Err(too_new(path, v)),
        SCHEMA_VERSION => open(),
        _ => {
            drop(open_rw(path)?);
            open()
        }
    }
}

/// The file's schema version; 0 when it has none yet.
pub(crate) fn schema_version(conn: &Connection, path: &Path) -> Result<i64> {
    let err = sqlite_err(path);
    let has_meta: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(&err)?
        > 0;
    if !has_meta {
        return Ok(0);
    }
    let text: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(&err)?;
    match text {
        None => Ok(0),
        Some(t) => match t.parse::<i64>() {
            Ok(v) if v >= 0 => Ok(v),
            _ => Err(StoreError::Decode {
                path: path.to_path_buf(),
                what: "meta.schema_version".into(),
                message: format!("{t:?} is not a version number"),
            }),
        },
    }
}

fn too_new(path: &Path, found: i64) -> StoreError {
    StoreError::TooNew {
        path: path.to_path_buf(),
        found,
        supported: SCHEMA_VERSION,
    }
}

/// Apply every migration past the file's version, each in its own transaction.
fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    let err = sqlite_err(path);
    conn.execute(
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        [],
    )
    .map_err(&err)?;
    let version = schema_version(conn, path)?;
    if version > SCHEMA_VERSION {
        return Err(too_new(path, version));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let tx = conn.transaction().map_err(&err)?;
        tx.execute_batch(sql).map_err(&err)?;
        after_migration(&tx, i as i64 + 1).map_err(&err)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [(i as i64 + 1).to_string()],
        )
        .map_err(&err)?;
        tx.commit().map_err(&err)?;
    }
    Ok(())
}

/// The part of migration to `version` that SQL cannot do: version 11 fills in the
/// checksum of every stored reply, from its text as stored.
fn after_migration(tx: &rusqlite::Transaction<'_>, version: i64) -> rusqlite::Result<()> {
    if version != 11 {
        return Ok(());
    }
    // in chunks of row ids, so a large store is never read into memory whole
    let mut select =
        tx.prepare("SELECT id, response_text FROM calls WHERE id > ?1 ORDER BY id LIMIT 512")?;
    let mut update = tx.prepare("UPDATE calls SET response_sha256 = ?2 WHERE id = ?1")?;
    let mut last = i64::MIN;
    loop {
        let rows: Vec<(i64, String)> = select
            .query_map([last], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let Some((id, _)) = rows.last() else { break };
        last = *id;
        for (id, text) in rows {
            update.execute(rusqlite::params![id, crate::request::sha256_hex(&text)])?;
        }
    }
    Ok(())
}
