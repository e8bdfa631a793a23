use baton_report::{BootstrapConfig, CSV_COLUMNS, ReportInput, build};
use baton_types::{Cost, EpisodeStatus, Family, Interface, SwitchPoint};

use crate::*;

/// Two math tasks and one code task; escalation at early and late, one downshift
/// cell, one incomplete episode, one prefix cost per escalation episode.
pub fn tiny() -> ReportInput {
    let early = esc(SwitchPoint::Early, Interface::Raw);
    let late = esc(SwitchPoint::Late, Interface::Raw);
    let mut eps = vec![
        scored("math/0", Family::Math, &lc(), 0, 0.0, 0.0012),
        scored("math/1", Family::Math, &lc(), 0, 1.0, 0.0014),
        scored("math/0", Family::Math, &hc(), 0, 1.0, 0.021),
        scored("math/1", Family::Math, &hc(), 0, 1.0, 0.019),
        scored("math/0", Family::Math, &early, 0, 1.0, 0.018),
        scored("math/1", Family::Math, &early, 0, 1.0, 0.0175),
        scored("math/0", Family::Math, &late, 0, 0.0, 0.006),
        unfinished(
            "math/1",
            Family::Math,
            &late,
            0,
            EpisodeStatus::Incomplete,
            "budget stop",
        ),
        scored("code/0", Family::Code, &lc(), 0, 0.0, 0.002),
        scored("code/0", Family::Code, &hc(), 0, 1.0, 0.03),
        scored("code/0", Family::Code, &early, 0, 1.0, 0.025),
        scored(
            "code/0",
            Family::Code,
            &down(SwitchPoint::Early, Interface::TrajDrop),
            0,
            0.0,
            0.01,
        ),
    ];
    for e in &mut eps {
        if e.cell == early {
            e.prefix_cost = Some(Cost::from_usd(0.0003));
        }
        // A reply with nothing to read: scored 0, counted as "no answer".
        e.no_answer = e.task_id == "code/0" && e.score == Some(0.0);
    }
    ReportInput {
        title: "tiny".to_owned(),
        ..input(eps)
    }
}

#[test]
fn markdown_for_a_tiny_input() {
    let md = build(&tiny()).to_markdown();
    insta::assert_snapshot!("tiny_markdown", md);
}

#[test]
fn json_shape() {
    let report = build(&ReportInput {
        bootstrap: Some(BootstrapConfig {
            replicates: 200,
            seed: 5,
        }),
        ..tiny()
    });
    let json = report.to_json();
    for key in [
        "title",
        "simulated",
        "cells",
        "restart_controls",
        "incomplete",
    ] {
        assert!(json.get(key).is_some(), "missing top-level {key}");
    }
    let anchor = &json["cells"][0];
    assert_eq!(anchor["interface"], "single");
    assert!(anchor["k"].is_null() && anchor["direction"].is_null());
    let handoff = json["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["direction"] == "escalation")
        .unwrap();
    for key in [
        "pair",
        "direction",
        "family",
        "k",
        "interface",
        "score",
        "cost_per_task",
        "qrec",
        "csret",
        "n_attempted",
        "n_scored",
        "qrec_omitted_reason",
        "score_ci",
        "qrec_ci",
        "csret_ci",
    ] {
        assert!(handoff.get(key).is_some(), "missing cell key {key}");
    }
    assert_eq!(handoff["k"], "early");
    insta::assert_json_snapshot!("tiny_json", json);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&report.to_json_string()).unwrap(),
        json
    );
}

#[test]
fn csv_has_one_line_per_row_and_raw_numbers() {
    let report = build(&tiny());
    let csv = report.to_csv();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], CSV_COLUMNS.join(","));
    assert_eq!(lines.len(), report.cells.len() + 1);
    insta::assert_snapshot!(lines[1..4].join("\n"), @r#"
    p,,code,,single,lc,sim/lc,single(sim/lc),0,0.002,,,,,,,,,,,,,,,1,1,0,0,0,1,1,
    p,,code,,single,hc,sim/hc,single(sim/hc),100,0.03,,,,,,,,,,,,,,,1,1,0,0,0,1,0,
    p,,math,,single,lc,sim/lc,single(sim/lc),50,0.0013,,,,,,,,,,,,,,,2,2,0,0,0,2,0,
    "#);
    // A handoff row: quoted cell label, the reason for the missing per-family QRec.
    let late = lines
        .iter()
        .find(|l| l.contains("late, raw)"))
        .expect("late row");
    assert!(
        late.contains(",small_quality_gap,") || late.contains(",,"),
        "{late}"
    );
    assert!(
        late.contains("\"handoff(sim/lc -> sim/hc, late, raw)\""),
        "{late}"
    );
    for line in &lines {
        // Every line has as many fields as the header once quoted commas are skipped.
        let mut fields = 1;
        let mut quoted = false;
        for c in line.chars() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => fields += 1,
                _ => {}
            }
        }
        assert_eq!(fields, CSV_COLUMNS.len(), "{line}");
    }
}

#[test]
fn latex_tables_escape_and_flag_simulation() {
    let tex = build(&tiny()).to_latex();
    assert!(tex.contains("\\begin{longtable}{lllrrrrrr}"), "{tex}");
    assert!(tex.contains("traj\\_drop"), "{tex}");
    assert!(tex.contains("not a finding about real LLMs"), "{tex}");
}

#[test]
fn real_model_reports_carry_no_simulation_notice() {
    let report = build(&ReportInput {
        simulated: false,
        ..tiny()
    });
    assert!(!report.to_markdown().contains("Simulated models"));
    assert!(build(&tiny()).to_markdown().contains("Simulated models"));
}

#[test]
fn markdown_marks_qrec_omitted_under_the_5_point_rule() {
    let eps = vec![
        scored("d/0", Family::Data2Text, &lc(), 0, 0.50, 0.01),
        scored("d/0", Family::Data2Text, &hc(), 0, 0.53, 0.05),
        scored(
            "d/0",
            Family::Data2Text,
            &esc(SwitchPoint::Early, Interface::Raw),
            0,
            0.51,
            0.03,
        ),
    ];
    let md = build(&ReportInput {
        bootstrap: Some(BootstrapConfig {
            replicates: 20,
            seed: 0,
        }),
        ..input(eps)
    })
    .to_markdown();
    let line = md
        .lines()
        .find(|l| l.starts_with("| data2text | early"))
        .expect("data2text row");
    // Score 51.0, $0.03, QRec omitted (|53 - 50| < 5), CSRet 100 * (.05 - .03)/(.05 - .01) = 50.
    insta::assert_snapshot!(line, @"| data2text | early | raw       |  51.0 | $0.03000 |   —† |  50.0 | [51.0, 51.0] |");
    assert!(
        md.contains("—† QRec omitted: the anchors differ by less than 5 points"),
        "{md}"
    );
}

#[test]
fn the_spend_line_is_in_every_format_that_shows_money() {
    use baton_types::Spend;
    let report = build(&ReportInput {
        spend: Some(Spend {
            paid: Cost::from_usd(0.0125),
            billed_attempts: 1825,
            unusable_attempts: 739,
            unknown_usage_attempts: 300,
            unpriced_attempts: 0,
            ..Spend::default()
        }),
        ..tiny()
    });
    let json = report.to_json();
    assert_eq!(
        json["spend"],
        serde_json::json!({"paid_usd": 0.0125, "billed_attempts": 1825, "unusable_attempts": 739,
            "unknown_usage_attempts": 300, "unpriced_attempts": 0, "batched_attempts": 0,
            "saved_by_batching_usd": 0.0, "saved_by_forking_usd": 0.0})
    );
    let line = "Spend: $0.012500 paid over 1825 billed attempts (739 unusable). Not in that sum, so it is a lower bound: 300 attempts whose usage could not be read and 0 whose cost could not be computed.";
    assert!(
        report.to_markdown().contains(line),
        "{}",
        report.to_markdown()
    );
    assert!(report.to_html().contains(line));
    // an input that does not know its spend has no spend key
    assert!(build(&tiny()).to_json().get("spend").is_none());
}
