//! The agent handoff study's plots, per pair and direction: the pass rate by switch
//! percentile (one line per interface), and the cost–quality plane (Table 1's mean cost
//! and pass rate per interface, with the two anchors on the same units).

use super::Plot;
use super::chart::{
    BOTTOM, LEFT, LegendEntry, RIGHT, Scale, Styles, TOP, anchor_mark, axes, empty_note, frame,
    marker, x_tick, y_tick,
};
use super::svg::{num, ticks};
use crate::agent_study::{StudyReport, StudyRow};

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

impl StudyReport {
    /// Two plots per pair and direction: `study-score-by-p-{direction}-{pair}` and
    /// `study-cost-quality-{direction}-{pair}`.
    pub fn plots(&self) -> Vec<Plot> {
        let mut keys: Vec<(String, String)> = self
            .table1
            .iter()
            .map(|r| (r.pair.clone(), r.direction.clone()))
            .collect();
        keys.dedup();
        let mut out = Vec::new();
        for (pair, dir) in keys {
            out.push(self.score_by_p(&pair, &dir));
            out.push(self.cost_quality(&pair, &dir));
        }
        out
    }

    fn score_by_p(&self, pair: &str, dir: &str) -> Plot {
        let title = format!("Pass rate by switch percentile: {pair}, {dir}");
        let rows: Vec<&StudyRow> = self
            .cells
            .iter()
            .filter(|r| r.pair == pair && r.direction == dir)
            .collect();
        let styles = Styles::new(rows.iter().map(|r| r.interface.as_str()));
        let mut ps: Vec<u32> = rows.iter().filter_map(|r| r.p).collect();
        ps.sort_unstable();
        ps.dedup();
        let legend: Vec<LegendEntry> = styles
            .order
            .iter()
            .map(|name| LegendEntry::Series {
                style: styles.get(name),
                label: name.clone(),
                line: true,
            })
            .collect();
        let subtitle = ["matched fired subsets at each switch percentile".to_string()];
        let mut svg = frame(&title, &subtitle, &legend);
        let y = Scale::new(0.0, 100.0, BOTTOM, TOP);
        for t in ticks(0.0, 100.0, 5) {
            y_tick(&mut svg, y.at(t), &num(t));
        }
        let band = (RIGHT - LEFT) / ps.len().max(1) as f64;
        let x_at = |i: usize| LEFT + (i as f64 + 0.5) * band;
        for (i, p) in ps.iter().enumerate() {
            x_tick(&mut svg, x_at(i), &format!("p{p}"));
        }
        axes(&mut svg, "switch percentile", "pass rate (%)");
        for name in &styles.order {
            let style = styles.get(name);
            let points: Vec<Option<f64>> = ps
                .iter()
                .map(|p| {
                    rows.iter()
                        .find(|r| &r.interface == name && r.p == Some(*p))
                        .and_then(|r| r.pass_rate)
                })
                .collect();
            for (i, w) in points.windows(2).enumerate() {
                if let [Some(a), Some(b)] = w {
                    svg.leaf(
                        "line",
                        &[
                            ("x1", &x_at(i)),
                            ("y1", &y.at(*a)),
                            ("x2", &x_at(i + 1)),
                            ("y2", &y.at(*b)),
                            ("stroke", &style.colour),
                            ("stroke-width", &2.0),
                        ],
                    );
                }
            }
            for (i, v) in points.iter().enumerate() {
                if let Some(v) = v {
                    marker(&mut svg, style, x_at(i), y.at(*v), true);
                }
            }
        }
        if ps.is_empty() {
            empty_note(&mut svg, "No handoff cells in this direction.");
        }
        Plot {
            name: format!("study-score-by-p-{dir}-{}", slug(pair)),
            title,
            svg: svg.finish(),
        }
    }

    fn cost_quality(&self, pair: &str, dir: &str) -> Plot {
        let title = format!("Cost and quality: {pair}, {dir}");
        let rows: Vec<&StudyRow> = self
            .table1
            .iter()
            .filter(|r| r.pair == pair && r.direction == dir)
            .filter(|r| r.pass_rate.is_some() && r.mean_cost_usd.is_some())
            .collect();
        let styles = Styles::new(rows.iter().map(|r| r.interface.as_str()));
        let mut legend: Vec<LegendEntry> = styles
            .order
            .iter()
            .map(|name| LegendEntry::Series {
                style: styles.get(name),
                label: name.clone(),
                line: false,
            })
            .collect();
        legend.push(LegendEntry::Anchor {
            label: "LC-only and HC-only on the same units (mean over interfaces)".into(),
        });
        let subtitle = ["Table 1: equal weight over switch points".to_string()];
        let mut svg = frame(&title, &subtitle, &legend);
        let mean = |f: &dyn Fn(&StudyRow) -> Option<f64>| {
            let v: Vec<f64> = rows.iter().filter_map(|r| f(r)).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let anchors = [
            mean(&|r| r.lc_cost_usd).zip(mean(&|r| r.lc_pass_rate)),
            mean(&|r| r.hc_cost_usd).zip(mean(&|r| r.hc_pass_rate)),
        ];
        let costs: Vec<f64> = rows
            .iter()
            .filter_map(|r| r.mean_cost_usd)
            .chain(anchors.iter().flatten().map(|a| a.0))
            .collect();
        let hi = costs.iter().copied().fold(0.0, f64::max) * 1.1;
        let x = Scale::new(0.0, hi.max(1e-9), LEFT, RIGHT);
        let y = Scale::new(0.0, 100.0, BOTTOM, TOP);
        for t in ticks(0.0, 100.0, 5) {
            y_tick(&mut svg, y.at(t), &num(t));
        }
        for t in ticks(0.0, hi.max(1e-9), 5) {
            x_tick(&mut svg, x.at(t), &format!("${t:.3}"));
        }
        axes(&mut svg, "mean cost per task (USD)", "pass rate (%)");
        for (c, r) in anchors.iter().flatten() {
            anchor_mark(&mut svg, x.at(*c), y.at(*r));
        }
        for r in &rows {
            let (Some(c), Some(q)) = (r.mean_cost_usd, r.pass_rate) else {
                continue;
            };
            svg.open("g", &[]);
            svg.element(
                "title",
                &[],
                &format!("{}: pass rate {q:.1}%, ${c:.4} per task", r.interface),
            );
            marker(&mut svg, styles.get(&r.interface), x.at(c), y.at(q), true);
            svg.close();
        }
        if rows.is_empty() {
            empty_note(&mut svg, "No matched handoff units in this direction.");
        }
        Plot {
            name: format!("study-cost-quality-{dir}-{}", slug(pair)),
            title,
            svg: svg.finish(),
        }
    }
}
