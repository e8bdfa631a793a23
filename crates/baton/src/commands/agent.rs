//! `baton run` on an agent experiment (`kind = "agent"`), its dry run, its report, and
//! the demo's agent part.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use baton_runner::agent::{AgentRunSummary, AgentRunner, AgentSpec};
use baton_runner::{RunOptions, STORE_FILE};
use baton_types::{Cost, EpisodeStatus};

use crate::Outcome;
use crate::cli::{Format, RunArgs};
use crate::commands::report::write_file;
use crate::commands::run::drive;
use crate::printer::Printer;

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

/// `baton run` on an agent experiment whose text is `text`.
pub fn run(args: RunArgs, text: String, printer: &Printer) -> Result<Outcome> {
    let spec = AgentSpec::parse(&args.experiment.display().to_string(), &text)?;
    anyhow::ensure!(
        !args.batch,
        "--batch: {}",
        baton_runner::agent::BATCH_REFUSED
    );
    anyhow::ensure!(
        !args.independent || spec.handoff.is_some(),
        "--independent is for handoff experiments: this agent experiment has no [handoff] table, so no prefixes to fork"
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
    options.allow_changed = args.allow_changed;
    options.independent = args.independent;
    options.skip_invalid = args.skip_invalid;
    options.part = args.part;
    options.part_rate_limits = args.part_rate_limits;
    options.phase = args.phase.map(crate::commands::run::part_phase);
    options.thresholds = args.thresholds.clone();
    if let Some(usd) = args.max_cost {
        anyhow::ensure!(
            usd >= 0.0 && usd.is_finite(),
            "--max-cost must be a non-negative number of dollars"
        );
        options.max_cost = Some(Cost::from_usd(usd));
    }
    if args.dry_run {
        // checked as the run checks it; an estimate makes no call, so it needs no key
        options.providers = vec![Arc::new(
            baton_http::HttpProviders::new(baton_http::DEFAULT_TIMEOUT).keys_optional(),
        )];
        printer.out(&baton_runner::agent::dry_run::dry_run(&spec, &options)?.to_string())?;
        return Ok(Outcome::Success);
    }
    options.providers = vec![Arc::new(baton_http::HttpProviders::new(
        baton_http::DEFAULT_TIMEOUT,
    ))];
    let summary = execute(spec, options, !args.quiet, printer)?;
    summary_line(&summary, printer)?;
    Ok(outcome(&summary))
}

fn execute(
    spec: AgentSpec,
    mut options: RunOptions,
    show_progress: bool,
    printer: &Printer,
) -> Result<AgentRunSummary> {
    let summary = drive(show_progress, |progress, stop| async move {
        options.observer = progress;
        options.stop = stop;
        let max_cost = options.max_cost;
        let runner = AgentRunner::prepare(spec, options).await?;
        let share = crate::commands::run::part_share(runner.part(), runner.max_cost(), max_cost);
        if let Some(line) = share {
            printer.line(&line)?;
        }
        Ok(runner.run().await?)
    })?;
    if summary.count(EpisodeStatus::Incomplete) > 0 {
        printer.error("some episodes are incomplete; run the same command again to finish them");
    }
    Ok(summary)
}

fn summary_line(s: &AgentRunSummary, printer: &Printer) -> Result<()> {
    let statuses: Vec<String> = s.episodes.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let exits: Vec<String> = s.exits.iter().map(|(k, v)| format!("{v} {k}")).collect();
    printer.line(&format!(
        "agent episodes: {} (exits: {}; anchors ended with error: {}); resolved {}; calls: {} new, {} stored; spent now {}, paid in total {}; billed attempts {} ({} unusable); snapshots: {} bytes; store: {}",
        statuses.join(", "),
        exits.join(", "),
        s.error_anchors,
        s.resolved,
        s.calls_new,
        s.calls_total,
        s.spent_now,
        s.spend.paid,
        s.spend.billed_attempts,
        s.spend.unusable_attempts,
        s.snapshot_store_bytes,
        s.store_path.display()
    ))?;
    for (cell, n) in &s.summary_retries {
        printer.line(&format!(
            "{cell}: {n} summary repl{} made a tool call or had no text (paid, stored, retried)",
            if *n == 1 { "y" } else { "ies" }
        ))?;
    }
    if let Some(note) = s.spend.note() {
        printer.error(&note);
    }
    Ok(())
}

fn outcome(s: &AgentRunSummary) -> Outcome {
    let bad = s.count(EpisodeStatus::Incomplete) + s.count(EpisodeStatus::Errored);
    if bad > 0 {
        Outcome::Partial
    } else {
        Outcome::Success
    }
}

/// The agent report of the store at `path` in `format`.
///
/// A handoff study's store adds the study (switch calls, cells, Table 1, restart
/// controls, …) after the cost audit passed; a failed audit is an error and prints nothing.
pub fn report_text(path: &Path, format: Format) -> Result<String> {
    let report =
        crate::commands::report::agent_report(path, baton_runner::agent::STUDY_BOOTSTRAP, None)?;
    Ok(baton_report::Export::export(
        &report,
        crate::commands::report::export_format(format),
    )?)
}

/// Whether the store at `path` holds an agent experiment.
pub fn is_agent_store(path: &Path) -> bool {
    path.exists()
        && baton_store::Reader::open(path)
            .and_then(|r| r.is_agent())
            .unwrap_or(false)
}

/// The demo's agent part: the sample with two simulated agents in `out/agent`, its
/// report beside it. Skipped, saying why, when the sandbox cannot run here.
pub fn demo(out: &Path, printer: &Printer) -> Result<Outcome> {
    let spec = AgentSpec::parse("the demo agent experiment", DEMO_AGENT_EXPERIMENT)?;
    let check = baton_env::check(&spec.environment);
    if !check.passed() {
        let why: Vec<String> = check
            .failures()
            .map(|f| {
                format!(
                    "{}: {} ({})",
                    f.name,
                    f.detail,
                    f.fix.clone().unwrap_or_default()
                )
            })
            .collect();
        printer.error(&format!(
            "the demo's agent part is skipped: the sandbox does not run here: {}; `baton env check` says more",
            why.join("; ")
        ));
        return Ok(Outcome::Success);
    }
    let dir = out.join("agent");
    let store = dir.join(STORE_FILE);
    if store.exists() {
        let same = baton_store::Reader::open(&store)
            .and_then(|r| r.experiment())
            .map(|e| e.meta.spec_sha256 == spec.sha256())
            .unwrap_or(false);
        if !same {
            printer.error(&format!(
                "note: {} holds an older agent demo; starting it afresh",
                dir.display()
            ));
            std::fs::remove_dir_all(&dir)
                .with_context(|| format!("cannot remove {}", dir.display()))?;
        }
    }
    let started = Instant::now();
    let options = RunOptions::new(&dir, ".", DEMO_AGENT_EXPERIMENT);
    let summary = execute(spec, options, true, printer)?;
    let md = report_text(&summary.store_path, Format::Md)?;
    write_file(&dir.join("report.md"), &md)?;
    write_file(
        &dir.join("report.html"),
        &report_text(&summary.store_path, Format::Html)?,
    )?;
    write_file(
        &dir.join("report.json"),
        &report_text(&summary.store_path, Format::Json)?,
    )?;
    printer.out(&md)?;
    summary_line(&summary, printer)?;
    printer.line(&format!(
        "agent part: {:.1} s; report in {} (and report.html, report.json)",
        started.elapsed().as_secs_f64(),
        dir.join("report.md").display()
    ))?;
    Ok(outcome(&summary))
}
