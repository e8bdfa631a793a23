//! A caller's acceptance rule over real HTTP: the simulated server on 127.0.0.1:0 serves
//! a summariser that answers a summary request with a tool call (as a model may, whatever
//! `tool_choice` says), each provider's wire parses the reply, and the model's one retry
//! loop bills the refused reply, retries it and counts it against `unusable_retries`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use baton_http::{
    FaultKind, HttpProviders, ServedProvider, SimServerConfig, SimServerHandle, serve,
};
use baton_models::{
    Accept, Model, ModelError, PriceCard, Provider, ProviderConfig, ProviderError, ProviderFactory,
    Request, Response, RetryPolicy, ToolChoice,
};
use baton_types::{Message, ToolCall, ToolSpec, Usage};
use serde_json::json;

const SUMMARY: &str = "Fixed the parser's off-by-one; the tests in tests/parse.py pass.";
const TOOL_CALL: &str = "a summary must be text, and the reply made a tool call";
/// The card entry the summariser is priced by.
const PRICE_KEY: &str = "sim/lc";

/// The model behind the server: its first `tool_calls` replies call `bash`, every later
/// one is the summary.
struct Summariser {
    tool_calls: u32,
    answered: AtomicU32,
}

#[async_trait]
impl Provider for Summariser {
    fn kind(&self) -> &str {
        "summariser"
    }

    async fn generate(&self, _request: &Request) -> Result<Response, ProviderError> {
        let n = self.answered.fetch_add(1, Ordering::SeqCst);
        let (text, tool_calls) = if n < self.tool_calls {
            let call = ToolCall {
                id: format!("call_{n}"),
                name: "bash".into(),
                arguments: r#"{"command": "git diff"}"#.into(),
            };
            (String::new(), vec![call])
        } else {
            (SUMMARY.to_string(), Vec::new())
        };
        // the server states the usage of what it sends
        Ok(Response {
            text,
            usage: Usage::default(),
            model_served: "summariser".into(),
            finish_reason: None,
            raw: None,
            tool_calls,
            batch_id: None,
            batch_item: None,
        })
    }
}

/// A server whose model `summariser` makes `tool_calls` tool calls before it summarises.
async fn server(tool_calls: u32) -> SimServerHandle {
    let mut config = SimServerConfig::new(Vec::new());
    let summariser = Summariser {
        tool_calls,
        answered: AtomicU32::new(0),
    };
    config
        .providers
        .insert("summariser".into(), ServedProvider(Arc::new(summariser)));
    serve(config).await.expect("the simulated server starts")
}

/// Model `id` of the server through the provider `kind`, retrying at once, with at most
/// two unusable retries.
fn model(server: &SimServerHandle, kind: &str, id: &str) -> Model {
    let provider = HttpProviders::new(Duration::from_secs(10))
        .keys_optional()
        .make(&ProviderConfig {
            name: id.into(),
            kind: kind.into(),
            model_id: id.into(),
            base_url: Some(server.base_url()),
            api_key_env: None,
            allow_http_with_key: false,
        })
        .expect("the provider builds");
    let price = PriceCard::embedded().get(PRICE_KEY).expect("sim prices");
    Model::new(id, provider, id, PRICE_KEY, price, 1).with_retry(RetryPolicy {
        base_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(1),
        max_unusable_retries: 2,
        ..RetryPolicy::default()
    })
}

/// A summary request: the bash tool offered (the conversation it ends may hold tool
/// calls) and forbidden.
fn summary_request(m: &Model) -> Request {
    let mut r = m.request(
        vec![
            Message::system("You are a careful engineer."),
            Message::user("Summarise the work so far for the engineer who takes over."),
        ],
        Some(7),
    );
    r.tools = vec![ToolSpec {
        name: "bash".into(),
        description: "Run a shell command.".into(),
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    }];
    r.tool_choice = Some(ToolChoice::NoTools);
    r
}

#[tokio::test]
async fn a_tool_call_summary_is_a_billed_attempt_and_the_retry_returns_the_text() {
    for (kind, tool_choice) in [
        ("openai", json!("none")),
        ("openai-compatible", json!("none")),
        ("openai-responses", json!("none")),
        ("anthropic", json!({"type": "none"})),
    ] {
        let srv = server(1).await;
        let m = model(&srv, kind, "summariser");
        let g = m
            .generate_accepting(summary_request(&m), 0, Accept::SUMMARY)
            .await;
        let c = g.result.unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(c.response.text, SUMMARY, "{kind}");
        assert_eq!(c.attempts, 2, "{kind}");
        assert_eq!(g.unusable.len(), 1, "{kind}");
        let a = &g.unusable[0];
        assert_eq!(a.reason, TOOL_CALL, "{kind}");
        assert_eq!(a.attempt, 1, "{kind}");
        assert!(
            a.raw.as_deref().is_some_and(|r| r.contains("git diff")),
            "{kind}: the body as received: {:?}",
            a.raw
        );
        // both replies were answered and billed; the usage they stated is what the
        // server sent, and the refused one is priced as any unusable reply
        let stats = srv.stats();
        assert_eq!((stats.requests, stats.ok_responses), (2, 2), "{kind}");
        let used = a.usage.expect("the reply states its usage");
        let mut sum = used;
        sum += c.response.usage;
        assert_eq!(sum, stats.sent, "{kind}");
        assert!(used.output > 0, "{kind}: the tool call's tokens");
        assert_eq!(
            a.cost,
            m.price().cost(PRICE_KEY, &used).map_err(|e| e.to_string())
        );
        assert!(
            a.cost.as_ref().is_ok_and(|c| c.0 > 0),
            "{kind}: {:?}",
            a.cost
        );
        // each wire wrote `tool_choice` in its provider's dialect, on both attempts
        let sent: Vec<serde_json::Value> = srv
            .received()
            .iter()
            .map(|r| r["body"]["tool_choice"].clone())
            .collect();
        assert_eq!(sent, [tool_choice.clone(), tool_choice], "{kind}");
        srv.shutdown().await.unwrap();
    }

    // without the rule, the same first reply is used as it came
    let srv = server(1).await;
    let m = model(&srv, "openai", "summariser");
    let c = m.generate(summary_request(&m), 0).await.result.unwrap();
    assert_eq!((c.attempts, c.response.tool_calls.len()), (1, 1));
    assert!(c.response.text.is_empty());
    srv.shutdown().await.unwrap();
}

/// `ModelError::Provider` after `attempts` attempts, its source an unusable reply
/// (its message, for the caller to check).
fn unusable_after(e: &ModelError, attempts: u32) -> String {
    match e {
        ModelError::Provider {
            attempts: n,
            source,
            ..
        } if *n == attempts => match source.as_ref() {
            ProviderError::Unusable { message, .. } => message.clone(),
            other => panic!("not an unusable reply: {other}"),
        },
        other => panic!("not the unusable path's error after {attempts} attempts: {other}"),
    }
}

#[tokio::test]
async fn the_rule_spends_the_unusable_limit_and_fails_as_the_unusable_path_does() {
    let srv = server(u32::MAX).await;
    let m = model(&srv, "openai", "summariser");
    let g = m
        .generate_accepting(summary_request(&m), 0, Accept::SUMMARY)
        .await;
    let err = g.result.unwrap_err();
    assert_eq!(unusable_after(&err, 3), TOOL_CALL);
    assert_eq!(g.unusable.len(), 3);
    assert_eq!(
        g.unusable.iter().map(|a| a.attempt).collect::<Vec<_>>(),
        [1, 2, 3]
    );
    assert!(g.unusable.iter().all(|a| a.reason == TOOL_CALL));
    assert_eq!(srv.stats().requests, 3, "no fourth request");
    srv.shutdown().await.unwrap();

    // a server whose every reply is empty: the provider's own unusable replies end in
    // the same error after the same attempts
    let mut config = SimServerConfig::new(Vec::new());
    config.fault_rate = 1.0;
    config.faults = vec![FaultKind::Empty];
    let srv = serve(config).await.unwrap();
    let m = model(&srv, "openai", "lc");
    let g = m.generate(summary_request(&m), 0).await;
    let message = unusable_after(&g.result.unwrap_err(), 3);
    assert!(message.contains("empty content"), "{message}");
    assert_eq!((g.unusable.len(), srv.stats().requests), (3, 3));
    srv.shutdown().await.unwrap();
}

#[tokio::test]
async fn attempts_stored_by_earlier_runs_count_against_the_limit() {
    // two tool calls, then the summary: within the limit of three answered attempts
    let srv = server(2).await;
    let m = model(&srv, "openai", "summariser");
    let g = m
        .generate_accepting(summary_request(&m), 0, Accept::SUMMARY)
        .await;
    assert_eq!(g.result.unwrap().response.text, SUMMARY);
    assert_eq!((g.unusable.len(), srv.stats().requests), (2, 3));
    srv.shutdown().await.unwrap();

    // the same, with one refused attempt stored by an earlier run: two are left, both
    // tool calls, and the summary is never asked for
    let srv = server(2).await;
    let m = model(&srv, "openai", "summariser");
    let g = m
        .generate_accepting(summary_request(&m), 1, Accept::SUMMARY)
        .await;
    assert_eq!(unusable_after(&g.result.unwrap_err(), 2), TOOL_CALL);
    assert_eq!((g.unusable.len(), srv.stats().requests), (2, 2));

    // the limit spent by earlier runs: no request at all
    let g = m
        .generate_accepting(summary_request(&m), 3, Accept::SUMMARY)
        .await;
    let message = unusable_after(&g.result.unwrap_err(), 0);
    assert!(message.contains("earlier runs"), "{message}");
    assert!(g.unusable.is_empty());
    assert_eq!(srv.stats().requests, 2, "nothing more was sent");
    srv.shutdown().await.unwrap();
}
