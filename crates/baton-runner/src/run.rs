//! Preparing and running an experiment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use baton_data::{Schedule, Templates};
use baton_eval::{EvalConfig, Evaluators};
use baton_models::{
    Cost, GenerateConfig, Model, ModelObserver, PriceCard, Provider, ProviderConfig,
    ProviderFactory, RateLimits, RetryBudget, SimProvider, SimSettings,
};
use baton_store::{CallRow, EpisodeInit, ExperimentMeta, Reader, Store};
use baton_types::{Cell, EpisodeStatus, Interface, Phase, Task};
use futures::future::join_all;
use tokio::sync::Semaphore;

use crate::budget::Budget;
use crate::episode::{Shared, Transcript, Unfinished, finish};
use crate::interface::InterfaceTemplates;
use crate::plan::{Plan, TaskGroup};
use crate::spec::ExperimentSpec;
use crate::{RunError, STORE_FILE};

/// Receives progress events. Every method has a no-op default.
pub trait Observer: Send + Sync {
    /// The run is planned: this many episodes and (at most) this many new calls.
    fn planned(&self, _episodes: usize, _calls: usize) {}
    /// A call completed and was stored.
    fn call(&self, _model: &str, _cost: Cost) {}
    /// An episode ended with this status.
    fn episode(&self, _status: EpisodeStatus) {}
    /// A model will retry a call after `wait` (`rate_limited`: the server said 429).
    fn retry(&self, _model: &str, _wait: Duration, _rate_limited: bool) {}
}

/// Passes a model's retry events on to the run's observer.
struct RetryEvents(Arc<dyn Observer>);

impl ModelObserver for RetryEvents {
    fn retrying(&self, model: &str, _attempt: u32, wait: Duration, rate_limited: bool) {
        self.0.retry(model, wait, rate_limited);
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct SilentObserver;
impl Observer for SilentObserver {}

/// A flag that asks a run to stop scheduling new calls. Calls in flight finish and are
/// stored; episodes that did not finish are left `incomplete` and resume later.
#[derive(Debug, Clone, Default)]
pub struct StopSignal(Arc<AtomicBool>);

impl StopSignal {
    /// Ask the run to stop.
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// How to run an experiment.
pub struct RunOptions {
    /// Where the store and reports go.
    pub out_dir: PathBuf,
    /// The folder relative dataset and template paths are taken from.
    pub base_dir: PathBuf,
    /// The experiment file's text, stored with the run.
    pub spec_text: String,
    /// Require an existing store.
    pub resume: bool,
    /// Override the spec's per-family task limit.
    pub limit: Option<usize>,
    /// Override the spec's concurrency.
    pub concurrency: Option<usize>,
    /// Re-sample handoff prefixes instead of forking them.
    pub independent: bool,
    /// Stop scheduling calls before the experiment's total spend would pass this cap;
    /// unfinished episodes stay `incomplete` and resume later.
    pub max_cost: Option<Cost>,
    /// Stop request.
    pub stop: StopSignal,
    /// Extra provider kinds (HTTP providers).
    pub providers: Vec<Arc<dyn ProviderFactory>>,
    /// Progress events.
    pub observer: Arc<dyn Observer>,
}

impl RunOptions {
    /// Options with defaults: no resume requirement, no overrides, no extra providers.
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
            limit: None,
            concurrency: None,
            independent: false,
            max_cost: None,
            stop: StopSignal::default(),
            providers: Vec::new(),
            observer: Arc::new(SilentObserver),
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct RunSummary {
    /// The store.
    pub store_path: PathBuf,
    /// Episodes by status.
    pub episodes: BTreeMap<String, usize>,
    /// Calls stored in total.
    pub calls_total: u64,
    /// Calls this run made.
    pub calls_new: u64,
    /// Money this run spent.
    pub spent_now: Cost,
    /// Money every run of this experiment spent.
    pub paid_total: Cost,
    /// Sum of attributed episode costs.
    pub attributed_total: Cost,
    /// Money not spent thanks to forked prefixes.
    pub saved_by_forking: Cost,
}

/// A prepared experiment.
pub struct Runner {
    spec: ExperimentSpec,
    tasks: Vec<Arc<Task>>,
    schedules: Vec<Schedule>,
    models: BTreeMap<String, Arc<Model>>,
    plan: Plan,
    interfaces: InterfaceTemplates,
    shared: Arc<Shared>,
    concurrency: usize,
    store_path: PathBuf,
}

impl Runner {
    /// Load the dataset, build schedules and models (every model must have a price:
    /// an error here, before any call), and open the store.
    pub async fn prepare(spec: ExperimentSpec, options: RunOptions) -> Result<Runner, RunError> {
        let store_path = options.out_dir.join(STORE_FILE);
        if options.resume && !store_path.exists() {
            return Err(RunError::NothingToResume(store_path));
        }
        let Setup {
            spec,
            tasks,
            schedules,
            models,
            card,
            spider_dir,
            interfaces,
        } = Setup::load(spec, &options)?;
        let evaluators = Evaluators::lic(&EvalConfig {
            spider_dir,
            ..EvalConfig::default()
        });

        let store = Store::open(&store_path)?;
        store
            .init_experiment(ExperimentMeta {
                name: spec.name.clone(),
                spec_toml: options.spec_text.clone(),
                spec_sha256: spec.sha256(),
                price_card_sha256: card.sha256().to_string(),
                eval_profile: baton_eval::PROFILE.to_string(),
                eval_version: Evaluators::version().to_string(),
                baton_version: env!("CARGO_PKG_VERSION").to_string(),
                git_revision: option_env!("BATON_GIT_REVISION").map(str::to_string),
                simulated: spec.simulated(),
            })
            .await?;
        for (task, schedule) in tasks.iter().zip(&schedules) {
            store
                .upsert_task(
                    &task.task_id,
                    task.family.as_str(),
                    task.n_turns() as u32,
                    &schedule.sha256,
                    task.sample.to_string(),
                )
                .await?;
        }
        let plan = Plan::new(&spec, &tasks);
        options
            .observer
            .planned(plan.episodes(), plan.calls(&tasks, spec.fork_prefixes));
        let tasks: Vec<Arc<Task>> = tasks.into_iter().map(Arc::new).collect();
        let paid = Cost(Reader::open(&store_path)?.total_paid()?);
        Ok(Runner {
            concurrency: options.concurrency.unwrap_or(spec.concurrency).max(1),
            spec,
            tasks,
            schedules,
            models,
            plan,
            interfaces,
            shared: Arc::new(Shared {
                store,
                evaluators,
                stop: options.stop,
                observer: options.observer,
                budget: Budget::new(options.max_cost, paid),
            }),
            store_path,
        })
    }

    /// The plan.
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
        let limit = Arc::new(Semaphore::new(runner.concurrency));
        let mut handles = Vec::new();
        for gi in 0..runner.plan.groups.len() {
            let permit = limit
                .clone()
                .acquire_owned()
                .await
                .expect("semaphore is never closed");
            if runner.shared.stop.is_stopped() {
                drop(permit);
                break;
            }
            let r = runner.clone();
            handles.push(tokio::spawn(async move {
                let _permit = permit;
                r.run_group(&r.plan.groups[gi]).await
            }));
        }
        for h in handles {
            h.await.expect("a task group panicked")?;
        }

        let reader = Reader::open(&runner.store_path)?;
        let mut summary = RunSummary {
            store_path: runner.store_path.clone(),
            calls_total: reader.call_count()?,
            paid_total: Cost(reader.total_paid()?),
            ..RunSummary::default()
        };
        summary.calls_new = summary.calls_total - calls_before;
        summary.spent_now = Cost(summary.paid_total.0 - paid_before);
        for e in reader.episodes()? {
            *summary.episodes.entry(e.status.to_string()).or_default() += 1;
            summary.attributed_total += Cost(e.cost_attributed);
            if e.forked_from.is_some() {
                summary.saved_by_forking += Cost(e.cost_attributed - e.cost_paid);
            }
        }
        Ok(summary)
    }

    async fn run_group(&self, g: &TaskGroup) -> Result<(), RunError> {
        let task = &self.tasks[g.task];
        let schedule = &self.schedules[g.task];
        let anchors = join_all(
            g.anchors
                .iter()
                .map(|m| self.run_single(task, schedule, g, m)),
        )
        .await;
        let mut by_model = BTreeMap::new();
        for (m, a) in g.anchors.iter().zip(anchors) {
            by_model.insert(m.clone(), a?);
        }
        let handoffs = g.handoffs.iter().map(|(cell, k)| {
            let Cell::Handoff { sender, .. } = cell else {
                unreachable!("plan holds handoff cells only")
            };
            self.run_handoff(task, schedule, g, cell, *k, &by_model[sender])
        });
        for r in join_all(handoffs).await {
            r?;
        }
        Ok(())
    }

    fn init(
        &self,
        task: &Task,
        schedule: &Schedule,
        g: &TaskGroup,
        cell: &Cell,
        k: Option<usize>,
        forked_from: Option<i64>,
    ) -> EpisodeInit {
        EpisodeInit {
            task_id: task.task_id.clone(),
            cell_key: cell.label(),
            cell_json: serde_json::to_string(cell).expect("a cell always serializes"),
            replicate: g.replicate,
            seed: g.seed,
            k: k.map(|k| k as u32),
            forked_from,
            schedule_sha256: schedule.sha256.clone(),
        }
    }

    /// Run (or resume) `single(model)` and return its episode id and stored calls.
    async fn run_single(
        &self,
        task: &Arc<Task>,
        schedule: &Schedule,
        g: &TaskGroup,
        model: &str,
    ) -> Result<(i64, Vec<CallRow>), RunError> {
        let cell = Cell::single(model);
        let (row, stored) = self
            .shared
            .store
            .episode(self.init(task, schedule, g, &cell, None, None))
            .await?;
        if row.status == EpisodeStatus::Scored {
            return Ok((row.id, stored));
        }
        let mut tr = Transcript::new(row.id, schedule, g.seed, stored);
        let result = tr
            .answer(
                &self.shared,
                &self.models[model],
                Phase::Prefix,
                1..=task.n_turns(),
            )
            .await?;
        let calls = self.shared.store.calls(row.id).await?;
        let paid: Cost = calls.iter().map(|c| Cost(c.cost)).sum();
        let result = result.map(|()| tr.final_response().unwrap_or_default().to_string());
        finish(&self.shared, row.id, task, result, paid, paid).await?;
        Ok((row.id, calls))
    }

    async fn run_handoff(
        &self,
        task: &Arc<Task>,
        schedule: &Schedule,
        g: &TaskGroup,
        cell: &Cell,
        k: usize,
        anchor: &(i64, Vec<CallRow>),
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
        let init = self.init(task, schedule, g, cell, Some(k), fork.then_some(anchor.0));
        let (row, stored) = self.shared.store.episode(init).await?;
        if row.status == EpisodeStatus::Scored {
            return Ok(());
        }
        let mut tr = Transcript::new(row.id, schedule, g.seed, stored);
        let (sender, receiver) = (&self.models[sender], &self.models[receiver]);
        let mut prefix_cost = Cost::ZERO;
        let result: Result<(), Unfinished> = 'episode: {
            // The sender's turns 1..=K: forked from the anchor, or answered here.
            if fork {
                let prefix: Vec<&CallRow> = anchor
                    .1
                    .iter()
                    .filter(|c| c.phase == Phase::Prefix && (c.turn as usize) <= k)
                    .collect();
                if prefix.len() < k {
                    break 'episode Err(Unfinished(format!(
                        "the sender's prefix is incomplete: single({}) has {} of {k} turns",
                        sender.name(),
                        prefix.len()
                    )));
                }
                for c in &prefix {
                    tr.replay(c.turn as usize, &c.response_text);
                    prefix_cost += Cost(c.cost);
                }
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
            }
            // The receiver's turns K+1..=N.
            tr.answer(
                &self.shared,
                receiver,
                Phase::Suffix,
                k + 1..=task.n_turns(),
            )
            .await?
        };
        let calls = self.shared.store.calls(row.id).await?;
        let paid: Cost = calls.iter().map(|c| Cost(c.cost)).sum();
        let result = result.map(|()| tr.final_response().unwrap_or_default().to_string());
        finish(&self.shared, row.id, task, result, prefix_cost + paid, paid).await?;
        Ok(())
    }
}

/// What a run needs before it touches the store.
pub(crate) struct Setup {
    pub spec: ExperimentSpec,
    pub tasks: Vec<Task>,
    pub schedules: Vec<Schedule>,
    pub models: BTreeMap<String, Arc<Model>>,
    pub card: PriceCard,
    pub spider_dir: PathBuf,
    pub interfaces: InterfaceTemplates,
}

impl Setup {
    /// Apply command-line overrides, load the dataset and templates, build schedules,
    /// and build every model with its price (a missing price fails here).
    pub fn load(mut spec: ExperimentSpec, options: &RunOptions) -> Result<Setup, RunError> {
        if options.independent {
            spec.fork_prefixes = false;
        }
        if let Some(limit) = options.limit {
            spec.limit = Some(limit);
        }
        let resolve = |p: &Path| {
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                options.base_dir.join(p)
            }
        };
        let sample = spec.dataset == "sample";
        let mut dataset = if sample {
            baton_data::sample_dataset()
        } else {
            baton_data::load(&resolve(Path::new(&spec.dataset)))?
        };
        if !spec.families.is_empty() {
            dataset.filter_families(&spec.families);
        }
        let tasks = select_tasks(dataset.tasks, spec.limit);
        let (templates, interfaces) = match &spec.templates {
            Some(dir) => (
                Templates::from_dir(&resolve(dir))?,
                InterfaceTemplates::from_dir(&resolve(dir))?,
            ),
            None => (Templates::embedded(), InterfaceTemplates::embedded()),
        };
        let schedules = tasks
            .iter()
            .map(|t| baton_data::build_schedule(t, &templates))
            .collect::<Result<Vec<_>, _>>()?;
        let mut card = PriceCard::embedded();
        if let Some(p) = &spec.prices {
            card = card
                .with_override_file(&resolve(p))
                .map_err(|e| RunError::Model {
                    name: "*".into(),
                    message: e.to_string(),
                })?;
        }
        let models = build_models(&spec, &tasks, &card, options)?;
        let spider_dir = match (&spec.spider_dir, sample) {
            (Some(d), _) => resolve(d),
            (None, true) => {
                baton_data::materialize_sample_databases(&options.out_dir.join("sample-databases"))?
            }
            (None, false) => resolve(Path::new("datasets/spider/databases")),
        };
        Ok(Setup {
            spec,
            tasks,
            schedules,
            models,
            card,
            spider_dir,
            interfaces,
        })
    }
}

fn select_tasks(tasks: Vec<Task>, limit: Option<usize>) -> Vec<Task> {
    let Some(limit) = limit else { return tasks };
    let mut taken: BTreeMap<baton_types::Family, usize> = BTreeMap::new();
    tasks
        .into_iter()
        .filter(|t| {
            let n = taken.entry(t.family).or_default();
            *n += 1;
            *n <= limit
        })
        .collect()
}

fn build_models(
    spec: &ExperimentSpec,
    tasks: &[Task],
    card: &PriceCard,
    options: &RunOptions,
) -> Result<BTreeMap<String, Arc<Model>>, RunError> {
    let factories = &options.providers;
    let budget = RetryBudget::new(Duration::from_secs(spec.retry_budget_secs));
    let events: Arc<dyn ModelObserver> = Arc::new(RetryEvents(options.observer.clone()));
    let sim_settings: BTreeMap<String, SimSettings> = spec
        .models
        .values()
        .filter(|m| m.provider_and_id().0 == "sim")
        .map(|m| {
            let id = m.provider_and_id().1.to_string();
            let s = m.sim.unwrap_or_else(|| SimSettings::preset(&id));
            (id, s)
        })
        .collect();
    let sim: Option<Arc<dyn Provider>> = if sim_settings.is_empty() {
        None
    } else {
        let p =
            SimProvider::new(tasks.to_vec(), sim_settings).map_err(|message| RunError::Model {
                name: "sim".into(),
                message,
            })?;
        Some(Arc::new(p))
    };
    let mut models = BTreeMap::new();
    for (name, m) in &spec.models {
        let err = |message: String| RunError::Model {
            name: name.clone(),
            message,
        };
        let (kind, id) = m.provider_and_id();
        let price_key = m.price_key();
        let price = card.get(&price_key).map_err(|e| err(e.to_string()))?;
        let provider: Arc<dyn Provider> = match (kind, &sim) {
            ("sim", Some(p)) => p.clone(),
            _ => {
                let factory = factories
                    .iter()
                    .find(|f| f.kinds().iter().any(|k| k == kind))
                    .ok_or_else(|| err(format!("unknown provider {kind:?} in {:?}", m.model)))?;
                factory
                    .make(&ProviderConfig {
                        name: name.clone(),
                        kind: kind.to_string(),
                        model_id: id.to_string(),
                        base_url: m.base_url.clone(),
                        api_key_env: m.api_key_env.clone(),
                    })
                    .map_err(err)?
            }
        };
        let config = GenerateConfig {
            temperature: Some(m.temperature.unwrap_or(1.0)),
            max_tokens: Some(m.max_tokens.unwrap_or(1000)),
            reasoning_effort: m.reasoning_effort.clone(),
        };
        let model = Model::new(
            name,
            provider,
            id,
            price_key,
            price,
            m.concurrency.unwrap_or(8),
        )
        .with_config(config)
        .with_budget(budget.clone())
        .with_observer(events.clone())
        .with_rate_limits(RateLimits {
            requests_per_minute: m.requests_per_minute,
            tokens_per_minute: m.tokens_per_minute,
            adaptive_concurrency: true,
        });
        models.insert(name.clone(), Arc::new(model));
    }
    Ok(models)
}
