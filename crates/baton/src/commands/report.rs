//! `baton report`: read a store and print the paper's tables.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use baton_report::{AgentExperimentReport, BootstrapConfig, Export, ExportFormat, Report};
use baton_runner::STORE_FILE;
use baton_runner::agent::agent_report_input;

use crate::Outcome;
use crate::cli::{Format, ReportArgs};
use crate::printer::Printer;

pub fn report(args: ReportArgs, printer: &Printer) -> Result<Outcome> {
    let path = if args.results.is_dir() {
        args.results.join(STORE_FILE)
    } else {
        args.results.clone()
    };
    let report: Box<dyn Export> = if crate::commands::agent::is_agent_store(&path) {
        Box::new(agent_report(&path, args.bootstrap, args.seed)?)
    } else {
        Box::new(build_report(&path, args.bootstrap, args.seed.unwrap_or(0))?)
    };
    let viewer = path.with_file_name("view").join("index.html");
    let text = match args.format {
        Format::Html if viewer.is_file() => {
            let page_dir = match &args.out {
                Some(out) => out.parent().map(Path::to_path_buf).unwrap_or_default(),
                None => PathBuf::new(),
            };
            report.export_html_linked(&link_to(&viewer, &page_dir))?
        }
        format => report.export(export_format(format))?,
    };
    match &args.out {
        Some(out) => {
            write_file(out, &text)?;
            printer.error(&format!("wrote {}", out.display()));
        }
        None => printer.out(&text)?,
    }
    Ok(Outcome::Success)
}

/// The URL of `target` from a page in `page_dir`: relative when `target` is inside it,
/// else the absolute `file://` path.
fn link_to(target: &Path, page_dir: &Path) -> String {
    let absolute = |p: &Path| {
        std::path::absolute(p)
            .ok()
            .and_then(|p| p.canonicalize().ok().or(Some(p)))
            .unwrap_or_else(|| p.to_path_buf())
    };
    let (target, dir) = (absolute(target), absolute(page_dir));
    match target.strip_prefix(&dir) {
        Ok(relative) => relative.display().to_string(),
        Err(_) => format!("file://{}", target.display()),
    }
}

/// The library's name for a `--format`.
pub fn export_format(format: Format) -> ExportFormat {
    match format {
        Format::Md => ExportFormat::Markdown,
        Format::Csv => ExportFormat::Csv,
        Format::Json => ExportFormat::Json,
        Format::Latex => ExportFormat::Latex,
        Format::Html => ExportFormat::Html,
    }
}

/// Read a store and build the report.
pub fn build_report(path: &Path, bootstrap: usize, seed: u64) -> Result<Report> {
    let bootstrap = (bootstrap > 0).then_some(BootstrapConfig {
        replicates: bootstrap,
        seed,
    });
    Ok(baton_report::build(&baton_runner::report_input(
        path, bootstrap,
    )?))
}

/// Read an agent store and build its report, with the handoff study when the experiment
/// has one: `bootstrap` draws (0: no intervals), seeded by `seed` or else by the
/// experiment's own seed.
pub fn agent_report(
    path: &Path,
    bootstrap: usize,
    seed: Option<u64>,
) -> Result<AgentExperimentReport> {
    let agent = baton_report::build_agent(&agent_report_input(path)?);
    let study = match baton_runner::agent::study_input(path, bootstrap)? {
        Some(mut input) => {
            input.bootstrap = bootstrap;
            input.seed = seed.unwrap_or(input.seed);
            Some(baton_report::build_study(&input)?)
        }
        None => None,
    };
    Ok(AgentExperimentReport { agent, study })
}

/// Write a file atomically, creating its folder.
pub fn write_file(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let tmp = PathBuf::from(format!("{}.tmp", path.display()));
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
