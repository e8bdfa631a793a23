//! Agent episodes: calls, commands and snapshots round-trip, the conversation is stored
//! by reference, and 150 steps grow the file linearly.

use baton_store::{
    AgentCell, AgentEnd, AgentEpisodeInit, AgentTaskMeta, AgentVerdict, NewAgentCall, NewAgentStep,
    NewAgentSwitch, Outcome, Reader, Store,
};
use baton_types::agent::{AgentExit, AgentSwitch, Difficulty};
use baton_types::{Cost, EpisodeStatus, Interface, Message, Phase, ToolCall, Verdict};
use rusqlite::Connection;

use crate::{TestContext, call, meta, request_json};

/// The shared experiment row, as an agent experiment's.
fn agent_meta() -> baton_store::ExperimentMeta {
    baton_store::ExperimentMeta {
        kind: baton_types::ExperimentKind::Agent,
        ..meta()
    }
}

fn agent_task(id: &str) -> AgentTaskMeta {
    AgentTaskMeta {
        task_id: id.into(),
        origin: "datasets/agent-sample/x".into(),
        difficulty: Difficulty::Hard,
        format: "baton".into(),
        task_sha256: "e".repeat(64),
    }
}

fn episode(task: &str) -> AgentEpisodeInit {
    AgentEpisodeInit {
        task_id: task.into(),
        cell: AgentCell::Single { model: "lc".into() },
        k: None,
        forked_from: None,
        replicate: 0,
        seed: 7,
        task_sha256: "e".repeat(64),
    }
}

fn json(m: &Message) -> String {
    serde_json::to_string(m).unwrap()
}

/// Run `steps` agent steps (one call, one command each, observations of `obs_len`
/// characters) the way the runner stores them; returns the final context node.
async fn run_steps(store: &Store, episode_id: i64, steps: u32, obs_len: usize, tag: &str) -> i64 {
    let mut messages = vec![
        Message::system("system"),
        Message::user(format!("the task {tag}")),
    ];
    let mut context = 0;
    for q in 0..steps {
        let reply = Message::assistant_with_calls(
            format!("thought {q} {tag}"),
            vec![ToolCall {
                id: format!("call_{q}"),
                name: "bash".into(),
                arguments: format!("{{\"command\":\"cat f{q}.py\"}}"),
            }],
        );
        let mut c = call(episode_id, q, Phase::Prefix, request_json(&messages, 7));
        c.response_text = reply.content.clone();
        let (_, node) = store
            .record_agent_call(
                NewAgentCall {
                    call: c,
                    actions_json: format!(
                        "[{{\"command\":\"cat f{q}.py\",\"call_id\":\"call_{q}\"}}]"
                    ),
                    format_error: None,
                    added: vec![json(&reply)],
                },
                context,
            )
            .await
            .unwrap();
        messages.push(reply);
        let obs = Message::tool(
            format!("call_{q}"),
            format!(
                "<returncode>0</returncode>\n{}{q}{tag}",
                "x".repeat(obs_len)
            ),
        );
        context = store
            .record_agent_step(
                NewAgentStep {
                    episode_id,
                    call_index: q,
                    action_index: 0,
                    command: format!("cat f{q}.py"),
                    tool_call_id: Some(format!("call_{q}")),
                    status_json: "{\"kind\":\"exited\",\"value\":0}".into(),
                    return_code: Some(0),
                    duration_ms: 6,
                    output_bytes: obs_len as u64,
                    observation: Some(json(&obs)),
                    submission: None,
                    snapshot: Some(format!("{q:064x}")),
                    snapshot_bytes: Some(u64::from(q) * 1000),
                },
                node,
            )
            .await
            .unwrap();
        messages.push(obs);
        if q == 0 {
            // the first call's context must continue from its request's messages
            let head = store.context_messages(context).await.unwrap();
            assert_eq!(head.len(), 4, "{head:?}");
        }
    }
    context
}

#[tokio::test]
async fn agent_calls_steps_and_the_end_round_trip() {
    let cx = TestContext::new();
    let store = Store::open(&cx.path()).unwrap();
    store.init_experiment(agent_meta()).await.unwrap();
    store.agent_task(agent_task("a1")).await.unwrap();
    store.agent_task(agent_task("a1")).await.unwrap();
    let mut changed = agent_task("a1");
    changed.task_sha256 = "f".repeat(64);
    let err = store.agent_task(changed).await.unwrap_err().to_string();
    assert!(err.contains("\"a1\""), "{err}");

    let p = store.agent_episode(episode("a1")).await.unwrap();
    assert_eq!(
        (p.status, p.calls.len(), p.context()),
        (EpisodeStatus::Incomplete, 0, 0)
    );
    let context = run_steps(&store, p.episode_id, 3, 10, "a").await;
    let p = store.agent_episode(episode("a1")).await.unwrap();
    assert_eq!((p.calls.len(), p.steps.len()), (3, 3));
    assert_eq!(p.context(), context);
    assert_eq!(p.last_snapshot(), Some(format!("{:064x}", 2).as_str()));
    assert_eq!(p.steps[1].step.command, "cat f1.py");
    let counts: Vec<_> = p.steps.iter().map(|s| s.step.snapshot_bytes).collect();
    assert_eq!(counts, [Some(0), Some(1000), Some(2000)]);
    assert!(
        p.steps[2]
            .step
            .observation
            .as_deref()
            .unwrap()
            .contains("returncode")
    );
    // the visible conversation: system, task, then reply and observation per step
    let messages = store.context_messages(p.context()).await.unwrap();
    assert_eq!(messages.len(), 2 + 2 * 3);
    let m: Message = serde_json::from_str(&messages[2]).unwrap();
    assert_eq!(m.tool_calls[0].id, "call_0");
    let paid = p.paid().unwrap();
    assert_eq!(paid, p.calls.iter().map(|c| c.call.call.cost).sum());

    let outcome = Outcome {
        status: EpisodeStatus::Scored,
        final_response: Some("diff --git a/x b/x\n".into()),
        extracted: None,
        verdict: Some(Verdict {
            score: 1.0,
            is_correct: Some(true),
            error: None,
            details: serde_json::json!({"resolved": true}),
            rule: None,
            no_answer: false,
        }),
        reason: None,
        cost_attributed: paid,
        cost_paid: paid,
    };
    let end = AgentEnd {
        exit: AgentExit::Submitted,
        calls: 3,
        error: None,
    };
    store
        .finish_agent(p.episode_id, outcome.clone(), end.clone())
        .await
        .unwrap();
    let reader = Reader::open(&cx.path()).unwrap();
    assert!(reader.is_agent().unwrap());
    let rows = reader.agent_episodes().unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!((r.model.as_str(), r.difficulty), ("lc", Difficulty::Hard));
    assert_eq!((r.calls, r.commands, r.paid), (3, 3, paid));
    assert_eq!(r.outcome, outcome);
    assert_eq!(r.end.as_ref(), Some(&end));
    assert_eq!(reader.agent_tasks().unwrap(), vec![agent_task("a1")]);
    assert_eq!(reader.episode_paid(p.episode_id).unwrap(), paid);
    assert_eq!(reader.agent_progress(p.episode_id).unwrap().end, Some(end));
}

#[tokio::test]
async fn a_later_verdict_replaces_only_the_verdict_of_an_ended_episode() {
    let cx = TestContext::new();
    let store = Store::open(&cx.path()).unwrap();
    store.init_experiment(agent_meta()).await.unwrap();
    store.agent_task(agent_task("a1")).await.unwrap();
    let p = store.agent_episode(episode("a1")).await.unwrap();
    run_steps(&store, p.episode_id, 2, 10, "a").await;
    let verdict = |status| AgentVerdict {
        episode_id: p.episode_id,
        status,
        verdict: Some(Verdict {
            score: 1.0,
            is_correct: Some(true),
            error: None,
            details: serde_json::json!({"status": "resolved"}),
            rule: None,
            no_answer: false,
        }),
        reason: None,
    };
    let err = store
        .agent_verdict(verdict(EpisodeStatus::Scored))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains(&format!("episode {}", p.episode_id)), "{err}");

    let paid = p.paid().unwrap();
    let unscored = Outcome {
        status: EpisodeStatus::Unscored,
        final_response: Some("diff --git a/x b/x\n".into()),
        extracted: None,
        verdict: None,
        reason: Some("no harness".into()),
        cost_attributed: Cost(7),
        cost_paid: paid,
    };
    let end = AgentEnd {
        exit: AgentExit::Submitted,
        calls: 2,
        error: None,
    };
    store
        .finish_agent(p.episode_id, unscored.clone(), end.clone())
        .await
        .unwrap();
    store
        .agent_verdict(verdict(EpisodeStatus::Scored))
        .await
        .unwrap();
    let row = Reader::open(&cx.path())
        .unwrap()
        .agent_episode(p.episode_id)
        .unwrap()
        .unwrap();
    assert_eq!(row.outcome.status, EpisodeStatus::Scored);
    assert_eq!(row.outcome.verdict, verdict(EpisodeStatus::Scored).verdict);
    assert_eq!(row.outcome.reason, None);
    // the patch, the costs and the end are kept
    assert_eq!(row.outcome.final_response, unscored.final_response);
    assert_eq!(
        (row.outcome.cost_attributed, row.outcome.cost_paid),
        (Cost(7), paid)
    );
    assert_eq!(row.end, Some(end));
}

fn count(conn: &Connection, table: &str) -> i64 {
    conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .unwrap()
}

fn message_bytes(conn: &Connection) -> i64 {
    conn.query_row(
        "SELECT coalesce(sum(length(json)), 0) FROM messages",
        [],
        |r| r.get(0),
    )
    .unwrap()
}

#[tokio::test]
async fn one_hundred_fifty_steps_grow_linearly() {
    let cx = TestContext::new();
    let store = Store::open(&cx.path()).unwrap();
    store.init_experiment(agent_meta()).await.unwrap();
    let mut sizes = Vec::new();
    for (i, steps) in [75u32, 150].into_iter().enumerate() {
        let task = format!("a{i}");
        store.agent_task(agent_task(&task)).await.unwrap();
        let p = store.agent_episode(episode(&task)).await.unwrap();
        run_steps(&store, p.episode_id, steps, 2_000, &task).await;
        let conn = Connection::open(cx.path()).unwrap();
        sizes.push((
            count(&conn, "messages"),
            count(&conn, "message_lists"),
            message_bytes(&conn),
        ));
    }
    // each step adds two messages (the reply and the observation), each stored once,
    // and one list node per message: the context and every request share them; the
    // second episode shares only the system message
    let (m75, l75, b75) = sizes[0];
    let (m225, l225, b225) = sizes[1];
    assert_eq!((m75, l75), (2 + 2 * 75, 2 + 2 * 75));
    assert_eq!((m225 - m75, l225 - l75), (1 + 2 * 150, 1 + 2 * 150));
    // bytes: 150 steps of ~2 kB observations are ~300 kB, twice 75 steps, not four times
    let per_step_75 = b75 as f64 / 75.0;
    let per_step_150 = (b225 - b75) as f64 / 150.0;
    assert!(
        (per_step_150 / per_step_75 - 1.0).abs() < 0.05,
        "{per_step_75} vs {per_step_150} bytes per step"
    );
    assert!(per_step_150 < 2_300.0, "{per_step_150} bytes per step");
    let cost: i64 = Connection::open(cx.path())
        .unwrap()
        .query_row("SELECT sum(cost) FROM calls", [], |r| r.get(0))
        .unwrap();
    assert!(cost > 0);
    let _ = Cost(cost);
}

// See: issue 24 (exit status and difficulty crossed layers as strings).
#[tokio::test]
async fn issue_24_exit_status_and_difficulty_are_typed_columns() {
    let cx = TestContext::new();
    let store = Store::open(&cx.path()).unwrap();
    store.init_experiment(agent_meta()).await.unwrap();
    store.agent_task(agent_task("a1")).await.unwrap();
    drop(store);
    let conn = Connection::open(cx.path()).unwrap();
    // the database refuses a name no version of baton writes
    let err = conn
        .execute(
            "UPDATE agent_tasks SET difficulty = 'brutal' WHERE task_id = 'a1'",
            [],
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("agent_tasks.difficulty must be easy, medium or hard"),
        "{err}"
    );
    let err = conn
        .execute("UPDATE experiment SET kind = 'agents'", [])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("experiment.kind must be chat or agent"),
        "{err}"
    );
    // and a value that got past it anyway (the trigger dropped) reads as a decode
    // error naming the table and column, not as a string the report guesses at
    conn.execute_batch(
        "DROP TRIGGER agent_tasks_difficulty_update;
         UPDATE agent_tasks SET difficulty = 'brutal' WHERE task_id = 'a1';",
    )
    .unwrap();
    drop(conn);
    let err = Reader::open(&cx.path())
        .unwrap()
        .agent_tasks()
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown difficulty \"brutal\""), "{err}");
}

// See: issue 31 (a handoff's switch travels as baton_types::agent::AgentSwitch).
#[tokio::test]
async fn issue_31_a_switch_reads_back_typed_and_a_foreign_bucket_names_its_column() {
    let cx = TestContext::new();
    let store = Store::open(&cx.path()).unwrap();
    store.init_experiment(agent_meta()).await.unwrap();
    store.agent_task(agent_task("a1")).await.unwrap();
    let mut init = episode("a1");
    init.cell = AgentCell::handoff("lc", "hc", 25, Interface::Raw, false);
    init.k = Some(6);
    let p = store.agent_episode(init).await.unwrap();
    let unfired = NewAgentSwitch::unfired(p.episode_id, 6, Difficulty::Medium);
    assert_eq!(store.agent_switch(unfired).await.unwrap(), None);
    drop(store);
    let reader = Reader::open(&cx.path()).unwrap();
    let want = AgentSwitch {
        s: 6,
        bucket: Difficulty::Medium,
        fired: false,
    };
    let row = reader.agent_progress(p.episode_id).unwrap().switch.unwrap();
    assert_eq!(row.switch, want);
    assert_eq!((row.context, row.snapshot), (None, None));
    let rows = reader.agent_episodes().unwrap();
    assert_eq!(rows[0].switch.as_ref().map(|r| r.switch), Some(want));
    drop(reader);
    // stored as the bucket's name; a name no baton writes is a decode error naming the
    // table and column, not a bucket the report guesses at
    let conn = Connection::open(cx.path()).unwrap();
    let stored: String = conn
        .query_row("SELECT bucket FROM agent_switches", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, "medium");
    conn.execute("UPDATE agent_switches SET bucket = 'brutal'", [])
        .unwrap();
    drop(conn);
    let err = Reader::open(&cx.path())
        .unwrap()
        .agent_progress(p.episode_id)
        .unwrap_err();
    let baton_store::StoreError::Decode { what, message, .. } = &err else {
        panic!("expected a decode error, got {err}");
    };
    assert_eq!(
        what,
        &format!("agent_switches.bucket of episode {}", p.episode_id)
    );
    assert!(
        message.contains("unknown difficulty \"brutal\""),
        "{message}"
    );
}
