//! Handover's trap bench as agent tasks: each scenario is a repository to build, a task
//! prompt, a document under test per condition, and the `detect_fell_in` probes that say,
//! on the tree an agent left, which traps it fell into.
//!
//! [`mod@crate::bench`] scores only a document's text. Here a scenario is something an agent
//! works in:
//!
//! - **The repository** ([`TrapTask::build_repo`]). Handover ships one (`reverted-feature`'s
//!   `repo/`, committed fresh as its README says); baton writes the other two from the
//!   scenarios' premises and traps, as histories replayed into real git repositories
//!   ([`history`]; bundled in `traps/<scenario>/scenario.toml`) whose final state invites each
//!   trap and whose log tells the story (the failed upgrade and its revert, the deleted shim
//!   and its restore, the reverted client cache). Authors and dates are fixed, so commit ids
//!   are the same on every machine (the tests pin each HEAD).
//! - **The document and the prompt** ([`documents`]): `good`, `bad`, `poisoned`, `none`; the
//!   document is placed as `HANDOVER.md`; the prompt is the scenario's neutral task.
//! - **The probes** ([`probe`]): each trap's `detect_fell_in`, run in `baton-env`'s sandbox
//!   on the final tree; its standard output, not blank, means the agent fell in.
//! - **The report's statistics** ([`stats`]): Wilson intervals and Fisher's exact test.
//! - **The bench run by agents** ([`experiment`]): an experiment file (scenarios ×
//!   conditions × models × trials), each trial an agent episode through `baton-agent`'s
//!   loop in the sandbox, probed, recorded in a resumable `results.json` (each trial with
//!   its [`identity`], so a changed setting runs it again; one run per folder, [`lock`]); the simulated
//!   agent's document policy offline ([`mod@sim`]); the report ([`report`]: Markdown, JSON,
//!   HTML).
//!
//! # For the agent runner
//!
//! [`tasks`] reads the three scenarios from the Handover checkout. A trial is then:
//! [`TrapTask::prepare`] (build the repository into a fresh folder, place the condition's
//! document, give the prompt); start the sandbox on that folder (`baton_env::Setup::tree`)
//! with [`TrapTask::sandbox_env`] (a git identity, so the agent can commit); run the agent
//! with the prepared prompt; then [`TrapTask::probe`] on the same environment (or
//! [`probe::probe_tree`] on a copy of its final tree), one [`ProbeResult`] per trap. Lint
//! each condition's document once with [`TrapTask::lint`]; a cell's rate and its contrast
//! with `none` are [`stats::cell_rate`] and [`stats::contrast`].
//!
//! # Tools the probes need
//!
//! The two repositories written here need only `grep`, `test` and `git` for their probes.
//! `reverted-feature`'s third probe runs `npm test`: without Node.js in the sandbox the
//! `npm test` half finds nothing (its "command not found" goes to the pipe's `grep`, which
//! does not match) and the probe falls back to its other half (the migration never applied),
//! so it still answers, but cannot see a test suite the agent broke (tested with `node` and
//! `npm` hidden in the sandbox: every scripted agent's values are the same).

pub mod documents;
pub mod experiment;
pub mod history;
pub mod identity;
pub mod lock;
pub mod probe;
pub mod report;
pub mod sim;
pub mod stats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use documents::{Condition, DOCUMENT_PATH, DocumentLint};
pub use history::ScenarioSpec;
pub use probe::{Outcome, ProbeOptions, ProbeResult};

use crate::bench::{self, Scenario};
use crate::error::Error;
use crate::structure::Rubric;

/// The scenarios baton runs, in report order, with their bundled files.
const BUNDLED: [(&str, &str, &str); 3] = [
    (
        "reverted-feature",
        include_str!("../../traps/reverted-feature/scenario.toml"),
        include_str!("../../traps/reverted-feature/poisoned.handover.md"),
    ),
    (
        "failed-dependency-upgrade",
        include_str!("../../traps/failed-dependency-upgrade/scenario.toml"),
        include_str!("../../traps/failed-dependency-upgrade/poisoned.handover.md"),
    ),
    (
        "descoped-admin-export",
        include_str!("../../traps/descoped-admin-export/scenario.toml"),
        include_str!("../../traps/descoped-admin-export/poisoned.handover.md"),
    ),
];

/// A scenario's bundled `scenario.toml` (its task prompt and repository history).
pub(crate) fn bundled_spec(name: &str) -> Option<&'static str> {
    BUNDLED
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, spec, _)| *spec)
}

/// The names of the scenarios baton runs, in report order.
pub fn scenario_names() -> [&'static str; 3] {
    BUNDLED.map(|(name, _, _)| name)
}

/// One scenario as an agent task.
#[derive(Debug, Clone)]
pub struct TrapTask {
    /// The scenario as Handover defines it (traps, probes, its folder in the checkout).
    pub scenario: Scenario,
    /// baton's part: the task prompt and the repository's history.
    pub spec: ScenarioSpec,
    /// baton's `poisoned` document.
    pub poisoned: String,
}

/// A trial ready for its agent ([`TrapTask::prepare`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// The working tree to start the sandbox on.
    pub repo: PathBuf,
    /// Its HEAD, the scenario's last commit (the agent's own commits come after it).
    pub head: String,
    /// The task prompt.
    pub prompt: String,
    /// The condition whose document was placed.
    pub condition: Condition,
}

/// Every scenario baton runs, from the Handover checkout's `bench/scenarios` folder
/// (`scenarios`); a scenario missing there is an error naming it.
pub fn tasks(scenarios: &Path) -> Result<Vec<TrapTask>, Error> {
    BUNDLED
        .iter()
        .map(|(name, spec, poisoned)| {
            let dir = scenarios.join(name);
            if !dir.join("traps.json").is_file() {
                return Err(Error::TrapScenario {
                    scenario: (*name).to_string(),
                    message: format!("no traps.json in {}", dir.display()),
                });
            }
            let scenario = bench::load(&dir)?.remove(0);
            if let Some(trap) = scenario.traps.iter().find(|t| t.detect.is_none()) {
                return Err(Error::TrapScenario {
                    scenario: (*name).to_string(),
                    message: format!("trap \"{}\" has no detect_fell_in probe", trap.id),
                });
            }
            Ok(TrapTask {
                scenario,
                spec: ScenarioSpec::parse(name, spec)?,
                poisoned: (*poisoned).to_string(),
            })
        })
        .collect()
}

impl TrapTask {
    /// The scenario's name.
    pub fn name(&self) -> &str {
        &self.scenario.name
    }

    /// Build the scenario's repository in `dest` (empty or missing); returns HEAD's commit id.
    pub fn build_repo(&self, dest: &Path) -> Result<String, Error> {
        let fixture = self.scenario.dir.join("repo");
        history::build(
            self.name(),
            &self.spec,
            fixture.is_dir().then_some(fixture.as_path()),
            dest,
        )
    }

    /// The task prompt for `condition`.
    pub fn prompt(&self, condition: Condition) -> String {
        documents::prompt(&self.spec.task, condition)
    }

    /// The document under test for `condition` (`None` for [`Condition::None`]); Handover's
    /// are read from its checkout now.
    pub fn document(&self, condition: Condition) -> Result<Option<String>, Error> {
        let read = |file: &str| -> Result<Option<String>, Error> {
            let path: PathBuf = self.scenario.dir.join(file);
            std::fs::read_to_string(&path)
                .map(Some)
                .map_err(|source| Error::Read { path, source })
        };
        match condition {
            Condition::Good => read("good.handover.md"),
            Condition::Bad => read("bad.handover.md"),
            Condition::Poisoned => Ok(Some(self.poisoned.clone())),
            Condition::None => Ok(None),
        }
    }

    /// Place `condition`'s document in the built repository `repo` (nothing for `none`).
    pub fn place(&self, repo: &Path, condition: Condition) -> Result<(), Error> {
        match self.document(condition)? {
            Some(text) => documents::place(repo, &text),
            None => Ok(()),
        }
    }

    /// `condition`'s document linted with `rubric` (`None` for [`Condition::None`]).
    pub fn lint(
        &self,
        condition: Condition,
        rubric: Rubric,
    ) -> Result<Option<DocumentLint>, Error> {
        Ok(self
            .document(condition)?
            .map(|text| documents::lint(&text, &self.scenario.traps, rubric)))
    }

    /// Everything a trial needs before the agent starts: the repository built in `dest`,
    /// `condition`'s document placed in it, and the prompt.
    pub fn prepare(&self, condition: Condition, dest: &Path) -> Result<Prepared, Error> {
        let head = self.build_repo(dest)?;
        self.place(dest, condition)?;
        Ok(Prepared {
            repo: dest.to_path_buf(),
            head,
            prompt: self.prompt(condition),
            condition,
        })
    }

    /// Variables for the sandbox the agent works in: a git identity, so its commits work
    /// without a configuration file (the sandbox's `HOME` is empty).
    pub fn sandbox_env() -> BTreeMap<String, String> {
        [
            ("GIT_AUTHOR_NAME", "agent"),
            ("GIT_AUTHOR_EMAIL", "agent@baton.invalid"),
            ("GIT_COMMITTER_NAME", "agent"),
            ("GIT_COMMITTER_EMAIL", "agent@baton.invalid"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// Run every trap's probe in `env` (see [`probe::probe_env`]).
    pub fn probe(
        &self,
        env: &mut dyn baton_env::Environment,
        opts: &ProbeOptions,
    ) -> Result<Vec<ProbeResult>, Error> {
        probe::probe_env(self.name(), env, &self.scenario.traps, opts)
    }
}
