//! With mini-SWE-agent's own `swebench.yaml` as the templates, the loop sends what
//! mini-SWE-agent 2.4.6 sends, message by message, for the same scripted replies.
//!
//! The fixture `tests/fixtures/mini-swe-agent/mini-2.4.6-swebench.json` was recorded by
//! `record.py` beside it, running mini's own agent, model class and local environment
//! on ten scripted replies (a reply without a tool call, two calls in one reply, a
//! timeout, a long output, an empty command, an unknown tool, a missing argument, an
//! edit, the submission). Here the same replies are served over real HTTP (the simulated
//! server on 127.0.0.1:0, OpenAI Chat wire) and the commands run in the bwrap sandbox.

use std::sync::Arc;
use std::time::Duration;

use baton_agent::{
    ActionEvent, AgentConfig, AgentError, AgentExit, AgentLoop, AgentSink, AgentState, AgentTask,
    AgentTemplates, CallEvent, Difficulty, HiddenTests, Protocol, Repository, TaskFormat, TreeFile,
    bash_tool, start_task_env,
};
use baton_http::{HttpProvider, ServedProvider, SimServerConfig, Wire, serve};
use baton_models::testing::ScriptedProvider;
use baton_models::{GenerateConfig, Model, PriceCard};
use baton_types::{Message, Role, ToolCall};
use serde_json::Value;

use crate::{fixtures, scorer};

fn fixture() -> Value {
    let path = fixtures().join("mini-swe-agent/mini-2.4.6-swebench.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A fixture message as baton's `Message`.
fn message(m: &Value) -> Message {
    let content = m["content"].as_str().unwrap().to_string();
    match m["role"].as_str().unwrap() {
        "system" => Message::system(content),
        "user" => Message::user(content),
        "tool" => Message::tool(m["tool_call_id"].as_str().unwrap(), content),
        "assistant" => Message::assistant_with_calls(content, calls(&m["tool_calls"])),
        other => panic!("role {other}"),
    }
}

fn calls(v: &Value) -> Vec<ToolCall> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|c| ToolCall {
                    id: c["id"].as_str().unwrap().into(),
                    name: c["name"].as_str().unwrap().into(),
                    arguments: c["arguments"].as_str().unwrap().into(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every call's request as the loop made it (before the wire).
#[derive(Default)]
struct Requests(Vec<baton_models::Request>);

#[async_trait::async_trait]
impl AgentSink for Requests {
    async fn call(&mut self, e: &CallEvent<'_>) -> Result<(), AgentError> {
        self.0.push(e.completion.request.clone());
        Ok(())
    }
    async fn action(&mut self, _: &ActionEvent<'_>) -> Result<(), AgentError> {
        Ok(())
    }
}

fn task(f: &Value) -> AgentTask {
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
        origin: "mini-2.4.6-swebench.json".into(),
        instruction: f["task"].as_str().unwrap().into(),
        difficulty: Difficulty::Easy,
        repository: Repository::Files(files),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_requests_equal_mini_swe_agents_message_by_message() {
    let Some(scorer) = scorer() else { return };
    let Some(dir) = baton_fixture::shared_dir("agent") else {
        return;
    };
    let f = fixture();
    assert_eq!(f["mini_swe_agent"], "2.4.6");
    let templates = AgentTemplates::load(&dir.join("mini-swe-agent/swebench.yaml")).unwrap();
    assert_eq!(
        templates.submit_marker,
        "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
    );
    // the YAML's model_kwargs are read (the runner sends them under the model's settings)
    assert_eq!(templates.model_kwargs["parallel_tool_calls"], true);
    // and its environment.env, which every command sees (under the experiment's env)
    let env: Vec<(&str, &str)> = templates
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        env,
        [
            ("BASH_ENV", "/root/.bashrc"),
            ("LESS", "-R"),
            ("MANPAGER", "cat"),
            ("PAGER", "cat"),
            ("PIP_PROGRESS_BAR", "off"),
            ("TQDM_DISABLE", "1"),
        ]
    );

    let mut provider = ScriptedProvider::new();
    for r in f["replies"].as_array().unwrap() {
        let calls = calls(&r["tool_calls"]);
        let mut reply = ScriptedProvider::reply(r["text"].as_str().unwrap());
        reply.finish_reason = Some(
            if calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            }
            .into(),
        );
        reply.tool_calls = calls;
        provider = provider.then_ok(reply);
    }
    let scripted = Arc::new(provider);
    let mut server_config = SimServerConfig::new(Vec::new());
    server_config
        .providers
        .insert("scripted".into(), ServedProvider(scripted.clone()));
    let server = serve(server_config).await.unwrap();
    let http: Arc<dyn baton_models::Provider> = Arc::new(HttpProvider::new(
        Wire::from_kind("openai").unwrap(),
        &server.base_url(),
        None,
        reqwest::Client::new(),
        Duration::from_secs(30),
        true,
    ));
    let price = PriceCard::embedded().get("sim/hc").unwrap();
    // the settings an agent model without a cap is built with: the YAML's kwargs, no cap
    let settings = GenerateConfig {
        extra: templates
            .model_kwargs
            .iter()
            .filter(|(k, _)| *k != "drop_params")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        ..GenerateConfig::default()
    };
    let model =
        Model::new("scripted", http, "scripted", "scripted", price, 1).with_config(settings);

    let task = task(&f);
    let cfg = AgentConfig {
        protocol: Protocol::ToolCalls,
        templates,
        ..AgentConfig::default()
    };
    let mut env_config = scorer.env.clone();
    env_config.limits.timeout_secs = f["timeout_secs"].as_f64().unwrap();
    let mut env = Some(start_task_env(&task, &env_config).unwrap());
    let mut state = AgentState::start(&cfg, &task).unwrap();
    let mut sent = Requests::default();
    let lp = AgentLoop {
        config: &cfg,
        task_id: &task.id,
        seed: None,
        blobs: None,
        prior_unusable: 0,
    };
    let out = lp
        .run(&model, &mut env, &mut state, &mut sent)
        .await
        .unwrap();
    env.take().unwrap().close().unwrap();
    server.shutdown().await.unwrap();

    assert_eq!(f["exit_status"], "Submitted");
    assert_eq!(out.exit, AgentExit::Submitted);
    assert_eq!(out.submission.as_deref(), f["submission"].as_str());
    assert_eq!(out.calls, 10);

    let mini: Vec<Message> = f["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(message)
        .collect();
    let lengths: Vec<usize> = f["request_lengths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(sent.0.len(), lengths.len());
    let on_the_wire = scripted.requests();
    assert_eq!(on_the_wire.len(), lengths.len());
    for (i, (request, n)) in sent.0.iter().zip(&lengths).enumerate() {
        for (j, (ours, theirs)) in request.messages.iter().zip(&mini[..*n]).enumerate() {
            assert_eq!(ours, theirs, "call {i}, message {j}");
        }
        assert_eq!(request.messages.len(), *n, "call {i}: message count");
        // the same messages arrived over HTTP, with no output cap and mini's bash tool
        let wire = &on_the_wire[i];
        assert_eq!(wire.messages, request.messages, "call {i} on the wire");
        assert_eq!(
            wire.config.max_tokens, None,
            "call {i} carries no max_tokens"
        );
        assert_eq!(request.config.max_tokens, None);
        assert_eq!(request.config.extra["parallel_tool_calls"], true);
        assert!(!request.config.extra.contains_key("drop_params"));
        assert_eq!(wire.tools, vec![bash_tool()]);
    }
    // mini's tool schema, word for word
    let tool = &f["tools"][0]["function"];
    assert_eq!(bash_tool().name, tool["name"].as_str().unwrap());
    assert_eq!(
        bash_tool().description,
        tool["description"].as_str().unwrap()
    );
    assert_eq!(bash_tool().parameters, tool["parameters"]);
    // the malformed replies are not in the history; their answers are
    assert_eq!(
        state
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count(),
        7
    );
    assert_eq!(state.messages, mini);
}

/// Every call the loop makes, with the messages it added.
#[derive(Default)]
struct Calls(Vec<(Option<String>, Vec<Message>)>);

#[async_trait::async_trait]
impl AgentSink for Calls {
    async fn call(&mut self, e: &CallEvent<'_>) -> Result<(), AgentError> {
        self.0
            .push((e.format_error.map(str::to_string), e.added.to_vec()));
        Ok(())
    }
    async fn action(&mut self, _: &ActionEvent<'_>) -> Result<(), AgentError> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_a_text_protocol_format_error_under_minis_backticks_yaml_is_stored() {
    let Some(scorer) = scorer() else { return };
    let Some(dir) = baton_fixture::shared_dir("agent") else {
        return;
    };
    let templates =
        AgentTemplates::load(&dir.join("mini-swe-agent/swebench_backticks.yaml")).unwrap();
    assert_eq!(templates.fence, "mswea_bash_command");
    let fenced = |cmd: &str| format!("THOUGHT: go.\n\n```mswea_bash_command\n{cmd}\n```\n");
    let provider = ScriptedProvider::new()
        .then_ok(ScriptedProvider::reply("THOUGHT: no block at all."))
        .then_ok(ScriptedProvider::reply(&format!(
            "{}{}",
            fenced("ls"),
            fenced("pwd")
        )))
        .then_ok(ScriptedProvider::reply(&fenced(
            "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo done",
        )));
    let price = PriceCard::embedded().get("sim/hc").unwrap();
    let model = Model::new(
        "scripted",
        Arc::new(provider),
        "scripted",
        "sim/hc",
        price,
        1,
    );
    let task = task(&fixture());
    let cfg = AgentConfig {
        protocol: Protocol::Text,
        templates,
        ..AgentConfig::default()
    };
    let mut env = Some(start_task_env(&task, &scorer.env).unwrap());
    let mut state = AgentState::start(&cfg, &task).unwrap();
    let mut calls = Calls::default();
    let lp = AgentLoop {
        config: &cfg,
        task_id: &task.id,
        seed: None,
        blobs: None,
        prior_unusable: 0,
    };
    let out = lp
        .run(&model, &mut env, &mut state, &mut calls)
        .await
        .unwrap();
    env.take().unwrap().close().unwrap();
    assert_eq!(out.exit, AgentExit::Submitted);
    assert_eq!(out.submission.as_deref(), Some("done\n"));
    // three calls answered, three handed to the sink (so stored), the first two as
    // format errors answered in mini's words
    assert_eq!(calls.0.len(), 3);
    assert_eq!(
        calls.0[0].0.as_deref(),
        Some("Expected exactly 1 action, found 0.")
    );
    assert!(calls.0[0].1[0].content.contains("found 0 actions"));
    assert!(calls.0[1].1[0].content.contains("found 2 actions"));
    assert_eq!(calls.0[0].1.len(), 1, "the malformed reply is not kept");
}
