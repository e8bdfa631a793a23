//! The Markdown report: padded tables that read in a terminal as well.

use std::fmt::Write;

use baton_types::Direction;

use crate::format::{Column, DASH, Grid, L, R, column, dollars, interval, one_decimal};
use crate::input::SkippedTask;
use crate::metrics::Omission;
use crate::report::{ALL_FAMILIES, CellRow, IncompleteEntry, Report, RestartControl, RuleCount};

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

/// Heading of the calls-per-cell table.
pub(crate) const CALLS_HEADING: &str = "Calls per cell";

/// What the calls-per-cell table shows.
pub(crate) const CALLS_INTRO: &str = "Cache share: percent of input tokens read from a prompt cache \
     (a forked prefix counts in the anchor that paid for it); empty: replies with no \
     text (re-sent to the next turn as `(no reply)`); cut: replies stopped at the output \
     cap.";

/// Heading of the table of LiC's LLM answer extraction.
pub(crate) const EXTRACTION_HEADING: &str = "Answer extraction (LiC's LLM extractor)";

/// Heading of the extraction-rules table.
pub(crate) const RULES_HEADING: &str = "Extraction rules";

/// What the extraction-rules table shows.
pub(crate) const RULES_INTRO: &str =
    "Which rule read each scored final reply (`evaluators/README.md` lists them).";

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

    /// The short names cell labels use for the pairs' models: with one pair `LC` and
    /// `HC`; with several, `M1`, `M2`, … in the order the pairs name them (the method
    /// paragraph is their legend), so a cell column of real model names still fits a
    /// terminal. Empty when no name would get shorter.
    pub(crate) fn model_aliases(&self) -> Vec<(String, String)> {
        match self.pairs.as_slice() {
            [] => Vec::new(),
            [pair] if pair.lc == pair.hc => Vec::new(),
            [pair] => vec![
                (pair.lc.clone(), "LC".to_owned()),
                (pair.hc.clone(), "HC".to_owned()),
            ],
            pairs => {
                let mut models: Vec<&str> = Vec::new();
                for p in pairs {
                    for m in [&p.lc, &p.hc] {
                        if !models.contains(&m.as_str()) {
                            models.push(m);
                        }
                    }
                }
                if models.iter().all(|m| m.chars().count() <= 3) {
                    return Vec::new();
                }
                models
                    .iter()
                    .enumerate()
                    .map(|(i, m)| ((*m).to_owned(), format!("M{}", i + 1)))
                    .collect()
            }
        }
    }

    /// A cell label as the tables print it: its models' names shortened by
    /// [`Report::model_aliases`].
    pub(crate) fn short_cell(&self, label: &str) -> String {
        let aliases = self.model_aliases();
        if aliases.is_empty() {
            return label.to_owned();
        }
        let Some((kind, rest)) = label.split_once('(') else {
            return label.to_owned();
        };
        let Some(inner) = rest.strip_suffix(')') else {
            return label.to_owned();
        };
        let short = |m: &str| {
            aliases
                .iter()
                .find(|(name, _)| name == m)
                .map_or_else(|| m.to_owned(), |(_, alias)| alias.clone())
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
        let aliases = self.model_aliases();
        if !aliases.is_empty() {
            let names: Vec<String> = aliases
                .iter()
                .map(|(model, alias)| format!("{alias} is `{model}`"))
                .collect();
            let last = names.len() - 1;
            let _ = write!(
                s,
                " In cell names {} and {}.",
                names[..last].join(", "),
                names[last]
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
        let columns: [Column<'_, &RestartControl>; 10] = [
            column("pair", L, |c: &&RestartControl| c.pair.clone()),
            column("family", L, |c: &&RestartControl| c.family.clone()),
            column("K", L, |c: &&RestartControl| c.k.clone()),
            column("units", R, |c: &&RestartControl| c.n_units.to_string()),
            column("quality", R, |c: &&RestartControl| one_decimal(c.quality)),
            column("LC prefix $/task", R, |c: &&RestartControl| {
                dollars(c.prefix_cost)
            }),
            column("abort+HC $/task", R, |c: &&RestartControl| {
                dollars(c.abort_hc_cost)
            }),
            column("abort+HC CSRet", R, |c: &&RestartControl| {
                one_decimal(c.abort_hc_csret)
            }),
            column("LC-full+HC-full $/task", R, |c: &&RestartControl| {
                dollars(c.full_restart_cost)
            }),
            column("LC-full+HC-full CSRet", R, |c: &&RestartControl| {
                one_decimal(c.full_restart_csret)
            }),
        ];
        Grid::of(&columns, &self.restart_controls)
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
        let mut s = format!("## {RULES_HEADING}\n\n{RULES_INTRO}\n\n");
        s.push_str(&self.rules_table().markdown());
        s.push('\n');
        s
    }

    /// Which extraction rule read the final replies, as a table.
    pub(crate) fn rules_table(&self) -> Grid {
        let columns: [Column<'_, &RuleCount>; 5] = [
            column("family", L, |r: &&RuleCount| r.family.clone()),
            column("cell", L, |r: &&RuleCount| self.short_cell(&r.cell)),
            column("rule", L, |r: &&RuleCount| r.rule.clone()),
            column("replies", R, |r: &&RuleCount| r.n.to_string()),
            column("no answer", R, |r: &&RuleCount| r.n_no_answer.to_string()),
        ];
        Grid::of(&columns, &self.extraction_rules)
    }

    /// LiC's LLM answer extraction (`extraction = "lic"`): its calls, spend and failures
    /// per cell and family and in total, apart from the episodes' own cost; left out when
    /// no extraction call was made.
    fn extraction_section(&self) -> String {
        let Some(intro) = self.extraction_intro() else {
            return String::new();
        };
        let mut s = format!("## {EXTRACTION_HEADING}\n\n{intro}\n\n");
        s.push_str(&self.extraction_table().markdown());
        s.push('\n');
        s
    }

    /// What the answer-extraction table is about, with the experiment's totals; `None`
    /// when no extraction call was made.
    pub(crate) fn extraction_intro(&self) -> Option<String> {
        let total = self.extraction.as_ref()?;
        Some(format!(
            "Math and database answers were extracted by an LLM with LiC's prompt (JSON mode, temperature 0, up to 3 attempts, accepted only verbatim). Its spend is not in the cells' costs: {} calls, ${:.6} in all; {} extraction(s) gave no answer (scored 0 as no answer).",
            total.extraction_calls, total.extraction_cost_usd, total.extraction_failed
        ))
    }

    /// LiC's extraction calls per cell and family (handoff and anchor rows, then
    /// baselines), as a table.
    pub(crate) fn extraction_table(&self) -> Grid {
        /// One row: pair (empty for a baseline), family, cell, calls, failed, cost.
        type Line<'r> = (&'r str, &'r str, &'r str, u64, u64, f64);
        let columns: [Column<'_, Line<'_>>; 6] = [
            column("pair", L, |l: &Line<'_>| l.0.to_owned()),
            column("family", L, |l: &Line<'_>| l.1.to_owned()),
            column("cell", L, |l: &Line<'_>| self.short_cell(l.2)),
            column("calls", R, |l: &Line<'_>| l.3.to_string()),
            column("failed", R, |l: &Line<'_>| l.4.to_string()),
            column("cost $", R, |l: &Line<'_>| format!("{:.6}", l.5)),
        ];
        let cells = self
            .cells
            .iter()
            .filter(|r| r.cell.is_some() && r.extraction_calls > 0)
            .map(|r| {
                (
                    r.pair.as_str(),
                    r.family.as_str(),
                    r.cell.as_deref().unwrap_or_default(),
                    r.extraction_calls,
                    r.extraction_failed,
                    r.extraction_cost_usd,
                )
            });
        let baselines = self
            .baselines
            .iter()
            .filter(|r| r.family != ALL_FAMILIES && r.extraction_calls > 0)
            .map(|r| {
                (
                    "",
                    r.family.as_str(),
                    r.cell.as_str(),
                    r.extraction_calls,
                    r.extraction_failed,
                    r.extraction_cost_usd,
                )
            });
        Grid::of(&columns, cells.chain(baselines))
    }

    /// Per cell and family, the cache-read share of input tokens and the empty and cut
    /// replies; left out when no row has calls (a report built without them).
    fn calls_section(&self) -> String {
        let grid = self.calls_table();
        if grid.rows.is_empty() {
            return String::new();
        }
        let mut s = format!("## {CALLS_HEADING}\n\n{CALLS_INTRO}\n\n");
        s.push_str(&grid.markdown());
        s.push('\n');
        s
    }

    /// The cache share and empty and cut replies of the rows with calls, as a table.
    pub(crate) fn calls_table(&self) -> Grid {
        let columns: [Column<'_, &CellRow>; 6] = [
            column("pair", L, |r: &&CellRow| r.pair.clone()),
            column("family", L, |r: &&CellRow| r.family.clone()),
            column("cell", L, |r: &&CellRow| {
                self.short_cell(r.cell.as_deref().unwrap_or_default())
            }),
            column("cache share %", R, |r: &&CellRow| {
                r.cache_read_share
                    .map(|v| format!("{v:.1}"))
                    .unwrap_or_default()
            }),
            column("empty", R, |r: &&CellRow| r.n_empty_replies.to_string()),
            column("cut", R, |r: &&CellRow| r.n_cut_replies.to_string()),
        ];
        Grid::of(
            &columns,
            self.cells
                .iter()
                .filter(|r| r.cell.is_some() && r.cache_read_share.is_some()),
        )
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
        let columns: [Column<'_, &SkippedTask>; 2] = [
            column("task", L, |t: &&SkippedTask| t.task_id.clone()),
            column("reason", L, |t: &&SkippedTask| t.reason.clone()),
        ];
        Grid::of(&columns, &self.skipped_tasks)
    }

    /// The incomplete and errored episodes as a table.
    pub(crate) fn incomplete_table(&self) -> Grid {
        let columns: [Column<'_, &IncompleteEntry>; 5] = [
            column("task", L, |e: &&IncompleteEntry| e.task_id.clone()),
            column("cell", L, |e: &&IncompleteEntry| self.short_cell(&e.cell)),
            column("replicate", R, |e: &&IncompleteEntry| {
                e.replicate.to_string()
            }),
            column("status", L, |e: &&IncompleteEntry| e.status.to_string()),
            column("reason", L, |e: &&IncompleteEntry| {
                e.reason.clone().unwrap_or_else(|| DASH.to_owned())
            }),
        ];
        Grid::of(&columns, &self.incomplete)
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

/// The episode counts every anchor and handoff table ends with.
fn count_columns<'a>() -> [Column<'a, &'a CellRow>; 7] {
    [
        column("attempted", R, |r: &&CellRow| r.n_attempted.to_string()),
        column("scored", R, |r: &&CellRow| r.n_scored.to_string()),
        column("no answer", R, |r: &&CellRow| r.n_no_answer.to_string()),
        column("unscored", R, |r: &&CellRow| r.n_unscored.to_string()),
        column("errored", R, |r: &&CellRow| r.n_errored.to_string()),
        column("incomplete", R, |r: &&CellRow| r.n_incomplete.to_string()),
        column("matched", R, |r: &&CellRow| r.n_matched.to_string()),
    ]
}

/// A pair's anchors table.
pub(crate) fn anchor_table(rows: &[&CellRow], ci: bool) -> Grid {
    let mut columns: Vec<Column<'_, &CellRow>> = vec![
        column("family", L, |r: &&CellRow| r.family.clone()),
        column("role", L, |r: &&CellRow| {
            r.anchor.map_or("", |a| a.label()).to_owned()
        }),
        column("model", L, |r: &&CellRow| {
            r.model.clone().unwrap_or_default()
        }),
        column("score", R, |r: &&CellRow| one_decimal(r.score)),
        column("$/task", R, |r: &&CellRow| dollars(r.cost_per_task)),
    ];
    if ci {
        columns.push(column("score 95% CI", R, |r: &&CellRow| {
            interval(r.score_ci)
        }));
    }
    columns.extend(count_columns());
    Grid::of(&columns, rows.iter().copied())
}

/// A table of handoff rows.
pub(crate) fn handoff_table(rows: &[&CellRow], ci: bool) -> Grid {
    let mut columns: Vec<Column<'_, &CellRow>> = vec![
        column("family", L, |r: &&CellRow| r.family.clone()),
        column("K", L, |r: &&CellRow| r.k.clone().unwrap_or_default()),
        column("interface", L, |r: &&CellRow| r.interface.clone()),
        column("score", R, |r: &&CellRow| one_decimal(r.score)),
        column("$/task", R, |r: &&CellRow| dollars(r.cost_per_task)),
        column("QRec", R, |r: &&CellRow| qrec_cell(r)),
        column("CSRet", R, |r: &&CellRow| one_decimal(r.csret)),
    ];
    if ci {
        columns.extend([
            column("score 95% CI", R, |r: &&CellRow| interval(r.score_ci)),
            column("QRec 95% CI", R, |r: &&CellRow| interval(r.qrec_ci)),
            column("CSRet 95% CI", R, |r: &&CellRow| interval(r.csret_ci)),
        ]);
    }
    columns.extend(count_columns());
    Grid::of(&columns, rows.iter().copied())
}
