//! `baton report`: read a store and print the paper's tables.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use baton_report::{BootstrapConfig, Report};
use baton_runner::STORE_FILE;

use crate::Outcome;
use crate::cli::{Format, ReportArgs};
use crate::printer::Printer;

pub fn report(args: ReportArgs, printer: &Printer) -> Result<Outcome> {
    let path = if args.results.is_dir() {
        args.results.join(STORE_FILE)
    } else {
        args.results.clone()
    };
    let text = if crate::commands::agent::is_agent_store(&path) {
        crate::commands::agent::report_text(&path, args.format)?
    } else {
        let report = build_report(&path, args.bootstrap, args.seed)?;
        match args.format {
            Format::Md => report.to_markdown(),
            Format::Csv => report.to_csv(),
            Format::Json => report.to_json_string(),
            Format::Latex => report.to_latex(),
            Format::Html => report.to_html(),
        }
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
