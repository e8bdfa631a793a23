//! A `[models.NAME.sim]` table refines its `sim/ID` preset: the keys it gives replace
//! the preset's, the others keep the preset's values (adding only `latency_ms` to
//! `sim/lc` keeps its skill of 0.45).

use serde::Serialize;
use serde::de::DeserializeOwned;
use toml::{Table, Value};

/// `preset` with the keys of `table` over it; an unknown key or a wrong type is the
/// settings type's own error (with a did-you-mean).
pub(crate) fn refine<T: Serialize + DeserializeOwned>(
    preset: &T,
    table: Value,
) -> Result<T, String> {
    let Value::Table(given) = table else {
        return Err("must be a table".into());
    };
    let mut merged: Table = Table::try_from(preset).map_err(|e| e.to_string())?;
    merged.extend(given);
    Value::Table(merged)
        .try_into()
        .map_err(|e: toml::de::Error| baton_models::with_did_you_mean(e.to_string().trim_end()))
}

/// The `sim` table of each model of a chat experiment's `text` (and of its extractor),
/// by model name (`extractor` for the extractor).
pub(crate) fn chat_sim_tables(text: &str) -> Vec<(String, Value)> {
    let Ok(table) = toml::from_str::<Table>(text) else {
        return Vec::new();
    };
    let sim = |m: &Value| m.as_table().and_then(|t| t.get("sim")).cloned();
    let models = table
        .get("models")
        .and_then(Value::as_table)
        .into_iter()
        .flatten()
        .filter_map(|(name, m)| sim(m).map(|s| (name.clone(), s)));
    // `[extractor]`, or `[chat.extractor]`
    let in_chat = table
        .get("chat")
        .and_then(Value::as_table)
        .and_then(|c| c.get("extractor"));
    let extractor = table
        .get("extractor")
        .or(in_chat)
        .and_then(sim)
        .map(|s| ("extractor".to_string(), s));
    models.chain(extractor).collect()
}
