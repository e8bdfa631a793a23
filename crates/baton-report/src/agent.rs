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
//! - Percentiles are nearest rank: the value at rank ⌈p/100 · n⌉ (at least 1) of the
//!   sorted termination steps, [`TERMINATION_PERCENTILES`].
//! - Bucket `all` pools every bucket.

use std::collections::BTreeMap;

use baton_types::Cost;
use serde::Serialize;

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

/// The value at nearest rank ⌈p/100 · n⌉ (at least 1) of `sorted`.
pub fn nearest_rank(sorted: &[u32], p: u32) -> Option<u32> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u64;
    let rank = (u64::from(p) * n).div_ceil(100).max(1);
    Some(sorted[(rank - 1) as usize])
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
    v.map_or_else(|| "–".to_string(), f)
}

impl AgentRow {
    fn cells(&self) -> Vec<String> {
        vec![
            self.model.clone(),
            self.bucket.clone(),
            format!("{}/{}", self.finished, self.episodes),
            self.incomplete.to_string(),
            format!("{}", self.resolved),
            opt(self.resolve_rate, |r| format!("{:.1}%", 100.0 * r)),
            opt(self.usd_per_task, |c| format!("${c:.4}")),
            opt(self.mean_steps, |s| format!("{s:.1}")),
            opt(self.usd_per_step, |c| format!("${c:.5}")),
        ]
    }

    fn termination_cells(&self) -> Vec<String> {
        let mut out = vec![
            self.model.clone(),
            self.bucket.clone(),
            self.finished.to_string(),
        ];
        for p in TERMINATION_PERCENTILES {
            let s = self
                .termination
                .iter()
                .find(|(q, _)| *q == p)
                .map(|(_, s)| *s);
            out.push(s.map_or_else(|| "–".into(), |s| s.to_string()));
        }
        out
    }

    fn exit_cells(&self) -> Vec<String> {
        let mut out = vec![self.model.clone(), self.bucket.clone()];
        for e in EXITS {
            out.push(self.exits.get(e).copied().unwrap_or(0).to_string());
        }
        out.push(self.incomplete.to_string());
        out
    }
}

/// Exit statuses in report order (one spelling, `baton_types::agent::AgentExit`).
const EXITS: [&str; 6] = {
    use baton_types::agent::AgentExit as E;
    let mut names = [""; 6];
    let mut i = 0;
    while i < E::ALL.len() {
        names[i] = E::ALL[i].name();
        i += 1;
    }
    names
};

const MAIN_HEAD: [&str; 9] = [
    "model",
    "bucket",
    "finished",
    "incomplete",
    "resolved",
    "resolve rate",
    "$ / task",
    "steps",
    "$ / step",
];

fn termination_head() -> Vec<String> {
    let mut h: Vec<String> = ["model", "bucket", "n"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    h.extend(TERMINATION_PERCENTILES.iter().map(|p| format!("p{p}")));
    h
}

fn exit_head() -> Vec<String> {
    let mut h: Vec<String> = ["model", "bucket"].iter().map(|s| s.to_string()).collect();
    h.extend(EXITS.iter().map(|s| s.to_string()));
    h.push("incomplete".into());
    h
}

pub(crate) fn md_table(head: &[String], rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut s = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for r in rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}

pub(crate) fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) fn html_table(head: &[String], rows: impl Iterator<Item = Vec<String>>) -> String {
    let th: String = head
        .iter()
        .map(|h| format!("<th>{}</th>", html_escape(h)))
        .collect();
    let mut s = format!("<table>\n<tr>{th}</tr>\n");
    for r in rows {
        let td: String = r
            .iter()
            .map(|c| format!("<td>{}</td>", html_escape(c)))
            .collect();
        s.push_str(&format!("<tr>{td}</tr>\n"));
    }
    s.push_str("</table>\n");
    s
}

/// A titled table: title, head, rows.
type Section = (&'static str, Vec<String>, Vec<Vec<String>>);

impl AgentReport {
    fn sections(&self) -> Vec<Section> {
        vec![
            (
                "Resolve rate and cost per model and bucket",
                MAIN_HEAD.iter().map(|s| s.to_string()).collect(),
                self.rows.iter().map(AgentRow::cells).collect(),
            ),
            (
                "Termination step (model calls) by percentile, nearest rank, finished episodes",
                termination_head(),
                self.rows.iter().map(AgentRow::termination_cells).collect(),
            ),
            (
                "Exit statuses",
                exit_head(),
                self.rows.iter().map(AgentRow::exit_cells).collect(),
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

    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut s = format!("# {} (agent)\n\n{}\n", self.title, self.note());
        for (title, head, rows) in self.sections() {
            s.push_str(&format!("## {title}\n\n"));
            s.push_str(&md_table(&head, rows.into_iter()));
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

    /// The report as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("a report always serializes");
        v["kind"] = "agent".into();
        v["termination_percentiles"] = serde_json::json!(TERMINATION_PERCENTILES);
        v
    }

    /// The report as one self-contained HTML page.
    pub fn to_html(&self) -> String {
        let title = html_escape(&self.title);
        let mut s = format!(
            "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{title} (agent)</title>\n<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin-bottom:1.5em}}td,th{{border:1px solid #ccc;padding:.2em .5em;text-align:right}}</style></head><body>\n<h1>{title} (agent)</h1>\n<p>{}</p>\n",
            html_escape(&self.note()).replace('\n', " ")
        );
        for (t, head, rows) in self.sections() {
            s.push_str(&format!("<h2>{}</h2>\n", html_escape(t)));
            s.push_str(&html_table(&head, rows.into_iter()));
        }
        if !self.incomplete.is_empty() {
            s.push_str("<h2>Incomplete episodes</h2>\n<ul>\n");
            for (m, t, r, why) in &self.incomplete {
                s.push_str(&format!(
                    "<li>{} on {} (replicate {r}): {}</li>\n",
                    html_escape(m),
                    html_escape(t),
                    html_escape(why)
                ));
            }
            s.push_str("</ul>\n");
        }
        s.push_str("</body></html>\n");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_takes_the_ceiling_rank() {
        let s: Vec<u32> = (1..=20).collect();
        assert_eq!(nearest_rank(&s, 5), Some(1));
        assert_eq!(nearest_rank(&s, 10), Some(2));
        assert_eq!(nearest_rank(&s, 15), Some(3));
        assert_eq!(nearest_rank(&s, 50), Some(10));
        assert_eq!(nearest_rank(&[7], 5), Some(7));
        assert_eq!(nearest_rank(&[3, 9, 12], 35), Some(9));
        assert_eq!(nearest_rank(&[], 50), None);
    }

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
            md.contains("| p5 | p10 | p15 | p25 | p35 | p45 | p50 |"),
            "{md}"
        );
        assert!(md.contains("a on t3 (replicate 0): killed"), "{md}");
        assert!(r.to_html().contains("<h2>Exit statuses</h2>"));
        assert_eq!(
            r.to_json()["rows"][0]["termination"][0],
            serde_json::json!([5, 6])
        );
    }
}
