//! The agent study with models served over real HTTP (the simulated server on
//! 127.0.0.1:0, OpenAI Chat wire) by the simulated agent, with two faults a real study
//! meets: a model that answers a long conversation with HTTP 400 (context length), and a
//! summariser that answers the summary request with a tool call. Commands run in bwrap.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use baton_agent::{SimAgent, SimAgentSettings, sample_tasks};
use baton_http::{HttpProviders, ServedProvider, SimServerConfig, serve};
use baton_models::{Provider, ProviderError, Request, Response, ToolChoice};
use baton_runner::RunOptions;
use baton_runner::agent::{AgentRunner, AgentSpec, agent_report_input};
use baton_store::{AgentCell, Reader};
use baton_types::{EpisodeStatus, Role, ToolCall};

/// The simulated agent, with the two faults.
struct Faulty {
    sim: SimAgent,
    /// The task whose conversations past four messages `lc` refuses.
    long_task: String,
    /// Summary requests already answered with a tool call (their messages).
    answered: Mutex<HashSet<String>>,
    /// The handoff texts' summary request.
    summary_request: String,
    /// Summary requests, and those whose `tool_choice` forbade tools.
    tools_off: Mutex<(usize, usize)>,
}

#[async_trait]
impl Provider for Faulty {
    fn kind(&self) -> &str {
        "faulty"
    }

    async fn generate(&self, request: &Request) -> Result<Response, ProviderError> {
        let first_user = request
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map_or("", |m| m.content.as_str());
        if request.model == "lc"
            && first_user.contains(&self.long_task)
            && request.messages.len() > 4
        {
            return Err(ProviderError::Status {
                status: 400,
                kind: "context_length_exceeded".into(),
                message: "This model's maximum context length is 128 tokens".into(),
                retry_after: None,
            });
        }
        let asks_summary = request
            .messages
            .last()
            .is_some_and(|m| m.role == Role::User && m.content == self.summary_request);
        if asks_summary {
            let mut seen = self.tools_off.lock().unwrap();
            seen.0 += 1;
            if request.tool_choice == Some(ToolChoice::NoTools) {
                seen.1 += 1;
            }
            drop(seen);
            let key = format!(
                "{} {}",
                request.model,
                serde_json::to_string(&request.messages).unwrap()
            );
            if self.answered.lock().unwrap().insert(key) {
                let mut r = self.sim.reply(request)?;
                r.text = String::new();
                r.tool_calls = vec![ToolCall {
                    id: "call_summary".into(),
                    name: "bash".into(),
                    arguments: r#"{"command": "git diff"}"#.into(),
                }];
                return Ok(r);
            }
        }
        self.sim.reply(request)
    }
}

fn sandbox_works() -> bool {
    let report = baton_env::check(&baton_env::EnvConfig::for_backend(
        baton_env::BackendKind::Bwrap,
    ));
    if !report.passed() {
        baton_fixture::skip(format!("the bwrap sandbox does not work here:\n{report}"));
    }
    report.passed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_25_an_anchor_refused_with_400_ends_with_error_and_a_tool_call_summary_is_retried() {
    if !sandbox_works() {
        return;
    }
    let tasks = sample_tasks().unwrap();
    let long_task = tasks[0].instruction.trim().to_string();
    let presets: BTreeMap<String, SimAgentSettings> = ["lc", "hc"]
        .into_iter()
        .map(|m| (m.to_string(), SimAgentSettings::preset(m)))
        .collect();
    let faulty = Arc::new(Faulty {
        sim: SimAgent::new(&tasks, presets).unwrap(),
        long_task,
        summary_request: baton_agent::HandoffTexts::default().summary_request,
        answered: Mutex::default(),
        tools_off: Mutex::default(),
    });
    let mut config = SimServerConfig::new(Vec::new());
    for m in ["lc", "hc"] {
        config
            .providers
            .insert(m.into(), ServedProvider(faulty.clone()));
    }
    let server = serve(config).await.unwrap();
    let url = server.base_url();
    let text = format!(
        r#"
kind = "agent"
name = "issue-25"
dataset = "agent-sample"
limit = 6
seed = 5
concurrency = 2
step_limit = 12
[models.lc]
model = "openai/lc"
base_url = "{url}"
price = "sim/lc"
[models.hc]
model = "openai/hc"
base_url = "{url}"
price = "sim/hc"
[handoff]
pairs = [["lc", "hc"]]
percentiles = [10]
interfaces = ["compact_pre", "compact_suf"]
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = AgentSpec::parse("issue-25.toml", &text).unwrap();
    let mut options = RunOptions::new(dir.path().join("out"), dir.path(), text.clone());
    options.providers = vec![Arc::new(
        HttpProviders::new(Duration::from_secs(30)).keys_optional(),
    )];
    let summary = AgentRunner::prepare(spec, options)
        .await
        .unwrap()
        .run()
        .await
        .unwrap();
    server.shutdown().await.unwrap();

    // the refused anchor finished with exit error, unresolved; nothing is incomplete
    assert_eq!(summary.count(EpisodeStatus::Incomplete), 0, "{summary:?}");
    assert_eq!(summary.error_anchors, 1, "{summary:?}");
    let reader = Reader::open(&summary.store_path).unwrap();
    let episodes = reader.agent_episodes().unwrap();
    let refused: Vec<_> = episodes
        .iter()
        .filter(|e| matches!(&e.cell, AgentCell::Single { model } if model == "lc"))
        .filter(|e| e.task_id == tasks[0].id)
        .collect();
    assert_eq!(refused.len(), 1);
    let end = refused[0].end.as_ref().unwrap();
    assert_eq!(end.exit, baton_types::agent::AgentExit::Error);
    assert!(
        end.error
            .as_deref()
            .unwrap()
            .contains("context_length_exceeded"),
        "{end:?}"
    );
    assert_eq!(refused[0].outcome.status, EpisodeStatus::Scored);
    let verdict = refused[0].outcome.verdict.as_ref().unwrap();
    assert_eq!((verdict.score, verdict.is_correct), (0.0, Some(false)));
    // the 400 was not paid: the anchor's steps are the calls before it
    let progress = reader.agent_progress(refused[0].id).unwrap();
    assert!(end.calls >= 1);
    assert_eq!(progress.calls.len() as u32, end.calls);

    // the study still ran: thresholds from the finished anchors, every handoff cell
    let thresholds = reader.agent_thresholds().unwrap();
    assert!(!thresholds.is_empty());
    let handoffs = episodes
        .iter()
        .filter(|e| !matches!(e.cell, AgentCell::Single { .. }))
        .count();
    assert_eq!(handoffs, 6 * 2 * 2, "6 tasks x 2 directions x 2 interfaces");

    // the report counts the error anchor
    let input = agent_report_input(&summary.store_path).unwrap();
    let errors = input
        .episodes
        .iter()
        .filter(|e| e.exit.as_deref() == Some("error"))
        .count();
    assert_eq!(errors, 1);

    // every summary came back as a tool call first: paid, stored as an unusable
    // attempt of the handoff call, retried, and never stored as an empty summary
    let db = rusqlite::Connection::open(&summary.store_path).unwrap();
    let empty: i64 = db
        .query_row(
            "SELECT count(*) FROM calls WHERE phase = 'handoff' AND trim(response_text) = ''",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(empty, 0, "no empty summary is stored");
    let handoff_calls: i64 = db
        .query_row(
            "SELECT count(*) FROM calls WHERE phase = 'handoff'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let mut st = db
        .prepare("SELECT phase, model, count(*) FROM calls GROUP BY phase, model")
        .unwrap();
    let by_phase: Vec<(String, String, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let fired: i64 = db
        .query_row(
            "SELECT count(*) FROM agent_switches WHERE fired = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        handoff_calls > 0,
        "some summaries were made: {by_phase:?}, {fired} fired, {summary:?}, {thresholds:?}"
    );
    let retried: usize = summary.summary_retries.values().sum();
    assert_eq!(
        retried as i64, handoff_calls,
        "{:?}",
        summary.summary_retries
    );
    let attempts: i64 = db
        .query_row(
            "SELECT count(*) FROM attempts WHERE phase = 'handoff'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(attempts, handoff_calls);
    // every summary request offered the tool but forbade its use
    let forbade: i64 = db
        .query_row(
            "SELECT count(*) FROM calls WHERE phase = 'handoff'
             AND coalesce(request_json, request_params) LIKE '%\"tool_choice\":\"no_tools\"%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(forbade, handoff_calls);
    let (asked, _) = *faulty.tools_off.lock().unwrap();
    assert_eq!(
        asked as i64,
        2 * handoff_calls,
        "each summary was asked twice"
    );
}

/// The options are one type for both studies; the chat study's `batch` is refused by an
/// agent run before anything is stored.
#[tokio::test]
async fn an_agent_run_refuses_the_batch_option_before_anything_is_stored() {
    let text = "kind = \"agent\"\nname = \"a\"\ndataset = \"agent-sample\"\n[models.lc]\nmodel = \"sim/lc\"\n";
    let dir = tempfile::tempdir().unwrap();
    let spec = AgentSpec::parse("a.toml", text).unwrap();
    let mut options = RunOptions::new(dir.path().join("out"), dir.path(), text);
    options.source_name = "a.toml".into();
    options.batch = true;
    let err = AgentRunner::prepare(spec, options).await.err().unwrap();
    // a command-line option, named as the command line spells it
    assert!(matches!(err, baton_runner::RunError::Flag(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("--batch: {}", baton_runner::agent::BATCH_REFUSED)
    );
    assert!(!dir.path().join("out").exists());
}

/// Counts what a run plans and what it ends.
#[derive(Default)]
struct Counted {
    planned: std::sync::atomic::AtomicUsize,
    ended: std::sync::atomic::AtomicUsize,
}

impl baton_runner::Observer for Counted {
    fn planned(&self, episodes: usize, _calls: usize) {
        self.planned
            .store(episodes, std::sync::atomic::Ordering::SeqCst);
    }
    fn episode(&self, _status: EpisodeStatus) {
        self.ended.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The progress bar's planned episodes are the ones it counts as done: the anchors and
/// the handoff cells (it planned the anchors only and showed "12/6 episodes"), and on a
/// resume only what is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_planned_episodes_are_the_ones_counted_done() {
    if !sandbox_works() {
        return;
    }
    let text = r#"
kind = "agent"
name = "issue-35"
dataset = "agent-sample"
limit = 2
seed = 5
concurrency = 2
step_limit = 12
[models.lc]
model = "sim/lc"
[models.hc]
model = "sim/hc"
[handoff]
pairs = [["lc", "hc"]]
percentiles = [50]
interfaces = ["raw"]
"#;
    let dir = tempfile::tempdir().unwrap();
    let run = |counted: Arc<Counted>| {
        let spec = AgentSpec::parse("issue-35.toml", text).unwrap();
        let mut options = RunOptions::new(dir.path().join("out"), dir.path(), text);
        options.observer = counted;
        async move {
            AgentRunner::prepare(spec, options)
                .await
                .unwrap()
                .run()
                .await
                .unwrap()
        }
    };
    let first = Arc::new(Counted::default());
    let summary = run(first.clone()).await;
    let stored: usize = summary.episodes.values().sum();
    // 2 tasks: 2 anchors each, and one handoff cell per direction
    assert_eq!(stored, 8);
    let ended = first.ended.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(ended, 8);
    assert_eq!(
        first.planned.load(std::sync::atomic::Ordering::SeqCst),
        ended
    );
    // everything is finished: a resume plans nothing and ends nothing
    let again = Arc::new(Counted::default());
    run(again.clone()).await;
    assert_eq!(again.planned.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(again.ended.load(std::sync::atomic::Ordering::SeqCst), 0);
}
