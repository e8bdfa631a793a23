//! The agent handoff study on a fixed input, against hand-computed values: the same
//! metrics core as the chat study (QRec/CSRet with the omission rule, restart controls,
//! the paired bootstrap).

use baton_report::{
    AgentExperimentReport, Export, ExportFormat, Omission, ReportError, StudyEpisode, StudyInput,
    StudyReport, StudyRow, build_agent, build_study,
};
use baton_types::agent::{AgentCell, AgentSwitch, Difficulty};
use baton_types::{Cost, Interface};

use crate::assert_close;

/// One episode; `prefix` is the part of `usd` spent before the switch.
#[allow(clippy::too_many_arguments)]
fn ep(
    task: &str,
    cell: AgentCell,
    fired: Option<bool>,
    finished: bool,
    resolved: Option<bool>,
    usd: f64,
    prefix: f64,
) -> StudyEpisode {
    let cost = Cost::from_usd(usd);
    let prefix = Cost::from_usd(prefix);
    let bucket = if task < "t3" {
        Difficulty::Easy
    } else {
        Difficulty::Hard
    };
    StudyEpisode {
        task_id: task.into(),
        bucket,
        replicate: 0,
        switch: fired.map(|fired| AgentSwitch {
            s: 3,
            bucket,
            fired,
        }),
        cell,
        finished,
        resolved: resolved.filter(|_| finished),
        steps: 6,
        suffix_steps: 3,
        cost,
        phases: [prefix, Cost::ZERO, cost - prefix],
        handover: None,
    }
}

fn single(model: &str) -> AgentCell {
    AgentCell::single(model)
}

fn handoff(sender: &str, receiver: &str, p: u32, interface: Interface) -> AgentCell {
    AgentCell::handoff(sender, receiver, p, interface, false)
}

/// Four tasks (t1, t2 easy; t3, t4 hard), one replicate.
///
/// - LC-only resolves t1 only (R_LC = 25) at .01, .01, .02, .02 (C_LC = .015);
///   HC-only resolves t1, t2, t3 (R_HC = 75) at .10, .12, .11, .13 (C_HC = .115).
/// - raw at p10: every handoff fires; t1, t2 resolved at .05, .06, t3, t4 not at .07, .08.
/// - raw at p50: t1 resolved (.04), t2 not (.05); t3's prefix ended first (unfired); t4
///   fired but never finished.
/// - compact_pre at p10: t1 resolved (.06); t2, t3, t4 not (.07, .08, .09).
/// - downshift raw at p10: only t4 fired (not resolved, .03).
pub(crate) fn input(bootstrap: usize) -> StudyInput {
    use Interface::{CompactPre, Raw};
    let (lc, hc) = ("lc", "hc");
    let mut episodes = Vec::new();
    for (t, r, c) in [
        ("t1", true, 0.01),
        ("t2", false, 0.01),
        ("t3", false, 0.02),
        ("t4", false, 0.02),
    ] {
        episodes.push(ep(t, single(lc), None, true, Some(r), c, 0.0));
    }
    for (t, r, c) in [
        ("t1", true, 0.10),
        ("t2", true, 0.12),
        ("t3", true, 0.11),
        ("t4", false, 0.13),
    ] {
        episodes.push(ep(t, single(hc), None, true, Some(r), c, 0.0));
    }
    for (t, r, c, pre) in [
        ("t1", true, 0.05, 0.004),
        ("t2", true, 0.06, 0.004),
        ("t3", false, 0.07, 0.006),
        ("t4", false, 0.08, 0.006),
    ] {
        episodes.push(ep(
            t,
            handoff(lc, hc, 10, Raw),
            Some(true),
            true,
            Some(r),
            c,
            pre,
        ));
    }
    episodes.push(ep(
        "t1",
        handoff(lc, hc, 50, Raw),
        Some(true),
        true,
        Some(true),
        0.04,
        0.02,
    ));
    episodes.push(ep(
        "t2",
        handoff(lc, hc, 50, Raw),
        Some(true),
        true,
        Some(false),
        0.05,
        0.02,
    ));
    episodes.push(ep(
        "t3",
        handoff(lc, hc, 50, Raw),
        Some(false),
        true,
        Some(false),
        0.02,
        0.02,
    ));
    episodes.push(ep(
        "t4",
        handoff(lc, hc, 50, Raw),
        Some(true),
        false,
        None,
        0.03,
        0.03,
    ));
    for (t, r, c) in [
        ("t1", true, 0.06),
        ("t2", false, 0.07),
        ("t3", false, 0.08),
        ("t4", false, 0.09),
    ] {
        episodes.push(ep(
            t,
            handoff(lc, hc, 10, CompactPre),
            Some(true),
            true,
            Some(r),
            c,
            0.004,
        ));
    }
    for t in ["t1", "t2", "t3"] {
        episodes.push(ep(
            t,
            handoff(hc, lc, 10, Raw),
            Some(false),
            true,
            Some(true),
            0.10,
            0.10,
        ));
    }
    episodes.push(ep(
        "t4",
        handoff(hc, lc, 10, Raw),
        Some(true),
        true,
        Some(false),
        0.03,
        0.01,
    ));
    StudyInput {
        pairs: vec![(lc.into(), hc.into())],
        thresholds: Vec::new(),
        episodes,
        bootstrap,
        seed: 7,
    }
}

fn find<'a>(rows: &'a [StudyRow], dir: &str, interface: &str, window: &str) -> &'a StudyRow {
    rows.iter()
        .find(|r| r.direction == dir && r.interface == interface && r.window == window)
        .unwrap_or_else(|| panic!("no {dir} {interface} {window} row in {rows:#?}"))
}

fn study(bootstrap: usize) -> StudyReport {
    build_study(&input(bootstrap)).expect("the fixture reconciles")
}

#[test]
fn issue_24_table1_pins_pass_rate_qrec_and_csret_to_hand_computed_values() {
    let s = study(0);
    // raw at p10, over t1..t4: R_m = 50, C_m = .065, anchors 25/75 and .015/.115:
    // QRec = 100·(50 − 25)/(75 − 25) = 50; CSRet = 100·(.115 − .065)/(.115 − .015) = 50.
    let p10 = s
        .cells
        .iter()
        .find(|r| r.direction == "escalation" && r.interface == "raw" && r.p == Some(10))
        .unwrap();
    assert_eq!(p10.n_matched, 4);
    assert_close(p10.pass_rate, 50.0);
    assert_close(p10.qrec, 50.0);
    assert_close(p10.csret, 50.0);
    // raw at p50, over t1, t2 (t3 unfired, t4 unfinished): R_m = 50, C_m = .045, anchors
    // 50/100 and .01/.11: QRec = 0; CSRet = 100·(.11 − .045)/(.11 − .01) = 65.
    let p50 = s
        .cells
        .iter()
        .find(|r| r.direction == "escalation" && r.interface == "raw" && r.p == Some(50))
        .unwrap();
    assert_eq!(
        (
            p50.n,
            p50.n_fired,
            p50.n_unfired,
            p50.n_incomplete,
            p50.n_matched
        ),
        (4, 3, 1, 1, 2)
    );
    assert_close(p50.pass_rate, 50.0);
    assert_close(p50.qrec, 0.0);
    assert_close(p50.csret, 65.0);

    // Table 1, raw: the six means averaged over p10 and p50 with equal weight:
    // R_m = 50, C_m = .055, R_LC = 37.5, R_HC = 87.5, C_LC = .0125, C_HC = .1125, so
    // QRec = 100·12.5/50 = 25 and CSRet = 100·(.1125 − .055)/.1 = 57.5.
    let raw = find(&s.table1, "escalation", "raw", "all");
    assert_eq!((raw.p, raw.n, raw.n_fired, raw.n_matched), (None, 8, 7, 6));
    assert_close(raw.pass_rate, 50.0);
    assert_close(raw.mean_cost_usd, 0.055);
    assert_close(raw.lc_pass_rate, 37.5);
    assert_close(raw.hc_pass_rate, 87.5);
    assert_close(raw.qrec, 25.0);
    assert_close(raw.csret, 57.5);
    // Table 1, compact_pre: p10 only (p50 has no episode): R_m = 25, C_m = .075, so
    // QRec = 0, CSRet = 100·(.115 − .075)/.1 = 40.
    let compact = find(&s.table1, "escalation", "compact_pre", "all");
    assert_close(compact.pass_rate, 25.0);
    assert_close(compact.qrec, 0.0);
    assert_close(compact.csret, 40.0);

    // windows: early is p10 alone, late p50 alone
    assert_close(find(&s.windows, "escalation", "raw", "early").csret, 50.0);
    assert_close(find(&s.windows, "escalation", "raw", "late").csret, 65.0);
    // buckets: easy raw is t1, t2 at both p: R_m = (100 + 50)/2 = 75 against 50/100:
    // QRec = 50; hard raw is t3, t4 at p10 only: R_m = 0 against 0/50: QRec = 0.
    assert_close(find(&s.buckets, "escalation", "raw", "easy").qrec, 50.0);
    assert_close(find(&s.buckets, "escalation", "raw", "hard").qrec, 0.0);

    // downshift raw: only t4, where both anchors fail: the anchors differ by less than 5
    // points, so QRec is omitted (the chat study's rule); CSRet = 100·(.13 − .03)/(.13 − .02).
    let down = find(&s.table1, "downshift", "raw", "all");
    assert_close(down.pass_rate, 0.0);
    assert_eq!(down.qrec, None);
    assert_eq!(down.qrec_omitted_reason, Some(Omission::SmallQualityGap));
    assert_close(down.csret, 100.0 * 0.10 / 0.11);
}

#[test]
fn issue_24_restart_controls_compose_the_prefix_and_the_anchors() {
    let s = study(0);
    let abort = find(&s.restart_controls, "escalation", "abort+hc_fresh", "all");
    let full = find(&s.restart_controls, "escalation", "lc_full+hc_full", "all");
    // p10: units t1..t4 (raw comes first): quality 75, cost mean(.004 + HC) = .12.
    // p50: fired units t1, t2, t4: quality 200/3, cost mean(.02+.10, .02+.12, .03+.13) = .14.
    assert_eq!(abort.n_matched, 7);
    assert_close(abort.pass_rate, (75.0 + 200.0 / 3.0) / 2.0);
    assert_close(abort.mean_cost_usd, (0.12 + 0.14) / 2.0);
    // CSRet against the same units' anchors, averaged over p like every aggregate
    let c_hc = (0.115 + 0.35 / 3.0) / 2.0;
    let c_lc = (0.015 + 0.04 / 3.0) / 2.0;
    assert_close(abort.csret, 100.0 * (c_hc - 0.13) / (c_hc - c_lc));
    // LC-full + HC-full: LC-only plus HC-only on the same units
    let cost = (0.015 + 0.115 + (0.04 + 0.35) / 3.0) / 2.0;
    assert_close(full.mean_cost_usd, cost);
    assert_close(full.csret, 100.0 * (c_hc - cost) / (c_hc - c_lc));
    assert_close(full.qrec, 100.0);
}

#[test]
fn issue_24_bootstrap_replicates_change_the_study_intervals() {
    let none = study(0);
    assert!(none.intervals.is_empty());
    assert!(none.table1.iter().all(|r| r.pass_rate_ci.is_none()));

    let few = study(200);
    let many = study(2_000);
    assert_eq!(few, study(200), "the same seed gives the same intervals");
    let raw = |s: &StudyReport| {
        s.intervals
            .iter()
            .find(|i| i.direction == "escalation" && i.interface == "raw")
            .cloned()
            .expect("raw minus compact_pre")
    };
    assert_eq!(raw(&few).replicates, 200);
    assert_eq!(raw(&many).replicates, 2_000);
    // the estimate is Table 1's difference, within its interval: 50 − 25 points, .055 − .075
    let d = raw(&many);
    assert_close(Some(d.pass_rate_diff[0]), 25.0);
    assert_close(Some(d.cost_diff_usd[0]), 0.055 - 0.075);
    assert!(
        d.pass_rate_diff[1] <= 25.0 && 25.0 <= d.pass_rate_diff[2],
        "{d:?}"
    );
    assert_ne!(raw(&few).cost_diff_usd, raw(&many).cost_diff_usd);
    // Table 1 rows carry intervals of their own
    let row = find(&many.table1, "escalation", "raw", "all");
    let [lo, hi] = row.pass_rate_ci.expect("a pass-rate interval");
    assert!(lo <= 50.0 && 50.0 <= hi);
    assert!(row.qrec_ci.is_some() && row.csret_ci.is_some());
}

#[test]
fn issue_24_one_page_and_one_trait_for_the_agent_report_and_its_study() {
    let report = AgentExperimentReport {
        agent: build_agent(&baton_report::AgentReportInput {
            title: "a <b> study".into(),
            simulated: true,
            episodes: Vec::new(),
        }),
        study: Some(study(50)),
    };
    let html = report.export(ExportFormat::Html).unwrap();
    assert_eq!(
        html.matches("<html").count(),
        1,
        "one page, nothing spliced"
    );
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    assert!(
        html.contains("<title>a &lt;b&gt; study (agent)</title>"),
        "{html}"
    );
    assert!(html.contains("<h2>Table 1"), "{html}");
    let md = report.export(ExportFormat::Markdown).unwrap();
    assert!(md.contains("## Table 1") && md.contains(" 57.5 |"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&report.export(ExportFormat::Json).unwrap()).unwrap();
    assert_eq!(json["kind"], "agent");
    assert_eq!(json["table1"][0]["qrec"], 25.0);
    let err = report.export(ExportFormat::Csv).unwrap_err();
    assert!(matches!(err, ReportError::UnsupportedFormat { .. }));
    assert_eq!(
        err.to_string(),
        "the agent report has no csv export; it is written as md, json, latex or html"
    );
}
