//! One-line header variants of Handover's own example, with the verdicts Handover 0.4.1
//! gives them (derived from its flat header rules: `^key\s*:\s*(.*)$` lines, trimmed, one
//! pair of matching quotes removed, everything else ignored, a trailing `# …` kept in the
//! value). The example itself scores 100 and is valid; a bad required key costs
//! `45 − round(45 × 6 / 7) = 6` points; a bad optional key invalidates without costing.

use baton_handover::{Document, Rubric, Severity};

use crate::support::handover_dir;

/// (line to replace, its replacement, 0.4.1's score, 0.4.1's validity).
const VARIANTS: &[(&str, &str, u32, bool)] = &[
    (
        "first_action: ",
        "first_action: Step 1: run the pending migration",
        100,
        true,
    ),
    (
        "first_action: ",
        "first_action: `npm run migrate` on the preview database",
        100,
        true,
    ),
    (
        "first_action: ",
        "first_action: *Run* the pending migration first",
        100,
        true,
    ),
    (
        "first_action: ",
        "first_action: [step 1] run the pending migration",
        100,
        true,
    ),
    (
        "first_action: ",
        "first_action: &now run the pending migration",
        100,
        true,
    ),
    ("author: ", "author: @dana", 100, true),
    (
        "verify_cmd: ",
        "verify_cmd: ! grep -q STUB src/routes/guestOrder.ts",
        100,
        true,
    ),
    ("handoff: ", "handoff: \"guest-checkout\"", 100, true),
    ("handoff: ", "handoff: 'guest-checkout'", 100, true),
    ("status: ", "status : in_progress", 100, true),
    (
        "shape: ",
        "shape: handoff   # handoff | delegation | broadcast",
        94,
        false,
    ),
    (
        "status: ",
        "status: in_progress   # 'done' only when verify_cmd passes",
        94,
        false,
    ),
    (
        "true_at_sha: ",
        "true_at_sha: a1b2c3d4e5f6   # HEAD when written",
        94,
        false,
    ),
    (
        "protocol_version: ",
        "protocol_version: 1   # the contract",
        100,
        false,
    ),
    ("status: ", "# status: in_progress", 94, false),
    ("status: ", "Status: in_progress", 94, false),
    ("status: ", "  status: in_progress", 94, false),
];

fn variant(example: &str, prefix: &str, line: &str) -> String {
    let mut replaced = false;
    example
        .split('\n')
        .map(|l| {
            if !replaced && l.starts_with(prefix) {
                replaced = true;
                line.to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn issue_26_handover_mode_agrees_with_0_4_1_on_header_variants() {
    let Some(dir) = handover_dir() else { return };
    let example = std::fs::read_to_string(dir.join("examples/handover.example.md")).unwrap();
    let base = Rubric::Handover04.score(&Document::parse(&example));
    assert_eq!((base.score, base.valid), (100, true));
    let mut disagree = Vec::new();
    for (prefix, line, score, valid) in VARIANTS {
        let text = variant(&example, prefix, line);
        assert_ne!(text, example, "{line}");
        let doc = Document::parse(&text);
        let s = Rubric::Handover04.score(&doc);
        if (s.score, s.valid) != (*score, *valid) {
            disagree.push(format!(
                "{line}: got {} {}, 0.4.1 gives {score} {valid}",
                s.score, s.valid
            ));
        }
        // baton mode says where 0.4.1 judges the header differently.
        let b = Rubric::Baton.score(&doc);
        let b_valid = !b.findings.iter().any(|f| f.severity == Severity::Error);
        let noted = b.findings.iter().any(|f| {
            f.rule == "handover-0.4-differs"
                && f.message
                    .starts_with("Handover 0.4.1 would call this header")
        });
        assert_eq!(noted, b_valid != *valid, "{line}: {:#?}", b.findings);
    }
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
    // The variants that only baton reads differently are flagged per key.
    let doc = Document::parse(&variant(&example, "shape: ", VARIANTS[10].1));
    let b = Rubric::Baton.score(&doc);
    assert!(b.valid);
    assert!(b.findings.iter().any(|f| {
        f.rule == "handover-0.4-differs"
            && f.line == Some(7)
            && f.message
                .contains("reads shape as \"handoff   # handoff | delegation | broadcast\"")
    }));
}
