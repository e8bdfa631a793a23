//! Machine-readable output: the versioned JSON report and SARIF 2.1.0.
//!
//! JSON (`schema: 3`; bump it on any change to the shape below):
//!
//! ```text
//! {"schema": 3, "documents": [{"path", "rubric", "score", "valid",
//!   "subscores": {"header", "negative", "sections", "self_containment", "prose"},
//!   "findings": [{"rule", "severity", "line", "message"}],
//!   "verification": {"verdict", "checks": [{"name", "status", "line", "detail"}],
//!     "claims": [{"line", "label", "command", "class", "status_at_anchor", "status_now",
//!                 "output_tail"}],
//!     "drift": null | {"anchor", "ancestor", "commits", "handoff_only_commits",
//!                      "changed": [path], "uncommitted": [path],
//!                      "claims": [{"line", "label", "files": [path]}]},
//!     "unverified": [text]}}]}
//! ```
//!
//! `severity` is `error`, `warning` or `note`; `line` is a file line or `null`; a check's
//! `status` is `ok`, `warn`, `fail` or `skip`; a claim status is `holds`, `fails` or `not_run`;
//! a claim's `class` is `held-and-holds`, `held-now-broken`, `never-held`, `fails-now`,
//! `cannot-tell` or `not-run`; `unverified` lists what passed unverified under
//! `--allow-unverified` (schema 3 added it and `not-run`); `verdict` is `invalid-header`, `failed`, `unverified-no-repo`,
//! `stale-or-unproven` or `verified`. The buckets' maxima depend on the rubric (see
//! [`crate::Rubric::maxima`]). Every string is passed through [`crate::redact::redact`].
//!
//! SARIF is written with `serde_json` rather than a SARIF crate: the log is a dozen fields, and
//! the typed SARIF crates bring far more than that.

use serde::Serialize;
use serde_json::{Value, json};

use crate::structure::{Finding, Severity, Structure, Subscores};
use crate::verify::{ClaimStatus, Class, Status, Verification};

/// The JSON schema version.
pub const SCHEMA: u32 = 3;

/// One document's results.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a> {
    /// The path as the user gave it.
    pub path: &'a str,
    /// Its structure score.
    pub structure: &'a Structure,
    /// Its verification.
    pub verification: &'a Verification,
}

#[derive(Serialize)]
struct JsonDocument<'a> {
    path: &'a str,
    rubric: String,
    score: u32,
    valid: bool,
    subscores: &'a Subscores,
    findings: Vec<JsonFinding<'a>>,
    verification: JsonVerification<'a>,
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    rule: &'a str,
    severity: Severity,
    line: Option<usize>,
    message: &'a str,
}

#[derive(Serialize)]
struct JsonVerification<'a> {
    verdict: String,
    checks: Vec<JsonCheck<'a>>,
    claims: Vec<JsonClaim<'a>>,
    drift: Option<JsonDrift<'a>>,
    unverified: &'a [String],
}

#[derive(Serialize)]
struct JsonDrift<'a> {
    anchor: &'a str,
    ancestor: bool,
    commits: u64,
    handoff_only_commits: u64,
    changed: &'a [String],
    uncommitted: &'a [String],
    claims: Vec<JsonClaimFiles<'a>>,
}

#[derive(Serialize)]
struct JsonClaimFiles<'a> {
    line: usize,
    label: &'a str,
    files: &'a [String],
}

#[derive(Serialize)]
struct JsonCheck<'a> {
    name: &'a str,
    status: Status,
    line: Option<usize>,
    detail: &'a str,
}

#[derive(Serialize)]
struct JsonClaim<'a> {
    line: usize,
    label: &'a str,
    command: &'a str,
    class: Class,
    status_at_anchor: ClaimStatus,
    status_now: ClaimStatus,
    output_tail: String,
}

/// The JSON report of `documents`.
pub fn json(documents: &[Report<'_>]) -> Value {
    let documents: Vec<JsonDocument<'_>> = documents
        .iter()
        .map(|r| JsonDocument {
            path: r.path,
            rubric: r.structure.rubric.to_string(),
            score: r.structure.score,
            valid: r.structure.valid,
            subscores: &r.structure.subscores,
            findings: r
                .structure
                .findings
                .iter()
                .map(|f| JsonFinding {
                    rule: f.rule,
                    severity: f.severity,
                    line: f.line,
                    message: &f.message,
                })
                .collect(),
            verification: JsonVerification {
                verdict: r.verification.verdict.to_string(),
                checks: r
                    .verification
                    .checks
                    .iter()
                    .map(|c| JsonCheck {
                        name: c.name,
                        status: c.status,
                        line: c.line,
                        detail: &c.detail,
                    })
                    .collect(),
                claims: r
                    .verification
                    .claims
                    .iter()
                    .map(|c| JsonClaim {
                        line: c.line,
                        label: &c.label,
                        command: &c.command,
                        class: c.class(),
                        status_at_anchor: c.at_anchor.status,
                        status_now: c.now.status,
                        output_tail: c.output_tail(),
                    })
                    .collect(),
                drift: r.verification.drift.as_ref().map(|d| JsonDrift {
                    anchor: &d.anchor,
                    ancestor: d.ancestor,
                    commits: d.commits,
                    handoff_only_commits: d.handoff_only_commits,
                    changed: &d.changed,
                    uncommitted: &d.uncommitted,
                    claims: d
                        .claims
                        .iter()
                        .map(|(line, label, files)| JsonClaimFiles {
                            line: *line,
                            label,
                            files,
                        })
                        .collect(),
                }),
                unverified: &r.verification.unverified,
            },
        })
        .collect();
    let mut out = json!({"schema": SCHEMA, "documents": documents});
    crate::redact::redact_json(&mut out);
    out
}

/// `text` safe for a terminal: control characters other than line feed and tab (escape
/// sequences, carriage returns, backspaces) are shown as `\u{…}` instead of acting.
pub fn terminal_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// What a rule checks, for SARIF's rule list.
pub fn describe(rule: &str) -> &'static str {
    match rule {
        "header" | "header-missing" => "The header has every required key",
        "header-syntax" => "Every header line is a `key: value` line",
        "handover-0.4-differs" => "Where Handover 0.4.1 reads or judges the header differently",
        "negative-filler" => "Negative knowledge names something specific",
        "encoding" => "The document is UTF-8",
        "header-duplicate" => "Each header key appears once",
        "header-unknown-key" => "Header keys are known",
        "header-type" => "Header values are single values",
        "header-placeholder" => "Header values are filled in",
        "header-date" => "iso_date is a calendar date",
        "header-sha" => "true_at_sha is a commit id",
        "header-enum" => "shape and status take known values",
        "header-optional" => "Optional header keys are valid",
        "verify-cmd-vacuous" => "verify_cmd can fail",
        "done-unchecked" => "status: done has a verify_cmd that can fail",
        "advisory" => "Recommended header keys are present",
        "claim-vacuous" => "Claim checks can fail",
        "claim-unchecked" => "Claims carry a check or a belief tag (H2)",
        "claim-split" => "Claim checks are not cut by unescaped pipes",
        "claims-missing" => "State claims carry checks (H2)",
        "claims-cap" => "At most 25 claims run",
        "negative-missing" => "Negative knowledge is recorded",
        "section-missing" => "The contract's sections are present",
        "first-step-missing" | "first-step-ambiguous" => "Exactly one first step is marked (H5)",
        "first-action-mismatch" => "first_action agrees with the marked first step",
        "verification-no-command" | "verification-vacuous" => {
            "The verification section has a command that can fail"
        }
        "H1" | "self-containment" => "No reliance on chat history (H1)",
        "H3" | "relative-date" => "Absolute dates only (H3)",
        "H4" | "bare-ref" => "Addressable references (H4)",
        "injection" => "No download-and-execute or destructive instructions",
        r if r.starts_with("verify/") => "Repository verification",
        r if r.starts_with("claim/") => "A claim's check at the anchor and now",
        _ => "Handoff document rule",
    }
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

fn uri(path: &str) -> String {
    let mut out = String::new();
    for c in path.replace('\\', "/").chars() {
        match c {
            ' ' => out.push_str("%20"),
            '%' => out.push_str("%25"),
            '#' => out.push_str("%23"),
            '?' => out.push_str("%3F"),
            c => out.push(c),
        }
    }
    out
}

fn result(rule: &str, level: &str, message: &str, path: &str, line: Option<usize>) -> Value {
    json!({
        "ruleId": rule,
        "level": level,
        "message": {"text": message},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": uri(path)},
            "region": {"startLine": line.unwrap_or(1).max(1)},
        }}],
    })
}

/// A SARIF 2.1.0 log of `documents`, for code-scanning annotations.
pub fn sarif(documents: &[Report<'_>], version: &str) -> Value {
    let mut results = Vec::new();
    let mut rules: Vec<String> = Vec::new();
    let mut push = |rule: String, value: Value| {
        if !rules.contains(&rule) {
            rules.push(rule);
        }
        results.push(value);
    };
    for r in documents {
        for Finding {
            rule,
            severity,
            line,
            message,
        } in &r.structure.findings
        {
            push(
                rule.to_string(),
                result(rule, level(*severity), message, r.path, *line),
            );
        }
        for c in &r.verification.checks {
            let level = match c.status {
                Status::Fail => "error",
                Status::Warn => "warning",
                Status::Ok | Status::Skip => continue,
            };
            let rule = format!("verify/{}", c.name);
            push(
                rule.clone(),
                result(&rule, level, &c.detail, r.path, c.line),
            );
        }
        for c in &r.verification.claims {
            let class = c.class();
            let level = match class {
                Class::HeldAndHolds => continue,
                Class::HeldNowBroken | Class::NeverHeld | Class::FailsNow => "error",
                Class::CannotTell => "note",
                Class::NotRun if r.verification.unverified.is_empty() => "error",
                Class::NotRun => "warning",
            };
            let rule = format!("claim/{class}");
            let mut text = format!("claim \"{}\" is {class}: `{}`", c.label, c.command);
            let tail = c.output_tail();
            if !tail.is_empty() {
                text.push('\n');
                text.push_str(&tail);
            }
            push(
                rule.clone(),
                result(&rule, level, &text, r.path, Some(c.line)),
            );
        }
    }
    let rules: Vec<Value> = rules
        .iter()
        .map(|id| json!({"id": id, "shortDescription": {"text": describe(id)}}))
        .collect();
    let mut log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "baton", "version": version, "rules": rules}},
            "results": results,
        }],
    });
    crate::redact::redact_json(&mut log);
    log
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_are_shown_not_sent() {
        assert_eq!(
            terminal_safe("a\x1b[2Jb\rc\n\td"),
            "a\\u{1b}[2Jb\\u{d}c\n\td"
        );
        assert_eq!(terminal_safe("plain é"), "plain é");
    }
}
