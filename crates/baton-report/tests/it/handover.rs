//! The `handover` interface's score-to-outcome relation in the agent study's report, on
//! fixed inputs against hand-computed values.
//
// See: issue 38 (`issues show 38`), part 3.

use baton_report::{
    HANDOVER_MIN_EPISODES, HandoverLint, StudyEpisode, StudyInput, build_study, handover_relation,
};
use baton_types::agent::{AgentCell, AgentSwitch, Difficulty};
use baton_types::{Cost, Interface};

use crate::assert_close;

/// A fired `handover` escalation episode of task `task` at p25 whose document scored
/// `score` (claims: one held, one never held) and which resolved its task or not.
fn episode(task: &str, score: u32, resolved: bool) -> StudyEpisode {
    let cost = Cost::from_usd(0.05);
    let prefix = Cost::from_usd(0.02);
    let handoff = Cost::from_usd(0.01);
    StudyEpisode {
        task_id: task.into(),
        bucket: Difficulty::Easy,
        replicate: 0,
        cell: AgentCell::handoff("lc", "hc", 25, Interface::Handover, false),
        finished: true,
        resolved: Some(resolved),
        steps: 8,
        suffix_steps: 4,
        cost,
        phases: [prefix, handoff, cost - prefix - handoff],
        switch: Some(AgentSwitch {
            s: 4,
            bucket: Difficulty::Easy,
            fired: true,
        }),
        handover: Some(HandoverLint {
            score,
            valid: true,
            verdict: "failed".into(),
            claims: vec!["held-and-holds".into(), "never-held".into()],
        }),
    }
}

fn input(episodes: Vec<StudyEpisode>) -> StudyInput {
    StudyInput {
        pairs: vec![("lc".into(), "hc".into())],
        thresholds: Vec::new(),
        episodes,
        bootstrap: 0,
        seed: 1,
    }
}

/// Ten episodes; scores 40 … 95 (ranks 1 … 10), resolved at ranks 3, 6, 7, 9 and 10.
fn ten() -> Vec<StudyEpisode> {
    let scores = [40, 55, 60, 65, 70, 75, 80, 85, 90, 95];
    let resolved = [
        false, false, true, false, false, true, true, false, true, true,
    ];
    scores
        .iter()
        .zip(resolved)
        .enumerate()
        .map(|(i, (&s, r))| episode(&format!("t{i:02}"), s, r))
        .collect()
}

/// Spearman's ρ with ties: resolution ranks are 3 (the five unresolved, average of 1–5)
/// and 8 (the five resolved); around the mean 5.5 that is ∓2.5. Σ(rx−5.5)(ry−5.5) =
/// 2.5·((3+6+7+9+10) − 27.5) − 2.5·((1+2+4+5+8) − 27.5) = 2.5·7.5 + 2.5·7.5 = 37.5;
/// Σ(rx−5.5)² = 82.5; Σ(ry−5.5)² = 10·6.25 = 62.5. ρ = 37.5/√(82.5·62.5) = 0.522233.
/// Fisher: z = atanh ρ = 0.579552, SE = √(1.06/7) = 0.389138, z ± 1.959964·SE =
/// [−0.183156, 1.342261], back through tanh: [−0.181266, 0.872176].
#[test]
fn issue_38_the_rank_correlation_of_lint_score_and_resolution_matches_the_hand_computed_one() {
    let h = handover_relation(&input(ten())).expect("handover episodes");
    assert_eq!(h.n, 10);
    assert_eq!(h.min_n, HANDOVER_MIN_EPISODES);
    assert_eq!(h.episodes.len(), 10);
    assert_close(h.spearman, 37.5 / (82.5f64 * 62.5).sqrt());
    assert!((h.spearman.unwrap() - 0.522_233).abs() < 1e-6);
    let [low, high] = h.ci.unwrap();
    assert!((low - -0.181_266).abs() < 1e-6, "{low}");
    assert!((high - 0.872_176).abs() < 1e-6, "{high}");
    assert_eq!(h.note, None);
    let e = &h.episodes[2];
    assert_eq!(
        (
            e.task_id.as_str(),
            e.score,
            e.resolved,
            e.claims_held,
            e.claims
        ),
        ("t02", 60, Some(true), 1, 2)
    );
    assert_eq!(
        (e.pair.as_str(), e.direction.as_str(), e.p),
        ("lc/hc", "escalation", 25)
    );

    // the report carries it beside the tables, in JSON, Markdown and HTML
    let report = build_study(&input(ten())).unwrap();
    assert_eq!(report.handover.as_ref(), Some(&h));
    let json = report.to_json();
    assert_eq!(json["handover"]["n"], 10);
    assert_eq!(json["table1"][0]["interface"], "handover");
    let md = report.to_markdown();
    assert!(
        md.contains("|  10 |       +0.522 | [-0.181, +0.872] |      |"),
        "{md}"
    );
    assert!(md.contains("Fisher's z with SE = sqrt(1.06/(n - 3)); given from n = 10"));
    // a wide table is printed in parts, the first columns first
    assert!(
        md.contains("| lc/hc | escalation | p25 | t02  |         0 |         60 | yes   |"),
        "{md}"
    );
    let html = report.to_html();
    assert!(html.contains("Handover documents, per episode"), "{html}");
}

#[test]
fn issue_38_below_ten_scored_episodes_the_report_says_too_few_instead_of_a_number() {
    // nine with a resolution, and one unfinished (listed, not counted)
    let mut eps = ten();
    eps[9].finished = false;
    eps[9].resolved = None;
    let h = handover_relation(&input(eps.clone())).unwrap();
    assert_eq!((h.n, h.episodes.len()), (9, 10));
    assert_eq!((h.spearman, h.ci), (None, None));
    assert_eq!(
        h.note.as_deref(),
        Some(
            "too few episodes: 9 with a lint score and a resolution, and the correlation is given from 10"
        )
    );
    assert_eq!(h.episodes[9].resolved, None);
    let md = build_study(&input(eps)).unwrap().to_markdown();
    assert!(md.contains("|   9 |            — |      — |"), "{md}");
    assert!(
        md.contains("| too few episodes: 9 with a lint score and a resolution, and the correlation is given from 10 |"),
        "{md}"
    );

    // ten, all resolved: no ranking on that side
    let same: Vec<StudyEpisode> = (0..10)
        .map(|i| episode(&format!("t{i:02}"), 50 + i, true))
        .collect();
    let h = handover_relation(&input(same)).unwrap();
    assert_eq!(h.spearman, None);
    assert_eq!(
        h.note.as_deref(),
        Some("no rank correlation: every episode resolved its task")
    );

    // no handover episode: no section
    let mut other = episode("t1", 70, true);
    other.cell = AgentCell::handoff("lc", "hc", 25, Interface::CompactPre, false);
    other.handover = None;
    assert_eq!(handover_relation(&input(vec![other.clone()])), None);
    let report = build_study(&input(vec![other])).unwrap();
    assert!(report.to_json().get("handover").is_none());
    assert!(!report.to_markdown().contains("Handover documents"));
}
