//! `baton swebench eval`: judge an agent run's SWE-bench patches with the official
//! harness and store the verdicts.

use std::time::Duration;

use anyhow::Result;
use baton_runner::agent::swebench::{EvalOptions, EvalSummary, swebench_eval};

use crate::Outcome;
use crate::cli::{SwebenchCommand, SwebenchEvalArgs};
use crate::commands::run::drive;
use crate::printer::Printer;

pub fn swebench(cmd: SwebenchCommand, printer: &Printer) -> Result<Outcome> {
    match cmd {
        SwebenchCommand::Eval(args) => eval(args, printer),
    }
}

fn eval(args: SwebenchEvalArgs, printer: &Printer) -> Result<Outcome> {
    anyhow::ensure!(args.timeout > 0, "--timeout must be at least 1 second");
    let mut options = EvalOptions::new(&args.results);
    options.python = args.python;
    options.dataset = args.dataset;
    options.max_workers = args.max_workers.max(1);
    options.timeout = Duration::from_secs(args.timeout);
    if let Some(docker) = args.docker {
        options.docker.docker.executable = docker;
    }
    let summary = drive(false, |_, stop| async move {
        options.stop = stop;
        Ok(swebench_eval(options).await?)
    })?;
    print_summary(&summary, printer)?;
    if summary.stopped {
        printer.error("stopped before every cell was judged; run the same command again to finish");
        return Ok(Outcome::Partial);
    }
    if let Some(why) = &summary.harness_error {
        anyhow::bail!(
            "the SWE-bench harness failed, the episodes it did not judge stay unscored with the reason: {why}"
        );
    }
    Ok(if summary.cells.iter().any(|c| c.no_verdict > 0) {
        Outcome::Partial
    } else {
        Outcome::Success
    })
}

fn print_summary(s: &EvalSummary, printer: &Printer) -> Result<()> {
    printer.line(&format!(
        "SWE-bench harness: {} (dataset {}){}",
        s.python.display(),
        s.dataset.display(),
        s.docker
            .as_deref()
            .map(|v| format!("; Docker engine {v}"))
            .unwrap_or_default()
    ))?;
    for c in &s.cells {
        printer.line(&format!(
            "{} replicate {}: {} instances, resolved {}, unresolved {}, empty patch {}, no verdict {}{} -> {}",
            c.cell,
            c.replicate,
            c.instances,
            c.resolved,
            c.unresolved,
            c.empty,
            c.no_verdict,
            if c.incomplete > 0 {
                format!(" ({} episodes not ended, left out)", c.incomplete)
            } else {
                String::new()
            },
            c.file.display()
        ))?;
    }
    if s.nothing_new() {
        printer.line(&format!(
            "nothing new to evaluate: {} patches were judged before (verdict cache), every verdict is stored; {} predictions files rewritten",
            s.from_cache,
            s.cells.len()
        ))?;
    } else {
        printer.line(&format!(
            "{} predictions files written; patches judged by the harness now {}, from the cache {}; episodes newly scored {}, left unscored {}",
            s.cells.len(),
            s.judged_now,
            s.from_cache,
            s.newly_scored,
            s.still_unscored
        ))?;
    }
    Ok(())
}
