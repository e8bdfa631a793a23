//! An agent experiment on a folder that holds an earlier run of it: what changed, said
//! before any call, and whether the run can grow the stored one without paying again.
//!
//! The stored experiment is compared with the file in the form its spec hash is taken
//! of (run-time settings such as concurrency left out), key by key. A change of the
//! plan's shape (`name`, `limit`, `tasks`, `replicates`, `skip_invalid`, a new model,
//! and the handoff study's `interfaces`, `percentiles` and `pairs`) adds episodes: the
//! stored ones are reused and only the new ones run. Episodes of cells or tasks the
//! experiment no longer has are retired as removed ([`Growth::retire`]: kept in the
//! store, out of the report).
//!
//! The handoff study's switch calls are computed again from the current anchors before
//! the handoffs run (`handoff::run_handoffs`): a stored handoff whose switch call is
//! unchanged is reused, one whose switch call moved (its bucket's anchors grew or
//! shrank) is retired as changed and runs afresh at the new one. Which ones move is
//! known only once the new anchors ran, so the printed upper bound counts every stored
//! handoff of a bucket whose anchors change. A part keeps the switch calls it adopted
//! (computed over every part's anchors).
//!
//! A change that would change what a stored episode sends or how it is scored (a
//! model's setting, the protocol, a limit, the templates, the sandbox, the seed) is
//! listed with the episodes it concerns: a model's setting those that call the model
//! (its anchors, the handoffs it sends or receives), any other key every episode. With
//! `--allow-changed` ([`Growth::rerun`]) they are retired as changed (kept in the store,
//! out of the report) and run afresh, and the switch calls computed from the concerned
//! models' anchors are dropped, to be computed again from the new anchors; a handoff
//! of other models keeps its switch call and is reused. Without it the run is refused,
//! as it is for a part's store (the whole study changes). Where a model's calls are
//! sent and with which key (`base_url`, `api_key_env`) change nothing they ask: listed,
//! nothing re-run.
//!
//! Refused before any call, naming the keys and the stored episodes concerned:
//!
//! * in a part's store with switch calls, anchors that change in a bucket that has
//!   them, and new percentiles or pairs (grow the whole study);
//! * a planned episode whose stored one was retired as removed by an earlier run that
//!   sent it with other settings (its [`identity`] differs; with the same identity it
//!   is made current again and reused), and removed episodes in a part's store (the
//!   whole study grows).
//!
//! Every current episode without an identity (stored by an older baton, or by the last
//! run) adopts the one it has under the stored experiment it ran with, before anything
//! is retired: a removed episode keeps the identity it ran with.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use baton_agent::AgentDataset;
use baton_store::{AgentCell, AgentEpisodeRow, Reader};
use baton_types::{Cost, EpisodeStatus, ExperimentKind};
use serde_json::{Value, json};

use super::AgentSpec;
use crate::changes::{self, Changes, KeyChange};
use crate::{RunError, RunOptions};

/// Keys whose change only adds or drops episodes.
const SHAPE: &[&str] = &["name", "limit", "tasks", "replicates", "skip_invalid"];

/// A model's keys that say how its calls reach it, not what they ask.
const TRANSPORT: &[&str] = &["base_url", "api_key_env"];

/// The handoff study's keys that only add cells.
const HANDOFF_SHAPE: &[&str] = &["handoff.interfaces", "handoff.percentiles", "handoff.pairs"];

/// The normalized, versioned form of an agent experiment, as stored.
pub(crate) fn normalized(spec: &AgentSpec) -> Value {
    json!({
        "version": changes::EXPERIMENT_JSON_VERSION,
        "kind": "agent",
        "experiment": serde_json::to_value(spec.canonical()).expect("a spec always serializes"),
    })
}

/// One planned episode: its cell's key, task and replicate.
type Key = (String, String, u32);

/// An agent episode's identity under the experiment `experiment` (the normalized form's
/// `experiment` object): the sha256 of what decides what the episode sends and how it
/// is scored, from an explicit list: the task's content, the cell, the replicate, the
/// request settings of each model it calls (where and with which key they are sent
/// left out), and every other key but the plan's shape (the protocol, limits, templates
/// file, sandbox, seed). A handoff's switch call is checked when the switch calls are
/// computed again (`handoff::run_handoffs`), since it is known only then.
pub(crate) fn identity(
    experiment: &Value,
    cell: &AgentCell,
    task_sha256: &str,
    replicate: u32,
) -> String {
    use sha2::{Digest, Sha256};
    let mut models = serde_json::Map::new();
    // an anchor's one model once, a handoff's sender then receiver
    for m in [cell.first_model(), cell.last_model()] {
        let mut settings = experiment["models"][m].clone();
        if let Some(o) = settings.as_object_mut() {
            for t in TRANSPORT {
                o.remove(*t);
            }
        }
        models.insert(m.to_string(), settings);
    }
    let mut common = experiment.clone();
    if let Some(o) = common.as_object_mut() {
        o.remove("models");
        for k in SHAPE {
            o.remove(*k);
        }
        if let Some(h) = o.get_mut("handoff").and_then(Value::as_object_mut) {
            for k in HANDOFF_SHAPE {
                h.remove(k.trim_start_matches("handoff."));
            }
        }
    }
    let text = json!({
        "identity": 1,
        "task": task_sha256,
        "cell": cell,
        "replicate": replicate,
        "models": models,
        "common": common,
    })
    .to_string();
    hex::encode(Sha256::digest(text))
}

/// What a run grows on a stored agent experiment.
pub(crate) struct Growth {
    /// What changed, said before any call.
    pub changes: Changes,
    /// When stored episodes belong to cells or tasks the experiment no longer has:
    /// every planned episode as (task id, cell key, replicate), the rest to retire as
    /// removed ([`baton_store::Store::retire_removed`]).
    pub retire: Option<Vec<(String, String, u32)>>,
    /// With `--allow-changed`, the stored episodes a changed setting concerns (to run
    /// afresh) and the models whose switch calls are computed again
    /// ([`baton_store::Store::rerun_agent_episodes`]).
    pub rerun: Option<(Vec<i64>, Vec<String>)>,
    /// Identities adopted by stored episodes that have none (stored before identities,
    /// or by the last run), computed from the stored experiment they ran under.
    pub adopt: Vec<(i64, String)>,
    /// Episodes retired as removed whose cell comes back with the identity they have:
    /// current again, reused.
    pub revive: Vec<i64>,
}

/// What a run of `spec` on the folder of `store_path` changes there: `None` when the
/// folder holds no experiment yet. Refused before any call when the change cannot be
/// run as growth (see the module docs).
pub(crate) fn compare(
    store_path: &Path,
    spec: &AgentSpec,
    options: &RunOptions,
    dataset: &AgentDataset,
    independent: bool,
) -> Result<Option<Growth>, RunError> {
    if !store_path.exists() {
        return Ok(None);
    }
    let reader = Reader::open(store_path)?;
    let Ok(row) = reader.experiment() else {
        return Ok(None);
    };
    if row.meta.kind != ExperimentKind::Agent {
        return Err(RunError::OtherKind {
            store: store_path.to_path_buf(),
            stored: row.meta.kind,
            given: ExperimentKind::Agent,
            hint: "; run the agent experiment with another --out folder",
        });
    }
    // a stored text this build cannot read is left to the store's own check
    let Ok((stored, _)) = AgentSpec::read("the stored experiment", &row.meta.spec_toml) else {
        return Ok(None);
    };
    let keys = changes::diff(
        &normalized(&stored)["experiment"],
        &normalized(spec)["experiment"],
    );
    let episodes = reader.agent_episodes()?;
    let stored_experiment = &normalized(&stored)["experiment"];
    let current_experiment = &normalized(spec)["experiment"];
    let all = reader.identities()?;
    // every current episode ran under the stored experiment: one without an identity
    // adopts the one it has there
    let adopt: Vec<(i64, String)> = all
        .iter()
        .filter(|e| e.retired.is_none() && e.identity.is_none())
        .filter_map(|e| {
            let cell: AgentCell = serde_json::from_str(&e.cell_json).ok()?;
            let id = identity(stored_experiment, &cell, &e.schedule_sha256, e.replicate);
            Some((e.id, id))
        })
        .collect();
    // a removed cell that comes back: reused when its identity is today's, else refused
    let sha_of: BTreeMap<&str, String> = dataset
        .tasks
        .iter()
        .map(|t| Ok((t.id.as_str(), super::task_sha256(t)?)))
        .collect::<Result<_, RunError>>()?;
    let mut revive: Vec<i64> = Vec::new();
    let mut back: Vec<Key> = Vec::new();
    for e in all
        .iter()
        .filter(|e| e.retired.as_deref() == Some(baton_store::RETIRED_REMOVED))
    {
        let Ok(cell) = serde_json::from_str::<AgentCell>(&e.cell_json) else {
            continue;
        };
        let key = (e.cell_key.clone(), e.task_id.clone(), e.replicate);
        let Some(sha) = sha_of.get(e.task_id.as_str()) else {
            continue;
        };
        // whether the plan has it is decided below; its identity now
        let now = identity(current_experiment, &cell, sha, e.replicate);
        if e.identity.as_deref() == Some(now.as_str()) {
            revive.push(e.id);
        }
        back.push(key);
    }
    let stored_buckets: BTreeSet<String> = reader
        .agent_thresholds()?
        .into_iter()
        .map(|t| t.bucket.name().to_string())
        .collect();
    let thresholds = !stored_buckets.is_empty();

    // the plan, in the dry run's cell order, with each cell's bound per episode
    let estimate = super::dry_run::estimate(spec, options, dataset)?;
    let mut cells_planned: Vec<AgentCell> = spec
        .models
        .keys()
        .map(|m| AgentCell::Single { model: m.clone() })
        .collect();
    if let Some(h) = &spec.handoff {
        cells_planned.extend(h.cells(independent));
    }
    let mut bound: BTreeMap<String, (Cost, usize)> = BTreeMap::new();
    for (cell, e) in cells_planned.iter().zip(&estimate.cells) {
        let n = e.episodes.max(1);
        let one = Cost(e.paid_upper.0 / n as i64);
        bound.insert(cell.label(), (one, e.calls / n));
    }
    let mut planned: BTreeSet<Key> = BTreeSet::new();
    for r in 0..spec.replicates {
        for t in &dataset.tasks {
            for c in &cells_planned {
                planned.insert((c.label(), t.id.clone(), r));
            }
        }
    }
    let mut changes = Changes {
        stored: true,
        ..Changes::default()
    };
    let mut stored_keys = BTreeSet::new();
    for e in &episodes {
        let key = (e.cell.label(), e.task_id.clone(), e.replicate);
        if !planned.contains(&key) {
            changes.removed += 1;
        } else if e.outcome.status == EpisodeStatus::Incomplete {
            changes.resumed += 1;
        } else {
            changes.reused += 1;
        }
        stored_keys.insert(key);
    }
    for key in &planned {
        let stored = stored_keys.contains(key);
        if !stored {
            changes.new += 1;
        }
        let finished = stored
            && episodes.iter().any(|e| {
                e.outcome.status != EpisodeStatus::Incomplete
                    && (e.cell.label(), e.task_id.clone(), e.replicate) == *key
            });
        if !finished && let Some((one, calls)) = bound.get(&key.0) {
            changes.upper_bound += *one;
            changes.calls_upper += calls;
        }
    }
    // what each changed key would do to the stored episodes
    let mut refused: Vec<String> = Vec::new();
    let mut concerned: BTreeSet<i64> = BTreeSet::new();
    // the models whose anchors run afresh: their switch calls are computed again
    let mut prefix_models: BTreeSet<String> = BTreeSet::new();
    for k in &keys {
        let top = k.key.split('.').next().unwrap_or_default();
        let model = k
            .key
            .strip_prefix("models.")
            .map(|rest| rest.split('.').next().unwrap_or_default());
        match model {
            // a new model adds its cells; a dropped one is a removed cell
            Some(m) if !stored.models.contains_key(m) || !spec.models.contains_key(m) => {}
            // where and with which key a call is sent changes nothing it asks
            Some(m) if TRANSPORT.iter().any(|t| k.key == format!("models.{m}.{t}")) => {}
            Some(m) => {
                let uses: Vec<i64> = episodes
                    .iter()
                    .filter(|e| e.cell.uses(m))
                    .map(|e| e.id)
                    .collect();
                if !uses.is_empty() {
                    refused.push(format!(
                        "{}: {} stored episode(s) of model {m:?} would be sent again with the new setting",
                        k.key,
                        uses.len()
                    ));
                    concerned.extend(uses);
                    prefix_models.insert(m.to_string());
                }
            }
            None if SHAPE.contains(&top) || HANDOFF_SHAPE.iter().any(|h| k.key == *h) => {}
            None if episodes.is_empty() => {}
            None => {
                refused.push(format!(
                    "{}: every stored episode ({}) depends on it",
                    k.key,
                    episodes.len()
                ));
                concerned.extend(episodes.iter().map(|e| e.id));
                prefix_models.extend(stored.models.keys().cloned());
            }
        }
    }
    changes.keys = keys.clone();
    // with --allow-changed the concerned episodes that the experiment still has are
    // retired as changed and run afresh; without it they are refused (below)
    let reruns: Vec<&AgentEpisodeRow> = episodes
        .iter()
        .filter(|e| concerned.contains(&e.id))
        .filter(|e| planned.contains(&(e.cell.label(), e.task_id.clone(), e.replicate)))
        .collect();
    changes.rerun = reruns.len();
    for e in &reruns {
        if e.outcome.status == EpisodeStatus::Incomplete {
            changes.resumed -= 1;
        } else {
            changes.reused -= 1;
            // a finished episode's bound was not counted above
            if let Some((one, calls)) = bound.get(&e.cell.label()) {
                changes.upper_bound += *one;
                changes.calls_upper += calls;
            }
        }
    }
    let allowed = options.allow_changed && options.part.is_none();
    if allowed {
        refused.clear();
    } else if !refused.is_empty() {
        refused.push(
            "--allow-changed retires those episodes (kept in the store) and runs them afresh"
                .into(),
        );
    }
    // episodes of removed cells or tasks are retired as removed and leave the report
    let removed: Vec<&AgentEpisodeRow> = episodes
        .iter()
        .filter(|e| !planned.contains(&(e.cell.label(), e.task_id.clone(), e.replicate)))
        .collect();
    if thresholds && spec.handoff.is_some() {
        let grown = |key: &str| keys.iter().any(|k: &KeyChange| k.key == key);
        // the buckets with stored switch calls whose anchors change: new anchors (more
        // tasks, replicates or models), or removed ones of a model the study keeps
        let bucket_of: BTreeMap<&str, &str> = dataset
            .tasks
            .iter()
            .map(|t| (t.id.as_str(), t.difficulty.name()))
            .collect();
        let mut moving: BTreeSet<String> = planned
            .iter()
            .filter(|key| key.0.starts_with("single(") && !stored_keys.contains(*key))
            .filter_map(|key| bucket_of.get(key.1.as_str()).map(|b| b.to_string()))
            .filter(|b| stored_buckets.contains(b))
            .collect();
        moving.extend(
            removed
                .iter()
                .filter(|e| {
                    matches!(&e.cell, AgentCell::Single { model } if spec.models.contains_key(model))
                })
                .map(|e| e.difficulty.name().to_string())
                .filter(|b| stored_buckets.contains(b)),
        );
        if options.part.is_some() {
            // a part's switch calls are adopted from every part's anchors
            if !moving.is_empty() {
                refused.push(
                    "the handoff study's switch calls are stored, computed from every part's anchors; a part cannot change its anchors in a bucket that has them: grow the whole study".into(),
                );
            }
            for key in ["handoff.percentiles", "handoff.pairs"] {
                if grown(key) {
                    refused.push(format!(
                        "{key}: a part's switch calls are adopted from every part's anchors: grow the whole study"
                    ));
                }
            }
        } else {
            // the switch calls are computed again from the anchors before the handoffs
            // run: a stored handoff in such a bucket whose switch call moves runs afresh,
            // so its bound counts
            for e in &episodes {
                if matches!(e.cell, AgentCell::AgentHandoff { .. })
                    && moving.contains(e.difficulty.name())
                    && e.outcome.status != EpisodeStatus::Incomplete
                    && !concerned.contains(&e.id)
                    && planned.contains(&(e.cell.label(), e.task_id.clone(), e.replicate))
                    && let Some((one, calls)) = bound.get(&e.cell.label())
                {
                    changes.upper_bound += *one;
                    changes.calls_upper += calls;
                }
            }
        }
    }
    if !removed.is_empty() && options.part.is_some() {
        refused.push(format!(
            "{} stored episode(s) of this part belong to tasks, models or cells the experiment no longer has; grow the whole study, not a part",
            removed.len()
        ));
    }
    // a removed cell back in the plan: reused when its identity is today's
    let revived: BTreeSet<i64> = all
        .iter()
        .filter(|e| revive.contains(&e.id))
        .filter(|e| planned.contains(&(e.cell_key.clone(), e.task_id.clone(), e.replicate)))
        .map(|e| e.id)
        .collect();
    let changed_back: Vec<&Key> = back
        .iter()
        .filter(|k| planned.contains(*k))
        .filter(|k| {
            !all.iter().any(|e| {
                revived.contains(&e.id)
                    && (e.cell_key.clone(), e.task_id.clone(), e.replicate) == **k
            })
        })
        .collect();
    if let Some(first) = changed_back.first() {
        refused.push(format!(
            "{} planned episode(s) (first: cell {}, task {:?}, replicate {}) were retired as removed by an earlier run that sent them with other settings",
            changed_back.len(),
            first.0,
            first.1,
            first.2
        ));
    }
    // revived episodes are stored ones: reused, not new
    for e in all.iter().filter(|e| revived.contains(&e.id)) {
        changes.new -= 1;
        if e.status == "incomplete" {
            changes.resumed += 1;
        } else {
            changes.reused += 1;
        }
    }
    if refused.is_empty() {
        let retire = (!removed.is_empty()).then(|| {
            planned
                .iter()
                .map(|(cell, task, r)| (task.clone(), cell.clone(), *r))
                .collect()
        });
        let rerun = (allowed && !reruns.is_empty()).then(|| {
            (
                reruns.iter().map(|e| e.id).collect(),
                prefix_models.into_iter().collect(),
            )
        });
        return Ok(Some(Growth {
            changes,
            retire,
            rerun,
            adopt,
            revive: revived.into_iter().collect(),
        }));
    }
    Err(RunError::AgentChanged {
        source_name: options.source_name.clone(),
        changes: changes.to_string(),
        why: refused,
    })
}
