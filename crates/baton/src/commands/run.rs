//! `baton run` and `baton demo`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::time::Instant;

use anyhow::{Context, Result};
use baton_report::ExportFormat;
use baton_runner::{Experiment, Finished, Note, RunOptions, STORE_FILE, StopSignal};
use baton_types::Cost;

use crate::Outcome;
use crate::cli::{DemoArgs, RunArgs};
use crate::commands::report::write_file;
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

/// The demo's agent experiment: the bundled agent sample, two simulated agents.
pub const DEMO_AGENT_EXPERIMENT: &str = r#"# baton demo, agent part: simulated coding agents on the bundled agent sample.
kind = "agent"
name = "demo-agent"
dataset = "agent-sample"
replicates = 1
seed = 2026
concurrency = 2

[agent]
step_limit = 40

[models.lc]
model = "sim/lc"          # low-cost: skill 0.45

[models.hc]
model = "sim/hc"          # high-capability: skill 0.85
"#;

pub fn run(args: RunArgs, printer: &Printer) -> Result<Outcome> {
    let experiment = Experiment::read(&args.experiment)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| experiment.default_out(args.part));
    let mut options = experiment.options(&out);
    options.resume = args.resume;
    options.limit = args.limit;
    options.concurrency = args.concurrency;
    options.independent = args.independent;
    options.skip_invalid = args.skip_invalid;
    options.allow_changed = args.allow_changed;
    options.batch = args.batch;
    options.part = args.part;
    options.part_rate_limits = args.part_rate_limits;
    options.phase = args.phase.map(part_phase);
    options.thresholds = args.thresholds.clone();
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
        printer.out(&experiment.dry_run(&options)?.to_string())?;
        return Ok(Outcome::Success);
    }
    let finished = execute(&experiment, options, !args.quiet, printer)?;
    print_notes(finished.as_ref(), printer)?;
    Ok(outcome(finished.as_ref()))
}

/// One experiment of the demo and how its part is shown.
struct DemoPart {
    /// The experiment's text and how errors name it.
    text: &'static str,
    source: &'static str,
    /// Its folder under the demo's.
    folder: Option<&'static str>,
    /// What the terminal shows of its Markdown report.
    shown: fn(&str) -> String,
    /// A transcript viewer beside the report, linked from its HTML.
    viewer: bool,
}

pub fn demo(args: DemoArgs, printer: &Printer) -> Result<Outcome> {
    let parts = [
        DemoPart {
            text: DEMO_EXPERIMENT,
            source: "the demo experiment",
            folder: None,
            shown: headline_sections,
            viewer: true,
        },
        DemoPart {
            text: DEMO_AGENT_EXPERIMENT,
            source: "the demo agent experiment",
            folder: Some("agent"),
            shown: str::to_owned,
            viewer: false,
        },
    ];
    let mut all = Outcome::Success;
    for part in parts {
        if let Outcome::Partial = demo_part(&part, &args.out, printer)? {
            all = Outcome::Partial;
        }
    }
    Ok(all)
}

/// Run one demo experiment in its folder (afresh when the folder holds an older one),
/// write its report beside it, and print it with the run's summary.
fn demo_part(part: &DemoPart, out: &Path, printer: &Printer) -> Result<Outcome> {
    let experiment = Experiment::parse(part.source, ".", part.text)?;
    let what = match part.folder {
        Some(folder) => format!("the demo's {folder} part"),
        None => "the demo".to_string(),
    };
    if let Some(why) = experiment.study().unavailable() {
        printer.error(&format!("{what} is skipped: {why}"));
        return Ok(Outcome::Success);
    }
    let dir = match part.folder {
        Some(folder) => out.join(folder),
        None => out.to_path_buf(),
    };
    let store = dir.join(STORE_FILE);
    let same = Experiment::stored(&store).is_ok_and(|e| e.sha256() == experiment.sha256());
    if store.exists() && !same {
        printer.error(&format!(
            "note: {} holds an older run of {what}; starting it afresh",
            dir.display()
        ));
        // the store and what lives beside it (snapshots), never the other parts' folders
        for suffix in ["", "-wal", "-shm"] {
            let p = PathBuf::from(format!("{}{suffix}", store.display()));
            if p.exists() {
                std::fs::remove_file(&p)
                    .with_context(|| format!("cannot remove {}", p.display()))?;
            }
        }
        let blobs = dir.join(baton_runner::agent::BLOB_DIR);
        if blobs.exists() {
            std::fs::remove_dir_all(&blobs)
                .with_context(|| format!("cannot remove {}", blobs.display()))?;
        }
    }
    let started = Instant::now();
    let options = experiment.options(&dir);
    let finished = execute(&experiment, options, true, printer)?;
    let store = finished.store_path().to_path_buf();
    let report = experiment.report(&store, crate::cli::BOOTSTRAP_DRAWS, None)?;
    let md = report.document.export(ExportFormat::Markdown)?;
    let report_path = dir.join("report.md");
    write_file(&report_path, &md)?;
    let html = if part.viewer {
        report.document.export_html_linked("view/index.html")?
    } else {
        report.document.export(ExportFormat::Html)?
    };
    write_file(&dir.join("report.html"), &html)?;
    write_file(
        &dir.join("report.json"),
        &report.document.export(ExportFormat::Json)?,
    )?;
    for plot in &report.plots {
        write_file(
            &dir.join("plots").join(format!("{}.svg", plot.name)),
            &plot.svg,
        )?;
    }
    printer.out(&(part.shown)(&md))?;
    print_notes(finished.as_ref(), printer)?;
    printer.line(&format!(
        "{what}: {:.1} s; full report in {} (and report.html, report.json){}",
        started.elapsed().as_secs_f64(),
        report_path.display(),
        if report.plots.is_empty() {
            String::new()
        } else {
            format!(", plots in {}", dir.join("plots").display())
        }
    ))?;
    if part.viewer {
        let view = baton_view::write_site(&store, &dir.join("view"))?;
        printer.line(&format!(
            "every episode's transcript: {} (open it in a browser)",
            view.index.display()
        ))?;
    }
    Ok(outcome(finished.as_ref()))
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

/// The library's name for a `--phase`.
pub fn part_phase(phase: crate::cli::PartPhase) -> baton_runner::PartPhase {
    match phase {
        crate::cli::PartPhase::Anchors => baton_runner::PartPhase::Anchors,
        crate::cli::PartPhase::Handoffs => baton_runner::PartPhase::Handoffs,
    }
}

/// Prepare the experiment's run, say before its first call what it changes in the
/// folder and a part's share of the cap, and run it; whichever its study.
fn execute(
    experiment: &Experiment,
    mut options: RunOptions,
    show_progress: bool,
    printer: &Printer,
) -> Result<Box<dyn Finished>> {
    let max_cost = options.max_cost;
    drive(show_progress, |progress, stop| async move {
        options.observer = progress;
        options.stop = stop;
        let prepared = experiment.prepare(options).await?;
        let share =
            baton_runner::experiment::part_share(prepared.part(), prepared.max_cost(), max_cost);
        if let Some(line) = share {
            printer.line(&line)?;
        }
        // what a run on an existing folder changes, before its first call
        if let Some(changes) = prepared.changes() {
            printer.out(&changes.to_string())?;
        }
        Ok(prepared.run().await?)
    })
}

/// Run `job` (prepare a run and run it) on a one-thread runtime, with a progress bar
/// on a terminal, and Ctrl-C, SIGTERM or SIGHUP asking the run to stop between calls
/// ([`stop_on_signals`]); chat and agent runs alike.
pub fn drive<T, F, Fut>(show_progress: bool, job: F) -> Result<T>
where
    F: FnOnce(Arc<Progress>, StopSignal) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    // One thread: a run's tasks mostly wait on the network, and what is heavy runs on
    // threads of its own (the store's writer, the scorers, agent steps on the blocking
    // pool). Work-stealing workers woke each other for every reply: `bench harness` at the
    // defaults spent 14% less CPU in the runtime on one thread (8.0 against 9.4 s for
    // 42,600 calls), and as much or less at `--latency-ms 0`, where the run is CPU-bound.
    let runtime = tokio::runtime::Builder::new_current_thread()
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

/// A finished run's summary: its output on stdout, what to do on stderr.
fn print_notes(finished: &dyn Finished, printer: &Printer) -> Result<()> {
    for note in finished.notes() {
        match note {
            Note::Out(line) => printer.line(&line)?,
            Note::Warn(line) => printer.error(&line),
        }
    }
    Ok(())
}

fn outcome(finished: &dyn Finished) -> Outcome {
    if finished.unfinished() {
        Outcome::Partial
    } else {
        Outcome::Success
    }
}
