//! `baton sandbox install|check`.

use anyhow::Result;
use baton_sandbox::InstallOptions;

use crate::Outcome;
use crate::cli::SandboxCommand;
use crate::printer::Printer;

pub fn sandbox(cmd: SandboxCommand, printer: &Printer) -> Result<Outcome> {
    match cmd {
        SandboxCommand::Install { force, python } => {
            // a build says what it fetches and each step as it goes; an up-to-date
            // runtime is only checked
            crate::progress::announce_sandbox_builds();
            let report = baton_sandbox::install(&InstallOptions {
                home: None,
                python,
                force,
            })?;
            printer.out(&format!("{report}"))?;
            Ok(if report.smoke.iter().all(|s| s.ok) {
                Outcome::Success
            } else {
                Outcome::Partial
            })
        }
        SandboxCommand::Check => {
            let report = baton_sandbox::check()?;
            printer.out(&format!("{report}"))?;
            Ok(if report.healthy() {
                Outcome::Success
            } else {
                Outcome::Partial
            })
        }
    }
}
