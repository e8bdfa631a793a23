//! SWE-bench with Docker: the preflight an agent run makes before its first call, and
//! `baton swebench eval` ([`swebench_eval`]), which judges a finished run's stored
//! patches with the pinned official harness and stores the verdicts.
//!
//! # Preflight
//!
//! An agent run needs Docker when its environment is `backend = "docker"`, when a task
//! runs in an image (SWE-bench instances), or when `swebench_python` is set and some task
//! is a SWE-bench instance (the harness runs each instance's tests in a container). It
//! then asks the Docker client ([`baton_env::docker_preflight`], the client
//! `BATON_DOCKER` names) and, for the harness, the installed `swebench` version, before
//! the store is opened: a missing daemon stops the run with what failed and what to do,
//! and nothing is called or stored. An image task under a non-Docker backend is refused
//! the same way.
//!
//! # `baton swebench eval RESULTS`
//!
//! Reads the results folder's store, takes every SWE-bench episode that ended (anchors
//! and handoff cells, every replicate) with its final patch, and writes one predictions
//! file per (cell, replicate) in the harness's format to
//! `RESULTS/swebench/predictions/<cell>.r<replicate>.jsonl` (a row per instance:
//! `instance_id`, `model_name_or_path` = the file's stem, `model_patch`; an episode that
//! submitted nothing has an empty patch). The harness judges each file's patches that
//! are not judged yet (the verdict cache under `RESULTS/swebench/cache`, keyed by
//! instance and patch sha256, means a patch is never run twice); Docker and the harness
//! version are checked first, and only when something is left to judge. Verdicts go
//! into the store: an episode left unscored (no harness when it ended) or errored (the
//! harness failed then) becomes scored; one the harness still gives no verdict stays
//! unscored with the reason. Episodes already scored keep their verdict, and episodes
//! that have not ended are left for the run to finish. A second eval judges nothing new
//! and says so. No schema change: the episode's verdict columns are updated in place.
//!
//! The experiment file's folder is not stored, so relative paths of the spec are found
//! from the dataset path the run recorded (each task's origin): the folder it was taken
//! from is the one `swebench_python` is relative to. `--dataset` and `--python` override
//! both; the dataset must hold the stored instances unchanged (checked by sha256).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_agent::{
    AgentTask, HarnessStatus, HarnessVerdict, Prediction, Repository, SweBenchHarness, TaskFormat,
};
use baton_env::{BackendKind, EnvConfig};
use baton_store::{AgentCell, AgentEpisodeRow, AgentVerdict, Reader, Store};
use baton_types::EpisodeStatus;

use super::AgentSpec;
use crate::lock::FolderLock;
use crate::{RunError, STORE_FILE};

/// The harness's folder inside a results folder: runs, logs, the verdict cache and the
/// predictions files.
pub const WORK_DIR: &str = "swebench";

/// The predictions files' folder inside [`WORK_DIR`].
pub const PREDICTIONS_DIR: &str = "predictions";

/// Check, before any call, that what the experiment needs of Docker and the harness
/// works (see the module docs).
pub(crate) fn preflight(
    env: &EnvConfig,
    tasks: &[AgentTask],
    harness: Option<&SweBenchHarness>,
) -> Result<(), RunError> {
    let mut needs = Vec::new();
    if env.backend == BackendKind::Docker {
        needs.push("its environment is backend = \"docker\"".to_string());
    }
    let image_task = tasks.iter().find_map(|t| match &t.repository {
        Repository::Image(image) => Some((t, image)),
        _ => None,
    });
    if let Some((task, image)) = image_task
        && env.backend != BackendKind::Docker
    {
        return Err(RunError::Preflight(format!(
            "task {:?} runs in the Docker image {image}, but the environment is backend = \"{}\": \
             set [environment] backend = \"docker\" in the experiment file; nothing was run",
            task.id, env.backend
        )));
    }
    let swebench = tasks.iter().any(|t| t.format == TaskFormat::SweBench);
    let harness = harness.filter(|_| swebench);
    if harness.is_some() {
        needs.push(
            "swebench_python is set: the official harness runs each instance's tests in Docker"
                .to_string(),
        );
    }
    if needs.is_empty() {
        return Ok(());
    }
    baton_env::docker_preflight(&env.docker.executable).map_err(|e| {
        RunError::Preflight(format!(
            "this experiment needs Docker ({}): {e}; nothing was run",
            needs.join("; ")
        ))
    })?;
    if let Some(h) = harness {
        h.check_version()
            .map_err(|e| RunError::Preflight(format!("{e}; nothing was run")))?;
    }
    Ok(())
}

/// How to run `baton swebench eval`.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// The results folder (holding the store).
    pub results: PathBuf,
    /// The Python with the pinned `swebench`; default the experiment's `swebench_python`.
    pub python: Option<PathBuf>,
    /// The SWE-bench JSONL; default the file the run loaded its tasks from.
    pub dataset: Option<PathBuf>,
    /// The harness's `--max_workers`.
    pub max_workers: usize,
    /// The harness's `--timeout` per instance.
    pub timeout: Duration,
    /// The Docker settings the preflight uses (the client `BATON_DOCKER` names).
    pub docker: EnvConfig,
    /// Stop request (Ctrl-C): no further harness run starts; the cells not reached
    /// keep their stored status.
    pub stop: crate::StopSignal,
}

impl EvalOptions {
    /// Options for `results` with the harness's defaults (one worker, 1800 s) and the
    /// Docker client from the environment.
    pub fn new(results: impl Into<PathBuf>) -> Self {
        EvalOptions {
            results: results.into(),
            python: None,
            dataset: None,
            max_workers: 1,
            timeout: Duration::from_secs(1800),
            docker: EnvConfig::for_backend(BackendKind::Docker),
            stop: crate::StopSignal::default(),
        }
    }
}

/// What one (cell, replicate) came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellEval {
    /// The cell's key (`single(lc)`, `handoff(lc -> hc, p25, raw)`).
    pub cell: String,
    /// The replicate.
    pub replicate: u32,
    /// Its predictions file.
    pub file: PathBuf,
    /// The `model_name_or_path` its rows carry.
    pub model_name: String,
    /// Instances in the file.
    pub instances: usize,
    /// Resolved by the harness.
    pub resolved: usize,
    /// Judged and not resolved.
    pub unresolved: usize,
    /// Submitted nothing (unresolved without a harness run).
    pub empty: usize,
    /// No verdict (the harness failed on them, or was not reached).
    pub no_verdict: usize,
    /// Episodes of the cell that have not ended: not in the file.
    pub incomplete: usize,
}

/// What `baton swebench eval` did.
#[derive(Debug, Clone, Default)]
pub struct EvalSummary {
    /// The dataset and the Python used.
    pub dataset: PathBuf,
    /// The harness's Python.
    pub python: PathBuf,
    /// Per (cell, replicate), in cell order.
    pub cells: Vec<CellEval>,
    /// Patches the harness judged in this eval.
    pub judged_now: usize,
    /// Patches whose verdict came from the cache.
    pub from_cache: usize,
    /// Episodes whose stored verdict this eval wrote (unscored or errored before).
    pub newly_scored: usize,
    /// Episodes that remain unscored: the harness gave them no verdict.
    pub still_unscored: usize,
    /// The Docker engine's version, when the preflight ran.
    pub docker: Option<String>,
    /// The harness failure that stopped the eval (the verdicts before it are stored).
    pub harness_error: Option<String>,
    /// Stopped on request before every cell was judged (the rest keep their status).
    pub stopped: bool,
}

impl EvalSummary {
    /// Whether this eval judged or stored nothing new.
    pub fn nothing_new(&self) -> bool {
        self.judged_now == 0 && self.newly_scored == 0 && self.still_unscored == 0
    }
}

/// A file-name-safe key for a cell: `single-lc`, `handoff-lc-to-hc-p25-raw`.
pub fn cell_slug(cell: &AgentCell) -> String {
    let raw = match cell {
        AgentCell::Single { model } => format!("single-{model}"),
        AgentCell::AgentHandoff {
            sender,
            receiver,
            p,
            interface,
            independent,
        } => format!(
            "handoff-{sender}-to-{receiver}-p{p}-{}{}",
            interface.as_str(),
            if *independent { "-independent" } else { "" }
        ),
    };
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The dataset file of a task origin (`path: line 3`, `path: item 3`, `path: row 3`).
fn origin_file(origin: &str) -> &str {
    [": line ", ": item ", ": row "]
        .into_iter()
        .find_map(|sep| {
            let (file, n) = origin.rsplit_once(sep)?;
            (!n.is_empty() && n.chars().all(|c| c.is_ascii_digit())).then_some(file)
        })
        .unwrap_or(origin)
}

/// The folder the experiment file was in: the dataset path as loaded, less the spec's
/// relative `dataset`.
fn experiment_dir(loaded: &Path, spec_dataset: &str) -> Option<PathBuf> {
    let rel = Path::new(spec_dataset);
    if rel.is_absolute() {
        return None;
    }
    let mut base = loaded.to_path_buf();
    for _ in rel.components() {
        if !base.pop() {
            return None;
        }
    }
    (base.join(rel) == loaded).then_some(base)
}

/// Judge every ended SWE-bench episode of the store in `options.results` with the
/// official harness and store the verdicts (see the module docs).
pub async fn swebench_eval(options: EvalOptions) -> Result<EvalSummary, RunError> {
    let store_path = options.results.join(STORE_FILE);
    if !store_path.exists() {
        return Err(RunError::NoResults(store_path));
    }
    let _lock = FolderLock::acquire(&options.results)?;
    let source = store_path.display().to_string();
    let spec_err = |message: String| RunError::Spec {
        source_name: source.clone(),
        message,
    };
    let reader = Reader::open(&store_path)?;
    if !reader.is_agent()? {
        return Err(RunError::OtherKind {
            store: store_path.clone(),
            stored: baton_types::ExperimentKind::Chat,
            given: baton_types::ExperimentKind::Agent,
            hint: ": `baton swebench eval` judges agent runs on SWE-bench",
        });
    }
    let spec = AgentSpec::parse(&source, &reader.experiment()?.meta.spec_toml)?;
    // SWE-bench task id -> (sha256, the dataset file it was loaded from)
    let stored: BTreeMap<String, (String, PathBuf)> = reader
        .agent_tasks()?
        .into_iter()
        .filter(|t| t.format == TaskFormat::SweBench.name())
        .map(|t| {
            let file = PathBuf::from(origin_file(&t.origin));
            (t.task_id, (t.task_sha256, file))
        })
        .collect();
    if stored.is_empty() {
        return Err(spec_err(
            "holds no SWE-bench tasks: nothing for the harness to judge".into(),
        ));
    }
    let loaded_from = stored
        .values()
        .next()
        .map(|(_, f)| f.clone())
        .unwrap_or_default();
    let dataset = options
        .dataset
        .clone()
        .unwrap_or_else(|| loaded_from.clone());
    let python = match (&options.python, &spec.swebench_python) {
        (Some(p), _) => p.clone(),
        (None, Some(p)) if p.is_absolute() => p.clone(),
        (None, Some(p)) => match experiment_dir(&loaded_from, &spec.dataset) {
            Some(dir) => dir.join(p),
            None => p.clone(),
        },
        (None, None) => {
            return Err(spec_err(format!(
                "the experiment sets no swebench_python: pass --python with a Python that has swebench {} installed",
                baton_agent::SWEBENCH_VERSION
            )));
        }
    };
    let tasks =
        baton_agent::swebench::load_swebench(&dataset).map_err(|source| RunError::AgentInput {
            what: format!(
                "{} (the SWE-bench file this run loaded; pass --dataset if it moved)",
                dataset.display()
            ),
            source: Box::new(source),
        })?;
    for (id, (sha, _)) in &stored {
        let task = tasks
            .iter()
            .find(|t| &t.id == id)
            .ok_or_else(|| RunError::Spec {
                source_name: dataset.display().to_string(),
                message: format!("task {id:?} of the stored run is not in this file"),
            })?;
        let now = super::task_sha256(task)?;
        if &now != sha {
            return Err(RunError::Spec {
                source_name: dataset.display().to_string(),
                message: format!(
                    "task {id:?}: sha256 {now} differs from the stored run's {sha}; the harness would judge it against other tests"
                ),
            });
        }
    }
    let work_dir = options.results.join(WORK_DIR);
    let mut harness = SweBenchHarness::new(&python, &dataset, &work_dir);
    harness.max_workers = options.max_workers.max(1);
    harness.timeout = options.timeout;

    // every ended episode of a SWE-bench task, by (cell, replicate)
    let mut groups: BTreeMap<(String, u32), (AgentCell, Vec<AgentEpisodeRow>, usize)> =
        BTreeMap::new();
    for e in reader.agent_episodes()? {
        if !stored.contains_key(&e.task_id) {
            continue;
        }
        let g = groups
            .entry((e.cell.label(), e.replicate))
            .or_insert_with(|| (e.cell.clone(), Vec::new(), 0));
        if e.end.is_none() || e.outcome.status == EpisodeStatus::Incomplete {
            g.2 += 1;
        } else {
            g.1.push(e);
        }
    }
    drop(reader);

    let predictions_dir = work_dir.join(PREDICTIONS_DIR);
    std::fs::create_dir_all(&predictions_dir).map_err(|e| RunError::Write {
        path: predictions_dir.clone(),
        message: e.to_string(),
    })?;
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut planned = Vec::new();
    for ((label, replicate), (cell, mut episodes, incomplete)) in groups {
        episodes.sort_by(|a, b| a.task_id.cmp(&b.task_id));
        let mut slug = cell_slug(&cell);
        // two cells whose names differ only in characters a file name cannot hold
        if names.get(&slug).is_some_and(|other| other != &label) {
            use sha2::{Digest, Sha256};
            slug = format!("{slug}-{}", &hex::encode(Sha256::digest(&label))[..8]);
        }
        names.insert(slug.clone(), label.clone());
        let model_name = format!("{slug}.r{replicate}");
        let file = predictions_dir.join(format!("{model_name}.jsonl"));
        let predictions: Vec<Prediction> = episodes
            .iter()
            .map(|e| Prediction {
                instance_id: e.task_id.clone(),
                patch: e.outcome.final_response.clone().unwrap_or_default(),
            })
            .collect();
        write_predictions(&file, &model_name, &predictions)?;
        planned.push((
            label,
            replicate,
            file,
            model_name,
            episodes,
            predictions,
            incomplete,
        ));
    }

    let mut summary = EvalSummary {
        dataset: dataset.clone(),
        python: python.clone(),
        ..EvalSummary::default()
    };
    let pending: usize = planned.iter().map(|p| harness.pending(&p.5).len()).sum();
    if pending > 0 {
        let info = baton_env::docker_preflight(&options.docker.docker.executable).map_err(|e| {
            RunError::Preflight(format!(
                "{pending} patches need the SWE-bench harness, which runs each instance's tests in Docker: {e}; nothing was evaluated (the predictions files are written)"
            ))
        })?;
        summary.docker = Some(info.server_version);
        harness
            .check_version()
            .map_err(|e| RunError::Preflight(format!("{e}; nothing was evaluated")))?;
    }

    let store = Store::open(&store_path)?;
    let harness = std::sync::Arc::new(harness);
    for (label, replicate, file, model_name, episodes, predictions, incomplete) in planned {
        if options.stop.is_stopped() {
            summary.stopped = true;
            break;
        }
        let mut cell = CellEval {
            cell: label,
            replicate,
            file,
            model_name: model_name.clone(),
            instances: predictions.len(),
            resolved: 0,
            unresolved: 0,
            empty: 0,
            no_verdict: 0,
            incomplete,
        };
        let verdicts = if summary.harness_error.is_some() {
            Err(summary.harness_error.clone().unwrap_or_default())
        } else {
            let (h, m, p) = (harness.clone(), model_name.clone(), predictions.clone());
            tokio::task::spawn_blocking(move || h.evaluate_as(&m, &p))
                .await
                .expect("the harness thread does not panic")
                .map_err(|e| format!("{e:#}"))
        };
        let verdicts: Vec<Option<HarnessVerdict>> = match verdicts {
            Ok(v) => v.into_iter().map(Some).collect(),
            Err(why) => {
                summary.harness_error.get_or_insert(why);
                vec![None; episodes.len()]
            }
        };
        for (e, v) in episodes.iter().zip(verdicts) {
            match v.as_ref().map(|v| (&v.status, v.cached)) {
                Some((HarnessStatus::Resolved, _)) => cell.resolved += 1,
                Some((HarnessStatus::Unresolved, _)) => cell.unresolved += 1,
                Some((HarnessStatus::EmptyPatch, _)) => cell.empty += 1,
                Some((HarnessStatus::Error, _)) | None => cell.no_verdict += 1,
            }
            match v.as_ref() {
                Some(v) if v.status == HarnessStatus::EmptyPatch => {}
                Some(v) if v.cached => summary.from_cache += 1,
                Some(_) => summary.judged_now += 1,
                None => {}
            }
            if !matches!(
                e.outcome.status,
                EpisodeStatus::Unscored | EpisodeStatus::Errored
            ) {
                continue;
            }
            let (status, verdict, reason) = match v {
                Some(v) => super::harness_outcome(Some(v)),
                None => (
                    EpisodeStatus::Unscored,
                    None,
                    Some(format!(
                        "the SWE-bench harness gave no verdict: {}",
                        summary.harness_error.as_deref().unwrap_or("not run")
                    )),
                ),
            };
            if status == EpisodeStatus::Scored {
                summary.newly_scored += 1;
            } else if e.outcome.status == status && e.outcome.reason == reason {
                continue;
            } else {
                summary.still_unscored += 1;
            }
            store
                .agent_verdict(AgentVerdict {
                    episode_id: e.id,
                    status,
                    verdict,
                    reason,
                })
                .await?;
        }
        summary.cells.push(cell);
    }
    Ok(summary)
}

/// Write a predictions file in the harness's JSONL format, atomically.
fn write_predictions(path: &Path, model: &str, predictions: &[Prediction]) -> Result<(), RunError> {
    let mut text = String::new();
    for p in predictions {
        text.push_str(
            &serde_json::json!({
                "instance_id": p.instance_id,
                "model_name_or_path": model,
                "model_patch": p.patch,
            })
            .to_string(),
        );
        text.push('\n');
    }
    let io = |e: std::io::Error| RunError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let tmp = path.with_extension("jsonl.tmp");
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_get_file_safe_names() {
        assert_eq!(
            cell_slug(&AgentCell::Single { model: "lc".into() }),
            "single-lc"
        );
        let h = AgentCell::AgentHandoff {
            sender: "lc".into(),
            receiver: "gpt 5/mini".into(),
            p: 25,
            interface: baton_types::Interface::CompactPre,
            independent: true,
        };
        assert_eq!(
            cell_slug(&h),
            "handoff-lc-to-gpt_5_mini-p25-compact_pre-independent"
        );
    }

    #[test]
    fn the_experiment_folder_comes_from_the_loaded_dataset_path() {
        assert_eq!(
            origin_file("runs/x/verified.jsonl: line 12"),
            "runs/x/verified.jsonl"
        );
        assert_eq!(origin_file("a: line b"), "a: line b");
        assert_eq!(origin_file("a: line "), "a: line ");
        assert_eq!(
            origin_file("d/verified.parquet: row 7"),
            "d/verified.parquet"
        );
        assert_eq!(origin_file("d/v.json: item 2"), "d/v.json");
        assert_eq!(
            experiment_dir(Path::new("exp/data/v.jsonl"), "data/v.jsonl"),
            Some(PathBuf::from("exp"))
        );
        assert_eq!(
            experiment_dir(Path::new("v.jsonl"), "v.jsonl"),
            Some(PathBuf::from(""))
        );
        assert_eq!(experiment_dir(Path::new("/d/v.jsonl"), "/d/v.jsonl"), None);
        assert_eq!(experiment_dir(Path::new("x/w.jsonl"), "v.jsonl"), None);
    }
}
