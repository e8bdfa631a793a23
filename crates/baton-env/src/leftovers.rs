//! A run's leftover containers: baton killed with SIGKILL cannot remove its containers, so
//! a resume (and `baton env clean RESULTS`) removes every container labelled with the run
//! before it starts new ones.

use std::process::Command;

use crate::config::{EnvConfig, RUN_LABEL};
use crate::docker::{helper, remove_container};
use crate::error::EnvError;

/// Remove every container (running or not) of the run `config.run_label` names, through
/// the configured Docker client, and give their ids. Nothing to do without a run label.
pub fn remove_run_containers(config: &EnvConfig) -> Result<Vec<String>, EnvError> {
    let Some(run) = &config.run_label else {
        return Ok(Vec::new());
    };
    let program = &config.docker.executable;
    let mut cmd = Command::new(program);
    cmd.args([
        "ps",
        "-a",
        "-q",
        "--no-trunc",
        "--filter",
        &format!("label={RUN_LABEL}={run}"),
    ]);
    let out = helper(cmd, program, "docker ps (the run's containers)", None)?;
    let ids: Vec<String> = String::from_utf8_lossy(&out)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    for id in &ids {
        remove_container(program, id)?;
    }
    Ok(ids)
}
