//! `baton data check` and `baton data stats`.

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
    }
    Ok(Outcome::Success)
}
