//! The agent handoff study in parts: the barrier between anchors and handoffs.
//!
//! A switch call is a percentile of the prefix model's termination steps over *all*
//! anchors of a difficulty bucket, so a part cannot compute it from its own anchors.
//! A part of an agent experiment with a `[handoff]` table therefore runs in two phases:
//!
//! 1. `--phase anchors`: the part's anchor episodes only;
//! 2. `baton thresholds DIR…` ([`thresholds_from_parts`]): every part's anchors, checked
//!    finished, give the switch calls (`handoff::thresholds`, the rule a whole run
//!    uses), written with the anchors they came from to a [`ThresholdsFile`];
//! 3. `--phase handoffs --thresholds FILE` (`adopt`): the part checks that the file's
//!    anchors of its tasks are exactly its own stored anchors (same episodes, same
//!    termination steps, same buckets), stores the file's switch calls (refusing a file
//!    that differs from the ones it stored already), then runs its handoff cells.
//!
//! A part without `--phase` is refused explaining the phases (`check_phase`); a run
//! without `--part` does all of it by itself as before.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_store::{AgentCell, AgentEpisodeRow, Reader, Store, ThresholdRow};
use serde::{Deserialize, Serialize};

use crate::RunError;
use crate::agent::AgentSpec;
use crate::merge::{MergeError, checked_parts};
use crate::part::{Part, PartPhase};
use crate::run::RunOptions;

/// The format line of a thresholds file.
pub const THRESHOLDS_FORMAT: &str = "baton-thresholds 1";

/// What `baton thresholds` writes: the switch calls and the anchors they come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThresholdsFile {
    /// [`THRESHOLDS_FORMAT`].
    pub format: String,
    /// The experiment's name.
    pub experiment: String,
    /// The sha256 of its experiment file.
    pub spec_sha256: String,
    /// How many parts (N).
    pub parts: u32,
    /// Every part's anchors, by task, model and replicate.
    pub anchors: Vec<AnchorEntry>,
    /// The switch calls.
    pub thresholds: Vec<ThresholdEntry>,
}

/// One finished anchor as the thresholds saw it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AnchorEntry {
    /// The task.
    pub task: String,
    /// The model.
    pub model: String,
    /// The replicate.
    pub replicate: u32,
    /// Its difficulty bucket.
    pub bucket: String,
    /// Its termination step (model calls made).
    pub calls: u32,
}

/// One switch call, as stored in `agent_thresholds`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThresholdEntry {
    /// The pair, `lc/hc`.
    pub pair: String,
    /// `escalation` or `downshift`.
    pub direction: baton_types::Direction,
    /// The prefix model.
    pub prefix_model: String,
    /// The difficulty bucket.
    pub bucket: baton_types::agent::Difficulty,
    /// The percentile.
    pub p: u32,
    /// The switch call.
    pub s: u32,
    /// The anchors it was computed from.
    pub n_anchors: u32,
}

impl From<&ThresholdRow> for ThresholdEntry {
    fn from(t: &ThresholdRow) -> Self {
        ThresholdEntry {
            pair: t.pair.clone(),
            direction: t.direction,
            prefix_model: t.prefix_model.clone(),
            bucket: t.bucket,
            p: t.p,
            s: t.s,
            n_anchors: t.n_anchors,
        }
    }
}

impl From<&ThresholdEntry> for ThresholdRow {
    fn from(t: &ThresholdEntry) -> Self {
        ThresholdRow {
            pair: t.pair.clone(),
            direction: t.direction,
            prefix_model: t.prefix_model.clone(),
            bucket: t.bucket,
            p: t.p,
            s: t.s,
            n_anchors: t.n_anchors,
        }
    }
}

/// The anchors among `episodes`, each as a file entry, or `None` for one that has not
/// finished.
fn anchors_of(episodes: &[AgentEpisodeRow]) -> Vec<(AnchorEntry, bool)> {
    let mut out: Vec<(AnchorEntry, bool)> = episodes
        .iter()
        .filter_map(|e| match &e.cell {
            AgentCell::Single { model } => Some((
                AnchorEntry {
                    task: e.task_id.clone(),
                    model: model.clone(),
                    replicate: e.replicate,
                    bucket: e.difficulty.name().to_string(),
                    calls: e.calls,
                },
                super::handoff::finished(e),
            )),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

/// The switch calls from every part's anchors: each folder checked as `baton merge`
/// checks it (one experiment, every part once, none locked), every anchor finished.
pub fn thresholds_from_parts(dirs: &[PathBuf]) -> Result<ThresholdsFile, MergeError> {
    let parts = checked_parts(dirs)?;
    let first = &parts[0];
    let reader = Reader::open(&first.store)?;
    let exp = reader.experiment()?.meta;
    let spec = AgentSpec::parse(
        &format!("{} (stored experiment)", first.store.display()),
        &exp.spec_toml,
    )?;
    let Some(handoff) = spec.handoff.as_ref() else {
        return Err(MergeError::NoBarrier(first.dir.clone()));
    };
    let mut episodes = Vec::new();
    let mut anchors = Vec::new();
    for p in &parts {
        let mine = Reader::open(&p.store)?.agent_episodes()?;
        let entries = anchors_of(&mine);
        let expected = p.tasks.len() * spec.models.len() * spec.replicates as usize;
        if let Some((a, _)) = entries.iter().find(|(_, done)| !done) {
            return Err(MergeError::AnchorsIncomplete {
                part: p.dir.clone(),
                why: format!(
                    "the anchor of model {:?} on task {:?} (replicate {}) has not finished",
                    a.model, a.task, a.replicate
                ),
            });
        }
        if entries.len() < expected {
            return Err(MergeError::AnchorsIncomplete {
                part: p.dir.clone(),
                why: format!("{} of its {expected} anchors are stored", entries.len()),
            });
        }
        anchors.extend(entries.into_iter().map(|(a, _)| a));
        episodes.extend(
            mine.into_iter()
                .filter(|e| matches!(e.cell, AgentCell::Single { .. })),
        );
    }
    anchors.sort();
    let rows = super::handoff::thresholds(handoff, &episodes).map_err(|why| {
        MergeError::AnchorsIncomplete {
            part: first.dir.clone(),
            why,
        }
    })?;
    Ok(ThresholdsFile {
        format: THRESHOLDS_FORMAT.to_string(),
        experiment: exp.name,
        spec_sha256: exp.spec_sha256,
        parts: first.part.count,
        anchors,
        thresholds: rows.iter().map(ThresholdEntry::from).collect(),
    })
}

/// Refuse a phase the run cannot have: a part of a handoff study needs one, and
/// `--thresholds` goes with `handoffs` only.
pub(crate) fn check_phase(spec: &AgentSpec, options: &RunOptions) -> Result<(), RunError> {
    let refuse = |message: String| {
        Err(RunError::Spec {
            source_name: options.source_name.clone(),
            message,
        })
    };
    let study = spec.handoff.is_some();
    match (options.part, options.phase, study) {
        (None, Some(_), _) => refuse("--phase goes with --part I/N".into()),
        (Some(_), Some(_), false) => refuse(
            "--phase: an agent experiment without a [handoff] table has no barrier; run its parts without --phase".into(),
        ),
        (Some(part), None, true) => refuse(format!(
            "--part {part}: the agent handoff study's switch calls come from the anchors of every part, so a part runs in two phases: `--part {part} --phase anchors` in every part, then `baton thresholds <every part's folder> --out thresholds.json`, then `--part {part} --phase handoffs --thresholds thresholds.json`"
        )),
        _ => match (options.phase, &options.thresholds) {
            (Some(PartPhase::Handoffs), None) => refuse(
                "--phase handoffs needs --thresholds FILE (the file `baton thresholds` wrote from every part's anchors)".into(),
            ),
            (Some(PartPhase::Handoffs), Some(_)) | (_, None) => Ok(()),
            (_, Some(_)) => refuse("--thresholds goes with --phase handoffs".into()),
        },
    }
}

/// A thresholds file that cannot be used by this part.
fn mismatch(file: &Path, message: String) -> RunError {
    RunError::Thresholds {
        file: file.to_path_buf(),
        message,
    }
}

/// `--phase handoffs`: check the thresholds file at `file` against this part's stored
/// anchors and store its switch calls (see the module).
pub(crate) async fn adopt(
    file: &Path,
    spec: &AgentSpec,
    part: Part,
    store: &Store,
    store_path: &Path,
) -> Result<(), RunError> {
    let text = baton_types::input::read_text_bounded(
        file,
        baton_types::input::EXPERIMENT_LIMIT * 64,
        "thresholds file",
    )
    .map_err(|e| mismatch(file, e.to_string()))?;
    let f: ThresholdsFile = serde_json::from_str(&text)
        .map_err(|e| mismatch(file, format!("not a thresholds file: {e}")))?;
    if f.format != THRESHOLDS_FORMAT {
        return Err(mismatch(
            file,
            format!(
                "format {:?}, this baton reads {THRESHOLDS_FORMAT:?}",
                f.format
            ),
        ));
    }
    if f.spec_sha256 != spec.sha256() || f.experiment != spec.name {
        return Err(mismatch(
            file,
            format!(
                "it was computed for experiment {:?} (spec sha256 {}), and this is {:?} (spec sha256 {})",
                f.experiment,
                f.spec_sha256,
                spec.name,
                spec.sha256()
            ),
        ));
    }
    if f.parts != part.count {
        return Err(mismatch(
            file,
            format!(
                "it was computed from {} parts, and this is part {part}",
                f.parts
            ),
        ));
    }
    let reader = Reader::open(store_path)?;
    let tasks: Vec<String> = reader.task_ids()?;
    let mine = anchors_of(&reader.agent_episodes()?);
    let key = |a: &AnchorEntry| (a.task.clone(), a.model.clone(), a.replicate);
    let theirs: BTreeMap<_, &AnchorEntry> = f
        .anchors
        .iter()
        .filter(|a| tasks.contains(&a.task))
        .map(|a| (key(a), a))
        .collect();
    for (a, done) in &mine {
        match theirs.get(&key(a)) {
            Some(t) if *t == a && *done => {}
            Some(t) => {
                return Err(mismatch(
                    file,
                    format!(
                        "its anchor of model {:?} on task {:?} (replicate {}) ended at call {} ({}), and this part's stored one at call {} ({}{}); run `baton thresholds` again on every part's folder",
                        a.model,
                        a.task,
                        a.replicate,
                        t.calls,
                        t.bucket,
                        a.calls,
                        a.bucket,
                        if *done { "" } else { ", not finished" }
                    ),
                ));
            }
            None => {
                return Err(mismatch(
                    file,
                    format!(
                        "it has no anchor of model {:?} on task {:?} (replicate {}), which this part stores; it was computed from other parts",
                        a.model, a.task, a.replicate
                    ),
                ));
            }
        }
    }
    if theirs.len() != mine.len() {
        return Err(mismatch(
            file,
            format!(
                "it has {} anchors of this part's tasks, and this part stores {}: run --phase anchors to the end first",
                theirs.len(),
                mine.len()
            ),
        ));
    }
    let rows: Vec<ThresholdRow> = f.thresholds.iter().map(ThresholdRow::from).collect();
    let sorted = |mut v: Vec<ThresholdRow>| {
        v.sort_by(|a, b| {
            (&a.pair, &a.direction, &a.bucket, a.p).cmp(&(&b.pair, &b.direction, &b.bucket, b.p))
        });
        v
    };
    let stored = sorted(store.agent_thresholds(rows.clone()).await?);
    let rows = sorted(rows);
    if stored != rows {
        return Err(mismatch(
            file,
            format!(
                "this part already ran handoffs with other switch calls ({} stored rows differ); use the thresholds file it ran with",
                stored.iter().zip(&rows).filter(|(a, b)| a != b).count()
                    + stored.len().abs_diff(rows.len())
            ),
        ));
    }
    Ok(())
}
