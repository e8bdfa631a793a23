//! The agent study: an [`AgentSpec`] run by [`AgentRunner`].

use std::fmt::Display;
use std::path::Path;

use baton_report::AgentExperimentReport;
use baton_types::{Cost, EpisodeStatus, ExperimentKind};

use super::{ExperimentReport, Finished, Note, Prepared, Study};
use crate::agent::{AgentRunSummary, AgentRunner, AgentSpec, BATCH_REFUSED};
use crate::changes::Changes;
use crate::part::Part;
use crate::{RunError, RunOptions};

/// The agent study: coding agents working tasks in the sandbox, and with `[handoff]`
/// the handoff study between them.
#[derive(Debug, Clone)]
pub struct AgentStudy {
    spec: AgentSpec,
}

impl AgentStudy {
    /// Parse and check an agent experiment's text; `source` names it in errors. With
    /// `warn`, each older spelling it uses is logged (a file being read), else not (a
    /// stored text, read for its report).
    pub fn parse(source: &str, text: &str, warn: bool) -> Result<AgentStudy, RunError> {
        let (spec, warnings) = AgentSpec::read(source, text)?;
        if warn {
            for w in warnings {
                tracing::warn!("{source}: {w}");
            }
        }
        Ok(AgentStudy { spec })
    }

    /// The parsed spec.
    pub fn spec(&self) -> &AgentSpec {
        &self.spec
    }
}

#[async_trait::async_trait]
impl Study for AgentStudy {
    fn kind(&self) -> ExperimentKind {
        ExperimentKind::Agent
    }

    fn name(&self) -> &str {
        &self.spec.name
    }

    fn sha256(&self) -> String {
        self.spec.sha256()
    }

    fn unavailable(&self) -> Option<String> {
        let check = baton_env::check(&self.spec.environment);
        if check.passed() {
            return None;
        }
        let why: Vec<String> = check
            .failures()
            .map(|f| {
                format!(
                    "{}: {} ({})",
                    f.name,
                    f.detail,
                    f.fix.clone().unwrap_or_default()
                )
            })
            .collect();
        Some(format!(
            "the sandbox does not run here: {}; `baton env check` says more",
            why.join("; ")
        ))
    }

    fn check(&self, options: &RunOptions) -> Result<(), RunError> {
        if options.batch {
            return Err(RunError::Flag(format!("--batch: {BATCH_REFUSED}")));
        }
        if options.independent && self.spec.handoff.is_none() {
            return Err(RunError::Flag(
                "--independent is for handoff experiments: this agent experiment has no [handoff] table, so no prefixes to fork".into(),
            ));
        }
        Ok(())
    }

    fn dry_run(&self, options: &RunOptions) -> Result<Box<dyn Display + Send>, RunError> {
        Ok(Box::new(crate::agent::dry_run::dry_run(
            &self.spec, options,
        )?))
    }

    async fn prepare(&self, options: RunOptions) -> Result<Box<dyn Prepared>, RunError> {
        Ok(Box::new(
            AgentRunner::prepare(self.spec.clone(), options).await?,
        ))
    }

    fn report(
        &self,
        store_path: &Path,
        bootstrap: usize,
        seed: Option<u64>,
    ) -> Result<ExperimentReport, RunError> {
        let agent = baton_report::build_agent(&crate::agent::agent_report_input(store_path)?);
        let study = match crate::agent::study_input(store_path, bootstrap)? {
            Some(mut input) => {
                input.bootstrap = bootstrap;
                input.seed = seed.unwrap_or(input.seed);
                Some(baton_report::build_study(&input)?)
            }
            None => None,
        };
        let plots = study.as_ref().map(|s| s.plots()).unwrap_or_default();
        Ok(ExperimentReport {
            document: Box::new(AgentExperimentReport { agent, study }),
            plots,
        })
    }
}

#[async_trait::async_trait]
impl Prepared for AgentRunner {
    fn max_cost(&self) -> Option<Cost> {
        AgentRunner::max_cost(self)
    }

    fn part(&self) -> Option<(Part, &[Cost])> {
        AgentRunner::part(self)
    }

    fn changes(&self) -> Option<&Changes> {
        AgentRunner::changes(self)
    }

    async fn run(self: Box<Self>) -> Result<Box<dyn Finished>, RunError> {
        Ok(Box::new(AgentRunner::run(*self).await?))
    }
}

impl Finished for AgentRunSummary {
    fn store_path(&self) -> &Path {
        &self.store_path
    }

    fn unfinished(&self) -> bool {
        self.count(EpisodeStatus::Incomplete) + self.count(EpisodeStatus::Errored) > 0
    }

    fn notes(&self) -> Vec<Note> {
        let s = self;
        let mut notes = Vec::new();
        if s.count(EpisodeStatus::Incomplete) > 0 {
            notes.push(Note::Warn(
                "some episodes are incomplete; run the same command again to finish them".into(),
            ));
        }
        let statuses: Vec<String> = s.episodes.iter().map(|(k, v)| format!("{v} {k}")).collect();
        let exits: Vec<String> = s.exits.iter().map(|(k, v)| format!("{v} {k}")).collect();
        notes.push(Note::Out(format!(
            "agent episodes: {} (exits: {}; anchors ended with error: {}); resolved {}; calls: {} new, {} stored; spent now {}, paid in total {}; billed attempts {} ({} unusable); snapshots: {} bytes; store: {}",
            statuses.join(", "),
            exits.join(", "),
            s.error_anchors,
            s.resolved,
            s.calls_new,
            s.calls_total,
            s.spent_now,
            s.spend.paid,
            s.spend.billed_attempts,
            s.spend.unusable_attempts,
            s.snapshot_store_bytes,
            s.store_path.display()
        )));
        for (cell, n) in &s.summary_retries {
            // the handoff call's reply: handover's Handover document, the compactions' summary
            let what = if cell.ends_with(", handover)") {
                "document"
            } else {
                "summary"
            };
            notes.push(Note::Out(format!(
                "{cell}: {n} {what} repl{} made a tool call or had no text (paid, stored, retried)",
                if *n == 1 { "y" } else { "ies" }
            )));
        }
        if let Some(note) = s.spend.note() {
            notes.push(Note::Warn(note));
        }
        // last, as in the chat study: the models stopped early, with the fix
        for (_, why) in &s.dead_ends {
            notes.push(Note::Warn(format!("stopped: {why}")));
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_says_its_line_and_each_cells_summary_retries() {
        let mut s = AgentRunSummary {
            store_path: "/nowhere/results.sqlite".into(),
            resolved: 2,
            calls_new: 7,
            calls_total: 9,
            snapshot_store_bytes: 100,
            ..AgentRunSummary::default()
        };
        s.episodes.insert(EpisodeStatus::Scored, 3);
        s.exits.insert("submitted".into(), 3);
        s.summary_retries.insert("lc->hc@early/raw".into(), 1);
        assert!(!s.unfinished());
        let z = Cost::ZERO;
        assert_eq!(
            s.notes(),
            vec![
                Note::Out(format!(
                    "agent episodes: 3 scored (exits: 3 submitted; anchors ended with error: 0); resolved 2; calls: 7 new, 9 stored; spent now {z}, paid in total {z}; billed attempts 0 (0 unusable); snapshots: 100 bytes; store: /nowhere/results.sqlite"
                )),
                Note::Out(
                    "lc->hc@early/raw: 1 summary reply made a tool call or had no text (paid, stored, retried)".into()
                ),
            ]
        );
    }
}
