//! The trap bench's scenarios as the simulated agent's document tasks
//! ([`baton_agent::DocumentTask`]): per trap, the commands of its two branches (bundled in
//! `traps/<scenario>/sim.toml`, the probe tests' scripted agents split by trap), and the
//! reader that tells the agent a document's stance on each trap.
//!
//! The reader is the linter's own: the trap bench's negation-aware coverage
//! ([`bench::coverage`]) of the document the agent `cat`-ed. A trap it marks covered is one
//! the document warns about ([`Stance::Warns`]); contradicted, one it urges
//! ([`Stance::Urges`]); missing, silence. So offline, `good` (which covers every trap)
//! keeps the agent out, `poisoned` (which contradicts every trap) walks it into each, and
//! `bad` and `none` leave it to its skill and to the base rate. What the agent did is then
//! judged by the probes on the tree, as for any agent.

use std::sync::Arc;

use baton_agent::{DocumentReader, DocumentTask, SimTrap, Stance};
use serde::Deserialize;

use crate::bench::{self, Coverage, Trap};
use crate::document::Document;
use crate::error::Error;
use crate::traps::{DOCUMENT_PATH, TrapTask};

/// Each scenario's bundled branches.
const SIM: [(&str, &str); 3] = [
    (
        "reverted-feature",
        include_str!("../../traps/reverted-feature/sim.toml"),
    ),
    (
        "failed-dependency-upgrade",
        include_str!("../../traps/failed-dependency-upgrade/sim.toml"),
    ),
    (
        "descoped-admin-export",
        include_str!("../../traps/descoped-admin-export/sim.toml"),
    ),
];

/// A scenario's bundled `sim.toml`.
pub(crate) fn sim_file(name: &str) -> Option<&'static str> {
    SIM.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SimFile {
    trap: Vec<SimTrapSpec>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SimTrapSpec {
    id: String,
    fall_in: Vec<String>,
    avoid: Vec<String>,
}

/// Reads a document's stance on each trap with the trap bench's coverage.
#[derive(Debug)]
pub struct CoverageReader {
    traps: Vec<Trap>,
}

impl CoverageReader {
    /// A reader of `traps`, in the order its stances are given.
    pub fn new(traps: Vec<Trap>) -> Self {
        CoverageReader { traps }
    }
}

impl DocumentReader for CoverageReader {
    fn stances(&self, document: &str) -> Vec<Stance> {
        bench::coverage(&Document::parse(document), &self.traps)
            .into_iter()
            .map(|t| match t.coverage {
                Coverage::Covered => Stance::Warns,
                Coverage::Contradicted => Stance::Urges,
                Coverage::Missing => Stance::Silent,
            })
            .collect()
    }
}

impl TrapTask {
    /// The scenario as the simulated agent's document task, falling into a trap with chance
    /// `base_rate` when it has no document. Its traps come in `sim.toml`'s order, which
    /// must name each of the scenario's traps once.
    pub fn document_task(&self, base_rate: f64) -> Result<DocumentTask, Error> {
        let bad = |message: String| Error::TrapScenario {
            scenario: self.name().to_string(),
            message,
        };
        let text = SIM
            .iter()
            .find(|(n, _)| *n == self.name())
            .map(|(_, t)| *t)
            .ok_or_else(|| bad("no bundled sim.toml".into()))?;
        let file: SimFile =
            toml::from_str(text).map_err(|e| bad(format!("sim.toml: {}", e.message())))?;
        let mut traps = Vec::new();
        let mut sim = Vec::new();
        for t in file.trap {
            let trap = self
                .scenario
                .traps
                .iter()
                .find(|x| x.id == t.id)
                .ok_or_else(|| {
                    bad(format!(
                        "sim.toml names no trap of the scenario: {:?}",
                        t.id
                    ))
                })?;
            traps.push(trap.clone());
            sim.push(SimTrap {
                id: t.id,
                fall_in: t.fall_in,
                avoid: t.avoid,
            });
        }
        if traps.len() != self.scenario.traps.len() {
            return Err(bad(format!(
                "sim.toml gives {} traps, the scenario has {}",
                traps.len(),
                self.scenario.traps.len()
            )));
        }
        Ok(DocumentTask {
            id: self.name().to_string(),
            instruction: self.spec.task.trim().to_string(),
            document: DOCUMENT_PATH.to_string(),
            traps: sim,
            base_rate,
            reader: Arc::new(CoverageReader::new(traps)),
        })
    }
}
