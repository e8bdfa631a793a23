//! Integration tests: the HTTP providers against the simulated server on 127.0.0.1:0.

mod e2e;
mod faults;
mod hostile;
#[cfg(feature = "live-api")]
mod live;
mod money3;
mod providers;
mod replicates;
mod sdk;

use std::sync::Arc;
use std::time::Duration;

use baton_http::{HttpProviders, SimServerConfig, SimServerHandle, serve};
use baton_models::{Model, PriceCard, Provider, ProviderConfig};
use baton_types::{Message, Task, Usage};

/// The bundled sample tasks (the simulated models recognise their shards).
pub fn tasks() -> Vec<Task> {
    baton_data::sample_dataset().tasks
}

/// A server with these settings applied over the defaults.
pub async fn server(tweak: impl FnOnce(&mut SimServerConfig)) -> SimServerHandle {
    let mut config = SimServerConfig::new(tasks());
    tweak(&mut config);
    serve(config).await.expect("the simulated server starts")
}

/// Set a fake key in a variable no other test uses.
pub fn fake_key(var: &str, value: &str) {
    // SAFETY: every test uses its own variable names, and this test binary reads the
    // environment only through `std::env`, which serialises access to it.
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var(var, value)
    };
}

/// A provider of `kind` pointed at the server.
pub fn provider(
    server: &SimServerHandle,
    kind: &str,
    key_env: Option<&str>,
    timeout: Duration,
) -> Arc<dyn Provider> {
    use baton_models::ProviderFactory;
    HttpProviders::new(timeout)
        .make(&ProviderConfig {
            name: format!("{kind}-model"),
            kind: kind.into(),
            model_id: "lc".into(),
            base_url: Some(server.base_url()),
            api_key_env: key_env.map(str::to_string),
            allow_http_with_key: false,
        })
        .expect("the provider builds")
}

/// A model over a provider, priced as `sim/<id>`.
pub fn model(provider: Arc<dyn Provider>, id: &str) -> Model {
    let key = format!("sim/{id}");
    let price = PriceCard::embedded().get(&key).expect("sim prices");
    Model::new(format!("{id}-model"), provider, id, key, price, 4)
}

/// The first `turns` user turns of a task's schedule with the system prompt.
pub fn opening(task: &Task) -> Vec<Message> {
    vec![
        Message::system("You are a careful assistant."),
        Message::user(task.shards[0].shard.clone()),
    ]
}

/// The cost of a usage at a card entry's rates, computed by hand from the card's JSON
/// (USD per token, converted to picodollars).
pub fn hand_cost(card_key: &str, u: &Usage) -> i64 {
    let card: serde_json::Value =
        serde_json::from_str(baton_models::EMBEDDED_PRICE_CARD).expect("card json");
    let rate = |field: &str| -> i64 {
        let usd = card[card_key][field].as_f64().unwrap_or(0.0);
        (usd * 1e12).round() as i64
    };
    u.uncached_in as i64 * rate("input_cost_per_token")
        + u.cache_read as i64 * rate("cache_read_input_token_cost")
        + u.cache_write_5m as i64 * rate("cache_creation_input_token_cost")
        + u.cache_write_1h as i64 * rate("cache_creation_input_token_cost_above_1hr")
        + u.output as i64 * rate("output_cost_per_token")
}
