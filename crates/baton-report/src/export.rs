//! One interface over both studies' exporters: the binary asks a report for a format and
//! never knows which study it holds, or splices one report's page into another's.

use std::fmt;

use crate::agent::AgentReport;
use crate::agent_study::StudyReport;
use crate::error::ReportError;
use crate::html::{PAGE_END, page_start};
use crate::report::Report;

/// The formats a report can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Markdown tables.
    Markdown,
    /// One CSV row per cell.
    Csv,
    /// One JSON object.
    Json,
    /// LaTeX tables.
    Latex,
    /// One self-contained HTML page.
    Html,
}

impl ExportFormat {
    /// The format's short name (`md`, `csv`, `json`, `latex`, `html`).
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::Markdown => "md",
            ExportFormat::Csv => "csv",
            ExportFormat::Json => "json",
            ExportFormat::Latex => "latex",
            ExportFormat::Html => "html",
        }
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A report that writes itself in the export formats: the chat study's [`Report`] and
/// an agent experiment's [`AgentExperimentReport`].
pub trait Export {
    /// The report in `format`; [`ReportError::UnsupportedFormat`] for a format this
    /// report is not written in.
    fn export(&self, format: ExportFormat) -> Result<String, ReportError>;

    /// The HTML page with its rows linking to the transcript viewer at `viewer` (a URL
    /// relative to the page) where the report has rows of one cell; by default the plain
    /// page.
    fn export_html_linked(&self, viewer: &str) -> Result<String, ReportError> {
        let _ = viewer;
        self.export(ExportFormat::Html)
    }
}

impl Export for Report {
    fn export(&self, format: ExportFormat) -> Result<String, ReportError> {
        Ok(match format {
            ExportFormat::Markdown => self.to_markdown(),
            ExportFormat::Csv => self.to_csv(),
            ExportFormat::Json => self.to_json_string(),
            ExportFormat::Latex => self.to_latex(),
            ExportFormat::Html => self.to_html(),
        })
    }

    fn export_html_linked(&self, viewer: &str) -> Result<String, ReportError> {
        Ok(self.to_html_linked(viewer))
    }
}

/// An agent experiment's report: the per-model agent report and, for a handoff
/// experiment, the study's tables after it, as one document in each format.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentExperimentReport {
    /// Resolve rate, cost and termination steps per model and bucket.
    pub agent: AgentReport,
    /// The handoff study, when the experiment has one.
    pub study: Option<StudyReport>,
}

impl Export for AgentExperimentReport {
    fn export(&self, format: ExportFormat) -> Result<String, ReportError> {
        Ok(match format {
            ExportFormat::Markdown => {
                let mut s = self.agent.to_markdown();
                if let Some(study) = &self.study {
                    s.push('\n');
                    s.push_str(&study.to_markdown());
                }
                s
            }
            ExportFormat::Json => {
                let mut v = self.agent.to_json();
                if let (Some(study), Some(obj)) = (&self.study, v.as_object_mut())
                    && let serde_json::Value::Object(extra) = study.to_json()
                {
                    obj.extend(extra);
                }
                serde_json::to_string_pretty(&v).expect("json always serializes") + "\n"
            }
            ExportFormat::Html => {
                let mut s = page_start(&self.agent.page_title());
                s.push_str(&self.agent.html_body());
                if let Some(study) = &self.study {
                    s.push_str(&study.to_html());
                }
                s.push_str(PAGE_END);
                s
            }
            ExportFormat::Latex => {
                let mut s = self.agent.to_latex();
                if let Some(study) = &self.study {
                    s.push_str(&study.to_latex());
                }
                s
            }
            ExportFormat::Csv => {
                return Err(ReportError::UnsupportedFormat {
                    report: "agent",
                    format,
                    formats: "md, json, latex or html",
                });
            }
        })
    }
}
