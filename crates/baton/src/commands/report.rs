//! `baton report`: read a store and print the paper's tables.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use baton_report::ExportFormat;
use baton_runner::{Experiment, STORE_FILE};

use crate::Outcome;
use crate::cli::{Format, ReportArgs};
use crate::printer::Printer;

pub fn report(args: ReportArgs, printer: &Printer) -> Result<Outcome> {
    let path = if args.results.is_dir() {
        args.results.join(STORE_FILE)
    } else {
        args.results.clone()
    };
    if let Some(name) = baton_runner::experiment::name_in_file(&path) {
        anyhow::bail!(
            "{} is an experiment file, not results: give baton report the folder its run \
             wrote (results/{name} unless you ran it with --out) or the results.sqlite in it",
            path.display()
        );
    }
    let report = Experiment::stored(&path)?.report(&path, args.bootstrap, args.seed)?;
    let report = report.document;
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
