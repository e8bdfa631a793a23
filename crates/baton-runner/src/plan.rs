//! Expanding an experiment into task groups and cells.

use std::collections::BTreeSet;

use baton_types::{Cell, Direction, Task};
use sha2::{Digest, Sha256};

use crate::spec::ExperimentSpec;

/// What one (task, replicate) runs.
#[derive(Debug, Clone)]
pub struct TaskGroup {
    /// Index of the task in the run's task list.
    pub task: usize,
    /// Replicate index.
    pub replicate: u32,
    /// The seed shared by every episode of the group (paired comparisons).
    pub seed: u64,
    /// Anchor models, each run as `single(model)`.
    pub anchors: Vec<String>,
    /// Handoff cells that apply to this task (K leaves both models a turn), with K.
    pub handoffs: Vec<(Cell, usize)>,
    /// Single-turn baseline cells (`full(M)`, `concat(M)` for every anchor model and
    /// every baseline of the spec), one call each.
    pub baselines: Vec<Cell>,
}

impl TaskGroup {
    /// Every episode of the group as (cell, K): anchors, baselines, then handoffs.
    pub fn cells(&self) -> Vec<(Cell, Option<usize>)> {
        self.anchors
            .iter()
            .map(|m| (Cell::single(m), None))
            .chain(self.baselines.iter().map(|c| (c.clone(), None)))
            .chain(self.handoffs.iter().map(|(c, k)| (c.clone(), Some(*k))))
            .collect()
    }
}

/// Every group of a run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The groups, task-major.
    pub groups: Vec<TaskGroup>,
}

impl Plan {
    /// Expand `spec` over `tasks`.
    pub fn new(spec: &ExperimentSpec, tasks: &[Task]) -> Plan {
        let anchors: Vec<String> = spec
            .pairs
            .iter()
            .flat_map(|p| [p.low.clone(), p.high.clone()])
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut cells = Vec::new();
        for pair in &spec.pairs {
            for direction in &spec.directions {
                let (sender, receiver) = match direction {
                    Direction::Escalation => (&pair.low, &pair.high),
                    Direction::Downshift => (&pair.high, &pair.low),
                };
                for switch in &spec.switch_points {
                    for interface in &spec.interfaces {
                        let cell = Cell::handoff(sender, receiver, *switch, *interface);
                        if !cells.contains(&cell) {
                            cells.push(cell);
                        }
                    }
                }
            }
        }
        let baselines: Vec<Cell> = anchors
            .iter()
            .flat_map(|m| spec.baselines.iter().map(move |&b| Cell::baseline(m, b)))
            .collect();
        let mut groups = Vec::new();
        for (i, task) in tasks.iter().enumerate() {
            let n = task.n_turns();
            let mut handoffs: Vec<(Cell, usize)> = Vec::new();
            for cell in &cells {
                let Cell::Handoff { switch, .. } = cell else {
                    continue;
                };
                if let Some(k) = switch.k(n) {
                    handoffs.push((cell.clone(), k));
                }
            }
            for replicate in 0..spec.replicates {
                groups.push(TaskGroup {
                    task: i,
                    replicate,
                    seed: group_seed(spec.seed, &task.task_id, replicate),
                    anchors: anchors.clone(),
                    handoffs: handoffs.clone(),
                    baselines: baselines.clone(),
                });
            }
        }
        Plan { groups }
    }

    /// Episodes in the plan.
    pub fn episodes(&self) -> usize {
        self.groups
            .iter()
            .map(|g| g.anchors.len() + g.handoffs.len() + g.baselines.len())
            .sum()
    }

    /// Calls the plan makes when nothing is stored yet (forking counts each prefix once).
    pub fn calls(&self, tasks: &[Task], fork: bool) -> usize {
        self.groups
            .iter()
            .map(|g| {
                let n = tasks[g.task].n_turns();
                let handoff: usize = g
                    .handoffs
                    .iter()
                    .map(|(_, k)| if fork { n - k } else { n })
                    .sum();
                g.anchors.len() * n + handoff + g.baselines.len()
            })
            .sum()
    }
}

/// The seed of a (task, replicate): a hash of the base seed, the task id and the
/// replicate, kept below 2^63 so that it stores as a SQLite integer.
pub fn group_seed(base: u64, task_id: &str, replicate: u32) -> u64 {
    let mut h = Sha256::new();
    h.update(base.to_le_bytes());
    h.update(task_id.as_bytes());
    h.update(replicate.to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d[..8].try_into().expect("8 bytes")) >> 1
}
