//! SVG plots per pair and direction: the score by switch point, and QRec against
//! CSRet (the trade-off view).
//!
//! Three layers, each on the one below: this module draws the two plots from report
//! rows, using [`chart`] (layout, palette, legend, axes, markers, label placement),
//! which writes through [`svg`] (a minimal escaping SVG writer, also used by the HTML
//! page to escape text).
//!
//! Hand-written SVG: no scripts, no stylesheet, no ids, so a plot can be written to
//! its own file or placed inline in the HTML report any number of times. Colours follow the Okabe–Ito palette, and
//! every interface also gets its own marker shape so the plots survive grey-scale
//! printing.

mod chart;
mod study;
pub(crate) mod svg;

use std::collections::HashSet;

use baton_types::Direction;

use self::chart::{
    BOTTOM, GRID, HC_DASH, LC_DASH, LEFT, LabelPlacer, LegendEntry, MIX_DASH, POINT_LABEL,
    REFERENCE, RIGHT, Rect, Scale, Styles, TOP, anchor_mark, axes, empty_note, error_bar, frame,
    marker, x_tick, y_tick,
};
use self::svg::{num, ticks};
use crate::format::{dollars, interval, one_decimal};
use crate::input::PairSpec;
use crate::markdown::direction_title;
use crate::report::{AVERAGE_K, AnchorRole, CellRow, Report};

/// One plot as a standalone SVG document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plot {
    /// A file-safe name (`[a-z0-9-]`, unique within a report), e.g.
    /// `score-by-k-escalation-mini-vs-4o`; add `.svg` to write it out.
    pub name: String,
    /// What the plot shows, as its heading says.
    pub title: String,
    /// The SVG document (UTF-8, no XML declaration, so it also works inline in HTML).
    pub svg: String,
}

impl Report {
    /// Every plot, per pair and direction (escalation, then downshift):
    /// `score-by-k-{direction}-{pair}` and `qrec-vs-csret-{direction}-{pair}`,
    /// where `{pair}` is the pair's name made file-safe (and made unique when two
    /// names collapse to the same text). A direction without handoff cells still
    /// gets both plots, saying so.
    pub fn plots(&self) -> Vec<Plot> {
        let slugs = pair_slugs(&self.pairs);
        let mut out = Vec::new();
        for (pair, slug) in self.pairs.iter().zip(&slugs) {
            for direction in DIRECTIONS {
                out.push(self.score_plot(pair, slug, direction));
                out.push(self.tradeoff_plot(pair, slug, direction));
            }
        }
        out
    }

    /// Score by switch point for the all-families rows: one line per interface,
    /// 95% intervals as error bars, the pair's anchors as dashed lines.
    pub(crate) fn score_plot(&self, pair: &PairSpec, slug: &str, direction: Direction) -> Plot {
        let title = format!(
            "Score by switch point: pair {}, {}",
            pair.name,
            direction.as_str()
        );
        let rows: Vec<&CellRow> = self
            .rows(&pair.name, Some(direction))
            .filter(|r| r.is_aggregate() && r.k.as_deref() != Some(AVERAGE_K))
            .collect();
        let styles = Styles::new(rows.iter().map(|r| r.interface.as_str()));
        let mut switches: Vec<&str> = Vec::new();
        for r in &rows {
            if let Some(k) = r.k.as_deref()
                && !switches.contains(&k)
            {
                switches.push(k);
            }
        }
        switches.sort_by_key(|k| switch_rank(k));
        // The anchors on the plotted rows' matched units when every row agrees on
        // them (the lines are then exactly what QRec measures against); otherwise
        // the anchors on all their scored episodes, as in the anchors table.
        let matched = |role: AnchorRole| -> Option<f64> {
            let mut values = rows
                .iter()
                .filter(|r| r.score.is_some())
                .map(|r| match role {
                    AnchorRole::Lc => r.score_lc,
                    AnchorRole::Hc => r.score_hc,
                });
            let first = values.next()??;
            values
                .all(|v| v.is_some_and(|v| (v - first).abs() < 1e-9))
                .then_some(first)
        };
        let overall = |role: AnchorRole| {
            self.rows(&pair.name, None)
                .find(|r| r.is_aggregate() && r.anchor == Some(role))
                .and_then(|r| r.score)
        };
        let (basis, lc, hc) = match matched(AnchorRole::Lc).zip(matched(AnchorRole::Hc)) {
            Some((lc, hc)) => ("matched units", Some(lc), Some(hc)),
            None => (
                "all scored episodes",
                overall(AnchorRole::Lc),
                overall(AnchorRole::Hc),
            ),
        };
        let anchors = [(AnchorRole::Lc, lc, LC_DASH), (AnchorRole::Hc, hc, HC_DASH)];

        let mut legend: Vec<LegendEntry> = styles
            .order
            .iter()
            .map(|name| LegendEntry::Series {
                style: styles.get(name),
                label: name.clone(),
                line: true,
            })
            .collect();
        for (role, score, dash) in anchors {
            if let Some(s) = score {
                legend.push(LegendEntry::Dashed {
                    dash,
                    label: format!(
                        "{} anchor, {basis} ({})",
                        role.label(),
                        one_decimal(Some(s))
                    ),
                });
            }
        }
        if rows.iter().any(|r| r.score_ci.is_some()) {
            legend.push(LegendEntry::ErrorBar {
                label: "95% CI".to_owned(),
            });
        }

        let subtitle = [
            endpoints_line(pair, direction),
            "all families, each weighing the same; K avg left out".to_owned(),
        ];
        let mut svg = frame(&title, &subtitle, &legend);
        let y = Scale::new(0.0, 100.0, BOTTOM, TOP);
        for t in ticks(0.0, 100.0, 5) {
            y_tick(&mut svg, y.at(t), &num(t));
        }
        let band = (RIGHT - LEFT) / switches.len().max(1) as f64;
        let x_at = |i: usize| LEFT + (i as f64 + 0.5) * band;
        for (i, k) in switches.iter().enumerate() {
            x_tick(&mut svg, x_at(i), k);
        }
        axes(
            &mut svg,
            "switch point (K)",
            "score (mean × 100, all families)",
        );

        // Anchor lines, with their labels in the right margin pushed apart when close.
        let mut label_ys: Vec<(AnchorRole, f64)> = anchors
            .iter()
            .filter_map(|&(role, s, _)| s.map(|s| (role, y.at(s))))
            .collect();
        if let [(_, a), (_, b)] = label_ys.as_mut_slice()
            && (*a - *b).abs() < 12.0
        {
            let mid = (*a + *b) / 2.0;
            let (upper, lower) = if *a <= *b { (a, b) } else { (b, a) };
            *upper = mid - 6.0;
            *lower = mid + 6.0;
        }
        for &(role, s, dash) in &anchors {
            let Some(s) = s else { continue };
            svg.leaf(
                "line",
                &[
                    ("x1", &LEFT),
                    ("x2", &RIGHT),
                    ("y1", &y.at(s)),
                    ("y2", &y.at(s)),
                    ("stroke", &REFERENCE),
                    ("stroke-width", &1.5),
                    ("stroke-dasharray", &dash),
                ],
            );
            let label_y = label_ys
                .iter()
                .find(|(r, _)| *r == role)
                .map_or(y.at(s), |&(_, ly)| ly);
            svg.element(
                "text",
                &[
                    ("x", &(RIGHT + 6.0)),
                    ("y", &label_y),
                    ("dy", &"0.32em"),
                    ("font-size", &11.0),
                    ("fill", &REFERENCE),
                ],
                role.label(),
            );
        }

        let n_series = styles.order.len();
        let dodge = (band / (n_series as f64 + 2.0)).min(8.0);
        for (j, interface) in styles.order.iter().enumerate() {
            let style = styles.get(interface);
            let offset = (j as f64 - (n_series as f64 - 1.0) / 2.0) * dodge;
            let points: Vec<Option<(f64, &CellRow)>> = switches
                .iter()
                .map(|k| {
                    rows.iter()
                        .find(|r| &r.interface == interface && r.k.as_deref() == Some(*k))
                        .and_then(|r| r.score.map(|s| (s, *r)))
                })
                .collect();
            // Lines join neighbouring switch points that both have a score.
            for (i, pair_of) in points.windows(2).enumerate() {
                if let [Some((a, _)), Some((b, _))] = pair_of {
                    svg.leaf(
                        "line",
                        &[
                            ("x1", &(x_at(i) + offset)),
                            ("y1", &y.at(*a)),
                            ("x2", &(x_at(i + 1) + offset)),
                            ("y2", &y.at(*b)),
                            ("stroke", &style.colour),
                            ("stroke-width", &2.0),
                        ],
                    );
                }
            }
            for (i, point) in points.iter().enumerate() {
                let Some((s, row)) = point else { continue };
                let cx = x_at(i) + offset;
                let k = row.k.as_deref().unwrap_or_default();
                let ci = match row.score_ci {
                    Some(_) => format!(", 95% CI {}", interval(row.score_ci)),
                    None => String::new(),
                };
                let tip = format!(
                    "{interface}, {k}: score {}{ci}; matched units: {}",
                    one_decimal(Some(*s)),
                    row.n_matched
                );
                svg.open("g", &[]);
                svg.element("title", &[], &tip);
                if let Some([lo, hi]) = row.score_ci {
                    error_bar(&mut svg, cx, y.at(lo), y.at(hi), style.colour);
                }
                marker(&mut svg, style, cx, y.at(*s), true);
                svg.close();
            }
        }
        if switches.is_empty() {
            empty_note(&mut svg, "No handoff cells in this direction.");
        }
        Plot {
            name: format!("score-by-k-{}-{slug}", direction.as_str()),
            title,
            svg: svg.finish(),
        }
    }

    /// QRec against CSRet: one point per row (family or all, K, interface) that
    /// has both, with the [0, 100] box, the anchors and the LC/HC mixing line.
    pub(crate) fn tradeoff_plot(&self, pair: &PairSpec, slug: &str, direction: Direction) -> Plot {
        let title = format!("QRec vs CSRet: pair {}, {}", pair.name, direction.as_str());
        let rows: Vec<(&CellRow, f64, f64)> = self
            .rows(&pair.name, Some(direction))
            .filter_map(|r| Some((r, r.csret?, r.qrec?)))
            .filter(|(_, x, y)| x.is_finite() && y.is_finite())
            .collect();
        let styles = Styles::new(rows.iter().map(|(r, _, _)| r.interface.as_str()));
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
            label: "LC and HC anchors".to_owned(),
        });
        legend.push(LegendEntry::Dashed {
            dash: MIX_DASH,
            label: "mixing LC and HC (QRec + CSRet = 100)".to_owned(),
        });
        let subtitle = [
            format!(
                "{}; one point per family × K × interface",
                endpoints_line(pair, direction)
            ),
            "filled: all families (equal weight); hollow: one family; labels where room \
             allows; shaded: [0, 100]"
                .to_owned(),
        ];
        let mut svg = frame(&title, &subtitle, &legend);

        let range = |values: &mut dyn Iterator<Item = f64>| {
            let (lo, hi) = values.fold((0.0f64, 100.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
            let pad = 0.06 * (hi - lo);
            (lo - pad, hi + pad)
        };
        let (x_lo, x_hi) = range(&mut rows.iter().map(|&(_, x, _)| x));
        let (y_lo, y_hi) = range(&mut rows.iter().map(|&(_, _, y)| y));
        let x = Scale::new(x_lo, x_hi, LEFT, RIGHT);
        let y = Scale::new(y_lo, y_hi, BOTTOM, TOP);
        let inside = |t: &f64, lo: f64, hi: f64| *t >= lo - 1e-9 && *t <= hi + 1e-9;
        for t in ticks(y_lo, y_hi, 6)
            .iter()
            .filter(|t| inside(t, y_lo, y_hi))
        {
            y_tick(&mut svg, y.at(*t), &num(*t));
        }
        for t in ticks(x_lo, x_hi, 6)
            .iter()
            .filter(|t| inside(t, x_lo, x_hi))
        {
            x_tick(&mut svg, x.at(*t), &num(*t));
            svg.leaf(
                "line",
                &[
                    ("x1", &x.at(*t)),
                    ("x2", &x.at(*t)),
                    ("y1", &TOP),
                    ("y2", &BOTTOM),
                    ("stroke", &GRID),
                ],
            );
        }
        svg.leaf(
            "rect",
            &[
                ("x", &x.at(0.0)),
                ("y", &y.at(100.0)),
                ("width", &(x.at(100.0) - x.at(0.0))),
                ("height", &(y.at(0.0) - y.at(100.0))),
                ("fill", &"#000000"),
                ("fill-opacity", &0.05),
                ("stroke", &"#888888"),
            ],
        );
        axes(
            &mut svg,
            "CSRet (% of the HC → LC cost saving kept)",
            "QRec (% of the LC → HC quality gap recovered)",
        );
        svg.leaf(
            "line",
            &[
                ("x1", &x.at(0.0)),
                ("y1", &y.at(100.0)),
                ("x2", &x.at(100.0)),
                ("y2", &y.at(0.0)),
                ("stroke", &REFERENCE),
                ("stroke-width", &1.2),
                ("stroke-dasharray", &MIX_DASH),
            ],
        );

        // Labels: the anchors always, then the all-families points, then a single
        // family's, each only where it covers no other label or marker.
        let mut placer = LabelPlacer::default();
        let points: Vec<(f64, f64)> = rows
            .iter()
            .map(|&(_, cx, cy)| (x.at(cx), y.at(cy)))
            .collect();
        let anchors = [
            ("HC", x.at(0.0), y.at(100.0)),
            ("LC", x.at(100.0), y.at(0.0)),
        ];
        for (px, py) in points
            .iter()
            .copied()
            .chain(anchors.iter().map(|&(_, px, py)| (px, py)))
        {
            placer.taken.push(Rect::around(px, py, 5.0));
        }
        let anchor_labels: Vec<_> = anchors
            .iter()
            .map(|&(label, px, py)| placer.place(px, py, label, 12.0, true))
            .collect();
        let labels: Vec<String> = rows
            .iter()
            .map(|(r, _, _)| format!("{}·{}", r.family, r.k.as_deref().unwrap_or_default()))
            .collect();
        let mut placed = vec![None; rows.len()];
        for aggregates in [true, false] {
            for (i, &(row, _, _)) in rows.iter().enumerate() {
                if row.is_aggregate() == aggregates {
                    let (px, py) = points[i];
                    placed[i] = placer.place(px, py, &labels[i], POINT_LABEL, false);
                }
            }
        }

        for (&(label, px, py), at) in anchors.iter().zip(anchor_labels) {
            anchor_mark(&mut svg, px, py);
            if let Some((lx, ly, anchor)) = at {
                svg.element(
                    "text",
                    &[
                        ("x", &lx),
                        ("y", &ly),
                        ("text-anchor", &anchor),
                        ("font-size", &12.0),
                        ("font-weight", &"bold"),
                        ("fill", &"#000000"),
                    ],
                    label,
                );
            }
        }
        for (i, &(row, cx, cy)) in rows.iter().enumerate() {
            let style = styles.get(&row.interface);
            let (px, py) = points[i];
            let tip = format!(
                "{}, {}, {}: QRec {}{}, CSRet {}; score {}, {}/task; matched units: {}",
                row.family,
                row.k.as_deref().unwrap_or_default(),
                row.interface,
                one_decimal(Some(cy)),
                if row.qrec_unstable {
                    " (unstable: the anchors differ by less than 5 points)"
                } else {
                    ""
                },
                one_decimal(Some(cx)),
                one_decimal(row.score),
                dollars(row.cost_per_task),
                row.n_matched
            );
            svg.open("g", &[]);
            svg.element("title", &[], &tip);
            marker(&mut svg, style, px, py, row.is_aggregate());
            if let Some((lx, ly, anchor)) = placed[i] {
                svg.element(
                    "text",
                    &[
                        ("x", &lx),
                        ("y", &ly),
                        ("text-anchor", &anchor),
                        ("font-size", &POINT_LABEL),
                        ("fill", &"#333333"),
                    ],
                    &labels[i],
                );
            }
            svg.close();
        }
        if rows.is_empty() {
            empty_note(&mut svg, "No row with both QRec and CSRet.");
        }
        Plot {
            name: format!("qrec-vs-csret-{}-{slug}", direction.as_str()),
            title,
            svg: svg.finish(),
        }
    }
}

/// The directions, in table order.
pub(crate) const DIRECTIONS: [Direction; 2] = [Direction::Escalation, Direction::Downshift];

/// Orders switch labels: early, middle, late, then `kN` by N, then anything else.
fn switch_rank(k: &str) -> (u8, u64) {
    match k {
        "early" => (0, 0),
        "middle" => (1, 0),
        "late" => (2, 0),
        _ => match k.strip_prefix('k').and_then(|n| n.parse().ok()) {
            Some(n) => (3, n),
            None => (4, 0),
        },
    }
}

fn endpoints_line(pair: &PairSpec, direction: Direction) -> String {
    let (from, to) = match direction {
        Direction::Escalation => (&pair.lc, &pair.hc),
        Direction::Downshift => (&pair.hc, &pair.lc),
    };
    format!("{}: {from} → {to}", direction_title(direction))
}

/// File-safe, unique names for the pairs, in order.
pub(crate) fn pair_slugs(pairs: &[PairSpec]) -> Vec<String> {
    let mut used = HashSet::new();
    pairs
        .iter()
        .map(|p| {
            let mut base = String::new();
            for c in p.name.chars() {
                if c.is_ascii_alphanumeric() {
                    base.push(c.to_ascii_lowercase());
                } else if !base.is_empty() && !base.ends_with('-') {
                    base.push('-');
                }
            }
            let base = match base.trim_end_matches('-') {
                "" => "pair".to_owned(),
                b => b.to_owned(),
            };
            let mut slug = base.clone();
            let mut n = 2;
            while !used.insert(slug.clone()) {
                slug = format!("{base}-{n}");
                n += 1;
            }
            slug
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str) -> PairSpec {
        PairSpec {
            name: name.to_owned(),
            lc: "a".to_owned(),
            hc: "b".to_owned(),
        }
    }

    #[test]
    fn slugs_are_file_safe_and_unique() {
        let pairs = [
            pair("Mini vs 4o"),
            pair("mini/vs/4o"),
            pair("<b>&\"x'"),
            pair("—"),
        ];
        assert_eq!(
            pair_slugs(&pairs),
            ["mini-vs-4o", "mini-vs-4o-2", "b-x", "pair"]
        );
    }

    /// The boxes of the point and anchor labels in a QRec–CSRet plot: from each
    /// `<text>` with a point label's size (or the anchors' bold 12), its position,
    /// anchor and text.
    fn label_boxes(svg: &str) -> Vec<(String, [f64; 4])> {
        let attr = |tag: &str, name: &str| -> Option<String> {
            let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            Some(tag[at..].split('"').next()?.to_owned())
        };
        svg.split("<text ")
            .skip(1)
            .filter_map(|rest| {
                let (tag, after) = rest.split_once('>')?;
                let tag = &format!(" {tag}");
                let text = after.split("</text>").next()?;
                let size: f64 = attr(tag, "font-size")?.parse().ok()?;
                let point = size == POINT_LABEL && text.contains('·');
                let anchor = size == 12.0 && (text == "LC" || text == "HC");
                if !(point || anchor) {
                    return None;
                }
                let x: f64 = attr(tag, "x")?.parse().ok()?;
                let y: f64 = attr(tag, "y")?.parse().ok()?;
                let w = chart::text_width(text, size);
                let left = match attr(tag, "text-anchor").as_deref() {
                    Some("end") => x - w,
                    Some("middle") => x - w / 2.0,
                    _ => x,
                };
                Some((
                    text.to_owned(),
                    [left, y - size * 0.8, left + w, y + size * 0.2],
                ))
            })
            .collect()
    }

    #[test]
    fn issue_35_scatter_labels_never_overlap_on_a_hundred_points() {
        // See: issue 35 (the QRec–CSRet scatter had about 100 overlapping labels)
        use crate::input::{EpisodeRecord, ReportInput};
        use baton_types::{Cell, Cost, EpisodeStatus, Family, Interface, SwitchPoint};
        let interfaces = [
            Interface::Raw,
            Interface::Disclosure,
            Interface::CompactPre,
            Interface::CompactSuf,
            Interface::TrajDrop,
        ];
        let mut episodes = Vec::new();
        let mut ep = |task: &str, family: Family, cell: Cell, score: f64, usd: f64| {
            episodes.push(EpisodeRecord {
                task_id: task.to_owned(),
                family,
                cell,
                replicate: 0,
                status: EpisodeStatus::Scored,
                score: Some(score),
                cost_attributed: Cost::from_usd(usd),
                cost_paid: Cost::from_usd(usd),
                n_turns: 4,
                k: None,
                reason: None,
                prefix_cost: None,
                calls: Default::default(),
                no_answer: false,
                rule: None,
            });
        };
        for family in Family::ALL {
            for t in 0..8u32 {
                let task = format!("{family}/{t}");
                ep(
                    &task,
                    family,
                    Cell::single("a"),
                    f64::from(t.is_multiple_of(4)),
                    0.001,
                );
                ep(
                    &task,
                    family,
                    Cell::single("b"),
                    f64::from(t % 4 != 3),
                    0.02,
                );
                for (i, switch) in [SwitchPoint::Early, SwitchPoint::Middle, SwitchPoint::Late]
                    .into_iter()
                    .enumerate()
                {
                    for (j, &interface) in interfaces.iter().enumerate() {
                        let n = t + (i * 5 + j) as u32;
                        ep(
                            &task,
                            family,
                            Cell::handoff("a", "b", switch, interface),
                            f64::from(!n.is_multiple_of(3)),
                            0.004 + 0.001 * f64::from(n % 7),
                        );
                    }
                }
            }
        }
        let report = crate::build(&ReportInput {
            title: "t".into(),
            simulated: true,
            pairs: vec![pair("p")],
            episodes,
            bootstrap: None,
            spend: None,
            skipped_tasks: Vec::new(),
            notes: Vec::new(),
        });
        let points = report
            .rows("p", Some(Direction::Escalation))
            .filter(|r| r.qrec.is_some() && r.csret.is_some())
            .count();
        // 5 families x (3 switch points + avg) x 5 interfaces, and the 20 aggregates.
        assert_eq!(points, 120);
        let plot = report.tradeoff_plot(&pair("p"), "p", Direction::Escalation);
        let boxes = label_boxes(&plot.svg);
        assert!(boxes.iter().any(|(t, _)| t == "HC") && boxes.iter().any(|(t, _)| t == "LC"));
        for (i, (a, p)) in boxes.iter().enumerate() {
            for (b, q) in &boxes[i + 1..] {
                let apart = p[2] <= q[0] || q[2] <= p[0] || p[3] <= q[1] || q[3] <= p[1];
                assert!(apart, "{a:?} at {p:?} overlaps {b:?} at {q:?}");
            }
        }
        // The anchors and at least some points are named; the rest say who they are on
        // hover.
        assert!(boxes.len() >= 8, "only {} labels placed", boxes.len());
    }

    #[test]
    fn switch_points_sort_early_middle_late_then_by_k() {
        let mut ks = ["k10", "late", "k3", "early", "middle", "other"];
        ks.sort_by_key(|k| switch_rank(k));
        assert_eq!(ks, ["early", "middle", "late", "k3", "k10", "other"]);
    }
}
