//! The chat study: an [`ExperimentSpec`] run by [`Runner`].

use std::fmt::Display;
use std::path::Path;

use baton_report::BootstrapConfig;
use baton_types::{Cost, EpisodeStatus, ExperimentKind};

use super::{ExperimentReport, Finished, Note, Prepared, Study};
use crate::changes::Changes;
use crate::part::Part;
use crate::{ExperimentSpec, RunError, RunOptions, RunSummary, Runner};

/// The chat study: multi-turn conversations handed from one model to another.
#[derive(Debug, Clone)]
pub struct ChatStudy {
    spec: ExperimentSpec,
}

impl ChatStudy {
    /// Parse and check a chat experiment's text; `source` names it in errors.
    pub fn parse(source: &str, text: &str) -> Result<ChatStudy, RunError> {
        Ok(ChatStudy {
            spec: ExperimentSpec::parse(source, text)?,
        })
    }

    /// The parsed spec.
    pub fn spec(&self) -> &ExperimentSpec {
        &self.spec
    }
}

#[async_trait::async_trait]
impl Study for ChatStudy {
    fn kind(&self) -> ExperimentKind {
        ExperimentKind::Chat
    }

    fn name(&self) -> &str {
        &self.spec.name
    }

    fn sha256(&self) -> String {
        self.spec.sha256()
    }

    fn unavailable(&self) -> Option<String> {
        None
    }

    fn check(&self, options: &RunOptions) -> Result<(), RunError> {
        if options.phase.is_some() {
            return Err(RunError::Flag(
                "--phase: a chat experiment has no barrier; run its parts without --phase".into(),
            ));
        }
        if options.thresholds.is_some() {
            return Err(RunError::Flag(
                "--thresholds: a chat experiment has no thresholds; run its parts without it"
                    .into(),
            ));
        }
        Ok(())
    }

    fn dry_run(&self, options: &RunOptions) -> Result<Box<dyn Display + Send>, RunError> {
        Ok(Box::new(crate::dry_run(self.spec.clone(), options)?))
    }

    async fn prepare(&self, options: RunOptions) -> Result<Box<dyn Prepared>, RunError> {
        Ok(Box::new(Runner::prepare(self.spec.clone(), options).await?))
    }

    fn report(
        &self,
        store_path: &Path,
        bootstrap: usize,
        seed: Option<u64>,
    ) -> Result<ExperimentReport, RunError> {
        let bootstrap = (bootstrap > 0).then_some(BootstrapConfig {
            replicates: bootstrap,
            seed: seed.unwrap_or(0),
        });
        let report = baton_report::build(&crate::report_input(store_path, bootstrap)?);
        Ok(ExperimentReport {
            plots: report.plots(),
            document: Box::new(report),
        })
    }
}

#[async_trait::async_trait]
impl Prepared for Runner {
    fn max_cost(&self) -> Option<Cost> {
        Runner::max_cost(self)
    }

    fn part(&self) -> Option<(Part, &[Cost])> {
        Runner::part(self)
    }

    fn changes(&self) -> Option<&Changes> {
        Some(Runner::changes(self)).filter(|c| c.stored)
    }

    async fn run(self: Box<Self>) -> Result<Box<dyn Finished>, RunError> {
        Ok(Box::new(Runner::run(*self).await?))
    }
}

impl Finished for RunSummary {
    fn store_path(&self) -> &Path {
        &self.store_path
    }

    fn unfinished(&self) -> bool {
        self.count(EpisodeStatus::Incomplete) + self.count(EpisodeStatus::Errored) > 0
    }

    fn notes(&self) -> Vec<Note> {
        let s = self;
        let mut notes = Vec::new();
        if s.count(EpisodeStatus::Incomplete) > 0 && s.causes.is_empty() {
            notes.push(Note::Warn(
                "some episodes are incomplete; run the same command again to finish them".into(),
            ));
        }
        let running = baton_store::Reader::open(&s.store_path)
            .and_then(|r| r.batches())
            .map(|b| b.iter().filter(|b| b.finished_at.is_none()).count())
            .unwrap_or(0);
        if running > 0 {
            notes.push(Note::Warn(format!(
                "{running} provider batch(es) are not collected yet (still running, or given up on this run: past batch_deadline, refused with 401/403/404 or redirected; the episodes' reasons say which): they are recorded in {}, so run the same command with --resume to collect their replies, and nothing is submitted again",
                s.store_path.display()
            )));
        }
        // statuses by name, as the line has always listed them
        let mut counts: Vec<_> = s.episodes.iter().collect();
        counts.sort_by_key(|(status, _)| status.as_str());
        let statuses: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
        notes.push(Note::Out(format!(
            "episodes: {}; calls: {} new, {} stored; spent now {}, paid in total {}, attributed {}, saved by forking {}; billed attempts {} ({} unusable); store: {}",
            statuses.join(", "),
            s.calls_new,
            s.calls_total,
            s.spent_now,
            s.paid_total,
            s.attributed_total,
            s.saved_by_forking,
            s.spend.billed_attempts,
            s.spend.unusable_attempts,
            s.store_path.display()
        )));
        if s.spend.batched_attempts > 0 {
            notes.push(Note::Out(format!(
                "batching: {} attempts at batch rates saved {} against direct rates (forking saved {})",
                s.spend.batched_attempts, s.spend.saved_by_batching, s.saved_by_forking
            )));
        }
        if let Some(note) = s.spend.note() {
            notes.push(Note::Warn(note));
        }
        diagnosis(s, &mut notes);
        notes
    }
}

/// Why episodes were left unfinished, grouped by cause with what to do, and last the
/// models that were stopped because none of their calls could succeed.
fn diagnosis(s: &RunSummary, notes: &mut Vec<Note>) {
    if !s.causes.is_empty() {
        notes.push(Note::Warn(
            "unfinished episodes by cause (episodes, cause; what to do):".into(),
        ));
        for (cause, n) in &s.causes {
            // a cause that names a stopped model (its calls, or an anchor of it whose
            // prefix a handoff waits for) comes from that model's dead end
            let stopped = s.dead_ends.iter().any(|(name, _)| {
                cause.starts_with(&format!("model \"{name}\""))
                    || cause.contains(&format!("single({name})"))
            });
            let fix = if stopped {
                "see the model's line below"
            } else {
                fix_for(cause)
            };
            notes.push(Note::Warn(format!("  {n:>6}  {cause}; {fix}")));
        }
    }
    for (_, why) in &s.dead_ends {
        notes.push(Note::Warn(format!("stopped: {why}")));
    }
}

/// What to do about an unfinished episode's cause.
fn fix_for(cause: &str) -> &'static str {
    if cause.contains("no further call of it was sent this run") {
        "see the model's line below"
    } else if cause.contains("spending cap") {
        "raise --max-cost (the experiment's total) and run the same command again"
    } else if cause.contains("the run was stopped") {
        "run the same command again to finish"
    } else if cause.contains("free space and resume") {
        "free disk space, then run the same command again"
    } else {
        "run the same command again to retry; `baton view` shows the episodes"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_says_its_line_and_what_to_do_about_each_cause() {
        let mut s = RunSummary {
            store_path: "/nowhere/results.sqlite".into(),
            calls_new: 3,
            calls_total: 5,
            causes: vec![
                ("the spending cap was reached".into(), 2),
                ("model \"hc\" failed".into(), 1),
            ],
            dead_ends: vec![("hc".into(), "hc: 401".into())],
            ..RunSummary::default()
        };
        s.episodes.insert(EpisodeStatus::Incomplete, 3);
        s.episodes.insert(EpisodeStatus::Scored, 1);
        assert!(s.unfinished());
        let notes = s.notes();
        assert_eq!(
            notes[0],
            Note::Out(format!(
                "episodes: 3 incomplete, 1 scored; calls: 3 new, 5 stored; spent now {z}, paid in total {z}, attributed {z}, saved by forking {z}; billed attempts 0 (0 unusable); store: /nowhere/results.sqlite",
                z = Cost::ZERO
            ))
        );
        assert_eq!(
            &notes[1..],
            &[
                Note::Warn("unfinished episodes by cause (episodes, cause; what to do):".into()),
                Note::Warn("       2  the spending cap was reached; raise --max-cost (the experiment's total) and run the same command again".into()),
                Note::Warn("       1  model \"hc\" failed; see the model's line below".into()),
                Note::Warn("stopped: hc: 401".into()),
            ]
        );
    }
}
