//! `baton view`: write the transcript viewer of a store (`baton-view`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use baton_runner::STORE_FILE;

use crate::Outcome;
use crate::cli::ViewArgs;
use crate::printer::Printer;

pub fn view(args: ViewArgs, printer: &Printer) -> Result<Outcome> {
    let (store, folder) = if args.results.is_dir() {
        (args.results.join(STORE_FILE), args.results.clone())
    } else {
        let folder = args.results.parent().map(PathBuf::from).unwrap_or_default();
        (args.results.clone(), folder)
    };
    let out = args.out.unwrap_or_else(|| folder.join("view"));
    let site = baton_view::write_site(&store, &out)
        .with_context(|| format!("writing the viewer of {}", store.display()))?;
    printer.out(&format!(
        "wrote {} ({} episodes; open it in a browser, no server needed)\n",
        site.index.display(),
        site.episodes
    ))?;
    Ok(Outcome::Success)
}
