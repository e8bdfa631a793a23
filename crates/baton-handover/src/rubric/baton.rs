//! baton's rubric (the default): Handover's five buckets, re-weighted so that the protocol's
//! most important rule, claims carry checks, earns points, and with the holes closed.
//!
//! | bucket | max | rule |
//! |---|---|---|
//! | header | 25 | `round(25 × ok / 7)` over the required keys, −5 per invalid optional key; a key fails when missing, null, a list, a placeholder, malformed, a calendar-impossible date, a duplicate, or (for `verify_cmd`) a check that cannot fail; `status: done` fails without a real `verify_cmd` |
//! | negative | 20 | 5 per category on a heading, item, paragraph or table row with ≥ 20 characters of content (a heading's content is the first block under it); "none", "nothing", "n/a" are not content |
//! | sections | 35 | claims 20 (`round(20 × real checks / claim rows)`, rows tagged `[belief…]` or `n/a` left out; no real check, no points), canonical sources 5, next action 5 (a marked first step that agrees with `first_action`), verification 5 (a section with a command that can fail) |
//! | self_containment | 12 | −6 per chat-history reliance (outside code spans, negation-aware) or injection pattern (in `first_action`, `verify_cmd`, claim checks, body text or table cells) |
//! | prose | 8 | −2 per relative date or distinct bare `#123` outside code spans and links |
//!
//! Any error-severity finding makes the document invalid.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    EFFORTS, OPTIONAL, PROTOCOL_VERSIONS, REQUIRED, SHAPES, STATUSES, date_shaped, sha_shaped,
};
use crate::body::{Block, BlockKind, Body};
use crate::check;
use crate::claims::{self, ClaimRow, RowKind};
use crate::cues::{
    self, BARE_REF, CANONICAL, CATEGORIES, CHAT_RELIANCE, INJECTION, NEGATED_BEFORE, NEXT_ACTION,
    PLACEHOLDER, RELATIVE_DATES, VERIFICATION,
};
use crate::document::Document;
use crate::header::Value;
use crate::structure::{Cues, Finding, Rubric, Severity, Structure, Subscores, share};

/// Score `doc` with baton's rubric.
pub fn score(doc: &Document) -> Structure {
    let mut findings = Vec::new();
    let header = header(doc, &mut findings);
    let rows = claims::rows(&doc.body);
    let claim_points = claims(&rows, &mut findings);
    let negative = negative(&doc.body, &mut findings);
    let (canonical, next_action, verification) = sections(doc, &mut findings);
    let hits = chat(&doc.body, &mut findings) + injection(doc, &rows, &mut findings);
    let nits = prose(&doc.body, &mut findings);
    let cues = Cues {
        negative,
        canonical,
        next_action,
        verification,
    };
    let cue_points = 5 * [canonical, next_action, verification]
        .iter()
        .filter(|b| **b)
        .count() as u32;
    let subscores = Subscores {
        header,
        negative: 5 * cues.negative.len() as u32,
        sections: claim_points + cue_points,
        self_containment: 12u32.saturating_sub(6 * hits),
        prose: 8u32.saturating_sub(2 * nits),
    };
    differs_from_04(doc, &mut findings);
    findings.sort_by_key(|f| f.line.unwrap_or(0));
    Structure::new(Rubric::Baton, subscores, findings, cues)
}

/// Notes where Handover 0.4.1 reads the header differently (its flat line rules keep a
/// trailing `# comment` in the value, keep quotes it cannot pair, see `|` as the value), and
/// whether it would then judge the header differently.
fn differs_from_04(doc: &Document, findings: &mut Vec<Finding>) {
    let (Some(ours), Some(theirs)) = (&doc.header, &doc.flat) else {
        return;
    };
    for key in REQUIRED.iter().chain(OPTIONAL.iter()) {
        let (a, b) = (ours.get(key), theirs.get(key));
        let (a_text, b_text) = (a.map(|f| f.value.raw()), b.map(|f| f.value.raw()));
        if a_text == b_text {
            continue;
        }
        let line = a.or(b).map_or(ours.open_line, |f| f.line);
        let show = |t: Option<&str>| match t {
            None => "nothing".to_string(),
            Some(t) => format!("\"{}\"", t.chars().take(80).collect::<String>()),
        };
        findings.push(note(
            "handover-0.4-differs",
            Some(line),
            format!(
                "Handover 0.4.1 reads {key} as {} where baton reads {}",
                show(b_text),
                show(a_text)
            ),
        ));
    }
    let valid_here = !findings.iter().any(|f| f.severity == Severity::Error);
    let compat = crate::rubric::compat::score(doc);
    if compat.valid != valid_here {
        let verdict = if compat.valid { "valid" } else { "INVALID" };
        let why: Vec<&str> = compat
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.message.as_str())
            .take(3)
            .collect();
        let why = if why.is_empty() {
            String::new()
        } else {
            format!(": {}", why.join("; "))
        };
        findings.push(note(
            "handover-0.4-differs",
            Some(ours.open_line),
            format!(
                "Handover 0.4.1 would call this header {verdict} ({}/100 on its rubric){why}",
                compat.score
            ),
        ));
    }
}

fn err(rule: &'static str, line: usize, msg: String) -> Finding {
    Finding::new(rule, Severity::Error, Some(line), msg)
}

fn warn(rule: &'static str, line: usize, msg: String) -> Finding {
    Finding::new(rule, Severity::Warning, Some(line), msg)
}

fn note(rule: &'static str, line: Option<usize>, msg: String) -> Finding {
    Finding::new(rule, Severity::Note, line, msg)
}

/// Header validity; returns its points.
fn header(doc: &Document, findings: &mut Vec<Finding>) -> u32 {
    let Some(h) = &doc.header else {
        findings.push(err(
            "header-missing",
            1,
            "no header: a handoff opens with a `---` block of `key: value` lines (handoff, iso_date, true_at_sha, shape, first_action, verify_cmd, status)".into(),
        ));
        return 0;
    };
    for (line, msg) in &h.syntax {
        findings.push(err(
            "header-syntax",
            *line,
            format!("header line {line}: {msg}"),
        ));
    }
    let mut bad: BTreeSet<&str> = BTreeSet::new();
    let mut lines: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for f in &h.fields {
        lines.entry(f.key.as_str()).or_default().push(f.line);
    }
    for (key, at) in &lines {
        if at.len() > 1 {
            bad.insert(key);
            findings.push(err(
                "header-duplicate",
                at[1],
                format!(
                    "header key \"{key}\" appears {} times (lines {}); keep one",
                    at.len(),
                    join(at)
                ),
            ));
        }
        if !REQUIRED.contains(key) && !OPTIONAL.contains(key) {
            findings.push(note(
                "header-unknown-key",
                Some(at[0]),
                format!("unknown header key \"{key}\" (ignored)"),
            ));
        }
    }
    for key in REQUIRED {
        let line = h.line_of(key);
        let problem = match h.get(key).map(|f| &f.value) {
            None => Some((
                "header-missing",
                format!("required header key \"{key}\" is missing"),
            )),
            Some(Value::Nested) => Some((
                "header-type",
                format!("header key \"{key}\" must be a single value, not a list or mapping"),
            )),
            Some(v) => match v.text().filter(|t| !t.is_empty()) {
                None => Some((
                    "header-missing",
                    format!("required header key \"{key}\" is empty"),
                )),
                Some(t) if PLACEHOLDER.is_match(t) => Some((
                    "header-placeholder",
                    format!(
                        "\"{key}\" still holds a placeholder ({})",
                        cues::first_placeholder(t)
                    ),
                )),
                Some(t) => value_problem(key, t),
            },
        };
        if let Some((rule, msg)) = problem {
            bad.insert(key);
            findings.push(err(rule, line, msg));
        }
    }
    if doc.field("status") == Some("done") && bad.contains("verify_cmd") {
        bad.insert("status");
        findings.push(err(
            "done-unchecked",
            h.line_of("status"),
            "status is \"done\" without a verify_cmd that can fail: done needs a passing check"
                .into(),
        ));
    }
    let mut invalid_optional = 0;
    for key in OPTIONAL {
        let Some(field) = h.get(key) else { continue };
        let problem = match (&field.value, field.value.text()) {
            (Value::Nested, _) => Some(format!("header key \"{key}\" must be a single value")),
            (_, None) | (_, Some("")) if key != "supersedes" => Some(format!(
                "\"{key}\" is present but empty: fill it in or drop the key"
            )),
            (_, Some(t)) if key == "protocol_version" && !PROTOCOL_VERSIONS.contains(&t) => {
                Some(format!(
                    "protocol_version \"{t}\" is unknown (known: {})",
                    PROTOCOL_VERSIONS.join(", ")
                ))
            }
            (_, Some(t)) if key == "author" && PLACEHOLDER.is_match(t) => Some(format!(
                "author is a placeholder ({}): name someone a receiver can ask",
                cues::first_placeholder(t)
            )),
            (_, Some(t)) if key == "suggested_effort" && !EFFORTS.contains(&t) => Some(format!(
                "suggested_effort must be one of {}; found \"{t}\"",
                EFFORTS.join(", ")
            )),
            _ => None,
        };
        if let Some(msg) = problem {
            invalid_optional += 1;
            findings.push(err(
                "header-optional",
                field.line,
                format!("{msg} (costs 5 points)"),
            ));
        }
    }
    if h.get("protocol_version").is_none() {
        findings.push(note(
            "advisory",
            Some(h.open_line),
            "no protocol_version: add `protocol_version: 1` so a reader knows the contract".into(),
        ));
    }
    if h.get("author").is_none() {
        findings.push(note(
            "advisory",
            Some(h.open_line),
            "no author: a receiver cannot tell whom to ask".into(),
        ));
    }
    let ok = REQUIRED.iter().filter(|k| !bad.contains(*k)).count();
    share(25, ok, REQUIRED.len()).saturating_sub(5 * invalid_optional)
}

fn join(lines: &[usize]) -> String {
    lines
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// What is wrong with the value of a required key, by its rule.
fn value_problem(key: &str, v: &str) -> Option<(&'static str, String)> {
    match key {
        "iso_date" if !date_shaped(v) => Some((
            "header-date",
            format!("iso_date must be YYYY-MM-DD, found \"{v}\""),
        )),
        "iso_date" if v.parse::<jiff::civil::Date>().is_err() => Some((
            "header-date",
            format!("iso_date \"{v}\" is not a calendar date"),
        )),
        "true_at_sha" if !sha_shaped(v) && v != "uncommitted" => Some((
            "header-sha",
            format!("true_at_sha must be 7–40 hex characters or \"uncommitted\", found \"{v}\""),
        )),
        "shape" if !SHAPES.contains(&v) => Some((
            "header-enum",
            format!("shape must be one of {}; found \"{v}\"", SHAPES.join(", ")),
        )),
        "status" if !STATUSES.contains(&v) => Some((
            "header-enum",
            format!("status must be one of {}; found \"{v}\"", STATUSES.join(", ")),
        )),
        "verify_cmd" => check::vacuous(v).map(|why| {
            (
                "verify-cmd-vacuous",
                format!("verify_cmd `{v}` cannot fail: {why}; give the command that proves the state still holds"),
            )
        }),
        _ => None,
    }
}

/// Claims with checks; returns the claims' points (of 20).
fn claims(rows: &[ClaimRow], findings: &mut Vec<Finding>) -> u32 {
    let (mut real, mut counted, mut checks) = (0, 0, 0);
    for row in rows {
        let label = &row.label;
        match &row.kind {
            RowKind::Check(cmd) => {
                counted += 1;
                checks += 1;
                match check::vacuous(cmd) {
                    Some(why) => findings.push(warn(
                        "claim-vacuous",
                        row.line,
                        format!("claim \"{label}\": `{cmd}` cannot fail: {why}; write a check that exits non-zero when the claim is false"),
                    )),
                    None => real += 1,
                }
            }
            RowKind::Unchecked => {
                counted += 1;
                findings.push(warn(
                    "claim-unchecked",
                    row.line,
                    format!("claim \"{label}\" has neither a check (a code span in its last cell) nor a `[belief, unverified]` tag"),
                ));
            }
            RowKind::Split(text) => {
                counted += 1;
                findings.push(warn(
                    "claim-split",
                    row.line,
                    format!("claim \"{label}\": an unescaped `|` cut its check cell ({text}); inside a table write `\\|`, even in a code span"),
                ));
            }
            RowKind::Belief | RowKind::NotApplicable => {}
        }
    }
    if checks > claims::MAX_CLAIMS {
        findings.push(note(
            "claims-cap",
            None,
            format!(
                "{checks} claims have checks; only the first {} run",
                claims::MAX_CLAIMS
            ),
        ));
    }
    if real == 0 {
        let msg = if rows.is_empty() {
            "no claims table: list state claims in a table whose last column is `Verify`, each with a check or a `[belief, unverified]` tag"
        } else {
            "no claim carries a check that can fail"
        };
        findings.push(Finding::new("claims-missing", Severity::Warning, None, msg));
        return 0;
    }
    share(20, real, counted)
}

/// Whether `content` says there is nothing to report.
fn says_nothing(content: &str) -> bool {
    let after = content.find(':').map_or(content, |i| &content[i + 1..]);
    let t = after
        .trim_start_matches(|c: char| c.is_whitespace() || "*_-—–.".contains(c))
        .to_lowercase();
    [
        "none",
        "nothing",
        "n/a",
        "not applicable",
        "nil",
        "no known",
        "no notable",
        "nothing yet",
    ]
    .iter()
    .any(|p| t.starts_with(p) && !t[p.len()..].starts_with(|c: char| c.is_alphanumeric()))
}

/// Negative-knowledge categories credited.
fn negative(body: &Body, findings: &mut Vec<Finding>) -> Vec<&'static str> {
    // Units: text blocks (a heading's content is the first block under it) and table rows.
    let mut units: Vec<(String, String)> = Vec::new();
    for (i, block) in body.blocks.iter().enumerate() {
        match block.kind {
            BlockKind::Code => {}
            BlockKind::Heading(_) => {
                let content = body
                    .section(i)
                    .iter()
                    .find(|b| b.kind != BlockKind::Code && !b.prose.trim().is_empty())
                    .map(|b| format!(":{}", b.prose))
                    .unwrap_or_default();
                units.push((block.prose.clone(), content));
            }
            _ => units.push((block.prose.clone(), block.prose.clone())),
        }
    }
    for table in &body.tables {
        for row in &table.rows {
            let text: Vec<&str> = row.cells.iter().map(|c| c.text.as_str()).collect();
            let text = text.join(" | ");
            units.push((text.clone(), text));
        }
    }
    let mut found = Vec::new();
    for (cue_text, content) in &units {
        for cat in CATEGORIES.iter() {
            if found.contains(&cat.id) || !cat.cue.is_match(cue_text) {
                continue;
            }
            if cues::substance(content, &cat.cue) >= 20 && !says_nothing(content) {
                if !cues::specific(content) {
                    findings.push(note(
                        "negative-filler",
                        None,
                        format!(
                            "the {} entry is filler (\"{}\"): name what was tried, left out, reverted or decided, and why",
                            cat.id,
                            content.trim_start_matches(':').trim().chars().take(60).collect::<String>()
                        ),
                    ));
                    continue;
                }
                found.push(cat.id);
                break;
            }
        }
    }
    for cat in CATEGORIES.iter().filter(|c| !found.contains(&c.id)) {
        findings.push(note(
            "negative-missing",
            None,
            format!("no {} entry: add {}", cat.id, cat.hint),
        ));
    }
    found
}

/// The first structural block carrying `cue`, headings first.
fn cue_block(body: &Body, cue: impl Fn(&Block) -> bool) -> Option<usize> {
    let find = |want_heading: bool| {
        body.blocks.iter().position(|b| {
            b.is_structural() && matches!(b.kind, BlockKind::Heading(_)) == want_heading && cue(b)
        })
    };
    find(true).or_else(|| find(false))
}

/// Canonical sources, next action, verification.
fn sections(doc: &Document, findings: &mut Vec<Finding>) -> (bool, bool, bool) {
    let body = &doc.body;
    let canonical = cue_block(body, |b| CANONICAL.is_match(&b.text)).is_some_and(|i| {
        !matches!(body.blocks[i].kind, BlockKind::Heading(_)) || !body.section(i).is_empty()
    });
    if !canonical {
        findings.push(note(
            "section-missing",
            None,
            "no canonical-sources section: rank the sources and say which wins when they disagree"
                .into(),
        ));
    }
    let next = next_action(doc, findings);
    let verification = verification(body, findings);
    (canonical, next, verification)
}

fn next_action(doc: &Document, findings: &mut Vec<Finding>) -> bool {
    let body = &doc.body;
    let cue = |b: &Block| NEXT_ACTION.is_match(&b.text) || NEXT_STEPS.is_match(&b.text);
    let Some(at) = cue_block(body, cue) else {
        findings.push(warn(
            "first-step-missing",
            1,
            "no next-action section: mark exactly one first step (H5)".into(),
        ));
        return false;
    };
    let step = if matches!(body.blocks[at].kind, BlockKind::Heading(_)) {
        let section = body.section(at);
        let items: Vec<&Block> = section
            .iter()
            .filter(|b| matches!(b.kind, BlockKind::Item { .. }))
            .collect();
        let strong: Vec<&&Block> = items.iter().filter(|b| b.strong_lead).collect();
        if strong.len() > 1 {
            findings.push(warn(
                "first-step-ambiguous",
                strong[1].line,
                format!(
                    "{} steps are marked in bold (lines {}); mark exactly one first step (H5)",
                    strong.len(),
                    join(&strong.iter().map(|b| b.line).collect::<Vec<_>>())
                ),
            ));
        }
        strong
            .first()
            .map(|b| **b)
            .or_else(|| {
                items
                    .iter()
                    .find(|b| {
                        matches!(
                            b.kind,
                            BlockKind::Item {
                                ordered: true,
                                first: true
                            }
                        )
                    })
                    .copied()
            })
            .or_else(|| items.first().copied())
            .or_else(|| section.iter().find(|b| b.kind == BlockKind::Paragraph))
    } else {
        Some(&body.blocks[at])
    };
    let Some(step) = step else {
        findings.push(warn(
            "first-step-missing",
            body.blocks[at].line,
            "the next-action section lists no step: mark exactly one first step (H5)".into(),
        ));
        return false;
    };
    match doc.field("first_action") {
        Some(first) if !agree(first, &step.text) => {
            findings.push(warn(
                "first-action-mismatch",
                step.line,
                format!(
                    "the body's first step does not match first_action: \"{}\" vs \"{}\"",
                    clip(&step.text),
                    clip(first)
                ),
            ));
            false
        }
        _ => true,
    }
}

fn clip(s: &str) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() > 80 {
        format!("{}…", s.chars().take(79).collect::<String>())
    } else {
        s
    }
}

/// Content words: lowercase runs of letters and digits, three or more long, without glue words.
fn words(s: &str) -> BTreeSet<String> {
    const GLUE: &[&str] = &[
        "the", "and", "then", "this", "that", "with", "from", "into", "onto", "for", "not", "are",
        "was", "were", "has", "have", "its", "also", "see", "step", "section", "first", "mirror",
        "mirrors", "matches", "match", "header", "action", "only", "before", "after", "anything",
        "else", "all", "any", "one", "you", "your", "our", "new", "now", "until", "done", "just",
        "when", "what", "which", "will", "must", "should", "can", "use", "same",
    ];
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3 && !GLUE.contains(w))
        .map(str::to_string)
        .collect()
}

/// Whether two descriptions of a step agree: at least half the words of the shorter one are in
/// the other.
pub fn agree(a: &str, b: &str) -> bool {
    let (a, b) = (words(a), words(b));
    let small = a.len().min(b.len());
    small > 0 && a.intersection(&b).count() * 2 >= small
}

fn verification(body: &Body, findings: &mut Vec<Finding>) -> bool {
    let cue = |b: &Block| {
        VERIFICATION.is_match(&b.text)
            || (matches!(b.kind, BlockKind::Heading(_))
                && b.text.starts_with('8')
                && b.text[1..].starts_with(['.', ':', ' ']))
    };
    let Some(at) = cue_block(body, cue) else {
        findings.push(note(
            "section-missing",
            None,
            "no verification section: give the command that proves the whole state still holds"
                .into(),
        ));
        return false;
    };
    let block = &body.blocks[at];
    let commands: Vec<&String> = if matches!(block.kind, BlockKind::Heading(_)) {
        body.section(at)
            .iter()
            .flat_map(|b| b.code.iter())
            .collect()
    } else {
        block.code.iter().collect()
    };
    if commands.is_empty() {
        findings.push(warn(
            "verification-no-command",
            block.line,
            "the verification section has no command (a code block or code span)".into(),
        ));
        return false;
    }
    if commands.iter().all(|c| check::vacuous(c).is_some()) {
        findings.push(warn(
            "verification-vacuous",
            block.line,
            format!(
                "the verification command `{}` cannot fail",
                commands[0].trim()
            ),
        ));
        return false;
    }
    true
}

/// Negations Handover 0.4.1 misses ("nothing here relies on the chat history").
static MORE_NEGATIONS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)(?-u:\b)(?:nothing|none|neither|nor|isn'?t|aren'?t|doesn'?t|won'?t|cannot|can'?t)(?-u:\b)[^.?!]*$",
    )
    .expect("a valid pattern")
});

/// Chat-history reliance outside code spans (H1), negation-aware; returns the hits.
fn chat(body: &Body, findings: &mut Vec<Finding>) -> u32 {
    let mut hits = 0;
    for line in body.lines.iter().filter(|l| !l.masked) {
        for re in CHAT_RELIANCE.iter() {
            if let Some(m) = re.find(&line.prose)
                && !NEGATED_BEFORE.is_match(&line.prose[..m.start()])
                && !MORE_NEGATIONS.is_match(&line.prose[..m.start()])
            {
                hits += 1;
                findings.push(warn(
                    "self-containment",
                    line.number,
                    format!("leans on context the reader does not have: \"{}\" (H1); put what it refers to in the document", m.as_str()),
                ));
            }
        }
    }
    hits
}

/// Injection patterns where a successor would act on them; returns the hits.
fn injection(doc: &Document, rows: &[ClaimRow], findings: &mut Vec<Finding>) -> u32 {
    let mut units: Vec<(usize, String, &str)> = Vec::new();
    if let Some(h) = &doc.header {
        for key in ["first_action", "verify_cmd"] {
            if let Some(f) = h.get(key) {
                units.push((f.line, f.value.raw().to_string(), key));
            }
        }
    }
    for row in rows {
        if let RowKind::Check(cmd) = &row.kind {
            units.push((row.line, cmd.clone(), "a claim's check"));
        }
    }
    for block in doc.body.blocks.iter().filter(|b| b.kind != BlockKind::Code) {
        units.push((block.line, block.text.clone(), "an instruction"));
    }
    for table in &doc.body.tables {
        for row in &table.rows {
            for cell in &row.cells {
                if !cell.code.is_empty() || !cell.text.is_empty() {
                    units.push((row.line, cell.text.clone(), "a table cell"));
                }
            }
        }
    }
    let mut hits = 0;
    let mut seen = BTreeSet::new();
    for (line, text, what) in units {
        if let Some(m) = cues::first_injection(&text)
            && INJECTION.is_match(&text)
            && seen.insert((line, text.clone()))
        {
            hits += 1;
            findings.push(warn(
                "injection",
                line,
                format!("{what} runs downloaded or destructive code: \"{m}\""),
            ));
        }
    }
    hits
}

/// A next-action heading Handover's cue misses ("Next Steps", "What to do next").
static NEXT_STEPS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)\bnext steps?\b|\bwhat to do next\b").expect("a valid pattern")
});

/// Text that ends in a word saying what a following `#123` is (`PR`, `TODO`, `issue`, …).
static KINDED_REF: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(?:PRs?|MRs?|pull request|pull|issues?|tickets?|bugs?|TODO|FIXME|XXX|story|task|epic|step|item|phase|no\.?|number)\s*$",
    )
    .expect("a valid pattern")
});

/// Relative dates and bare references outside code spans and links; returns the hits.
fn prose(body: &Body, findings: &mut Vec<Finding>) -> u32 {
    let mut nits = 0;
    let mut seen = BTreeSet::new();
    for line in body.lines.iter().filter(|l| !l.masked) {
        for re in RELATIVE_DATES.iter() {
            if let Some(m) = re.find(&line.prose) {
                nits += 1;
                findings.push(warn(
                    "relative-date",
                    line.number,
                    format!("relative date \"{}\": write an ISO date (H3)", m.as_str()),
                ));
            }
        }
        if line.linked {
            continue;
        }
        // `PR #35`, `TODO #10`, `issue #7`: the word says what the number is.
        let bare = BARE_REF.captures_iter(&line.prose).find(|c| {
            // Group 1 is the number; the `#` is the byte before it.
            let hash = c.get(1).map_or(0, |m| m.start().saturating_sub(1));
            !KINDED_REF.is_match(line.prose.get(..hash).unwrap_or(""))
        });
        if let Some(c) = bare
            && seen.insert(c[1].to_string())
        {
            nits += 1;
            findings.push(warn(
                "bare-ref",
                line.number,
                format!("bare reference #{}: give a URL or a ticket id (H4)", &c[1]),
            ));
        }
    }
    nits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_steps_agree_by_content_words() {
        assert!(agree(
            "Wire the date-range picker on `src/dashboard/Filters.tsx` to the /api/metrics query — it is the only unfinished piece of the committed scope.",
            "Wire the date-range picker to the /api/metrics query (mirrors first_action).",
        ));
        assert!(!agree(
            "Run the migration on the preview database",
            "Delete the legacy shim and ship it",
        ));
    }

    #[test]
    fn nothing_is_not_content() {
        assert!(says_nothing(
            "Tried and failed: nothing worth mentioning happened here at all"
        ));
        assert!(says_nothing(
            "Decisions: none were needed in this part of the work"
        ));
        assert!(!says_nothing(
            "Out of scope: nonessential admin exports, blocked on compliance"
        ));
    }
}
