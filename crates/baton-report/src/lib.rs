//! Quality/cost metrics and tables for baton experiments.
//!
//! This crate turns episode records (finished or not) into the paper's tables:
//! per (pair, direction, family, switch point, interface) the score, the cost per
//! task, QRec and CSRet against the pair's anchors on matched units, equal-weight
//! family aggregates, averages over switch points, restart controls, and paired
//! task-level bootstrap intervals; and the rest of LiC's protocol: single-turn baseline
//! cells ([`BaselineRow`]: `full(M)`, `concat(M)` against `single(M)`) and, with two or
//! more replicates, LiC's aptitude and unreliability on every anchor and handoff row. It
//! renders them as Markdown, CSV, JSON, LaTeX and one self-contained HTML page, and draws
//! SVG plots per pair and direction (score by switch point; QRec against CSRet),
//! hand-written so they stay small, exact and byte-for-byte reproducible.
//!
//! Paper-ready by rule: Markdown tables fit a 100-column terminal (a wider one reads in
//! parts that each repeat the row's key; cell names say LC and HC for one pair's models,
//! M1, M2, … for several; a text cell too long for any part is cut to `… [n]` with the
//! full text in a legend under the table), LaTeX is `booktabs` rules in `longtable`s
//! with each value's interval in its cell and the table's rules in its last foot (both
//! studies), scatter labels never cover each other, and a QRec over anchors less than 5
//! points apart (an aggregate the 5-point rule does not omit) is marked ‡ with its
//! footnote (`qrec_unstable` in CSV and JSON).
//!
//! Every table is built from one column list (`format::Column`: a header, its
//! alignment and how its cell is computed), which each format renders, so a header and
//! its cells cannot drift apart; the chat report's CSV columns are one list too.
//!
//! It is pure: no store, no files, no clock. `baton-runner` reads the SQLite store
//! into a [`ReportInput`] (costs as exact [`baton_types::Cost`]s, turned into dollars
//! here only where they are averaged), and the binary writes the strings this crate
//! returns. It does not
//! score answers (`baton-eval`) or price calls (`baton-models`): it takes the scores
//! and attributed costs as recorded. It sees no conversations, so the HTML page has
//! no transcript view.
//!
//! Agent experiments have their own report ([`build_agent`] over an
//! [`AgentReportInput`]): resolve rate, cost per task and per step, termination-step
//! percentiles and exit statuses per model and difficulty bucket; the handoff study
//! ([`build_study`] over a [`StudyInput`]) adds the switch calls, every handoff cell with
//! its fired counts, the Table-1 aggregate, windows, buckets, restart controls, the
//! step-cost decomposition, bootstrap intervals and the cost audit.
//!
//! Both studies' numbers come from one metrics core: per-task sums and equal-weight
//! means, QRec and CSRet with the omission rule, the restart controls' composition
//! (`metrics.rs`), the paired bootstrap (`bootstrap.rs`) and the percentile rules
//! ([`nearest_rank`], linear interpolation; `percentile.rs`). Both reports are written
//! through one trait, [`Export`] ([`Report`] and [`AgentExperimentReport`]), in the
//! [`ExportFormat`]s each supports (the agent report: all but CSV), with the same
//! tables and escaping.
//!
//! Main types: [`ReportInput`] (with [`PairSpec`], [`EpisodeRecord`],
//! [`BootstrapConfig`]) goes into [`build`], which returns a [`Report`] of
//! [`CellRow`]s, [`RestartControl`]s and [`IncompleteEntry`]s; [`Report::plots`]
//! gives [`Plot`]s.
//!
//! Rules the numbers follow (design §1):
//! - A handoff row compares on *matched units*: the (task, replicate) pairs where
//!   the handoff episode and both anchors' episodes are scored. Incomplete,
//!   errored and unscored episodes are never scored 0; they are counted per row
//!   and the incomplete and errored ones are listed.
//! - `QRec = 100·(R_m − R_LC)/(R_HC − R_LC)`, `CSRet = 100·(C_HC − C_m)/(C_HC − C_LC)`,
//!   kept outside [0, 100]; per-family QRec is omitted when `|R_HC − R_LC| < 5`.
//! - `family = "all"` rows average each family's R and C with equal weight over
//!   the families with matched units, then apply the formulas; `k = "avg"` rows do
//!   the same over switch points (emitted when a group has two or more).
//! - The bootstrap resamples task ids with replacement within each family
//!   (stratified, so every family is present in every draw), keeps all replicates
//!   of a drawn task, and uses the same draws for every row.
//!
//! ```
//! use baton_report::{build, EpisodeRecord, PairSpec, ReportInput};
//! use baton_types::{Cell, Cost, EpisodeStatus, Family, Interface, SwitchPoint};
//!
//! let ep = |cell: Cell, score: f64, usd: f64| EpisodeRecord {
//!     task_id: "math/1".into(), family: Family::Math, cell, replicate: 0,
//!     status: EpisodeStatus::Scored, score: Some(score), cost_attributed: Cost::from_usd(usd),
//!     cost_paid: Cost::from_usd(usd), n_turns: 4, k: None, reason: None, prefix_cost: None,
//!     calls: Default::default(), no_answer: false, rule: None,
//! };
//! let input = ReportInput {
//!     title: "demo".into(),
//!     simulated: true,
//!     pairs: vec![PairSpec { name: "p".into(), lc: "sim/lc".into(), hc: "sim/hc".into() }],
//!     episodes: vec![
//!         ep(Cell::single("sim/lc"), 0.0, 0.01),
//!         ep(Cell::single("sim/hc"), 1.0, 0.11),
//!         ep(Cell::handoff("sim/lc", "sim/hc", SwitchPoint::Early, Interface::Raw), 1.0, 0.06),
//!     ],
//!     bootstrap: None,
//!     spend: None,
//!     skipped_tasks: Vec::new(),
//!     notes: Vec::new(),
//! };
//! let report = build(&input);
//! let row = report.cells.iter().find(|r| r.family == "math" && r.k.as_deref() == Some("early")).unwrap();
//! // QRec = 100·(100 − 0)/(100 − 0) = 100; CSRet = 100·(0.11 − 0.06)/(0.11 − 0.01) = 50.
//! assert_eq!(row.qrec, Some(100.0));
//! assert!((row.csret.unwrap() - 50.0).abs() < 1e-9);
//! assert!(report.to_markdown().contains("simulated models"));
//! // Two plots per direction, also inline in the HTML page.
//! let plots = report.plots();
//! assert_eq!(plots[0].name, "score-by-k-escalation-p");
//! assert_eq!(plots.len(), 4);
//! assert!(report.to_html().contains(&plots[1].svg));
//! ```
#![deny(missing_docs)]

mod agent;
mod agent_study;
mod assemble;
mod bootstrap;
mod csv;
mod error;
mod export;
mod format;
mod html;
mod input;
mod latex;
mod markdown;
mod metrics;
mod percentile;
mod plot;
mod protocol;
mod report;
mod restart;

pub use agent::{
    AgentEpisodeRecord, AgentReport, AgentReportInput, AgentRow, TERMINATION_PERCENTILES,
    build_agent,
};
pub use agent_study::{
    Audit, Decomposition, HANDOVER_MIN_EPISODES, HandoverEpisode, HandoverLint, HandoverRelation,
    Interval, StudyEpisode, StudyInput, StudyReport, StudyRow, StudyThreshold, build_study,
    handover_relation,
};
pub use assemble::build;
pub use csv::CSV_COLUMNS;
pub use error::ReportError;
pub use export::{AgentExperimentReport, Export, ExportFormat};
pub use input::{
    BootstrapConfig, EpisodeCalls, EpisodeId, EpisodeRecord, PairSpec, ReportInput, SkippedTask,
};
pub use metrics::{MIN_QUALITY_GAP, Omission};
pub use percentile::nearest_rank;
pub use plot::Plot;
pub use protocol::BaselineRow;
pub use report::{
    ALL_FAMILIES, AVERAGE_K, AnchorRole, CellRow, ExtractionLine, IncompleteEntry, Report,
    RestartControl, RuleCount, SINGLE, SpendLine,
};

/// [`ReportInput::validate`], then [`build`].
pub fn try_build(input: &ReportInput) -> Result<Report, ReportError> {
    input.validate()?;
    Ok(build(input))
}
