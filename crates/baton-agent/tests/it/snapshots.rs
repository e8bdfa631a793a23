//! The per-episode snapshot cap: an agent writing megabytes of random data per step
//! ends with exit `snapshot_limit`, and the snapshot store stays under the cap.
//! `BATON_SNAPSHOT_TEST_MB` sets the megabytes per step (default 1; e.g. 500 to measure
//! the issue's case, with about 3.5 GB of free disk).

use std::sync::Arc;
use std::time::Duration;

use baton_agent::{AgentConfig, AgentExit, AgentLoop, AgentState, Protocol, start_task_env};
use baton_env::DirBlobStore;
use baton_http::{HttpProvider, ServedProvider, SimServerConfig, Wire, serve};
use baton_models::testing::ScriptedProvider;
use baton_models::{Model, PriceCard};
use baton_types::ToolCall;

use crate::{sample, scorer};

fn dir_bytes(dir: &std::path::Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let md = e.metadata().unwrap();
        total += if md.is_dir() {
            dir_bytes(&e.path())
        } else {
            md.len()
        };
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_random_files_per_step_stay_under_the_episode_snapshot_cap() {
    let Some(scorer) = scorer() else { return };
    let step: u64 = std::env::var("BATON_SNAPSHOT_TEST_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        << 20;
    let started = std::time::Instant::now();
    let mut provider = ScriptedProvider::new();
    for i in 0..10 {
        let mut reply = ScriptedProvider::reply("Write more data.");
        reply.finish_reason = Some("tool_calls".into());
        reply.tool_calls = vec![ToolCall {
            id: format!("call_{i}"),
            name: "bash".into(),
            arguments: format!(r#"{{"command": "head -c {step} /dev/urandom > data{i}.bin"}}"#),
        }];
        provider = provider.then_ok(reply);
    }
    let mut config = SimServerConfig::new(Vec::new());
    config
        .providers
        .insert("scripted".into(), ServedProvider(Arc::new(provider)));
    let server = serve(config).await.unwrap();
    let http: Arc<dyn baton_models::Provider> = Arc::new(HttpProvider::new(
        Wire::from_kind("openai").unwrap(),
        &server.base_url(),
        None,
        reqwest::Client::new(),
        Duration::from_secs(30),
        true,
    ));
    let price = PriceCard::embedded().get("sim/hc").unwrap();
    let model = Model::new("scripted", http, "scripted", "sim/hc", price, 1);

    let task = sample("chunked");
    let cfg = AgentConfig {
        protocol: Protocol::ToolCalls,
        ..AgentConfig::default()
    };
    let cap = 3 * step + step / 2;
    let mut env_config = scorer.env.clone();
    env_config.limits.episode_snapshot_bytes = Some(cap);
    let blob_dir = tempfile::tempdir().unwrap();
    let blobs = DirBlobStore::new(blob_dir.path()).unwrap();
    let mut env = Some(start_task_env(&task, &env_config).unwrap());
    let mut state = AgentState::start(&cfg, &task).unwrap();
    let lp = AgentLoop {
        config: &cfg,
        task_id: &task.id,
        seed: None,
        blobs: Some(&blobs),
        prior_unusable: 0,
    };
    let out = lp
        .run(&model, &mut env, &mut state, &mut baton_agent::NoSink)
        .await
        .unwrap();
    env.take().unwrap().close().unwrap();
    server.shutdown().await.unwrap();

    assert_eq!(out.exit, AgentExit::SnapshotLimit, "{out:?}");
    assert!(
        out.error
            .as_deref()
            .unwrap()
            .contains("episode_snapshot_bytes"),
        "{out:?}"
    );
    // the task's tree and three random files fit; the fourth does not
    assert_eq!(out.calls, 4, "{out:?}");
    let stored = dir_bytes(blob_dir.path());
    assert!(
        stored <= cap,
        "the store holds {stored} bytes, the cap is {cap}"
    );
    assert!(
        stored >= 3 * step,
        "three steps' data were stored: {stored}"
    );
    assert!(state.snapshot_bytes <= cap && state.snapshot_bytes >= 3 * step);
    let line = format!(
        "\nsnapshot cap: {} MB per step, cap {cap} bytes: exit {:?} after {} calls, {stored} bytes stored, {:.1} s\n",
        step >> 20,
        out.exit,
        out.calls,
        started.elapsed().as_secs_f64()
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
}
