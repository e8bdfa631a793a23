//! One experiment, whichever its study: read once from its file (or from a store),
//! its kind decided here and nowhere else, and run, estimated and reported through the
//! [`Study`] its kind names.
//!
//! [`Experiment`] is what a caller holds: the file's text, where relative paths are taken
//! from, how errors name it, and its study. A [`Study`] is one kind of experiment with
//! its parsed spec: the chat study (`chat`, [`crate::ExperimentSpec`] run by
//! [`crate::Runner`]) and the agent study (`agent`, [`crate::agent::AgentSpec`] run by
//! [`crate::agent::AgentRunner`]). Each says which options it has no use for, estimates
//! its cost, prepares a run (a [`Prepared`]: folder locked, inputs loaded, nothing
//! sent) and reports a store. A finished run is a [`Finished`]: its store, whether
//! episodes were left unfinished, and its summary as [`Note`]s. The binary goes through
//! these seams with no branch on the study; a new study is one more implementation.
//!
//! [`Kernel::open`] is the first step of every prepared run, shared by both studies: the
//! resume check and the folder's lock.
//!
//! The TOML is read here and only here: `dialect` (one dialect for both kinds, older
//! spellings normalised), `sim_table` (a `[models.NAME.sim]` table over its preset) and
//! [`kind_of`]; the spec types are read from the normalised table.

mod agent;
mod chat;
pub(crate) mod dialect;
pub(crate) mod sim_table;

use std::fmt::Display;
use std::path::{Path, PathBuf};

use baton_report::{Export, Plot};
use baton_types::{Cost, ExperimentKind};

use crate::changes::Changes;
use crate::lock::FolderLock;
use crate::part::Part;
use crate::{RunError, RunOptions, STORE_FILE};

pub use agent::AgentStudy;
pub use chat::ChatStudy;

/// An experiment read once from its text: its study, the text stored with its runs,
/// the folder its relative paths are taken from, and how errors name it.
pub struct Experiment {
    source_name: String,
    base_dir: PathBuf,
    text: String,
    study: Box<dyn Study>,
}

impl std::fmt::Debug for Experiment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Experiment")
            .field("source_name", &self.source_name)
            .field("kind", &self.study.kind())
            .field("name", &self.study.name())
            .finish()
    }
}

impl Experiment {
    /// Read the experiment file at `path` (whole, under the input bound); relative
    /// paths in it are taken from its folder.
    pub fn read(path: &Path) -> Result<Experiment, RunError> {
        let text = baton_types::input::read_text_bounded(
            path,
            baton_types::input::EXPERIMENT_LIMIT,
            "experiment file",
        )
        .map_err(|source| RunError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Experiment::parse(&path.display().to_string(), base, text)
    }

    /// The experiment written as `text`; `source_name` names it in errors, `base_dir`
    /// is where its relative paths are taken from.
    pub fn parse(
        source_name: &str,
        base_dir: impl Into<PathBuf>,
        text: impl Into<String>,
    ) -> Result<Experiment, RunError> {
        let text = text.into();
        let study: Box<dyn Study> = match kind_of(&text) {
            ExperimentKind::Agent => Box::new(AgentStudy::parse(source_name, &text, true)?),
            ExperimentKind::Chat => Box::new(ChatStudy::parse(source_name, &text)?),
        };
        Ok(Experiment {
            source_name: source_name.to_string(),
            base_dir: base_dir.into(),
            text,
            study,
        })
    }

    /// The experiment a store holds, read from the text stored with its run and of the
    /// kind the store records ([`RunError::NoResults`] when there is no store).
    pub fn stored(store_path: &Path) -> Result<Experiment, RunError> {
        if !store_path.exists() {
            return Err(RunError::NoResults(store_path.to_path_buf()));
        }
        let reader = baton_store::Reader::open(store_path)?;
        let meta = reader.experiment()?.meta;
        let source_name = format!("the experiment stored in {}", store_path.display());
        let study: Box<dyn Study> = match meta.kind {
            ExperimentKind::Agent => {
                Box::new(AgentStudy::parse(&source_name, &meta.spec_toml, false)?)
            }
            ExperimentKind::Chat => Box::new(ChatStudy::parse(&source_name, &meta.spec_toml)?),
        };
        Ok(Experiment {
            source_name,
            base_dir: store_path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_default(),
            text: meta.spec_toml,
            study,
        })
    }

    /// The experiment's study.
    pub fn study(&self) -> &dyn Study {
        self.study.as_ref()
    }

    /// The experiment's `name`.
    pub fn name(&self) -> &str {
        self.study.name()
    }

    /// How errors name the experiment (its path as given).
    pub fn source_name(&self) -> &str {
        &self.source_name
    }

    /// The spec hash its store records (`spec_sha256`).
    pub fn sha256(&self) -> String {
        self.study.sha256()
    }

    /// The results folder a run writes when none is given: `results/NAME`, or for a
    /// part `results/NAME-part-I-of-N`.
    pub fn default_out(&self, part: Option<Part>) -> PathBuf {
        match part {
            Some(part) => Path::new("results").join(part.folder_name(self.name())),
            None => Path::new("results").join(self.name()),
        }
    }

    /// Run options for this experiment writing to `out_dir`, with its text, its base
    /// folder and its name for errors; the rest at their defaults.
    pub fn options(&self, out_dir: impl Into<PathBuf>) -> RunOptions {
        let mut options = RunOptions::new(out_dir, self.base_dir.clone(), self.text.clone());
        options.source_name = self.source_name.clone();
        options
    }

    /// The upper bound of what a run with `options` would send and pay, sending nothing.
    pub fn dry_run(&self, options: &RunOptions) -> Result<Box<dyn Display + Send>, RunError> {
        self.study.check(options)?;
        self.study.dry_run(options)
    }

    /// Prepare a run: check the options against the study, lock the folder, load the
    /// inputs and open the store; nothing is sent.
    pub async fn prepare(&self, options: RunOptions) -> Result<Box<dyn Prepared>, RunError> {
        self.study.check(&options)?;
        self.study.prepare(options).await
    }

    /// The report of the store at `store_path` (this experiment's): `bootstrap` draws (0:
    /// none), seeded by `seed` or else the study's own seed.
    pub fn report(
        &self,
        store_path: &Path,
        bootstrap: usize,
        seed: Option<u64>,
    ) -> Result<ExperimentReport, RunError> {
        self.study.report(store_path, bootstrap, seed)
    }
}

/// The kind an experiment's text declares: `kind = "agent"` is the agent study,
/// anything else (no `kind`, `kind = "chat"`, text that is not TOML, which the chat
/// study then refuses with its line and column) the chat study.
pub fn kind_of(text: &str) -> ExperimentKind {
    let agent = toml::from_str::<toml::Table>(text)
        .ok()
        .and_then(|t| {
            t.get("kind")
                .and_then(|k| k.as_str().map(|k| k == crate::agent::AGENT_KIND))
        })
        .unwrap_or(false);
    if agent {
        ExperimentKind::Agent
    } else {
        ExperimentKind::Chat
    }
}

/// The `name` of the experiment file at `path` when it is one (a `.toml` file with a
/// top-level string `name`), so a command given an experiment file where it wants
/// results can say what to give it.
pub fn name_in_file(path: &Path) -> Option<String> {
    if !path.is_file() || path.extension().is_none_or(|e| e != "toml") {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let table: toml::Table = text.parse().ok()?;
    table.get("name")?.as_str().map(str::to_owned)
}

/// One kind of experiment with its parsed spec: what the chat and the agent study
/// each implement, and what the binary calls without knowing which it holds.
#[async_trait::async_trait]
pub trait Study: Send + Sync {
    /// The kind its store records.
    fn kind(&self) -> ExperimentKind;

    /// The experiment's `name`.
    fn name(&self) -> &str;

    /// The spec hash its store records.
    fn sha256(&self) -> String;

    /// Why a run of this study cannot start on this machine (the agent study's sandbox
    /// does not run here), found without a call; `None` when it can.
    fn unavailable(&self) -> Option<String>;

    /// Refuse an option this study has no use for (`--phase` for a chat experiment,
    /// `--batch` for an agent one), before anything is read or locked.
    fn check(&self, options: &RunOptions) -> Result<(), RunError>;

    /// The upper bound of a run's calls and cost, per cell, as the run would check and
    /// plan it; nothing is sent.
    fn dry_run(&self, options: &RunOptions) -> Result<Box<dyn Display + Send>, RunError>;

    /// Lock the folder ([`Kernel::open`]), load the inputs, build the models and open
    /// the store; nothing is sent.
    async fn prepare(&self, options: RunOptions) -> Result<Box<dyn Prepared>, RunError>;

    /// The report of a store this study wrote.
    fn report(
        &self,
        store_path: &Path,
        bootstrap: usize,
        seed: Option<u64>,
    ) -> Result<ExperimentReport, RunError>;
}

/// A run prepared by its study: what it will do is known, nothing is sent yet.
#[async_trait::async_trait]
pub trait Prepared: Send {
    /// This run's spending cap: `--max-cost`, or for a part its share of it.
    fn max_cost(&self) -> Option<Cost>;

    /// A part's `I/N` with every part's dry-run upper bound (part 1 first).
    fn part(&self) -> Option<(Part, &[Cost])>;

    /// What the run changes in the folder's stored experiment, when the study compares
    /// them (the chat study does) and the folder held one.
    fn changes(&self) -> Option<&Changes>;

    /// Run every episode, resuming what is stored.
    async fn run(self: Box<Self>) -> Result<Box<dyn Finished>, RunError>;
}

/// A finished (or stopped) run.
pub trait Finished: Send {
    /// The store it wrote.
    fn store_path(&self) -> &Path;

    /// Whether episodes were left incomplete or errored.
    fn unfinished(&self) -> bool;

    /// What to tell the user: the summary line and what to do about what is left.
    fn notes(&self) -> Vec<Note>;
}

/// One line of a run's summary for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The command's output (stdout).
    Out(String),
    /// A warning or what to do (stderr).
    Warn(String),
}

/// A study's report of a store: one document in every export format, and its plots.
pub struct ExperimentReport {
    /// The document.
    pub document: Box<dyn Export + Send + Sync>,
    /// Its plots as SVG (none when the study draws none).
    pub plots: Vec<Plot>,
}

/// The first step of every prepared run, whichever the study: a resume needs a store,
/// and the folder is locked for the run's lifetime.
pub struct Kernel {
    /// The store file in the results folder.
    pub store_path: PathBuf,
    lock: FolderLock,
}

impl Kernel {
    /// Check that a `--resume` has a store to resume, and lock the results folder (a
    /// second run on it is refused at once, [`RunError::Busy`]).
    pub fn open(options: &RunOptions) -> Result<Kernel, RunError> {
        let store_path = options.out_dir.join(STORE_FILE);
        if options.resume && !store_path.exists() {
            return Err(RunError::NothingToResume(store_path));
        }
        let lock = FolderLock::acquire(&options.out_dir)?;
        Ok(Kernel { store_path, lock })
    }

    /// The folder's lock, held until it is dropped.
    pub(crate) fn into_lock(self) -> FolderLock {
        self.lock
    }
}

/// The line a part prints before it starts: its share of the experiment's cap, and
/// the bounds it comes from. None for a whole run, or a part without a cap.
pub fn part_share(
    part: Option<(Part, &[Cost])>,
    share: Option<Cost>,
    total: Option<Cost>,
) -> Option<String> {
    let ((part, bounds), share, total) = (part?, share?, total?);
    let all = bounds.iter().fold(Cost::ZERO, |a, b| a + *b);
    let mine = bounds
        .get(part.index as usize - 1)
        .copied()
        .unwrap_or_default();
    Some(format!(
        "part {part}: spending cap {share} of the experiment's {total} (its upper bound {mine} of all {} parts' {all})",
        part.count
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT: &str = "name = \"c\"\ndataset = \"sample\"\n[models.lc]\nmodel = \"sim/lc\"\n[models.hc]\nmodel = \"sim/hc\"\n[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n";
    const AGENT: &str = "kind = \"agent\"\nname = \"a\"\ndataset = \"agent-sample\"\n[models.lc]\nmodel = \"sim/lc\"\n";

    #[test]
    fn the_text_names_its_study_and_the_study_its_kind() {
        let chat = Experiment::parse("c.toml", ".", CHAT).unwrap();
        assert_eq!(chat.study().kind(), ExperimentKind::Chat);
        assert_eq!(chat.name(), "c");
        assert_eq!(
            chat.sha256(),
            crate::ExperimentSpec::parse("x", CHAT).unwrap().sha256()
        );
        let agent = Experiment::parse("a.toml", ".", AGENT).unwrap();
        assert_eq!(agent.study().kind(), ExperimentKind::Agent);
        assert_eq!(agent.name(), "a");
        assert_eq!(
            agent.sha256(),
            crate::agent::AgentSpec::parse("x", AGENT).unwrap().sha256()
        );
        assert_eq!(kind_of("kind = \"chat\""), ExperimentKind::Chat);
        assert_eq!(kind_of("not = [toml"), ExperimentKind::Chat);
    }

    #[test]
    fn options_carry_the_text_its_folder_and_its_name() {
        let e = Experiment::parse("dir/c.toml", "dir", CHAT).unwrap();
        let o = e.options("out");
        assert_eq!(o.spec_text, CHAT);
        assert_eq!(o.base_dir, PathBuf::from("dir"));
        assert_eq!(o.source_name, "dir/c.toml");
        assert_eq!(o.out_dir, PathBuf::from("out"));
        assert_eq!(e.default_out(None), PathBuf::from("results/c"));
        let part = Part { index: 2, count: 3 };
        assert_eq!(
            e.default_out(Some(part)),
            Path::new("results").join(part.folder_name("c"))
        );
    }

    #[test]
    fn each_study_refuses_the_options_it_has_no_use_for() {
        let chat = Experiment::parse("c.toml", ".", CHAT).unwrap();
        let mut o = chat.options("out");
        o.phase = Some(crate::PartPhase::Anchors);
        assert_eq!(
            chat.study().check(&o).unwrap_err().to_string(),
            "--phase: a chat experiment has no barrier; run its parts without --phase"
        );
        let agent = Experiment::parse("a.toml", ".", AGENT).unwrap();
        let mut o = agent.options("out");
        o.batch = true;
        assert_eq!(
            agent.study().check(&o).unwrap_err().to_string(),
            format!("--batch: {}", crate::agent::BATCH_REFUSED)
        );
        let mut o = agent.options("out");
        o.independent = true;
        assert!(
            agent
                .study()
                .check(&o)
                .unwrap_err()
                .to_string()
                .starts_with("--independent is for handoff experiments"),
        );
    }

    #[test]
    fn a_resume_without_a_store_is_refused_before_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = RunOptions::new(dir.path().join("out"), ".", CHAT);
        o.resume = true;
        assert!(matches!(
            Kernel::open(&o),
            Err(RunError::NothingToResume(p)) if p == dir.path().join("out").join(STORE_FILE)
        ));
        o.resume = false;
        let held = Kernel::open(&o).unwrap();
        assert_eq!(held.store_path, dir.path().join("out").join(STORE_FILE));
        assert!(matches!(Kernel::open(&o), Err(RunError::Busy { .. })));
    }

    #[test]
    fn an_experiment_file_given_as_results_is_named_as_one() {
        // See: issue 35 (`baton report EXPERIMENT.toml` said "move it away")
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("haiku-opus.toml");
        std::fs::write(&file, "name = \"haiku-opus\"\ndataset = \"sample\"\n").unwrap();
        assert_eq!(name_in_file(&file).as_deref(), Some("haiku-opus"));
        // a store, a folder, another file or TOML without a name are left to the store
        let other = dir.path().join("results.sqlite");
        std::fs::write(&other, "name = \"x\"").unwrap();
        assert_eq!(name_in_file(&other), None);
        assert_eq!(name_in_file(dir.path()), None);
        let nameless = dir.path().join("prices.toml");
        std::fs::write(&nameless, "[models]\n").unwrap();
        assert_eq!(name_in_file(&nameless), None);
    }

    #[test]
    fn a_file_the_run_cannot_read_keeps_its_cause() {
        use std::error::Error;
        let dir = tempfile::tempdir().unwrap();
        // agent templates that are not there: the key and the file, then the agent's error
        let text = format!("{AGENT}[agent]\nagent_templates = \"missing.yaml\"\n");
        let agent = Experiment::parse("a.toml", dir.path(), text).unwrap();
        let err = agent
            .dry_run(&agent.options(dir.path().join("out")))
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "experiment a.toml: agent_templates = \"missing.yaml\""
        );
        let RunError::AgentInput { source, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(
            err.source().map(|s| s.to_string()),
            Some(source.to_string())
        );
        // an interface text that is not there: the file, then the operating system's reason
        let err = crate::InterfaceTemplates::from_dir(dir.path()).unwrap_err();
        let RunError::ReadFile { path, source } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(path, &dir.path().join("interfaces").join("disclosure.txt"));
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(err.to_string(), format!("cannot read {}", path.display()));
        // a folder of the other kind
        let err = RunError::OtherKind {
            store: PathBuf::from("out/results.sqlite"),
            stored: ExperimentKind::Agent,
            given: ExperimentKind::Chat,
            hint: "; use another --out folder",
        };
        assert_eq!(
            err.to_string(),
            "out/results.sqlite holds an agent experiment, not a chat one; use another --out folder"
        );
    }
}
