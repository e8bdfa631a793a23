//! baton through a real LiteLLM proxy (1.110.2, from the interop venv that `.ci/python-env`
//! installs): the proxy routes an OpenAI-style model to `baton sim-server`'s Chat Completions
//! route and an Anthropic-style model to its Messages route, and baton's `openai-compatible`
//! provider talks to the proxy. The proxy runs as configured by a user who has not set
//! `drop_params`. Every episode must be scored, and the usage baton stored must equal what the
//! simulated server sent, token class by token class, after LiteLLM's translation.

use std::io::Read as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use baton_http::{SimServerConfig, serve};
use baton_types::Usage;
use rusqlite::Connection;

use crate::support::free_port;
use crate::{baton, stderr, stdout};

/// The proxy's admin key, which clients send as their API key.
const MASTER_KEY: &str = "sk-baton-litellm-interop-0123456789abcdef";
/// The variable the experiment names for it.
const KEY_VAR: &str = "BATON_IT_LITELLM_KEY";

/// The proxy process, killed when dropped (a failing assertion must not leave it running).
struct Proxy {
    child: Child,
    log: std::path::PathBuf,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proxy {
    fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = std::fs::File::open(&self.log) {
            let _ = f.read_to_string(&mut text);
        }
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

/// Start the proxy on `port` with `config` and wait until it answers its liveness probe.
fn start_proxy(venv: &Path, dir: &Path, config: &str, port: u16) -> Proxy {
    let config_path = dir.join("litellm.yaml");
    std::fs::write(&config_path, config).expect("write the proxy config");
    let log = dir.join("litellm.log");
    let out = std::fs::File::create(&log).expect("proxy log");
    let child = Command::new(venv.join("bin/litellm"))
        .args(["--config"])
        .arg(&config_path)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .env("LITELLM_MASTER_KEY", MASTER_KEY)
        // The price map ships in the wheel; without this the proxy tries GitHub first.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("LITELLM_TELEMETRY", "False")
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .stdin(Stdio::null())
        .stdout(out.try_clone().expect("log handle"))
        .stderr(out)
        .spawn()
        .expect("the LiteLLM proxy starts");
    let mut proxy = Proxy { child, log };
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        if let Ok(Some(status)) = proxy.child.try_wait() {
            panic!("the LiteLLM proxy exited ({status}):\n{}", proxy.log());
        }
        if health(port) {
            return proxy;
        }
        assert!(
            Instant::now() < deadline,
            "the LiteLLM proxy did not come up in 240 s:\n{}",
            proxy.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Whether `GET /health/liveliness` answers 200 (a raw request: the test needs no client).
fn health(port: u16) -> bool {
    use std::io::Write as _;
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let request = format!(
        "GET /health/liveliness HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    );
    if s.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply.starts_with("HTTP/1.1 200")
}

fn stored_usage(db: &Path) -> (u64, Usage) {
    let c = Connection::open(db).expect("open the store");
    c.query_row(
        "SELECT count(*), coalesce(sum(uncached_in), 0), coalesce(sum(cache_read), 0),
                coalesce(sum(cache_write_5m), 0), coalesce(sum(cache_write_1h), 0),
                coalesce(sum(output), 0), coalesce(sum(reasoning), 0) FROM calls",
        [],
        |r| {
            Ok((
                r.get::<_, i64>(0)? as u64,
                Usage {
                    uncached_in: r.get::<_, i64>(1)? as u64,
                    cache_read: r.get::<_, i64>(2)? as u64,
                    cache_write_5m: r.get::<_, i64>(3)? as u64,
                    cache_write_1h: r.get::<_, i64>(4)? as u64,
                    output: r.get::<_, i64>(5)? as u64,
                    reasoning: r.get::<_, i64>(6)? as u64,
                },
            ))
        },
    )
    .expect("sum the stored usage")
}

#[test]
fn a_run_through_a_litellm_proxy_scores_every_episode_with_the_usage_sim_server_sent() {
    let Some(venv) = baton_fixture::interop_venv() else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime for the simulated server");
    let sim = runtime
        .block_on(serve(SimServerConfig::new(
            baton_data::sample_dataset().tasks,
        )))
        .expect("the simulated server starts");
    let sim_addr = sim.addr();
    let dir = tempfile::tempdir().expect("temp dir");
    let port = free_port();
    // An Anthropic-backed and an OpenAI-backed model, as a user's proxy config names them
    // (LiteLLM appends `/v1/messages` to an Anthropic `api_base`).
    let config = format!(
        r#"model_list:
  - model_name: claude-sim
    litellm_params:
      model: anthropic/lc
      api_base: http://{sim_addr}
      api_key: sk-ant-interop-upstream
  - model_name: gpt-sim
    litellm_params:
      model: openai/hc
      api_base: http://{sim_addr}/v1
      api_key: sk-interop-upstream
general_settings:
  master_key: {MASTER_KEY}
"#
    );
    let proxy = start_proxy(&venv, dir.path(), &config, port);
    let experiment = format!(
        r#"
name = "litellm-interop"
dataset = "sample"
families = ["math", "actions"]
limit = 1
seed = 3
concurrency = 2
switch_points = ["early"]

[models.claude]
model = "openai-compatible/claude-sim"
base_url = "http://127.0.0.1:{port}/v1"
api_key_env = "{KEY_VAR}"
price = "sim/lc"

[models.gpt]
model = "openai-compatible/gpt-sim"
base_url = "http://127.0.0.1:{port}/v1"
api_key_env = "{KEY_VAR}"
price = "sim/hc"

[[pairs]]
low = "claude"
high = "gpt"
"#
    );
    let spec = dir.path().join("litellm.toml");
    std::fs::write(&spec, experiment).expect("write the experiment");
    let out_dir = dir.path().join("out");
    let run = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("run")
        .arg(&spec)
        .arg("--out")
        .arg(&out_dir)
        .env(KEY_VAR, MASTER_KEY)
        .env_remove("BATON_LOG")
        .current_dir(dir.path())
        .output()
        .expect("baton runs");
    assert!(
        run.status.success(),
        "the run through LiteLLM failed:\n{}\n{}\nproxy log:\n{}",
        stdout(&run),
        stderr(&run),
        proxy.log()
    );

    let db = out_dir.join("results.sqlite");
    let c = Connection::open(&db).expect("open the store");
    let statuses: Vec<(String, i64, i64)> = c
        .prepare(
            "SELECT status, count(*), count(score) FROM episodes GROUP BY status ORDER BY status",
        )
        .and_then(|mut s| {
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<Result<_, _>>()
        })
        .expect("episode statuses");
    assert!(!statuses.is_empty(), "no episodes stored");
    for (status, n, scored) in &statuses {
        assert_eq!(
            status,
            "scored",
            "{n} episodes ended {status}: {statuses:?}\nproxy log:\n{}",
            proxy.log()
        );
        assert_eq!(n, scored, "every scored episode has a score");
    }
    // LiteLLM answers with its own model-group name (`claude-sim`), not the served
    // model's, so the store cannot tell from `model_served` that sim-server answered.
    let served: Vec<String> = c
        .prepare("SELECT DISTINCT model_served FROM calls ORDER BY 1")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect::<Result<_, _>>())
        .expect("served models");
    assert_eq!(served, ["claude-sim", "gpt-sim"]);

    let sent = sim.stats();
    let (calls, stored) = stored_usage(&db);
    assert_eq!(
        calls, sent.answered,
        "every reply sim-server sent is one stored call"
    );
    assert_eq!(
        stored, sent.sent,
        "the stored usage is what sim-server sent"
    );
    let report = baton(
        dir.path(),
        &[
            "report",
            out_dir.to_str().expect("utf-8"),
            "--format",
            "json",
        ],
    );
    assert!(report.status.success(), "{}", stderr(&report));
    let json: serde_json::Value = serde_json::from_str(&stdout(&report)).expect("report json");
    assert_eq!(json["spend"]["billed_attempts"], sent.answered);
    drop(proxy);
    runtime.block_on(sim.shutdown()).expect("shutdown");
}
