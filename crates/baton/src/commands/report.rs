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
    if let Some(name) = experiment_name(&path) {
        anyhow::bail!(
            "{} is an experiment file, not results: give baton report the folder its run \
             wrote (results/{name} unless you ran it with --out) or the results.sqlite in it",
            path.display()
        );
    }
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

/// The experiment's name when `path` is an experiment file (TOML with a top-level string
/// `name`) rather than a store, so `baton report EXPERIMENT.toml` says what to give it.
fn experiment_name(path: &Path) -> Option<String> {
    if !path.is_file() || path.extension().is_none_or(|e| e != "toml") {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let table: toml::Table = text.parse().ok()?;
    table.get("name")?.as_str().map(str::to_owned)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_35_an_experiment_file_given_as_results_is_named_as_one() {
        // See: issue 35 (`baton report EXPERIMENT.toml` said "move it away")
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("haiku-opus.toml");
        std::fs::write(&file, "name = \"haiku-opus\"\ndataset = \"sample\"\n").unwrap();
        assert_eq!(experiment_name(&file).as_deref(), Some("haiku-opus"));
        // a store, a folder, another file or TOML without a name are left to the store
        let other = dir.path().join("results.sqlite");
        std::fs::write(&other, "name = \"x\"").unwrap();
        assert_eq!(experiment_name(&other), None);
        assert_eq!(experiment_name(dir.path()), None);
        let nameless = dir.path().join("prices.toml");
        std::fs::write(&nameless, "[models]\n").unwrap();
        assert_eq!(experiment_name(&nameless), None);
    }
}
