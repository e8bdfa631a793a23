//! Running one query on one database file, safely.
//!
//! LiC opens each file read-write with Python's `sqlite3.connect`, runs one
//! statement and `fetchall()`s. Here every execution also gets a fresh
//! connection (so nothing a query does to connection state carries over), but
//! the connection is locked down:
//!
//! - opened `SQLITE_OPEN_READ_ONLY | SQLITE_OPEN_NO_MUTEX` (never created, never
//!   written, no URI parsing), then `PRAGMA query_only = 1`;
//! - an authorizer allows only `SELECT`, column reads, recursive CTEs and
//!   function calls, and denies everything else (writes, DDL, `ATTACH`,
//!   `PRAGMA`, transactions) plus the functions `load_extension` and
//!   `fts3_tokenizer`; `SQLITE_LIMIT_ATTACHED` is 0 as well;
//! - a statement that `sqlite3_stmt_readonly` does not call read-only (e.g.
//!   `VACUUM INTO`) is refused before it runs;
//! - time: a progress handler aborts the query once its deadline passes;
//! - memory: `SQLITE_LIMIT_LENGTH` caps any single string, blob or row at
//!   [`MAX_VALUE_BYTES`], and the rows fetched are capped at
//!   [`MAX_RESULT_BYTES`]. SQLite's own working memory stays bounded by its page
//!   cache (sorts and temporary b-trees spill to temporary files). The
//!   process-wide `sqlite3_hard_heap_limit64` is deliberately not set: it would
//!   also limit every other SQLite user in the process.
//!
//! Python's `cursor.execute` runs exactly one statement: SQL that holds no
//! statement (blank, comments, lone `;`) returns no rows, and anything after the
//! first statement other than spaces and comments raises. That check is
//! reproduced here before SQLite sees the text.

use std::path::Path;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use regex::Regex;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};

use crate::pyvalue::{Row, Value};
use baton_py::decode_utf8_ignore;

/// Largest string, blob or row SQLite may build (`SQLITE_LIMIT_LENGTH`), and
/// the longest SQL text it accepts.
pub const MAX_VALUE_BYTES: i32 = 32 << 20;
/// Largest result set kept in memory (approximate bytes).
pub const MAX_RESULT_BYTES: usize = 64 << 20;
/// VM instructions between two deadline checks.
const PROGRESS_OPS: i32 = 100;

/// Why a query produced no rows to compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExecError {
    /// SQLite reported an error (syntax, missing table, denied action, …).
    Sql(String),
    /// More than one statement (Python: "You can only execute one statement at
    /// a time.").
    MultipleStatements,
    /// The statement would write (refused before running).
    NotReadOnly,
    /// The query ran past its deadline.
    Timeout,
    /// The result set exceeded [`MAX_RESULT_BYTES`].
    TooLarge,
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecError::Sql(msg) => write!(f, "{msg}"),
            ExecError::MultipleStatements => {
                f.write_str("you can only execute one statement at a time")
            }
            ExecError::NotReadOnly => f.write_str("statement would modify the database"),
            ExecError::Timeout => f.write_str("query timed out"),
            ExecError::TooLarge => write!(f, "result larger than {MAX_RESULT_BYTES} bytes"),
        }
    }
}

static CUR_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    let s = r"[\t\n\x0B\x0C\r\x1C-\x1F \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]*";
    Regex::new(&format!(r"(?i)YEAR{s}\({s}CURDATE{s}\({s}\){s}\){s}")).expect("valid regex")
});

/// `replace_cur_year`: `YEAR(CURDATE())` (any case and spacing) becomes `2020`.
pub(crate) fn replace_cur_year(sql: &str) -> String {
    CUR_YEAR.replace_all(sql, "2020").into_owned()
}

/// Where SQLite's first statement ends, by SQLite's own lexical rules.
#[derive(Debug, PartialEq, Eq)]
enum Shape<'a> {
    /// Only spaces, comments and `;`: SQLite prepares no statement.
    Empty,
    /// A statement; `tail` is the text after its terminating `;`.
    Statement { tail: &'a str },
}

/// Skip one SQLite comment starting at `i`, if there is one.
fn skip_comment(b: &[u8], i: usize) -> Option<usize> {
    if b[i..].starts_with(b"--") {
        let end = b[i..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |p| i + p);
        return Some(end);
    }
    if b[i..].starts_with(b"/*") {
        let end = b[i + 2..]
            .windows(2)
            .position(|w| w == b"*/")
            .map_or(b.len(), |p| i + 2 + p + 2);
        return Some(end);
    }
    None
}

fn shape(sql: &str) -> Shape<'_> {
    let b = sql.as_bytes();
    let mut i = 0;
    // Leading spaces, comments and empty statements.
    loop {
        if i >= b.len() {
            return Shape::Empty;
        }
        if matches!(b[i], b' ' | b'\t' | b'\n' | b'\x0c' | b'\r' | b';') {
            i += 1;
        } else if let Some(end) = skip_comment(b, i) {
            i = end;
        } else {
            break;
        }
    }
    while i < b.len() {
        match b[i] {
            b';' => {
                return Shape::Statement {
                    tail: &sql[i + 1..],
                };
            }
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() {
                    if b[i] == q {
                        if b.get(i + 1) == Some(&q) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'[' => {
                i = b[i..]
                    .iter()
                    .position(|&c| c == b']')
                    .map_or(b.len(), |p| i + p + 1);
            }
            _ => match skip_comment(b, i) {
                Some(end) => i = end,
                None => i += 1,
            },
        }
    }
    Shape::Statement { tail: "" }
}

/// CPython 3.11's `lstrip_sql` check on the text after the first statement:
/// only ` \t\f\n\r`, `--` comments and `/* */` comments (even unterminated)
/// may follow.
fn tail_is_empty(tail: &str) -> bool {
    let b = tail.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' | b'\x0c' | b'\n' | b'\r' => i += 1,
            b'-' if b.get(i + 1) == Some(&b'-') => {
                match b[i + 2..].iter().position(|&c| c == b'\n') {
                    Some(p) => i = i + 2 + p,
                    None => return true,
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                match b[i + 2..].windows(2).position(|w| w == b"*/") {
                    Some(p) => i = i + 2 + p + 2,
                    None => return true,
                }
            }
            _ => return false,
        }
    }
    true
}

fn authorize(ctx: AuthContext<'_>) -> Authorization {
    match ctx.action {
        AuthAction::Select | AuthAction::Read { .. } | AuthAction::Recursive => {
            Authorization::Allow
        }
        AuthAction::Function { function_name }
            if !function_name.eq_ignore_ascii_case("load_extension")
                && !function_name.eq_ignore_ascii_case("fts3_tokenizer") =>
        {
            Authorization::Allow
        }
        _ => Authorization::Deny,
    }
}

fn sql_error(err: rusqlite::Error, deadline: Instant) -> ExecError {
    if let rusqlite::Error::SqliteFailure(e, _) = &err
        && (e.code == rusqlite::ErrorCode::OperationInterrupted || Instant::now() >= deadline)
    {
        return ExecError::Timeout;
    }
    ExecError::Sql(err.to_string())
}

fn open(path: &Path) -> Result<Connection, ExecError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| ExecError::Sql(e.to_string()))?;
    let setup = || -> rusqlite::Result<()> {
        conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)?;
        conn.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, MAX_VALUE_BYTES)?;
        conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
        conn.pragma_update(None, "query_only", true)?;
        Ok(())
    };
    setup().map_err(|e| ExecError::Sql(e.to_string()))?;
    conn.authorizer(Some(authorize));
    Ok(conn)
}

/// What identifies the file a cached connection has open: a file replaced or changed
/// at the same path is opened afresh.
#[derive(PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            modified: m.modified().ok(),
        })
    }
}

/// Connections kept open per thread, at most this many (the least recently used goes).
const CACHED_CONNECTIONS: usize = 32;

thread_local! {
    /// This thread's open read-only connections, most recently used last. Opening a
    /// database and reading its schema was two thirds of the time a query took (LiC opens
    /// one per query, a test suite holds a few files per database); a connection holds no
    /// state a later query could see (read-only, `query_only`, the authorizer allows only
    /// reads), so each query gets the same answer on a kept one.
    static CONNECTIONS: std::cell::RefCell<Vec<(std::path::PathBuf, Stamp, Connection)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Run `f` on a read-only connection to `path` whose progress handler stops it at
/// `deadline`: a kept one when the file is the one it opened, else a new one, kept after.
fn with_connection<T>(
    path: &Path,
    deadline: Instant,
    f: impl FnOnce(&Connection) -> Result<T, ExecError>,
) -> Result<T, ExecError> {
    let stamp = Stamp::of(path);
    let kept = CONNECTIONS.with_borrow_mut(|conns| {
        let at = conns.iter().position(|(p, _, _)| p == path)?;
        let (p, s, conn) = conns.remove(at);
        if stamp.as_ref() == Some(&s) {
            Some((p, s, conn))
        } else {
            None
        }
    });
    let (p, s, conn) = match kept {
        Some(entry) => entry,
        None => {
            let conn = open(path)?;
            match stamp {
                Some(s) => (path.to_path_buf(), s, conn),
                // No stamp (the file cannot be stat'ed): use the connection once.
                None => {
                    conn.progress_handler(PROGRESS_OPS, Some(move || Instant::now() >= deadline));
                    return f(&conn);
                }
            }
        }
    };
    conn.progress_handler(PROGRESS_OPS, Some(move || Instant::now() >= deadline));
    let out = f(&conn);
    conn.progress_handler(PROGRESS_OPS, None::<fn() -> bool>);
    CONNECTIONS.with_borrow_mut(|conns| {
        if conns.len() >= CACHED_CONNECTIONS {
            conns.remove(0);
        }
        conns.push((p, s, conn));
    });
    out
}

/// Run `sql` on the database at `path` the way LiC's `exec_on_db` does
/// (`replace_cur_year`, one statement, `fetchall`), within `timeout`.
pub(crate) fn execute(path: &Path, sql: &str, timeout: Duration) -> Result<Vec<Row>, ExecError> {
    let deadline = Instant::now() + timeout;
    let sql = replace_cur_year(sql);
    if sql.contains('\0') {
        return Err(ExecError::Sql(
            "the query contains a null character".to_owned(),
        ));
    }
    match shape(&sql) {
        Shape::Empty => return Ok(Vec::new()),
        Shape::Statement { tail } if !tail_is_empty(tail) => {
            return Err(ExecError::MultipleStatements);
        }
        Shape::Statement { .. } => {}
    }
    with_connection(path, deadline, |conn| query(conn, &sql, deadline))
}

/// Prepare and run one read-only statement, collecting its rows under the bounds.
fn query(conn: &Connection, sql: &str, deadline: Instant) -> Result<Vec<Row>, ExecError> {
    let mut stmt = conn.prepare(sql).map_err(|e| match e {
        rusqlite::Error::MultipleStatement => ExecError::MultipleStatements,
        other => sql_error(other, deadline),
    })?;
    if !stmt.readonly() {
        return Err(ExecError::NotReadOnly);
    }
    let columns = stmt.column_count();
    let mut rows = stmt.query([]).map_err(|e| sql_error(e, deadline))?;
    let mut out = Vec::new();
    let mut bytes = 0usize;
    loop {
        let row = match rows.next() {
            Ok(Some(row)) => row,
            Ok(None) => break,
            Err(e) => return Err(sql_error(e, deadline)),
        };
        let mut values = Vec::with_capacity(columns);
        for i in 0..columns {
            let value = match row.get_ref(i).map_err(|e| sql_error(e, deadline))? {
                ValueRef::Null => Value::Null,
                ValueRef::Integer(v) => Value::Int(v),
                ValueRef::Real(v) => Value::Float(v),
                ValueRef::Text(t) => Value::Text(decode_utf8_ignore(t)),
                ValueRef::Blob(b) => Value::Blob(b.to_vec()),
            };
            bytes += value.size_hint();
            values.push(value);
        }
        bytes += std::mem::size_of::<Row>();
        if bytes > MAX_RESULT_BYTES {
            return Err(ExecError::TooLarge);
        }
        if Instant::now() >= deadline {
            return Err(ExecError::Timeout);
        }
        out.push(values);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_shapes_follow_sqlite() {
        assert_eq!(shape(""), Shape::Empty);
        assert_eq!(shape(" ;; -- x"), Shape::Empty);
        assert_eq!(shape("/* a */ ; ;"), Shape::Empty);
        assert_eq!(shape("select 1"), Shape::Statement { tail: "" });
        assert_eq!(shape("select ';' ; x"), Shape::Statement { tail: " x" });
        assert_eq!(shape("select [a;b];"), Shape::Statement { tail: "" });
        assert_eq!(shape("select 1 -- ;\n"), Shape::Statement { tail: "" });
    }

    #[test]
    fn python_tail_check() {
        // Observed with CPython 3.11.7 / SQLite 3.40.1.
        for ok in [
            "",
            " ",
            " -- x",
            " /* x */",
            " /* unterminated",
            "\n-- c\n",
            "\x0c",
        ] {
            assert!(tail_is_empty(ok), "{ok:?}");
        }
        for bad in [
            ";",
            " select 2",
            " x",
            " -",
            " /",
            "\x0b",
            "\u{a0}",
            " --x\n;",
        ] {
            assert!(!tail_is_empty(bad), "{bad:?}");
        }
    }

    #[test]
    fn cur_year() {
        assert_eq!(
            replace_cur_year("WHERE y = year ( curdate ( ) ) AND x"),
            "WHERE y = 2020AND x"
        );
    }
}
