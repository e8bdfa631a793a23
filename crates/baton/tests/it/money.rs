//! Money and reliability end to end: every billed reply counted, hostile servers
//! survived, one writer per folder, and a resume that checks what it resumes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{baton, stderr, stdout};

/// A `baton sim-server` child on a free port, and its base URL.
pub struct SimServer {
    child: Child,
    pub base_url: String,
}

impl SimServer {
    pub fn start(args: &[&str]) -> SimServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["sim-server", "--port", "0"])
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
    pub fn stats(&self) -> serde_json::Value {
        self.get("/stats")
    }

    /// `GET path`, as JSON.
    pub fn get(&self, path: &str) -> serde_json::Value {
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

/// A small math experiment with `lc` and `hc` set up as given (`hc` defaults to
/// `sim/hc`).
fn experiment(name: &str, model: &str, hc: &str) -> String {
    let extra = if hc.is_empty() {
        "model = \"sim/hc\""
    } else {
        hc
    };
    format!(
        r#"
name = "{name}"
dataset = "sample"
families = ["math"]
limit = 2
switch_points = ["middle"]
directions = ["escalation"]
retry_budget_secs = 5
[models.lc]
{model}
[models.hc]
{extra}
[[pairs]]
low = "lc"
high = "hc"
"#
    )
}

#[test]
fn every_billed_reply_of_a_faulty_server_is_counted() {
    let server = SimServer::start(&[
        "--fault-rate",
        "0.4",
        "--faults",
        "empty,malformed",
        "--seed",
        "3",
    ]);
    let dir = tempfile::tempdir().unwrap();
    let over_http = |id: &str| {
        format!(
            "model = \"openai-compatible/{id}\"\nprice = \"sim/{id}\"\nbase_url = \"{}\"\nunusable_retries = 8",
            server.base_url
        )
    };
    let exp = experiment("faults", &over_http("lc"), &over_http("hc"));
    std::fs::write(dir.path().join("exp.toml"), exp).unwrap();
    let run = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(
        run.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&run)
    );
    let stats = server.stats();
    let report = baton(dir.path(), &["report", "out", "--format", "json"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).unwrap();
    let spend = &json["spend"];
    let faults = stats["faults"]["empty"].as_u64().unwrap_or(0)
        + stats["faults"]["malformed"].as_u64().unwrap_or(0);
    assert!(faults > 0, "the server injected faults: {stats}");
    assert_eq!(
        spend["billed_attempts"], stats["ok_responses"],
        "{spend} vs {stats}"
    );
    assert_eq!(
        spend["unusable_attempts"].as_u64(),
        Some(faults),
        "{spend} vs {stats}"
    );
    assert!(spend["paid_usd"].as_f64().unwrap() > 0.0);
    // the malformed replies have no readable usage, and say so
    assert_eq!(
        spend["unknown_usage_attempts"].as_u64(),
        stats["faults"]["malformed"].as_u64().or(Some(0))
    );
    let md = baton(dir.path(), &["report", "out"]);
    assert!(stdout(&md).contains("billed attempts"), "{}", stdout(&md));
}

/// A server that answers every request with a 429 asking to wait `retry_after`.
fn rate_limiting_server(retry_after: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 65536];
                let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
                let _ = stream.read(&mut buf);
                let body = r#"{"error":{"type":"requests","code":"rate_limit_exceeded","message":"slow down"}}"#;
                let _ = write!(
                    stream,
                    "HTTP/1.1 429 Too Many Requests\r\nretry-after: {retry_after}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    format!("http://{addr}/v1")
}

#[test]
fn a_retry_after_of_1e20_gives_an_incomplete_run_not_a_panic() {
    let url = rate_limiting_server("1e20");
    let dir = tempfile::tempdir().unwrap();
    let model =
        format!("model = \"openai-compatible/lc\"\nprice = \"sim/lc\"\nbase_url = \"{url}\"");
    std::fs::write(
        dir.path().join("exp.toml"),
        experiment("hostile", &model, ""),
    )
    .unwrap();
    let started = Instant::now();
    let run = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let err = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(60));
    assert!(err.contains("incomplete"), "{err}");
}

#[test]
fn a_second_run_on_a_busy_folder_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let slow = "model = \"sim/lc\"\n[models.lc.sim]\nlatency_ms = 400";
    std::fs::write(dir.path().join("exp.toml"), experiment("busy", slow, "")).unwrap();
    let mut first = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", "exp.toml", "--out", "out", "--quiet"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = dir.path().join("out/baton.lock");
    let started = Instant::now();
    while std::fs::read_to_string(&lock).map_or(true, |s| s.trim().is_empty()) {
        assert!(started.elapsed() < Duration::from_secs(30), "no lock taken");
        std::thread::sleep(Duration::from_millis(10));
    }
    let t0 = Instant::now();
    let second = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(
        err.contains("baton.lock") && err.contains(&format!("process {}", first.id())),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "refused at once");
    first.kill().unwrap();
    first.wait().unwrap();
    // the kernel released the lock with the killed process
    let resumed = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
}

/// A price card edited between runs re-prices the stored usage and sends nothing: a
/// price is not what an episode depends on (issue 31 replaced the refusal).
#[test]
fn a_resume_with_an_edited_price_card_reprices_the_stored_calls() {
    let dir = tempfile::tempdir().unwrap();
    let card = |rate: &str| {
        format!(
            r#"{{"sim/hc": {{"input_cost_per_token": {rate}, "output_cost_per_token": 2e-05, "cache_read_input_token_cost": 4e-07}}}}"#
        )
    };
    std::fs::write(dir.path().join("prices.json"), card("4e-06")).unwrap();
    let exp = experiment("prices", "model = \"sim/lc\"", "").replace(
        "retry_budget_secs = 5",
        "retry_budget_secs = 5\nprices = \"prices.json\"",
    );
    std::fs::write(dir.path().join("exp.toml"), exp).unwrap();
    let first = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let db = rusqlite::Connection::open(dir.path().join("out/results.sqlite")).unwrap();
    let sum = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap() };
    let (calls, hc_before) = (
        sum("SELECT count(*) FROM calls"),
        sum("SELECT sum(cost) FROM calls WHERE model = 'hc'"),
    );
    std::fs::write(dir.path().join("prices.json"), card("5e-06")).unwrap();
    let again = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains("price card changed: stored usage re-priced"),
        "{}",
        stdout(&again)
    );
    assert_eq!(
        sum("SELECT count(*) FROM calls"),
        calls,
        "nothing sent again"
    );
    let hc_in = sum("SELECT sum(uncached_in) FROM calls WHERE model = 'hc'");
    assert_eq!(
        sum("SELECT sum(cost) FROM calls WHERE model = 'hc'") - hc_before,
        hc_in * 1_000_000,
        "each uncached input token of hc now costs $1e-6 more"
    );
    let n: i64 = sum("SELECT count(*) FROM input_changes WHERE name = 'price card'");
    assert_eq!(n, 1, "the change is recorded");
    let _ = Path::new(".");
}
