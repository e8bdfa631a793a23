//! End-to-end tests of the `baton` binary.

mod agent;
mod agent_fixture;
mod agent_study;
mod batch;
mod batch_hostile;
mod cli;
mod diagnosis;
mod dialect;
mod diskfull;
mod docker_leftovers;
mod env;
mod growth;
mod handoff;
mod handoff_traps;
mod handover_interface;
mod litellm;
mod malformed;
mod money;
mod money3;
mod money_rules;
mod partly;
mod parts;
mod presets;
mod progress;
mod protocol;
mod resume;
mod score;
mod secrets;
mod settings;
mod show;
mod signals;
mod support;
mod swebench;
mod swebench_docker;
mod view;

use std::path::Path;
use std::process::{Command, Output};

/// Run the built `baton` binary with `args` in `cwd`.
pub fn baton(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(args)
        .current_dir(cwd)
        .env_remove("BATON_LOG")
        .output()
        .expect("baton runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
