//! The trap bench: Handover's scenarios, and negation-aware coverage.

use baton_handover::bench::{self, Coverage};
use baton_handover::{Error, Rubric};

use crate::support::{handover_dir, write};

#[test]
fn handover_scenarios_good_documents_cover_every_trap_and_bad_ones_none() {
    let Some(dir) = handover_dir() else { return };
    let scenarios = bench::load(&dir.join("bench/scenarios")).unwrap();
    assert_eq!(scenarios.len(), 3);
    for scenario in &scenarios {
        let results = bench::run(scenario, Rubric::Handover04).unwrap();
        let by_name = |n: &str| {
            results
                .iter()
                .find(|r| r.path.file_name().unwrap() == n)
                .unwrap()
        };
        let (good, bad) = (by_name("good.handover.md"), by_name("bad.handover.md"));
        assert_eq!(
            (good.covered, good.naive),
            (3, 3),
            "{}: {:#?}",
            scenario.name,
            good.traps
        );
        assert_eq!((bad.covered, bad.naive), (0, 0), "{}", scenario.name);
        assert_eq!(good.score, 100);
        assert_eq!(good.quality, 100);
        assert_eq!(bad.quality, bad.score.div_ceil(2));
    }
}

/// A document that names the reverted feature and tells the reader to re-add it covers the
/// trap under a raw-text match, not here.
#[test]
fn issue_12_telling_the_reader_to_walk_into_a_trap_does_not_cover_it() {
    let Some(dir) = handover_dir() else { return };
    let source = dir.join("bench/scenarios/reverted-feature");
    let tmp = tempfile::tempdir().unwrap();
    let traps = std::fs::read_to_string(source.join("traps.json")).unwrap();
    let good = std::fs::read_to_string(source.join("good.handover.md")).unwrap();
    let inverted = good.replace(
        "2. Add rate limiting to the route.",
        "2. The client-side total was reverted, but re-add the client-side total for a snappier UI.",
    );
    assert_ne!(inverted, good);
    write(
        tmp.path(),
        &[("traps.json", &traps), ("inverted.handover.md", &inverted)],
    );
    let scenario = bench::load(tmp.path()).unwrap().remove(0);
    let result = bench::run(&scenario, Rubric::Baton).unwrap().remove(0);
    let trap = result
        .traps
        .iter()
        .find(|t| t.id == "re-add-reverted-client-total")
        .unwrap();
    assert!(trap.naive, "a raw-text match credits it");
    assert_eq!(trap.coverage, Coverage::Contradicted);
    assert!(
        trap.evidence.contains("re-add the client-side total"),
        "{}",
        trap.evidence
    );
    assert_eq!(result.covered, 2);
}

#[test]
fn both_kinds_of_trap_and_bad_scenario_files() {
    let tmp = tempfile::tempdir().unwrap();
    let traps = r#"{"scenario": "own", "premise": "p", "traps": [
        {"id": "avoid", "kind": "tried-and-failed", "guard_pattern": "httpkit[^.]*(v3|3\\.x)"},
        {"id": "step", "kind": "ambiguous-next-action", "guard_pattern": "lock:ci"},
        {"id": "absent", "kind": "deliberately-out-of-scope", "guard_pattern": "csv export"}
    ]}"#;
    write(
        tmp.path(),
        &[
            ("traps.json", traps),
            (
                "a.md",
                "- Tried and failed: httpkit v3 removed the retry hooks. Stay on 2.9.\n1. **Run `npm run lock:ci` first.**\n",
            ),
            (
                "b.md",
                "- Upgrade httpkit to v3 now.\n- No need to run `lock:ci` first.\n",
            ),
        ],
    );
    let scenario = bench::load(tmp.path()).unwrap().remove(0);
    assert_eq!(scenario.name, "own");
    let results = bench::run(&scenario, Rubric::Baton).unwrap();
    let coverage =
        |i: usize| -> Vec<Coverage> { results[i].traps.iter().map(|t| t.coverage).collect() };
    assert_eq!(
        coverage(0),
        [Coverage::Covered, Coverage::Covered, Coverage::Missing]
    );
    assert_eq!(
        coverage(1),
        [
            Coverage::Contradicted,
            Coverage::Contradicted,
            Coverage::Missing
        ]
    );
    assert_eq!(results[1].traps[0].line, Some(1));

    write(
        tmp.path(),
        &[(
            "traps.json",
            r#"{"traps": [{"id": "x", "kind": "k", "guard_pattern": "(unclosed"}]}"#,
        )],
    );
    let err = bench::load(tmp.path()).unwrap_err();
    assert!(
        matches!(err, Error::Pattern { ref trap, .. } if trap == "x"),
        "{err}"
    );
    write(tmp.path(), &[("traps.json", r#"{"traps": [{"id": "x"}]}"#)]);
    let err = bench::load(tmp.path()).unwrap_err();
    assert!(
        err.to_string().contains("traps.json") && err.to_string().contains("kind"),
        "{err}"
    );
    let empty = tempfile::tempdir().unwrap();
    assert!(matches!(
        bench::load(empty.path()),
        Err(Error::NoScenarios { .. })
    ));
}
