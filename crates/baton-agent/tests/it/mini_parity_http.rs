//! The cases where baton once differed from mini-SWE-agent 2.4.6 (issue 34), against what
//! mini itself sent: `tests/fixtures/mini-swe-agent/mini-2.4.6-parity.json`, recorded by
//! `record_http.py` beside it, which drove mini's own agent, model classes and
//! environments with scripted replies served over HTTP on 127.0.0.1 and kept every
//! request body as it arrived. Here the same replies are served the same way (a plain
//! HTTP/1.1 server on 127.0.0.1:0 that keeps the raw bodies), baton's loop talks to it
//! through its OpenAI Chat provider, and the messages of the last request, as JSON on the
//! wire, must equal mini's.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_agent::{
    AgentConfig, AgentExit, AgentLoop, AgentSink, AgentState, AgentTask, AgentTemplates,
    Difficulty, HiddenTests, Protocol, Repository, TaskFormat, TreeFile, start_task_env,
};
use baton_env::{BackendKind, EnvConfig};
use baton_http::{HttpProvider, Wire};
use baton_models::{GenerateConfig, Model, PriceCard};
use serde_json::{Value, json};

use crate::{fixtures, scorer};

fn fixture() -> Value {
    let path = fixtures().join("mini-swe-agent/mini-2.4.6-parity.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// An OpenAI Chat endpoint on 127.0.0.1:0 answering each request with the next scripted
/// reply, keeping every request body.
struct Server {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
}

impl Server {
    fn start(replies: &[Value]) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let replies: Vec<Value> = replies.to_vec();
        let kept = bodies.clone();
        std::thread::spawn(move || {
            for (n, reply) in replies.iter().enumerate() {
                let Ok((stream, _)) = listener.accept() else {
                    return;
                };
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).unwrap();
                    if line == "\r\n" || line.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':')
                        && k.eq_ignore_ascii_case("content-length")
                    {
                        length = v.trim().parse().unwrap();
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).unwrap();
                kept.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap());
                let mut message = json!({"role": "assistant", "content": reply["text"]});
                let calls = reply["tool_calls"].as_array().unwrap();
                if !calls.is_empty() {
                    message["tool_calls"] = calls
                        .iter()
                        .map(|c| {
                            json!({"id": c["id"], "type": "function", "function":
                                {"name": c["name"], "arguments": c["arguments"]}})
                        })
                        .collect();
                }
                let finish = if calls.is_empty() {
                    "stop"
                } else {
                    "tool_calls"
                };
                let text = json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion",
                    "created": 0, "model": "scripted",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
                .to_string();
                let mut stream = reader.into_inner();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        Server { url, bodies }
    }
}

struct NoSink;

#[async_trait::async_trait]
impl AgentSink for NoSink {
    async fn call(
        &mut self,
        _: &baton_agent::CallEvent<'_>,
    ) -> Result<(), baton_agent::AgentError> {
        Ok(())
    }
    async fn action(
        &mut self,
        _: &baton_agent::ActionEvent<'_>,
    ) -> Result<(), baton_agent::AgentError> {
        Ok(())
    }
}

fn task(f: &Value, repository: Option<Repository>) -> AgentTask {
    let files = f["files"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(path, text)| TreeFile {
            path: path.clone(),
            contents: text.as_str().unwrap().as_bytes().to_vec(),
            executable: false,
        })
        .collect();
    AgentTask {
        id: "mini-parity".into(),
        format: TaskFormat::Baton,
        origin: "mini-2.4.6-parity.json".into(),
        instruction: f["task"].as_str().unwrap().into(),
        difficulty: Difficulty::Easy,
        repository: repository.unwrap_or(Repository::Files(files)),
        workdir: "/testbed".into(),
        tests: HiddenTests {
            files: Vec::new(),
            patch: None,
            fail_to_pass: Vec::new(),
            pass_to_pass: Vec::new(),
            timeout: Duration::from_secs(10),
        },
        reference: None,
    }
}

/// Run episode `name` of the fixture under `env_config` and give the messages of the last
/// request as they arrived, with mini's.
async fn episode(
    name: &str,
    env_config: &EnvConfig,
    task: &AgentTask,
) -> Option<(Vec<Value>, Vec<Value>)> {
    let dir = baton_fixture::shared_dir("agent")?;
    let f = fixture();
    assert_eq!(f["mini_swe_agent"], "2.4.6");
    let e = &f["episodes"][name];
    let templates = AgentTemplates::load(
        &dir.join("mini-swe-agent")
            .join(e["templates"].as_str().unwrap()),
    )
    .unwrap();
    let protocol = match e["protocol"].as_str().unwrap() {
        "text" => Protocol::Text,
        _ => Protocol::ToolCalls,
    };
    let server = Server::start(e["replies"].as_array().unwrap());
    let http: Arc<dyn baton_models::Provider> = Arc::new(HttpProvider::new(
        Wire::from_kind("openai").unwrap(),
        &server.url,
        None,
        reqwest::Client::new(),
        Duration::from_secs(30),
        true,
    ));
    let price = PriceCard::embedded().get("sim/hc").unwrap();
    let model = Model::new("scripted", http, "scripted", "scripted", price, 1)
        .with_config(GenerateConfig::default());
    let mut env_config = env_config.clone();
    env_config.limits.timeout_secs = f["timeout_secs"].as_f64().unwrap();
    env_config.env.extend(templates.env.clone());
    let cfg = AgentConfig {
        protocol,
        templates,
        ..AgentConfig::default()
    };
    let mut env = Some(start_task_env(task, &env_config).unwrap());
    let mut state = AgentState::start(&cfg, task).unwrap();
    let lp = AgentLoop {
        config: &cfg,
        task_id: &task.id,
        seed: None,
        blobs: None,
        prior_unusable: 0,
    };
    let out = lp
        .run(&model, &mut env, &mut state, &mut NoSink)
        .await
        .unwrap();
    env.take().unwrap().close().unwrap();
    assert_eq!(e["exit_status"], "Submitted");
    assert_eq!(out.exit, AgentExit::Submitted, "{name}: {out:?}");
    assert_eq!(out.submission.as_deref(), e["submission"].as_str());
    let bodies = server.bodies.lock().unwrap().clone();
    let lengths: Vec<usize> = bodies
        .iter()
        .map(|b| b["messages"].as_array().unwrap().len())
        .collect();
    let theirs: Vec<usize> = e["request_lengths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(lengths, theirs, "{name}: messages per request");
    let ours = bodies.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    Some((ours, e["messages"].as_array().unwrap().clone()))
}

/// Items 1, 3, 4 and 5 of issue 34 under mini's `swebench.yaml` (tool calls, local
/// environment): carriage returns become newlines; malformed arguments get CPython's
/// `json` message; a `command` that is not a string gets Python's `TypeError` with return
/// code -1 (a list runs its first item); a reply with tool calls and no text is re-sent
/// without a `content` key. Every message on the wire equals mini's.
// See: issue 34
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_34_tool_call_episode_equals_minis_on_the_wire() {
    let Some(scorer) = scorer() else { return };
    let f = fixture();
    let Some((ours, mini)) = episode("tool_calls", &scorer.env, &task(&f, None)).await else {
        return;
    };
    // the items one by one, for a readable failure
    let find = |msgs: &[Value], needle: &str| -> Value {
        msgs.iter()
            .find(|m| m.to_string().contains(needle))
            .cloned()
            .unwrap_or_else(|| panic!("no message with {needle}"))
    };
    for needle in [
        "crlf\\nbare\\nprogress 10%\\nprogress 100%",
        "echo no text",
        "Expecting ',' delimiter: line 1 column 17 (char 16)",
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
        "Extra data: line 1 column 19 (char 18)",
        "Invalid \\\\escape: line 1 column 15 (char 14)",
        "Expecting value: line 1 column 1 (char 0)",
        "'int' object is not iterable",
        "'NoneType' object is not iterable",
        "'bool' object is not iterable",
    ] {
        assert_eq!(find(&ours, needle), find(&mini, needle), "{needle}");
    }
    let no_text = find(&ours, "echo no text");
    assert!(no_text.get("content").is_none(), "{no_text}");
    assert_eq!(ours.len(), mini.len());
    for (i, (a, b)) in ours.iter().zip(&mini).enumerate() {
        assert_eq!(a, b, "message {i}");
    }
}

/// Item 2 of issue 34 under mini's `swebench_backticks.yaml` (text protocol): an empty
/// or blank command block is an empty command that runs with return code 0, not a format
/// error.
// See: issue 34
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_34_an_empty_command_block_runs_as_under_mini() {
    let Some(scorer) = scorer() else { return };
    let f = fixture();
    let Some((ours, mini)) = episode("text", &scorer.env, &task(&f, None)).await else {
        return;
    };
    assert_eq!(
        ours[3],
        json!({"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"})
    );
    assert_eq!(ours, mini);
}

/// Item 6 of issue 34 against a real Docker engine: a command that times out is ended
/// with its own processes, and a background process an earlier command started survives
/// it, as under mini (whose `docker exec` client is killed and leaves the container
/// alone). The observation after the timeout equals mini's; the timeout's own message
/// names the command, not mini's `docker exec` argument list (see the README).
// See: issue 34
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_34_a_docker_timeout_leaves_earlier_background_processes() {
    let Some(engine) = baton_fixture::docker_engine("the Docker timeout parity test") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let client = dir.path().join("docker");
    std::fs::write(
        &client,
        format!(
            "#!/bin/sh\nexec {} -H {} \"$@\"\n",
            engine.client.display(),
            engine.host
        ),
    )
    .unwrap();
    std::fs::set_permissions(&client, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config = EnvConfig::for_backend(BackendKind::Docker);
    config.docker.executable = client;
    let f = fixture();
    let task = task(&f, Some(Repository::Image(engine.base.clone())));
    let Some((ours, mini)) = episode("docker", &config, &task).await else {
        return;
    };
    // the background process is still there after the timeout (mini: 1; killing the
    // whole container: 0)
    assert_eq!(ours[7], mini[7]);
    assert_eq!(
        ours[7]["content"],
        "<returncode>0</returncode>\n<output>\n1\n</output>"
    );
    assert_eq!(ours[..5], mini[..5]);
    assert_eq!(ours[6], mini[6]);
    assert!(
        ours[5]["content"]
            .as_str()
            .unwrap()
            .contains("timed out after 2 seconds"),
        "{}",
        ours[5]
    );
}
