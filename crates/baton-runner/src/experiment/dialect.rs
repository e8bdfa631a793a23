//! One experiment dialect for both kinds of experiment.
//!
//! The keys both kinds share mean the same in each and are written the same way, at the
//! top level: `name`, `dataset`, `limit`, `skip_invalid`, `replicates`, `seed`,
//! `concurrency`, `interfaces`, `batch`, `prices`, `retry_budget_secs`, the
//! `[models.NAME]` tables and the `[[pairs]]` (`low`, `high`, optional `name`). What only
//! one kind has lives in its own table: `[chat]` ([`CHAT_KEYS`]) or `[agent]`
//! ([`AGENT_KEYS`]); an agent experiment's handoff study keeps its own knobs in
//! `[handoff]` (`percentiles`, `independent`, `texts`) and its sandbox in
//! `[environment]`.
//!
//! Files written before the dialect was shared still read: a chat file's chat keys at
//! the top level (the chat's first spelling, read as is), and an agent file's agent keys
//! at the top level, `[handoff] pairs = [["lc", "hc"]]` and `[handoff] interfaces`, each
//! read with a warning naming the new spelling. Both spellings of one key at once is an
//! error. Normalising happens on the TOML table before it is read into the kind's spec
//! type, so an older file and its rewrite in the shared dialect are the same experiment
//! (the same spec hash, the same store).

use baton_models::{closest, with_did_you_mean};
use toml::{Table, Value};

/// Keys only a chat experiment has: written in `[chat]` (or at the top level).
pub const CHAT_KEYS: &[&str] = &[
    "families",
    "switch_points",
    "directions",
    "baselines",
    "fork_prefixes",
    "templates",
    "lic_dir",
    "extraction",
    "extractor",
    "spider_dir",
];

/// Keys only an agent experiment has: written in `[agent]`.
pub const AGENT_KEYS: &[&str] = &[
    "tasks",
    "protocol",
    "step_limit",
    "cost_limit_usd",
    "agent_templates",
    "swebench_python",
];

/// Read `text` as the spec type `T` after normalising its table with `normalise`. An
/// unchanged table is read from the text itself, so errors keep their line and column.
pub(crate) fn read<T: serde::de::DeserializeOwned>(
    text: &str,
    normalise: fn(Table) -> Result<Normalized, String>,
) -> Result<(T, Vec<String>), String> {
    let message = |e: toml::de::Error| with_did_you_mean(&e.to_string());
    let table: Table = toml::from_str(text).map_err(message)?;
    let original = table.clone();
    let n = normalise(table)?;
    let spec = if n.table == original {
        toml::from_str(text).map_err(message)?
    } else {
        n.table.try_into().map_err(message)?
    };
    Ok((spec, n.warnings))
}

/// A file's table in the form its spec type reads, with the warnings for older
/// spellings.
#[derive(Debug)]
pub(crate) struct Normalized {
    /// The table, kind-specific keys at the top level.
    pub table: Table,
    /// One line per older spelling read.
    pub warnings: Vec<String>,
}

/// A chat experiment's table: `kind` (if given) must be `chat`; `[chat]` is lifted.
pub(crate) fn chat(mut table: Table) -> Result<Normalized, String> {
    match table.remove("kind") {
        None => {}
        Some(Value::String(k)) if k == "chat" => {}
        Some(other) => {
            return Err(format!(
                "kind = {other}: a chat experiment's kind is \"chat\" (or leave it out)"
            ));
        }
    }
    if table.contains_key("agent") {
        return Err("[agent] is for kind = \"agent\" experiments".into());
    }
    lift(&mut table, "chat", CHAT_KEYS)?;
    Ok(Normalized {
        table,
        warnings: Vec::new(),
    })
}

/// An agent experiment's table: `[agent]` is lifted, the shared `[[pairs]]` and
/// `interfaces` move into the handoff study's table, and the older spellings are read
/// with a warning.
pub(crate) fn agent(mut table: Table) -> Result<Normalized, String> {
    let mut warnings = Vec::new();
    if table.contains_key("chat") {
        return Err("[chat] is for chat experiments; this one has kind = \"agent\"".into());
    }
    for key in AGENT_KEYS {
        if table.contains_key(*key) {
            warnings.push(format!(
                "{key} at the top level is the older spelling of an agent setting; write it in [agent]"
            ));
        }
    }
    lift(&mut table, "agent", AGENT_KEYS)?;
    let pairs = table.remove("pairs");
    let interfaces = table.remove("interfaces");
    if pairs.is_none() && interfaces.is_none() && !table.contains_key("handoff") {
        return Ok(Normalized { table, warnings });
    }
    let handoff = table
        .entry("handoff")
        .or_insert_with(|| Value::Table(Table::new()));
    let Value::Table(handoff) = handoff else {
        return Err("handoff must be a table ([handoff])".into());
    };
    match (pairs, handoff.contains_key("pairs")) {
        (Some(_), true) => {
            return Err(
                "pairs are given twice, as [[pairs]] and as handoff.pairs; keep [[pairs]]".into(),
            );
        }
        (Some(p), false) => {
            handoff.insert("pairs".into(), pair_arrays(p)?);
        }
        (None, true) => warnings.push(
            "handoff.pairs = [[\"lc\", \"hc\"]] is the older spelling; write [[pairs]] with low = \"lc\" and high = \"hc\", as a chat experiment does".into(),
        ),
        (None, false) => {
            return Err(
                "the handoff study needs pairs: name at least one [[pairs]] with low and high"
                    .into(),
            );
        }
    }
    match (interfaces, handoff.contains_key("interfaces")) {
        (Some(_), true) => {
            return Err(
                "interfaces are given twice, at the top level and in [handoff]; keep the top-level key".into(),
            );
        }
        (Some(i), false) => {
            handoff.insert("interfaces".into(), i);
        }
        (None, true) => warnings.push(
            "handoff.interfaces is the older spelling; write interfaces at the top level, as a chat experiment does".into(),
        ),
        (None, false) => {}
    }
    Ok(Normalized { table, warnings })
}

/// `[[pairs]]` tables (`low`, `high`, an optional `name`) as the agent study's
/// `[low, high]` arrays.
fn pair_arrays(pairs: Value) -> Result<Value, String> {
    let Value::Array(pairs) = pairs else {
        return Err("pairs must be an array of tables: [[pairs]] with low and high".into());
    };
    let mut out = Vec::with_capacity(pairs.len());
    for (i, p) in pairs.into_iter().enumerate() {
        let Value::Table(mut p) = p else {
            return Err(format!("pairs[{i}] must be a table with low and high"));
        };
        let mut role = |key: &str| match p.remove(key) {
            Some(Value::String(s)) => Ok(Value::String(s)),
            Some(other) => Err(format!("pairs[{i}].{key} = {other} must be a model name")),
            None => Err(format!("pairs[{i}]: {key} is missing")),
        };
        let (low, high) = (role("low")?, role("high")?);
        // a pair's name labels chat tables; the agent study labels pairs `low->high`
        p.remove("name");
        if let Some(key) = p.keys().next() {
            return Err(format!("pairs[{i}]: unknown key {key}"));
        }
        out.push(Value::Array(vec![low, high]));
    }
    Ok(Value::Array(out))
}

/// Move the keys of the `[section]` table to the top level: each must be one of `keys`,
/// and none may be given at both places.
fn lift(table: &mut Table, section: &str, keys: &[&str]) -> Result<(), String> {
    let Some(inner) = table.remove(section) else {
        return Ok(());
    };
    let Value::Table(inner) = inner else {
        return Err(format!("{section} must be a table ([{section}])"));
    };
    for (key, value) in inner {
        if !keys.contains(&key.as_str()) {
            let hint = closest(&key, keys.iter().copied())
                .map(|k| format!("; did you mean {k}?"))
                .unwrap_or_default();
            return Err(format!(
                "{section}.{key} is not one of the [{section}] settings ({}){hint}",
                keys.join(", ")
            ));
        }
        if table.contains_key(&key) {
            return Err(format!(
                "{key} is given twice, in [{section}] and at the top level; keep the one in [{section}]"
            ));
        }
        table.insert(key, value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn an_agent_file_in_the_shared_dialect_reads_as_its_older_spelling() {
        let new = agent(table(
            "kind = \"agent\"\ninterfaces = [\"raw\"]\n[agent]\nstep_limit = 9\n[[pairs]]\nname = \"x\"\nlow = \"lc\"\nhigh = \"hc\"\n[handoff]\npercentiles = [50]\n",
        ))
        .unwrap();
        assert!(new.warnings.is_empty(), "{:?}", new.warnings);
        let old = agent(table(
            "kind = \"agent\"\nstep_limit = 9\n[handoff]\npairs = [[\"lc\", \"hc\"]]\ninterfaces = [\"raw\"]\npercentiles = [50]\n",
        ))
        .unwrap();
        assert_eq!(new.table, old.table);
        assert_eq!(old.warnings.len(), 3, "{:?}", old.warnings);
        assert!(old.warnings[0].starts_with("step_limit at the top level"));
        assert!(old.warnings[1].contains("[[pairs]]"));
        assert!(old.warnings[2].contains("handoff.interfaces"));
    }

    #[test]
    fn pairs_without_a_handoff_table_start_the_study_with_its_defaults() {
        let n = agent(table(
            "kind = \"agent\"\n[[pairs]]\nlow = \"a\"\nhigh = \"b\"\n",
        ))
        .unwrap();
        assert_eq!(
            n.table["handoff"].as_table().unwrap()["pairs"],
            Value::Array(vec![Value::Array(vec!["a".into(), "b".into()])])
        );
    }

    #[test]
    fn a_key_given_twice_or_in_the_wrong_table_is_named() {
        let err = agent(table("step_limit = 3\n[agent]\nstep_limit = 4\n")).unwrap_err();
        assert!(err.starts_with("step_limit is given twice"), "{err}");
        let err = agent(table("[agent]\nfamilies = [\"math\"]\n")).unwrap_err();
        assert!(
            err.starts_with("agent.families is not one of the [agent] settings"),
            "{err}"
        );
        let err = chat(table("[chat]\nstep_limit = 4\n")).unwrap_err();
        assert!(
            err.starts_with("chat.step_limit is not one of the [chat] settings"),
            "{err}"
        );
        let err = agent(table(
            "[[pairs]]\nlow = \"a\"\nhigh = \"b\"\n[handoff]\npairs = [[\"a\", \"b\"]]\n",
        ))
        .unwrap_err();
        assert!(err.starts_with("pairs are given twice"), "{err}");
        let err = agent(table("[[pairs]]\nlow = \"a\"\n")).unwrap_err();
        assert_eq!(err, "pairs[0]: high is missing");
        let err = chat(table("kind = \"agents\"\n")).unwrap_err();
        assert!(err.contains("\"chat\""), "{err}");
    }

    #[test]
    fn a_chat_table_lifts_to_the_top_level() {
        let n = chat(table(
            "kind = \"chat\"\nname = \"x\"\n[chat]\nfamilies = [\"math\"]\nswitch_points = [2]\n",
        ))
        .unwrap();
        assert_eq!(
            n.table,
            table("name = \"x\"\nfamilies = [\"math\"]\nswitch_points = [2]\n")
        );
    }
}
