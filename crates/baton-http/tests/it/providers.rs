//! Every provider kind round-trips through the simulated server, normalizes usage
//! (cache reads on later turns), is priced exactly, and never shows its key.

use std::time::Duration;

use baton_http::{HttpProviders, status_body};
use baton_models::{GenerateConfig, ProviderConfig, ProviderError};
use baton_types::Message;
use serde_json::json;

use crate::{fake_key, hand_cost, model, opening, provider, server, tasks};

const TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn each_provider_round_trips_and_later_turns_read_the_cache() {
    let task = &tasks()[0];
    for (kind, key) in [
        ("openai", Some("BATON_IT_RT_OPENAI")),
        ("openai-responses", Some("BATON_IT_RT_RESPONSES")),
        ("anthropic", Some("BATON_IT_RT_ANTHROPIC")),
        ("openai-compatible", None),
    ] {
        // a server per kind: the compatible provider speaks the same route as openai
        // and would find its prompt cached
        let srv = server(|_| {}).await;
        if let Some(var) = key {
            fake_key(var, "sk-roundtrip-not-a-real-key");
        }
        let m = model(provider(&srv, kind, key, TIMEOUT), "lc").with_config(GenerateConfig {
            // the current Anthropic API takes no temperature
            temperature: (kind != "anthropic").then_some(1.0),
            max_tokens: Some(500),
            reasoning_effort: (kind == "openai-responses").then(|| "low".to_string()),
            seed: None,
            ..GenerateConfig::default()
        });
        let first = m
            .generate(m.request(opening(task), Some(7)), 0)
            .await
            .result
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        let r1 = &first.response;
        assert!(!r1.text.is_empty(), "{kind}");
        assert_eq!(r1.model_served, "sim/lc", "{kind}");
        assert!(
            r1.raw
                .as_ref()
                .is_some_and(|raw| raw.get("usage").is_some()),
            "{kind}"
        );
        assert!(r1.finish_reason.is_some(), "{kind}");
        assert_eq!(r1.usage.cache_read, 0, "{kind}: a cold first turn");
        if kind == "anthropic" {
            // the breakpoint on the last user turn writes the whole prompt
            assert_eq!(r1.usage.uncached_in, 0, "{kind}");
            assert!(r1.usage.cache_write_5m > 0, "{kind}");
        } else {
            assert!(r1.usage.uncached_in > 0, "{kind}");
        }
        if kind == "openai-responses" {
            assert_eq!(r1.usage.reasoning, 16, "{kind}: low effort");
            assert!(r1.usage.output > r1.usage.reasoning, "{kind}");
        }

        let mut messages = opening(task);
        messages.push(Message::assistant(r1.text.clone()));
        messages.push(Message::user(task.shards[1].shard.clone()));
        let second = m
            .generate(m.request(messages, Some(7)), 0)
            .await
            .result
            .unwrap_or_else(|e| panic!("{kind} turn 2: {e}"));
        let u2 = second.response.usage;
        assert_eq!(
            u2.cache_read,
            r1.usage.total_input(),
            "{kind}: turn 2 reads turn 1's prompt from the cache"
        );
        assert!(u2.total_input() > u2.cache_read, "{kind}");
        assert_eq!(second.attempts, 1, "{kind}");
        for c in [&first, &second] {
            assert_eq!(
                c.cost.clone().unwrap().0,
                hand_cost("sim/lc", &c.response.usage),
                "{kind}: cost = usage x card"
            );
        }
        let stats = srv.stats();
        assert_eq!((stats.answered, stats.refused), (2, 0), "{kind}");
        let sent = if key.is_some() { 2 } else { 0 };
        assert_eq!(
            stats.with_credentials, sent,
            "{kind}: keys are sent where configured"
        );
        srv.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn keys_never_reach_debug_output_or_errors() {
    const SECRET: &str = "sk-live-LEAKCHECK-0123456789abcdef";
    let srv = server(|_| {}).await;
    let mut texts = Vec::new();
    for (kind, var) in [
        ("openai", "BATON_IT_LEAK_OPENAI"),
        ("openai-responses", "BATON_IT_LEAK_RESPONSES"),
        ("anthropic", "BATON_IT_LEAK_ANTHROPIC"),
        ("openai-compatible", "BATON_IT_LEAK_COMPAT"),
    ] {
        fake_key(var, SECRET);
        let providers = HttpProviders::new(TIMEOUT);
        let config = ProviderConfig {
            name: "m".into(),
            kind: kind.into(),
            model_id: "nope".into(),
            base_url: Some(srv.base_url()),
            api_key_env: Some(var.into()),
            allow_http_with_key: false,
        };
        let p = providers.provider(&config).unwrap();
        texts.push(format!("{p:?}"));
        let req = model(provider(&srv, kind, Some(var), TIMEOUT), "lc")
            .request(vec![Message::user("hello")], None);
        let http = p.build(&req).unwrap();
        let auth = http
            .headers()
            .get("authorization")
            .or_else(|| http.headers().get("x-api-key"))
            .expect("the key is sent");
        assert!(auth.is_sensitive());
        texts.push(format!("{http:?}"));
        texts.push(format!("{:?}", http.headers()));
        texts.push(serde_json::to_string(&req).unwrap());
        // an error status: the model does not exist on the server
        let m = model(provider(&srv, kind, Some(var), TIMEOUT), "lc");
        let mut bad = m.request(vec![Message::user("hello")], None);
        bad.model = "no-such-model".into();
        let err = m.generate(bad, 0).await.result.unwrap_err();
        assert!(err.to_string().contains("404"), "{err}");
        texts.push(format!("{err} {err:?}"));
        // a connection error: nothing listens there
        let dead = HttpProviders::new(TIMEOUT)
            .provider(&ProviderConfig {
                base_url: Some("http://127.0.0.1:9/v1".into()),
                ..config.clone()
            })
            .unwrap();
        let err = baton_models::Provider::generate(&dead, &req)
            .await
            .unwrap_err();
        assert!(matches!(err, ProviderError::Connection(_)), "{err:?}");
        texts.push(format!("{err} {err:?}"));
    }
    // a server that echoes the key in its error message is redacted too
    let headers = reqwest::header::HeaderMap::new();
    let echoed = status_body::status_error(
        401,
        &headers,
        json!({"error": {"message": format!("Incorrect API key provided: {SECRET}"), "type": "invalid_request_error", "code": "invalid_api_key"}})
            .to_string()
            .as_bytes(),
    );
    texts.push(baton_http::ApiKey::new(SECRET).redact(&echoed.to_string()));
    // a missing variable is named, and no value is shown
    let err = HttpProviders::default()
        .provider(&ProviderConfig {
            name: "m".into(),
            kind: "openai".into(),
            model_id: "x".into(),
            base_url: None,
            api_key_env: Some("BATON_IT_LEAK_UNSET".into()),
            allow_http_with_key: false,
        })
        .unwrap_err()
        .to_string();
    assert!(err.contains("BATON_IT_LEAK_UNSET"), "{err}");
    for t in &texts {
        assert!(!t.contains(SECRET), "the key leaked into: {t}");
        assert!(!t.contains("LEAKCHECK"), "part of the key leaked into: {t}");
    }
    assert!(texts.iter().any(|t| t.contains("****")));
    srv.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_server_refuses_what_a_client_must_never_send() {
    let srv = server(|_| {}).await;
    let client = reqwest::Client::new();
    let post = |path: &str, body: serde_json::Value| {
        client
            .post(format!("{}{path}", srv.base_url()))
            .header("anthropic-version", "2023-06-01")
            .json(&body)
            .send()
    };
    let replayed = post(
        "/responses",
        json!({"model": "lc", "store": false, "input": [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
            {"role": "user", "content": "again"}]}),
    )
    .await
    .unwrap();
    assert_eq!(replayed.status(), 400);
    let thinking = post(
        "/messages",
        json!({"model": "lc", "max_tokens": 10, "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                                               {"type": "text", "text": "hello"}]},
            {"role": "user", "content": "again"}]}),
    )
    .await
    .unwrap();
    assert_eq!(thinking.status(), 400);
    let no_cap = post(
        "/messages",
        json!({"model": "lc", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await
    .unwrap();
    assert_eq!(no_cap.status(), 400);
    assert_eq!(srv.stats().refused, 3);
    srv.shutdown().await.unwrap();
}

/// See: issue 13, item 3: the simulated server takes JSON-mode extraction requests on
/// every route and answers them in the JSON shape LiC's prompt asks for.
#[tokio::test]
async fn issue_13_extraction_prompts_are_answered_in_json_on_every_route() {
    let description = baton_types::answer_description(baton_types::Family::Math).unwrap();
    let prompt = format!("Expected: {description}\n\nResponse:\nSo 40 + 2.\nAnswer: 42");
    for (kind, key) in [
        ("openai", Some("BATON_IT_JSON_OPENAI")),
        ("openai-responses", Some("BATON_IT_JSON_RESPONSES")),
        ("anthropic", Some("BATON_IT_JSON_ANTHROPIC")),
        ("openai-compatible", None),
    ] {
        let srv = server(|_| {}).await;
        if let Some(var) = key {
            fake_key(var, "sk-json-not-a-real-key");
        }
        let m = model(provider(&srv, kind, key, TIMEOUT), "hc").with_config(GenerateConfig {
            max_tokens: Some(200),
            json_object: true,
            ..GenerateConfig::default()
        });
        let reply = m
            .generate(m.request(vec![Message::user(&prompt)], Some(1)), 0)
            .await
            .result
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        let json: serde_json::Value = serde_json::from_str(&reply.response.text)
            .unwrap_or_else(|e| panic!("{kind}: {e}: {}", reply.response.text));
        let answer = json["answer"]
            .as_str()
            .unwrap_or_else(|| panic!("{kind}: {json}"));
        assert!(answer.contains("42"), "{kind}: {answer}");
    }
}
