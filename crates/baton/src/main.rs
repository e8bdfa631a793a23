//! The `baton` command-line tool: argument parsing, settings, progress display, and the
//! glue between the library crates. The only crate that uses `anyhow`.
//!
//! Exit codes: 0 when everything succeeded, 1 when a run finished but some episodes are
//! incomplete or errored, 2 for usage and fatal
//! errors. A closed stdout (`baton report | head`) counts as success.

mod cli;
mod commands;
mod printer;
mod progress;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::printer::Printer;

/// mimalloc instead of the system allocator: the harness, the store and the evaluators
/// allocate and free many small buffers per call and per vector.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// What a command reports back to `main`.
pub enum Outcome {
    /// Everything succeeded.
    Success,
    /// Finished, but something needs the user's attention (exit 1).
    Partial,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BATON_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level)),
        )
        .with_writer(std::io::stderr)
        // No colour codes in a log file (nohup, Slurm's output files, CI).
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let printer = Printer::stdout();
    let result = match cli.command {
        Command::Demo(args) => commands::run::demo(args, &printer),
        Command::Run(args) => commands::run::run(args, &printer),
        Command::Report(args) => commands::report::report(args, &printer),
        Command::Merge(args) => commands::merge::merge(args, &printer),
        Command::Thresholds(args) => commands::thresholds::thresholds(args, &printer),
        Command::Score(args) => commands::score::score(args, &printer),
        Command::Data(cmd) => commands::data::data(cmd, &printer),
        Command::Show(args) => commands::show::show(args, &printer),
        Command::Sandbox(cmd) => commands::sandbox::sandbox(cmd, &printer),
        Command::SimServer(args) => commands::sim_server::sim_server(args, &printer),
        Command::Handoff(cmd) => commands::handoff::handoff(cmd, &printer),
        Command::Env(cmd) => commands::env::env(cmd, &printer),
        Command::Bench(cmd) => commands::bench::bench(cmd, &printer),
        Command::Swebench(cmd) => commands::swebench::swebench(cmd, &printer),
        Command::View(args) => commands::view::view(args, &printer),
    };
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Partial) => ExitCode::from(1),
        Err(e) if printer::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            printer.error(&format!("error: {e:#}"));
            ExitCode::from(2)
        }
    }
}
