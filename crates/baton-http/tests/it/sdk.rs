//! The official Python SDKs (`openai`, `anthropic`, pinned in `.ci/python/requirements.txt`)
//! against the simulated server: every reply validates strictly with the SDKs' own models on
//! all three APIs (plain, cached, reasoning), `stream: true` is a 400 the SDKs raise as
//! `BadRequestError`, and each injected fault raises the SDK's matching exception. The checks
//! are in `tests/sdk/check_sim_server.py`; this test starts the servers (one clean, one per
//! fault kind at rate 1) and runs it on the interop venv.

use std::path::PathBuf;
use std::process::Command;

use baton_http::FaultKind;
use serde_json::json;

use crate::server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdks_accept_every_reply_and_map_every_fault() {
    let Some(venv) = baton_fixture::interop_venv() else {
        return;
    };
    let clean = server(|_| {}).await;
    let mut faulty = Vec::new();
    for kind in FaultKind::ALL {
        let s = server(|c| {
            c.fault_rate = 1.0;
            c.faults = vec![kind];
            c.stall_ms = 10_000;
        })
        .await;
        faulty.push((kind, s));
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let faults: serde_json::Map<String, serde_json::Value> = faulty
        .iter()
        .map(|(kind, s)| (kind.name().to_string(), json!(s.base_url())))
        .collect();
    let config = json!({
        "base": clean.base_url(),
        "faults": faults,
        "sample": root.join("datasets/sample/sample.json"),
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let config_path = dir.path().join("servers.json");
    std::fs::write(&config_path, config.to_string()).expect("write the server list");
    let script = root.join("crates/baton-http/tests/sdk/check_sim_server.py");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(venv.join("bin/python"))
            .arg(script)
            .arg(config_path)
            .output()
    })
    .await
    .expect("the script thread")
    .expect("the interop python starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the SDK checks failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(stdout.contains("\n0 failed"), "{stdout}");
    for (_, s) in faulty {
        s.shutdown().await.expect("shutdown");
    }
    clean.shutdown().await.expect("shutdown");
}
