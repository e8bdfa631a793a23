//! CSV export: one line per table row, raw numbers; `qrec_unstable` is `true` on a row
//! whose QRec divides by anchors less than 5 points apart (empty otherwise).

use crate::protocol::BaselineRow;
use crate::report::{CellRow, Report};

/// One line of the CSV: a handoff or anchor row, or a baseline row.
#[derive(Clone, Copy)]
enum Line<'r> {
    Cell(&'r CellRow),
    Baseline(&'r BaselineRow),
}

/// One CSV column: its name and its field for a line.
struct CsvColumn {
    name: &'static str,
    field: fn(Line<'_>) -> String,
}

/// A column a baseline line leaves empty.
macro_rules! cell_only {
    ($name:literal, $r:ident => $e:expr) => {
        CsvColumn {
            name: $name,
            field: |line| match line {
                Line::Cell($r) => $e,
                Line::Baseline(_) => String::new(),
            },
        }
    };
}

/// A column both kinds of line fill.
macro_rules! both {
    ($name:literal, $r:ident => $e:expr) => {
        CsvColumn {
            name: $name,
            field: |line| match line {
                Line::Cell($r) => $e,
                Line::Baseline($r) => $e,
            },
        }
    };
}

fn text(v: Option<&str>) -> String {
    v.unwrap_or_default().to_owned()
}

fn num(v: Option<f64>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

fn lo(ci: Option<[f64; 2]>) -> String {
    num(ci.map(|c| c[0]))
}

fn hi(ci: Option<[f64; 2]>) -> String {
    num(ci.map(|c| c[1]))
}

/// The CSV's columns, each with how its field is computed, in order.
const COLUMNS: [CsvColumn; 32] = [
    cell_only!("pair", r => r.pair.clone()),
    cell_only!("direction", r => text(r.direction.map(|d| d.as_str()))),
    both!("family", r => r.family.clone()),
    cell_only!("k", r => text(r.k.as_deref())),
    both!("interface", r => r.interface.clone()),
    cell_only!("anchor", r => text(r.anchor.map(|a| a.as_str()))),
    CsvColumn {
        name: "model",
        field: |line| match line {
            Line::Cell(r) => text(r.model.as_deref()),
            Line::Baseline(b) => b.model.clone(),
        },
    },
    CsvColumn {
        name: "cell",
        field: |line| match line {
            Line::Cell(r) => text(r.cell.as_deref()),
            Line::Baseline(b) => b.cell.clone(),
        },
    },
    both!("score", r => num(r.score)),
    both!("cost_per_task", r => num(r.cost_per_task)),
    cell_only!("qrec", r => num(r.qrec)),
    cell_only!("csret", r => num(r.csret)),
    cell_only!("qrec_omitted_reason", r => text(r.qrec_omitted_reason.map(|o| o.as_str()))),
    cell_only!("csret_omitted_reason", r => text(r.csret_omitted_reason.map(|o| o.as_str()))),
    cell_only!("score_lc", r => num(r.score_lc)),
    cell_only!("score_hc", r => num(r.score_hc)),
    cell_only!("cost_lc", r => num(r.cost_lc)),
    cell_only!("cost_hc", r => num(r.cost_hc)),
    cell_only!("score_ci_low", r => lo(r.score_ci)),
    cell_only!("score_ci_high", r => hi(r.score_ci)),
    cell_only!("qrec_ci_low", r => lo(r.qrec_ci)),
    cell_only!("qrec_ci_high", r => hi(r.qrec_ci)),
    cell_only!("csret_ci_low", r => lo(r.csret_ci)),
    cell_only!("csret_ci_high", r => hi(r.csret_ci)),
    both!("n_attempted", r => r.n_attempted.to_string()),
    both!("n_scored", r => r.n_scored.to_string()),
    cell_only!("n_unscored", r => r.n_unscored.to_string()),
    cell_only!("n_errored", r => r.n_errored.to_string()),
    both!("n_incomplete", r => r.n_incomplete.to_string()),
    both!("n_matched", r => r.n_matched.to_string()),
    both!("n_no_answer", r => r.n_no_answer.to_string()),
    cell_only!("qrec_unstable", r => if r.qrec_unstable { "true" } else { "" }.to_owned()),
];

/// The CSV header, in column order (the names of the column list the fields come from).
pub const CSV_COLUMNS: [&str; 32] = {
    let mut names = [""; COLUMNS.len()];
    let mut i = 0;
    while i < COLUMNS.len() {
        names[i] = COLUMNS[i].name;
        i += 1;
    }
    names
};

impl Report {
    /// Every row of [`Report::cells`] as CSV (RFC 4180 quoting, `\n` line ends), then
    /// every baseline row (`interface` `full` or `concat`, `pair` and `direction` empty;
    /// their degradation is in the JSON, Markdown and HTML reports).
    /// Numbers are written in full (shortest round-trip form); a missing value is an
    /// empty field.
    pub fn to_csv(&self) -> String {
        let mut out = CSV_COLUMNS.join(",");
        out.push('\n');
        let lines =
            (self.cells.iter().map(Line::Cell)).chain(self.baselines.iter().map(Line::Baseline));
        for line in lines {
            let fields: Vec<String> = COLUMNS.iter().map(|c| quote(&(c.field)(line))).collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(
            quote("handoff(a -> b, early, raw)"),
            "\"handoff(a -> b, early, raw)\""
        );
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
