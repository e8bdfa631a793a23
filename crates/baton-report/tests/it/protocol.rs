//! LiC's protocol in the report: baseline cells with the sharded-vs-full degradation,
//! and aptitude/unreliability over replicates, computed by hand.

use baton_report::{BootstrapConfig, build};
use baton_types::{Baseline, Cell, Family, Interface, SwitchPoint};

use crate::{HC, LC, assert_close, esc, hc, input, lc, row, scored, unfinished};

/// See: issue 13: `full(M)` is reported against `single(M)` on the same units, the
/// degradation has a paired interval, and an unfinished baseline is counted, not 0.
#[test]
fn issue_13_baselines_degrade_against_the_sharded_anchor_on_matched_units() {
    let full = Cell::baseline(LC, Baseline::Full);
    let mut eps = Vec::new();
    // sharded LC: 0, 0, 1, 0 on four tasks; full LC: 1, 1, 1, (unfinished)
    for (t, (s, f)) in [
        (0.0, Some(1.0)),
        (0.0, Some(1.0)),
        (1.0, Some(1.0)),
        (0.0, None),
    ]
    .into_iter()
    .enumerate()
    {
        let task = format!("math/{t}");
        eps.push(scored(&task, Family::Math, &lc(), 0, s, 0.01));
        eps.push(scored(&task, Family::Math, &hc(), 0, 1.0, 0.1));
        match f {
            Some(f) => eps.push(scored(&task, Family::Math, &full, 0, f, 0.002)),
            None => eps.push(unfinished(
                &task,
                Family::Math,
                &full,
                0,
                baton_types::EpisodeStatus::Incomplete,
                "run stopped",
            )),
        }
    }
    let mut inp = input(eps);
    inp.bootstrap = Some(BootstrapConfig {
        replicates: 500,
        seed: 3,
    });
    let report = build(&inp);
    let math = report
        .baselines
        .iter()
        .find(|r| r.family == "math" && r.cell == "full(sim/lc)")
        .expect("a baseline row");
    assert_eq!(math.interface, "full");
    assert_close(math.score, 100.0);
    // matched: tasks 0..=2; sharded 1/3, baseline 3/3
    assert_eq!(
        (math.n_attempted, math.n_scored, math.n_incomplete),
        (4, 3, 1)
    );
    assert_eq!(math.n_matched, 3);
    assert_close(math.sharded_score, 100.0 / 3.0);
    assert_close(math.degradation, 100.0 - 100.0 / 3.0);
    let [lo, hi] = math.degradation_ci.expect("an interval");
    assert!(lo <= math.degradation.unwrap() && math.degradation.unwrap() <= hi);
    assert!(lo >= 0.0 && hi <= 100.0, "{lo} {hi}");
    let all = report
        .baselines
        .iter()
        .find(|r| r.family == "all" && r.cell == "full(sim/lc)")
        .expect("an all-families row");
    assert_close(all.degradation, 100.0 - 100.0 / 3.0);
    // no concat episodes: no concat row
    assert!(report.baselines.iter().all(|r| r.interface == "full"));
    let json = report.to_json();
    assert_eq!(json["baselines"][0]["interface"], "full");
    let md = report.to_markdown();
    assert!(md.contains("Single-turn baselines"), "{md}");
    assert!(report.to_html().contains("id=\"baselines\""));
    assert!(report.to_csv().contains(",full,,sim/lc,full(sim/lc),100,"));
}

/// See: issue 13: A90, U90_10 and P per task over replicates, averaged over tasks, with
/// a handoff's anchors' unreliability on the same tasks beside it.
#[test]
fn issue_13_aptitude_and_unreliability_over_replicates() {
    let cell = esc(SwitchPoint::Early, Interface::Raw);
    let mut eps = Vec::new();
    // three replicates of two tasks
    let lc_scores = [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0]];
    let hc_scores = [[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]];
    let ho_scores = [[1.0, 0.0, 1.0], [0.0, 0.5, 1.0]];
    for t in 0..2 {
        let task = format!("math/{t}");
        for r in 0..3u32 {
            let i = r as usize;
            eps.push(scored(&task, Family::Math, &lc(), r, lc_scores[t][i], 0.01));
            eps.push(scored(&task, Family::Math, &hc(), r, hc_scores[t][i], 0.1));
            eps.push(scored(&task, Family::Math, &cell, r, ho_scores[t][i], 0.05));
        }
    }
    let report = build(&input(eps));
    // R = 3: p90 at h = 1.8, p10 at h = 0.2 (linear interpolation)
    let q = |s: [f64; 3], p: f64| {
        let mut s = s;
        s.sort_by(f64::total_cmp);
        let h = 2.0 * p;
        let lo = h.floor() as usize;
        s[lo] + (h - lo as f64) * (s[(lo + 1).min(2)] - s[lo])
    };
    let metrics = |rows: [[f64; 3]; 2]| {
        let a: f64 = rows.iter().map(|s| q(*s, 0.9)).sum::<f64>() / 2.0 * 100.0;
        let u: f64 = rows.iter().map(|s| q(*s, 0.9) - q(*s, 0.1)).sum::<f64>() / 2.0 * 100.0;
        (a, u)
    };
    let anchor = report
        .cells
        .iter()
        .find(|r| r.family == "math" && r.cell.as_deref() == Some(&format!("single({LC})")))
        .expect("the LC anchor row");
    let (a, u) = metrics(lc_scores);
    assert_close(anchor.aptitude, a);
    assert_close(anchor.unreliability, u);
    assert_close(anchor.mean_p, 100.0 / 6.0);
    assert_eq!(anchor.n_reliability_tasks, 2);
    let handoff = row(
        &report,
        Some(baton_types::Direction::Escalation),
        "math",
        Some("early"),
        "raw",
    );
    let (a, u) = metrics(ho_scores);
    assert_close(handoff.aptitude, a);
    assert_close(handoff.unreliability, u);
    assert_close(handoff.unreliability_lc, metrics(lc_scores).1);
    assert_close(handoff.unreliability_hc, metrics(hc_scores).1);
    let json = report.to_json();
    let cells = json["cells"].as_array().unwrap();
    assert!(
        cells
            .iter()
            .any(|c| c["cell"] == format!("single({HC})") && c["unreliability"].is_number())
    );
    assert!(
        report
            .to_markdown()
            .contains("LiC's metrics over replicates")
    );
}

/// One replicate says nothing about reliability: the fields stay absent.
#[test]
fn a_single_replicate_has_no_lic_metrics() {
    let eps = vec![
        scored("math/0", Family::Math, &lc(), 0, 1.0, 0.01),
        scored("math/0", Family::Math, &hc(), 0, 1.0, 0.1),
    ];
    let report = build(&input(eps));
    assert!(report.cells.iter().all(|r| r.aptitude.is_none()));
    assert!(report.to_json()["cells"][0].get("aptitude").is_none());
    assert!(!report.to_markdown().contains("LiC's metrics"));
}
