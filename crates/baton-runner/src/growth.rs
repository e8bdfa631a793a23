//! A chat run on a folder that already holds the experiment: compare what is stored
//! with what is planned, before any call.
//!
//! 1. Episodes stored before identities existed adopt the identity the stored
//!    experiment gives them ([`crate::identity`]).
//! 2. Each planned episode is reused (same identity, finished), resumed (same identity,
//!    unfinished), new, or re-run (another identity: the stored one is kept and
//!    retired when the run opens the new one); current episodes the plan no longer has
//!    are counted as removed.
//! 3. A price card that changed re-prices every stored call and attempt from its
//!    stored usage; nothing is sent again for it.
//!
//! What this finds is [`Changes`]; the run states it before its first call.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use baton_models::{Model, PriceCard};
use baton_store::{Reader, Repricing, Store, StoredIdentity};
use baton_types::{Cell, Cost, EpisodeStatus, ExperimentKind, Family, Phase};
use serde_json::Value;

use crate::RunError;
use crate::changes::{Changes, diff, normalized, stored_experiment};
use crate::dry_run::Bounds;
use crate::identity::{EpisodeKey, Identities};
use crate::plan::Plan;
use crate::spec::ExperimentSpec;

/// What the folder held before this run.
pub(crate) struct Prior {
    experiment: Option<Value>,
    spec: Option<ExperimentSpec>,
    pub(crate) inputs: BTreeMap<String, String>,
    episodes: Vec<StoredIdentity>,
    families: BTreeMap<String, Family>,
    evaluator: String,
}

impl Prior {
    /// Read what the store at `path` holds; `None` when it holds no experiment yet. A
    /// store of an agent experiment is refused ([`RunError::OtherKind`]).
    pub(crate) fn read(path: &Path) -> Result<Option<Prior>, RunError> {
        let reader = Reader::open(path)?;
        let Ok(row) = reader.experiment() else {
            return Ok(None);
        };
        if row.meta.kind != ExperimentKind::Chat {
            return Err(RunError::OtherKind {
                store: path.to_path_buf(),
                stored: row.meta.kind,
                given: ExperimentKind::Chat,
                hint: "; run the chat experiment with another --out folder",
            });
        }
        // the stored experiment, read by the same reader as the file (an older store
        // has only its text)
        let spec = ExperimentSpec::parse("the stored experiment", &row.meta.spec_toml).ok();
        let experiment = match reader.experiment_json()? {
            Some(json) => stored_experiment(&json),
            None => None,
        }
        .or_else(|| spec.as_ref().map(|s| normalized(s)["experiment"].clone()));
        Ok(Some(Prior {
            experiment,
            spec,
            inputs: reader.inputs()?,
            episodes: reader.identities()?,
            families: reader
                .tasks()?
                .into_iter()
                .map(|t| (t.task_id, t.family))
                .collect(),
            evaluator: format!("{} {}", row.meta.eval_profile, row.meta.eval_version),
        }))
    }

    /// Each model's price-card key in the stored experiment.
    pub(crate) fn price_keys(&self) -> BTreeMap<String, String> {
        self.spec
            .as_ref()
            .map(crate::run::price_keys)
            .unwrap_or_default()
    }

    /// Give every episode stored without an identity the one the stored experiment
    /// gives it (or one that matches nothing, when that experiment cannot be read), so
    /// that it is reused exactly when nothing it depends on changed.
    pub(crate) async fn adopt_identities(&mut self, store: &Store) -> Result<(), RunError> {
        let ids = self
            .spec
            .as_ref()
            .map(|s| Identities::new(s, self.inputs.clone(), self.evaluator.clone()));
        let mut adopted = Vec::new();
        for e in self.episodes.iter_mut().filter(|e| e.identity.is_none()) {
            let cell: Option<Cell> = serde_json::from_str(&e.cell_json).ok();
            let family = self.families.get(&e.task_id).copied();
            let identity = match (&ids, cell, family) {
                (Some(ids), Some(cell), Some(family)) => ids.of(&EpisodeKey {
                    task_id: &e.task_id,
                    family,
                    cell: &cell,
                    replicate: e.replicate,
                    seed: e.seed,
                    k: e.k,
                    schedule_sha256: &e.schedule_sha256,
                }),
                _ => format!("unreadable stored experiment, episode {}", e.id),
            };
            e.identity = Some(identity.clone());
            adopted.push((e.id, identity));
        }
        if !adopted.is_empty() {
            store.set_identities(adopted).await?;
        }
        Ok(())
    }
}

/// One planned episode with its identity.
pub(crate) struct Planned {
    pub group: usize,
    pub cell: Cell,
    pub k: Option<usize>,
    pub identity: String,
}

/// Compare the plan with what is stored: the experiment's changed keys, and each
/// episode's fate with the bound of what will run.
pub(crate) fn compare(
    prior: Option<&Prior>,
    spec: &ExperimentSpec,
    plan: &Plan,
    planned: &[Planned],
    task_ids: &[String],
    bounds: &Bounds<'_>,
) -> Changes {
    let mut changes = Changes {
        stored: prior.is_some(),
        ..Changes::default()
    };
    if let Some(p) = prior {
        let now = normalized(spec)["experiment"].clone();
        changes.keys = diff(p.experiment.as_ref().unwrap_or(&Value::Null), &now);
    }
    let stored: BTreeMap<(&str, &str, u32), &StoredIdentity> = prior
        .map(|p| {
            p.episodes
                .iter()
                .filter(|e| {
                    e.retired.is_none()
                        || e.retired.as_deref() == Some(baton_store::RETIRED_REMOVED)
                })
                .map(|e| ((e.task_id.as_str(), e.cell_key.as_str(), e.replicate), e))
                .collect()
        })
        .unwrap_or_default();
    let mut keys = BTreeSet::new();
    for p in planned {
        let g = &plan.groups[p.group];
        let label = p.cell.label();
        let key = (task_ids[g.task].as_str(), label.as_str(), g.replicate);
        let runs = match stored.get(&key) {
            Some(e) if e.identity.as_deref() == Some(p.identity.as_str()) => {
                let finished = e
                    .status
                    .parse::<EpisodeStatus>()
                    .is_ok_and(|s| s != EpisodeStatus::Incomplete);
                if finished {
                    changes.reused += 1;
                    false
                } else {
                    changes.resumed += 1;
                    true
                }
            }
            Some(_) => {
                changes.rerun += 1;
                true
            }
            None => {
                changes.new += 1;
                true
            }
        };
        if runs {
            let b = bounds.episode(g, &p.cell, p.k);
            changes.calls_upper += b.calls;
            changes.upper_bound += b.paid;
            if let Some(x) = bounds.extraction(g, &p.cell) {
                changes.calls_upper += x.calls;
                changes.upper_bound += x.paid;
            }
        }
        keys.insert((task_ids[g.task].clone(), label.clone(), g.replicate));
    }
    if let Some(p) = prior {
        changes.removed = p
            .episodes
            .iter()
            .filter(|e| e.retired.is_none())
            .filter(|e| !keys.contains(&(e.task_id.clone(), e.cell_key.clone(), e.replicate)))
            .count();
    }
    changes
}

/// Re-price every stored call and attempt of the store at `path` with `models`'
/// current rates (a batched reply at the batch rates), and each episode's paid and
/// attributed cost by the ledger's rule (every billed attempt of its own calls,
/// extraction apart; a forked prefix's calls and attempts attributed to it). Returns the stored total before and after.
pub(crate) fn reprice(
    path: &Path,
    spec: &ExperimentSpec,
    card: &PriceCard,
    models: &BTreeMap<String, Arc<Model>>,
) -> Result<(Repricing, Cost, Cost), RunError> {
    let reader = Reader::open(path)?;
    let key_of = |name: &str| -> Option<String> {
        if name == "extractor" {
            spec.extractor.as_ref().map(|m| m.price_key())
        } else {
            models.get(name).map(|m| m.price_key().to_string())
        }
    };
    let price = |name: &str, batched: bool, usage: &baton_types::Usage| -> Result<Cost, String> {
        let key =
            key_of(name).ok_or_else(|| format!("model {name:?} is no longer in the experiment"))?;
        let rates = if batched {
            card.get_batch(&key)
        } else {
            card.get(&key)
        }
        .map_err(|e| e.to_string())?;
        rates.cost(&key, usage).map_err(|e| e.to_string())
    };
    let mut out = Repricing {
        price_card_sha256: card.sha256().to_string(),
        ..Repricing::default()
    };
    let (mut before, mut after) = (Cost::ZERO, Cost::ZERO);
    let mut own: BTreeMap<i64, Cost> = BTreeMap::new();
    let mut prefix: BTreeMap<i64, Vec<(u32, Cost)>> = BTreeMap::new();
    let old_calls = reader.spend()?;
    before += old_calls.paid;
    for c in reader.call_usage()? {
        let Some(usage) = &c.usage else { continue };
        let (cost, unpriced) = match price(&c.model, c.batched, usage) {
            Ok(cost) => (cost, None),
            Err(why) => (Cost::ZERO, Some(why)),
        };
        after += cost;
        out.calls.push((c.id, cost.0, unpriced));
        if c.phase != Phase::Extraction.as_str() {
            *own.entry(c.episode_id).or_default() += cost;
        }
        if c.phase == Phase::Prefix.as_str() {
            prefix.entry(c.episode_id).or_default().push((c.turn, cost));
        }
    }
    for a in reader.attempt_usage()? {
        let cost = match &a.usage {
            Some(usage) => price(&a.model, a.batched, usage),
            // unreadable usage: its stored cost (a bound, or none) is kept as it is
            None => match a.cost {
                Some(c) => {
                    after += c;
                    if a.phase != Phase::Extraction.as_str() {
                        *own.entry(a.episode_id).or_default() += c;
                    }
                    if a.phase == Phase::Prefix.as_str() {
                        prefix.entry(a.episode_id).or_default().push((a.turn, c));
                    }
                    continue;
                }
                None => continue,
            },
        };
        if let Ok(c) = &cost {
            after += *c;
            // every billed attempt is its episode's cost ([`crate::ledger::episode_paid`])
            if a.phase != Phase::Extraction.as_str() {
                *own.entry(a.episode_id).or_default() += *c;
            }
            if a.phase == Phase::Prefix.as_str() {
                prefix.entry(a.episode_id).or_default().push((a.turn, *c));
            }
        }
        out.attempts.push((a.id, cost.map(|c| c.0)));
    }
    for e in reader.all_episodes()? {
        if e.status() == EpisodeStatus::Incomplete {
            continue;
        }
        let paid = own.get(&e.id).copied().unwrap_or(Cost::ZERO);
        let forked: Cost = match (e.init.forked_from, e.init.k) {
            (Some(anchor), Some(k)) => prefix
                .get(&anchor)
                .into_iter()
                .flatten()
                .filter(|(t, _)| *t <= k)
                .map(|(_, c)| *c)
                .sum(),
            _ => Cost::ZERO,
        };
        out.episodes.push((e.id, paid.0, (paid + forked).0));
    }
    Ok((out, before, after))
}
