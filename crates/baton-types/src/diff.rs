//! What changed between a stored experiment and the one given now, key by key: the one
//! comparison every study uses to say, before anything is paid, what a run on an existing
//! folder changes (the chat and agent studies in `baton-runner`, the trap bench in
//! `baton-handover`).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::Value;

/// One changed key of an experiment (or, where a study compares input files too, one
/// changed file, named by the study).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyChange {
    /// The dotted key (`switch_points`, `models.lc.temperature`).
    pub key: String,
    /// The stored value, as compact JSON (`(none)` when absent).
    pub old: String,
    /// The value now.
    pub new: String,
}

impl fmt::Display for KeyChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} → {}", self.key, self.old, self.new)
    }
}

/// The keys whose values differ between `old` and `new`, dotted (`models.lc.temperature`),
/// with each side's value as compact JSON (`(none)` where absent or null), in key order.
pub fn diff(old: &Value, new: &Value) -> Vec<KeyChange> {
    let mut out = Vec::new();
    walk("", Some(old), Some(new), &mut out);
    out
}

fn walk(key: &str, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<KeyChange>) {
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let sub = if key.is_empty() {
                    k.clone()
                } else {
                    format!("{key}.{k}")
                };
                walk(&sub, a.get(k), b.get(k), out);
            }
        }
        (a, b) if a == b => {}
        (a, b) => {
            let show = |v: Option<&Value>| match v {
                None | Some(Value::Null) => "(none)".to_string(),
                Some(v) => v.to_string(),
            };
            if show(a) != show(b) {
                out.push(KeyChange {
                    key: key.to_string(),
                    old: show(a),
                    new: show(b),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_diff_names_each_changed_key_with_both_values() {
        let old = json!({"limit": 2, "switch_points": ["early"], "models": {"lc": {"model": "a"}},
            "seed": null});
        let new = json!({"limit": 3, "switch_points": ["early", "middle"],
            "models": {"lc": {"model": "a", "temperature": 0.5}}});
        let lines: Vec<String> = diff(&old, &new).iter().map(ToString::to_string).collect();
        assert_eq!(
            lines,
            [
                "limit: 2 → 3",
                "models.lc.temperature: (none) → 0.5",
                "switch_points: [\"early\"] → [\"early\",\"middle\"]"
            ]
        );
        assert!(diff(&new, &new).is_empty());
    }
}
