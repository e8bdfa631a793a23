//! Integration tests for baton-store, on real SQLite files in temp folders.

mod agent;
mod batch;
mod checksum;
mod decode;
mod diskfull;
mod foreign;
mod killed;
mod migrate;
mod money3;
mod refuse;
mod roundtrip;
pub mod v1;

use std::path::PathBuf;

use baton_store::{EpisodeInit, ExperimentMeta, NewCall, Store, TaskMeta};
use baton_types::{Cost, Family, Message, Phase, Usage};
use sha2::{Digest, Sha256};

/// A temp folder with a store path in it.
pub struct TestContext {
    pub dir: tempfile::TempDir,
}

impl Default for TestContext {
    fn default() -> Self {
        TestContext {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }
}

impl TestContext {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().join("results.sqlite")
    }

    /// A store with the experiment and task `t1` recorded.
    pub async fn store(&self) -> Store {
        let store = Store::open(&self.path()).expect("store opens");
        store.init_experiment(meta()).await.expect("experiment");
        store.upsert_task(task("t1")).await.expect("task");
        store
    }
}

pub fn meta() -> ExperimentMeta {
    ExperimentMeta {
        name: "it".into(),
        spec_toml: "name = \"it\"\n".into(),
        spec_sha256: "a".repeat(64),
        price_card_sha256: "b".repeat(64),
        eval_profile: "lic".into(),
        eval_version: "0.1.0".into(),
        baton_version: "0.1.0".into(),
        git_revision: Some("c".repeat(40)),
        simulated: true,
        kind: baton_types::ExperimentKind::Chat,
    }
}

pub fn task(id: &str) -> TaskMeta {
    TaskMeta {
        task_id: id.into(),
        family: Family::Math,
        n_turns: 3,
        schedule_sha256: "d".repeat(64),
        sample_json: "{\"answer\":\"2 + 4 = 6\"}".into(),
    }
}

pub fn init(task_id: &str, cell_key: &str) -> EpisodeInit {
    EpisodeInit {
        task_id: task_id.into(),
        cell_key: cell_key.into(),
        cell_json: format!("{{\"kind\":\"single\",\"model\":\"{cell_key}\"}}"),
        replicate: 1,
        seed: u64::MAX >> 1,
        k: None,
        forked_from: None,
        schedule_sha256: "d".repeat(64),
    }
}

/// A request as baton's providers serialize one (compact JSON, messages in place).
pub fn request_json(messages: &[Message], seed: u64) -> String {
    serde_json::to_string(&serde_json::json!({
        "model": "lc",
        "messages": messages,
        "config": {"temperature": 0.7, "max_tokens": 1000, "reasoning_effort": null},
        "seed": seed,
    }))
    .expect("serializes")
}

pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// A call of `episode_id` at `turn` with this request text; every field set.
pub fn call(episode_id: i64, turn: u32, phase: Phase, request: String) -> NewCall {
    NewCall {
        episode_id,
        turn,
        phase,
        model: "lc".into(),
        model_served: "sim/lc".into(),
        request_sha256: sha256_hex(&request),
        request_json: request,
        response_text: format!("reply {turn} ({})", phase.as_str()),
        raw_response: Some(format!("{{\"id\":\"r{turn}\"}}")),
        usage: Usage {
            uncached_in: 11,
            cache_read: 12,
            cache_write_5m: 13,
            cache_write_1h: 14,
            output: 15,
            reasoning: 6,
        },
        cost: Cost(1_234_567 + i64::from(turn)),
        unpriced: None,
        latency_ms: 250,
        attempts: 2,
        finish_reason: Some("stop".into()),
        // a direct call, as every older schema stores it (`batch::` covers batched ones)
        batch_id: None,
        batch_item: None,
        cost_direct: None,
    }
}

/// The conversation after `turns` user turns, each answered but the last.
pub fn conversation(turns: usize) -> Vec<Message> {
    let mut m = vec![Message::system("You are helpful.")];
    for t in 1..=turns {
        m.push(Message::user(format!("shard {t}: \"quoted\" and \u{e9}\n")));
        if t < turns {
            m.push(Message::assistant(format!("reply {t}")));
        }
    }
    m
}
