use baton_report::{AnchorRole, Omission, build};
use baton_types::{Cost, Direction, EpisodeStatus, Family, Interface, SwitchPoint};

use crate::*;

const ESC: Option<Direction> = Some(Direction::Escalation);
const EARLY: SwitchPoint = SwitchPoint::Early;
const RAW: Interface = Interface::Raw;

#[test]
fn qrec_and_csret_match_hand_arithmetic() {
    let mut eps = math_anchors();
    // Handoff scores 1,0,1,0 -> R_m = 50; costs .04,.05,.06,.05 -> C_m = .05.
    eps.extend(series(
        "math",
        Family::Math,
        &esc(EARLY, RAW),
        &[(1.0, 0.04), (0.0, 0.05), (1.0, 0.06), (0.0, 0.05)],
    ));
    let report = build(&input(eps));
    let r = row(&report, ESC, "math", Some("early"), "raw");
    // QRec = 100 * (50 - 25) / (75 - 25) = 50.
    // CSRet = 100 * (.115 - .05) / (.115 - .015) = 100 * .065 / .1 = 65.
    assert_close(r.score, 50.0);
    assert_close(r.cost_per_task, 0.05);
    assert_close(r.qrec, 50.0);
    assert_close(r.csret, 65.0);
    assert_close(r.score_lc, 25.0);
    assert_close(r.score_hc, 75.0);
    assert_close(r.cost_lc, 0.015);
    assert_close(r.cost_hc, 0.115);
    assert_eq!((r.n_attempted, r.n_scored, r.n_matched), (4, 4, 4));
    assert_eq!(r.qrec_omitted_reason, None);
    assert_eq!(
        r.cell.as_deref(),
        Some("handoff(sim/lc -> sim/hc, early, raw)")
    );

    let a = report.rows("p", None).next().unwrap();
    assert_eq!(
        (a.family.as_str(), a.anchor),
        ("math", Some(AnchorRole::Lc)),
        "LC comes first"
    );
    assert_close(a.score, 25.0);
    assert_close(a.cost_per_task, 0.015);
    assert_eq!(a.qrec, None);
    assert_eq!(a.qrec_omitted_reason, None, "anchors have no QRec to omit");
}

#[test]
fn values_outside_0_100_are_kept() {
    let mut eps = math_anchors();
    // Worse than LC and costlier than HC: R_m = 0, C_m = .2.
    eps.extend(series(
        "math",
        Family::Math,
        &esc(EARLY, RAW),
        &[(0.0, 0.2); 4],
    ));
    // Better than HC and cheaper than LC: R_m = 100, C_m = .005.
    eps.extend(series(
        "math",
        Family::Math,
        &esc(SwitchPoint::Late, RAW),
        &[(1.0, 0.005); 4],
    ));
    let report = build(&input(eps));
    let worse = row(&report, ESC, "math", Some("early"), "raw");
    // QRec = 100 * (0 - 25) / 50 = -50; CSRet = 100 * (.115 - .2) / .1 = -85.
    assert_close(worse.qrec, -50.0);
    assert_close(worse.csret, -85.0);
    let better = row(&report, ESC, "math", Some("late"), "raw");
    // QRec = 100 * (100 - 25) / 50 = 150; CSRet = 100 * (.115 - .005) / .1 = 110.
    assert_close(better.qrec, 150.0);
    assert_close(better.csret, 110.0);
}

#[test]
fn per_family_qrec_is_omitted_under_a_5_point_gap_but_not_in_aggregates() {
    // One data2text task: LC .50 (cost .01), HC .53 (cost .05), handoff .51 (cost .03).
    let eps = vec![
        scored("d2t/0", Family::Data2Text, &lc(), 0, 0.50, 0.01),
        scored("d2t/0", Family::Data2Text, &hc(), 0, 0.53, 0.05),
        scored("d2t/0", Family::Data2Text, &esc(EARLY, RAW), 0, 0.51, 0.03),
    ];
    let report = build(&input(eps));
    let fam = row(&report, ESC, "data2text", Some("early"), "raw");
    // |R_HC - R_LC| = |53 - 50| = 3 < 5: omitted, with the reason.
    assert_eq!(fam.qrec, None);
    assert_eq!(fam.qrec_omitted_reason, Some(Omission::SmallQualityGap));
    // CSRet is unaffected: 100 * (.05 - .03) / (.05 - .01) = 50.
    assert_close(fam.csret, 50.0);
    // The aggregate applies no 5-point rule: 100 * (51 - 50) / (53 - 50) = 33.33...
    let all = row(&report, ESC, "all", Some("early"), "raw");
    assert_close(all.qrec, 100.0 / 3.0);
    assert_eq!(all.qrec_omitted_reason, None);
}

#[test]
fn zero_denominators_give_none_with_a_reason() {
    // LC and HC both score 1 and cost the same.
    let eps = vec![
        scored("m/0", Family::Math, &lc(), 0, 1.0, 0.02),
        scored("m/0", Family::Math, &hc(), 0, 1.0, 0.02),
        scored("m/0", Family::Math, &esc(EARLY, RAW), 0, 1.0, 0.02),
    ];
    let report = build(&input(eps));
    let all = row(&report, ESC, "all", Some("early"), "raw");
    assert_eq!(all.qrec, None);
    assert_eq!(all.qrec_omitted_reason, Some(Omission::ZeroQualityGap));
    assert_eq!(all.csret, None);
    assert_eq!(all.csret_omitted_reason, Some(Omission::ZeroCostGap));
}

#[test]
fn aggregates_weigh_each_family_the_same() {
    let mut eps = math_anchors();
    // Math handoff: R_m = 50, C_m = .05 (R_LC 25, R_HC 75, C_LC .015, C_HC .115).
    eps.extend(series(
        "math",
        Family::Math,
        &esc(EARLY, RAW),
        &[(1.0, 0.04), (0.0, 0.05), (1.0, 0.06), (0.0, 0.05)],
    ));
    // Code, one task: LC 0 @ .02, HC 1 @ .2, handoff 1 @ .1.
    eps.push(scored("code/0", Family::Code, &lc(), 0, 0.0, 0.02));
    eps.push(scored("code/0", Family::Code, &hc(), 0, 1.0, 0.2));
    eps.push(scored(
        "code/0",
        Family::Code,
        &esc(EARLY, RAW),
        0,
        1.0,
        0.1,
    ));
    let report = build(&input(eps));
    let all = row(&report, ESC, "all", Some("early"), "raw");
    // R_m = (50 + 100)/2 = 75, R_LC = (25 + 0)/2 = 12.5, R_HC = (75 + 100)/2 = 87.5
    // QRec = 100 * (75 - 12.5) / (87.5 - 12.5) = 83.33... (pooling the 5 units would give 66.67).
    assert_close(all.score, 75.0);
    assert_close(all.qrec, 100.0 * 62.5 / 75.0);
    // C_m = (.05 + .1)/2 = .075, C_LC = (.015 + .02)/2 = .0175, C_HC = (.115 + .2)/2 = .1575
    // CSRet = 100 * (.1575 - .075) / (.1575 - .0175) = 100 * .0825 / .14.
    assert_close(all.csret, 100.0 * 0.0825 / 0.14);
    assert_eq!((all.n_attempted, all.n_matched), (5, 5));
    // Anchors aggregate the same way: LC (25 + 0)/2 = 12.5.
    let anchors: Vec<_> = report
        .rows("p", None)
        .filter(|r| r.family == "all")
        .collect();
    assert_eq!(anchors.len(), 2);
    assert_close(anchors[0].score, 12.5);
    assert_close(anchors[1].score, 87.5);
}

#[test]
fn aggregates_skip_families_without_matched_units() {
    let mut eps = math_anchors();
    eps.extend(series(
        "math",
        Family::Math,
        &esc(EARLY, RAW),
        &[(1.0, 0.05); 4],
    ));
    // Code has a handoff episode but no HC anchor: no matched unit, no weight.
    eps.push(scored("code/0", Family::Code, &lc(), 0, 0.0, 0.02));
    eps.push(scored(
        "code/0",
        Family::Code,
        &esc(EARLY, RAW),
        0,
        1.0,
        0.1,
    ));
    let report = build(&input(eps));
    let code = row(&report, ESC, "code", Some("early"), "raw");
    assert_eq!((code.score, code.n_matched), (None, 0));
    assert_eq!(code.qrec_omitted_reason, Some(Omission::NoMatchedUnits));
    let all = row(&report, ESC, "all", Some("early"), "raw");
    // Only math counts: QRec = 100 * (100 - 25) / 50 = 150.
    assert_close(all.qrec, 150.0);
}

#[test]
fn matching_drops_units_whose_anchor_is_incomplete() {
    let mut eps = math_anchors();
    // HC on task 3 did not finish (replacing its scored record).
    eps.retain(|e| !(e.task_id == "math/3" && e.cell == hc()));
    eps.push(unfinished(
        "math/3",
        Family::Math,
        &hc(),
        0,
        EpisodeStatus::Incomplete,
        "budget stop",
    ));
    eps.extend(series(
        "math",
        Family::Math,
        &esc(EARLY, RAW),
        &[(1.0, 0.04), (0.0, 0.05), (1.0, 0.06), (0.0, 0.05)],
    ));
    let report = build(&input(eps));
    let r = row(&report, ESC, "math", Some("early"), "raw");
    // Units 0..=2 only: R_LC = (0+0+1)/3 = 33.3, R_HC = 100, R_m = (1+0+1)/3 = 66.7
    // QRec = 100 * (66.67 - 33.33) / (100 - 33.33) = 50.
    assert_eq!((r.n_attempted, r.n_scored, r.n_matched), (4, 4, 3));
    assert_close(r.score, 200.0 / 3.0);
    assert_close(r.qrec, 50.0);
    // C_LC = (.01+.01+.02)/3, C_HC = (.10+.12+.11)/3 = .11, C_m = (.04+.05+.06)/3 = .05.
    assert_close(r.csret, 100.0 * (0.11 - 0.05) / (0.11 - 0.04 / 3.0));
    let hc_row = report
        .rows("p", None)
        .find(|r| r.family == "math" && r.anchor == Some(AnchorRole::Hc))
        .unwrap();
    assert_eq!(
        (hc_row.n_attempted, hc_row.n_scored, hc_row.n_incomplete),
        (4, 3, 1)
    );
    assert_close(hc_row.score, 100.0);
    assert_eq!(hc_row.n_matched, 3, "units where both anchors are scored");
}

#[test]
fn incomplete_and_errored_episodes_are_excluded_and_listed_never_zero() {
    let mut eps = math_anchors();
    let cell = esc(EARLY, RAW);
    // Handoff: task 0 incomplete, task 1 errored, tasks 2 and 3 score 1 and 0.
    eps.push(unfinished(
        "math/0",
        Family::Math,
        &cell,
        0,
        EpisodeStatus::Incomplete,
        "budget stop at $1.00",
    ));
    eps.push(unfinished(
        "math/1",
        Family::Math,
        &cell,
        0,
        EpisodeStatus::Errored,
        "sandbox failed to start",
    ));
    eps.push(scored("math/2", Family::Math, &cell, 0, 1.0, 0.06));
    eps.push(scored("math/3", Family::Math, &cell, 0, 0.0, 0.05));
    let report = build(&input(eps));
    let r = row(&report, ESC, "math", Some("early"), "raw");
    // Matched units 2 and 3: R_m = 50 (as zeros the two would pull it to 25).
    assert_close(r.score, 50.0);
    assert_eq!(
        (
            r.n_attempted,
            r.n_scored,
            r.n_errored,
            r.n_incomplete,
            r.n_matched
        ),
        (4, 2, 1, 1, 2)
    );
    // R_LC = (1 + 0)/2 = 50, R_HC = (1 + 0)/2 = 50: zero gap on these units.
    assert_eq!(r.qrec_omitted_reason, Some(Omission::SmallQualityGap));
    let listed: Vec<_> = report
        .incomplete
        .iter()
        .map(|e| (e.task_id.as_str(), e.status, e.reason.as_deref()))
        .collect();
    assert_eq!(
        listed,
        [
            (
                "math/0",
                EpisodeStatus::Incomplete,
                Some("budget stop at $1.00")
            ),
            (
                "math/1",
                EpisodeStatus::Errored,
                Some("sandbox failed to start")
            ),
        ]
    );
    assert_eq!(report.incomplete[0].cell, cell.label());
    let md = report.to_markdown();
    assert!(
        md.contains("| math/0 | handoff(LC -> HC, early, raw) |"),
        "{md}"
    );
    assert!(md.contains("budget stop at $1.00"), "{md}");
}

#[test]
fn averages_over_k_mean_the_rows_then_apply_the_formulas() {
    let mut eps = math_anchors();
    // Early: R_m = 50, C_m = .05. Late: R_m = 100, C_m = .09.
    eps.extend(series(
        "math",
        Family::Math,
        &esc(EARLY, RAW),
        &[(1.0, 0.04), (0.0, 0.05), (1.0, 0.06), (0.0, 0.05)],
    ));
    eps.extend(series(
        "math",
        Family::Math,
        &esc(SwitchPoint::Late, RAW),
        &[(1.0, 0.09); 4],
    ));
    // One switch point only for disclosure: no avg row for it.
    eps.extend(series(
        "math",
        Family::Math,
        &esc(EARLY, Interface::Disclosure),
        &[(1.0, 0.05); 4],
    ));
    let report = build(&input(eps));
    let avg = row(&report, ESC, "math", Some("avg"), "raw");
    // R = (50 + 100)/2 = 75 -> QRec = 100 * (75 - 25) / 50 = 100.
    // C = (.05 + .09)/2 = .07 -> CSRet = 100 * (.115 - .07) / .1 = 45.
    assert_close(avg.score, 75.0);
    assert_close(avg.qrec, 100.0);
    assert_close(avg.csret, 45.0);
    assert_eq!(avg.n_attempted, 8);
    let all_avg = row(&report, ESC, "all", Some("avg"), "raw");
    assert_close(all_avg.qrec, 100.0);
    assert!(
        !report
            .cells
            .iter()
            .any(|r| r.interface == "disclosure" && r.k.as_deref() == Some("avg"))
    );
}

#[test]
fn directions_follow_sender_and_receiver_and_strangers_are_noted() {
    let mut eps = math_anchors();
    eps.extend(series(
        "math",
        Family::Math,
        &down(EARLY, RAW),
        &[(0.0, 0.08); 4],
    ));
    eps.push(scored(
        "math/0",
        Family::Math,
        &baton_types::Cell::handoff("sim/other", HC, EARLY, RAW),
        0,
        1.0,
        0.1,
    ));
    let report = build(&input(eps));
    let d = row(
        &report,
        Some(Direction::Downshift),
        "math",
        Some("early"),
        "raw",
    );
    // Downshift uses the same anchors: QRec = 100 * (0 - 25) / 50 = -50.
    assert_close(d.qrec, -50.0);
    assert!(
        report
            .rows("p", Some(Direction::Escalation))
            .next()
            .is_none()
    );
    assert_eq!(report.notes.len(), 1);
    assert!(
        report.notes[0].contains("handoff(sim/other -> sim/hc, early, raw)"),
        "{:?}",
        report.notes
    );
    assert!(
        report
            .to_markdown()
            .contains("No handoff cells in this direction.")
    );
}

#[test]
fn restart_controls_compose_recorded_prefix_costs() {
    let mut eps = math_anchors();
    let mut handoff = series("math", Family::Math, &esc(EARLY, RAW), &[(1.0, 0.05); 4]);
    for (i, e) in handoff.iter_mut().enumerate() {
        // Prefix costs .004, .005, .006 on tasks 0..=2; task 3 records none.
        e.prefix_cost = (i < 3).then_some(Cost::from_usd(0.004 + 0.001 * i as f64));
    }
    eps.extend(handoff);
    let report = build(&input(eps));
    let c = report
        .restart_controls
        .iter()
        .find(|c| c.family == "math")
        .expect("a math control");
    // Units 0..=2 (task 3 has no prefix cost): R_HC = 100, C_HC = (.10+.12+.11)/3 = .11,
    // C_LC = (.01+.01+.02)/3 = .04/3, prefix = (.004+.005+.006)/3 = .005.
    assert_eq!((c.k.as_str(), c.n_units), ("early", 3));
    assert_close(c.quality, 100.0);
    assert_close(c.prefix_cost, 0.005);
    // abort+HC = .005 + .11 = .115; CSRet = 100 * (.11 - .115) / (.11 - .04/3).
    assert_close(c.abort_hc_cost, 0.115);
    assert_close(
        c.abort_hc_csret,
        100.0 * (0.11 - 0.115) / (0.11 - 0.04 / 3.0),
    );
    // LC-full+HC-full = .04/3 + .11.
    assert_close(c.full_restart_cost, 0.04 / 3.0 + 0.11);
    let all = report
        .restart_controls
        .iter()
        .find(|c| c.family == "all")
        .unwrap();
    assert_eq!(all.abort_hc_cost, c.abort_hc_cost);
    let json = report.to_json();
    assert_eq!(json["restart_controls"].as_array().map(Vec::len), Some(2));
}

#[test]
fn validation_names_the_offending_episode() {
    let mut eps = math_anchors();
    eps.push(eps[0].clone());
    let err = input(eps).validate().unwrap_err();
    insta::assert_snapshot!(err, @r#"more than one record for task "math/0", cell "single(sim/lc)", replicate 0"#);

    let mut eps = math_anchors();
    eps[1].score = None;
    let err = baton_report::try_build(&input(eps)).unwrap_err();
    insta::assert_snapshot!(err, @r#"episode (task "math/1", cell "single(sim/lc)", replicate 0) is scored but has no score"#);

    assert_eq!(input(math_anchors()).validate(), Ok(()));
}
