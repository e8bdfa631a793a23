//! `baton run` and `baton demo`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use baton_runner::{ExperimentSpec, RunOptions, RunSummary, Runner, STORE_FILE, StopSignal};
use baton_types::{Cost, EpisodeStatus};

use crate::Outcome;
use crate::cli::{DemoArgs, RunArgs};
use crate::commands::report::{build_report, write_file};
use crate::printer::Printer;
use crate::progress::Progress;

/// The demo experiment: the bundled sample set, one simulated LC/HC pair, every switch
/// point, both directions.
pub const DEMO_EXPERIMENT: &str = r#"# baton demo: simulated models on the bundled sample set.
name = "demo"
dataset = "sample"
replicates = 3
seed = 2026
concurrency = 8
switch_points = ["early", "middle", "late"]
directions = ["escalation", "downshift"]
interfaces = ["raw", "disclosure", "traj_drop", "compact_pre", "compact_suf"]

[models.lc]
model = "sim/lc"          # low-cost: skill 0.45, $0.20 / $1.20 per M tokens

[models.hc]
model = "sim/hc"          # high-capability: skill 0.85, $4 / $20 per M tokens

[[pairs]]
name = "sim-lc/sim-hc"
low = "lc"
high = "hc"
"#;

pub fn run(args: RunArgs, printer: &Printer) -> Result<Outcome> {
    let text = baton_types::input::read_text_bounded(
        &args.experiment,
        baton_types::input::EXPERIMENT_LIMIT,
        "experiment file",
    )
    .context("cannot read the experiment file")?;
    if baton_runner::agent::is_agent_experiment(&text) {
        return crate::commands::agent::run(args, text, printer);
    }
    let spec = ExperimentSpec::parse(&args.experiment.display().to_string(), &text)?;
    anyhow::ensure!(
        args.phase.is_none(),
        "--phase: a chat experiment has no barrier; run its parts without --phase"
    );
    anyhow::ensure!(
        args.thresholds.is_none(),
        "--thresholds: a chat experiment has no thresholds; run its parts without it"
    );
    let out = args.out.clone().unwrap_or_else(|| match args.part {
        Some(part) => Path::new("results").join(part.folder_name(&spec.name)),
        None => Path::new("results").join(&spec.name),
    });
    let base = args
        .experiment
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut options = RunOptions::new(&out, base, text);
    options.source_name = args.experiment.display().to_string();
    options.resume = args.resume;
    options.limit = args.limit;
    options.concurrency = args.concurrency;
    options.independent = args.independent;
    options.skip_invalid = args.skip_invalid;
    options.allow_changed = args.allow_changed;
    options.batch = args.batch;
    options.part = args.part;
    options.part_rate_limits = args.part_rate_limits;
    let http = baton_http::HttpProviders::new(baton_http::DEFAULT_TIMEOUT);
    // an estimate makes no call, so it needs no key
    let http = if args.dry_run {
        http.keys_optional()
    } else {
        http
    };
    options.providers = vec![Arc::new(baton_batch::BatchProviders::new(http))];
    if let Some(usd) = args.max_cost {
        anyhow::ensure!(
            usd >= 0.0 && usd.is_finite(),
            "--max-cost must be a non-negative number of dollars"
        );
        options.max_cost = Some(Cost::from_usd(usd));
    }
    if args.dry_run {
        let estimate = baton_runner::dry_run(spec, &options)?;
        printer.out(&estimate.to_string())?;
        return Ok(Outcome::Success);
    }
    let summary = execute(spec, options, !args.quiet, printer)?;
    report_summary(&summary, printer)?;
    Ok(outcome(&summary))
}

pub fn demo(args: DemoArgs, printer: &Printer) -> Result<Outcome> {
    let spec = ExperimentSpec::parse("the demo experiment", DEMO_EXPERIMENT)?;
    let store = args.out.join(STORE_FILE);
    if store.exists() && stored_spec_differs(&store, &spec) {
        printer.error(&format!(
            "note: {} holds an older demo; starting it afresh",
            store.display()
        ));
        for suffix in ["", "-wal", "-shm"] {
            let p = PathBuf::from(format!("{}{suffix}", store.display()));
            if p.exists() {
                std::fs::remove_file(&p)
                    .with_context(|| format!("cannot remove {}", p.display()))?;
            }
        }
    }
    let options = RunOptions::new(&args.out, ".", DEMO_EXPERIMENT);
    let summary = execute(spec, options, true, printer)?;
    let report = build_report(&summary.store_path, crate::cli::BOOTSTRAP_DRAWS, 0)?;
    let md = report.to_markdown();
    let report_path = args.out.join("report.md");
    write_file(&report_path, &md)?;
    write_file(
        &args.out.join("report.html"),
        &report.to_html_linked("view/index.html"),
    )?;
    for plot in report.plots() {
        write_file(
            &args.out.join("plots").join(format!("{}.svg", plot.name)),
            &plot.svg,
        )?;
    }
    let view = baton_view::write_site(&summary.store_path, &args.out.join("view"))?;
    printer.out(&headline_sections(&md))?;
    report_summary(&summary, printer)?;
    printer.line(&format!(
        "full report (every family, switch point and interface): {} and report.html, plots in {}",
        report_path.display(),
        args.out.join("plots").display()
    ))?;
    printer.line(&format!(
        "every episode's transcript: {} (open it in a browser)",
        view.index.display()
    ))?;
    let agent = crate::commands::agent::demo(&args.out, printer)?;
    Ok(match (outcome(&summary), agent) {
        (Outcome::Success, Outcome::Success) => Outcome::Success,
        _ => Outcome::Partial,
    })
}

/// The parts of a report a terminal shows after the demo: the title and notes, the
/// anchors, and the all-families tables of each direction.
fn headline_sections(md: &str) -> String {
    let mut out = String::new();
    let mut keep = true;
    for line in md.lines() {
        if line.starts_with('#') {
            let title = line.trim_start_matches('#').trim();
            keep = line.starts_with("# ")
                || line.starts_with("## Pair")
                || title == "Anchors"
                || title.contains("all families");
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn stored_spec_differs(store: &Path, spec: &ExperimentSpec) -> bool {
    baton_store::Reader::open(store)
        .and_then(|r| r.experiment())
        .map(|e| {
            ExperimentSpec::parse("stored", &e.meta.spec_toml)
                .map_or(true, |s| s.sha256() != spec.sha256())
        })
        .unwrap_or(true)
}

/// The library's name for a `--phase`.
pub fn part_phase(phase: crate::cli::PartPhase) -> baton_runner::PartPhase {
    match phase {
        crate::cli::PartPhase::Anchors => baton_runner::PartPhase::Anchors,
        crate::cli::PartPhase::Handoffs => baton_runner::PartPhase::Handoffs,
    }
}

/// The line a part prints before it starts: its share of the experiment's cap, and
/// the bounds it comes from. None for a whole run, or a part without a cap.
pub fn part_share(
    part: Option<(baton_runner::Part, &[Cost])>,
    share: Option<Cost>,
    total: Option<Cost>,
) -> Option<String> {
    let ((part, bounds), share, total) = (part?, share?, total?);
    let all = bounds.iter().fold(Cost::ZERO, |a, b| a + *b);
    let mine = bounds
        .get(part.index as usize - 1)
        .copied()
        .unwrap_or_default();
    Some(format!(
        "part {part}: spending cap {share} of the experiment's {total} (its upper bound {mine} of all {} parts' {all})",
        part.count
    ))
}

fn execute(
    spec: ExperimentSpec,
    mut options: RunOptions,
    show_progress: bool,
    printer: &Printer,
) -> Result<RunSummary> {
    let max_cost = options.max_cost;
    let summary = drive(show_progress, |progress, stop| async move {
        options.observer = progress;
        options.stop = stop;
        let runner = Runner::prepare(spec, options).await?;
        if let Some(line) = part_share(runner.part(), runner.max_cost(), max_cost) {
            printer.line(&line)?;
        }
        // what a run on an existing folder changes, before its first call
        if runner.changes().stored {
            printer.out(&runner.changes().to_string())?;
        }
        Ok(runner.run().await?)
    })?;
    if summary.count(EpisodeStatus::Incomplete) > 0 && summary.causes.is_empty() {
        printer.error("some episodes are incomplete; run the same command again to finish them");
    }
    let running = baton_store::Reader::open(&summary.store_path)
        .and_then(|r| r.batches())
        .map(|b| b.iter().filter(|b| b.finished_at.is_none()).count())
        .unwrap_or(0);
    if running > 0 {
        printer.error(&format!(
            "{running} provider batch(es) are not collected yet (still running, or given up on this run: past batch_deadline, refused with 401/403/404 or redirected; the episodes' reasons say which): they are recorded in {}, so run the same command with --resume to collect their replies, and nothing is submitted again",
            summary.store_path.display()
        ));
    }
    Ok(summary)
}

/// Run `job` (prepare a run and run it) on a multi-threaded runtime, with a progress bar
/// on a terminal, and Ctrl-C, SIGTERM or SIGHUP asking the run to stop between calls
/// ([`stop_on_signals`]); chat and agent runs alike.
pub fn drive<T, F, Fut>(show_progress: bool, job: F) -> Result<T>
where
    F: FnOnce(Arc<Progress>, StopSignal) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let progress = Arc::new(Progress::new(show_progress));
    let stop = StopSignal::default();
    let result = runtime.block_on(async {
        tokio::spawn(stop_on_signals(stop.clone()));
        job(progress.clone(), stop).await
    });
    progress.finish();
    result
}

/// The first SIGINT, SIGTERM or SIGHUP stops the run: no new call is sent, the calls
/// in flight are answered (their replies are billed) and stored, and the run exits 1
/// with the unfinished episodes incomplete, to be resumed. A second signal abandons the
/// calls still in flight at once (exit 1): the provider may bill their replies, which
/// are then not stored, and `--resume` sends those calls again.
async fn stop_on_signals(stop: StopSignal) {
    use tokio::signal::unix::{SignalKind, signal};
    let kinds = [
        (SignalKind::interrupt(), "SIGINT"),
        (SignalKind::terminate(), "SIGTERM"),
        (SignalKind::hangup(), "SIGHUP"),
    ];
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for (kind, name) in kinds {
        match signal(kind) {
            Ok(mut stream) => {
                let tx = tx.clone();
                tokio::spawn(async move {
                    while stream.recv().await.is_some() {
                        if tx.send(name).is_err() {
                            break;
                        }
                    }
                });
            }
            Err(e) => tracing::warn!("cannot listen for {name}: {e}"),
        }
    }
    drop(tx);
    let Some(name) = rx.recv().await else { return };
    stop.stop();
    tracing::warn!(
        "{name}: stopping; no new call is sent, and the calls in flight are stored as they are answered (send the signal again to abandon them)"
    );
    let Some(name) = rx.recv().await else { return };
    tracing::error!(
        "{name} again: calls still in flight are abandoned; a provider may bill their replies, which are not stored, and --resume sends them again"
    );
    std::process::exit(1);
}

fn report_summary(s: &RunSummary, printer: &Printer) -> Result<()> {
    // statuses by name, as the line has always listed them
    let mut counts: Vec<_> = s.episodes.iter().collect();
    counts.sort_by_key(|(status, _)| status.as_str());
    let statuses: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    printer.line(&format!(
        "episodes: {}; calls: {} new, {} stored; spent now {}, paid in total {}, attributed {}, saved by forking {}; billed attempts {} ({} unusable); store: {}",
        statuses.join(", "),
        s.calls_new,
        s.calls_total,
        s.spent_now,
        s.paid_total,
        s.attributed_total,
        s.saved_by_forking,
        s.spend.billed_attempts,
        s.spend.unusable_attempts,
        s.store_path.display()
    ))?;
    if s.spend.batched_attempts > 0 {
        printer.line(&format!(
            "batching: {} attempts at batch rates saved {} against direct rates (forking saved {})",
            s.spend.batched_attempts, s.spend.saved_by_batching, s.saved_by_forking
        ))?;
    }
    if let Some(note) = s.spend.note() {
        printer.error(&note);
    }
    diagnosis(s, printer);
    Ok(())
}

/// Why episodes were left unfinished, grouped by cause with what to do, and last the
/// models that were stopped because none of their calls could succeed.
fn diagnosis(s: &RunSummary, printer: &Printer) {
    if !s.causes.is_empty() {
        printer.error("unfinished episodes by cause (episodes, cause; what to do):");
        for (cause, n) in &s.causes {
            // a cause that names a stopped model (its calls, or an anchor of it whose
            // prefix a handoff waits for) comes from that model's dead end
            let stopped = s.dead_ends.iter().any(|(name, _)| {
                cause.starts_with(&format!("model \"{name}\""))
                    || cause.contains(&format!("single({name})"))
            });
            let fix = if stopped {
                "see the model's line below"
            } else {
                fix_for(cause)
            };
            printer.error(&format!("  {n:>6}  {cause}; {fix}"));
        }
    }
    for (_, why) in &s.dead_ends {
        printer.error(&format!("stopped: {why}"));
    }
}

/// What to do about an unfinished episode's cause.
fn fix_for(cause: &str) -> &'static str {
    if cause.contains("no further call of it was sent this run") {
        "see the model's line below"
    } else if cause.contains("spending cap") {
        "raise --max-cost (the experiment's total) and run the same command again"
    } else if cause.contains("the run was stopped") {
        "run the same command again to finish"
    } else if cause.contains("free space and resume") {
        "free disk space, then run the same command again"
    } else {
        "run the same command again to retry; `baton view` shows the episodes"
    }
}

fn outcome(s: &RunSummary) -> Outcome {
    let bad = s.count(EpisodeStatus::Incomplete) + s.count(EpisodeStatus::Errored);
    if bad > 0 {
        Outcome::Partial
    } else {
        Outcome::Success
    }
}
