//! `baton merge`: the parts of an experiment as one store.

use anyhow::Result;
use baton_types::EpisodeStatus;

use crate::Outcome;
use crate::cli::MergeArgs;
use crate::printer::Printer;

pub fn merge(args: MergeArgs, printer: &Printer) -> Result<Outcome> {
    let summary = baton_runner::merge(&args.parts, &args.out)?;
    let mut counts: Vec<_> = summary.episodes.iter().collect();
    counts.sort_by_key(|(status, _)| status.as_str());
    let statuses: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    printer.line(&format!(
        "merged {} parts: episodes: {}; calls: {}; store: {}",
        summary.parts,
        statuses.join(", "),
        summary.calls,
        summary.store_path.display()
    ))?;
    let unfinished =
        summary.count(EpisodeStatus::Incomplete) + summary.count(EpisodeStatus::Errored);
    if unfinished > 0 {
        printer.error(&format!(
            "{unfinished} episode(s) are unfinished in their parts and report as such; finish the parts (run each part's command again) and merge again"
        ));
        return Ok(Outcome::Partial);
    }
    Ok(Outcome::Success)
}
