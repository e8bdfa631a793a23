//! `baton data check`, `baton data stats` and `baton data swebench`.

use std::path::Path;

use anyhow::Result;
use baton_data::Dataset;

use crate::Outcome;
use crate::cli::DataCommand;
use crate::printer::Printer;

pub fn load(file: &Path) -> Result<Dataset> {
    if file == Path::new("sample") {
        return Ok(baton_data::try_sample_dataset()?);
    }
    Ok(baton_data::load(file)?)
}

pub fn data(cmd: DataCommand, printer: &Printer) -> Result<Outcome> {
    match cmd {
        DataCommand::Check { file } => {
            let ds = load(&file)?;
            let skipped: usize = ds.skipped.values().sum();
            printer.line(&format!(
                "{}: ok, {} tasks ({} skipped: out-of-scope families); sha256 {}",
                file.display(),
                ds.tasks.len(),
                skipped,
                ds.sha256
            ))?;
        }
        DataCommand::Stats { file, spider_dir } => {
            // describe what is valid and list the rest
            let ds = if file == Path::new("sample") {
                load(&file)?
            } else {
                baton_data::load_lenient(&file)?
            };
            printer.out(&format!("{}\n", ds.stats(Some(&spider_dir))))?;
        }
        DataCommand::Swebench { file, json } => {
            let summary = baton_agent::summarize_swebench(&file)?;
            if json {
                printer.out(&format!("{}\n", serde_json::to_string_pretty(&summary)?))?;
            } else {
                printer.out(&swebench_text(&summary))?;
            }
        }
    }
    Ok(Outcome::Success)
}

/// The text form of `baton data swebench`.
fn swebench_text(s: &baton_agent::SweBenchSummary) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: ok, {} SWE-bench instances; sha256 {}",
        s.file, s.instances, s.sha256
    );
    let counts = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(out, "repositories: {}", counts(&s.repos));
    let _ = writeln!(out, "difficulty: {}", counts(&s.difficulty));
    let _ = writeln!(
        out,
        "images (the agent works in each, the repository at /testbed):"
    );
    for i in &s.images {
        let from = match i.from {
            "naming" => "SWE-bench's naming",
            key => key,
        };
        let _ = writeln!(out, "  {}  {}  ({from})", i.instance_id, i.image);
    }
    if s.missing_harness_keys.is_empty() {
        let _ = writeln!(
            out,
            "harness: every instance has {} (what swebench {} scores with)",
            baton_agent::HARNESS_KEYS.join(", "),
            baton_agent::SWEBENCH_VERSION
        );
    } else {
        for (key, ids) in &s.missing_harness_keys {
            let _ = writeln!(
                out,
                "harness: {} of {} instances lack {key:?}; swebench {} cannot score them ({})",
                ids.len(),
                s.instances,
                baton_agent::SWEBENCH_VERSION,
                ids.join(", ")
            );
        }
    }
    out
}
