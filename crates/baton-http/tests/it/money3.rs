//! Money round 3, end to end through the runner against hostile servers on 127.0.0.1:
//! bodies that never arrive whole, `extra` content the cap must count, usage numbers
//! no API states, a short key, and a disk that fills with large replies in flight.
// See: issue 32
#![allow(
    clippy::print_stderr,
    reason = "the tests print what they measured, for the issue's figures"
)]

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_http::HttpProviders;
use baton_runner::{ExperimentSpec, RunOptions, RunSummary, Runner};
use baton_store::Reader;
use baton_types::{Cost, EpisodeStatus, Spend};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::fake_key;

/// How the hostile server answers one request.
#[derive(Clone)]
enum Reply {
    /// A whole 200 with this body.
    Whole(String),
    /// A 200 announcing this body, cut after half of it.
    Cut(String),
    /// A 200 announcing this body, sent a byte every 200 ms.
    Slow(String),
    /// A chunked 200 that never ends, a few bytes every 50 ms.
    Endless,
}

type Behaviour = Arc<dyn Fn(u64, &[u8]) -> Reply + Send + Sync>;

/// A server that answers each request as `behaviour` says (given the request's number,
/// from 0, and its body), counting the requests it answered with a 200 and when.
struct Hostile {
    base_url: String,
    answered: Arc<AtomicU64>,
    times: Arc<Mutex<Vec<Instant>>>,
}

impl Hostile {
    async fn start(behaviour: impl Fn(u64, &[u8]) -> Reply + Send + Sync + 'static) -> Hostile {
        let behaviour: Behaviour = Arc::new(behaviour);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let answered = Arc::new(AtomicU64::new(0));
        let times = Arc::new(Mutex::new(Vec::new()));
        let next = Arc::new(AtomicU64::new(0));
        {
            let (answered, times) = (answered.clone(), times.clone());
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    let (behaviour, answered, times, next) = (
                        behaviour.clone(),
                        answered.clone(),
                        times.clone(),
                        next.clone(),
                    );
                    tokio::spawn(async move {
                        let _ = serve(stream, behaviour, answered, times, next).await;
                    });
                }
            });
        }
        Hostile {
            base_url: format!("http://{addr}/v1"),
            answered,
            times,
        }
    }

    fn answered(&self) -> u64 {
        self.answered.load(Ordering::SeqCst)
    }
}

async fn serve(
    mut s: TcpStream,
    behaviour: Behaviour,
    answered: Arc<AtomicU64>,
    times: Arc<Mutex<Vec<Instant>>>,
    next: Arc<AtomicU64>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    let (head_end, length) = loop {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (i + 4, length);
        }
    };
    while buf.len() < head_end + length {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let n = next.fetch_add(1, Ordering::SeqCst);
    let reply = behaviour(n, &buf[head_end..head_end + length]);
    answered.fetch_add(1, Ordering::SeqCst);
    times.lock().unwrap().push(Instant::now());
    let head = |len: usize| {
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n"
        )
    };
    match reply {
        Reply::Whole(body) => {
            s.write_all(head(body.len()).as_bytes()).await?;
            s.write_all(body.as_bytes()).await?;
        }
        Reply::Cut(body) => {
            s.write_all(head(body.len()).as_bytes()).await?;
            s.write_all(&body.as_bytes()[..body.len() / 2]).await?;
            s.flush().await?;
        }
        Reply::Slow(body) => {
            s.write_all(head(body.len()).as_bytes()).await?;
            for b in body.as_bytes() {
                s.write_all(&[*b]).await?;
                s.flush().await?;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Reply::Endless => {
            s.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
            )
            .await?;
            loop {
                s.write_all(b"4\r\n    \r\n").await?;
                s.flush().await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    s.shutdown().await
}

/// A Chat Completions body with this text and usage.
fn completion(text: &str, prompt: &str, output: &str) -> String {
    format!(
        r#"{{"id":"c","object":"chat.completion","model":"lc","choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":{prompt},"completion_tokens":{output}}}}}"#,
        serde_json::to_string(text).unwrap()
    )
}

fn ok() -> Reply {
    Reply::Whole(completion("The answer is 42.", "20", "5"))
}

/// A one-task math experiment, `lc` and `hc` both served by `url` with `settings`.
fn experiment(name: &str, url: &str, settings: &str) -> String {
    let model = |id: &str| {
        format!(
            "[models.{id}]\nmodel = \"openai-compatible/{id}\"\nprice = \"sim/{id}\"\nbase_url = \"{url}\"\nmax_tokens = 100\n{settings}\n"
        )
    };
    format!(
        "name = \"{name}\"\ndataset = \"sample\"\nfamilies = [\"math\"]\nlimit = 1\nswitch_points = [\"middle\"]\ndirections = [\"escalation\"]\nretry_budget_secs = 60\nconcurrency = 4\n{}{}[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n",
        model("lc"),
        model("hc")
    )
}

async fn run(
    out: &Path,
    text: &str,
    resume: bool,
    timeout: Duration,
    max_cost: Option<Cost>,
) -> Result<RunSummary, String> {
    let spec = ExperimentSpec::parse("exp.toml", text).map_err(|e| format!("{e:#}"))?;
    let mut o = RunOptions::new(out, out, text);
    o.resume = resume;
    o.max_cost = max_cost;
    o.providers = vec![Arc::new(HttpProviders::new(timeout))];
    let runner = Runner::prepare(spec, o)
        .await
        .map_err(|e| format!("{e:#}"))?;
    runner.run().await.map_err(|e| format!("{e:#}"))
}

fn spend(out: &Path) -> Spend {
    Reader::open(&out.join("results.sqlite"))
        .unwrap()
        .spend()
        .unwrap()
}

/// Every third request's 200 body fails as `failing` says; the others are whole.
async fn a_failing_body_is_a_billed_attempt(failing: fn() -> Reply) {
    let server = Hostile::start(move |n, _| if n % 3 == 1 { failing() } else { ok() }).await;
    let dir = tempfile::tempdir().unwrap();
    let text = experiment("bodies", &server.base_url, "unusable_retries = 2");
    let started = Instant::now();
    let summary = run(dir.path(), &text, false, Duration::from_millis(800), None)
        .await
        .unwrap();
    let s = spend(dir.path());
    let answered = server.answered();
    eprintln!(
        "answered {answered}, stored calls {} + attempts {}, paid {}, in {:?}",
        s.billed_attempts - s.unusable_attempts,
        s.unusable_attempts,
        s.paid,
        started.elapsed()
    );
    assert!(s.unusable_attempts > 0, "some bodies failed: {s:?}");
    assert_eq!(
        s.billed_attempts, answered,
        "every answered request is a stored call or a stored attempt: {s:?}"
    );
    // each failed body has no usage, and is priced at its call's bound, not at $0,
    // which the spend line marks as an estimate
    assert_eq!(s.unknown_usage_attempts, s.unusable_attempts);
    assert_eq!(s.estimated_attempts, s.unusable_attempts);
    assert!(s.estimated > Cost::ZERO && s.estimated < s.paid);
    let calls_paid: i64 = {
        let r = Reader::open(&summary.store_path).unwrap();
        r.episodes()
            .unwrap()
            .iter()
            .flat_map(|e| r.calls(e.id).unwrap())
            .map(|c| c.call.cost.0)
            .sum()
    };
    let per_attempt = (s.paid.0 - calls_paid) / s.unusable_attempts as i64;
    // the bound of one attempt: more than the 25 tokens a whole reply bills
    assert!(
        per_attempt > 100 * 1_200_000,
        "an unusable attempt counts its bound: {per_attempt} pico-USD"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_a_cut_200_body_is_a_billed_attempt() {
    a_failing_body_is_a_billed_attempt(|| Reply::Cut(completion("cut", "20", "5"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_a_slow_loris_200_body_is_a_billed_attempt() {
    a_failing_body_is_a_billed_attempt(|| Reply::Slow(completion("slow", "20", "5"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_an_endless_200_body_is_a_billed_attempt() {
    a_failing_body_is_a_billed_attempt(|| Reply::Endless).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_extra_tools_count_toward_the_cap() {
    // the server bills one input token per byte of the body it received: the most a
    // byte-level tokenizer can
    let server = Hostile::start(|_, body| {
        Reply::Whole(completion(
            "The answer is 42.",
            &body.len().to_string(),
            "5",
        ))
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let tools = format!(
        "[models.lc.extra]\ntools = [{{ type = \"function\", function = {{ name = \"f\", description = \"{}\" }} }}]\n",
        "d".repeat(60_000)
    );
    let text = experiment("tools", &server.base_url, "unusable_retries = 0")
        .replace("[models.hc]", &format!("{tools}[models.hc]"));
    let cap = Cost::from_usd(0.03);
    let summary = run(dir.path(), &text, false, Duration::from_secs(10), Some(cap))
        .await
        .unwrap();
    let s = spend(dir.path());
    eprintln!(
        "paid {} over {} answered requests, cap {cap}",
        s.paid,
        server.answered()
    );
    assert!(server.answered() > 0, "calls that fit the cap were made");
    assert_eq!(s.billed_attempts, server.answered());
    assert!(s.paid <= cap, "paid {} against a cap of {cap}", s.paid);
    assert!(summary.paid_total <= cap);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_hostile_usage_numbers_leave_the_store_readable() {
    let server = Hostile::start(|n, _| match n % 4 {
        1 => Reply::Whole(completion("max", "20", "18446744073709551615")),
        2 => Reply::Whole(completion("huge", "400000000000", "5")),
        3 => Reply::Whole(completion("negative", "20", "-1")),
        _ => ok(),
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let text = experiment("usage", &server.base_url, "unusable_retries = 3");
    let first = run(dir.path(), &text, false, Duration::from_secs(10), None).await;
    assert!(first.is_ok(), "{first:?}");
    let resumed = run(dir.path(), &text, true, Duration::from_secs(10), None).await;
    assert!(resumed.is_ok(), "{resumed:?}");
    let s = spend(dir.path());
    assert_eq!(s.billed_attempts, server.answered());
    assert!(s.unusable_attempts > 0 && s.unknown_usage_attempts == s.unusable_attempts);
    // the paid sum is finite and what a few dozen small calls can cost
    assert!(s.paid > Cost::ZERO && s.paid < Cost::from_usd(1.0), "{s:?}");
    let input = baton_runner::report_input(&dir.path().join("results.sqlite"), None);
    assert!(input.is_ok(), "{:?}", input.err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_a_short_key_leaves_every_reply_as_sent_and_a_long_one_is_redacted() {
    const LONG: &str = "sk-m3-LONGKEY-0123456789";
    const REPLY: &str = "The answer is 1235, not redacted: e = mc^2 and 1 + 1 = 2.";
    let escaped: String = LONG
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    let server = {
        let escaped = escaped.clone();
        Hostile::start(move |n, _| {
            if n % 3 == 1 {
                // an unusable 200 that echoes the key, `\u`-escaped
                Reply::Whole(format!(r#"{{"error_echo":"{escaped}","usage":{{"prompt_tokens":3,"completion_tokens":1}}}}"#))
            } else {
                Reply::Whole(completion(REPLY, "20", "5"))
            }
        })
        .await
    };
    for (var, key) in [("BATON_IT_M3_SHORT", "e"), ("BATON_IT_M3_LONG", LONG)] {
        fake_key(var, key);
        let dir = tempfile::tempdir().unwrap();
        let text = experiment(
            "keys",
            &server.base_url,
            &format!("api_key_env = \"{var}\"\nunusable_retries = 2"),
        );
        run(dir.path(), &text, false, Duration::from_secs(10), None)
            .await
            .unwrap();
        let r = Reader::open(&dir.path().join("results.sqlite")).unwrap();
        let mut n = 0;
        for e in r.episodes().unwrap() {
            for c in r.calls(e.id).unwrap() {
                assert_eq!(c.call.response_text, REPLY, "key {key:?}");
                n += 1;
            }
        }
        assert!(n > 0);
        // the escaped key is nowhere in the store's files
        let mut bytes = Vec::new();
        for f in ["results.sqlite", "results.sqlite-wal"] {
            bytes.extend(std::fs::read(dir.path().join(f)).unwrap_or_default());
        }
        let text = String::from_utf8_lossy(&bytes);
        if key == LONG {
            assert!(r.spend().unwrap().unusable_attempts > 0);
            assert!(!text.contains(&escaped) && !text.contains(LONG));
            assert!(
                !text.contains(&escaped[..60]),
                "no prefix of the escaped key"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_32_a_full_disk_with_large_replies_loses_none_and_sends_nothing_after() {
    let mount_dir = tempfile::tempdir().unwrap();
    let Some(fs) = baton_fixture::Tmpfs::mount(mount_dir.path(), "40m") else {
        baton_fixture::skip("cannot mount a tmpfs here (not root)");
        return;
    };
    let big = "x".repeat(200_000);
    let server = Hostile::start(move |_, _| Reply::Whole(completion(&big, "20", "100"))).await;
    let out = fs.mnt.join("out");
    let text = experiment("full", &server.base_url, "");
    // the spool's reserve is taken at the store's first open; leave the database a
    // little room past it, so that it fills part-way through the run
    let filler = fs.mnt.join("filler");
    let fill = fs.available().saturating_sub(2_600_000);
    std::fs::write(&filler, vec![7u8; fill as usize]).unwrap();
    let first = run(&out, &text, false, Duration::from_secs(10), None).await;
    let stopped = Instant::now();
    let answered_then = server.answered();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after_stop = server
        .times
        .lock()
        .unwrap()
        .iter()
        .filter(|t| **t > stopped)
        .count();
    eprintln!("first run: {first:?}; {answered_then} answered");
    assert!(
        first
            .as_ref()
            .map_or(true, |s| s.count(EpisodeStatus::Incomplete) > 0),
        "the disk filled during the first run"
    );
    assert_eq!(after_stop, 0, "no request once the run has returned");
    // no more requests than the stored ones plus what can be in flight when the store
    // stops: a call per task group and model (4 at most here), never a retry
    let committed = Reader::open(&out.join("results.sqlite"))
        .map(|r| r.spend().unwrap().billed_attempts)
        .unwrap_or(0);
    assert!(
        answered_then <= committed + 8,
        "{answered_then} answered, {committed} committed before the spool"
    );

    std::fs::remove_file(&filler).unwrap();
    let resumed = run(&out, &text, true, Duration::from_secs(10), None).await;
    assert!(resumed.is_ok(), "{resumed:?}");
    let s = spend(&out);
    assert!(
        server.answered() > answered_then,
        "the resume made the rest"
    );
    assert_eq!(
        s.billed_attempts,
        server.answered(),
        "every answered reply is stored (a call or an attempt): {s:?}"
    );
}
