//! The trap bench's report, from a run's `results.json` ([`super::experiment`]): per
//! scenario × trap × condition × model, the fell-in rate with its Wilson 95 % interval; each
//! condition's contrast with `none` for the same scenario, trap and model (the difference
//! in rates and Fisher's exact two-sided p); the condition's document lint (structure
//! score, validity, the trap's coverage) beside it; and per scenario × condition × model,
//! the cost, steps and tokens per trial and the exit statuses.
//!
//! A trial whose probe gave no answer (or whose episode did not finish) is counted as *no
//! answer*, left out of the rate's `n`, and shown in its own column, never as avoided. A
//! cell where no trial answered has no rate and no contrast (`—`).
//!
//! Three renderings of the same [`TrapReport`]: Markdown, JSON and a self-contained HTML
//! page ([`write()`] writes all three next to `results.json`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;
use crate::traps::Condition;
use crate::traps::experiment::{BenchResults, read_results};
use crate::traps::stats::{self, Rate};

/// A condition's contrast with `none`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Contrast {
    /// The condition's rate minus the control's.
    pub difference: f64,
    /// Fisher's exact test, two-sided.
    pub p_value: f64,
}

/// The lint of the document a cell's condition placed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LintCell {
    /// Its structure score (0–100).
    pub score: u32,
    /// Whether its header is valid.
    pub valid: bool,
    /// The cell's trap's coverage in it (`covered`, `contradicted`, `missing`).
    pub coverage: String,
}

/// One scenario × trap × condition × model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    /// The scenario.
    pub scenario: String,
    /// The trap.
    pub trap: String,
    /// The condition.
    pub condition: Condition,
    /// The model.
    pub model: String,
    /// Trials planned and recorded.
    pub trials: u64,
    /// Trials without an answer.
    pub no_answer: u64,
    /// The fell-in rate with its interval (`None`: no trial answered).
    pub rate: Option<Rate>,
    /// Against `none` (`None` for `none` itself or without both rates).
    pub contrast: Option<Contrast>,
    /// The document's lint (`None` for `none`).
    pub lint: Option<LintCell>,
}

/// One scenario × condition × model: what its trials cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostRow {
    /// The scenario.
    pub scenario: String,
    /// The condition.
    pub condition: Condition,
    /// The model.
    pub model: String,
    /// Trials recorded.
    pub trials: u64,
    /// Mean cost per trial, US dollars.
    pub cost_per_trial_usd: f64,
    /// Mean model calls per trial.
    pub steps_per_trial: f64,
    /// Mean prompt tokens per trial.
    pub input_tokens_per_trial: f64,
    /// Mean completion tokens per trial.
    pub output_tokens_per_trial: f64,
    /// Trials by exit status.
    pub exits: BTreeMap<String, u64>,
}

/// One condition × model over every scenario and trap (each trial's trap one answer).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pooled {
    /// The condition.
    pub condition: Condition,
    /// The model.
    pub model: String,
    /// Trap answers missing.
    pub no_answer: u64,
    /// The pooled fell-in rate with its interval.
    pub rate: Option<Rate>,
    /// Against `none`, pooled alike.
    pub contrast: Option<Contrast>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrapReport {
    /// The experiment's name.
    pub name: String,
    /// Trials recorded (finished or not).
    pub trials: u64,
    /// Trials that did not finish.
    pub unfinished: u64,
    /// Per condition and model, every scenario and trap pooled (trap answers are not
    /// independent within a trial: read it as a summary, the cells as the test).
    pub pooled: Vec<Pooled>,
    /// The cells, by scenario, trap, condition, model.
    pub cells: Vec<Cell>,
    /// The costs, by scenario, condition, model.
    pub costs: Vec<CostRow>,
}

/// Build the report of `results`.
pub fn build(results: &BenchResults) -> TrapReport {
    let exp = &results.experiment;
    let conditions = exp.condition_list();
    let models: Vec<&String> = exp.models.keys().collect();
    let mut cells = Vec::new();
    let mut costs = Vec::new();
    for (scenario, traps) in &results.traps {
        for condition in &conditions {
            for model in &models {
                let trials: Vec<_> = results
                    .trials
                    .iter()
                    .filter(|t| {
                        &t.id.scenario == scenario
                            && t.id.condition == *condition
                            && &&t.id.model == model
                    })
                    .collect();
                let n = trials.len() as u64;
                let mean = |f: &dyn Fn(&super::experiment::TrialRecord) -> f64| {
                    if n == 0 {
                        0.0
                    } else {
                        trials.iter().map(|t| f(t)).sum::<f64>() / n as f64
                    }
                };
                let mut exits = BTreeMap::new();
                for t in &trials {
                    *exits.entry(t.exit.clone()).or_insert(0) += 1;
                }
                costs.push(CostRow {
                    scenario: scenario.clone(),
                    condition: *condition,
                    model: (*model).clone(),
                    trials: n,
                    cost_per_trial_usd: mean(&|t| t.cost_usd),
                    steps_per_trial: mean(&|t| f64::from(t.steps)),
                    input_tokens_per_trial: mean(&|t| t.tokens.input as f64),
                    output_tokens_per_trial: mean(&|t| t.tokens.output as f64),
                    exits,
                });
            }
        }
        for trap in traps {
            let answers = |condition: Condition, model: &str| -> (u64, Vec<Option<bool>>) {
                let a: Vec<Option<bool>> = results
                    .trials
                    .iter()
                    .filter(|t| {
                        &t.id.scenario == scenario
                            && t.id.condition == condition
                            && t.id.model == model
                    })
                    .map(|t| {
                        if !t.finished {
                            return None;
                        }
                        t.outcomes
                            .iter()
                            .find(|o| &o.trap == trap)
                            .and_then(|o| match o.outcome {
                                super::Outcome::FellIn => Some(true),
                                super::Outcome::Clear => Some(false),
                                super::Outcome::NoAnswer => None,
                            })
                    })
                    .collect();
                (a.len() as u64, a)
            };
            for condition in &conditions {
                for model in &models {
                    let (n, a) = answers(*condition, model);
                    let rate = stats::cell_rate(&a);
                    let control = stats::cell_rate(&answers(Condition::None, model).1);
                    let contrast = match (rate, control) {
                        (Some(r), Some(c)) if *condition != Condition::None => Some(Contrast {
                            difference: r.rate - c.rate,
                            p_value: stats::contrast(&r, &c).p_value,
                        }),
                        _ => None,
                    };
                    let lint = results
                        .documents
                        .iter()
                        .find(|d| &d.scenario == scenario && d.condition == *condition)
                        .map(|d| LintCell {
                            score: d.lint.score,
                            valid: d.lint.valid,
                            coverage: d
                                .lint
                                .coverage
                                .iter()
                                .find(|(id, _)| id == trap)
                                .map_or_else(String::new, |(_, c)| c.clone()),
                        });
                    cells.push(Cell {
                        scenario: scenario.clone(),
                        trap: trap.clone(),
                        condition: *condition,
                        model: (*model).clone(),
                        trials: n,
                        no_answer: a.iter().filter(|x| x.is_none()).count() as u64,
                        rate,
                        contrast,
                        lint,
                    });
                }
            }
        }
    }
    let pooled_answers = |condition: Condition, model: &str| -> Vec<Option<bool>> {
        results
            .trials
            .iter()
            .filter(|t| t.id.condition == condition && t.id.model == model)
            .flat_map(|t| {
                t.outcomes.iter().map(move |o| {
                    if !t.finished {
                        return None;
                    }
                    match o.outcome {
                        super::Outcome::FellIn => Some(true),
                        super::Outcome::Clear => Some(false),
                        super::Outcome::NoAnswer => None,
                    }
                })
            })
            .collect()
    };
    let mut pooled = Vec::new();
    for condition in &conditions {
        for model in &models {
            let a = pooled_answers(*condition, model);
            let rate = stats::cell_rate(&a);
            let control = stats::cell_rate(&pooled_answers(Condition::None, model));
            let contrast = match (rate, control) {
                (Some(r), Some(c)) if *condition != Condition::None => Some(Contrast {
                    difference: r.rate - c.rate,
                    p_value: stats::contrast(&r, &c).p_value,
                }),
                _ => None,
            };
            pooled.push(Pooled {
                condition: *condition,
                model: (*model).clone(),
                no_answer: a.iter().filter(|x| x.is_none()).count() as u64,
                rate,
                contrast,
            });
        }
    }
    TrapReport {
        name: results.name.clone(),
        pooled,
        trials: results.trials.len() as u64,
        unfinished: results.trials.iter().filter(|t| !t.finished).count() as u64,
        cells,
        costs,
    }
}

fn rate_text(r: &Option<Rate>) -> String {
    match r {
        Some(r) => format!(
            "{}/{} = {:.2} [{:.2}, {:.2}]",
            r.k, r.n, r.rate, r.low, r.high
        ),
        None => "—".into(),
    }
}

fn contrast_text(c: &Option<Contrast>) -> (String, String) {
    match c {
        Some(c) => (format!("{:+.2}", c.difference), format!("{:.3}", c.p_value)),
        None => ("—".into(), "—".into()),
    }
}

fn lint_text(l: &Option<LintCell>) -> String {
    match l {
        Some(l) => format!(
            "{} ({}), {}",
            l.score,
            if l.valid { "valid" } else { "invalid" },
            l.coverage
        ),
        None => "—".into(),
    }
}

const CELL_HEAD: [&str; 9] = [
    "scenario",
    "trap",
    "condition",
    "model",
    "fell in [95% CI]",
    "no answer",
    "Δ vs none",
    "Fisher p",
    "document lint",
];

const POOLED_HEAD: [&str; 6] = [
    "condition",
    "model",
    "fell in [95% CI]",
    "no answer",
    "Δ vs none",
    "Fisher p",
];

fn pooled_row(p: &Pooled) -> Vec<String> {
    let (d, pv) = contrast_text(&p.contrast);
    vec![
        p.condition.to_string(),
        p.model.clone(),
        rate_text(&p.rate),
        p.no_answer.to_string(),
        d,
        pv,
    ]
}

const COST_HEAD: [&str; 8] = [
    "scenario",
    "condition",
    "model",
    "trials",
    "cost/trial (USD)",
    "steps/trial",
    "tokens in/out per trial",
    "exits",
];

fn cell_row(c: &Cell) -> Vec<String> {
    let (d, p) = contrast_text(&c.contrast);
    vec![
        c.scenario.clone(),
        c.trap.clone(),
        c.condition.to_string(),
        c.model.clone(),
        rate_text(&c.rate),
        c.no_answer.to_string(),
        d,
        p,
        lint_text(&c.lint),
    ]
}

fn cost_row(c: &CostRow) -> Vec<String> {
    vec![
        c.scenario.clone(),
        c.condition.to_string(),
        c.model.clone(),
        c.trials.to_string(),
        format!("{:.6}", c.cost_per_trial_usd),
        format!("{:.1}", c.steps_per_trial),
        format!(
            "{:.0} / {:.0}",
            c.input_tokens_per_trial, c.output_tokens_per_trial
        ),
        c.exits
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", "),
    ]
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The report as Markdown.
pub fn markdown(r: &TrapReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Trap bench: {}\n", r.name);
    let _ = writeln!(
        out,
        "{} trials ({} unfinished). Fell-in rates with Wilson 95 % intervals over the trials \
         whose probe answered; trials without an answer are counted apart, not as avoided. \
         Each condition is contrasted with `none` for the same scenario, trap and model \
         (difference in rates, Fisher's exact two-sided p). The lint is the condition's \
         document: structure score, validity, and the trap's coverage in it.\n",
        r.trials, r.unfinished
    );
    let table = |out: &mut String, head: &[&str], rows: Vec<Vec<String>>| {
        let _ = writeln!(out, "| {} |", head.join(" | "));
        let _ = writeln!(out, "|{}", head.iter().map(|_| "---|").collect::<String>());
        for row in rows {
            let cells: Vec<String> = row.iter().map(|c| md_escape(c)).collect();
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    };
    let _ = writeln!(
        out,
        "## By condition (every scenario and trap pooled; a summary, the cells below are the test)\n"
    );
    table(
        &mut out,
        &POOLED_HEAD,
        r.pooled.iter().map(pooled_row).collect(),
    );
    let _ = writeln!(out, "\n## Fell-in rates\n");
    table(&mut out, &CELL_HEAD, r.cells.iter().map(cell_row).collect());
    let _ = writeln!(out, "\n## Cost per trial\n");
    table(&mut out, &COST_HEAD, r.costs.iter().map(cost_row).collect());
    out
}

/// The report as JSON.
pub fn json(r: &TrapReport) -> String {
    serde_json::to_string_pretty(r).expect("the report serializes") + "\n"
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The report as a self-contained HTML page.
pub fn html(r: &TrapReport) -> String {
    let mut out = String::new();
    let title = html_escape(&format!("Trap bench: {}", r.name));
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:.25em .5em;text-align:left}}\
         td.na{{color:#888}}</style></head><body>\n<h1>{title}</h1>\n<p>{} trials ({} \
         unfinished). Fell-in rates with Wilson 95 % intervals over the trials whose probe \
         answered; trials without an answer are counted apart, not as avoided. Contrasts are \
         against <code>none</code> (difference in rates, Fisher's exact two-sided p).</p>\n",
        r.trials, r.unfinished
    );
    let table = |out: &mut String, head: &[&str], rows: Vec<Vec<String>>| {
        out.push_str("<table>\n<tr>");
        for h in head {
            let _ = write!(out, "<th>{}</th>", html_escape(h));
        }
        out.push_str("</tr>\n");
        for row in rows {
            out.push_str("<tr>");
            for c in row {
                let class = if c == "—" { " class=\"na\"" } else { "" };
                let _ = write!(out, "<td{class}>{}</td>", html_escape(&c));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    };
    out.push_str("<h2>By condition (every scenario and trap pooled)</h2>\n");
    table(
        &mut out,
        &POOLED_HEAD,
        r.pooled.iter().map(pooled_row).collect(),
    );
    out.push_str("<h2>Fell-in rates</h2>\n");
    table(&mut out, &CELL_HEAD, r.cells.iter().map(cell_row).collect());
    out.push_str("<h2>Cost per trial</h2>\n");
    table(&mut out, &COST_HEAD, r.costs.iter().map(cost_row).collect());
    out.push_str("</body></html>\n");
    out
}

/// Read `dir/results.json` and write `report.md`, `report.json` and `report.html` next to
/// it; returns the report and the files written.
pub fn write(dir: &Path) -> Result<(TrapReport, Vec<PathBuf>), Error> {
    let results = read_results(dir)?;
    let report = build(&results);
    let mut written = Vec::new();
    for (file, text) in [
        ("report.md", markdown(&report)),
        ("report.json", json(&report)),
        ("report.html", html(&report)),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|source| Error::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok((report, written))
}
