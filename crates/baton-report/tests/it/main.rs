//! Integration tests for baton-report: hand-computed metrics, matching, honesty
//! rules, bootstrap and the exporters.

mod bootstrap;
mod exports;
mod handover;
mod html;
mod metrics;
mod paper;
mod protocol;
mod study;
mod tables;

use baton_report::{CellRow, EpisodeRecord, PairSpec, Report, ReportInput};
use baton_types::{Cell, Cost, Direction, EpisodeStatus, Family, Interface, SwitchPoint};

pub const LC: &str = "sim/lc";
pub const HC: &str = "sim/hc";

pub fn lc() -> Cell {
    Cell::single(LC)
}

pub fn hc() -> Cell {
    Cell::single(HC)
}

/// An escalation cell (LC → HC).
pub fn esc(switch: SwitchPoint, interface: Interface) -> Cell {
    Cell::handoff(LC, HC, switch, interface)
}

/// A downshift cell (HC → LC).
pub fn down(switch: SwitchPoint, interface: Interface) -> Cell {
    Cell::handoff(HC, LC, switch, interface)
}

/// A scored episode costing `cost` US dollars (to the nearest picodollar).
pub fn scored(
    task: &str,
    family: Family,
    cell: &Cell,
    replicate: u32,
    score: f64,
    cost: f64,
) -> EpisodeRecord {
    EpisodeRecord {
        task_id: task.to_owned(),
        family,
        cell: cell.clone(),
        replicate,
        status: EpisodeStatus::Scored,
        score: Some(score),
        cost_attributed: Cost::from_usd(cost),
        cost_paid: Cost::from_usd(cost),
        n_turns: 4,
        k: match cell {
            Cell::Handoff { switch, .. } => switch.k(4),
            Cell::Single { .. } | Cell::Baseline { .. } => None,
        },
        reason: None,
        prefix_cost: None,
        calls: Default::default(),
        no_answer: false,
        rule: None,
    }
}

/// An episode that did not end in a score.
pub fn unfinished(
    task: &str,
    family: Family,
    cell: &Cell,
    replicate: u32,
    status: EpisodeStatus,
    reason: &str,
) -> EpisodeRecord {
    EpisodeRecord {
        status,
        score: None,
        reason: Some(reason.to_owned()),
        n_turns: 2,
        ..scored(task, family, cell, replicate, 0.0, 0.003)
    }
}

/// Episodes of one cell: `(score, cost)` per task `{prefix}/{i}`, replicate 0.
pub fn series(
    prefix: &str,
    family: Family,
    cell: &Cell,
    values: &[(f64, f64)],
) -> Vec<EpisodeRecord> {
    values
        .iter()
        .enumerate()
        .map(|(i, &(s, c))| scored(&format!("{prefix}/{i}"), family, cell, 0, s, c))
        .collect()
}

pub fn input(episodes: Vec<EpisodeRecord>) -> ReportInput {
    ReportInput {
        title: "test experiment".to_owned(),
        simulated: true,
        pairs: vec![PairSpec {
            name: "p".to_owned(),
            lc: LC.to_owned(),
            hc: HC.to_owned(),
        }],
        episodes,
        bootstrap: None,
        spend: None,
        skipped_tasks: Vec::new(),
        notes: Vec::new(),
    }
}

/// The row of (direction, family, switch label, interface); anchors use `None` and
/// `"single"`.
#[track_caller]
pub fn row<'a>(
    report: &'a Report,
    direction: Option<Direction>,
    family: &str,
    k: Option<&str>,
    interface: &str,
) -> &'a CellRow {
    let found: Vec<&CellRow> = report
        .cells
        .iter()
        .filter(|r| {
            r.direction == direction
                && r.family == family
                && r.k.as_deref() == k
                && r.interface == interface
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected one row for {direction:?} {family} {k:?} {interface}, rows: {:#?}",
        report.cells
    );
    found[0]
}

#[track_caller]
pub fn assert_close(actual: Option<f64>, expected: f64) {
    let a = actual.unwrap_or_else(|| panic!("expected {expected}, got None"));
    assert!((a - expected).abs() < 1e-9, "expected {expected}, got {a}");
}

/// The 4-task math fixture used by several tests:
/// LC scores 0,0,1,0 (R_LC = 25) costing .01,.01,.02,.02 (C_LC = .015);
/// HC scores 1,1,1,0 (R_HC = 75) costing .10,.12,.11,.13 (C_HC = .115).
pub fn math_anchors() -> Vec<EpisodeRecord> {
    let mut v = series(
        "math",
        Family::Math,
        &lc(),
        &[(0.0, 0.01), (0.0, 0.01), (1.0, 0.02), (0.0, 0.02)],
    );
    v.extend(series(
        "math",
        Family::Math,
        &hc(),
        &[(1.0, 0.10), (1.0, 0.12), (1.0, 0.11), (0.0, 0.13)],
    ));
    v
}
