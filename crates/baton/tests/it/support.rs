//! Setup shared by the binary's tests: experiment TOML pieces, a `baton sim-server` on
//! 127.0.0.1:0, a quiet background `baton run`, and reads of a run's store.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags, Row};
use serde_json::Value;

use crate::{baton, stderr, stdout};

/// The TOML tables that end most chat experiments, as a literal for `concat!`: `lc` is
/// `sim/lc`, `hc` is `sim/hc`, and they are the experiment's one pair.
macro_rules! sim_pair {
    () => {
        "[models.lc]\nmodel = \"sim/lc\"\n[models.hc]\nmodel = \"sim/hc\"\n[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n"
    };
}
pub(crate) use sim_pair;

/// The `[models.lc]` and `[models.hc]` tables of an experiment whose models are both
/// served by a sim-server at `base_url` through the `openai-compatible` provider and
/// priced as `sim/lc` and `sim/hc`, each with the lines `extra`, then the one pair.
pub fn http_pair(base_url: &str, extra: &str) -> String {
    let model = |id: &str| {
        format!(
            "[models.{id}]\nmodel = \"openai-compatible/{id}\"\nprice = \"sim/{id}\"\nbase_url = \"{base_url}\"\n{extra}"
        )
    };
    format!(
        "{}{}[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n",
        model("lc"),
        model("hc")
    )
}

/// The `[models.lc]` and `[models.hc]` tables of an agent experiment whose models are the
/// simulated coding agents `agent-lc` and `agent-hc` of a sim-server at `base_url` (priced
/// as `sim/lc` and `sim/hc`), then the one pair.
pub fn agent_http_pair(base_url: &str) -> String {
    let model = |id: &str| {
        format!(
            "[models.{id}]\nmodel = \"openai-compatible/agent-{id}\"\nprice = \"sim/{id}\"\nbase_url = \"{base_url}\"\n"
        )
    };
    format!(
        "{}{}[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n",
        model("lc"),
        model("hc")
    )
}

/// Runs the built `baton` with `args` in `cwd` and asserts it exits 0, its stderr in
/// the failure message.
pub fn baton_ok(cwd: &Path, args: &[&str]) -> Output {
    let o = baton(cwd, args);
    assert!(
        o.status.success(),
        "baton {}: {}",
        args.join(" "),
        stderr(&o)
    );
    o
}

/// `baton report <out> --format json` in `cwd`: asserts it exits 0 (its stderr in the
/// failure message) and returns the report parsed.
pub fn report_json(cwd: &Path, out: &str) -> Value {
    let report = baton_ok(cwd, &["report", out, "--format", "json"]);
    serde_json::from_str(&stdout(&report)).expect("a JSON report")
}

/// The JSON file at `path`, parsed; panics naming the file.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Writes the experiment `text` to `exp.toml` in `dir`.
pub fn write_experiment(dir: &Path, text: &str) {
    std::fs::write(dir.join("exp.toml"), text).expect("write exp.toml");
}

/// Starts the built `baton` with `args` in `cwd` in the background, its stdout and
/// stderr thrown away (for runs a test kills, or races against).
pub fn spawn_quiet(cwd: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("baton starts")
}

/// Waits until `lock` (a run's `baton.lock`) holds a process id, at most 30 seconds.
pub fn wait_for_lock(lock: &Path) {
    let started = Instant::now();
    while std::fs::read_to_string(lock).map_or(true, |s| s.trim().is_empty()) {
        assert!(started.elapsed() < Duration::from_secs(30), "no lock taken");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `sql`'s count in the store at `db`, read-only and 0 while there is no store yet:
/// for polling a running run (a plain open would create the store file before the run
/// does, which the run rightly refuses as not a baton store).
pub fn poll_count(db: &Path, sql: &str) -> i64 {
    Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
        .unwrap_or(0)
}

/// Billed attempts stored at `db`: used replies (calls) plus unusable ones (attempts);
/// read-only and 0 while there is no store yet, like [`poll_count`].
pub fn billed(db: &Path) -> i64 {
    poll_count(
        db,
        "SELECT (SELECT count(*) FROM calls) + (SELECT count(*) FROM attempts)",
    )
}

/// `sql`'s count in the store at `db`; panics naming the query if it cannot be read.
pub fn count(db: &Path, sql: &str) -> i64 {
    Connection::open(db)
        .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Every row `sql` selects from the store at `db`, each as the tuple `T` of its columns
/// in order.
pub fn rows<T>(db: &Path, sql: &str) -> Vec<T>
where
    T: for<'a> TryFrom<&'a Row<'a>, Error = rusqlite::Error>,
{
    let c = Connection::open(db).unwrap_or_else(|e| panic!("{}: {e}", db.display()));
    query(&c, sql, [])
}

/// Every row `sql` with `params` selects on `c`, each as the tuple `T` of its columns
/// in order.
pub fn query<T, P>(c: &Connection, sql: &str, params: P) -> Vec<T>
where
    T: for<'a> TryFrom<&'a Row<'a>, Error = rusqlite::Error>,
    P: rusqlite::Params,
{
    let mut s = c.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    s.query_map(params, |r| T::try_from(r))
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// A one-off HTTP server on 127.0.0.1:0 for faults the sim-server does not play: each
/// connection goes to `handle` on a thread of its own, with its index in arrival order.
/// Returns the server's base URL (`http://ADDR/v1`); it serves until the tests end.
pub fn serve_loopback<F>(handle: F) -> String
where
    F: Fn(TcpStream, usize) + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("the listener's address");
    let handle = Arc::new(handle);
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().flatten().enumerate() {
            let handle = Arc::clone(&handle);
            std::thread::spawn(move || handle(stream, n));
        }
    });
    format!("http://{addr}/v1")
}

/// A free port on loopback (bound, then released for the caller to use).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}

/// A `baton sim-server` child on a free port, and its base URL.
pub struct SimServer {
    child: Child,
    pub base_url: String,
}

impl SimServer {
    pub fn start(args: &[&str]) -> SimServer {
        SimServer::start_on(0, args)
    }

    /// A sim-server on `port` (0: a free one).
    pub fn start_on(port: u16, args: &[&str]) -> SimServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["sim-server", "--port", &port.to_string()])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the sim-server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base_url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line:?}"))
            .to_string();
        SimServer { child, base_url }
    }

    /// `GET /stats`, as JSON.
    pub fn stats(&self) -> Value {
        self.get("/stats")
    }

    /// The requests it has answered.
    pub fn requests(&self) -> u64 {
        self.stats()["requests"].as_u64().unwrap()
    }

    /// `GET path`, as JSON.
    pub fn get(&self, path: &str) -> Value {
        let host = self
            .base_url
            .trim_start_matches("http://")
            .trim_end_matches("/v1");
        let mut s = TcpStream::connect(host).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body = text.split_once("\r\n\r\n").unwrap().1;
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body:?}"))
    }
}

impl Drop for SimServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
