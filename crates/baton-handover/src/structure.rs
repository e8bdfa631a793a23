//! The STRUCTURE score: what both rubrics return.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::document::Document;

/// Which rubric scores the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Rubric {
    /// baton's rubric, which closes Handover 0.4.1's holes (claims carry checks, vacuous
    /// checks, first action agreement, optional fields, calendar dates).
    #[default]
    Baton,
    /// Handover 0.4.1's rubric, reproduced exactly, for comparison with existing scores.
    Handover04,
}

impl Rubric {
    /// The most each bucket can give.
    pub fn maxima(self) -> Subscores {
        match self {
            Rubric::Baton => Subscores {
                header: 25,
                negative: 20,
                sections: 35,
                self_containment: 12,
                prose: 8,
            },
            Rubric::Handover04 => Subscores {
                header: 45,
                negative: 20,
                sections: 15,
                self_containment: 12,
                prose: 8,
            },
        }
    }

    /// Score a document.
    pub fn score(self, doc: &Document) -> Structure {
        match self {
            Rubric::Baton => crate::rubric::baton::score(doc),
            Rubric::Handover04 => crate::rubric::compat::score(doc),
        }
    }
}

impl fmt::Display for Rubric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rubric::Baton => "baton",
            Rubric::Handover04 => "handover-0.4",
        })
    }
}

impl FromStr for Rubric {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "baton" => Ok(Rubric::Baton),
            "handover-0.4" => Ok(Rubric::Handover04),
            other => Err(format!(
                "unknown rubric \"{other}\" (known: baton, handover-0.4)"
            )),
        }
    }
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Makes the document invalid.
    Error,
    /// Costs points or needs attention; fails the document under `--strict`.
    Warning,
    /// Advice.
    Note,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        })
    }
}

/// One thing a rubric found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule's id (for SARIF and filtering).
    pub rule: &'static str,
    /// How much it matters.
    pub severity: Severity,
    /// The file line, when it has one.
    pub line: Option<usize>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl Finding {
    /// A finding.
    pub fn new(
        rule: &'static str,
        severity: Severity,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Finding {
        Finding {
            rule,
            severity,
            line,
            message: message.into(),
        }
    }
}

/// Points per bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Subscores {
    /// Header validity.
    pub header: u32,
    /// Negative knowledge.
    pub negative: u32,
    /// Section completeness (and, in the baton rubric, claims with checks).
    pub sections: u32,
    /// Self-containment and injection.
    pub self_containment: u32,
    /// Prose cleanliness.
    pub prose: u32,
}

impl Subscores {
    /// The sum.
    pub fn total(&self) -> u32 {
        self.header + self.negative + self.sections + self.self_containment + self.prose
    }
}

/// Which cues the body has.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cues {
    /// The negative-knowledge categories credited, in the order found.
    pub negative: Vec<&'static str>,
    /// Canonical sources credited.
    pub canonical: bool,
    /// A next action credited.
    pub next_action: bool,
    /// A verification section credited.
    pub verification: bool,
}

/// The structure score of one document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Structure {
    /// The rubric that produced it.
    pub rubric: Rubric,
    /// 0–100.
    pub score: u32,
    /// Whether no finding is an error.
    pub valid: bool,
    /// Points per bucket.
    pub subscores: Subscores,
    /// Findings, in line order within each rule family.
    pub findings: Vec<Finding>,
    /// The cues credited.
    pub cues: Cues,
}

impl Structure {
    /// Assemble a structure result; validity follows from the findings.
    pub fn new(
        rubric: Rubric,
        subscores: Subscores,
        findings: Vec<Finding>,
        cues: Cues,
    ) -> Structure {
        Structure {
            rubric,
            score: subscores.total(),
            valid: !findings.iter().any(|f| f.severity == Severity::Error),
            subscores,
            findings,
            cues,
        }
    }
}

/// `round(max × ok / of)`, rounding halves up as JavaScript's `Math.round` does.
pub fn share(max: u32, ok: usize, of: usize) -> u32 {
    if of == 0 {
        return 0;
    }
    (f64::from(max) * ok as f64 / of as f64 + 0.5).floor() as u32
}
