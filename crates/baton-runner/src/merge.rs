//! `baton merge`: the stores of an experiment's parts as one store, whose report is the
//! unsplit run's.
//!
//! Before a row is copied every part is checked, and the first mismatch is refused
//! naming the part and what differs ([`MergeError`]): each folder holds a store of a
//! part (`I/N` recorded by `--part`), not held by a run (its folder lock is taken for
//! the merge), with no paid reply left in its spool; every part has the same count N,
//! each index 1..=N once; the parts agree on the experiment (name, kind, spec and its
//! normalized form), the price card, every input they share, and the agent study's
//! thresholds; no task is in two parts. The merged store is then built under a
//! temporary name and renamed into place (`baton_store::merge_into`), so merging
//! again builds the same store afresh; an `--out` folder that holds anything but a
//! merge is refused. A part's unfinished episodes stay incomplete in the merge.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use baton_store::{Reader, StoreError, ThresholdRow};
use baton_types::EpisodeStatus;

use crate::lock::FolderLock;
use crate::part::Part;
use crate::{RunError, STORE_FILE};

/// Why parts cannot be merged: each names the part (its folder) and what differs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No part folder was given.
    #[error("no part folders given: merge DIR1 DIR2 … --out DIR")]
    NoParts,
    /// A folder holds no store.
    #[error("part {}: no {STORE_FILE} in it; give the folders the parts ran in (--out of each part)", .0.display())]
    NoStore(PathBuf),
    /// A folder's store was not run as a part.
    #[error("part {}: its store was not run with --part I/N (a whole run needs no merge)", .0.display())]
    NotAPart(PathBuf),
    /// A run holds a part's folder.
    #[error("part {}: still locked by a run ({why}); wait for it to end (or stop it and run the part's command again to finish it), then merge", .part.display())]
    Locked {
        /// The part's folder.
        part: PathBuf,
        /// The lock and its holder.
        why: String,
    },
    /// A part's spool holds paid replies its store has not imported.
    #[error("part {}: its spool holds paid replies not yet imported into its store; run the part's command again (opening the store imports them), then merge", .0.display())]
    Spool(PathBuf),
    /// A part differs from the first part.
    #[error(transparent)]
    Differs(Box<Difference>),
    /// A part index appears twice.
    #[error("part {index}/{count} is given twice: {} and {}; give each part's folder once", .first.display(), .second.display())]
    Repeated {
        /// The index.
        index: u32,
        /// N.
        count: u32,
        /// One folder.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// Some part indexes are missing.
    #[error(
        "part(s) {missing} of {count} missing: a merge needs every part (run the missing ones, or give their folders)"
    )]
    Missing {
        /// The missing indexes, `2, 3`.
        missing: String,
        /// N.
        count: u32,
    },
    /// A task is stored in two parts.
    #[error("task {task:?} is in two parts: {} and {}; parts of one experiment never share a task (were they run with different --limit or datasets?)", .first.display(), .second.display())]
    TaskInTwoParts {
        /// The task.
        task: String,
        /// One part's folder.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// `baton thresholds` was given parts of an experiment with no handoff study.
    #[error("part {}: its experiment has no [handoff] table, so no thresholds: run its parts without --phase and merge them", .0.display())]
    NoBarrier(PathBuf),
    /// `baton thresholds`: a part's anchors are not all finished.
    #[error("part {}: its anchors are incomplete ({why}); run its `--phase anchors` command again to finish them, then compute the thresholds", .part.display())]
    AnchorsIncomplete {
        /// The part's folder.
        part: PathBuf,
        /// Which anchor, or how many are stored.
        why: String,
    },
    /// `--out` holds a store that is not a merge.
    #[error("--out {}: holds a store that is not a merge (a run's or a part's); merge into another folder", .0.display())]
    OutHoldsRun(PathBuf),
    /// A part's or the output's store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A folder could not be locked or written.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// How a part differs from the first part given.
#[derive(Debug, thiserror::Error)]
#[error("part {} ({this_part}) differs from part {} ({first_part}) in {what}: {this} there, {first_value} here; merge the parts of one experiment run with the same files", .part.display(), .first.display())]
pub struct Difference {
    /// The part that differs.
    pub part: PathBuf,
    /// Its `I/N`.
    pub this_part: String,
    /// The first part, compared against.
    pub first: PathBuf,
    /// Its `I/N`.
    pub first_part: String,
    /// What differs (`the price card`, `input "templates"`, ...).
    pub what: String,
    /// The differing part's value.
    pub this: String,
    /// The first part's value.
    pub first_value: String,
}

/// What a merge built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeSummary {
    /// The merged store.
    pub store_path: PathBuf,
    /// How many parts.
    pub parts: usize,
    /// Episodes (current ones) by status.
    pub episodes: BTreeMap<EpisodeStatus, usize>,
    /// Calls stored.
    pub calls: u64,
}

impl MergeSummary {
    /// Episodes with this status.
    pub fn count(&self, status: EpisodeStatus) -> usize {
        self.episodes.get(&status).copied().unwrap_or(0)
    }
}

/// One part as checked.
pub(crate) struct Checked {
    pub(crate) dir: PathBuf,
    pub(crate) store: PathBuf,
    pub(crate) part: Part,
    name: String,
    kind: String,
    spec_sha256: String,
    normalized: Option<String>,
    price_card: String,
    inputs: BTreeMap<String, String>,
    pub(crate) tasks: Vec<String>,
    thresholds: Vec<ThresholdRow>,
    _lock: FolderLock,
}

fn check_part(dir: &Path) -> Result<Checked, MergeError> {
    let store = dir.join(STORE_FILE);
    if !store.is_file() {
        return Err(MergeError::NoStore(dir.to_path_buf()));
    }
    let lock = FolderLock::acquire(dir).map_err(|e| match e {
        RunError::Busy { lock, holder } => MergeError::Locked {
            part: dir.to_path_buf(),
            why: format!("{} is held by {holder}", lock.display()),
        },
        e => MergeError::Run(e),
    })?;
    if baton_store::spool_pending(&store) {
        return Err(MergeError::Spool(dir.to_path_buf()));
    }
    let part: Part = baton_store::stored_part(&store)?
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| MergeError::NotAPart(dir.to_path_buf()))?;
    let reader = Reader::open(&store)?;
    let exp = reader.experiment()?.meta;
    Ok(Checked {
        part,
        name: exp.name,
        kind: exp.kind.as_str().to_string(),
        spec_sha256: exp.spec_sha256,
        normalized: reader.experiment_json()?,
        price_card: exp.price_card_sha256,
        inputs: reader.inputs()?,
        tasks: reader.task_ids()?,
        thresholds: reader.agent_thresholds()?,
        dir: dir.to_path_buf(),
        store,
        _lock: lock,
    })
}

/// A task's own input (`task <id>`), which only its part holds.
fn is_task_input(name: &str) -> bool {
    name.starts_with("task ")
}

fn compare(first: &Checked, c: &Checked) -> Result<(), MergeError> {
    let differs = |what: &str, this: String, first_value: String| {
        MergeError::Differs(Box::new(Difference {
            part: c.dir.clone(),
            this_part: c.part.to_string(),
            first: first.dir.clone(),
            first_part: first.part.to_string(),
            what: what.to_string(),
            this,
            first_value,
        }))
    };
    if c.part.count != first.part.count {
        return Err(differs(
            "the part count",
            format!("{} parts", c.part.count),
            format!("{} parts", first.part.count),
        ));
    }
    if c.name != first.name || c.kind != first.kind {
        return Err(differs(
            "the experiment",
            format!("{} ({})", c.name, c.kind),
            format!("{} ({})", first.name, first.kind),
        ));
    }
    if c.spec_sha256 != first.spec_sha256 || c.normalized != first.normalized {
        return Err(differs(
            "the experiment file",
            format!("spec sha256 {}", c.spec_sha256),
            format!("spec sha256 {}", first.spec_sha256),
        ));
    }
    if c.price_card != first.price_card {
        return Err(differs(
            "the price card",
            format!("sha256 {}", c.price_card),
            format!("sha256 {}", first.price_card),
        ));
    }
    let shared = |m: &BTreeMap<String, String>| -> BTreeMap<String, String> {
        m.iter()
            .filter(|(k, _)| !is_task_input(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let (mine, theirs) = (shared(&c.inputs), shared(&first.inputs));
    for name in mine.keys().chain(theirs.keys()) {
        let (a, b) = (mine.get(name), theirs.get(name));
        if a != b {
            let show = |v: Option<&String>| v.map_or("none".to_string(), |v| format!("sha256 {v}"));
            return Err(differs(&format!("input {name:?}"), show(a), show(b)));
        }
    }
    if !c.thresholds.is_empty() && !first.thresholds.is_empty() && c.thresholds != first.thresholds
    {
        let row = c
            .thresholds
            .iter()
            .zip(&first.thresholds)
            .find(|(a, b)| a != b)
            .map(|(a, _)| format!("{} {} {} p{}", a.pair, a.direction.as_str(), a.bucket, a.p))
            .unwrap_or_else(|| "the number of rows".into());
        return Err(differs(
            &format!("the thresholds ({row})"),
            format!("{} rows", c.thresholds.len()),
            format!("{} rows", first.thresholds.len()),
        ));
    }
    Ok(())
}

/// Check the parts in `dirs` (see the module) and return them by index, each folder
/// locked until they are dropped.
pub(crate) fn checked_parts(dirs: &[PathBuf]) -> Result<Vec<Checked>, MergeError> {
    if dirs.is_empty() {
        return Err(MergeError::NoParts);
    }
    // a folder given twice is named before its lock is taken (twice, by this merge)
    let mut seen: BTreeMap<PathBuf, &PathBuf> = BTreeMap::new();
    for d in dirs {
        let key = d.canonicalize().unwrap_or_else(|_| d.clone());
        if let Some(first) = seen.insert(key, d) {
            let part = baton_store::stored_part(&d.join(STORE_FILE))
                .ok()
                .flatten()
                .and_then(|p| p.parse::<Part>().ok());
            let (index, count) = part.map_or((0, 0), |p| (p.index, p.count));
            return Err(MergeError::Repeated {
                index,
                count,
                first: first.clone(),
                second: d.clone(),
            });
        }
    }
    let checked: Vec<Checked> = dirs
        .iter()
        .map(|d| check_part(d))
        .collect::<Result<_, _>>()?;
    let first = &checked[0];
    for c in &checked[1..] {
        compare(first, c)?;
    }
    let count = first.part.count;
    let mut by_index: BTreeMap<u32, Checked> = BTreeMap::new();
    for c in checked {
        let index = c.part.index;
        if let Some(other) = by_index.get(&index) {
            return Err(MergeError::Repeated {
                index,
                count,
                first: other.dir.clone(),
                second: c.dir.clone(),
            });
        }
        by_index.insert(index, c);
    }
    let missing: Vec<String> = (1..=count)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::Missing {
            missing: missing.join(", "),
            count,
        });
    }
    let mut owner: BTreeMap<&str, &Path> = BTreeMap::new();
    for c in by_index.values() {
        for t in &c.tasks {
            if let Some(other) = owner.insert(t, &c.dir) {
                return Err(MergeError::TaskInTwoParts {
                    task: t.clone(),
                    first: other.to_path_buf(),
                    second: c.dir.clone(),
                });
            }
        }
    }
    Ok(by_index.into_values().collect())
}

/// Check the parts in `dirs` and merge them into `out`'s store (see the module).
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<MergeSummary, MergeError> {
    let by_index = checked_parts(dirs)?;
    let out_lock = FolderLock::acquire(out)?;
    let store_path = out.join(STORE_FILE);
    if store_path.exists() && baton_store::merged_parts(&store_path)?.is_none() {
        return Err(MergeError::OutHoldsRun(out.to_path_buf()));
    }
    let building = out.join(format!("{STORE_FILE}.merging"));
    remove_store_files(&building)?;
    let stores: Vec<&Path> = by_index.iter().map(|c| c.store.as_path()).collect();
    baton_store::merge_into(&building, &stores)?;
    for c in &by_index {
        copy_blobs(&c.dir, out)?;
    }
    remove_store_files(&store_path)?;
    std::fs::rename(&building, &store_path).map_err(|e| RunError::Write {
        path: store_path.clone(),
        message: e.to_string(),
    })?;
    drop(out_lock);
    let reader = Reader::open(&store_path)?;
    let mut episodes = BTreeMap::new();
    if reader.experiment()?.meta.kind == baton_types::ExperimentKind::Agent {
        for e in reader.agent_episodes()? {
            *episodes.entry(e.outcome.status).or_default() += 1;
        }
    } else {
        for e in reader.episodes()? {
            *episodes.entry(e.status()).or_default() += 1;
        }
    }
    Ok(MergeSummary {
        calls: reader.call_count()?,
        store_path,
        parts: by_index.len(),
        episodes,
    })
}

/// Remove a store file and its SQLite companions (a previous merge's, or a merge that
/// stopped half-way).
fn remove_store_files(path: &Path) -> Result<(), RunError> {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let p = PathBuf::from(format!("{}{suffix}", path.display()));
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(RunError::Write {
                    path: p,
                    message: e.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// An agent part's working-tree snapshots (content-addressed files under `blobs`)
/// copied into the merge's folder, each file once.
fn copy_blobs(part: &Path, out: &Path) -> Result<(), RunError> {
    let from = part.join(crate::agent::BLOB_DIR);
    if !from.is_dir() {
        return Ok(());
    }
    let to = out.join(crate::agent::BLOB_DIR);
    let io = |path: &Path, e: std::io::Error| RunError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut stack = vec![from.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(|e| io(&dir, e))? {
            let entry = entry.map_err(|e| io(&dir, e))?;
            let path = entry.path();
            let rel = path.strip_prefix(&from).expect("under the blob folder");
            let target = to.join(rel);
            if entry.file_type().map_err(|e| io(&path, e))?.is_dir() {
                std::fs::create_dir_all(&target).map_err(|e| io(&target, e))?;
                stack.push(path);
            } else if !target.exists() {
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
                }
                std::fs::copy(&path, &target).map_err(|e| io(&target, e))?;
            }
        }
    }
    Ok(())
}
