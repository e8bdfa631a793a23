//! `baton report`: read a store and print the paper's tables.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use baton_models::Cost;
use baton_report::{BootstrapConfig, EpisodeRecord, PairSpec, Report, ReportInput};
use baton_runner::{ExperimentSpec, STORE_FILE};
use baton_store::Reader;
use baton_types::{Cell, Family, Phase};

use crate::Outcome;
use crate::cli::{Format, ReportArgs};
use crate::printer::Printer;

pub fn report(args: ReportArgs, printer: &Printer) -> Result<Outcome> {
    let path = if args.results.is_dir() {
        args.results.join(STORE_FILE)
    } else {
        args.results.clone()
    };
    let report = build_report(&path, args.bootstrap, args.seed)?;
    let text = match args.format {
        Format::Md => report.to_markdown(),
        Format::Csv => report.to_csv(),
        Format::Json => report.to_json_string(),
        Format::Latex => report.to_latex(),
        Format::Html => report.to_html(),
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

/// Read a store into report records and build the report.
pub fn build_report(path: &Path, bootstrap: usize, seed: u64) -> Result<Report> {
    if !path.exists() {
        anyhow::bail!("no results at {}", path.display());
    }
    let reader = Reader::open(path)?;
    let exp = reader.experiment()?;
    let spec = ExperimentSpec::parse(
        &format!("{} (stored experiment)", path.display()),
        &exp.spec_toml,
    )?;
    let mut episodes = Vec::new();
    for e in reader.episodes()? {
        let cell: Cell = serde_json::from_str(&e.cell_json)
            .with_context(|| format!("{}: episode {} has a bad cell", path.display(), e.id))?;
        let family: Family = e.family.parse().map_err(anyhow::Error::msg)?;
        let prefix_cost = match &cell {
            Cell::Single { .. } => None,
            Cell::Handoff { .. } => {
                let own_prefix: i64 = reader
                    .calls(e.id)?
                    .iter()
                    .filter(|c| c.phase == Phase::Prefix)
                    .map(|c| c.cost)
                    .sum();
                let forked = e.cost_attributed - e.cost_paid;
                Some(Cost(own_prefix + forked).usd())
            }
        };
        episodes.push(EpisodeRecord {
            task_id: e.task_id,
            family,
            cell,
            replicate: e.replicate,
            status: e.status,
            score: e.score,
            cost_attributed: Cost(e.cost_attributed).usd(),
            cost_paid: Cost(e.cost_paid).usd(),
            n_turns: e.n_turns as usize,
            k: e.k.map(|k| k as usize),
            reason: e.reason.or(e.eval_error),
            prefix_cost,
        });
    }
    let input = ReportInput {
        title: exp.name,
        simulated: exp.simulated,
        pairs: spec
            .pairs
            .iter()
            .map(|p| PairSpec {
                name: p.label(),
                lc: p.low.clone(),
                hc: p.high.clone(),
            })
            .collect(),
        episodes,
        bootstrap: (bootstrap > 0).then_some(BootstrapConfig {
            replicates: bootstrap,
            seed,
        }),
    };
    Ok(baton_report::build(&input))
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
