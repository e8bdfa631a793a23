//! A key a server echoes never reaches the store, the report or the logs, and is never
//! sent on: not in a later turn to the same server, not to a handoff's receiver.
// See: issue 23 (a key echoed inside a 200 body was stored and re-sent in later turns).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::support::serve_loopback;
use crate::{stderr, stdout};

const KEY: &str = "sk-echo-test-0123456789abcdef";

/// An OpenAI-compatible server whose every reply quotes the bearer token it was sent;
/// it keeps every request body it received.
fn echo_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    let url = serve_loopback(move |stream, _| {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let (mut length, mut token) = (0usize, String::new());
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if lower.starts_with("authorization:") {
                token = line.trim().rsplit(' ').next().unwrap_or("").to_string();
            }
        }
        let mut body = vec![0u8; length];
        let _ = reader.read_exact(&mut body);
        kept.lock()
            .unwrap()
            .push(String::from_utf8_lossy(&body).into_owned());
        let reply = serde_json::json!({
            "id": "chatcmpl-echo", "object": "chat.completion", "created": 0, "model": "lc",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant",
                "content": format!("I was called with {token}. The answer is 42."),
            }}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 12, "total_tokens": 32},
        })
        .to_string();
        let mut stream = stream;
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
            reply.len()
        );
    });
    (url, bodies)
}

fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

#[test]
fn issue_23_an_echoed_key_is_never_stored_reported_logged_or_sent_on() {
    let (url, bodies) = echo_server();
    let dir = tempfile::tempdir().unwrap();
    let exp = format!(
        r#"name = "echo"
dataset = "sample"
families = ["math"]
limit = 2
retry_budget_secs = 5
[chat]
switch_points = ["middle"]
directions = ["escalation"]
[models.lc]
model = "openai-compatible/lc"
price = "sim/lc"
base_url = "{url}"
api_key_env = "BATON_ECHO_KEY"
[models.hc]
model = "sim/hc"
[[pairs]]
low = "lc"
high = "hc"
"#
    );
    std::fs::write(dir.path().join("exp.toml"), exp).unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["run", "exp.toml", "--out", "out"])
        .env("BATON_ECHO_KEY", KEY)
        .env("BATON_LOG", "debug")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        run.status.code().is_some_and(|c| c <= 1),
        "{}",
        stderr(&run)
    );
    assert!(!stderr(&run).contains(KEY) && !stdout(&run).contains(KEY));
    // the server did echo the key, and every request after the first turn carries the
    // earlier replies: none of them carries the key
    let bodies = bodies.lock().unwrap().clone();
    assert!(bodies.len() >= 4, "{} requests", bodies.len());
    assert!(
        bodies.iter().all(|b| !b.contains(KEY)),
        "a request carried the key on"
    );
    assert!(
        bodies.iter().any(|b| b.contains("I was called with ****")),
        "a later turn carries the redacted reply"
    );
    for format in ["md", "json", "html"] {
        let report = Command::new(env!("CARGO_BIN_EXE_baton"))
            .args(["report", "out", "--format", format])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(report.status.success(), "{}", stderr(&report));
        assert!(!stdout(&report).contains(KEY), "{format} report");
    }
    let mut files = Vec::new();
    files_under(&dir.path().join("out"), &mut files);
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
            "{} holds the key",
            f.display()
        );
    }
}
