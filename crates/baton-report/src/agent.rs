//! The agent report: per model and difficulty bucket, the resolve rate, dollars per
//! task, steps and cost per step, the termination-step distribution (the handoff
//! study's switch points come from it) and the exit-status counts; incomplete episodes
//! are counted as incomplete, never as unresolved.
//!
//! Rules:
//! - A *finished* episode has an exit status (`submitted`, `step_limit`, `cost_limit`,
//!   `format_errors`). Its termination step is the number of model calls it made.
//! - The resolve rate is over finished episodes with a verdict (an unscored one, such
//!   as a SWE-bench run before the harness, is counted apart).
//! - `$ / task` and steps average over finished episodes; cost per step is their total
//!   paid over their total steps. Incomplete episodes' spend is in `paid_incomplete`.
//! - Percentiles are nearest rank ([`crate::nearest_rank`]): the value at rank
//!   ⌈p/100 · n⌉ (at least 1) of the sorted termination steps, [`TERMINATION_PERCENTILES`].
//! - Bucket `all` pools every bucket.

use std::collections::BTreeMap;

use baton_types::Cost;
use serde::Serialize;

use crate::format::{Column, DASH, Grid, L, R, column, fixed};
use crate::html::{PAGE_END, escape, html_table, page_start};
use crate::latex;
use crate::percentile::nearest_rank;

/// The percentiles of the termination-step distribution the report shows (the handoff
/// study's switch points).
pub const TERMINATION_PERCENTILES: [u32; 7] = [5, 10, 15, 25, 35, 45, 50];

/// The buckets in report order (`all` last).
const BUCKETS: [&str; 3] = ["easy", "medium", "hard"];

/// One agent episode as the report sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentEpisodeRecord {
    /// Task id.
    pub task_id: String,
    /// The model's name.
    pub model: String,
    /// Difficulty bucket.
    pub bucket: String,
    /// Replicate index.
    pub replicate: u32,
    /// Its exit status, when it finished.
    pub exit: Option<String>,
    /// Whether its submission resolved the task, when it finished and was scored.
    pub resolved: Option<bool>,
    /// Model calls stored.
    pub steps: u32,
    /// What every answered attempt of it cost.
    pub paid: Cost,
    /// Why it is incomplete or unscored.
    pub reason: Option<String>,
}

/// What the agent report is built from.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentReportInput {
    /// The experiment's name.
    pub title: String,
    /// Whether any model is simulated.
    pub simulated: bool,
    /// The episodes.
    pub episodes: Vec<AgentEpisodeRecord>,
}

/// One (model, bucket) row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentRow {
    /// The model.
    pub model: String,
    /// The bucket, or `all`.
    pub bucket: String,
    /// Episodes planned and stored.
    pub episodes: usize,
    /// Finished episodes.
    pub finished: usize,
    /// Episodes that have not finished.
    pub incomplete: usize,
    /// Finished episodes without a verdict.
    pub unscored: usize,
    /// Resolved episodes.
    pub resolved: usize,
    /// Resolved over scored, when any is scored.
    pub resolve_rate: Option<f64>,
    /// Mean paid per finished episode, in dollars.
    pub usd_per_task: Option<f64>,
    /// Mean steps per finished episode.
    pub mean_steps: Option<f64>,
    /// Paid over steps of the finished episodes, in dollars.
    pub usd_per_step: Option<f64>,
    /// What incomplete episodes paid so far, in dollars.
    pub paid_incomplete_usd: f64,
    /// `(p, s)`: the termination step at each of [`TERMINATION_PERCENTILES`].
    pub termination: Vec<(u32, u32)>,
    /// Finished episodes by exit status.
    pub exits: BTreeMap<String, usize>,
}

/// The agent report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentReport {
    /// The experiment's name.
    pub title: String,
    /// Whether any model is simulated.
    pub simulated: bool,
    /// Rows by model, then bucket (`all` last).
    pub rows: Vec<AgentRow>,
    /// Incomplete episodes: (model, task, replicate, reason).
    pub incomplete: Vec<(String, String, u32, String)>,
}

fn row(model: &str, bucket: &str, eps: &[&AgentEpisodeRecord]) -> AgentRow {
    let finished: Vec<_> = eps.iter().filter(|e| e.exit.is_some()).collect();
    let scored: Vec<_> = finished.iter().filter_map(|e| e.resolved).collect();
    let resolved = scored.iter().filter(|r| **r).count();
    let paid: Cost = finished.iter().map(|e| e.paid).sum();
    let steps: u64 = finished.iter().map(|e| u64::from(e.steps)).sum();
    let mut ends: Vec<u32> = finished.iter().map(|e| e.steps).collect();
    ends.sort_unstable();
    let mut exits = BTreeMap::new();
    for e in &finished {
        *exits.entry(e.exit.clone().unwrap_or_default()).or_default() += 1;
    }
    let n = finished.len();
    AgentRow {
        model: model.to_string(),
        bucket: bucket.to_string(),
        episodes: eps.len(),
        finished: n,
        incomplete: eps.len() - n,
        unscored: n - scored.len(),
        resolved,
        resolve_rate: (!scored.is_empty()).then(|| resolved as f64 / scored.len() as f64),
        usd_per_task: (n > 0).then(|| paid.usd() / n as f64),
        mean_steps: (n > 0).then(|| steps as f64 / n as f64),
        usd_per_step: (steps > 0).then(|| paid.usd() / steps as f64),
        paid_incomplete_usd: eps
            .iter()
            .filter(|e| e.exit.is_none())
            .map(|e| e.paid)
            .sum::<Cost>()
            .usd(),
        termination: TERMINATION_PERCENTILES
            .iter()
            .filter_map(|p| nearest_rank(&ends, *p).map(|s| (*p, s)))
            .collect(),
        exits,
    }
}

/// Build the report.
pub fn build_agent(input: &AgentReportInput) -> AgentReport {
    let mut models: Vec<&str> = input.episodes.iter().map(|e| e.model.as_str()).collect();
    models.sort_unstable();
    models.dedup();
    let mut rows = Vec::new();
    for m in models {
        let of_model: Vec<_> = input.episodes.iter().filter(|e| e.model == m).collect();
        let mut buckets: Vec<&str> = BUCKETS
            .iter()
            .copied()
            .filter(|b| of_model.iter().any(|e| e.bucket == *b))
            .collect();
        for e in &of_model {
            if !buckets.contains(&e.bucket.as_str()) {
                buckets.push(&e.bucket);
            }
        }
        for b in buckets {
            let eps: Vec<_> = of_model.iter().copied().filter(|e| e.bucket == b).collect();
            rows.push(row(m, b, &eps));
        }
        rows.push(row(m, "all", &of_model));
    }
    let mut incomplete: Vec<_> = input
        .episodes
        .iter()
        .filter(|e| e.exit.is_none())
        .map(|e| {
            (
                e.model.clone(),
                e.task_id.clone(),
                e.replicate,
                e.reason.clone().unwrap_or_else(|| "not run yet".into()),
            )
        })
        .collect();
    incomplete.sort();
    AgentReport {
        title: input.title.clone(),
        simulated: input.simulated,
        rows,
        incomplete,
    }
}

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| DASH.to_string(), f)
}

/// Exit statuses in report order (one spelling, `baton_types::agent::AgentExit`).
const EXITS: [&str; baton_types::agent::AgentExit::ALL.len()] = {
    use baton_types::agent::AgentExit as E;
    let mut names = [""; E::ALL.len()];
    let mut i = 0;
    while i < E::ALL.len() {
        names[i] = E::ALL[i].name();
        i += 1;
    }
    names
};

/// The termination table's percentile headers, one per [`TERMINATION_PERCENTILES`].
const PERCENTILE_HEADS: [&str; TERMINATION_PERCENTILES.len()] =
    ["p5", "p10", "p15", "p25", "p35", "p45", "p50"];

/// The model and bucket columns every table of the report starts with.
fn key_columns<'a>() -> Vec<Column<'a, &'a AgentRow>> {
    vec![
        column("model", L, |r: &&AgentRow| r.model.clone()),
        column("bucket", L, |r: &&AgentRow| r.bucket.clone()),
    ]
}

/// Resolve rate and cost per model and bucket.
fn main_columns<'a>() -> Vec<Column<'a, &'a AgentRow>> {
    let mut c = key_columns();
    c.extend([
        column("finished", R, |r: &&AgentRow| {
            format!("{}/{}", r.finished, r.episodes)
        }),
        column("incomplete", R, |r: &&AgentRow| r.incomplete.to_string()),
        column("resolved", R, |r: &&AgentRow| r.resolved.to_string()),
        column("resolve rate", R, |r: &&AgentRow| {
            opt(r.resolve_rate, |v| format!("{}%", fixed(100.0 * v, 1)))
        }),
        column("$ / task", R, |r: &&AgentRow| {
            opt(r.usd_per_task, |c| format!("${}", fixed(c, 4)))
        }),
        column("steps", R, |r: &&AgentRow| {
            opt(r.mean_steps, |s| fixed(s, 1))
        }),
        column("$ / step", R, |r: &&AgentRow| {
            opt(r.usd_per_step, |c| format!("${}", fixed(c, 5)))
        }),
    ]);
    c
}

/// The termination step at each of [`TERMINATION_PERCENTILES`].
fn termination_columns<'a>() -> Vec<Column<'a, &'a AgentRow>> {
    let mut c = key_columns();
    c.push(column("n", R, |r: &&AgentRow| r.finished.to_string()));
    for (p, head) in TERMINATION_PERCENTILES.into_iter().zip(PERCENTILE_HEADS) {
        c.push(column(head, R, move |r: &&AgentRow| {
            r.termination
                .iter()
                .find(|(q, _)| *q == p)
                .map_or_else(|| DASH.into(), |(_, s)| s.to_string())
        }));
    }
    c
}

/// One column per exit status of [`EXITS`], then incomplete.
fn exit_columns<'a>() -> Vec<Column<'a, &'a AgentRow>> {
    let mut c = key_columns();
    for e in EXITS {
        c.push(column(e, R, move |r: &&AgentRow| {
            r.exits.get(e).copied().unwrap_or(0).to_string()
        }));
    }
    c.push(column("incomplete", R, |r: &&AgentRow| {
        r.incomplete.to_string()
    }));
    c
}

/// A titled table.
pub(crate) type Section = (String, Grid);

impl AgentReport {
    pub(crate) fn sections(&self) -> Vec<Section> {
        vec![
            (
                "Resolve rate and cost per model and bucket".into(),
                Grid::of(&main_columns(), &self.rows),
            ),
            (
                "Termination step (model calls) by percentile, nearest rank, finished episodes"
                    .into(),
                Grid::of(&termination_columns(), &self.rows),
            ),
            (
                "Exit statuses".into(),
                Grid::of(&exit_columns(), &self.rows),
            ),
        ]
    }

    fn note(&self) -> String {
        let mut s = String::new();
        if self.simulated {
            s.push_str(
                "Simulated models: these numbers show the machinery, not any real model.\n\n",
            );
        }
        s.push_str(
            "Incomplete episodes are not counted as unresolved; their spend is kept apart.\n",
        );
        s
    }

    /// The page title.
    pub(crate) fn page_title(&self) -> String {
        format!("{} (agent)", self.title)
    }

    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = format!("# {}\n\n{}\n", self.page_title(), self.note());
        for (title, grid) in self.sections() {
            s.push_str(&format!("## {title}\n\n"));
            s.push_str(&grid.markdown());
            s.push('\n');
        }
        if !self.incomplete.is_empty() {
            s.push_str("## Incomplete episodes\n\n");
            for (m, t, r, why) in &self.incomplete {
                s.push_str(&format!("- {m} on {t} (replicate {r}): {why}\n"));
            }
        }
        s
    }

    /// The report as LaTeX: each table a `booktabs` `longtable` (the preamble needs
    /// `\usepackage{booktabs}` and `\usepackage{longtable}`, as the first lines say)
    /// with the report's rules in its last foot, then the incomplete episodes.
    pub fn to_latex(&self) -> String {
        let mut s = latex::preamble_comment(&self.page_title());
        s.push('\n');
        s.push_str(&self.latex_body());
        s
    }

    /// The report's LaTeX tables, without the comment lines before them.
    pub(crate) fn latex_body(&self) -> String {
        let notes = vec![latex::inline(self.note().replace('\n', " ").trim())];
        let mut s = String::new();
        for (title, grid) in self.sections() {
            s.push_str(&latex::longtable(
                &title,
                &latex::Tex::from_text(&grid),
                &notes,
            ));
        }
        if !self.incomplete.is_empty() {
            s.push_str("\\paragraph{Incomplete episodes}\n\\begin{itemize}\n");
            for (m, t, r, why) in &self.incomplete {
                s.push_str(&format!(
                    "\\item {} on {} (replicate {r}): {}\n",
                    latex::escape(m),
                    latex::escape(t),
                    latex::escape(why)
                ));
            }
            s.push_str("\\end{itemize}\n\n");
        }
        s
    }

    /// The report as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("a report always serializes");
        v["kind"] = "agent".into();
        v["termination_percentiles"] = serde_json::json!(TERMINATION_PERCENTILES);
        v
    }

    /// The report's HTML sections, without the page around them.
    pub(crate) fn html_body(&self) -> String {
        let mut s = format!(
            "<p>{}</p>\n",
            escape(&self.note()).replace('\n', " ").trim_end()
        );
        for (title, grid) in self.sections() {
            s.push_str(&format!("<h2>{}</h2>\n", escape(&title)));
            s.push_str(&html_table(&grid));
        }
        if !self.incomplete.is_empty() {
            s.push_str("<h2>Incomplete episodes</h2>\n<ul>\n");
            for (m, t, r, why) in &self.incomplete {
                s.push_str(&format!(
                    "<li>{} on {} (replicate {r}): {}</li>\n",
                    escape(m),
                    escape(t),
                    escape(why)
                ));
            }
            s.push_str("</ul>\n");
        }
        s
    }

    /// The report as one self-contained HTML page.
    pub fn to_html(&self) -> String {
        format!(
            "{}{}{PAGE_END}",
            page_start(&self.page_title()),
            self.html_body()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(
        model: &str,
        bucket: &str,
        exit: Option<&str>,
        resolved: Option<bool>,
        steps: u32,
    ) -> AgentEpisodeRecord {
        AgentEpisodeRecord {
            task_id: format!("t{steps}"),
            model: model.into(),
            bucket: bucket.into(),
            replicate: 0,
            exit: exit.map(str::to_string),
            resolved,
            steps,
            paid: Cost::from_usd(0.01 * f64::from(steps)),
            reason: exit.is_none().then(|| "killed".to_string()),
        }
    }

    #[test]
    fn incomplete_episodes_are_counted_apart_never_as_unresolved() {
        let input = AgentReportInput {
            title: "t".into(),
            simulated: true,
            episodes: vec![
                ep("a", "easy", Some("submitted"), Some(true), 6),
                ep("a", "easy", Some("step_limit"), Some(false), 10),
                ep("a", "easy", None, None, 3),
                ep("a", "hard", Some("submitted"), Some(false), 12),
            ],
        };
        let r = build_agent(&input);
        let easy = r.rows.iter().find(|r| r.bucket == "easy").unwrap();
        assert_eq!((easy.finished, easy.incomplete, easy.resolved), (2, 1, 1));
        assert_eq!(easy.resolve_rate, Some(0.5));
        assert_eq!(easy.mean_steps, Some(8.0));
        assert!((easy.usd_per_step.unwrap() - 0.01).abs() < 1e-12);
        assert!((easy.paid_incomplete_usd - 0.03).abs() < 1e-12);
        assert_eq!(easy.termination[0], (5, 6));
        assert_eq!(easy.exits["step_limit"], 1);
        let all = r.rows.iter().find(|r| r.bucket == "all").unwrap();
        assert_eq!((all.episodes, all.finished), (4, 3));
        assert_eq!(
            r.rows.iter().map(|r| r.bucket.as_str()).collect::<Vec<_>>(),
            ["easy", "hard", "all"]
        );
        let md = r.to_markdown();
        assert!(
            md.contains("|  p5 | p10 | p15 | p25 | p35 | p45 | p50 |"),
            "{md}"
        );
        assert!(md.contains("a on t3 (replicate 0): killed"), "{md}");
        assert!(r.to_html().contains("<h2>Exit statuses</h2>"));
        assert_eq!(
            r.to_json()["rows"][0]["termination"][0],
            serde_json::json!([5, 6])
        );
    }

    /// The exit-status table has one header per cell, each status under its own name:
    /// `snapshot_limit` counts once printed under "incomplete".
    // See: issue 31
    #[test]
    fn issue_31_exit_status_headers_match_their_cells() {
        let input = AgentReportInput {
            title: "t".into(),
            simulated: false,
            episodes: vec![
                ep("a", "easy", Some("submitted"), Some(true), 6),
                ep("a", "easy", Some("snapshot_limit"), Some(false), 7),
                ep("a", "easy", Some("snapshot_limit"), Some(false), 8),
                ep("a", "easy", None, None, 3),
            ],
        };
        let r = build_agent(&input);
        let (_, grid) = r
            .sections()
            .into_iter()
            .find(|(t, _)| t == "Exit statuses")
            .unwrap();
        let head: Vec<&str> = grid.headers.iter().map(|(h, _)| *h).collect();
        assert_eq!(
            head,
            [
                "model",
                "bucket",
                "submitted",
                "step_limit",
                "cost_limit",
                "format_errors",
                "error",
                "snapshot_limit",
                "incomplete"
            ]
        );
        let easy = grid.rows.iter().find(|row| row[1] == "easy").unwrap();
        assert_eq!(easy, &["a", "easy", "1", "0", "0", "0", "0", "2", "1"]);
        assert!(grid.rows.iter().all(|row| row.len() == head.len()));
        let md = r.to_markdown();
        // Wider than 100 columns in one piece, the table reads in two parts that each
        // repeat the key, every count under its own header.
        assert!(
            md.contains(
                "| model | bucket | submitted | step_limit | cost_limit | format_errors |\n"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| model | bucket | error | snapshot_limit | incomplete |\n\
                 | ----- | ------ | ----: | -------------: | ---------: |\n\
                 | a     | easy   |     0 |              2 |          1 |\n"
            ),
            "{md}"
        );
    }
}
