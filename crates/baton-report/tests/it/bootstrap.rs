use baton_report::{BootstrapConfig, EpisodeRecord, Report, ReportInput, build};
use baton_types::{Cell, Family, Interface, SwitchPoint};

use crate::*;

/// A deterministic pseudo-random stream (64-bit LCG), so fixtures need no files.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Three families × 12 tasks × 2 replicates; LC right 30% of the time, HC 80%,
/// handoffs in between; costs vary per episode.
fn experiment(replicates: usize, seed: u64) -> ReportInput {
    let mut rng = Lcg(7);
    let cells: Vec<(Cell, f64, f64)> = vec![
        (lc(), 0.3, 0.01),
        (hc(), 0.8, 0.10),
        (esc(SwitchPoint::Early, Interface::Raw), 0.7, 0.08),
        (esc(SwitchPoint::Late, Interface::Raw), 0.5, 0.04),
        (esc(SwitchPoint::Early, Interface::TrajDrop), 0.6, 0.07),
        (down(SwitchPoint::Middle, Interface::Raw), 0.4, 0.05),
    ];
    let mut episodes = Vec::new();
    for family in [Family::Math, Family::Code, Family::Database] {
        for t in 0..12 {
            for rep in 0..2 {
                for (cell, p, cost) in &cells {
                    let score = if rng.next() < *p { 1.0 } else { 0.0 };
                    let cost = cost * (0.5 + rng.next());
                    episodes.push(scored(
                        &format!("{family}/{t}"),
                        family,
                        cell,
                        rep,
                        score,
                        cost,
                    ));
                }
            }
        }
    }
    ReportInput {
        bootstrap: Some(BootstrapConfig { replicates, seed }),
        ..input(episodes)
    }
}

#[track_caller]
fn contains(ci: Option<[f64; 2]>, point: Option<f64>, what: &str) {
    match (ci, point) {
        (Some([lo, hi]), Some(p)) => {
            assert!(lo <= p && p <= hi, "{what}: {p} outside [{lo}, {hi}]")
        }
        (None, None) => {}
        other => panic!("{what}: interval and point disagree: {other:?}"),
    }
}

#[test]
fn same_seed_same_intervals_and_they_contain_the_point_estimates() {
    let input = experiment(2000, 42);
    let a = build(&input);
    let b = build(&input);
    assert_eq!(a, b);
    let mut checked = 0;
    for r in &a.cells {
        contains(r.score_ci, r.score, &format!("score of {r:?}"));
        contains(r.qrec_ci, r.qrec, &format!("qrec of {r:?}"));
        contains(r.csret_ci, r.csret, &format!("csret of {r:?}"));
        checked += usize::from(r.qrec_ci.is_some());
        let [lo, hi] = r.score_ci.expect("every row has scored units");
        assert!(lo < hi, "a real spread: {r:?}");
    }
    assert!(checked >= 10, "QRec intervals checked: {checked}");
    let other = build(&experiment(2000, 43));
    assert_ne!(
        a.cells.iter().map(|r| r.qrec_ci).collect::<Vec<_>>(),
        other.cells.iter().map(|r| r.qrec_ci).collect::<Vec<_>>(),
        "another seed draws other tasks"
    );
}

#[test]
fn every_cell_sees_the_same_draws() {
    // Two interfaces with identical episodes must get identical intervals; with
    // independent draws per cell they would differ.
    let mut input = experiment(500, 1);
    let twins: Vec<EpisodeRecord> = input
        .episodes
        .iter()
        .filter(|e| e.cell == esc(SwitchPoint::Early, Interface::Raw))
        .map(|e| EpisodeRecord {
            cell: esc(SwitchPoint::Early, Interface::Disclosure),
            ..e.clone()
        })
        .collect();
    input.episodes.extend(twins);
    let report = build(&input);
    for family in ["math", "code", "all"] {
        let raw = row(
            &report,
            Some(baton_types::Direction::Escalation),
            family,
            Some("early"),
            "raw",
        );
        let dis = row(
            &report,
            Some(baton_types::Direction::Escalation),
            family,
            Some("early"),
            "disclosure",
        );
        assert_eq!(
            (raw.score_ci, raw.qrec_ci, raw.csret_ci),
            (dis.score_ci, dis.qrec_ci, dis.csret_ci)
        );
    }
}

#[test]
fn a_drawn_task_brings_all_its_replicates() {
    // One task, replicates scoring 0 and 1: every draw picks the task with both
    // replicates, so the score never moves from 50.
    let mut eps = Vec::new();
    for (rep, s) in [(0, 0.0), (1, 1.0)] {
        eps.push(scored("m/0", Family::Math, &lc(), rep, 0.0, 0.01));
        eps.push(scored("m/0", Family::Math, &hc(), rep, 1.0, 0.1));
        eps.push(scored(
            "m/0",
            Family::Math,
            &esc(SwitchPoint::Early, Interface::Raw),
            rep,
            s,
            0.05,
        ));
    }
    let report: Report = build(&ReportInput {
        bootstrap: Some(BootstrapConfig {
            replicates: 300,
            seed: 9,
        }),
        ..input(eps)
    });
    let r = row(
        &report,
        Some(baton_types::Direction::Escalation),
        "math",
        Some("early"),
        "raw",
    );
    assert_eq!(r.score_ci, Some([50.0, 50.0]));
    assert_eq!(r.qrec_ci, Some([50.0, 50.0]));
}

#[test]
fn omitted_values_get_no_interval() {
    let eps = vec![
        scored("d/0", Family::Data2Text, &lc(), 0, 0.50, 0.01),
        scored("d/0", Family::Data2Text, &hc(), 0, 0.52, 0.05),
        scored(
            "d/0",
            Family::Data2Text,
            &esc(SwitchPoint::Early, Interface::Raw),
            0,
            0.51,
            0.03,
        ),
    ];
    let report = build(&ReportInput {
        bootstrap: Some(BootstrapConfig {
            replicates: 50,
            seed: 0,
        }),
        ..input(eps)
    });
    let r = row(
        &report,
        Some(baton_types::Direction::Escalation),
        "data2text",
        Some("early"),
        "raw",
    );
    assert_eq!((r.qrec, r.qrec_ci), (None, None));
    assert!(r.csret_ci.is_some());
}

/// Times the bootstrap at the size the design expects: about 30 tasks, 100 rows,
/// 10,000 resamples. Run with `--release --ignored --nocapture` to see the figure.
#[test]
#[ignore = "timing figure; run in release"]
#[allow(clippy::print_stderr)]
fn bootstrap_timing() {
    let mut rng = Lcg(3);
    let mut episodes = Vec::new();
    let switches = [SwitchPoint::Early, SwitchPoint::Middle, SwitchPoint::Late];
    let interfaces = [
        Interface::Raw,
        Interface::Disclosure,
        Interface::CompactPre,
        Interface::CompactSuf,
        Interface::TrajDrop,
    ];
    for family in [Family::Math, Family::Code, Family::Database] {
        for t in 0..10 {
            let mut cells = vec![lc(), hc()];
            for s in switches {
                for i in interfaces {
                    cells.push(esc(s, i));
                    cells.push(down(s, i));
                }
            }
            for cell in &cells {
                for rep in 0..2 {
                    let score = if rng.next() < 0.5 { 1.0 } else { 0.0 };
                    episodes.push(scored(
                        &format!("{family}/{t}"),
                        family,
                        cell,
                        rep,
                        score,
                        rng.next(),
                    ));
                }
            }
        }
    }
    let input = ReportInput {
        bootstrap: Some(BootstrapConfig {
            replicates: 10_000,
            seed: 0,
        }),
        ..input(episodes)
    };
    let start = std::time::Instant::now();
    let report = build(&input);
    eprintln!(
        "bootstrap: {} rows, 30 tasks, 10000 resamples in {:?}",
        report.cells.len(),
        start.elapsed()
    );
    assert!(report.cells.iter().all(|r| r.score_ci.is_some()));
}
