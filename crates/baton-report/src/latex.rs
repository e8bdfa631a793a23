//! LaTeX export: `booktabs` rules in `longtable`s, so a 121-row table breaks across
//! pages instead of overflowing one float; each value with its 95% interval; the
//! 5-point rule's marks with their footnotes under the table they appear in.

use std::fmt::Write;

use baton_types::Direction;

use crate::format::{Align, Column, DASH, Grid, L, R, column, fixed, significant};
use crate::markdown::{
    ALL_FAMILIES_SUFFIX, INCOMPLETE_HEADING, RESTART_HEADING, RESTART_INTRO, SIMULATED_NOTICE,
    SKIPPED_HEADING, direction_title,
};
use crate::metrics::Omission;
use crate::protocol::{BASELINES_HEADING, BASELINES_INTRO, RELIABILITY_HEADING, RELIABILITY_INTRO};
use crate::report::{CellRow, Report};

/// What the preamble needs.
pub(crate) const PACKAGES: &str = "\\usepackage{booktabs}\n\\usepackage{longtable}";

/// A QRec left out under the 5-point rule.
const SMALL_GAP: &str = "--$^\\dagger$";

/// The footnote of an unstable QRec (`UNSTABLE_NOTE` in the other formats).
const UNSTABLE: &str = "$^\\ddagger$ Unstable QRec: on this row's units the anchors differ by \
     less than 5 points ($|R_{HC} - R_{LC}| < 5$), so QRec divides by a small gap and moves \
     a lot with a few tasks (its interval is wide). Per-family rows omit such a QRec; rows \
     over families or switch points give it, marked.";

/// The footnote of [`SMALL_GAP`].
const SMALL_GAP_NOTE: &str = "$^\\dagger$ QRec omitted: the anchors differ by less than 5 points \
     ($|R_{HC} - R_{LC}| < 5$) in this family, too small a gap to divide by.";

impl Report {
    /// The report's tables as LaTeX `longtable`s with `booktabs` rules (the preamble needs
    /// `\usepackage{booktabs}` and `\usepackage{longtable}`, as the first lines say): per
    /// pair the anchors, then per direction its per-family and all-families tables; then
    /// the baselines, LiC's metrics and the restart controls where there are any, and, as
    /// the Markdown report lists them, the incomplete and errored episodes (a comment when
    /// there are none) and the tasks left out, their reasons wrapping. Each
    /// score, QRec and CSRet carries its 95% interval in brackets when the bootstrap ran;
    /// a missing value is `--`, a QRec omitted under the 5-point rule `--$^\dagger$`, an
    /// unstable QRec (anchors less than 5 points apart) has `$^\ddagger$`; each table
    /// that shows a mark says what it means in its last foot.
    pub fn to_latex(&self) -> String {
        let mut out = format!("% {}\n", escape(&self.title));
        for line in PACKAGES.lines() {
            let _ = writeln!(out, "% needs {line}");
        }
        if self.simulated {
            let _ = writeln!(out, "% {SIMULATED_NOTICE}");
        }
        out.push('\n');
        for pair in &self.pairs {
            let anchors: Vec<&CellRow> = self.rows(&pair.name, None).collect();
            let caption = format!("{}: anchors (LC {}, HC {})", pair.name, pair.lc, pair.hc);
            out.push_str(&longtable(
                &caption,
                &Tex::raw(&Grid::of(&anchor_columns(), anchors.iter().copied())),
                &self.notes_for(&anchors),
            ));
            for direction in [Direction::Escalation, Direction::Downshift] {
                let rows: Vec<&CellRow> = self.rows(&pair.name, Some(direction)).collect();
                if rows.is_empty() {
                    continue;
                }
                let (all, per_family): (Vec<&CellRow>, Vec<&CellRow>) =
                    rows.into_iter().partition(|r| r.is_aggregate());
                let title = direction_title(direction);
                for (caption, rows) in [
                    (format!("{}: {title}, per family", pair.name), per_family),
                    (
                        format!("{}: {title}, {ALL_FAMILIES_SUFFIX}", pair.name),
                        all,
                    ),
                ] {
                    if rows.is_empty() {
                        continue;
                    }
                    out.push_str(&longtable(
                        &caption,
                        &Tex::raw(&Grid::of(&handoff_columns(), rows.iter().copied())),
                        &self.notes_for(&rows),
                    ));
                }
            }
        }
        // Under a table of other rows: what it shows, the intervals' note where it has
        // intervals (the baselines' degradation), and the simulated-models notice.
        let general = self.notes_for(&[]);
        let with = |intro: &str, intervals: bool| {
            let mut notes = vec![inline(intro)];
            notes.extend(
                general
                    .iter()
                    .filter(|n| intervals || !n.starts_with("Brackets:"))
                    .cloned(),
            );
            notes
        };
        if !self.baselines.is_empty() {
            out.push_str(&longtable(
                BASELINES_HEADING,
                &Tex::from_text(&self.baseline_table()),
                &with(BASELINES_INTRO, true),
            ));
        }
        if self.has_reliability() {
            out.push_str(&longtable(
                RELIABILITY_HEADING,
                &Tex::from_text(&self.reliability_table()),
                &with(RELIABILITY_INTRO, false),
            ));
        }
        if !self.restart_controls.is_empty() {
            out.push_str(&longtable(
                RESTART_HEADING,
                &Tex::from_text(&self.restart_table()),
                &with(RESTART_INTRO, false),
            ));
        }
        // The episodes no metric counts and the tasks the run left out, as the Markdown
        // report lists them; their reasons wrap.
        let plain: Vec<String> = general
            .iter()
            .filter(|n| !n.starts_with("Brackets:"))
            .cloned()
            .collect();
        let listed: Vec<String> = self
            .cell_names_note()
            .into_iter()
            .chain(plain.clone())
            .collect();
        if self.incomplete.is_empty() {
            let _ = writeln!(out, "% {}: none.\n", escape(INCOMPLETE_HEADING));
        } else {
            out.push_str(&longtable(
                INCOMPLETE_HEADING,
                &Tex::from_text(&self.incomplete_table()).wrap_last(REASON_WIDTH),
                &listed,
            ));
        }
        if !self.skipped_tasks.is_empty() {
            out.push_str(&longtable(
                SKIPPED_HEADING,
                &Tex::from_text(&self.skipped_table()).wrap_last(SKIPPED_REASON_WIDTH),
                &plain,
            ));
        }
        out
    }

    /// The note that names the models behind the short names in cell labels (`LC`,
    /// `HC`, or `M1`, `M2`, …), when the labels use them.
    fn cell_names_note(&self) -> Option<String> {
        let aliases = self.model_aliases();
        let (last, rest) = aliases.split_last()?;
        let name =
            |(model, alias): &(String, String)| format!("{alias} is \\texttt{{{}}}", escape(model));
        let names: Vec<String> = rest.iter().map(name).collect();
        Some(if names.is_empty() {
            format!("In cell names {}.", name(last))
        } else {
            format!("In cell names {} and {}.", names.join(", "), name(last))
        })
    }

    /// The notes under a table of `rows`: what intervals are, the marks that appear in
    /// it, and the simulated-models notice.
    fn notes_for(&self, rows: &[&CellRow]) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(b) = &self.bootstrap {
            notes.push(format!(
                "Brackets: percentile 95\\% intervals, paired task-level bootstrap ({} \
                 resamples, seed {}, tasks resampled within each family).",
                b.replicates, b.seed
            ));
        }
        if rows
            .iter()
            .any(|r| r.qrec_omitted_reason == Some(Omission::SmallQualityGap))
        {
            notes.push(SMALL_GAP_NOTE.to_owned());
        }
        if rows.iter().any(|r| r.qrec_unstable) {
            notes.push(UNSTABLE.to_owned());
        }
        if self.simulated {
            notes.push(
                "Simulated models: the numbers show the pipeline, not a finding about real LLMs."
                    .to_owned(),
            );
        }
        notes
    }
}

/// The anchors table's columns, in LaTeX.
fn anchor_columns<'a>() -> Vec<Column<'a, &'a CellRow>> {
    vec![
        column("family", L, |r: &&CellRow| escape(&r.family)),
        column("role", L, |r: &&CellRow| {
            r.anchor.map_or("", |a| a.label()).to_owned()
        }),
        column("model", L, |r: &&CellRow| {
            escape(r.model.as_deref().unwrap_or_default())
        }),
        column("score", R, |r: &&CellRow| with_ci(r.score, r.score_ci)),
        column("\\$/task", R, |r: &&CellRow| money(r.cost_per_task)),
        column("scored", R, |r: &&CellRow| r.n_scored.to_string()),
        column("incomplete", R, |r: &&CellRow| {
            (r.n_incomplete + r.n_errored).to_string()
        }),
    ]
}

/// A handoff table's columns, in LaTeX.
fn handoff_columns<'a>() -> Vec<Column<'a, &'a CellRow>> {
    vec![
        column("family", L, |r: &&CellRow| escape(&r.family)),
        column("K", L, |r: &&CellRow| {
            escape(r.k.as_deref().unwrap_or_default())
        }),
        column("interface", L, |r: &&CellRow| escape(&r.interface)),
        column("score", R, |r: &&CellRow| with_ci(r.score, r.score_ci)),
        column("\\$/task", R, |r: &&CellRow| money(r.cost_per_task)),
        column("QRec", R, |r: &&CellRow| match r.qrec_omitted_reason {
            Some(Omission::SmallQualityGap) => SMALL_GAP.to_owned(),
            _ if r.qrec_unstable => format!("{}$^\\ddagger$", with_ci(r.qrec, r.qrec_ci)),
            _ => with_ci(r.qrec, r.qrec_ci),
        }),
        column("CSRet", R, |r: &&CellRow| with_ci(r.csret, r.csret_ci)),
        column("matched", R, |r: &&CellRow| r.n_matched.to_string()),
        column("incomplete", R, |r: &&CellRow| {
            (r.n_incomplete + r.n_errored).to_string()
        }),
    ]
}

/// A table ready for [`longtable`]: LaTeX headers, column spec and cells.
pub(crate) struct Tex {
    headers: Vec<String>,
    spec: String,
    rows: Vec<Vec<String>>,
}

impl Tex {
    /// A grid whose headers and cells are LaTeX already.
    fn raw(grid: &Grid) -> Tex {
        Tex {
            headers: grid.headers.iter().map(|(h, _)| (*h).to_owned()).collect(),
            spec: spec(&grid.headers.iter().map(|(_, a)| *a).collect::<Vec<_>>()),
            rows: grid.rows.clone(),
        }
    }

    /// A grid of plain text, as the Markdown and HTML reports print it: its text
    /// escaped, a dash as `--`, and each interval column (`[lo, hi]`) set small in the
    /// cell of the value before it, so a value and its interval read together.
    pub(crate) fn from_text(grid: &Grid) -> Tex {
        let keep: Vec<usize> = (0..grid.headers.len())
            .filter(|&i| !(i > 0 && grid.intervals[i]))
            .collect();
        let cell = |row: &[String], i: usize| {
            let value = text_cell(&row[i]);
            match row.get(i + 1) {
                Some(ci) if grid.intervals[i + 1] && ci.starts_with('[') => {
                    format!("{value} {{\\scriptsize{}}}", escape(ci))
                }
                _ => value,
            }
        };
        Tex {
            headers: keep.iter().map(|&i| escape(grid.headers[i].0)).collect(),
            spec: spec(&keep.iter().map(|&i| grid.headers[i].1).collect::<Vec<_>>()),
            rows: grid
                .rows
                .iter()
                .map(|row| keep.iter().map(|&i| cell(row, i)).collect())
                .collect(),
        }
    }
}

/// The width of the incomplete list's reason column (after task, cell, replicate and
/// status).
const REASON_WIDTH: &str = "0.4\\linewidth";

/// The width of the left-out tasks' reason column (after the task).
const SKIPPED_REASON_WIDTH: &str = "0.7\\linewidth";

impl Tex {
    /// The table with its last column a paragraph of `width` (a LaTeX length), so long
    /// text such as an error message wraps within the page.
    fn wrap_last(mut self, width: &str) -> Tex {
        if self.spec.pop().is_some() {
            let _ = write!(self.spec, "p{{{width}}}");
        }
        self
    }
}

/// A `longtable` column spec: `l` or `r` per column.
fn spec(aligns: &[Align]) -> String {
    aligns
        .iter()
        .map(|a| match a {
            Align::Left => 'l',
            Align::Right => 'r',
        })
        .collect()
}

/// A Markdown cell in LaTeX: escaped, a lone dash as `--`.
fn text_cell(s: &str) -> String {
    if s == DASH {
        "--".to_owned()
    } else {
        escape(s)
    }
}

/// One `longtable`: caption and header on the first page, the header again on each
/// later one, "continued" at each page's foot, and the notes after the last row.
pub(crate) fn longtable(caption: &str, table: &Tex, notes: &[String]) -> String {
    let Tex {
        headers,
        spec,
        rows,
    } = table;
    let n = headers.len();
    let head = format!("\\toprule\n{} \\\\\n\\midrule\n", headers.join(" & "));
    let mut s = String::from("{\\footnotesize\n\\setlength{\\tabcolsep}{4pt}\n");
    let _ = write!(
        s,
        "\\begin{{longtable}}{{{spec}}}\n\\caption{{{}.}} \\\\\n{head}\\endfirsthead\n\
         \\multicolumn{{{n}}}{{l}}{{\\emph{{(continued)}} {}}} \\\\\n{head}\\endhead\n\
         \\midrule\n\\multicolumn{{{n}}}{{r}}{{\\emph{{continued on the next page}}}} \\\\\n\\endfoot\n\
         \\bottomrule\n",
        escape(caption),
        escape(caption)
    );
    for note in notes {
        let _ = writeln!(
            s,
            "\\multicolumn{{{n}}}{{p{{0.95\\linewidth}}}}{{{note}}} \\\\"
        );
    }
    s.push_str("\\endlastfoot\n");
    for r in rows {
        let _ = writeln!(s, "{} \\\\", r.join(" & "));
    }
    s.push_str("\\end{longtable}\n}\n\n");
    s
}

/// The comment lines a LaTeX export starts with: its title and the packages it needs.
pub(crate) fn preamble_comment(title: &str) -> String {
    let mut out = format!("% {}\n", escape(title));
    for line in PACKAGES.lines() {
        let _ = writeln!(out, "% needs {line}");
    }
    out
}

/// Plain text with Markdown code spans (`` `x` ``) in LaTeX: escaped, the spans in
/// `\texttt`.
pub(crate) fn inline(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 && i + 1 < parts.len() {
            let _ = write!(out, "\\texttt{{{}}}", escape(part));
        } else {
            if i % 2 == 1 {
                out.push('`');
            }
            out.push_str(&escape(part));
        }
    }
    out
}

/// A value with one decimal and, when known, its 95% interval in brackets.
fn with_ci(v: Option<f64>, ci: Option<[f64; 2]>) -> String {
    match (v, ci) {
        (Some(v), Some([lo, hi])) => format!(
            "{} {{\\scriptsize[{}, {}]}}",
            fixed(v, 1),
            fixed(lo, 1),
            fixed(hi, 1)
        ),
        (v, _) => num1(v),
    }
}

fn num1(v: Option<f64>) -> String {
    v.map_or_else(|| "--".to_owned(), |v| fixed(v, 1))
}

fn money(v: Option<f64>) -> String {
    v.map_or_else(|| "--".to_owned(), |v| format!("\\${}", significant(v, 4)))
}

/// Escapes LaTeX's special characters in plain text.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\textbackslash{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '>' => out.push_str("\\textgreater{}"),
            '<' => out.push_str("\\textless{}"),
            '—' | '–' => out.push_str("--"),
            'Δ' => out.push_str("$\\Delta$"),
            '÷' => out.push_str("$\\div$"),
            '×' => out.push_str("$\\times$"),
            '≥' => out.push_str("$\\geq$"),
            '≤' => out.push_str("$\\leq$"),
            '→' => out.push_str("$\\to$"),
            '−' => out.push('-'),
            '·' => out.push_str("$\\cdot$"),
            '|' => out.push_str("\\textbar{}"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_characters_are_escaped() {
        assert_eq!(
            escape("compact_pre & 5% ~x"),
            "compact\\_pre \\& 5\\% \\textasciitilde{}x"
        );
    }
}
