//! The Markdown report: padded tables that read in a terminal as well.

use std::fmt::Write;

use baton_types::Direction;

use crate::format::{Align, DASH, Grid, dollars, interval, one_decimal};
use crate::metrics::Omission;
use crate::report::{ALL_FAMILIES, CellRow, Report};

/// Marks a QRec left out under the 5-point rule.
pub(crate) const SMALL_GAP_MARK: &str = "—†";

/// Marks a QRec given over anchors less than 5 points apart (an aggregate row).
pub(crate) const UNSTABLE_MARK: &str = "‡";

/// The footnote that says what [`UNSTABLE_MARK`] means.
pub(crate) const UNSTABLE_NOTE: &str = "unstable QRec: on this row's units the anchors differ by less than 5 points \
     (|R_HC − R_LC| < 5), so QRec divides by a small gap and moves a lot with a few \
     tasks (its interval is wide). Per-family rows omit such a QRec; rows over \
     families or switch points give it, marked.";

/// A handoff row's QRec as the tables print it: the value, `—†` when the 5-point rule
/// left it out, the value with `‡` when it is unstable.
pub(crate) fn qrec_cell(r: &CellRow) -> String {
    match r.qrec_omitted_reason {
        Some(Omission::SmallQualityGap) => SMALL_GAP_MARK.to_owned(),
        _ if r.qrec_unstable => format!("{}{UNSTABLE_MARK}", one_decimal(r.qrec)),
        _ => one_decimal(r.qrec),
    }
}

/// Heading of the restart-controls section.
pub(crate) const RESTART_HEADING: &str =
    "Restart controls (escalation, composed from matched runs)";

/// What the restart-controls table shows.
pub(crate) const RESTART_INTRO: &str = "Both reach HC-only quality. abort+HC: LC's recorded cost through K, then HC from \
     the start. LC-full+HC-full: a whole LC run, then a whole HC run. Units: (task, \
     replicate) pairs with both anchors scored and a recorded LC prefix cost at that K; \
     a row without any shows —.";

/// Heading of the incomplete/errored list.
pub(crate) const INCOMPLETE_HEADING: &str =
    "Incomplete and errored episodes (excluded from every metric)";

/// Said in place of a direction's tables when it has no handoff cell.
pub(crate) const NO_HANDOFFS: &str = "No handoff cells in this direction.";

/// `Escalation` or `Downshift`.
pub(crate) fn direction_title(direction: Direction) -> &'static str {
    match direction {
        Direction::Escalation => "Escalation",
        Direction::Downshift => "Downshift",
    }
}

/// Heading of a direction's all-families table, after the direction's title.
pub(crate) const ALL_FAMILIES_SUFFIX: &str = "all families (each family weighs the same)";

/// The heading of the list of tasks a run left out.
pub(crate) const SKIPPED_HEADING: &str = "Tasks left out (never run, not in any metric)";

/// The sentence every report built from simulated models carries.
pub(crate) const SIMULATED_NOTICE: &str = "Simulated models. Every number in this report comes from simulated models (`sim/...`): it shows the pipeline at work and is not a finding about real LLMs.";

impl Report {
    /// The report as Markdown: title, simulated-models notice, per pair an anchors
    /// table and per direction a per-family table and an all-families table, the
    /// restart controls, the incomplete/errored list, notes and footnotes.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# {}\n", self.title);
        if self.simulated {
            let _ = writeln!(out, "> **{SIMULATED_NOTICE}**\n");
        }
        out.push_str(&self.method_paragraph());
        if let Some(spend) = &self.spend {
            let _ = writeln!(
                out,
                "{}
",
                spend.sentence()
            );
        }
        let ci = self.bootstrap.is_some();
        for pair in &self.pairs {
            let _ = writeln!(
                out,
                "## Pair `{}`: LC `{}`, HC `{}`\n",
                pair.name, pair.lc, pair.hc
            );
            let anchors: Vec<&CellRow> = self.rows(&pair.name, None).collect();
            out.push_str("### Anchors\n\n");
            out.push_str(&anchor_table(&anchors, ci).markdown());
            out.push('\n');
            for direction in [Direction::Escalation, Direction::Downshift] {
                let rows: Vec<&CellRow> = self.rows(&pair.name, Some(direction)).collect();
                let (from, to) = match direction {
                    Direction::Escalation => (&pair.lc, &pair.hc),
                    Direction::Downshift => (&pair.hc, &pair.lc),
                };
                let title = direction_title(direction);
                let _ = writeln!(out, "### {title} (`{from}` → `{to}`)\n");
                if rows.is_empty() {
                    let _ = writeln!(out, "{NO_HANDOFFS}\n");
                    continue;
                }
                let (all, per_family): (Vec<&CellRow>, Vec<&CellRow>) =
                    rows.into_iter().partition(|r| r.is_aggregate());
                out.push_str(&handoff_table(&per_family, ci).markdown());
                out.push('\n');
                let _ = writeln!(out, "#### {title}, {ALL_FAMILIES_SUFFIX}\n");
                out.push_str(&handoff_table(&all, ci).markdown());
                out.push('\n');
            }
        }
        out.push_str(&self.protocol_sections());
        out.push_str(&self.restart_section());
        out.push_str(&self.incomplete_section());
        out.push_str(&self.skipped_section());
        out.push_str(&self.calls_section());
        out.push_str(&self.extraction_section());
        out.push_str(&self.rules_section());
        if !self.notes.is_empty() {
            out.push_str("## Notes\n\n");
            for n in &self.notes {
                let _ = writeln!(out, "- {n}");
            }
            out.push('\n');
        }
        out.push_str(&self.footnotes());
        out
    }

    /// A cell label as the tables print it: with one pair, its models' names shortened
    /// to `LC` and `HC` (the method paragraph says which is which), so a cell column
    /// of real model names still fits a terminal.
    pub(crate) fn short_cell(&self, label: &str) -> String {
        let [pair] = self.pairs.as_slice() else {
            return label.to_owned();
        };
        if pair.lc == pair.hc {
            return label.to_owned();
        }
        let Some((kind, rest)) = label.split_once('(') else {
            return label.to_owned();
        };
        let Some(inner) = rest.strip_suffix(')') else {
            return label.to_owned();
        };
        let short = |m: &str| {
            if m == pair.lc {
                "LC".to_owned()
            } else if m == pair.hc {
                "HC".to_owned()
            } else {
                m.to_owned()
            }
        };
        let inner = match inner.split_once(" -> ") {
            Some((sender, rest)) => match rest.split_once(", ") {
                Some((receiver, tail)) => {
                    format!("{} -> {}, {tail}", short(sender), short(receiver))
                }
                None => return label.to_owned(),
            },
            None => short(inner),
        };
        format!("{kind}({inner})")
    }

    /// The paragraph that says how the numbers were computed (Markdown inline code).
    pub(crate) fn method_paragraph(&self) -> String {
        let mut s = String::from(
            "Score: mean score × 100. $/task: mean attributed cost in USD (a forked prefix is \
             priced at the sender's rates). Handoff rows compare on matched units, the (task, \
             replicate) pairs where the handoff episode and both anchors are scored: \
             QRec = 100·(R_m − R_LC)/(R_HC − R_LC), CSRet = 100·(C_HC − C_m)/(C_HC − C_LC), \
             values outside [0, 100] shown as they are, with R_LC, R_HC, C_LC, C_HC taken on \
             those same units (the CSV and JSON exports carry them). Anchor rows score each \
             model on all its scored episodes; their `matched` counts units where both anchors \
             are scored. K `avg` averages the switch points. Incomplete and errored episodes \
             are never scored 0: they are counted and listed.",
        );
        if let [pair] = self.pairs.as_slice()
            && pair.lc != pair.hc
        {
            let _ = write!(
                s,
                " In cell names LC is `{}` and HC is `{}`.",
                pair.lc, pair.hc
            );
        }
        if let Some(b) = &self.bootstrap {
            let _ = write!(
                s,
                " Intervals: percentile 95%, paired task-level bootstrap ({} resamples, seed {}, \
                 tasks resampled within each family, the same draws for every cell).",
                b.replicates, b.seed
            );
        }
        s.push_str("\n\n");
        s
    }

    fn restart_section(&self) -> String {
        if self.restart_controls.is_empty() {
            return String::new();
        }
        let mut s = format!("## {RESTART_HEADING}\n\n{RESTART_INTRO}\n\n");
        s.push_str(&self.restart_table().markdown());
        s.push('\n');
        s
    }

    /// The restart controls as a table.
    pub(crate) fn restart_table(&self) -> Grid {
        let headers = [
            ("pair", Align::Left),
            ("family", Align::Left),
            ("K", Align::Left),
            ("units", Align::Right),
            ("quality", Align::Right),
            ("LC prefix $/task", Align::Right),
            ("abort+HC $/task", Align::Right),
            ("abort+HC CSRet", Align::Right),
            ("LC-full+HC-full $/task", Align::Right),
            ("LC-full+HC-full CSRet", Align::Right),
        ];
        let rows: Vec<Vec<String>> = self
            .restart_controls
            .iter()
            .map(|c| {
                vec![
                    c.pair.clone(),
                    c.family.clone(),
                    c.k.clone(),
                    c.n_units.to_string(),
                    one_decimal(c.quality),
                    dollars(c.prefix_cost),
                    dollars(c.abort_hc_cost),
                    one_decimal(c.abort_hc_csret),
                    dollars(c.full_restart_cost),
                    one_decimal(c.full_restart_csret),
                ]
            })
            .collect();
        Grid::new(&headers, rows)
    }

    fn incomplete_section(&self) -> String {
        let mut s = format!("## {INCOMPLETE_HEADING}\n\n");
        if self.incomplete.is_empty() {
            s.push_str("None.\n\n");
            return s;
        }
        s.push_str(&self.incomplete_table().markdown());
        s.push('\n');
        s
    }

    /// Which extraction rule read the final replies, per family and cell.
    fn rules_section(&self) -> String {
        if self.extraction_rules.is_empty() {
            return String::new();
        }
        let headers = [
            ("family", Align::Left),
            ("cell", Align::Left),
            ("rule", Align::Left),
            ("replies", Align::Right),
            ("no answer", Align::Right),
        ];
        let rows = self
            .extraction_rules
            .iter()
            .map(|r| {
                vec![
                    r.family.clone(),
                    self.short_cell(&r.cell),
                    r.rule.clone(),
                    r.n.to_string(),
                    r.n_no_answer.to_string(),
                ]
            })
            .collect();
        let mut s = String::from(
            "## Extraction rules\n\nWhich rule read each scored final reply (`evaluators/README.md` lists them).\n\n",
        );
        s.push_str(&Grid::new(&headers, rows).markdown());
        s.push('\n');
        s
    }

    /// LiC's LLM answer extraction (`extraction = "lic"`): its calls, spend and failures
    /// per cell and family and in total, apart from the episodes' own cost; left out when
    /// no extraction call was made.
    fn extraction_section(&self) -> String {
        let Some(total) = &self.extraction else {
            return String::new();
        };
        let mut s = format!(
            "## Answer extraction (LiC's LLM extractor)\n\nMath and database answers were extracted by an LLM with LiC's prompt (JSON mode, temperature 0, up to 3 attempts, accepted only verbatim). Its spend is not in the cells' costs: {} calls, ${:.6} in all; {} extraction(s) gave no answer (scored 0 as no answer).\n\n",
            total.extraction_calls, total.extraction_cost_usd, total.extraction_failed
        );
        let headers = [
            ("pair", Align::Left),
            ("family", Align::Left),
            ("cell", Align::Left),
            ("calls", Align::Right),
            ("failed", Align::Right),
            ("cost $", Align::Right),
        ];
        let mut grid_rows: Vec<Vec<String>> = self
            .cells
            .iter()
            .filter(|r| r.cell.is_some() && r.extraction_calls > 0)
            .map(|r| {
                vec![
                    r.pair.clone(),
                    r.family.clone(),
                    self.short_cell(r.cell.as_deref().unwrap_or_default()),
                    r.extraction_calls.to_string(),
                    r.extraction_failed.to_string(),
                    format!("{:.6}", r.extraction_cost_usd),
                ]
            })
            .collect();
        grid_rows.extend(
            self.baselines
                .iter()
                .filter(|r| r.family != ALL_FAMILIES && r.extraction_calls > 0)
                .map(|r| {
                    vec![
                        String::new(),
                        r.family.clone(),
                        self.short_cell(&r.cell),
                        r.extraction_calls.to_string(),
                        r.extraction_failed.to_string(),
                        format!("{:.6}", r.extraction_cost_usd),
                    ]
                }),
        );
        s.push_str(&Grid::new(&headers, grid_rows).markdown());
        s.push('\n');
        s
    }

    /// Per cell and family, the cache-read share of input tokens and the empty and cut
    /// replies; left out when no row has calls (a report built without them).
    fn calls_section(&self) -> String {
        let rows: Vec<&CellRow> = self
            .cells
            .iter()
            .filter(|r| r.cell.is_some() && r.cache_read_share.is_some())
            .collect();
        if rows.is_empty() {
            return String::new();
        }
        let mut s = String::from(
            "## Calls per cell\n\nCache share: percent of input tokens read from a prompt cache \
             (a forked prefix counts in the anchor that paid for it); empty: replies with no \
             text (re-sent to the next turn as `(no reply)`); cut: replies stopped at the output \
             cap.\n\n",
        );
        let headers = [
            ("pair", Align::Left),
            ("family", Align::Left),
            ("cell", Align::Left),
            ("cache share %", Align::Right),
            ("empty", Align::Right),
            ("cut", Align::Right),
        ];
        let grid_rows: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                vec![
                    r.pair.clone(),
                    r.family.clone(),
                    self.short_cell(r.cell.as_deref().unwrap_or_default()),
                    r.cache_read_share
                        .map(|v| format!("{v:.1}"))
                        .unwrap_or_default(),
                    r.n_empty_replies.to_string(),
                    r.n_cut_replies.to_string(),
                ]
            })
            .collect();
        s.push_str(&Grid::new(&headers, grid_rows).markdown());
        s.push('\n');
        s
    }

    fn skipped_section(&self) -> String {
        if self.skipped_tasks.is_empty() {
            return String::new();
        }
        let mut s = format!("## {SKIPPED_HEADING}\n\n");
        s.push_str(&self.skipped_table().markdown());
        s.push('\n');
        s
    }

    /// The tasks the run left out, as a table.
    pub(crate) fn skipped_table(&self) -> Grid {
        let headers = [("task", Align::Left), ("reason", Align::Left)];
        let rows: Vec<Vec<String>> = self
            .skipped_tasks
            .iter()
            .map(|t| vec![t.task_id.clone(), t.reason.clone()])
            .collect();
        Grid::new(&headers, rows)
    }

    /// The incomplete and errored episodes as a table.
    pub(crate) fn incomplete_table(&self) -> Grid {
        let headers = [
            ("task", Align::Left),
            ("cell", Align::Left),
            ("replicate", Align::Right),
            ("status", Align::Left),
            ("reason", Align::Left),
        ];
        let rows: Vec<Vec<String>> = self
            .incomplete
            .iter()
            .map(|e| {
                vec![
                    e.task_id.clone(),
                    self.short_cell(&e.cell),
                    e.replicate.to_string(),
                    e.status.to_string(),
                    e.reason.clone().unwrap_or_else(|| DASH.to_owned()),
                ]
            })
            .collect();
        Grid::new(&headers, rows)
    }

    /// The footnotes explaining `—` and `—†`, one paragraph each.
    pub(crate) fn footnotes(&self) -> String {
        let mut s = format!(
            "{DASH} no value: no matched units, or a zero denominator (R_HC = R_LC for QRec, \
             C_HC = C_LC for CSRet); the JSON and CSV exports name the reason.\n"
        );
        if self
            .cells
            .iter()
            .any(|r| r.qrec_omitted_reason == Some(Omission::SmallQualityGap))
        {
            let _ = writeln!(
                s,
                "\n{SMALL_GAP_MARK} QRec omitted: the anchors differ by less than 5 points \
                 (|R_HC − R_LC| < 5) in this family, too small a gap to divide by."
            );
        }
        if self.cells.iter().any(|r| r.qrec_unstable) {
            let _ = writeln!(s, "\n{UNSTABLE_MARK} {UNSTABLE_NOTE}");
        }
        s
    }
}

fn counts(r: &CellRow) -> [String; 7] {
    [
        r.n_attempted,
        r.n_scored,
        r.n_no_answer,
        r.n_unscored,
        r.n_errored,
        r.n_incomplete,
        r.n_matched,
    ]
    .map(|n| n.to_string())
}

const COUNT_HEADERS: [(&str, Align); 7] = [
    ("attempted", Align::Right),
    ("scored", Align::Right),
    ("no answer", Align::Right),
    ("unscored", Align::Right),
    ("errored", Align::Right),
    ("incomplete", Align::Right),
    ("matched", Align::Right),
];

/// A pair's anchors table.
pub(crate) fn anchor_table(rows: &[&CellRow], ci: bool) -> Grid {
    let mut headers = vec![
        ("family", Align::Left),
        ("role", Align::Left),
        ("model", Align::Left),
        ("score", Align::Right),
        ("$/task", Align::Right),
    ];
    if ci {
        headers.push(("score 95% CI", Align::Right));
    }
    headers.extend(COUNT_HEADERS);
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut v = vec![
                r.family.clone(),
                r.anchor.map_or("", |a| a.label()).to_owned(),
                r.model.clone().unwrap_or_default(),
                one_decimal(r.score),
                dollars(r.cost_per_task),
            ];
            if ci {
                v.push(interval(r.score_ci));
            }
            v.extend(counts(r));
            v
        })
        .collect();
    Grid::new(&headers, body)
}

/// A table of handoff rows.
pub(crate) fn handoff_table(rows: &[&CellRow], ci: bool) -> Grid {
    let mut headers = vec![
        ("family", Align::Left),
        ("K", Align::Left),
        ("interface", Align::Left),
        ("score", Align::Right),
        ("$/task", Align::Right),
        ("QRec", Align::Right),
        ("CSRet", Align::Right),
    ];
    if ci {
        headers.extend([
            ("score 95% CI", Align::Right),
            ("QRec 95% CI", Align::Right),
            ("CSRet 95% CI", Align::Right),
        ]);
    }
    headers.extend(COUNT_HEADERS);
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let qrec = qrec_cell(r);
            let mut v = vec![
                r.family.clone(),
                r.k.clone().unwrap_or_default(),
                r.interface.clone(),
                one_decimal(r.score),
                dollars(r.cost_per_task),
                qrec,
                one_decimal(r.csret),
            ];
            if ci {
                v.extend([
                    interval(r.score_ci),
                    interval(r.qrec_ci),
                    interval(r.csret_ci),
                ]);
            }
            v.extend(counts(r));
            v
        })
        .collect();
    Grid::new(&headers, body)
}
