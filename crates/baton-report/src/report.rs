//! The report's rows and its JSON form.

use baton_types::{Direction, EpisodeStatus, Family, Spend};
use serde::Serialize;

use crate::input::{BootstrapConfig, PairSpec};
use crate::metrics::Omission;

/// A finished report: every table row plus the lists around them.
///
/// Built by [`crate::build`]; rendered by [`Report::to_markdown`], [`Report::to_csv`],
/// [`Report::to_latex`], [`Report::to_json`] and [`Report::to_html`]; drawn by
/// [`Report::plots`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The experiment's name.
    pub title: String,
    /// Whether simulated models took part (the outputs say so plainly).
    pub simulated: bool,
    /// The pairs reported on.
    pub pairs: Vec<PairSpec>,
    /// The bootstrap settings behind the intervals, if any.
    pub bootstrap: Option<BootstrapConfig>,
    /// Anchor, handoff, family-aggregate and averaged-over-K rows, in table order.
    pub cells: Vec<CellRow>,
    /// `abort+HC` and `LC-full+HC-full` controls composed from matched runs.
    pub restart_controls: Vec<RestartControl>,
    /// Incomplete and errored episodes, excluded from every metric.
    pub incomplete: Vec<IncompleteEntry>,
    /// Plain-language remarks about the input (episodes outside every pair, ...).
    pub notes: Vec<String>,
    /// What the experiment paid for, over every answered attempt (absent when the
    /// input did not say).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spend: Option<SpendLine>,
    /// Tasks the run left out, with why (always present in JSON, possibly empty).
    pub skipped_tasks: Vec<crate::input::SkippedTask>,
    /// LiC's single-turn baseline cells (`interface` `full` or `concat`) against each
    /// model's sharded anchor; absent from JSON when the run had none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub baselines: Vec<crate::protocol::BaselineRow>,
    /// The whole experiment's LiC answer extraction, when any was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extraction: Option<ExtractionLine>,
    /// Which extraction rule read the final replies, per family and cell: how many scored
    /// episodes each rule read, no-answer rules included (always present in JSON).
    pub extraction_rules: Vec<RuleCount>,
}

/// How many scored final replies of one family and cell one extraction rule read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleCount {
    /// The family.
    pub family: String,
    /// The cell's label.
    pub cell: String,
    /// The rule (`<family>.<rule>`; `unrecorded` for stores older than rule records).
    pub rule: String,
    /// Scored episodes it read.
    pub n: usize,
    /// Of those, how many held no answer.
    pub n_no_answer: usize,
}

/// The rule counts of the scored episodes, sorted by family, cell and rule.
pub(crate) fn rule_counts(episodes: &[crate::input::EpisodeRecord]) -> Vec<RuleCount> {
    let mut counts: std::collections::BTreeMap<(String, String, String), (usize, usize)> =
        std::collections::BTreeMap::new();
    for e in episodes
        .iter()
        .filter(|e| e.status == baton_types::EpisodeStatus::Scored)
    {
        let rule = e.rule.clone().unwrap_or_else(|| "unrecorded".to_owned());
        let entry = counts
            .entry((e.family.to_string(), e.cell.label(), rule))
            .or_default();
        entry.0 += 1;
        entry.1 += usize::from(e.no_answer);
    }
    counts
        .into_iter()
        .map(|((family, cell, rule), (n, n_no_answer))| RuleCount {
            family,
            cell,
            rule,
            n,
            n_no_answer,
        })
        .collect()
}

/// What LiC's LLM answer extraction (`extraction = "lic"`) cost over the experiment,
/// apart from the episodes' own cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ExtractionLine {
    /// Extraction calls made.
    pub extraction_calls: u64,
    /// Their cost in USD.
    pub extraction_cost_usd: f64,
    /// Episodes whose extraction gave no answer after its attempts.
    pub extraction_failed: u64,
}

/// The money line: every answered (billed) attempt, used or not, and what they cost.
///
/// Episode costs in the tables count the replies each episode used; this line counts
/// everything the provider billed, retries of unusable replies included.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SpendLine {
    /// USD paid over every priced answered attempt.
    pub paid_usd: f64,
    /// Answered attempts (HTTP 2xx), used or not.
    pub billed_attempts: u64,
    /// Answered attempts whose reply could not be used.
    pub unusable_attempts: u64,
    /// Answered attempts whose usage could not be read (not in `paid_usd`, but for the
    /// `estimated_attempts` among them).
    pub unknown_usage_attempts: u64,
    /// Answered attempts whose usage could not be read, in `paid_usd` at their call's
    /// upper bound (an estimate); left out of the JSON when 0.
    #[serde(skip_serializing_if = "is_zero_count")]
    pub estimated_attempts: u64,
    /// USD of `paid_usd` that is such an estimate; left out of the JSON when 0.
    #[serde(skip_serializing_if = "is_zero_usd")]
    pub estimated_usd: f64,
    /// Answered attempts whose cost could not be computed (not in `paid_usd`).
    pub unpriced_attempts: u64,
    /// Answered attempts that went through a provider batch, at batch rates.
    pub batched_attempts: u64,
    /// USD those attempts would have cost more at the direct rates.
    pub saved_by_batching_usd: f64,
    /// USD not paid because handoff prefixes were forked from their anchors (attributed
    /// minus paid, over every episode).
    pub saved_by_forking_usd: f64,
}

fn is_zero_count(n: &u64) -> bool {
    *n == 0
}

fn is_zero_usd(usd: &f64) -> bool {
    *usd == 0.0
}

impl SpendLine {
    /// The line for a [`Spend`], with what forked prefixes saved.
    pub fn new(s: &Spend, saved_by_forking: baton_types::Cost) -> Self {
        SpendLine {
            paid_usd: s.paid.usd(),
            billed_attempts: s.billed_attempts,
            unusable_attempts: s.unusable_attempts,
            unknown_usage_attempts: s.unknown_usage_attempts,
            estimated_attempts: s.estimated_attempts,
            estimated_usd: s.estimated.usd(),
            unpriced_attempts: s.unpriced_attempts,
            batched_attempts: s.batched_attempts,
            saved_by_batching_usd: s.saved_by_batching.usd(),
            saved_by_forking_usd: saved_by_forking.usd(),
        }
    }

    /// One sentence, as the Markdown and HTML reports show it.
    pub fn sentence(&self) -> String {
        let mut s = format!(
            "Spend: ${:.6} paid over {} billed attempts ({} unusable).",
            self.paid_usd, self.billed_attempts, self.unusable_attempts
        );
        if self.estimated_attempts > 0 {
            s.push_str(&format!(
                " Of it, ${:.6} is estimated: {} attempts whose usage could not be read, each counted at its call's upper bound.",
                self.estimated_usd, self.estimated_attempts
            ));
        }
        let unknown = self
            .unknown_usage_attempts
            .saturating_sub(self.estimated_attempts);
        if unknown + self.unpriced_attempts > 0 {
            s.push_str(&format!(
                " Not in that sum, so it is a lower bound: {} attempts whose usage could not be read and {} whose cost could not be computed.",
                unknown, self.unpriced_attempts
            ));
        }
        if self.batched_attempts > 0 {
            s.push_str(&format!(
                " Batching saved ${:.6} ({} attempts at batch rates instead of direct ones); forking saved ${:.6}.",
                self.saved_by_batching_usd, self.batched_attempts, self.saved_by_forking_usd
            ));
        } else if self.saved_by_forking_usd > 0.0 {
            s.push_str(&format!(
                " Forking saved ${:.6}.",
                self.saved_by_forking_usd
            ));
        }
        s
    }
}

/// Whether an anchor row is a pair's low-cost or high-capability model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AnchorRole {
    /// `single(P.lc)`.
    Lc,
    /// `single(P.hc)`.
    Hc,
}

impl AnchorRole {
    /// `lc` or `hc`, as in JSON and CSV.
    pub fn as_str(self) -> &'static str {
        match self {
            AnchorRole::Lc => "lc",
            AnchorRole::Hc => "hc",
        }
    }

    /// `LC` or `HC`.
    pub fn label(self) -> &'static str {
        match self {
            AnchorRole::Lc => "LC",
            AnchorRole::Hc => "HC",
        }
    }
}

/// Family name of the equal-weight aggregate rows.
pub const ALL_FAMILIES: &str = "all";
/// Switch label of the averaged-over-K rows.
pub const AVERAGE_K: &str = "avg";
/// Interface name of anchor rows.
pub const SINGLE: &str = "single";

/// One table row.
///
/// Anchor rows (`interface == "single"`, `direction` and `k` empty) score a pair's
/// model on its own scored episodes. Handoff rows score the cell on matched units:
/// (task, replicate) pairs where the handoff episode and both anchors' episodes are
/// scored; `score_lc`/`score_hc`/`cost_lc`/`cost_hc` are the anchors on those same
/// units. Rows with `family == "all"` weigh each family the same; rows with
/// `k == "avg"` average the switch points' rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CellRow {
    /// The pair's name.
    pub pair: String,
    /// `escalation` or `downshift`; `None` for anchors.
    pub direction: Option<Direction>,
    /// A family name or `all`.
    pub family: String,
    /// Switch label (`early`, `middle`, `late`, `k3`, `avg`); `None` for anchors.
    pub k: Option<String>,
    /// Interface name, or `single` for anchors.
    pub interface: String,
    /// Which anchor this row is, for anchor rows.
    pub anchor: Option<AnchorRole>,
    /// The anchor's model, for anchor rows.
    pub model: Option<String>,
    /// The cell's label, for rows of one cell in one family.
    pub cell: Option<String>,
    /// Mean score × 100.
    pub score: Option<f64>,
    /// Mean attributed cost in USD per task.
    pub cost_per_task: Option<f64>,
    /// Quality recovered, in percent of the LC→HC gap.
    pub qrec: Option<f64>,
    /// Cost saving retained, in percent of the HC→LC saving.
    pub csret: Option<f64>,
    /// Why `qrec` is missing on a handoff row.
    pub qrec_omitted_reason: Option<Omission>,
    /// `qrec` is given although the anchors differ by less than 5 points on the row's
    /// units (an aggregate row, where the 5-point rule does not omit it): it divides by
    /// that small gap, so the tables mark it (‡) and the footnotes say why.
    pub qrec_unstable: bool,
    /// Why `csret` is missing on a handoff row.
    pub csret_omitted_reason: Option<Omission>,
    /// LC anchor's score on the matched units.
    pub score_lc: Option<f64>,
    /// HC anchor's score on the matched units.
    pub score_hc: Option<f64>,
    /// LC anchor's cost per task on the matched units.
    pub cost_lc: Option<f64>,
    /// HC anchor's cost per task on the matched units.
    pub cost_hc: Option<f64>,
    /// 95% bootstrap interval of `score`.
    pub score_ci: Option<[f64; 2]>,
    /// 95% bootstrap interval of `qrec`.
    pub qrec_ci: Option<[f64; 2]>,
    /// 95% bootstrap interval of `csret`.
    pub csret_ci: Option<[f64; 2]>,
    /// Episodes of the row's cell(s), any status.
    pub n_attempted: usize,
    /// Episodes scored.
    pub n_scored: usize,
    /// Scored episodes whose final reply held no extractable answer (scored 0; a subset
    /// of `n_scored`, apart from wrong answers).
    #[serde(default)]
    pub n_no_answer: usize,
    /// Episodes answered but not scorable in this build.
    pub n_unscored: usize,
    /// Episodes whose scoring failed.
    pub n_errored: usize,
    /// Episodes that did not finish.
    pub n_incomplete: usize,
    /// Units entering the metrics (anchors: units where both anchors are scored).
    pub n_matched: usize,
    /// Percent of the input tokens of the row's episodes' own calls that were read from
    /// a prompt cache (forked prefixes are counted in the anchor that paid for them);
    /// `None` without calls. Forked prefixes make receiver requests byte-identical
    /// across cells, so caches can lower some cells' costs depending on timing.
    pub cache_read_share: Option<f64>,
    /// Replies with no text among those calls (re-sent to the next turn as a
    /// placeholder).
    pub n_empty_replies: u64,
    /// Replies cut at the output cap among those calls.
    pub n_cut_replies: u64,
    /// LiC answer-extraction calls for the row's episodes (`extraction = "lic"`; 0
    /// otherwise). They are not in the row's cost figures.
    #[serde(default)]
    pub extraction_calls: u64,
    /// What those calls cost, in USD: the extraction's spend, apart from the episodes'
    /// own cost.
    #[serde(default)]
    pub extraction_cost_usd: f64,
    /// Scored episodes whose LLM extraction gave no answer after its attempts (a subset
    /// of `n_no_answer`).
    #[serde(default)]
    pub extraction_failed: u64,
    /// LiC's aptitude A90 × 100: per task the 90th percentile of its scored replicates
    /// (two or more; linear interpolation between order statistics), averaged over tasks.
    /// Set on rows of one cell in one family.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aptitude: Option<f64>,
    /// LiC's unreliability U90_10 × 100: per task the 90th minus the 10th percentile,
    /// averaged over the same tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreliability: Option<f64>,
    /// LiC's mean performance P over the same tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_p: Option<f64>,
    /// Tasks behind `aptitude`, `unreliability` and `mean_p`.
    #[serde(skip_serializing_if = "is_zero")]
    pub n_reliability_tasks: usize,
    /// Handoff rows: the LC anchor's unreliability on the handoff's tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreliability_lc: Option<f64>,
    /// Handoff rows: the HC anchor's unreliability on the handoff's tasks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreliability_hc: Option<f64>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl CellRow {
    /// Whether this is an anchor (`single`) row.
    pub fn is_anchor(&self) -> bool {
        self.anchor.is_some()
    }

    /// Whether this row weighs families equally (`family == "all"`).
    pub fn is_aggregate(&self) -> bool {
        self.family == ALL_FAMILIES
    }
}

/// Restart controls for one (pair, family, switch point), composed from matched
/// runs without new calls. Both controls reach HC-only quality by construction.
///
/// Units are (task, replicate) pairs where both anchors are scored and an
/// escalation episode at this switch point recorded its prefix cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RestartControl {
    /// The pair's name.
    pub pair: String,
    /// A family name or `all` (equal weight per family).
    pub family: String,
    /// Switch label.
    pub k: String,
    /// Units used.
    pub n_units: usize,
    /// HC-only score × 100 on those units: the quality of both controls.
    pub quality: Option<f64>,
    /// LC-only cost per task.
    pub cost_lc: Option<f64>,
    /// HC-only cost per task.
    pub cost_hc: Option<f64>,
    /// LC's attributed cost through turn K.
    pub prefix_cost: Option<f64>,
    /// `abort+HC`: LC through K, then HC from scratch.
    pub abort_hc_cost: Option<f64>,
    /// CSRet of `abort+HC`.
    pub abort_hc_csret: Option<f64>,
    /// `LC-full+HC-full`: a whole LC run, then a whole HC run.
    pub full_restart_cost: Option<f64>,
    /// CSRet of `LC-full+HC-full`.
    pub full_restart_csret: Option<f64>,
}

/// An episode left out of every metric, with why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IncompleteEntry {
    /// The task's id.
    pub task_id: String,
    /// The task's family.
    pub family: Family,
    /// The cell's label.
    pub cell: String,
    /// The replicate index.
    pub replicate: u32,
    /// `incomplete`, `errored`, or `scored` when the score itself is missing.
    pub status: EpisodeStatus,
    /// Why, when known.
    pub reason: Option<String>,
}

impl Report {
    /// The report as a JSON object: `title`, `simulated`, `pairs`, `bootstrap`,
    /// `cells`, `restart_controls`, `incomplete`, `notes`, `spend` (`paid_usd`,
    /// `billed_attempts`, `unusable_attempts`, `unknown_usage_attempts`,
    /// `estimated_attempts` and `estimated_usd` when not 0, `unpriced_attempts`) when
    /// known, and `skipped_tasks` (`task_id`, `reason`).
    pub fn to_json(&self) -> serde_json::Value {
        // Serializing plain structs of strings, numbers and options cannot fail.
        serde_json::to_value(self).unwrap_or_default()
    }

    /// [`Report::to_json`] as pretty-printed text with a trailing newline.
    pub fn to_json_string(&self) -> String {
        let mut s = serde_json::to_string_pretty(&self.to_json()).unwrap_or_default();
        s.push('\n');
        s
    }

    /// The rows of one table: anchors (`direction == None`) or one direction.
    pub fn rows<'a>(
        &'a self,
        pair: &'a str,
        direction: Option<Direction>,
    ) -> impl Iterator<Item = &'a CellRow> + 'a {
        self.cells
            .iter()
            .filter(move |r| r.pair == pair && r.direction == direction)
    }
}

#[cfg(test)]
mod tests {
    use baton_types::{Cost, Spend};

    use super::SpendLine;

    #[test]
    fn issue_32_estimated_attempts_are_marked_in_the_spend_line() {
        // See: issue 32 (attempts with unreadable usage counted $0)
        let line = SpendLine::new(
            &Spend {
                paid: Cost::from_usd(0.5),
                billed_attempts: 10,
                unusable_attempts: 4,
                unknown_usage_attempts: 3,
                estimated_attempts: 2,
                estimated: Cost::from_usd(0.2),
                ..Spend::default()
            },
            Cost::ZERO,
        );
        assert_eq!(
            line.sentence(),
            "Spend: $0.500000 paid over 10 billed attempts (4 unusable). Of it, $0.200000 is estimated: 2 attempts whose usage could not be read, each counted at its call's upper bound. Not in that sum, so it is a lower bound: 1 attempts whose usage could not be read and 0 whose cost could not be computed."
        );
        let json = serde_json::to_value(line).unwrap();
        assert_eq!(json["estimated_attempts"], 2);
        assert_eq!(json["estimated_usd"], 0.2);
    }
}
