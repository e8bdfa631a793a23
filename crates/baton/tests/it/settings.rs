//! Settings sent as configured: the exact request bodies a run puts on the wire, read
//! back from `baton sim-server`'s `GET /received`.

use std::process::Command;

use serde_json::Value;

use crate::support::SimServer;
use crate::{stderr, stdout};

/// Run `experiment` (TOML with `{base}` for the server's base URL) against a fresh
/// sim-server and return the bodies it received, by route.
fn bodies_of(experiment: &str) -> Vec<(String, Value)> {
    run_against_sim_server(experiment).0
}

/// [`bodies_of`], and the run's JSON report.
fn run_against_sim_server(experiment: &str) -> (Vec<(String, Value)>, Value) {
    let server = SimServer::start(&[]);
    let dir = tempfile::tempdir().expect("temp dir");
    let spec = dir.path().join("settings.toml");
    std::fs::write(&spec, experiment.replace("{base}", &server.base_url)).expect("write");
    let run = Command::new(env!("CARGO_BIN_EXE_baton"))
        .arg("run")
        .arg(&spec)
        .args(["--quiet", "--out"])
        .arg(dir.path().join("out"))
        .env("BATON_IT_SETTINGS_KEY", "sk-settings-not-a-real-key")
        .env_remove("BATON_LOG")
        .output()
        .expect("baton runs");
    assert!(run.status.success(), "{}\n{}", stdout(&run), stderr(&run));
    let report = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["report", "--format", "json", "--bootstrap", "0"])
        .arg(dir.path().join("out"))
        .output()
        .expect("baton runs");
    assert!(report.status.success(), "{}", stderr(&report));
    let report: Value = serde_json::from_str(&stdout(&report)).expect("JSON");
    let received = server.get("/received");
    let bodies = received
        .as_array()
        .expect("an array")
        .iter()
        .map(|r| (r["route"].as_str().unwrap().to_string(), r["body"].clone()))
        .collect();
    (bodies, report)
}

#[test]
fn the_report_shows_the_cache_read_share_per_cell() {
    let (_, report) = run_against_sim_server(PAPER_LIKE);
    let shares: Vec<f64> = report["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["cell"].is_null())
        .map(|c| {
            c["cache_read_share"]
                .as_f64()
                .expect("a share for every cell")
        })
        .collect();
    assert!(!shares.is_empty());
    // later turns read earlier turns' prompts from sim-server's cache
    assert!(
        shares.iter().all(|s| (0.0..=100.0).contains(s)),
        "{shares:?}"
    );
    assert!(shares.iter().any(|s| *s > 0.0), "{shares:?}");
    for c in report["cells"].as_array().unwrap() {
        assert_eq!(c["n_empty_replies"], 0, "{c}");
    }
}

const PAPER_LIKE: &str = r#"
name = "settings"
dataset = "sample"
families = ["math"]
limit = 1
switch_points = ["middle"]
directions = ["escalation"]

[models.luna]
model = "openai/lc"
base_url = "{base}"
api_key_env = "BATON_IT_SETTINGS_KEY"
price = "sim/lc"
temperature = 0

[models.opus]
model = "anthropic/hc"
base_url = "{base}"
api_key_env = "BATON_IT_SETTINGS_KEY"
price = "sim/hc"
reasoning_effort = "high"

[[pairs]]
low = "luna"
high = "opus"
"#;

/// See: issue 10, "Done when": an Anthropic model with `reasoning_effort = "high"` and
/// no temperature sends no `temperature` and no `seed`, sends the effort and a cap of at
/// least 10,000; an OpenAI model with `temperature = 0` sends exactly that and no seed.
#[test]
fn issue_10_each_request_carries_what_was_configured_and_nothing_else() {
    let bodies = bodies_of(PAPER_LIKE);
    let anthropic: Vec<&Value> = bodies
        .iter()
        .filter(|(r, _)| r == "/v1/messages")
        .map(|(_, b)| b)
        .collect();
    let chat: Vec<&Value> = bodies
        .iter()
        .filter(|(r, _)| r == "/v1/chat/completions")
        .map(|(_, b)| b)
        .collect();
    assert!(!anthropic.is_empty() && !chat.is_empty(), "{bodies:?}");
    for b in &anthropic {
        let keys: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "model",
                "max_tokens",
                "system",
                "messages",
                "output_config",
                "thinking"
            ],
            "{b}"
        );
        assert_eq!(b["model"], "hc");
        assert_eq!(b["output_config"], serde_json::json!({"effort": "high"}));
        assert_eq!(b["thinking"], serde_json::json!({"type": "adaptive"}));
        assert!(b["max_tokens"].as_u64().unwrap() >= 10_000, "{b}");
    }
    for b in &chat {
        let keys: Vec<&str> = b.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "model",
                "messages",
                "n",
                "temperature",
                "max_completion_tokens"
            ],
            "{b}"
        );
        assert_eq!(b["temperature"], 0.0);
        assert_eq!(b["max_completion_tokens"], 1000);
    }
}

#[test]
fn extra_keys_reach_the_body_and_a_seed_only_when_set() {
    let experiment = PAPER_LIKE
        .replace(
            "temperature = 0\n",
            "temperature = 0\nseed = 11\ntop_p = 0.5\nextra = { service_tier = \"flex\" }\n",
        )
        .replace("reasoning_effort = \"high\"\n", "thinking_budget = 2048\n");
    let bodies = bodies_of(&experiment);
    let chat = bodies
        .iter()
        .find(|(r, _)| r == "/v1/chat/completions")
        .map(|(_, b)| b)
        .expect("a chat request");
    assert_eq!(chat["seed"], 11);
    assert_eq!(chat["top_p"], 0.5);
    assert_eq!(chat["service_tier"], "flex");
    let messages = bodies
        .iter()
        .find(|(r, _)| r == "/v1/messages")
        .map(|(_, b)| b)
        .expect("a messages request");
    assert_eq!(
        messages["thinking"],
        serde_json::json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(
        messages["max_tokens"], 10_000,
        "a thinking budget is reasoning"
    );
    assert!(messages.get("output_config").is_none() && messages.get("seed").is_none());
}

#[test]
fn settings_a_provider_refuses_fail_before_the_first_call() {
    for (from, to, says) in [
        (
            "reasoning_effort = \"high\"\n",
            "thinking_budget = 4000\nmax_tokens = 4000\n",
            "must be below max_tokens (4000)",
        ),
        (
            "reasoning_effort = \"high\"\n",
            "thinking_budget = 512\n",
            "below Anthropic's minimum of 1024",
        ),
        (
            "reasoning_effort = \"high\"\n",
            "temperature = 0.2\n",
            "takes no temperature",
        ),
        (
            "reasoning_effort = \"high\"\n",
            "reasoning_effort = \"extreme\"\n",
            "not one of Anthropic's",
        ),
        (
            "temperature = 0\n",
            "extra = { messages = [] }\n",
            "extra.messages would replace",
        ),
    ] {
        let server = SimServer::start(&[]);
        let dir = tempfile::tempdir().expect("temp dir");
        let spec = dir.path().join("bad.toml");
        let text = PAPER_LIKE
            .replace(from, to)
            .replace("{base}", &server.base_url);
        std::fs::write(&spec, text).expect("write");
        let run = Command::new(env!("CARGO_BIN_EXE_baton"))
            .arg("run")
            .arg(&spec)
            .args(["--quiet", "--out"])
            .arg(dir.path().join("out"))
            .env("BATON_IT_SETTINGS_KEY", "sk-settings-not-a-real-key")
            .output()
            .expect("baton runs");
        assert_eq!(run.status.code(), Some(2), "{to}: {}", stderr(&run));
        assert!(stderr(&run).contains(says), "{to}: {}", stderr(&run));
        assert_eq!(
            server.get("/stats")["requests"],
            0,
            "{to}: no call was made"
        );
    }
}
