//! The public API of a run and its loop: prepare an experiment, run its task groups,
//! and run each episode (an anchor or a handoff) through the turn loop.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use baton_data::Schedule;
use baton_models::{Model, ProviderFactory};
use baton_store::{CallRow, EpisodeInit, ExperimentMeta, OpenEpisode, Reader, Store, TaskMeta};
use baton_types::{Baseline, Cell, Cost, EpisodeStatus, Interface, Phase, Spend, Task};
use futures::StreamExt;
use futures::stream::FuturesOrdered;

use crate::RunError;
use crate::budget::Budget;
use crate::changes::{self, Changes};
use crate::control::{Observer, SilentObserver, StopSignal};
use crate::dry_run::Bounds;
use crate::episode::{Shared, SingleTurn, Transcript, Unfinished};
use crate::extraction::extract;
use crate::growth::{self, Planned, Prior};
use crate::identity::{EpisodeKey, Identities};
use crate::interface::InterfaceTemplates;
use crate::ledger::{self, RunContext};
use crate::lock::FolderLock;
use crate::part::Part;
use crate::plan::{Plan, TaskGroup};
use crate::schedule;
use crate::scoring::{EvaluatorFactory, LicEvaluators, finish};
use crate::setup::{Extractor, Setup};
use crate::spec::ExperimentSpec;

/// How to run an experiment, chat ([`Runner`]) or agent ([`crate::agent::AgentRunner`]).
/// Two options are the chat study's alone: `batch` (an agent run refuses it) and
/// `evaluators` (an agent run scores with the tasks' tests or the SWE-bench harness).
pub struct RunOptions {
    /// Where the store and reports go.
    pub out_dir: PathBuf,
    /// The folder relative dataset and template paths are taken from.
    pub base_dir: PathBuf,
    /// The experiment file's text, stored with the run.
    pub spec_text: String,
    /// How errors name the experiment file (its path as given); default `experiment`.
    pub source_name: String,
    /// Require an existing store.
    pub resume: bool,
    /// Override the spec's task limit (per family for a chat experiment).
    pub limit: Option<usize>,
    /// Override the spec's concurrency.
    pub concurrency: Option<usize>,
    /// Re-sample handoff prefixes instead of forking them.
    pub independent: bool,
    /// Send every model's calls through its provider's batch API (`--batch`: `batch =
    /// true` on every model).
    pub batch: bool,
    /// Run the valid tasks of a partly invalid dataset, storing the rest with why.
    pub skip_invalid: bool,
    /// Stop scheduling calls before the experiment's total spend would pass this cap;
    /// unfinished episodes stay `incomplete` and resume later.
    pub max_cost: Option<Cost>,
    /// Chat: run again the stored episodes whose identity changed (a model's request
    /// settings, task data, templates, interface texts); without it such a run is
    /// refused before any call ([`RunError::Changed`]). Agent: continue a resume whose
    /// inputs changed since the results were stored; the change is recorded.
    pub allow_changed: bool,
    /// Stop request.
    pub stop: StopSignal,
    /// Extra provider kinds (HTTP providers); `sim` is built in.
    pub providers: Vec<Arc<dyn ProviderFactory>>,
    /// The evaluators that score final answers; default [`LicEvaluators`].
    pub evaluators: Arc<dyn EvaluatorFactory>,
    /// Progress events.
    pub observer: Arc<dyn Observer>,
    /// Run one part of the experiment (`--part I/N`, see [`crate::part`]): only the
    /// tasks that hash to it, `max_cost` read as the experiment's total (this part gets
    /// its share), and rate limits divided by N unless `part_rate_limits`.
    pub part: Option<Part>,
    /// With `part`: the experiment's `requests_per_minute` and `tokens_per_minute` are
    /// this part's own, not divided by N (`--part-rate-limits`).
    pub part_rate_limits: bool,
    /// With `part`, an agent handoff study's phase (`--phase`); a chat experiment and
    /// a whole run have none.
    pub phase: Option<crate::part::PartPhase>,
    /// With [`PartPhase::Handoffs`](crate::part::PartPhase): the thresholds file `baton
    /// thresholds` wrote from every part's anchors.
    pub thresholds: Option<PathBuf>,
}

impl RunOptions {
    /// Options with defaults: no resume requirement, no overrides, no extra providers,
    /// LiC's evaluators.
    pub fn new(
        out_dir: impl Into<PathBuf>,
        base_dir: impl Into<PathBuf>,
        spec_text: impl Into<String>,
    ) -> Self {
        RunOptions {
            out_dir: out_dir.into(),
            base_dir: base_dir.into(),
            spec_text: spec_text.into(),
            resume: false,
            source_name: "experiment".into(),
            limit: None,
            concurrency: None,
            independent: false,
            batch: false,
            skip_invalid: false,
            max_cost: None,
            allow_changed: false,
            stop: StopSignal::default(),
            providers: Vec::new(),
            evaluators: Arc::new(LicEvaluators),
            observer: Arc::new(SilentObserver),
            part: None,
            part_rate_limits: false,
            phase: None,
            thresholds: None,
        }
    }

    /// `spec` with each model's rate limits as this part's: divided by N for a part
    /// (unless [`part_rate_limits`](Self::part_rate_limits)), as given otherwise.
    pub(crate) fn part_limits(&self, spec: &ExperimentSpec) -> ExperimentSpec {
        let mut spec = spec.clone();
        for m in spec.models.values_mut().chain(spec.extractor.as_mut()) {
            self.part_model_limits(m);
        }
        spec
    }

    /// One model's rate limits as this part's (see [`part_limits`](Self::part_limits)).
    pub(crate) fn part_model_limits(&self, m: &mut crate::spec::ModelSpec) {
        if let Some(part) = self.part.filter(|_| !self.part_rate_limits) {
            m.requests_per_minute = m.requests_per_minute.map(|r| part.divide(r));
            m.tokens_per_minute = m.tokens_per_minute.map(|t| part.divide(t));
        }
    }

    /// `p` as given when absolute, else under [`base_dir`](Self::base_dir).
    pub(crate) fn resolve(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base_dir.join(p)
        }
    }

    /// `cause` as the error of the experiment's setting `key`.
    pub(crate) fn setting(&self, key: String, cause: RunError) -> RunError {
        RunError::Setting {
            source_name: self.source_name.clone(),
            key,
            cause: Box::new(cause),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// The experiment's store file.
    pub store_path: PathBuf,
    /// Episodes by status (statuses with none are absent).
    pub episodes: BTreeMap<EpisodeStatus, usize>,
    /// Calls stored in total.
    pub calls_total: u64,
    /// Calls this run made.
    pub calls_new: u64,
    /// Money this run spent.
    pub spent_now: Cost,
    /// Money every run of this experiment spent.
    pub paid_total: Cost,
    /// What every run of this experiment paid for, over every answered attempt.
    pub spend: Spend,
    /// Sum of attributed episode costs.
    pub attributed_total: Cost,
    /// Money not spent thanks to forked prefixes.
    pub saved_by_forking: Cost,
    /// Models stopped this run because none of their calls could succeed: each model's
    /// name, and why (its endpoint, the provider's answer and the fix).
    pub dead_ends: Vec<(String, String)>,
    /// The causes of the episodes left incomplete or errored, most frequent first, each
    /// with how many episodes it left so.
    pub causes: Vec<(String, usize)>,
}

impl RunSummary {
    /// Episodes with this status.
    pub fn count(&self, status: EpisodeStatus) -> usize {
        self.episodes.get(&status).copied().unwrap_or(0)
    }
}

/// What left an episode unfinished, without the call it happened at: `turn 3
/// (prefix): model "m" … failed …` and `turn 5 not sent: …` both read as what follows
/// the call's name, so one cause met at many turns counts as one.
fn cause_of(reason: &str) -> &str {
    // a handoff waiting for its anchor's prefix: one cause whatever the turn counts
    if reason.starts_with("the sender's prefix is incomplete: ")
        && let Some((cause, _)) = reason.split_once(" has ")
    {
        return cause;
    }
    let rest = reason
        .strip_prefix("turn ")
        .or_else(|| reason.strip_prefix("call "))
        .or_else(|| reason.strip_prefix("answer extraction attempt "))
        .map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit()));
    match rest {
        Some(r) => r
            .strip_prefix(" not sent: ")
            .or_else(|| {
                r.strip_prefix(" (")
                    .and_then(|r| r.split_once("): "))
                    .map(|(_, cause)| cause)
            })
            .unwrap_or(reason),
        None => reason,
    }
}

/// A prepared experiment.
pub struct Runner {
    spec: ExperimentSpec,
    tasks: Vec<Arc<Task>>,
    schedules: Vec<Schedule>,
    baselines: Vec<Vec<(Baseline, String)>>,
    models: BTreeMap<String, Arc<Model>>,
    extractor: Option<Arc<Extractor>>,
    plan: Plan,
    interfaces: InterfaceTemplates,
    shared: Arc<Shared>,
    concurrency: usize,
    store_path: PathBuf,
    identities: Identities,
    changes: Changes,
    max_cost: Option<Cost>,
    part: Option<(Part, Vec<Cost>)>,
    _lock: FolderLock,
}

/// An anchor episode as its handoffs fork it.
struct Anchor {
    /// Its row id.
    id: i64,
    /// Its stored calls, in order.
    calls: Vec<CallRow>,
    /// Its stored unusable attempts, in order.
    attempts: Vec<baton_store::AttemptCost>,
}

impl Runner {
    /// Load the dataset, build schedules and models (every model must have a price:
    /// an error here, before any call), and open the store.
    pub async fn prepare(spec: ExperimentSpec, options: RunOptions) -> Result<Runner, RunError> {
        let kernel = crate::experiment::Kernel::open(&options)?;
        let store_path = kernel.store_path.clone();
        let lock = kernel.into_lock();
        let Setup {
            spec,
            tasks,
            schedules,
            baselines,
            models,
            extractor,
            card,
            spider_dir,
            interfaces,
            templates,
            skipped,
            batch_store,
            part_bounds,
        } = Setup::load(spec, &options)?;
        let max_cost = crate::part::record(&store_path, &options, &part_bounds)?;
        let part = options.part.map(|p| (p, part_bounds));
        let evaluators = options.evaluators.make(&spider_dir);
        let inputs = input_hashes(
            &spec,
            &card,
            &interfaces,
            &templates,
            extractor.as_deref(),
            &tasks,
            &options,
        );
        let evaluator = format!(
            "{} {}",
            options.evaluators.profile(),
            options.evaluators.version()
        );
        let identities = Identities::new(&spec, inputs.iter().cloned().collect(), evaluator);

        let store = Store::open(&store_path)?;
        // batched models journal their batches here; they make no call before it is set
        let _ = batch_store.set(store.clone());
        let mut prior = Prior::read(&store_path)?;
        if let Some(p) = prior.as_mut() {
            p.adopt_identities(&store).await?;
        }
        let plan = Plan::new(&spec, &tasks);
        let planned: Vec<Planned> = plan
            .groups
            .iter()
            .enumerate()
            .flat_map(|(gi, g)| g.cells().into_iter().map(move |(cell, k)| (gi, g, cell, k)))
            .map(|(gi, g, cell, k)| {
                let sha = schedule_sha256(&schedules, &baselines, g, &cell);
                let identity = identities.of(&EpisodeKey {
                    task_id: &tasks[g.task].task_id,
                    family: tasks[g.task].family,
                    cell: &cell,
                    replicate: g.replicate,
                    seed: g.seed,
                    k: k.map(|k| k as u32),
                    schedule_sha256: &sha,
                });
                Planned {
                    group: gi,
                    cell,
                    k,
                    identity,
                }
            })
            .collect();
        let families: Vec<baton_types::Family> = tasks.iter().map(|t| t.family).collect();
        let task_ids: Vec<String> = tasks.iter().map(|t| t.task_id.clone()).collect();
        let bounds = Bounds {
            spec: &spec,
            schedules: &schedules,
            baselines: &baselines,
            models: &models,
            extractor: extractor.as_deref(),
            families: &families,
            interfaces: &interfaces,
            memo: Default::default(),
        };
        let mut changes =
            growth::compare(prior.as_ref(), &spec, &plan, &planned, &task_ids, &bounds);
        if changes.reruns() && !options.allow_changed {
            return Err(RunError::Changed {
                source_name: options.source_name.clone(),
                changes: changes.to_string(),
                rerun: changes.rerun,
            });
        }
        let reprice = prior.as_ref().is_some_and(|p| {
            p.inputs.get("price card").map(String::as_str) != Some(card.sha256())
                || p.price_keys() != price_keys(&spec)
        });
        if reprice {
            let (repricing, before, after) = growth::reprice(&store_path, &spec, &card, &models)?;
            store.reprice(repricing).await?;
            changes.repriced = Some((before, after));
        }
        store
            .put_experiment(
                ExperimentMeta {
                    name: spec.name.clone(),
                    // a base URL may carry credentials; they never reach the store
                    spec_toml: baton_models::redact_url_credentials(&options.spec_text),
                    spec_sha256: spec.sha256(),
                    price_card_sha256: card.sha256().to_string(),
                    eval_profile: options.evaluators.profile(),
                    eval_version: options.evaluators.version(),
                    baton_version: env!("CARGO_PKG_VERSION").to_string(),
                    git_revision: option_env!("BATON_GIT_REVISION").map(str::to_string),
                    simulated: spec.simulated(),
                    kind: baton_types::ExperimentKind::Chat,
                },
                changes::normalized(&spec).to_string(),
            )
            .await?;
        for (task, schedule) in tasks.iter().zip(&schedules) {
            store
                .put_task(TaskMeta {
                    task_id: task.task_id.clone(),
                    family: task.family,
                    n_turns: task.n_turns() as u32,
                    schedule_sha256: schedule.sha256.clone(),
                    sample_json: task.sample.to_string(),
                })
                .await?;
        }
        store
            .record_skipped(
                skipped
                    .iter()
                    .map(|t| (t.task_id.clone(), t.reason.clone()))
                    .collect(),
            )
            .await?;
        // every input's new hash is stored and each change recorded (`input_changes`)
        store.check_inputs(inputs, true).await?;
        store
            .retire_removed(
                planned
                    .iter()
                    .map(|p| {
                        let g = &plan.groups[p.group];
                        (task_ids[g.task].clone(), p.cell.label(), g.replicate)
                    })
                    .collect(),
            )
            .await?;
        options
            .observer
            .planned(plan.episodes(), plan.calls(&tasks, spec.fork_prefixes));
        let tasks: Vec<Arc<Task>> = tasks.into_iter().map(Arc::new).collect();
        let paid = Reader::open(&store_path)?.total_paid()?;
        let secrets = ledger::secrets_in(
            spec.models
                .values()
                .filter_map(|m| m.api_key_env.as_deref()),
        );
        // A batched model's round is every episode waiting on it, so with one batched
        // every task group runs at once (direct models keep their own limits).
        let batched = spec.models.values().any(|m| m.batch);
        let concurrency = if batched {
            plan.groups.len()
        } else {
            options.concurrency.unwrap_or(spec.concurrency)
        };
        Ok(Runner {
            concurrency: concurrency.max(1),
            identities,
            changes,
            spec,
            tasks,
            schedules,
            baselines,
            models,
            extractor,
            plan,
            interfaces,
            shared: Arc::new(Shared {
                ctx: RunContext::new(
                    store,
                    options.stop,
                    options.observer,
                    Budget::new(max_cost, paid),
                    secrets,
                ),
                evaluators,
            }),
            max_cost,
            part,
            store_path,
            _lock: lock,
        })
    }

    /// The task groups this run covers.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The tasks, in run order.
    pub fn tasks(&self) -> &[Arc<Task>] {
        &self.tasks
    }

    /// The models by name.
    pub fn models(&self) -> &BTreeMap<String, Arc<Model>> {
        &self.models
    }

    /// What this run changes in the folder's stored experiment, found before any call:
    /// the changed keys and how many episodes are reused, resumed, new and re-run, with
    /// the bound of what will run.
    pub fn changes(&self) -> &Changes {
        &self.changes
    }

    /// This run's spending cap: `--max-cost`, or for a part its share of it.
    pub fn max_cost(&self) -> Option<Cost> {
        self.max_cost
    }

    /// A part's `I/N` with every part's dry-run upper bound (part 1 first), from
    /// which its share of `--max-cost` is computed.
    pub fn part(&self) -> Option<(Part, &[Cost])> {
        self.part.as_ref().map(|(p, b)| (*p, b.as_slice()))
    }

    /// The spec being run (after command-line overrides).
    pub fn spec(&self) -> &ExperimentSpec {
        &self.spec
    }

    /// Run every group, resuming what is stored.
    pub async fn run(self) -> Result<RunSummary, RunError> {
        let before = Reader::open(&self.store_path)?;
        let (calls_before, paid_before) = (before.call_count()?, before.total_paid()?);
        drop(before);

        let runner = Arc::new(self);
        let r = runner.clone();
        schedule::for_each_bounded(
            runner.plan.groups.len(),
            runner.concurrency,
            &runner.shared.ctx.stop,
            move |gi| {
                let r = r.clone();
                async move { r.run_group(&r.plan.groups[gi]).await }
            },
        )
        .await?;
        if let Some(why) = runner.shared.ctx.first_block() {
            return Err(RunError::Unpriced(why));
        }
        let reader = Reader::open(&runner.store_path)?;
        let spend = reader.spend()?;
        let mut summary = RunSummary {
            store_path: runner.store_path.clone(),
            calls_total: reader.call_count()?,
            paid_total: spend.paid,
            spend,
            ..RunSummary::default()
        };
        summary.calls_new = summary.calls_total - calls_before;
        summary.spent_now = summary.paid_total - paid_before;
        summary.dead_ends = runner.shared.ctx.dead_ends();
        let mut causes: BTreeMap<String, usize> = BTreeMap::new();
        for e in reader.episodes()? {
            if matches!(
                e.status(),
                EpisodeStatus::Incomplete | EpisodeStatus::Errored
            ) {
                let why = e.outcome.reason.as_deref().unwrap_or("no reason stored");
                *causes.entry(cause_of(why).to_owned()).or_default() += 1;
            }
            *summary.episodes.entry(e.status()).or_default() += 1;
            summary.attributed_total += e.outcome.cost_attributed;
            if e.init.forked_from.is_some() {
                summary.saved_by_forking += e.outcome.cost_attributed - e.outcome.cost_paid;
            }
        }
        summary.causes = causes.into_iter().collect();
        summary
            .causes
            .sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(summary)
    }

    async fn run_group(&self, g: &TaskGroup) -> Result<(), RunError> {
        let baselines = join_each(g.baselines.iter().map(|c| self.run_baseline(g, c)));
        let anchors = join_each(g.anchors.iter().map(|m| self.run_single(g, m)));
        let (baselines, anchors) = futures::join!(baselines, anchors);
        for b in baselines {
            b?;
        }
        let mut by_model = BTreeMap::new();
        for (m, a) in g.anchors.iter().zip(anchors) {
            by_model.insert(m.clone(), a?);
        }
        let handoffs = g.handoffs.iter().map(|(cell, k)| {
            let Cell::Handoff { sender, .. } = cell else {
                unreachable!("plan holds handoff cells only")
            };
            self.run_handoff(g, cell, *k, &by_model[sender])
        });
        for r in join_each(handoffs).await {
            r?;
        }
        Ok(())
    }

    /// Find or create the episode of `cell` in group `g`, with its stored calls and
    /// unusable attempts.
    async fn open_episode(
        &self,
        g: &TaskGroup,
        cell: &Cell,
        k: Option<usize>,
        forked_from: Option<i64>,
    ) -> Result<OpenEpisode, RunError> {
        let sha = self.schedules[g.task].sha256.clone();
        self.open_episode_with(g, cell, k, forked_from, sha).await
    }

    /// [`Runner::open_episode`] with the schedule hash given (a baseline's own).
    async fn open_episode_with(
        &self,
        g: &TaskGroup,
        cell: &Cell,
        k: Option<usize>,
        forked_from: Option<i64>,
        schedule_sha256: String,
    ) -> Result<OpenEpisode, RunError> {
        let init = EpisodeInit {
            task_id: self.tasks[g.task].task_id.clone(),
            cell_key: cell.label(),
            cell_json: serde_json::to_string(cell).expect("a cell always serializes"),
            replicate: g.replicate,
            seed: g.seed,
            k: k.map(|k| k as u32),
            forked_from,
            schedule_sha256,
        };
        let task = &self.tasks[g.task];
        let identity = self.identities.of(&EpisodeKey {
            task_id: &task.task_id,
            family: task.family,
            cell,
            replicate: g.replicate,
            seed: g.seed,
            k: init.k,
            schedule_sha256: &init.schedule_sha256,
        });
        Ok(self.shared.ctx.store.episode_as(init, identity).await?)
    }

    /// The end every episode shares: score its final reply (or record why it has none)
    /// and store the outcome with what it paid, counted by the store in the same request
    /// (every billed attempt, [`ledger::episode_paid`], from the calls' costs alone: no
    /// request or reply is read back). `forked` is the cost of a
    /// prefix taken from its anchor.
    ///
    /// Under `extraction = "lic"` a math or database reply's answer is first extracted
    /// by the extractor model ([`crate::extraction`]); those calls are the extraction's
    /// spend, kept out of the episode's attributed and paid cost (the report shows them
    /// apart), though the run's budget and spend count them.
    async fn end_episode(
        &self,
        episode_id: i64,
        g: &TaskGroup,
        tr: &mut Transcript<'_>,
        result: Result<(), Unfinished>,
        forked: Cost,
    ) -> Result<Vec<baton_store::AttemptCost>, RunError> {
        let task = &self.tasks[g.task];
        let mut result = result.map(|()| tr.final_response().unwrap_or_default().to_string());
        let mut llm = None;
        if let (Ok(response), Some(extractor)) = (&result, &self.extractor) {
            let response = response.clone();
            match extract(tr, &self.shared, extractor, task.family, &response).await? {
                None => {}
                Some(Ok(found)) => llm = Some(found),
                Some(Err(u)) => result = Err(u),
            }
        }
        let costs = finish(&self.shared, episode_id, task, result, llm, forked).await?;
        Ok(costs.attempts)
    }

    /// Run (or resume) `single(model)` and return it as its handoffs fork it.
    async fn run_single(&self, g: &TaskGroup, model: &str) -> Result<Anchor, RunError> {
        let opened = self
            .open_episode(g, &Cell::single(model), None, None)
            .await?;
        let id = opened.row.id;
        if opened.row.status() == EpisodeStatus::Scored {
            return Ok(Anchor {
                id,
                calls: opened.calls,
                attempts: opened.attempts,
            });
        }
        let n = self.tasks[g.task].n_turns();
        let mut tr = Transcript::new(&self.schedules[g.task], g.seed, opened);
        let result = tr
            .answer(&self.shared, &self.models[model], Phase::Prefix, 1..=n)
            .await?;
        let attempts = self.end_episode(id, g, &mut tr, result, Cost::ZERO).await?;
        // an anchor's calls, read back as stored: its handoffs fork their prefix from them
        let calls = self.shared.ctx.store.calls(id).await?;
        Ok(Anchor {
            id,
            calls,
            attempts,
        })
    }

    /// Run (or resume) a single-turn baseline `full(model)` / `concat(model)`: one call
    /// with the family's system prompt and LiC's single-turn prompt, scored like any
    /// final answer.
    async fn run_baseline(&self, g: &TaskGroup, cell: &Cell) -> Result<(), RunError> {
        let Cell::Baseline { model, mode } = cell else {
            unreachable!("plan holds baseline cells only")
        };
        let prompt = self.baselines[g.task]
            .iter()
            .find(|(b, _)| b == mode)
            .map(|(_, p)| p.clone())
            .expect("setup builds every baseline of the spec");
        let side = SingleTurn {
            system: self.schedules[g.task].system.clone(),
            prompt,
        };
        let sha = schedule_sha256(&self.schedules, &self.baselines, g, cell);
        let opened = self.open_episode_with(g, cell, None, None, sha).await?;
        let id = opened.row.id;
        if opened.row.status() == EpisodeStatus::Scored {
            return Ok(());
        }
        let mut tr = Transcript::new(&side, g.seed, opened);
        let result = tr
            .answer(&self.shared, &self.models[model], Phase::Prefix, 1..=1)
            .await?;
        self.end_episode(id, g, &mut tr, result, Cost::ZERO).await?;
        Ok(())
    }

    async fn run_handoff(
        &self,
        g: &TaskGroup,
        cell: &Cell,
        k: usize,
        anchor: &Anchor,
    ) -> Result<(), RunError> {
        let Cell::Handoff {
            sender,
            receiver,
            interface,
            ..
        } = cell
        else {
            unreachable!("handoff cell")
        };
        let fork = self.spec.fork_prefixes;
        let opened = self
            .open_episode(g, cell, Some(k), fork.then_some(anchor.id))
            .await?;
        let id = opened.row.id;
        if opened.row.status() == EpisodeStatus::Scored {
            return Ok(());
        }
        let n = self.tasks[g.task].n_turns();
        let mut tr = Transcript::new(&self.schedules[g.task], g.seed, opened);
        let (sender, receiver) = (&self.models[sender], &self.models[receiver]);
        let mut forked = Cost::ZERO;
        let result: Result<(), Unfinished> = 'episode: {
            // The sender's turns 1..=K: forked from the anchor, or answered here.
            if fork {
                let prefix: Vec<&CallRow> = anchor
                    .calls
                    .iter()
                    .filter(|c| c.call.phase == Phase::Prefix && (c.call.turn as usize) <= k)
                    .collect();
                if prefix.len() < k {
                    break 'episode Err(Unfinished(format!(
                        "the sender's prefix is incomplete: single({}) has {} of {k} turns",
                        sender.name(),
                        prefix.len()
                    )));
                }
                for c in &prefix {
                    tr.replay(c.call.turn as usize, &c.call.response_text);
                }
                forked = ledger::forked_prefix_cost(&anchor.calls, &anchor.attempts, k);
            } else if let Err(u) = tr
                .answer(&self.shared, sender, Phase::Prefix, 1..=k)
                .await?
            {
                break 'episode Err(u);
            }
            // What crosses the switch.
            match interface {
                Interface::Raw => {}
                Interface::Disclosure => {
                    tr.prepend_to_next_turn(self.interfaces.disclosure.clone())
                }
                Interface::TrajDrop => tr.drop_replies(),
                Interface::CompactPre | Interface::CompactSuf => {
                    let summarizer = if *interface == Interface::CompactPre {
                        sender
                    } else {
                        receiver
                    };
                    let prompt = &self.interfaces.compact_request;
                    match tr.handoff_call(&self.shared, summarizer, k, prompt).await? {
                        Ok(summary) => tr.restart_with(self.interfaces.handoff_message(&summary)),
                        Err(u) => break 'episode Err(u),
                    }
                }
                Interface::Handover => {
                    unreachable!("Spec::check refuses handover in a chat experiment")
                }
            }
            // The receiver's turns K+1..=N.
            tr.answer(&self.shared, receiver, Phase::Suffix, k + 1..=n)
                .await?
        };
        self.end_episode(id, g, &mut tr, result, forked).await?;
        Ok(())
    }
}

/// The sha256 of everything a stored result depends on, by name: the spec, the price
/// card's contents, the templates folder's files, the interface texts, each LiC prompt
/// file read (`lic <path>`, the answer-extraction prompts included), and each task's data.
fn input_hashes(
    spec: &ExperimentSpec,
    card: &baton_models::PriceCard,
    interfaces: &InterfaceTemplates,
    templates: &baton_data::Templates,
    extractor: Option<&Extractor>,
    tasks: &[Task],
    options: &RunOptions,
) -> Vec<(String, String)> {
    use sha2::{Digest, Sha256};
    let sha = |parts: &[&[u8]]| {
        let mut h = Sha256::new();
        for p in parts {
            // length-prefixed, so two lists of parts never hash alike
            h.update((p.len() as u64).to_le_bytes());
            h.update(p);
        }
        hex::encode(h.finalize())
    };
    let lic_files = templates.lic_files();
    let templates = match &spec.templates {
        Some(_) if !lic_files.is_empty() => templates.sha256(),
        Some(dir) => {
            let dir = options.resolve(dir);
            let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.path().is_file())
                .map(|e| {
                    let bytes = std::fs::read(e.path()).unwrap_or_default();
                    (e.file_name().to_string_lossy().into_owned(), bytes)
                })
                .collect();
            files.sort();
            let parts: Vec<&[u8]> = files
                .iter()
                .flat_map(|(n, b)| [n.as_bytes(), b.as_slice()])
                .collect();
            sha(&parts)
        }
        None => sha(&[b"embedded templates", env!("CARGO_PKG_VERSION").as_bytes()]),
    };
    let mut inputs = vec![
        ("spec".to_string(), spec.sha256()),
        ("price card".to_string(), card.sha256().to_string()),
        ("templates".to_string(), templates),
        (
            "interfaces".to_string(),
            sha(&[
                interfaces.disclosure.as_bytes(),
                interfaces.compact_request.as_bytes(),
                interfaces.compact_handoff.as_bytes(),
            ]),
        ),
    ];
    let extraction_files = extractor.iter().flat_map(|e| e.prompts.files());
    for f in lic_files.iter().chain(extraction_files) {
        inputs.push((format!("lic {}", f.path), f.sha256.clone()));
    }
    for t in tasks {
        inputs.push((
            format!("task {}", t.task_id),
            sha(&[t.sample.to_string().as_bytes()]),
        ));
    }
    inputs
}

/// The sha256 of what episode `cell` of group `g` is asked: its task's schedule, or
/// for a baseline its one prompt with the system prompt.
fn schedule_sha256(
    schedules: &[Schedule],
    baselines: &[Vec<(Baseline, String)>],
    g: &TaskGroup,
    cell: &Cell,
) -> String {
    match cell {
        Cell::Baseline { mode, .. } => SingleTurn {
            system: schedules[g.task].system.clone(),
            prompt: baselines[g.task]
                .iter()
                .find(|(b, _)| b == mode)
                .map(|(_, p)| p.clone())
                .unwrap_or_default(),
        }
        .sha256(),
        _ => schedules[g.task].sha256.clone(),
    }
}

/// Each model's price-card key by its name (the extractor as `extractor`).
pub(crate) fn price_keys(spec: &ExperimentSpec) -> BTreeMap<String, String> {
    spec.models
        .iter()
        .map(|(n, m)| (n.clone(), m.price_key()))
        .chain(
            spec.extractor
                .iter()
                .map(|m| ("extractor".to_string(), m.price_key())),
        )
        .collect()
}

/// Every future of `futures`, run at once to its end, with their outputs in the order
/// given. `join_all` of fewer than 30 futures polls every one of them whenever any is
/// woken: a task group's handoff episodes (about 30) were each polled at every event
/// of every other (each call's reply, each store answer).
async fn join_each<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    futures
        .into_iter()
        .collect::<FuturesOrdered<F>>()
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_cause_is_read_without_the_call_it_met() {
        assert_eq!(
            super::cause_of(
                "turn 3 (prefix): model \"m\" (openai) failed after 1 attempt(s): HTTP 404"
            ),
            "model \"m\" (openai) failed after 1 attempt(s): HTTP 404"
        );
        assert_eq!(
            super::cause_of("turn 12 not sent: the spending cap would be passed"),
            "the spending cap would be passed"
        );
        assert_eq!(
            super::cause_of("answer extraction attempt 2 (extraction): x"),
            "x"
        );
        assert_eq!(super::cause_of("budget stop"), "budget stop");
        assert_eq!(
            super::cause_of("the sender's prefix is incomplete: single(m) has 0 of 3 turns"),
            "the sender's prefix is incomplete: single(m)"
        );
    }
}
