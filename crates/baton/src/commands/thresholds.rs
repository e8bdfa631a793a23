//! `baton thresholds`: the agent handoff study's switch calls from every part's anchors.

use anyhow::Result;

use crate::Outcome;
use crate::cli::ThresholdsArgs;
use crate::commands::report::write_file;
use crate::printer::Printer;

pub fn thresholds(args: ThresholdsArgs, printer: &Printer) -> Result<Outcome> {
    let file = baton_runner::agent::thresholds_from_parts(&args.parts)?;
    let mut text = serde_json::to_string_pretty(&file)?;
    text.push('\n');
    write_file(&args.out, &text)?;
    printer.line(&format!(
        "thresholds of {:?}: {} switch calls from {} anchors of {} parts; written to {} (run each part with --phase handoffs --thresholds {})",
        file.experiment,
        file.thresholds.len(),
        file.anchors.len(),
        file.parts,
        args.out.display(),
        args.out.display()
    ))?;
    Ok(Outcome::Success)
}
