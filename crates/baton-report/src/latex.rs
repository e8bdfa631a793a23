//! LaTeX export: `booktabs` tables, one per pair and direction plus the anchors.

use std::fmt::Write;

use baton_types::Direction;

use crate::format::{fixed, significant};
use crate::markdown::SIMULATED_NOTICE;
use crate::metrics::Omission;
use crate::report::{CellRow, Report};

impl Report {
    /// The report's tables as LaTeX fragments (needs `booktabs`); a missing value is
    /// `--`, a QRec omitted under the 5-point rule is `--$^\dagger$`.
    pub fn to_latex(&self) -> String {
        let mut out = format!("% {}\n", escape(&self.title));
        if self.simulated {
            let _ = writeln!(out, "% {SIMULATED_NOTICE}");
        }
        for pair in &self.pairs {
            let anchors: Vec<&CellRow> = self.rows(&pair.name, None).collect();
            let caption = format!("{}: anchors (LC {}, HC {})", pair.name, pair.lc, pair.hc);
            out.push_str(&tabular(
                &caption,
                &[
                    "family",
                    "role",
                    "model",
                    "score",
                    "\\$/task",
                    "scored",
                    "incomplete",
                ],
                "lllrrrr",
                anchors.iter().map(|r| {
                    vec![
                        escape(&r.family),
                        r.anchor.map_or("", |a| a.label()).to_owned(),
                        escape(r.model.as_deref().unwrap_or_default()),
                        num1(r.score),
                        money(r.cost_per_task),
                        r.n_scored.to_string(),
                        (r.n_incomplete + r.n_errored).to_string(),
                    ]
                }),
                self.simulated,
            ));
            for direction in [Direction::Escalation, Direction::Downshift] {
                let rows: Vec<&CellRow> = self.rows(&pair.name, Some(direction)).collect();
                if rows.is_empty() {
                    continue;
                }
                let caption = format!("{}: {}", pair.name, direction.as_str());
                out.push_str(&tabular(
                    &caption,
                    &[
                        "family",
                        "K",
                        "interface",
                        "score",
                        "\\$/task",
                        "QRec",
                        "CSRet",
                        "matched",
                        "incomplete",
                    ],
                    "lllrrrrrr",
                    rows.iter().map(|r| {
                        let qrec = if r.qrec_omitted_reason == Some(Omission::SmallQualityGap) {
                            "--$^\\dagger$".to_owned()
                        } else {
                            num1(r.qrec)
                        };
                        vec![
                            escape(&r.family),
                            escape(r.k.as_deref().unwrap_or_default()),
                            escape(&r.interface),
                            num1(r.score),
                            money(r.cost_per_task),
                            qrec,
                            num1(r.csret),
                            r.n_matched.to_string(),
                            (r.n_incomplete + r.n_errored).to_string(),
                        ]
                    }),
                    self.simulated,
                ));
            }
        }
        out
    }
}

fn tabular(
    caption: &str,
    headers: &[&str],
    spec: &str,
    rows: impl Iterator<Item = Vec<String>>,
    simulated: bool,
) -> String {
    let mut s = String::from("\\begin{table}[t]\n\\centering\n\\small\n");
    let _ = writeln!(s, "\\begin{{tabular}}{{{spec}}}\n\\toprule");
    let _ = writeln!(s, "{} \\\\\n\\midrule", headers.join(" & "));
    for r in rows {
        let _ = writeln!(s, "{} \\\\", r.join(" & "));
    }
    s.push_str("\\bottomrule\n\\end{tabular}\n");
    let note = if simulated {
        " Simulated models: the numbers show the pipeline, not a finding about real LLMs."
    } else {
        ""
    };
    let _ = writeln!(
        s,
        "\\caption{{{}.{note}}}\n\\end{{table}}\n",
        escape(caption)
    );
    s
}

fn num1(v: Option<f64>) -> String {
    v.map_or_else(|| "--".to_owned(), |v| fixed(v, 1))
}

fn money(v: Option<f64>) -> String {
    v.map_or_else(|| "--".to_owned(), |v| format!("\\${}", significant(v, 4)))
}

/// Escapes LaTeX's special characters in plain text.
fn escape(s: &str) -> String {
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
