//! Store size per 1,000 calls, in the version-1 layout (each call keeps its whole
//! request) and the current one (messages stored once), on the same calls.
//!
//! `cargo bench -p baton-store --bench store_size` measures synthetic agent-like
//! episodes of 50, 100 and 150 steps (a 2 kB system prompt, ~2 kB observations,
//! ~0.6 kB replies), showing how each layout grows with the episode, and the time one
//! call takes to commit. With `BATON_BENCH_STORE=path/to/results.sqlite` it also
//! re-writes every call of that store (e.g. `results/demo/results.sqlite` after
//! `baton demo`) both ways.
//!
//! Then the cost of durability: one small commit under `synchronous=FULL` (what the
//! store uses) and `NORMAL`, on this disk, and the time per call when 64 calls are in
//! flight at once, as in a run, where the writer's group commit shares one wait for the
//! disk among them.
#![allow(clippy::print_stdout)]

#[path = "../tests/it/v1.rs"]
mod v1;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use baton_store::{
    EpisodeInit, EpisodeRow, ExperimentMeta, NewCall, Outcome, Reader, Store, TaskMeta,
};
use baton_types::{Cost, Family, Message, Phase, Usage};
use rusqlite::Connection;
use sha2::{Digest, Sha256};

/// Everything a store holds, in write order.
struct Contents {
    meta: ExperimentMeta,
    tasks: Vec<TaskMeta>,
    episodes: Vec<(EpisodeRow, Vec<NewCall>)>,
}

impl Contents {
    fn calls(&self) -> usize {
        self.episodes.iter().map(|(_, c)| c.len()).sum()
    }
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

/// Write `c` through the current [`Store`], one commit per call as a run does; returns
/// the file size and the mean time per call.
fn write_current(c: &Contents, path: &Path) -> (u64, Duration) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let spent = rt.block_on(async {
        let store = Store::open(path).unwrap();
        store.init_experiment(c.meta.clone()).await.unwrap();
        for t in &c.tasks {
            store.upsert_task(t.clone()).await.unwrap();
        }
        let mut ids = HashMap::new();
        let mut spent = Duration::ZERO;
        for (e, calls) in &c.episodes {
            let mut init = e.init.clone();
            init.forked_from = init.forked_from.map(|f| ids[&f]);
            let (row, _) = store.episode(init).await.unwrap();
            ids.insert(e.id, row.id);
            for call in calls {
                let mut call = call.clone();
                call.episode_id = row.id;
                let started = Instant::now();
                store.record_call(call).await.unwrap();
                spent += started.elapsed();
            }
            store.finish(row.id, e.outcome.clone()).await.unwrap();
        }
        spent
    });
    (file_size(path), spent / c.calls().max(1) as u32)
}

/// Write every call of `c` with `in_flight` of them sent to the store at once; returns
/// the mean time per call.
fn write_in_flight(c: &Contents, path: &Path, in_flight: usize) -> Duration {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Store::open(path).unwrap();
        store.init_experiment(c.meta.clone()).await.unwrap();
        for t in &c.tasks {
            store.upsert_task(t.clone()).await.unwrap();
        }
        let mut calls = Vec::new();
        for (e, episode_calls) in &c.episodes {
            let mut init = e.init.clone();
            init.forked_from = None;
            let (row, _) = store.episode(init).await.unwrap();
            calls.extend(episode_calls.iter().cloned().map(|mut call| {
                call.episode_id = row.id;
                call
            }));
        }
        let started = Instant::now();
        for chunk in calls.chunks(in_flight) {
            let pending: Vec<_> = chunk
                .iter()
                .cloned()
                .map(|call| {
                    let store = store.clone();
                    tokio::spawn(async move { store.record_call(call).await })
                })
                .collect();
            for p in pending {
                p.await.unwrap().unwrap();
            }
        }
        started.elapsed() / calls.len().max(1) as u32
    })
}

/// Mean time of one single-row commit (2 kB) in WAL mode under `synchronous`.
fn commit_time(dir: &Path, synchronous: &str) -> Duration {
    let db = Connection::open(dir.join(format!("sync-{synchronous}.sqlite"))).unwrap();
    db.pragma_update(None, "journal_mode", "WAL").unwrap();
    db.pragma_update(None, "synchronous", synchronous).unwrap();
    db.execute_batch("CREATE TABLE t (x TEXT)").unwrap();
    let row = "x".repeat(2000);
    let n = 1000;
    let started = Instant::now();
    for _ in 0..n {
        db.execute("INSERT INTO t VALUES (?1)", [&row]).unwrap();
    }
    started.elapsed() / n
}

/// The cost of `synchronous=FULL`, and what the group commit wins back.
fn durability(c: &Contents) {
    let dir = tempfile::tempdir().unwrap();
    let full = commit_time(dir.path(), "FULL");
    let normal = commit_time(dir.path(), "NORMAL");
    println!(
        "one commit: synchronous=FULL {:.3} ms, NORMAL {:.3} ms",
        full.as_secs_f64() * 1e3,
        normal.as_secs_f64() * 1e3
    );
    for in_flight in [1, 64] {
        let per_call = write_in_flight(
            c,
            &dir.path().join(format!("in-flight-{in_flight}.sqlite")),
            in_flight,
        );
        println!(
            "store, {in_flight:>2} calls in flight: {:.3} ms/call ({} calls)",
            per_call.as_secs_f64() * 1e3,
            c.calls()
        );
    }
}

/// Write `c` in the version-1 layout.
fn write_v1(c: &Contents, path: &Path) -> u64 {
    let mut db = Connection::open(path).unwrap();
    v1::create(&db);
    let tx = db.transaction().unwrap();
    v1::insert_experiment(&tx, &c.meta, "2026-12-01T00:00:00.000Z");
    for t in &c.tasks {
        v1::insert_task(&tx, t);
    }
    for (e, calls) in &c.episodes {
        v1::insert_episode(&tx, e.id, &e.init, &e.outcome, &e.updated_at);
        for call in calls {
            let mut call = call.clone();
            call.episode_id = e.id;
            v1::insert_call(&tx, &call, "2026-12-01T00:00:00.000Z");
        }
    }
    tx.commit().unwrap();
    drop(db);
    file_size(path)
}

/// Both layouts on `c`; prints one line.
fn compare(label: &str, c: &Contents) {
    let dir = tempfile::tempdir().unwrap();
    let old = write_v1(c, &dir.path().join("v1.sqlite"));
    let (new, per_call) = write_current(c, &dir.path().join("v2.sqlite"));
    let per_k = |bytes: u64| bytes as f64 / c.calls() as f64 * 1000.0 / 1e6;
    println!(
        "{label:<28} {:>7} calls  v1 {:>9.2} MB/1k calls  now {:>7.2} MB/1k calls  ({:.1}x smaller)  commit {:.2} ms/call",
        c.calls(),
        per_k(old),
        per_k(new),
        old as f64 / new as f64,
        per_call.as_secs_f64() * 1e3
    );
}

fn read_store(path: &Path) -> Contents {
    let reader = Reader::open(path).unwrap();
    let meta = reader.experiment().unwrap().meta;
    let tasks = reader.tasks().unwrap();
    let episodes = reader
        .episodes()
        .unwrap()
        .into_iter()
        .map(|e| {
            let calls = reader.calls(e.id).unwrap();
            (e, calls.into_iter().map(|r| r.call).collect())
        })
        .collect();
    Contents {
        meta,
        tasks,
        episodes,
    }
}

/// Deterministic filler text of about `len` bytes.
fn text(seed: u64, len: usize) -> String {
    let words = [
        "ls", "-la", "src/", "def", "return", "error:", "line", "42", "ok", "cat",
    ];
    let mut out = String::with_capacity(len + 8);
    let mut x = seed;
    while out.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.push_str(words[(x >> 60) as usize % words.len()]);
        out.push(if x & 7 == 0 { '\n' } else { ' ' });
    }
    out
}

/// `episodes` agent-like episodes of `steps` calls each.
fn synthetic(episodes: usize, steps: usize) -> Contents {
    let meta = ExperimentMeta {
        name: "bench".into(),
        spec_toml: String::new(),
        spec_sha256: "0".repeat(64),
        price_card_sha256: "0".repeat(64),
        eval_profile: "lic".into(),
        eval_version: "0".into(),
        baton_version: "0".into(),
        git_revision: None,
        simulated: true,
        kind: baton_types::ExperimentKind::Chat,
    };
    let task = TaskMeta {
        task_id: "agent/1".into(),
        family: Family::Code,
        n_turns: steps as u32,
        schedule_sha256: "0".repeat(64),
        sample_json: "{}".into(),
    };
    let mut out = Vec::new();
    for ep in 0..episodes {
        let init = EpisodeInit {
            task_id: task.task_id.clone(),
            cell_key: format!("single(m{ep})"),
            cell_json: "{}".into(),
            replicate: 0,
            seed: ep as u64,
            k: None,
            forked_from: None,
            schedule_sha256: task.schedule_sha256.clone(),
        };
        let mut messages = vec![Message::system(text(1, 2000))];
        let mut calls = Vec::new();
        for step in 1..=steps {
            messages.push(Message::user(text((ep * 1000 + step) as u64, 2000)));
            let request = serde_json::to_string(&serde_json::json!({
                "model": "m", "messages": messages,
                "config": {"temperature": 1.0, "max_tokens": 1000, "reasoning_effort": null},
                "seed": ep,
            }))
            .unwrap();
            let reply = text((ep * 1000 + step) as u64 + 7, 600);
            calls.push(NewCall {
                episode_id: 0,
                turn: step as u32,
                phase: Phase::Prefix,
                model: "m".into(),
                model_served: "m-1".into(),
                request_sha256: hex::encode(Sha256::digest(request.as_bytes())),
                request_json: request,
                response_text: reply.clone(),
                raw_response: None,
                usage: Usage {
                    uncached_in: 1000,
                    output: 150,
                    ..Usage::default()
                },
                cost: Cost(1_000_000),
                unpriced: None,
                latency_ms: 900,
                attempts: 1,
                finish_reason: Some("stop".into()),
                batch_id: None,
                batch_item: None,
                cost_direct: None,
            });
            messages.push(Message::assistant(reply));
        }
        let row = EpisodeRow {
            id: ep as i64 + 1,
            family: Family::Code,
            n_turns: steps as u32,
            init,
            outcome: Outcome::unfinished(),
            updated_at: "2026-12-01T00:00:00.000Z".into(),
        };
        out.push((row, calls));
    }
    Contents {
        meta,
        tasks: vec![task],
        episodes: out,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if let Some(path) = std::env::var_os("BATON_BENCH_STORE") {
        let path = Path::new(&path);
        compare(&format!("{}", path.display()), &read_store(path));
    }
    for steps in [50, 100, 150] {
        compare(
            &format!("agent-like, {steps} steps x 4"),
            &synthetic(4, steps),
        );
    }
    durability(&synthetic(64, 10));
}
