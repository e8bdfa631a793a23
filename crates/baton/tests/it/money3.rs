//! Money round 3 through the binary: hostile usage numbers leave a run, its resume and
//! every report format working; a FIFO or a directory where the store should be is an
//! error at once; price rates that read as something else are refused.
// See: issue 32

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crate::support::{http_pair, serve_loopback, sim_pair, write_experiment};
use crate::{baton, stderr, stdout};

/// A Chat Completions server whose every other reply states `u64::MAX` or 4e11 tokens.
fn hostile_usage_server() -> String {
    serve_loopback(|stream, n| {
        let mut stream = stream;
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        let mut req = Vec::new();
        let mut buf = [0u8; 65536];
        // read the head and the body the content-length announces
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(k) => req.extend_from_slice(&buf[..k]),
            }
            let text = String::from_utf8_lossy(&req).to_ascii_lowercase();
            if let Some(i) = text.find("\r\n\r\n") {
                let len = text
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if req.len() >= i + 4 + len {
                    break;
                }
            }
        }
        let (prompt, output) = match n % 3 {
            1 => ("20", "18446744073709551615"),
            2 => ("400000000000", "5"),
            _ => ("20", "5"),
        };
        let body = format!(
            r#"{{"id":"c","object":"chat.completion","model":"lc","choices":[{{"index":0,"message":{{"role":"assistant","content":"The answer is 42."}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":{prompt},"completion_tokens":{output}}}}}"#
        );
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    })
}

fn experiment(url: &str) -> String {
    format!(
        "name = \"usage\"\ndataset = \"sample\"\nfamilies = [\"math\"]\nlimit = 1\nswitch_points = [\"middle\"]\ndirections = [\"escalation\"]\nretry_budget_secs = 30\n{}",
        http_pair(url, "max_tokens = 100\nunusable_retries = 3\n")
    )
}

#[test]
fn issue_32_hostile_usage_numbers_leave_the_run_the_resume_and_every_report_working() {
    let url = hostile_usage_server();
    let dir = tempfile::tempdir().unwrap();
    write_experiment(dir.path(), &experiment(&url));
    for args in [
        &["run", "exp.toml", "--out", "out", "--quiet"][..],
        &["run", "exp.toml", "--out", "out", "--quiet", "--resume"][..],
    ] {
        let run = baton(dir.path(), args);
        let err = stderr(&run);
        assert!(run.status.code().is_some_and(|c| c <= 1), "{args:?}: {err}");
        assert!(
            !err.contains("overflow") && !err.contains("out of range"),
            "{err}"
        );
    }
    for format in ["md", "csv", "json", "latex", "html"] {
        let report = baton(dir.path(), &["report", "out", "--format", format]);
        assert!(report.status.success(), "{format}: {}", stderr(&report));
        assert!(!stdout(&report).is_empty(), "{format}");
    }
    let json = baton(dir.path(), &["report", "out", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let spend = &json["spend"];
    // the absurd replies are unusable attempts with unreadable usage, counted at their
    // call's bound and marked as such
    assert!(spend["unusable_attempts"].as_u64().unwrap() > 0, "{spend}");
    assert_eq!(spend["estimated_attempts"], spend["unknown_usage_attempts"]);
    assert!(spend["paid_usd"].as_f64().unwrap() < 1.0, "{spend}");
}

#[test]
fn issue_32_report_on_a_fifo_or_a_directory_is_an_error_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.sqlite");
    if std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        let t0 = Instant::now();
        let report = baton(dir.path(), &["report", "fifo.sqlite"]);
        assert_eq!(report.status.code(), Some(2), "{}", stderr(&report));
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        assert!(stderr(&report).contains("FIFO"), "{}", stderr(&report));
    }
    std::fs::create_dir_all(dir.path().join("out/results.sqlite")).unwrap();
    let report = baton(dir.path(), &["report", "out"]);
    let err = stderr(&report);
    assert_eq!(report.status.code(), Some(2), "{err}");
    assert!(
        err.contains("results.sqlite") && err.contains("it is a directory"),
        "{err}"
    );
    assert!(!err.contains("disk I/O error"), "{err}");
}

#[test]
fn issue_32_price_rates_that_read_as_something_else_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (rate, says) in [("1e-400", "too small to represent"), ("null", "is null")] {
        std::fs::write(
            dir.path().join("prices.json"),
            format!(
                r#"{{"sim/lc": {{"input_cost_per_token": {rate}, "output_cost_per_token": 1e-06}}}}"#
            ),
        )
        .unwrap();
        write_experiment(
            dir.path(),
            concat!(
                "name = \"p\"\ndataset = \"sample\"\nfamilies = [\"math\"]\nlimit = 1\nprices = \"prices.json\"\n",
                sim_pair!()
            ),
        );
        let run = baton(dir.path(), &["run", "exp.toml", "--out", "out", "--quiet"]);
        let err = stderr(&run);
        assert_eq!(run.status.code(), Some(2), "{rate}: {err}");
        assert!(
            err.contains(says) && err.contains("prices.json"),
            "{rate}: {err}"
        );
        assert!(!dir.path().join("out/results.sqlite").exists());
    }
}
