//! Handover 0.4.1's rubric (`--rubric handover-0.4`), reproduced with 0.4.1's own readers.
//!
//! Same cues, same weights, same validity rules: header 45 (`round(45 × ok / 7)`), negative
//! knowledge 20 (5 per category found on one line with ≥ 20 characters of content), sections 15
//! (5 per cue on a heading, numbered item or bullet line), self-containment 12 (−6 per chat
//! reliance or injection hit) and prose 8 (−2 per relative date or distinct bare `#123`). It
//! keeps 0.4.1's holes on purpose (calendar-impossible dates pass, an unknown
//! `protocol_version` invalidates without costing points, claims earn nothing). It reads what
//! 0.4.1 reads: the header by its flat line rules ([`crate::header::flat`]: a trailing
//! `# comment` is part of the value), the body with its line masking (fenced code blocks and
//! lines starting with `>`), so it agrees with 0.4.1 on documents 0.4.1 misreads.
//!
//! Three differences are deliberate, and [`differences`] marks each in the output (a note,
//! rule `differs-from-0.4.1`, which changes no score): a UTF-16 document is decoded (0.4.1
//! reads the bytes as UTF-8 and scores it 20, invalid); only `\n` ends a line (0.4.1, through
//! Python's `splitlines`, also breaks lines at U+2028, U+2029, U+0085, `\v`, `\f` and
//! `\x1c`–`\x1e`, so its line numbers after one differ); and a document over 8 MiB is refused
//! before reading (0.4.1 lints it; the binary says so in its error).

use std::collections::BTreeSet;

use super::{EFFORTS, PROTOCOL_VERSIONS, REQUIRED, SHAPES, STATUSES, date_shaped, sha_shaped};
use crate::cues::{
    self, BARE_REF, CANONICAL, CATEGORIES, CHAT_RELIANCE, INJECTION, LINKED, NEGATED_BEFORE,
    NEXT_ACTION, PLACEHOLDER, RELATIVE_DATES, STRUCTURAL_LINE, VERIFICATION,
};
use crate::document::Document;
use crate::structure::{Cues, Finding, Rubric, Severity, Structure, Subscores, share};

/// Score `doc` with Handover 0.4.1's rubric.
pub fn score(doc: &Document) -> Structure {
    let mut findings = Vec::new();
    let header = header(doc, &mut findings);
    let masked = mask(doc);
    let lines: Vec<(usize, &str)> = masked.iter().map(|(n, l)| (*n, *l)).collect();
    let (chat, nits) = prose(&lines, &mut findings);
    let injections = injection(doc, &lines, &mut findings);
    let negative = negative(&lines);
    let structural: Vec<&str> = lines
        .iter()
        .map(|(_, l)| *l)
        .filter(|l| STRUCTURAL_LINE.is_match(l))
        .collect();
    let structural = structural.join("\n");
    let cues = Cues {
        negative,
        canonical: CANONICAL.is_match(&structural),
        next_action: NEXT_ACTION.is_match(&structural),
        verification: VERIFICATION.is_match(&structural),
    };
    let sections = [cues.canonical, cues.next_action, cues.verification]
        .iter()
        .filter(|b| **b)
        .count() as u32;
    let subscores = Subscores {
        header,
        negative: 5 * cues.negative.len() as u32,
        sections: 5 * sections,
        self_containment: 12u32.saturating_sub(6 * (chat + injections)),
        prose: 8u32.saturating_sub(2 * nits),
    };
    Structure::new(Rubric::Handover04, subscores, findings, cues)
}

/// The body lines as 0.4.1 masks them: every line of a fenced code block (a fence closes on
/// the opener's character, at least as long) and every line starting with `>` is empty.
/// The rule of the notes that mark a deliberate difference from 0.4.1.
pub const DIFFERS: &str = "differs-from-0.4.1";

/// Notes marking where baton deliberately reads `text` differently from 0.4.1: `utf16` when
/// it was decoded from UTF-16, and the first line holding a character Python's
/// `splitlines` treats as a line break.
pub fn differences(text: &str, utf16: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    if utf16 {
        out.push(Finding::new(
            DIFFERS,
            Severity::Note,
            Some(1),
            "deliberate difference from Handover 0.4.1: baton decodes UTF-16 from its byte-order mark; 0.4.1 reads the bytes as UTF-8 and scores the document 20/100, invalid",
        ));
    }
    let breaks = [
        '\u{2028}', '\u{2029}', '\u{85}', '\u{b}', '\u{c}', '\u{1c}', '\u{1d}', '\u{1e}',
    ];
    if let Some((n, line)) = text
        .split('\n')
        .enumerate()
        .find(|(_, l)| l.contains(breaks))
    {
        let c = line.chars().find(|c| breaks.contains(c)).unwrap_or(' ');
        out.push(Finding::new(
            DIFFERS,
            Severity::Note,
            Some(n + 1),
            format!(
                "deliberate difference from Handover 0.4.1: U+{:04X} on this line is not a line break for baton (only \\n is); 0.4.1 breaks lines there, so its line numbers after it are higher",
                c as u32
            ),
        ));
    }
    out
}

fn mask(doc: &Document) -> Vec<(usize, &str)> {
    let first = doc.body.first_line;
    let mut fence: Option<(char, usize)> = None;
    let mut out = Vec::new();
    for (i, line) in doc.text.split('\n').enumerate().skip(first - 1) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let number = i + 1;
        let lead = line.trim_start();
        let run = |c: char| lead.chars().take_while(|x| *x == c).count();
        let opener = ['`', '~']
            .into_iter()
            .map(|c| (c, run(c)))
            .find(|(_, n)| *n >= 3);
        if let Some((c, n)) = opener {
            match fence {
                None => {
                    fence = Some((c, n));
                    out.push((number, ""));
                    continue;
                }
                Some((open, len)) if open == c && n >= len => {
                    fence = None;
                    out.push((number, ""));
                    continue;
                }
                Some(_) => {}
            }
        }
        if fence.is_some() || lead.starts_with('>') {
            out.push((number, ""));
        } else {
            out.push((number, line));
        }
    }
    out
}

/// Header errors and advisories; returns the header points.
fn header(doc: &Document, findings: &mut Vec<Finding>) -> u32 {
    let Some(h) = &doc.flat else {
        findings.push(Finding::new(
            "header",
            Severity::Error,
            Some(1),
            "no header: a handoff opens with a `---` front-matter block",
        ));
        return 0;
    };
    let mut bad = BTreeSet::new();
    let mut error = |key: &'static str, msg: String, bad: &mut BTreeSet<&'static str>| {
        bad.insert(key);
        findings.push(Finding::new(
            "header",
            Severity::Error,
            Some(h.line_of(key)),
            msg,
        ));
    };
    let raw = |key: &str| h.get(key).map(|f| f.value.raw());
    for key in REQUIRED {
        match raw(key) {
            None | Some("") => error(
                key,
                format!("required header key \"{key}\" is missing or empty"),
                &mut bad,
            ),
            Some(v) if PLACEHOLDER.is_match(v) => error(
                key,
                format!(
                    "\"{key}\" still holds a placeholder ({})",
                    cues::first_placeholder(v)
                ),
                &mut bad,
            ),
            Some(_) => {}
        }
    }
    if let Some(v) = raw("iso_date").filter(|v| !v.is_empty() && !date_shaped(v)) {
        error(
            "iso_date",
            format!("iso_date must be YYYY-MM-DD, found \"{v}\""),
            &mut bad,
        );
    }
    if let Some(v) = raw("true_at_sha").filter(|v| !v.is_empty())
        && !sha_shaped(v)
        && v != "uncommitted"
    {
        error(
            "true_at_sha",
            format!("true_at_sha must be 7–40 hex characters or \"uncommitted\", found \"{v}\""),
            &mut bad,
        );
    }
    for (key, allowed) in [
        ("shape", &SHAPES[..]),
        ("status", &STATUSES[..]),
        ("suggested_effort", &EFFORTS[..]),
    ] {
        if let Some(v) = raw(key).filter(|v| !v.is_empty() && !allowed.contains(v)) {
            error(
                key,
                format!("{key} must be one of {}; found \"{v}\"", allowed.join(", ")),
                &mut bad,
            );
        }
    }
    if raw("status") == Some("done") && raw("verify_cmd").is_none_or(str::is_empty) {
        error(
            "status",
            "status is \"done\" but verify_cmd is empty: done needs a passing check".into(),
            &mut bad,
        );
    }
    if let Some(v) =
        raw("protocol_version").filter(|v| !v.is_empty() && !PROTOCOL_VERSIONS.contains(v))
    {
        error(
            "protocol_version",
            format!(
                "protocol_version \"{v}\" is unknown (known: {})",
                PROTOCOL_VERSIONS.join(", ")
            ),
            &mut bad,
        );
    }
    if raw("author") == Some("") {
        error(
            "author",
            "author is present but empty: name who wrote this, or drop the key".into(),
            &mut bad,
        );
    }
    let advisory = |findings: &mut Vec<Finding>, line, msg: String| {
        findings.push(Finding::new("advisory", Severity::Note, Some(line), msg));
    };
    if raw("protocol_version").is_none() {
        advisory(
            findings,
            h.open_line,
            "no protocol_version: add `protocol_version: 1` so a reader knows the contract".into(),
        );
    }
    match raw("author") {
        None => advisory(
            findings,
            h.open_line,
            "no author: a receiver cannot tell whom to ask".into(),
        ),
        Some(v) if PLACEHOLDER.is_match(v) => advisory(
            findings,
            h.line_of("author"),
            format!("author is a placeholder ({})", cues::first_placeholder(v)),
        ),
        Some(_) => {}
    }
    let ok = REQUIRED.iter().filter(|k| !bad.contains(*k)).count();
    share(45, ok, REQUIRED.len())
}

/// Chat reliance (H1), relative dates (H3) and bare references (H4) on the masked lines;
/// returns (H1 hits, H3 + H4 hits).
fn prose(lines: &[(usize, &str)], findings: &mut Vec<Finding>) -> (u32, u32) {
    let (mut chat, mut nits) = (0, 0);
    let mut seen = BTreeSet::new();
    for &(number, line) in lines {
        for re in CHAT_RELIANCE.iter() {
            if let Some(m) = re.find(line)
                && !NEGATED_BEFORE.is_match(&line[..m.start()])
            {
                chat += 1;
                findings.push(Finding::new(
                    "H1",
                    Severity::Warning,
                    Some(number),
                    format!(
                        "leans on context the reader does not have: \"{}\"",
                        m.as_str()
                    ),
                ));
            }
        }
        for re in RELATIVE_DATES.iter() {
            if let Some(m) = re.find(line) {
                nits += 1;
                findings.push(Finding::new(
                    "H3",
                    Severity::Warning,
                    Some(number),
                    format!("relative date \"{}\": write an ISO date", m.as_str()),
                ));
            }
        }
        if let Some(c) = BARE_REF.captures(line)
            && !LINKED.is_match(line)
            && seen.insert(c[1].to_string())
        {
            nits += 1;
            findings.push(Finding::new(
                "H4",
                Severity::Warning,
                Some(number),
                format!("bare reference #{}: give a URL or a ticket id", &c[1]),
            ));
        }
    }
    (chat, nits)
}

fn injection(doc: &Document, lines: &[(usize, &str)], findings: &mut Vec<Finding>) -> u32 {
    let mut hits = 0;
    if let Some(h) = &doc.flat
        && let Some(f) = h.get("first_action")
        && let Some(m) = cues::first_injection(f.value.raw())
    {
        hits += 1;
        findings.push(Finding::new(
            "injection",
            Severity::Warning,
            Some(f.line),
            format!("first_action runs downloaded or destructive code: \"{m}\""),
        ));
    }
    for &(number, line) in lines {
        if INJECTION.is_match(line) {
            hits += 1;
            let m = cues::first_injection(line).unwrap_or_default();
            findings.push(Finding::new(
                "injection",
                Severity::Warning,
                Some(number),
                format!("an instruction runs downloaded or destructive code: \"{m}\""),
            ));
        }
    }
    hits
}

fn negative(lines: &[(usize, &str)]) -> Vec<&'static str> {
    let mut found = Vec::new();
    for &(_, line) in lines {
        for cat in CATEGORIES.iter() {
            if found.contains(&cat.id) || !cat.cue.is_match(line) {
                continue;
            }
            if cues::substance(line, &cat.cue) >= 20 {
                found.push(cat.id);
                break;
            }
        }
    }
    found
}
