//! The study's tables as Markdown, HTML sections and JSON, through the same table type,
//! number formats and escaping as the chat study's exporters.

use super::{StudyReport, StudyRow};
use crate::agent::Section;
use crate::format::{Align, DASH, Grid, L, R, fixed, interval, one_decimal};
use crate::html::{escape, html_table};

const ROW_HEAD: [(&str, Align); 16] = [
    ("pair", L),
    ("direction", L),
    ("interface", L),
    ("p", L),
    ("window", L),
    ("n", R),
    ("fired", R),
    ("unfired", R),
    ("matched", R),
    ("pass rate", R),
    ("95% CI", R),
    ("$ / task", R),
    ("QRec", R),
    ("95% CI", R),
    ("CSRet", R),
    ("95% CI", R),
];

const THRESHOLD_HEAD: [(&str, Align); 5] = [
    ("pair", L),
    ("direction", L),
    ("bucket", L),
    ("p", L),
    ("s", R),
];

const DECOMPOSITION_HEAD: [(&str, Align); 7] = [
    ("pair", L),
    ("direction", L),
    ("interface", L),
    ("$ / suffix step", R),
    ("suffix steps", R),
    ("$/step ÷ compact_pre", R),
    ("steps ÷ compact_pre", R),
];

const INTERVAL_HEAD: [(&str, Align); 8] = [
    ("pair", L),
    ("direction", L),
    ("interface", L),
    ("Δ pass rate (pts)", R),
    ("95% interval", R),
    ("Δ $ / task", R),
    ("95% interval", R),
    ("replicates", R),
];

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| DASH.to_string(), f)
}

/// A signed number with `decimals` decimals.
fn signed(v: f64, decimals: usize) -> String {
    let s = fixed(v, decimals);
    if s.starts_with('-') {
        s
    } else {
        format!("+{s}")
    }
}

impl StudyRow {
    fn cells(&self) -> Vec<String> {
        vec![
            self.pair.clone(),
            self.direction.clone(),
            self.interface.clone(),
            self.p.map_or_else(|| "avg".into(), |p| format!("p{p}")),
            self.window.clone(),
            self.n.to_string(),
            self.n_fired.to_string(),
            self.n_unfired.to_string(),
            self.n_matched.to_string(),
            opt(self.pass_rate, |r| format!("{}%", fixed(r, 1))),
            interval(self.pass_rate_ci),
            opt(self.mean_cost_usd, |c| format!("${}", fixed(c, 4))),
            one_decimal(self.qrec),
            interval(self.qrec_ci),
            one_decimal(self.csret),
            interval(self.csret_ci),
        ]
    }
}

impl StudyReport {
    fn sections(&self) -> Vec<Section> {
        let rows = |v: &[StudyRow]| Grid::new(&ROW_HEAD, v.iter().map(StudyRow::cells).collect());
        vec![
            (
                "Handoff switch calls s_b(p) (nearest rank of the prefix model's termination steps)"
                    .into(),
                Grid::new(
                    &THRESHOLD_HEAD,
                    self.thresholds
                        .iter()
                        .map(|t| {
                            vec![
                                t.pair.clone(),
                                t.direction.clone(),
                                t.bucket.clone(),
                                format!("p{}", t.p),
                                t.s.to_string(),
                            ]
                        })
                        .collect(),
                ),
            ),
            (
                "Table 1: per interface, matched fired subsets, equal weight over switch points"
                    .into(),
                rows(&self.table1),
            ),
            (
                "Early (p5–p15) and late (p25–p50) windows".into(),
                rows(&self.windows),
            ),
            ("Per difficulty bucket".into(), rows(&self.buckets)),
            (
                "Restart controls (composed from matched runs, no new calls)".into(),
                rows(&self.restart_controls),
            ),
            (
                "Step-cost decomposition (post-handoff cost per suffix step, relative to compact_pre)"
                    .into(),
                Grid::new(
                    &DECOMPOSITION_HEAD,
                    self.decomposition
                        .iter()
                        .map(|d| {
                            vec![
                                d.pair.clone(),
                                d.direction.clone(),
                                d.interface.clone(),
                                opt(d.usd_per_suffix_step, |c| format!("${}", fixed(c, 5))),
                                opt(d.suffix_steps, |s| fixed(s, 1)),
                                opt(d.usd_per_step_vs_compact_pre, |r| fixed(r, 2)),
                                opt(d.steps_vs_compact_pre, |r| fixed(r, 2)),
                            ]
                        })
                        .collect(),
                ),
            ),
            (
                "Interface minus compact_pre, paired task-level bootstrap (95%)".into(),
                Grid::new(
                    &INTERVAL_HEAD,
                    self.intervals
                        .iter()
                        .map(|i| {
                            let [r, r_lo, r_hi] = i.pass_rate_diff;
                            let [c, c_lo, c_hi] = i.cost_diff_usd;
                            vec![
                                i.pair.clone(),
                                i.direction.clone(),
                                i.interface.clone(),
                                signed(r, 1),
                                format!("[{}, {}]", signed(r_lo, 1), signed(r_hi, 1)),
                                signed(c, 4),
                                format!("[{}, {}]", signed(c_lo, 4), signed(c_hi, 4)),
                                i.replicates.to_string(),
                            ]
                        })
                        .collect(),
                ),
            ),
            ("Every cell".into(), rows(&self.cells)),
        ]
    }

    fn audit_line(&self) -> String {
        format!(
            "Cost audit: prefix + handoff + suffix reconcile with the total of all {} finished episodes (largest difference ${:.12}).",
            self.audit.tasks, self.audit.max_abs_diff_usd
        )
    }

    /// What a missing value means, under the audit line.
    fn legend(&self) -> String {
        format!(
            "A {DASH} is a value the rules leave out: QRec where the anchors differ by less than {} points on the row's units (`qrec_omitted_reason` in JSON), QRec or CSRet without a denominator, any value without a matched fired unit. Intervals are paired task-level bootstrap percentiles{}.",
            crate::MIN_QUALITY_GAP,
            match self.intervals.first() {
                Some(_) => String::new(),
                None => " (none: the bootstrap was off)".to_string(),
            }
        )
    }

    /// The study as Markdown sections (to follow the agent report).
    pub fn to_markdown(&self) -> String {
        let mut s = format!(
            "# Handoff study\n\n{}\n\n{}\n\n",
            self.audit_line(),
            self.legend()
        );
        for (title, grid) in self.sections() {
            s.push_str(&format!("## {title}\n\n"));
            s.push_str(&grid.markdown());
            s.push('\n');
        }
        s
    }

    /// The study as HTML sections (to go inside the agent report's page).
    pub fn to_html(&self) -> String {
        let mut s = format!(
            "<h1>Handoff study</h1>\n<p>{}</p>\n<p>{}</p>\n",
            escape(&self.audit_line()),
            crate::html::inline(&self.legend())
        );
        for plot in self.plots() {
            s.push_str(&format!(
                "<h2>{}</h2>\n<figure>\n{}</figure>\n",
                escape(&plot.title),
                plot.svg
            ));
        }
        for (title, grid) in self.sections() {
            s.push_str(&format!("<h2>{}</h2>\n", escape(&title)));
            s.push_str(&html_table(&grid));
        }
        s
    }

    /// The study's JSON keys (`thresholds`, `audit`, `cells`, `table1`, `windows`,
    /// `buckets`, `restart_controls`, `decomposition`, `intervals`), to merge into the
    /// agent report's object.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a study always serializes")
    }
}
