//! Claims: the rows of a table whose last column is a check.
//!
//! A table opts in by naming its last header cell `Verify`, `Verification`, `Verify cmd`,
//! `Verify command`, `Check` or `How to verify` (case-insensitive, markup ignored); tables in
//! code blocks, blockquotes or HTML are masked and never count. A row's check is the first code
//! span of its last cell. A row tagged `[belief…]` carries a tag instead of a check; `n/a`,
//! `-`, `—` or `none` mark a row with nothing to check. A row whose check cell was cut by an
//! unescaped `|` (GFM splits cells at every unescaped pipe, code spans included) is reported
//! as split rather than silently dropped.

use crate::body::{Body, Row};
use crate::cues::CLAIMS_COLUMN;

/// At most this many claims run; a handoff is not a test suite.
pub const MAX_CLAIMS: usize = 25;

/// What a claims-table row carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowKind {
    /// A check command.
    Check(String),
    /// A `[belief, unverified]` tag instead of a check.
    Belief,
    /// `n/a` or similar: nothing to check.
    NotApplicable,
    /// Neither a check nor a tag.
    Unchecked,
    /// The check cell was cut by an unescaped `|`; the text after it is kept.
    Split(String),
}

/// One row of a claims table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimRow {
    /// Its file line.
    pub line: usize,
    /// Its first cell, at most 60 characters.
    pub label: String,
    /// The code spans of its other cells (paths a claim may name).
    pub mentions: Vec<String>,
    /// What it carries.
    pub kind: RowKind,
}

/// A claim with a check to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// Its file line.
    pub line: usize,
    /// Its label.
    pub label: String,
    /// Its check.
    pub command: String,
    /// Code spans in its other cells.
    pub mentions: Vec<String>,
}

/// Every row of every claims table, in order.
pub fn rows(body: &Body) -> Vec<ClaimRow> {
    let mut out = Vec::new();
    for table in &body.tables {
        let Some(last) = table.header.last() else {
            continue;
        };
        let name: String = last
            .text
            .chars()
            .filter(|c| !matches!(c, '`' | '*' | '_'))
            .collect();
        if table.header.len() < 2 || !CLAIMS_COLUMN.is_match(name.trim()) {
            continue;
        }
        let width = table.header.len();
        out.extend(table.rows.iter().map(|row| classify(row, width)));
    }
    out
}

fn classify(row: &Row, width: usize) -> ClaimRow {
    let label: String = row.cells[0].text.trim().chars().take(60).collect();
    let mentions = row.cells[..width - 1]
        .iter()
        .flat_map(|c| c.code.iter().cloned())
        .collect();
    let check = &row.cells[width - 1];
    let kind = if row.raw.to_lowercase().contains("[belief") {
        RowKind::Belief
    } else if let Some(span) = check.code.first() {
        let span = span.trim();
        if matches!(span.to_lowercase().as_str(), "n/a" | "-" | "—" | "none") {
            RowKind::NotApplicable
        } else {
            RowKind::Check(span.to_string())
        }
    } else if !row.dropped.is_empty() {
        RowKind::Split(format!("{} | {}", check.text.trim(), row.dropped))
    } else if matches!(
        check.text.trim().to_lowercase().as_str(),
        "n/a" | "-" | "—" | "none" | ""
    ) {
        RowKind::NotApplicable
    } else {
        RowKind::Unchecked
    };
    ClaimRow {
        line: row.line,
        label,
        mentions,
        kind,
    }
}

/// The claims with checks: the first [`MAX_CLAIMS`], which run, and those past the cap, which
/// do not (and are reported as not run).
pub fn claims(body: &Body) -> (Vec<Claim>, Vec<Claim>) {
    let all: Vec<Claim> = rows(body)
        .into_iter()
        .filter_map(|r| match r.kind {
            RowKind::Check(command) => Some(Claim {
                line: r.line,
                label: r.label,
                command,
                mentions: r.mentions,
            }),
            _ => None,
        })
        .collect();
    let mut all = all;
    let over = all.split_off(all.len().min(MAX_CLAIMS));
    (all, over)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_classified() {
        let body = Body::parse(
            "| Claim | Verify |\n|---|---|\n\
             | **Migration** exists | `ls migrations/ \\| grep guest_orders` |\n\
             | Rate limiting | `[belief, unverified]` |\n\
             | Worktree | n/a |\n\
             | Docs | see the spec |\n\
             | Split | `ls migrations/ | grep guest_orders` |\n\n\
             | Fact | Verified by |\n|---|---|\n| x | `rm -rf /` |\n",
            1,
        );
        let rows = rows(&body);
        let kinds: Vec<&RowKind> = rows.iter().map(|r| &r.kind).collect();
        assert_eq!(
            kinds,
            [
                &RowKind::Check("ls migrations/ | grep guest_orders".into()),
                &RowKind::Belief,
                &RowKind::NotApplicable,
                &RowKind::Unchecked,
                &RowKind::Split("`ls migrations/ | grep guest_orders`".into()),
            ]
        );
        assert_eq!(rows[0].label, "Migration exists");
        assert_eq!(rows[0].line, 3);
        assert_eq!(claims(&body).0.len(), 1);
    }
}
