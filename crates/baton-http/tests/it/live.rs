//! Live tests against the real OpenAI and Anthropic APIs. They spend a little money,
//! so they run only with `--features live-api` and the keys in OPENAI_API_KEY /
//! ANTHROPIC_API_KEY; without a key a test says so on stderr and returns.
//!
//! ```sh
//! OPENAI_API_KEY=... ANTHROPIC_API_KEY=... cargo test -p baton-http --features live-api live
//! ```

use std::time::Duration;

use baton_http::HttpProviders;
use baton_models::{GenerateConfig, Model, PriceCard, ProviderConfig, ProviderFactory};
use baton_types::Message;

/// Two turns against one real model: a reply, then a second turn that carries the
/// first reply as plain text; usage is sane and priced from the card.
#[allow(clippy::print_stderr)]
async fn two_turns(kind: &str, model_id: &str, key_var: &str, effort: Option<&str>) {
    if std::env::var(key_var).map_or(true, |v| v.trim().is_empty()) {
        eprintln!("SKIPPED: live {kind} test: {key_var} is not set");
        return;
    }
    let provider = HttpProviders::new(Duration::from_secs(120))
        .make(&ProviderConfig {
            name: format!("live-{kind}"),
            kind: kind.into(),
            model_id: model_id.into(),
            base_url: None,
            api_key_env: Some(key_var.into()),
            allow_http_with_key: false,
        })
        .unwrap();
    let price = PriceCard::embedded().get(model_id).unwrap();
    let model =
        Model::new(kind, provider, model_id, model_id, price, 1).with_config(GenerateConfig {
            temperature: None,
            max_tokens: Some(if effort.is_some() { 2000 } else { 200 }),
            reasoning_effort: effort.map(str::to_string),
            seed: None,
            ..GenerateConfig::default()
        });
    let mut messages = vec![
        Message::system("Answer in one short sentence."),
        Message::user("What is 17 + 25?"),
    ];
    let first = model
        .generate(model.request(messages.clone(), Some(1)), 0)
        .await
        .result
        .unwrap();
    assert!(
        first.response.text.contains("42"),
        "{}",
        first.response.text
    );
    assert!(first.response.usage.total_input() > 0 && first.response.usage.output > 0);
    assert!(!first.response.model_served.is_empty());
    messages.push(Message::assistant(first.response.text.clone()));
    messages.push(Message::user("Now double it."));
    let second = model
        .generate(model.request(messages, Some(1)), 0)
        .await
        .result
        .unwrap();
    assert!(
        second.response.text.contains("84"),
        "{}",
        second.response.text
    );
    eprintln!(
        "live {kind} {model_id} (served {}): {:?} {}; {:?} {}",
        first.response.model_served,
        first.response.usage,
        first.cost,
        second.response.usage,
        second.cost
    );
}

#[tokio::test]
async fn live_openai_chat() {
    two_turns("openai", "gpt-4o-mini", "OPENAI_API_KEY", None).await;
}

#[tokio::test]
async fn live_openai_responses() {
    two_turns(
        "openai-responses",
        "gpt-5-mini",
        "OPENAI_API_KEY",
        Some("low"),
    )
    .await;
}

#[tokio::test]
async fn live_anthropic() {
    two_turns("anthropic", "claude-haiku-4-5", "ANTHROPIC_API_KEY", None).await;
}
