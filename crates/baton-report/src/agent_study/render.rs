//! The study's tables as Markdown, HTML sections and JSON, through the same table type,
//! number formats and escaping as the chat study's exporters.

use super::{
    Decomposition, HandoverEpisode, HandoverRelation, Interval, StudyReport, StudyRow,
    StudyThreshold,
};
use crate::agent::Section;
use crate::format::{Column, DASH, Grid, L, R, column, fixed, interval, one_decimal};
use crate::html::{escape, html_table};

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

/// The short names the tables give the study's pairs: a pair of long model names
/// (over [`SHORT_PAIR`] characters) is `LC/HC` in a study of one pair, `P1`, `P2`, …
/// in a study of several, each named in full under the audit line.
#[derive(Debug, Default)]
pub(crate) struct Pairs(Vec<(String, String)>);

/// The longest pair name the tables print whole.
const SHORT_PAIR: usize = 12;

impl Pairs {
    /// How the tables print `pair`.
    fn short(&self, pair: &str) -> String {
        self.0
            .iter()
            .find(|(name, _)| name == pair)
            .map_or_else(|| pair.to_owned(), |(_, alias)| alias.clone())
    }

    /// The sentence that names every shortened pair (Markdown code spans), if any.
    fn legend(&self) -> Option<String> {
        let names: Vec<String> = self
            .0
            .iter()
            .map(|(name, alias)| format!("{alias} is `{name}`"))
            .collect();
        let (last, rest) = names.split_last()?;
        Some(if rest.is_empty() {
            format!("In the tables the pair {last}.")
        } else {
            format!("In the tables the pair {} and {last}.", rest.join(", "))
        })
    }
}

/// The columns of every table of [`StudyRow`]s: each value with its interval beside it.
fn row_columns<'a>(pairs: &'a Pairs) -> Vec<Column<'a, &'a StudyRow>> {
    vec![
        column("pair", L, |r: &&StudyRow| pairs.short(&r.pair)),
        column("direction", L, |r: &&StudyRow| r.direction.clone()),
        column("interface", L, |r: &&StudyRow| r.interface.clone()),
        column("p", L, |r: &&StudyRow| {
            r.p.map_or_else(|| "avg".into(), |p| format!("p{p}"))
        }),
        column("window", L, |r: &&StudyRow| r.window.clone()),
        column("n", R, |r: &&StudyRow| r.n.to_string()),
        column("fired", R, |r: &&StudyRow| r.n_fired.to_string()),
        column("unfired", R, |r: &&StudyRow| r.n_unfired.to_string()),
        column("matched", R, |r: &&StudyRow| r.n_matched.to_string()),
        column("pass rate", R, |r: &&StudyRow| {
            opt(r.pass_rate, |v| format!("{}%", fixed(v, 1)))
        }),
        column("95% CI", R, |r: &&StudyRow| interval(r.pass_rate_ci)).interval(),
        column("$ / task", R, |r: &&StudyRow| {
            opt(r.mean_cost_usd, |c| format!("${}", fixed(c, 4)))
        }),
        column("QRec", R, |r: &&StudyRow| one_decimal(r.qrec)),
        column("95% CI", R, |r: &&StudyRow| interval(r.qrec_ci)).interval(),
        column("CSRet", R, |r: &&StudyRow| one_decimal(r.csret)),
        column("95% CI", R, |r: &&StudyRow| interval(r.csret_ci)).interval(),
    ]
}

fn threshold_columns<'a>(pairs: &'a Pairs) -> Vec<Column<'a, &'a StudyThreshold>> {
    vec![
        column("pair", L, |t: &&StudyThreshold| pairs.short(&t.pair)),
        column("direction", L, |t: &&StudyThreshold| {
            t.direction.as_str().to_string()
        }),
        column("bucket", L, |t: &&StudyThreshold| {
            t.bucket.name().to_string()
        }),
        column("p", L, |t: &&StudyThreshold| format!("p{}", t.p)),
        column("s", R, |t: &&StudyThreshold| t.s.to_string()),
    ]
}

fn decomposition_columns<'a>(pairs: &'a Pairs) -> Vec<Column<'a, &'a Decomposition>> {
    vec![
        column("pair", L, |d: &&Decomposition| pairs.short(&d.pair)),
        column("direction", L, |d: &&Decomposition| d.direction.clone()),
        column("interface", L, |d: &&Decomposition| d.interface.clone()),
        column("$ / suffix step", R, |d: &&Decomposition| {
            opt(d.usd_per_suffix_step, |c| format!("${}", fixed(c, 5)))
        }),
        column("suffix steps", R, |d: &&Decomposition| {
            opt(d.suffix_steps, |s| fixed(s, 1))
        }),
        column("$/step ÷ compact_pre", R, |d: &&Decomposition| {
            opt(d.usd_per_step_vs_compact_pre, |r| fixed(r, 2))
        }),
        column("steps ÷ compact_pre", R, |d: &&Decomposition| {
            opt(d.steps_vs_compact_pre, |r| fixed(r, 2))
        }),
    ]
}

fn interval_columns<'a>(pairs: &'a Pairs) -> Vec<Column<'a, &'a Interval>> {
    let range = |[_, lo, hi]: [f64; 3], decimals: usize| {
        format!("[{}, {}]", signed(lo, decimals), signed(hi, decimals))
    };
    vec![
        column("pair", L, |i: &&Interval| pairs.short(&i.pair)),
        column("direction", L, |i: &&Interval| i.direction.clone()),
        column("interface", L, |i: &&Interval| i.interface.clone()),
        column("Δ pass rate (pts)", R, |i: &&Interval| {
            signed(i.pass_rate_diff[0], 1)
        }),
        column("95% interval", R, move |i: &&Interval| {
            range(i.pass_rate_diff, 1)
        })
        .interval(),
        column("Δ $ / task", R, |i: &&Interval| {
            signed(i.cost_diff_usd[0], 4)
        }),
        column("95% interval", R, move |i: &&Interval| {
            range(i.cost_diff_usd, 4)
        })
        .interval(),
        column("replicates", R, |i: &&Interval| i.replicates.to_string()),
    ]
}

fn handover_episode_columns<'a>(pairs: &'a Pairs) -> Vec<Column<'a, &'a HandoverEpisode>> {
    vec![
        column("pair", L, |e: &&HandoverEpisode| pairs.short(&e.pair)),
        column("direction", L, |e: &&HandoverEpisode| e.direction.clone()),
        column("p", L, |e: &&HandoverEpisode| format!("p{}", e.p)),
        column("task", L, |e: &&HandoverEpisode| e.task_id.clone()),
        column("replicate", R, |e: &&HandoverEpisode| {
            e.replicate.to_string()
        }),
        column("lint score", R, |e: &&HandoverEpisode| e.score.to_string()),
        column("valid", L, |e: &&HandoverEpisode| {
            if e.valid { "yes" } else { "no" }.to_string()
        }),
        column("verdict", L, |e: &&HandoverEpisode| e.verdict.clone()),
        column("claims held", R, |e: &&HandoverEpisode| {
            format!("{}/{}", e.claims_held, e.claims)
        }),
        column("resolved", L, |e: &&HandoverEpisode| match e.resolved {
            Some(true) => "yes".to_string(),
            Some(false) => "no".to_string(),
            None => DASH.to_string(),
        }),
    ]
}

fn handover_relation_columns<'a>() -> Vec<Column<'a, &'a HandoverRelation>> {
    vec![
        column("n", R, |h: &&HandoverRelation| h.n.to_string()),
        column("Spearman's ρ", R, |h: &&HandoverRelation| {
            opt(h.spearman, |r| signed(r, 3))
        }),
        column("95% CI", R, |h: &&HandoverRelation| {
            h.ci.map_or_else(
                || DASH.to_string(),
                |[lo, hi]| format!("[{}, {}]", signed(lo, 3), signed(hi, 3)),
            )
        })
        .interval(),
        column("note", L, |h: &&HandoverRelation| {
            h.note.clone().unwrap_or_default()
        }),
    ]
}

impl StudyReport {
    pub(crate) fn sections(&self) -> Vec<Section> {
        let pairs = self.pairs();
        let rows = |v: &'_ [StudyRow]| Grid::of(&row_columns(&pairs), v);
        vec![
            (
                "Handoff switch calls s_b(p) (nearest rank of the prefix model's termination steps)"
                    .into(),
                Grid::of(&threshold_columns(&pairs), &self.thresholds),
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
                Grid::of(&decomposition_columns(&pairs), &self.decomposition),
            ),
            (
                "Interface minus compact_pre, paired task-level bootstrap (95%)".into(),
                Grid::of(&interval_columns(&pairs), &self.intervals),
            ),
            ("Every cell".into(), rows(&self.cells)),
        ]
        .into_iter()
        .chain(self.handover.iter().flat_map(|h| {
            [
                (
                    format!(
                        "Handover documents: lint score against resolution ({}; given from n = {})",
                        h.method, h.min_n
                    ),
                    Grid::of(&handover_relation_columns(), std::slice::from_ref(h)),
                ),
                (
                    "Handover documents, per episode (linted at the switch with claims checked at its commit)"
                        .into(),
                    Grid::of(&handover_episode_columns(&pairs), &h.episodes),
                ),
            ]
        }))
        .collect()
    }

    /// The pairs the tables shorten ([`Pairs`]).
    pub(crate) fn pairs(&self) -> Pairs {
        let mut names: Vec<&str> = Vec::new();
        let all = (self.thresholds.iter().map(|t| t.pair.as_str()))
            .chain(self.cells.iter().map(|r| r.pair.as_str()))
            .chain(self.table1.iter().map(|r| r.pair.as_str()))
            .chain(self.decomposition.iter().map(|d| d.pair.as_str()))
            .chain(self.intervals.iter().map(|i| i.pair.as_str()));
        for name in all {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        if names.iter().all(|n| n.chars().count() <= SHORT_PAIR) {
            return Pairs::default();
        }
        Pairs(match names.as_slice() {
            [one] => vec![((*one).to_owned(), "LC/HC".to_owned())],
            _ => names
                .iter()
                .enumerate()
                .map(|(i, n)| ((*n).to_owned(), format!("P{}", i + 1)))
                .collect(),
        })
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
        ) + &self
            .pairs()
            .legend()
            .map(|l| format!(" {l}"))
            .unwrap_or_default()
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

    /// The study's tables as LaTeX `longtable`s (to follow the agent report's), each
    /// value with its interval in its cell, the audit and what a dash means in each
    /// table's last foot.
    pub fn to_latex(&self) -> String {
        let notes = vec![
            crate::latex::inline(&self.audit_line()),
            crate::latex::inline(&self.legend()),
        ];
        let mut s = String::new();
        for (title, grid) in self.sections() {
            s.push_str(&crate::latex::longtable(
                &format!("Handoff study: {title}"),
                &crate::latex::Tex::from_text(&grid),
                &notes,
            ));
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
