//! What a run needs before it touches the store: the dataset, schedules, templates,
//! price cards, and a model (with its provider) for every name in the experiment.
//! `--dry-run` uses the same setup, so an estimate fails where the run would.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use baton_store::Store;

use baton_data::lic::ExtractionPrompts;
use baton_data::{InvalidTask, Schedule, Templates};
use baton_models::{
    BatchRetry, BatchSetup, Model, ModelObserver, PriceCard, Provider, ProviderConfig,
    ProviderFactory, RateLimits, RetryBudget, RetryPolicy, SimProvider, SimSettings, defaults,
};
use baton_types::{Baseline, Cost, Extraction, Family, SwitchPoint, Task};

use crate::RunError;
use crate::control::Observer;
use crate::control::StopSignal;
use crate::interface::InterfaceTemplates;
use crate::part::Part;
use crate::run::RunOptions;
use crate::spec::{ExperimentSpec, ModelSpec};

/// Every model of a run by its name in the experiment.
type Models = BTreeMap<String, Arc<Model>>;

/// LiC's answer extraction for a run: the `[extractor]` model (JSON mode, temperature 0
/// unless it sets one) and LiC's two prompts read from `lic_dir`.
pub(crate) struct Extractor {
    /// The extractor model, its config already in JSON mode.
    pub model: Arc<Model>,
    /// LiC's prompt files.
    pub prompts: ExtractionPrompts,
}

/// The extractor's generation settings: its own, in JSON mode, at temperature 0 unless
/// the `[extractor]` table sets one (LiC's setting; the one value baton fills in beside
/// the output cap, and stored with every extraction call's request).
pub(crate) fn extractor_config(m: &ModelSpec) -> baton_models::GenerateConfig {
    let mut c = m.generate_config();
    c.json_object = true;
    c.temperature = c.temperature.or(Some(0.0));
    c
}

/// A prepared experiment, before the store.
pub(crate) struct Setup {
    /// The spec, with the command-line overrides applied.
    pub spec: ExperimentSpec,
    /// The tasks to run, in order.
    pub tasks: Vec<Task>,
    /// Each task's turn schedule, in the same order.
    pub schedules: Vec<Schedule>,
    /// Each task's single-turn baseline prompts (the spec's `baselines`, in its order),
    /// in the same order as the tasks.
    pub baselines: Vec<Vec<(Baseline, String)>>,
    /// Every model by its name in the experiment.
    pub models: BTreeMap<String, Arc<Model>>,
    /// LiC's answer extraction, under `extraction = "lic"`.
    pub extractor: Option<Arc<Extractor>>,
    /// The price card in use (embedded, with the experiment's overrides).
    pub card: PriceCard,
    /// The Spider test-suite folder the database evaluator reads.
    pub spider_dir: PathBuf,
    /// The handoff interface texts.
    pub interfaces: InterfaceTemplates,
    /// The prompt templates the schedules were built with.
    pub templates: Templates,
    /// Tasks left out under `skip_invalid`, with why (empty otherwise).
    pub skipped: Vec<InvalidTask>,
    /// The store batched models journal their batches in, set once it is open.
    pub batch_store: Arc<OnceLock<Store>>,
    /// Run as a part (`--part I/N`): each part's dry-run upper bound, part 1 first,
    /// computed on the whole experiment before the tasks were cut to this part's.
    pub part_bounds: Vec<Cost>,
}

impl Setup {
    /// Keep `part`'s tasks (with their schedules and baselines), after recording every
    /// part's upper bound over the whole experiment.
    fn keep_part(&mut self, part: Part) {
        let plan = crate::plan::Plan::new(&self.spec, &self.tasks);
        let families: Vec<baton_types::Family> = self.tasks.iter().map(|t| t.family).collect();
        let bounds = crate::dry_run::Bounds::of(self, &families);
        let mut per_part = vec![Cost::ZERO; part.count as usize];
        for g in &plan.groups {
            let of = Part::of_task(&self.tasks[g.task].task_id, part.count) as usize - 1;
            for (cell, k) in g.cells() {
                per_part[of] += bounds.episode(g, &cell, k).paid;
                if let Some(x) = bounds.extraction(g, &cell) {
                    per_part[of] += x.paid;
                }
            }
        }
        self.part_bounds = per_part;
        let keep: Vec<bool> = self
            .tasks
            .iter()
            .map(|t| part.contains(&t.task_id))
            .collect();
        let mut i = 0;
        self.tasks.retain(|_| (keep[i], i += 1).0);
        let mut i = 0;
        self.schedules.retain(|_| (keep[i], i += 1).0);
        let mut i = 0;
        self.baselines.retain(|_| (keep[i], i += 1).0);
    }

    /// Apply command-line overrides, load the dataset and templates, build schedules,
    /// and build every model with its price (a missing price fails here).
    pub fn load(spec: ExperimentSpec, options: &RunOptions) -> Result<Setup, RunError> {
        Self::load_with(spec, options, true)
    }

    /// [`Setup::load`] for an estimate, which writes nothing: the bundled sample's
    /// databases are not written out (they are bundled, so none is missing).
    pub fn load_for_estimate(
        spec: ExperimentSpec,
        options: &RunOptions,
    ) -> Result<Setup, RunError> {
        Self::load_with(spec, options, false)
    }

    fn load_with(
        mut spec: ExperimentSpec,
        options: &RunOptions,
        write_samples: bool,
    ) -> Result<Setup, RunError> {
        if options.independent {
            spec.fork_prefixes = false;
        }
        if let Some(limit) = options.limit {
            spec.limit = Some(limit);
        }
        if options.batch {
            for m in spec.models.values_mut().chain(spec.extractor.as_mut()) {
                m.batch = true;
            }
        }
        if options.skip_invalid {
            spec.skip_invalid = true;
        }
        let sample = spec.dataset == "sample";
        let setting = |key: &str| {
            let key = key.to_string();
            move |e: RunError| options.setting(key, e)
        };
        let dataset_key = format!("dataset = {:?}", spec.dataset);
        let mut dataset = if sample {
            baton_data::sample_dataset()
        } else if spec.skip_invalid {
            baton_data::load_lenient(&options.resolve(Path::new(&spec.dataset)))
                .map_err(|e| setting(&dataset_key)(dataset_error(e)))?
        } else {
            baton_data::load(&options.resolve(Path::new(&spec.dataset)))
                .map_err(|e| setting(&dataset_key)(dataset_error(e)))?
        };
        let mut skipped = std::mem::take(&mut dataset.invalid);
        if !spec.families.is_empty() {
            dataset.filter_families(&spec.families);
        }
        let spider_dir = match (&spec.spider_dir, sample) {
            (Some(d), _) => options.resolve(d),
            (None, true) if write_samples => {
                baton_data::materialize_sample_databases(&options.out_dir.join("sample-databases"))?
            }
            (None, true) => options.out_dir.join("sample-databases"),
            (None, false) => options.resolve(Path::new("datasets/spider/databases")),
        };
        let tasks = select_tasks(dataset.tasks, spec.limit, spec.seed);
        check_coverage(&spec, &tasks).map_err(|message| RunError::Spec {
            source_name: options.source_name.clone(),
            message,
        })?;
        let templates_key = format!(
            "templates = {:?}",
            spec.templates.as_deref().unwrap_or(Path::new(""))
        );
        let (templates, interfaces) = (|| -> Result<_, RunError> {
            Ok(match (&spec.templates, &spec.lic_dir) {
                (Some(t), Some(lic)) if t.as_os_str() == baton_data::lic::LIC_TEMPLATES => (
                    Templates::lic(&options.resolve(lic))?,
                    InterfaceTemplates::embedded(),
                ),
                (Some(dir), _) => (
                    Templates::from_dir(&options.resolve(dir))?,
                    InterfaceTemplates::from_dir(&options.resolve(dir))?,
                ),
                (None, _) => (Templates::embedded(), InterfaceTemplates::embedded()),
            })
        })()
        .map_err(setting(&templates_key))?;
        // the bundled sample's databases are all there, written out or not
        let databases = (!(sample && spec.spider_dir.is_none() && !write_samples))
            .then_some(spider_dir.as_path());
        let (tasks, schedules, baselines) =
            check_tasks(tasks, &templates, databases, &spec, &mut skipped)?;
        let mut card = PriceCard::embedded();
        if let Some(p) = &spec.prices {
            card = card
                .with_override_file(&options.resolve(p))
                .map_err(|e| setting(&format!("prices = {p:?}"))(RunError::Prices(e)))?;
        }
        let max_prompt = max_prompt_bytes(&schedules, &baselines, &interfaces);
        let prompts = match (spec.extraction, &spec.lic_dir) {
            (Extraction::Lic, Some(dir)) => Some(
                ExtractionPrompts::read(&options.resolve(dir))
                    .map_err(|e| setting(&format!("lic_dir = {dir:?}"))(e.into()))?,
            ),
            _ => None,
        };
        let batch_store = Arc::new(OnceLock::new());
        let batch = BatchContext::new(&spec, &batch_store);
        // a part's models send under its share of each rate limit
        let model_spec = options.part_limits(&spec);
        let (models, extractor) =
            build_models(&model_spec, &tasks, &card, options, max_prompt, &batch).map_err(|e| {
                match &e {
                    RunError::Model { name, .. } => {
                        let key = if spec.models.contains_key(name) {
                            format!("models.{name}")
                        } else if name == "sim" {
                            // the simulated provider's settings, read from every sim model
                            "models".to_string()
                        } else {
                            name.clone()
                        };
                        setting(&key)(e)
                    }
                    _ => e,
                }
            })?;
        let extractor = extractor
            .zip(prompts)
            .map(|(model, prompts)| Arc::new(Extractor { model, prompts }));
        let mut setup = Setup {
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
            part_bounds: Vec::new(),
        };
        if let Some(part) = options.part {
            setup.keep_part(part);
        }
        Ok(setup)
    }
}

/// Everything about the tasks that can be known before paying: each task's schedule
/// and baseline prompts build, and each database task's `db_id` has `*.sqlite` files
/// under `spider_dir` (when given).
/// A failing task stops the run (naming every missing database at once), or under
/// `skip_invalid` is left out and added to `skipped` with why.
fn check_tasks(
    tasks: Vec<Task>,
    templates: &Templates,
    spider_dir: Option<&Path>,
    spec: &ExperimentSpec,
    skipped: &mut Vec<InvalidTask>,
) -> Result<TaskChecks, RunError> {
    let mut kept = Vec::with_capacity(tasks.len());
    let mut schedules = Vec::with_capacity(tasks.len());
    let mut baselines = Vec::with_capacity(tasks.len());
    let mut missing: BTreeMap<String, usize> = BTreeMap::new();
    for task in tasks {
        let schedule = match baton_data::build_schedule(&task, templates) {
            Ok(s) => s,
            Err(e) if spec.skip_invalid => {
                skipped.push(InvalidTask {
                    task_id: task.task_id.clone(),
                    reason: e.to_string(),
                });
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let prompts: Result<Vec<(Baseline, String)>, _> = spec
            .baselines
            .iter()
            .map(|&b| baton_data::baseline_prompt(&task, b, templates).map(|p| (b, p)))
            .collect();
        let prompts = match prompts {
            Ok(p) => p,
            Err(e) if spec.skip_invalid => {
                skipped.push(InvalidTask {
                    task_id: task.task_id.clone(),
                    reason: e.to_string(),
                });
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        if task.family == Family::Database
            && let Some(spider_dir) = spider_dir
            && let Some(db_id) = task.sample.get("db_id").and_then(|v| v.as_str())
            && !has_sqlite(&spider_dir.join(db_id))
        {
            if spec.skip_invalid {
                skipped.push(InvalidTask {
                    task_id: task.task_id.clone(),
                    reason: format!(
                        "database {db_id:?}: no *.sqlite file in {}",
                        spider_dir.join(db_id).display()
                    ),
                });
            } else {
                *missing.entry(db_id.to_string()).or_default() += 1;
            }
            continue;
        }
        kept.push(task);
        schedules.push(schedule);
        baselines.push(prompts);
    }
    if !missing.is_empty() {
        let list: Vec<String> = missing
            .iter()
            .map(|(db, n)| format!("{db} ({n} task(s))"))
            .collect();
        return Err(RunError::MissingDatabases {
            dir: spider_dir.unwrap_or(Path::new("")).to_path_buf(),
            missing: list.join(", "),
        });
    }
    Ok((kept, schedules, baselines))
}

/// The tasks kept, with their schedules and baseline prompts, in the same order.
type TaskChecks = (Vec<Task>, Vec<Schedule>, Vec<Vec<(Baseline, String)>>);

/// Whether `folder` holds a file whose name contains `.sqlite` (LiC's test), not
/// counting macOS `._*` files.
fn has_sqlite(folder: &Path) -> bool {
    std::fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.contains(".sqlite") && !name.starts_with("._")
        })
}

/// At most `limit` tasks per family: all of a family that has no more, else a seeded
/// sample stratified so that each stratum keeps its share of the family (largest
/// remainders round), the kept tasks in dataset order. Strata: the item's `source` for
/// code (HumanEval, LiveCodeBench), its Spider difficulty for database (`difficulty`, or
/// the `-easy`/`-medium`/`-hard`/`-extra` suffix of LiC's task ids), none for the other
/// families. Within a stratum the tasks with the smallest sha256 of (seed, task id) are
/// taken, so the same seed gives the same sample.
fn select_tasks(tasks: Vec<Task>, limit: Option<usize>, seed: u64) -> Vec<Task> {
    use sha2::{Digest, Sha256};
    let Some(limit) = limit else { return tasks };
    let mut by_family: BTreeMap<Family, BTreeMap<String, Vec<usize>>> = BTreeMap::new();
    for (i, t) in tasks.iter().enumerate() {
        by_family
            .entry(t.family)
            .or_default()
            .entry(stratum(t))
            .or_default()
            .push(i);
    }
    let rank = |i: usize| -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(seed.to_le_bytes());
        h.update(tasks[i].task_id.as_bytes());
        h.finalize().into()
    };
    let mut keep = vec![false; tasks.len()];
    for strata in by_family.values() {
        let total: usize = strata.values().map(Vec::len).sum();
        if total <= limit {
            strata.values().flatten().for_each(|&i| keep[i] = true);
            continue;
        }
        // largest-remainder allocation of `limit` over the strata
        let mut quota: Vec<(usize, usize, &str)> = strata
            .iter()
            .map(|(k, v)| (v.len() * limit / total, v.len() * limit % total, k.as_str()))
            .collect();
        let mut left = limit - quota.iter().map(|q| q.0).sum::<usize>();
        let mut order: Vec<usize> = (0..quota.len()).collect();
        order.sort_by(|&a, &b| quota[b].1.cmp(&quota[a].1).then(quota[a].2.cmp(quota[b].2)));
        for &o in &order {
            if left == 0 {
                break;
            }
            quota[o].0 += 1;
            left -= 1;
        }
        for ((_, members), (n, _, _)) in strata.iter().zip(&quota) {
            let mut ranked = members.clone();
            ranked.sort_by_key(|&i| rank(i));
            ranked.iter().take(*n).for_each(|&i| keep[i] = true);
        }
    }
    tasks
        .into_iter()
        .zip(keep)
        .filter_map(|(t, k)| k.then_some(t))
        .collect()
}

/// The stratum of a task for [`select_tasks`].
fn stratum(task: &Task) -> String {
    let field = |k: &str| {
        task.sample
            .get(k)
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    match task.family {
        Family::Code => field("source").unwrap_or_default(),
        Family::Database => field("difficulty").unwrap_or_else(|| {
            ["easy", "medium", "hard", "extra"]
                .into_iter()
                .find(|d| task.task_id.ends_with(&format!("-{d}")))
                .unwrap_or_default()
                .to_string()
        }),
        _ => String::new(),
    }
}

/// An upper bound on any prompt of the run, as (bytes of text, replies): the largest
/// schedule's system prompt, user turns and interface texts, plus eight bytes of
/// framing per message, and the number of assistant replies its prompt can hold (each
/// at most one output cap). Tokens never outnumber bytes, so a tier threshold above
/// `bytes + replies * (cap + 16)` is never reached.
fn max_prompt_bytes(
    schedules: &[Schedule],
    baselines: &[Vec<(Baseline, String)>],
    interfaces: &InterfaceTemplates,
) -> (u64, u64) {
    let extra = (interfaces.disclosure.len()
        + interfaces.compact_request.len()
        + interfaces.compact_handoff.len()) as u64
        + 64;
    schedules
        .iter()
        .zip(baselines.iter().chain(std::iter::repeat(&Vec::new())))
        .map(|(s, b)| {
            // a baseline is the system prompt and one user message
            let single = b
                .iter()
                .map(|(_, p)| p.len() as u64 + 16)
                .max()
                .unwrap_or(0);
            let text: u64 = s
                .user_turns
                .iter()
                .map(|u| u.len() as u64 + 8)
                .sum::<u64>()
                .max(single);
            (
                s.system.len() as u64 + 8 + text + extra,
                s.user_turns.len() as u64 + 1,
            )
        })
        .fold((0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)))
}

/// Passes a model's retry events on to the run's observer.
pub(crate) struct RetryEvents(pub Arc<dyn Observer>);

impl ModelObserver for RetryEvents {
    fn retrying(&self, model: &str, _attempt: u32, wait: Duration, rate_limited: bool) {
        self.0.retry(model, wait, rate_limited);
    }
}

/// One [`Model`] per name: the simulated provider for `sim/...` (one for all of them,
/// knowing the run's tasks), else the first factory of `options.providers` that
/// serves the kind.
fn build_models(
    spec: &ExperimentSpec,
    tasks: &[Task],
    card: &PriceCard,
    options: &RunOptions,
    max_prompt: (u64, u64),
    batch: &BatchContext,
) -> Result<(Models, Option<Arc<Model>>), RunError> {
    let budget = RetryBudget::new(Duration::from_secs(spec.retry_budget_secs));
    let sim_settings: BTreeMap<String, SimSettings> = spec
        .models
        .values()
        .chain(&spec.extractor)
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
    let cx = ModelContext {
        providers: &options.providers,
        stop: &options.stop,
        budget,
        events: Arc::new(RetryEvents(options.observer.clone())),
    };
    let mut models = BTreeMap::new();
    for (name, m) in &spec.models {
        let model = build_model_with(name, m, sim.as_ref(), card, &cx, Some(batch), |cap| {
            max_prompt.0 + max_prompt.1 * (cap + 16)
        })?;
        models.insert(name.clone(), Arc::new(model));
    }
    let extractor = match &spec.extractor {
        Some(m) => {
            let model = build_model_with(
                "extractor",
                m,
                sim.as_ref(),
                card,
                &cx,
                Some(batch),
                |cap| max_prompt.0 + max_prompt.1 * (cap + 16),
            )?;
            Some(Arc::new(model.with_config(extractor_config(m))))
        }
        None => None,
    };
    Ok((models, extractor))
}

/// What every model of a run shares: the provider factories, the stop signal, the run's
/// retry-time budget and the observer of retries.
pub(crate) struct ModelContext<'a> {
    pub providers: &'a [Arc<dyn ProviderFactory>],
    pub stop: &'a StopSignal,
    pub budget: Arc<RetryBudget>,
    pub events: Arc<dyn ModelObserver>,
}

/// Model `name` (chat or agent runs alike): `sim/...` served by `sim`, the run's one
/// simulated provider, else by the first factory that serves the kind. Every rate the
/// model can incur is checked on the card before any call, for a prompt of at most
/// `prompt_bound(output cap)` tokens.
pub(crate) fn build_model(
    name: &str,
    m: &ModelSpec,
    sim: Option<&Arc<dyn Provider>>,
    card: &PriceCard,
    cx: &ModelContext<'_>,
    prompt_bound: impl Fn(u64) -> u64,
) -> Result<Model, RunError> {
    build_model_with(name, m, sim, card, cx, None, prompt_bound)
}

/// Where batched models of a chat run journal their batches, and how they gather and
/// poll rounds (the experiment's `batch_gather_ms` and `batch_poll_ms`, or baton's
/// defaults).
pub(crate) struct BatchContext {
    store: Arc<OnceLock<Store>>,
    gather: Duration,
    poll_min: Duration,
    retry: BatchRetry,
    deadline: Duration,
}

impl BatchContext {
    pub(crate) fn new(spec: &ExperimentSpec, store: &Arc<OnceLock<Store>>) -> Self {
        BatchContext {
            store: Arc::clone(store),
            gather: Duration::from_millis(
                spec.batch_gather_ms.unwrap_or(defaults::BATCH_GATHER_MS),
            ),
            poll_min: Duration::from_millis(spec.batch_poll_ms.unwrap_or(defaults::BATCH_POLL_MS)),
            retry: spec.batch_retry.unwrap_or_default(),
            // checked with the spec; the default if not
            deadline: spec.batch_deadline().unwrap_or(defaults::BATCH_DEADLINE),
        }
    }

    fn setup(&self, model: &str, kind: &str) -> BatchSetup {
        let poll_max = Duration::from_millis(defaults::BATCH_POLL_MAX_MS).max(self.poll_min);
        BatchSetup {
            journal: Arc::new(crate::batch::StoreJournal::new(
                Arc::clone(&self.store),
                model,
                kind,
                self.gather,
                self.retry,
            )),
            gather: self.gather,
            poll_min: self.poll_min,
            poll_max,
            retry: self.retry,
            deadline: self.deadline,
        }
    }
}

/// [`build_model`], with the batch context of a chat run (`None`: batching is refused).
/// A batched model (`batch = true`) is priced at the card's `*_batches` rates, checked
/// here before any call, and gets no concurrency limit.
pub(crate) fn build_model_with(
    name: &str,
    m: &ModelSpec,
    sim: Option<&Arc<dyn Provider>>,
    card: &PriceCard,
    cx: &ModelContext<'_>,
    batch: Option<&BatchContext>,
    prompt_bound: impl Fn(u64) -> u64,
) -> Result<Model, RunError> {
    let err = |message: String| RunError::Model {
        name: name.to_string(),
        // a provider names the model in its own errors; the key around this names it
        message: message
            .strip_prefix(&format!("model {name:?}: "))
            .map_or_else(|| message.clone(), str::to_string),
    };
    let (kind, id) = m.provider_and_id();
    // an unknown provider is the mistake to name, not the missing price it implies
    if kind != "sim"
        && !cx
            .providers
            .iter()
            .any(|f| f.kinds().iter().any(|k| k == kind))
    {
        return Err(err(format!("unknown provider {kind:?} in {:?}", m.model)));
    }
    let price_key = m.price_key();
    let direct = card.get(&price_key);
    let price = if m.batch {
        card.get_batch(&price_key).map_err(|e| {
            err(format!(
                "{e} (batch = true; checked before anything is submitted)"
            ))
        })?
    } else {
        card.get(&price_key).map_err(|e| err(e.to_string()))?
    };
    let provider: Arc<dyn Provider> = match (kind, sim) {
        ("sim", _) if m.batch => {
            return Err(err(format!(
                "{:?} is simulated in-process and has no batch API (batch = true); serve it with `baton sim-server` and name it openai/{id} with that base_url",
                m.model
            )));
        }
        ("sim", Some(p)) => p.clone(),
        _ => {
            let factory = cx
                .providers
                .iter()
                .find(|f| f.kinds().iter().any(|k| k == kind))
                .ok_or_else(|| err(format!("unknown provider {kind:?} in {:?}", m.model)))?;
            let config = ProviderConfig {
                name: name.to_string(),
                kind: kind.to_string(),
                model_id: id.to_string(),
                base_url: m.base_url.clone(),
                api_key_env: m.api_key_env.clone(),
                allow_http_with_key: m.allow_http_with_key,
            };
            match (m.batch, batch) {
                (false, _) => factory.make(&config),
                (true, Some(b)) => factory.make_batched(&config, &b.setup(name, kind)),
                (true, None) => Err("batch = true is for chat experiments only".to_string()),
            }
            .map_err(err)?
        }
    };
    let cap = u64::from(m.generate_config().max_tokens.unwrap_or(0));
    price
        .check(&price_key, provider.token_classes(), prompt_bound(cap))
        .map_err(|e| err(format!("{e} (checked before any call)")))?;
    if m.batch && batch.is_some_and(|b| b.retry == BatchRetry::Direct) {
        // failed items are retried directly and pay the direct rates: every token class
        // needs one too
        let why = "batch_retry = \"direct\" retries failed batch items at the direct rates; checked before anything is submitted";
        direct
            .as_ref()
            .map_err(|e| err(format!("{e} ({why})")))?
            .check(&price_key, provider.token_classes(), prompt_bound(cap))
            .map_err(|e| err(format!("{e} ({why})")))?;
    }
    let direct = direct.ok();
    let model = Model::new(name, provider, id, price_key, price, m.concurrency());
    let model = match direct {
        Some(direct) if m.batch => model.with_direct_price(direct),
        _ => model,
    };
    Ok(model
        .with_secrets(crate::ledger::secrets_in(m.api_key_env.as_deref()))
        .with_config(m.generate_config())
        .with_retry(RetryPolicy {
            max_unusable_retries: m.unusable_retries.unwrap_or(defaults::UNUSABLE_RETRIES),
            ..RetryPolicy::default()
        })
        .with_interrupt(cx.stop.interrupt())
        .with_budget(cx.budget.clone())
        .with_observer(cx.events.clone())
        .with_rate_limits(RateLimits {
            requests_per_minute: m.requests_per_minute,
            tokens_per_minute: m.tokens_per_minute,
            adaptive_concurrency: true,
        }))
}

/// An experiment that would run nothing is an error, not an empty success: no task of
/// its families, or an explicit switch point past the last turn of every task (the
/// handoff cells of that K would all be dropped).
fn check_coverage(spec: &ExperimentSpec, tasks: &[Task]) -> Result<(), String> {
    if tasks.is_empty() {
        return Err(format!(
            "dataset {:?} has no task of families [{}]",
            spec.dataset,
            spec.families
                .iter()
                .map(|f| f.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let longest = tasks.iter().map(|t| t.shards.len()).max().unwrap_or(0);
    for sp in &spec.switch_points {
        if let SwitchPoint::At(k) = sp
            && sp.k(longest).is_none()
        {
            return Err(format!(
                "switch_points: K = {k} leaves no receiver turn in any task (the longest has {longest} shards, so K must be below {longest})"
            ));
        }
    }
    Ok(())
}

/// A dataset that could not be loaded; a file that is not there says where LiC's comes
/// from.
fn dataset_error(e: baton_data::DataError) -> RunError {
    match &e {
        baton_data::DataError::Io { source, .. }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            RunError::MissingDataset(e)
        }
        _ => e.into(),
    }
}

#[cfg(test)]
mod tests {
    use baton_types::Shard;
    use serde_json::json;

    use super::*;

    fn task(id: &str, family: Family, sample: serde_json::Value) -> Task {
        Task {
            task_id: id.into(),
            family,
            shards: vec![Shard {
                shard_id: 1,
                shard: "s".into(),
            }],
            sample,
        }
    }

    #[test]
    fn a_limit_is_a_seeded_sample_stratified_by_source_and_difficulty() {
        let mut tasks = Vec::new();
        // a file that lists HumanEval first, as LiC's does
        for i in 0..30 {
            tasks.push(task(
                &format!("he/{i}"),
                Family::Code,
                json!({"source": "humaneval"}),
            ));
        }
        for i in 0..10 {
            tasks.push(task(
                &format!("lcb/{i}"),
                Family::Code,
                json!({"source": "livecodebench"}),
            ));
        }
        for (i, d) in ["easy", "easy", "medium", "medium", "hard", "extra"]
            .iter()
            .enumerate()
        {
            tasks.push(task(
                &format!("spider-{i}-{d}"),
                Family::Database,
                json!({}),
            ));
        }
        let picked = select_tasks(tasks.clone(), Some(4), 7);
        let code: Vec<&str> = picked
            .iter()
            .filter(|t| t.family == Family::Code)
            .map(|t| t.task_id.as_str())
            .collect();
        assert_eq!(code.len(), 4);
        assert_eq!(
            code.iter().filter(|id| id.starts_with("lcb/")).count(),
            1,
            "{code:?}"
        );
        let db: Vec<&str> = picked
            .iter()
            .filter(|t| t.family == Family::Database)
            .map(|t| t.task_id.as_str())
            .collect();
        assert_eq!(db.len(), 4);
        for d in ["easy", "medium"] {
            assert_eq!(db.iter().filter(|id| id.ends_with(d)).count(), 1, "{db:?}");
        }
        // the same seed gives the same sample, in dataset order; another seed another
        assert_eq!(select_tasks(tasks.clone(), Some(4), 7), picked);
        assert_ne!(select_tasks(tasks.clone(), Some(4), 8), picked);
        let superset = select_tasks(tasks.clone(), Some(8), 7);
        assert!(picked.iter().all(|t| superset.contains(t)));
        assert_eq!(select_tasks(tasks.clone(), None, 7).len(), tasks.len());
    }
}
