//! Starting a task's environment for an agent run: the repository copied in, and made a
//! git repository with one baseline commit so `git diff` shows the agent's change.

use baton_env::{EnvConfig, Environment, Exec, Setup};

use crate::agent::run::GIT_BASELINE;
use crate::error::AgentError;
use crate::task::{AgentTask, Repository};

/// Start `task`'s environment under `config` and commit its unchanged tree as the git
/// baseline (when it is not a git repository already, as the bundled tasks are not).
pub fn start_task_env(
    task: &AgentTask,
    config: &EnvConfig,
) -> Result<Box<dyn Environment>, AgentError> {
    let env_err = |source| AgentError::Env {
        task_id: task.id.clone(),
        source,
    };
    let staging = tempfile::tempdir()
        .map_err(|e| AgentError::io(std::env::temp_dir(), "create a temporary folder", e))?;
    let mut setup = match &task.repository {
        Repository::Image(image) => Setup::image(image.clone()),
        repo => Setup::tree(repo.materialize(staging.path())?),
    };
    setup.workdir = task.workdir.clone();
    let mut env = baton_env::start(config, &setup).map_err(env_err)?;
    let out = env.exec(&Exec::new(GIT_BASELINE)).map_err(env_err)?;
    if !out.status.success() {
        return Err(AgentError::invalid(
            &task.origin,
            Some(&task.id),
            None,
            format!(
                "could not commit the git baseline ({}): {}",
                out.status,
                out.output.last(400)
            ),
        ));
    }
    Ok(env)
}
