//! Agent experiments (`kind = "agent"`): every model works every task in the sandbox,
//! each episode's calls, commands, observations and snapshots committed as they happen,
//! submissions scored, and a killed run resumed without repeating a stored step.
//!
//! One episode per (task, model, replicate), cell `single(model)`. Its calls are stored
//! with turn = call index (from 0), phase `prefix`; its commands in `agent_steps`; the
//! working tree after each command as a content-addressed snapshot in the blob folder
//! beside the store ([`BLOB_DIR`]).
//!
//! # Resume
//!
//! A stored episode is rebuilt from the store ([`resume::restore`]): the visible
//! conversation from the context node after the last stored event, the counters from
//! the calls and billed attempts, and the actions of the last call that have no stored
//! step. The environment starts from the task's repository and the last snapshot is
//! restored into it, so only the command whose observation was not committed runs
//! again (a command that ran but whose step was not committed left no trace the agent
//! saw). A finished episode is never re-run.
//!
//! Main types: [`AgentSpec`], [`AgentRunner`], [`AgentRunSummary`]; [`agent_report_input`]
//! reads a store into `baton-report`'s agent report. [`swebench`] holds the Docker
//! preflight a run makes before its first call and `baton swebench eval`, which judges a
//! finished run's SWE-bench patches and stores the verdicts.

pub mod barrier;
pub mod dry_run;
mod growth;
mod handoff;
mod models;
pub(crate) mod report_input;
mod resume;
mod sink;
pub mod spec;
pub mod swebench;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use baton_agent::{
    AgentConfig, AgentDataset, AgentError, AgentExit, AgentLoop, AgentOutcome, AgentTask,
    AgentTemplates, HandoffTexts, HarnessStatus, HarnessVerdict, LocalScorer, Prediction,
    SweBenchHarness, TaskFormat, load_dataset, load_dataset_lenient, start_task_env,
};
use baton_env::{DirBlobStore, SnapshotId};
use baton_models::{Model, PriceCard};
use baton_store::{
    AgentCell, AgentEnd, AgentEpisodeInit, AgentTaskMeta, ExperimentMeta, Outcome, Reader, Store,
};
use baton_types::{Cost, EpisodeStatus, Verdict};

pub use barrier::{ThresholdsFile, thresholds_from_parts};
pub use report_input::{STUDY_BOOTSTRAP, agent_report_input, study_input};
pub use spec::{AGENT_KIND, AgentModel, AgentSpec, BATCH_REFUSED, is_agent_experiment};

use crate::budget::Budget;
use crate::ledger::{self, RunContext};
use crate::lock::FolderLock;
use crate::schedule;
use crate::{RunError, RunOptions, STORE_FILE};

/// The folder beside the store that holds working-tree snapshots (content-addressed).
pub const BLOB_DIR: &str = "blobs";

/// The evaluator profile an agent store records.
pub const AGENT_EVAL_PROFILE: &str = "agent-tests";

/// What an agent run did.
#[derive(Debug, Clone, Default)]
pub struct AgentRunSummary {
    /// The store file.
    pub store_path: PathBuf,
    /// Episodes by status.
    pub episodes: BTreeMap<EpisodeStatus, usize>,
    /// Finished episodes by exit status.
    pub exits: BTreeMap<String, usize>,
    /// Resolved episodes.
    pub resolved: usize,
    /// Calls stored in total.
    pub calls_total: u64,
    /// Calls this run made.
    pub calls_new: u64,
    /// Money this run spent.
    pub spent_now: Cost,
    /// What every run of this experiment paid for.
    pub spend: baton_types::Spend,
    /// Anchors (single-model episodes) that ended with exit `error`.
    pub error_anchors: usize,
    /// Per handoff cell (its label), the summaries that came back unusable (a tool call,
    /// no text) and were paid for and retried.
    pub summary_retries: BTreeMap<String, usize>,
    /// Bytes the snapshot store beside the store holds (every episode's trees,
    /// deduplicated by content).
    pub snapshot_store_bytes: u64,
    /// Each model stopped because none of its calls could succeed (a refused model id,
    /// key or base_url), with why ([`crate::ledger::RunContext::dead_ends`]).
    pub dead_ends: Vec<(String, String)>,
}

/// The bytes of the files under `dir` (0 when it cannot be read).
fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(md) if md.is_dir() => folder_bytes(&e.path()),
            Ok(md) => md.len(),
            Err(_) => 0,
        })
        .sum()
}

impl AgentRunSummary {
    /// Episodes with this status.
    pub fn count(&self, status: EpisodeStatus) -> usize {
        self.episodes.get(&status).copied().unwrap_or(0)
    }
}

/// A prepared agent experiment.
pub struct AgentRunner {
    spec: AgentSpec,
    tasks: Vec<Arc<AgentTask>>,
    models: BTreeMap<String, Arc<Model>>,
    config: Arc<AgentConfig>,
    scorer: Arc<LocalScorer>,
    /// The spec's environment with `BATON_DOCKER` / `BATON_BWRAP` applied (a run-time
    /// setting: the spec, and so the store's identity, keeps what the file says).
    env: baton_env::EnvConfig,
    /// The official harness for SWE-bench submissions, when `swebench_python` is set.
    harness: Option<Arc<SweBenchHarness>>,
    blobs: Arc<DirBlobStore>,
    shared: Arc<RunContext>,
    /// The handoff interfaces' texts.
    texts: HandoffTexts,
    /// Whether handoff prefixes run live.
    independent: bool,
    concurrency: usize,
    store_path: PathBuf,
    /// A part's phase: anchors only, or handoffs with adopted thresholds.
    phase: Option<crate::part::PartPhase>,
    /// A part's `I/N` and every part's upper bound, and its spending cap.
    part: Option<(crate::part::Part, Vec<Cost>)>,
    max_cost: Option<Cost>,
    changes: Option<crate::changes::Changes>,
    _lock: FolderLock,
}

/// The dataset of `spec` with its task selection and the command-line limit applied.
pub fn select_dataset(spec: &AgentSpec, options: &RunOptions) -> Result<AgentDataset, RunError> {
    let name = if spec.dataset == baton_agent::SAMPLE_NAME {
        spec.dataset.clone()
    } else {
        options
            .resolve(Path::new(&spec.dataset))
            .display()
            .to_string()
    };
    let load = if spec.skip_invalid || options.skip_invalid {
        load_dataset_lenient
    } else {
        load_dataset
    };
    let mut dataset = load(&name).map_err(|source| RunError::AgentInput {
        what: format!(
            "experiment {}: dataset = {:?}",
            options.source_name, spec.dataset
        ),
        source: Box::new(source),
    })?;
    for t in &dataset.skipped {
        tracing::warn!(task = %t.id, "left out (skip_invalid): {}", t.reason);
    }
    if !spec.tasks.is_empty() {
        for id in &spec.tasks {
            if !dataset.tasks.iter().any(|t| &t.id == id) {
                return Err(RunError::Spec {
                    source_name: name.clone(),
                    message: format!("tasks: no task {id:?} in the dataset"),
                });
            }
        }
        dataset.tasks.retain(|t| spec.tasks.contains(&t.id));
    }
    if let Some(limit) = options.limit.or(spec.limit) {
        dataset.tasks.truncate(limit);
    }
    Ok(dataset)
}

/// Every part's dry-run upper bound (part 1 first) of `tasks`, the whole experiment's
/// sample: an agent episode's bound is its limits', the same for every task, so a
/// part's is the whole bound in proportion to its tasks.
fn part_bounds(
    spec: &AgentSpec,
    options: &RunOptions,
    dataset: &AgentDataset,
    part: crate::part::Part,
) -> Result<Vec<Cost>, RunError> {
    let tasks = &dataset.tasks;
    let whole = dry_run::estimate(spec, options, dataset)?.paid_upper();
    let mut counts = vec![0i128; part.count as usize];
    for t in tasks {
        counts[crate::part::Part::of_task(&t.id, part.count) as usize - 1] += 1;
    }
    let n = tasks.len().max(1) as i128;
    Ok(counts
        .into_iter()
        .map(|c| Cost(i64::try_from(i128::from(whole.0) * c / n).unwrap_or(i64::MAX)))
        .collect())
}

/// The content hash of a task's files (its identity in the store).
pub(crate) fn task_sha256(task: &AgentTask) -> Result<String, RunError> {
    task.sha256().map_err(|source| RunError::AgentInput {
        what: format!("task {:?} ({})", task.id, task.origin),
        source: Box::new(source),
    })
}

/// The loop's configuration: protocol, limits and templates.
pub fn agent_config(spec: &AgentSpec, options: &RunOptions) -> Result<AgentConfig, RunError> {
    let templates = match &spec.agent_templates {
        Some(p) => {
            let path = options.resolve(p);
            AgentTemplates::load(&path).map_err(|source| RunError::AgentInput {
                what: format!(
                    "experiment {}: agent_templates = {:?}",
                    options.source_name,
                    p.display()
                ),
                source: Box::new(source),
            })?
        }
        None => AgentTemplates::default(),
    };
    Ok(AgentConfig {
        protocol: spec.protocol,
        step_limit: spec.step_limit,
        cost_limit: Cost::from_usd(spec.cost_limit_usd),
        templates,
    })
}

/// The environment every episode opens: the experiment's `[environment]` (with the
/// `BATON_BWRAP` / `BATON_DOCKER` overrides), its `env` over the templates file's
/// `environment.env` (mini-SWE-agent's SWE-bench config sets `PAGER`, `BASH_ENV`, …).
fn environment(spec: &AgentSpec, templates: &AgentTemplates) -> baton_env::EnvConfig {
    let mut env = spec.environment.clone().with_env_overrides();
    for (key, value) in &templates.env {
        env.env.entry(key.clone()).or_insert_with(|| value.clone());
    }
    env
}

/// The price card: embedded, with the experiment's overrides.
pub fn price_card(spec: &AgentSpec, options: &RunOptions) -> Result<PriceCard, RunError> {
    let card = PriceCard::embedded();
    match &spec.prices {
        Some(p) => card
            .with_override_file(&options.resolve(p))
            .map_err(|e| options.setting(format!("prices = {p:?}"), RunError::Prices(e))),
        None => Ok(card),
    }
}

impl AgentRunner {
    /// Load the tasks, build every model with its price (an error here, before any
    /// call), lock the folder and open the store.
    pub async fn prepare(spec: AgentSpec, options: RunOptions) -> Result<Self, RunError> {
        if options.batch {
            return Err(RunError::Flag(format!("--batch: {BATCH_REFUSED}")));
        }
        if options.resume && !options.out_dir.join(STORE_FILE).exists() {
            return Err(RunError::NothingToResume(options.out_dir.join(STORE_FILE)));
        }
        barrier::check_phase(&spec, &options)?;
        let kernel = crate::experiment::Kernel::open(&options)?;
        let store_path = kernel.store_path.clone();
        let lock = kernel.into_lock();
        let mut dataset = select_dataset(&spec, &options)?;
        let config = agent_config(&spec, &options)?;
        let card = price_card(&spec, &options)?;
        let models = models::build(
            &spec,
            &dataset.tasks,
            &card,
            &options,
            &config.templates.model_kwargs,
        )?;
        // a part keeps its tasks, after every part's bound is known (models are built
        // on the whole sample, as a whole run builds them)
        let part_bounds = match options.part {
            Some(part) => {
                let bounds = part_bounds(&spec, &options, &dataset, part)?;
                dataset.tasks.retain(|t| part.contains(&t.id));
                bounds
            }
            None => Vec::new(),
        };
        let max_cost =
            crate::part::record(&options.out_dir.join(STORE_FILE), &options, &part_bounds)?;
        let mut env = environment(&spec, &config.templates);
        // The run's containers carry its label; a run killed with SIGKILL left some, which
        // its resume removes before it starts new ones (the folder lock is held).
        env.run_label = Some(baton_env::run_label(&options.out_dir));
        let harness = spec.swebench_python.as_ref().map(|python| {
            Arc::new(SweBenchHarness::new(
                options.resolve(python),
                options.resolve(Path::new(&spec.dataset)),
                options.out_dir.join(swebench::WORK_DIR),
            ))
        });
        swebench::preflight(&env, &dataset.tasks, harness.as_deref())?;
        if env.backend == baton_env::BackendKind::Docker {
            let removed =
                baton_env::remove_run_containers(&env).map_err(|source| RunError::Environment {
                    what: "removing the run's leftover containers".into(),
                    source: Box::new(source),
                })?;
            if !removed.is_empty() {
                tracing::info!(
                    "removed {} leftover container(s) of this run",
                    removed.len()
                );
            }
        }
        let independent =
            options.independent || spec.handoff.as_ref().is_some_and(|h| h.independent);
        // what this run changes in the folder's stored experiment, before any call
        let growth = growth::compare(&store_path, &spec, &options, &dataset, independent)?;
        let (changes, retire, rerun, adopt, revive) = match growth {
            Some(g) => (Some(g.changes), g.retire, g.rerun, g.adopt, g.revive),
            None => (None, None, None, Vec::new(), Vec::new()),
        };
        let blobs =
            DirBlobStore::new(options.out_dir.join(BLOB_DIR)).map_err(|e| RunError::Lock {
                path: options.out_dir.join(BLOB_DIR),
                message: e.to_string(),
            })?;
        let store = Store::open(&store_path)?;
        let meta = ExperimentMeta {
            name: spec.name.clone(),
            spec_toml: baton_models::redact_url_credentials(&options.spec_text),
            spec_sha256: spec.sha256(),
            price_card_sha256: card.sha256().to_string(),
            eval_profile: AGENT_EVAL_PROFILE.into(),
            eval_version: format!(
                "local {}; swebench {}",
                env!("CARGO_PKG_VERSION"),
                baton_agent::SWEBENCH_VERSION
            ),
            baton_version: env!("CARGO_PKG_VERSION").to_string(),
            git_revision: option_env!("BATON_GIT_REVISION").map(str::to_string),
            simulated: spec.simulated(),
            kind: baton_types::ExperimentKind::Agent,
        };
        if changes.is_some() {
            // the experiment grew: the stored record is replaced, with its normalized form
            store
                .put_experiment(meta, growth::normalized(&spec).to_string())
                .await?;
            // identities first, from the stored experiment the episodes ran under
            if !adopt.is_empty() {
                store.set_identities(adopt).await?;
            }
            if !revive.is_empty() {
                store.revive_agent_episodes(revive).await?;
            }
            if let Some((ids, prefix_models)) = rerun {
                store.rerun_agent_episodes(ids, prefix_models).await?;
            }
            if let Some(planned) = retire {
                let n = store.retire_removed(planned).await?;
                tracing::info!("{n} stored episode(s) retired as removed");
            }
        } else {
            store.init_experiment(meta).await?;
        }
        let texts = match spec.handoff.as_ref().and_then(|h| h.texts.as_ref()) {
            Some(p) => {
                let path = options.resolve(p);
                HandoffTexts::load(&path).map_err(|source| RunError::AgentInput {
                    what: format!(
                        "experiment {}: handoff.texts = {:?}",
                        options.source_name,
                        p.display()
                    ),
                    source: Box::new(source),
                })?
            }
            None => HandoffTexts::default(),
        };
        // the spec as a whole is not an input: growth::compare said what changed in it
        let mut inputs = vec![
            ("price card".to_string(), card.sha256().to_string()),
            ("agent config".to_string(), config_sha256(&config)),
        ];
        if spec.handoff.is_some() {
            inputs.push(("handoff texts".to_string(), texts.sha256()));
            // forked and live prefixes are different cells: one store holds one kind, so
            // the report never pools them
            let prefixes = if independent { "independent" } else { "forked" };
            inputs.push(("handoff prefixes".to_string(), {
                use sha2::{Digest, Sha256};
                hex::encode(Sha256::digest(prefixes))
            }));
        }
        store
            .record_skipped(
                dataset
                    .skipped
                    .iter()
                    .map(|t| (t.id.clone(), t.reason.clone()))
                    .collect(),
            )
            .await?;
        for t in &dataset.tasks {
            let sha = task_sha256(t)?;
            store
                .agent_task(AgentTaskMeta {
                    task_id: t.id.clone(),
                    origin: t.origin.clone(),
                    difficulty: t.difficulty,
                    format: t.format.name().to_string(),
                    task_sha256: sha.clone(),
                })
                .await?;
            inputs.push((format!("task {}", t.id), sha));
        }
        for c in store.check_inputs(inputs, options.allow_changed).await? {
            tracing::warn!(input = %c, "continuing with a changed input (--allow-changed); recorded in the store");
        }
        if let (Some(crate::part::PartPhase::Handoffs), Some(part), Some(file)) =
            (options.phase, options.part, &options.thresholds)
        {
            barrier::adopt(file, &spec, part, &store, &store_path).await?;
        }
        // planned are the episodes this run will end, the same ones the progress counts as
        // done: the anchors and (unless this is a part's anchors phase) the handoff cells,
        // less those stored finished (a resume, a part's handoffs phase after its anchors)
        let per_task = dataset.tasks.len() * spec.replicates as usize;
        let singles = per_task * models.len();
        let handoffs = match (&spec.handoff, options.phase) {
            (_, Some(crate::part::PartPhase::Anchors)) | (None, _) => 0,
            (Some(h), _) => per_task * h.cells(independent).len(),
        };
        let (mut singles_done, mut handoffs_done) = (0, 0);
        for e in Reader::open(&store_path)?.agent_episodes()? {
            if e.outcome.status != EpisodeStatus::Incomplete {
                match e.cell {
                    AgentCell::Single { .. } => singles_done += 1,
                    _ => handoffs_done += 1,
                }
            }
        }
        let episodes =
            singles.saturating_sub(singles_done) + handoffs.saturating_sub(handoffs_done);
        options
            .observer
            .planned(episodes, episodes * spec.step_limit as usize);
        let paid = Reader::open(&store_path)?.total_paid()?;
        let secrets = ledger::secrets_in(
            spec.models
                .values()
                .filter_map(|m| m.get("api_key_env").and_then(|v| v.as_str())),
        );
        Ok(AgentRunner {
            concurrency: options.concurrency.unwrap_or(spec.concurrency).max(1),
            scorer: Arc::new(LocalScorer::new(env.clone())),
            env,
            harness,
            spec,
            tasks: dataset.tasks.into_iter().map(Arc::new).collect(),
            models,
            config: Arc::new(config),
            blobs: Arc::new(blobs),
            shared: Arc::new(RunContext::new(
                store,
                options.stop,
                options.observer,
                Budget::new(max_cost, paid),
                secrets,
            )),
            store_path,
            phase: options.phase,
            part: options.part.map(|p| (p, part_bounds)),
            max_cost,
            texts,
            independent,
            changes,
            _lock: lock,
        })
    }

    /// The tasks, in run order.
    pub fn tasks(&self) -> &[Arc<AgentTask>] {
        &self.tasks
    }

    /// What this run changes in the folder's stored experiment, found before any call
    /// (`None` for a folder with no experiment yet).
    pub fn changes(&self) -> Option<&crate::changes::Changes> {
        self.changes.as_ref()
    }

    /// This run's spending cap: `--max-cost`, or for a part its share of it.
    pub fn max_cost(&self) -> Option<Cost> {
        self.max_cost
    }

    /// A part's `I/N` with every part's dry-run upper bound (part 1 first).
    pub fn part(&self) -> Option<(crate::part::Part, &[Cost])> {
        self.part.as_ref().map(|(p, b)| (*p, b.as_slice()))
    }

    /// Run every episode, resuming what is stored.
    pub async fn run(self) -> Result<AgentRunSummary, RunError> {
        let before = Reader::open(&self.store_path)?;
        let (calls_before, paid_before) = (before.call_count()?, before.total_paid()?);
        drop(before);
        let runner = Arc::new(self);
        let mut jobs = Vec::new();
        for replicate in 0..runner.spec.replicates {
            for ti in 0..runner.tasks.len() {
                for model in runner.models.keys() {
                    jobs.push((ti, model.clone(), replicate));
                }
            }
        }
        let (r, jobs) = (runner.clone(), Arc::new(jobs));
        schedule::for_each_bounded(
            jobs.len(),
            runner.concurrency,
            &runner.shared.stop,
            move |i| {
                let (r, jobs) = (r.clone(), jobs.clone());
                async move {
                    let (ti, model, replicate) = &jobs[i];
                    r.run_episode(*ti, model, *replicate).await
                }
            },
        )
        .await?;
        // a part's anchors phase stops at the barrier: the thresholds need every part's
        if runner.phase != Some(crate::part::PartPhase::Anchors) {
            runner.run_handoffs().await?;
        }
        if let Some(why) = runner.shared.first_block() {
            return Err(RunError::Unpriced(why));
        }
        let reader = Reader::open(&runner.store_path)?;
        let spend = reader.spend()?;
        let mut summary = AgentRunSummary {
            store_path: runner.store_path.clone(),
            calls_total: reader.call_count()?,
            spent_now: spend.paid - paid_before,
            spend,
            ..AgentRunSummary::default()
        };
        summary.calls_new = summary.calls_total - calls_before;
        summary.snapshot_store_bytes = folder_bytes(runner.blobs.root());
        summary.dead_ends = runner.shared.dead_ends();
        for e in reader.agent_episodes()? {
            let single = matches!(e.cell, AgentCell::Single { .. });
            if single
                && e.end
                    .as_ref()
                    .is_some_and(|end| end.exit == AgentExit::Error)
            {
                summary.error_anchors += 1;
            }
            if !single {
                let retried = reader
                    .agent_progress(e.id)?
                    .unusable
                    .iter()
                    .filter(|a| a.phase == baton_types::Phase::Handoff)
                    .count();
                if retried > 0 {
                    *summary.summary_retries.entry(e.cell.label()).or_default() += retried;
                }
            }
            *summary.episodes.entry(e.outcome.status).or_default() += 1;
            if let Some(end) = &e.end {
                *summary
                    .exits
                    .entry(end.exit.name().to_string())
                    .or_default() += 1;
            }
            if e.outcome.verdict.as_ref().and_then(|v| v.is_correct) == Some(true) {
                summary.resolved += 1;
            }
        }
        Ok(summary)
    }

    /// The seed of a replicate: the same for every task and model (the simulated
    /// agent's draws add the task and the model), so models are paired on each task.
    fn seed(&self, replicate: u32) -> u64 {
        self.spec.seed.wrapping_add(u64::from(replicate))
    }

    async fn run_episode(
        &self,
        ti: usize,
        model_name: &str,
        replicate: u32,
    ) -> Result<(), RunError> {
        let task = &self.tasks[ti];
        let model = &self.models[model_name];
        let seed = self.seed(replicate);
        let store = &self.shared.store;
        let progress = store
            .agent_episode(AgentEpisodeInit {
                task_id: task.id.clone(),
                cell: AgentCell::Single {
                    model: model_name.to_string(),
                },
                k: None,
                forked_from: None,
                replicate,
                seed,
                task_sha256: task_sha256(task)?,
            })
            .await?;
        if progress.status != EpisodeStatus::Incomplete {
            return Ok(());
        }
        let episode_id = progress.episode_id;
        let restored = match resume::restore(&self.config, task, &progress, store, None).await? {
            Ok(r) => r,
            Err(what) => {
                // a stored reply without a cost: the model is blocked until the card has it
                let why =
                    self.shared
                        .block_unpriced(model_name, &what, "it is stored without a cost");
                return self.leave_incomplete(episode_id, why, Cost::ZERO).await;
            }
        };
        let outcome = match restored.ended {
            Some(outcome) => Ok(outcome),
            None => {
                self.drive(
                    task,
                    model,
                    episode_id,
                    seed,
                    restored,
                    progress.last_snapshot(),
                    baton_types::Phase::Prefix,
                    &self.config,
                )
                .await?
            }
        };
        let paid = Reader::open(&self.store_path)?.episode_paid(episode_id)?;
        match outcome {
            // every exit finishes the episode, `error` (a model-side refusal) included
            Ok(o) => self.finish(task, episode_id, o, paid, paid).await,
            Err(why) => self.leave_incomplete(episode_id, why, paid).await,
        }
    }

    /// Run the loop from a restored state in a fresh environment with the last
    /// snapshot restored, its calls stored with `phase`. `Ok(Err(why))`: the episode
    /// stays incomplete.
    #[allow(clippy::too_many_arguments)]
    async fn drive(
        &self,
        task: &Arc<AgentTask>,
        model: &Arc<Model>,
        episode_id: i64,
        seed: u64,
        restored: resume::Restored,
        snapshot: Option<&str>,
        phase: baton_types::Phase,
        config: &AgentConfig,
    ) -> Result<Result<AgentOutcome, String>, RunError> {
        let env_config = self.env.clone();
        let (t, blobs, snap) = (
            task.clone(),
            self.blobs.clone(),
            snapshot.map(str::to_string),
        );
        let started = tokio::task::spawn_blocking(move || -> Result<_, AgentError> {
            let mut env = start_task_env(&t, &env_config)?;
            if let Some(id) = snap {
                env.restore(blobs.as_ref(), &SnapshotId(id))
                    .map_err(|source| AgentError::Env {
                        task_id: t.id.clone(),
                        source,
                    })?;
            }
            Ok(env)
        })
        .await
        .expect("the environment thread does not panic");
        let mut env = match started {
            Ok(env) => Some(env),
            Err(e) => return Ok(Err(format!("{e:#}"))),
        };
        let mut state = restored.state;
        let mut sink = sink::StoreSink::new(
            &self.shared,
            model,
            &task.id,
            episode_id,
            phase,
            restored.context,
        );
        let lp = AgentLoop {
            config,
            task_id: &task.id,
            seed: Some(seed),
            blobs: Some(self.blobs.as_ref()),
            prior_unusable: restored.prior_unusable,
        };
        let result = lp.run(model, &mut env, &mut state, &mut sink).await;
        sink.settle();
        if let Some(env) = env.take() {
            let _ = tokio::task::spawn_blocking(move || env.close()).await;
        }
        match result {
            Ok(o) => Ok(Ok(o)),
            Err(e @ AgentError::Sink { .. }) => Err(sink.run_error(e)),
            Err(AgentError::Unpriced { reason, call, .. }) => {
                let why = self.shared.block_unpriced(
                    model.name(),
                    &format!("task {:?}, call {call}", task.id),
                    &reason,
                );
                Ok(Err(why))
            }
            Err(e) => Ok(Err(format!("{e:#}"))),
        }
    }

    async fn leave_incomplete(
        &self,
        episode_id: i64,
        why: String,
        paid: Cost,
    ) -> Result<(), RunError> {
        let mut outcome = Outcome::unfinished();
        outcome.reason = Some(why);
        outcome.cost_attributed = paid;
        outcome.cost_paid = paid;
        self.shared.store.finish(episode_id, outcome).await?;
        self.shared.observer.episode(EpisodeStatus::Incomplete);
        Ok(())
    }

    /// Score the submission (if any) and store the outcome with the exit.
    async fn finish(
        &self,
        task: &Arc<AgentTask>,
        episode_id: i64,
        o: AgentOutcome,
        attributed: Cost,
        paid: Cost,
    ) -> Result<(), RunError> {
        let (status, verdict, reason) = match (&o.submission, task.format) {
            (Some(patch), TaskFormat::SweBench) => match &self.harness {
                None => (
                    EpisodeStatus::Unscored,
                    None,
                    Some(format!(
                        "SWE-bench submissions are scored by the official harness: set swebench_python to a Python with swebench {} installed",
                        baton_agent::SWEBENCH_VERSION
                    )),
                ),
                Some(harness) => {
                    let harness = harness.clone();
                    let prediction = Prediction {
                        instance_id: task.id.clone(),
                        patch: patch.clone(),
                    };
                    let judged = tokio::task::spawn_blocking(move || {
                        harness.evaluate(std::slice::from_ref(&prediction))
                    })
                    .await
                    .expect("the harness thread does not panic");
                    match judged {
                        Ok(mut verdicts) => harness_outcome(verdicts.pop()),
                        Err(e) => (EpisodeStatus::Errored, None, Some(format!("{e:#}"))),
                    }
                }
            },
            (Some(patch), _) => {
                let (scorer, t, patch) = (self.scorer.clone(), task.clone(), patch.clone());
                let scored = tokio::task::spawn_blocking(move || scorer.score(&t, &patch))
                    .await
                    .expect("the scoring thread does not panic");
                match scored {
                    Ok(v) => (
                        EpisodeStatus::Scored,
                        Some(Verdict {
                            score: if v.resolved { 1.0 } else { 0.0 },
                            is_correct: Some(v.resolved),
                            error: v.run_error.clone(),
                            details: serde_json::to_value(&v).unwrap_or_default(),
                            rule: None,
                            no_answer: false,
                        }),
                        None,
                    ),
                    Err(e) => (EpisodeStatus::Errored, None, Some(format!("{e:#}"))),
                }
            }
            (None, _) => (
                EpisodeStatus::Scored,
                Some(Verdict {
                    score: 0.0,
                    is_correct: Some(false),
                    error: Some(format!(
                        "no submission: the run ended with {}",
                        o.exit.name()
                    )),
                    details: serde_json::Value::Null,
                    rule: None,
                    no_answer: true,
                }),
                None,
            ),
        };
        let outcome = Outcome {
            status,
            final_response: o.submission.clone(),
            extracted: None,
            verdict,
            reason,
            cost_attributed: attributed,
            cost_paid: paid,
        };
        let end = AgentEnd {
            exit: o.exit,
            calls: o.calls,
            error: o.error,
        };
        self.shared
            .store
            .finish_agent(episode_id, outcome, end)
            .await?;
        self.shared.observer.episode(status);
        Ok(())
    }
}

/// The sha256 of the loop's configuration (protocol, limits, templates).
fn config_sha256(config: &AgentConfig) -> String {
    use sha2::{Digest, Sha256};
    let json = serde_json::to_vec(config).expect("a config always serializes");
    hex::encode(Sha256::digest(json))
}

/// An episode's status, verdict and reason from the harness's verdict on its patch. A
/// harness that gave no verdict leaves the episode unscored, with why.
pub(crate) fn harness_outcome(
    verdict: Option<HarnessVerdict>,
) -> (EpisodeStatus, Option<Verdict>, Option<String>) {
    match verdict {
        Some(v) if v.status != HarnessStatus::Error => {
            let resolved = v.status == HarnessStatus::Resolved;
            let empty = v.status == HarnessStatus::EmptyPatch;
            (
                EpisodeStatus::Scored,
                Some(Verdict {
                    score: if resolved { 1.0 } else { 0.0 },
                    is_correct: Some(resolved),
                    error: None,
                    details: serde_json::to_value(&v).unwrap_or_default(),
                    rule: None,
                    no_answer: empty,
                }),
                None,
            )
        }
        Some(v) => (
            EpisodeStatus::Unscored,
            None,
            Some(format!(
                "the SWE-bench harness gave no verdict: {}",
                v.error.unwrap_or_else(|| "no report".into())
            )),
        ),
        None => (
            EpisodeStatus::Unscored,
            None,
            Some("the SWE-bench harness returned no verdict".into()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(status: HarnessStatus, error: Option<&str>) -> HarnessVerdict {
        HarnessVerdict {
            instance_id: "astropy__astropy-12907".into(),
            patch_sha256: "0".repeat(64),
            status,
            patch_applied: Some(true),
            fail_to_pass: Default::default(),
            pass_to_pass: Default::default(),
            harness_version: baton_agent::SWEBENCH_VERSION.into(),
            error: error.map(str::to_string),
            cached: false,
        }
    }

    #[test]
    fn the_experiments_env_goes_over_the_templates_files() {
        let spec = AgentSpec::parse(
            "t.toml",
            r#"
            kind = "agent"
            name = "t"
            dataset = "agent-sample"
            [environment]
            env = { PAGER = "less", EXTRA = "1" }
            [models.lc]
            model = "sim/lc"
            "#,
        )
        .unwrap();
        let templates = AgentTemplates::from_yaml(
            "environment:\n  env:\n    PAGER: cat\n    TQDM_DISABLE: 1\n    BASH_ENV: /root/.bashrc\n",
            "mini.yaml",
        )
        .unwrap();
        let env = environment(&spec, &templates).env;
        let want: BTreeMap<String, String> = [
            ("BASH_ENV", "/root/.bashrc"),
            ("EXTRA", "1"),
            ("PAGER", "less"),
            ("TQDM_DISABLE", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(env, want);
        assert!(environment(&spec, &AgentTemplates::default()).env.len() == 2);
    }

    #[test]
    fn the_harness_verdict_scores_the_episode() {
        let (status, v, reason) = harness_outcome(Some(verdict(HarnessStatus::Resolved, None)));
        let v = v.unwrap();
        assert_eq!(
            (status, v.score, v.is_correct, reason),
            (EpisodeStatus::Scored, 1.0, Some(true), None)
        );
        assert_eq!(v.details["status"], "resolved");

        let (status, v, _) = harness_outcome(Some(verdict(HarnessStatus::Unresolved, None)));
        let v = v.unwrap();
        assert_eq!(
            (status, v.score, v.no_answer),
            (EpisodeStatus::Scored, 0.0, false)
        );

        let (_, v, _) = harness_outcome(Some(verdict(HarnessStatus::EmptyPatch, None)));
        assert!(
            v.unwrap().no_answer,
            "an empty patch is no answer, not a wrong one"
        );
    }

    #[test]
    fn no_verdict_leaves_the_episode_unscored_with_why() {
        let (status, v, reason) = harness_outcome(Some(verdict(
            HarnessStatus::Error,
            Some("docker build failed"),
        )));
        assert_eq!(status, EpisodeStatus::Unscored);
        assert!(v.is_none());
        assert!(reason.unwrap().contains("docker build failed"));
        let (status, v, _) = harness_outcome(None);
        assert_eq!((status, v), (EpisodeStatus::Unscored, None));
    }
}
