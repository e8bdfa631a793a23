//! Chart parts shared by the plots (the middle layer): the layout, the palette, the
//! legend, axes, markers and point-label placement, written through [`super::svg`].
//! The plots themselves are in [`super`].

use super::svg::{AttrValue, Svg, num};

const WIDTH: f64 = 720.0;
/// The plot area.
pub(crate) const LEFT: f64 = 68.0;
pub(crate) const RIGHT: f64 = 646.0;
pub(crate) const TOP: f64 = 76.0;
pub(crate) const BOTTOM: f64 = 396.0;
/// Where the legend starts.
const LEGEND_TOP: f64 = BOTTOM + 58.0;
const LEGEND_ROW: f64 = 20.0;

pub(crate) const GRID: &str = "#e4e4e4";
const AXIS: &str = "#333333";
pub(crate) const REFERENCE: &str = "#555555";
pub(crate) const LC_DASH: &str = "8 4";
pub(crate) const HC_DASH: &str = "2 3";
pub(crate) const MIX_DASH: &str = "5 4";
pub(crate) const POINT_LABEL: f64 = 9.5;

/// Okabe–Ito colours without yellow (too pale on white), in the order interfaces
/// take them: raw, disclosure, compact_pre, compact_suf, traj_drop, then others.
const COLOURS: [&str; 7] = [
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
];
const KNOWN_INTERFACES: [&str; 5] = [
    "raw",
    "disclosure",
    "compact_pre",
    "compact_suf",
    "traj_drop",
];
const SHAPES: usize = 5;

/// How one interface is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Style {
    pub(crate) colour: &'static str,
    pub(crate) shape: usize,
}

/// Styles of the interfaces in one plot, in order of appearance. A known interface
/// keeps its colour and shape in every plot.
#[derive(Debug, Default)]
pub(crate) struct Styles {
    pub(crate) order: Vec<String>,
    styles: Vec<Style>,
}

impl Styles {
    pub(crate) fn new<'a>(interfaces: impl Iterator<Item = &'a str>) -> Styles {
        let mut s = Styles::default();
        let mut unknown = 0;
        for name in interfaces {
            if s.order.iter().any(|o| o == name) {
                continue;
            }
            let index = KNOWN_INTERFACES
                .iter()
                .position(|k| *k == name)
                .unwrap_or_else(|| {
                    unknown += 1;
                    KNOWN_INTERFACES.len() + unknown - 1
                });
            s.order.push(name.to_owned());
            s.styles.push(Style {
                colour: COLOURS[index % COLOURS.len()],
                shape: index % SHAPES,
            });
        }
        s
    }

    pub(crate) fn get(&self, name: &str) -> Style {
        self.order.iter().position(|o| o == name).map_or(
            Style {
                colour: COLOURS[0],
                shape: 0,
            },
            |i| self.styles[i],
        )
    }
}

/// A linear map from data values to pixels.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scale {
    lo: f64,
    hi: f64,
    from: f64,
    to: f64,
}

impl Scale {
    pub(crate) fn new(lo: f64, hi: f64, from: f64, to: f64) -> Scale {
        Scale { lo, hi, from, to }
    }

    pub(crate) fn at(&self, v: f64) -> f64 {
        let span = self.hi - self.lo;
        if span.abs() < 1e-12 {
            return (self.from + self.to) / 2.0;
        }
        self.from + (v - self.lo) / span * (self.to - self.from)
    }
}

/// A legend item.
#[derive(Debug, Clone)]
pub(crate) enum LegendEntry {
    Series {
        style: Style,
        label: String,
        line: bool,
    },
    Dashed {
        dash: &'static str,
        label: String,
    },
    ErrorBar {
        label: String,
    },
    Anchor {
        label: String,
    },
}

impl LegendEntry {
    pub(crate) fn label(&self) -> &str {
        match self {
            LegendEntry::Series { label, .. }
            | LegendEntry::Dashed { label, .. }
            | LegendEntry::ErrorBar { label }
            | LegendEntry::Anchor { label } => label,
        }
    }
}

/// An estimate of a text's width in `sans-serif` (generous, so nothing overlaps).
pub(crate) fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.6
}

/// Lays out the legend left to right, wrapping; returns each entry's position and
/// the height the document needs.
pub(crate) fn legend_layout(entries: &[LegendEntry]) -> (Vec<(f64, f64)>, f64) {
    let mut at = Vec::new();
    let (mut x, mut y) = (LEFT, LEGEND_TOP);
    for e in entries {
        let w = 30.0 + text_width(e.label(), 12.0) + 18.0;
        if x > LEFT && x + w > WIDTH - 8.0 {
            x = LEFT;
            y += LEGEND_ROW;
        }
        at.push((x, y));
        x += w;
    }
    (at, y + 16.0)
}

/// The document with its title, subtitle lines, plot-area frame and legend.
pub(crate) fn frame(title: &str, subtitle: &[String], legend: &[LegendEntry]) -> Svg {
    let (positions, height) = legend_layout(legend);
    let mut svg = Svg::new(WIDTH, height, title);
    svg.element(
        "text",
        &[
            ("x", &16.0),
            ("y", &24.0),
            ("font-size", &15.0),
            ("font-weight", &"bold"),
            ("fill", &"#000000"),
        ],
        title,
    );
    for (i, line) in subtitle.iter().enumerate() {
        svg.element(
            "text",
            &[
                ("x", &16.0),
                ("y", &(43.0 + 16.0 * i as f64)),
                ("font-size", &11.5),
                ("fill", &"#444444"),
            ],
            line,
        );
    }
    for (e, &(x, y)) in legend.iter().zip(&positions) {
        let mid = x + 12.0;
        match e {
            LegendEntry::Series { style, line, .. } => {
                if *line {
                    svg.leaf(
                        "line",
                        &[
                            ("x1", &x),
                            ("x2", &(x + 24.0)),
                            ("y1", &y),
                            ("y2", &y),
                            ("stroke", &style.colour),
                            ("stroke-width", &2.0),
                        ],
                    );
                }
                marker(&mut svg, *style, mid, y, true);
            }
            LegendEntry::Dashed { dash, .. } => svg.leaf(
                "line",
                &[
                    ("x1", &x),
                    ("x2", &(x + 24.0)),
                    ("y1", &y),
                    ("y2", &y),
                    ("stroke", &REFERENCE),
                    ("stroke-width", &1.5),
                    ("stroke-dasharray", dash),
                ],
            ),
            LegendEntry::ErrorBar { .. } => error_bar(&mut svg, mid, y + 7.0, y - 7.0, AXIS),
            LegendEntry::Anchor { .. } => anchor_mark(&mut svg, mid, y),
        }
        svg.element(
            "text",
            &[
                ("x", &(x + 30.0)),
                ("y", &y),
                ("dy", &"0.32em"),
                ("fill", &"#222222"),
            ],
            e.label(),
        );
    }
    svg
}

/// A horizontal grid line and its label on the left.
pub(crate) fn y_tick(svg: &mut Svg, y: f64, label: &str) {
    svg.leaf(
        "line",
        &[
            ("x1", &LEFT),
            ("x2", &RIGHT),
            ("y1", &y),
            ("y2", &y),
            ("stroke", &GRID),
        ],
    );
    svg.element(
        "text",
        &[
            ("x", &(LEFT - 8.0)),
            ("y", &y),
            ("dy", &"0.32em"),
            ("text-anchor", &"end"),
            ("fill", &AXIS),
        ],
        label,
    );
}

/// A tick mark under the plot area and its label.
pub(crate) fn x_tick(svg: &mut Svg, x: f64, label: &str) {
    svg.leaf(
        "line",
        &[
            ("x1", &x),
            ("x2", &x),
            ("y1", &BOTTOM),
            ("y2", &(BOTTOM + 5.0)),
            ("stroke", &AXIS),
        ],
    );
    svg.element(
        "text",
        &[
            ("x", &x),
            ("y", &(BOTTOM + 19.0)),
            ("text-anchor", &"middle"),
            ("fill", &AXIS),
        ],
        label,
    );
}

/// The left and bottom axis lines and their titles.
pub(crate) fn axes(svg: &mut Svg, x_title: &str, y_title: &str) {
    svg.leaf(
        "polyline",
        &[
            (
                "points",
                &format!(
                    "{},{} {},{} {},{}",
                    num(LEFT),
                    num(TOP),
                    num(LEFT),
                    num(BOTTOM),
                    num(RIGHT),
                    num(BOTTOM)
                ),
            ),
            ("fill", &"none"),
            ("stroke", &AXIS),
        ],
    );
    svg.element(
        "text",
        &[
            ("x", &((LEFT + RIGHT) / 2.0)),
            ("y", &(BOTTOM + 40.0)),
            ("text-anchor", &"middle"),
            ("fill", &"#000000"),
        ],
        x_title,
    );
    let cy = (TOP + BOTTOM) / 2.0;
    svg.element(
        "text",
        &[
            ("x", &18.0),
            ("y", &cy),
            ("text-anchor", &"middle"),
            ("transform", &format!("rotate(-90 18 {})", num(cy))),
            ("fill", &"#000000"),
        ],
        y_title,
    );
}

/// A vertical bar from `y_lo` to `y_hi` with caps.
pub(crate) fn error_bar(svg: &mut Svg, x: f64, y_lo: f64, y_hi: f64, colour: &'static str) {
    let d = format!(
        "M{a},{lo}H{b}M{x},{lo}V{hi}M{a},{hi}H{b}",
        a = num(x - 4.0),
        b = num(x + 4.0),
        x = num(x),
        lo = num(y_lo),
        hi = num(y_hi)
    );
    svg.leaf(
        "path",
        &[
            ("d", &d),
            ("fill", &"none"),
            ("stroke", &colour),
            ("stroke-width", &1.3),
        ],
    );
}

/// An interface's marker: filled, or white with a coloured outline.
/// Hollow markers are a little smaller, so the filled ones stand out.
pub(crate) fn marker(svg: &mut Svg, style: Style, x: f64, y: f64, filled: bool) {
    let (r, fill, width) = if filled {
        (4.5, style.colour, 1.6)
    } else {
        (3.8, "#ffffff", 1.3)
    };
    let paint: [(&'static str, &dyn AttrValue); 3] = [
        ("fill", &fill),
        ("stroke", &style.colour),
        ("stroke-width", &width),
    ];
    match style.shape {
        0 => {
            let mut attrs: Vec<(&'static str, &dyn AttrValue)> =
                vec![("cx", &x), ("cy", &y), ("r", &r)];
            attrs.extend(paint);
            svg.leaf("circle", &attrs);
        }
        1 => {
            let side = 1.7 * r;
            let (rx, ry) = (x - side / 2.0, y - side / 2.0);
            let mut attrs: Vec<(&'static str, &dyn AttrValue)> =
                vec![("x", &rx), ("y", &ry), ("width", &side), ("height", &side)];
            attrs.extend(paint);
            svg.leaf("rect", &attrs);
        }
        shape => {
            let p = |dx: f64, dy: f64| format!("{},{}", num(x + dx * r), num(y + dy * r));
            let d = match shape {
                2 => format!("M{}L{}L{}Z", p(0.0, -1.2), p(1.1, 0.8), p(-1.1, 0.8)),
                3 => format!(
                    "M{}L{}L{}L{}Z",
                    p(0.0, -1.3),
                    p(1.1, 0.0),
                    p(0.0, 1.3),
                    p(-1.1, 0.0)
                ),
                _ => format!("M{}L{}L{}Z", p(0.0, 1.2), p(1.1, -0.8), p(-1.1, -0.8)),
            };
            let mut attrs: Vec<(&'static str, &dyn AttrValue)> = vec![("d", &d)];
            attrs.extend(paint);
            svg.leaf("path", &attrs);
        }
    }
}

/// A black ×, for the LC and HC anchors in the trade-off plot.
pub(crate) fn anchor_mark(svg: &mut Svg, x: f64, y: f64) {
    let d = format!(
        "M{},{}L{},{}M{},{}L{},{}",
        num(x - 5.0),
        num(y - 5.0),
        num(x + 5.0),
        num(y + 5.0),
        num(x - 5.0),
        num(y + 5.0),
        num(x + 5.0),
        num(y - 5.0)
    );
    svg.leaf(
        "path",
        &[
            ("d", &d),
            ("stroke", &"#000000"),
            ("stroke-width", &2.2),
            ("fill", &"none"),
        ],
    );
}

pub(crate) fn empty_note(svg: &mut Svg, text: &str) {
    svg.element(
        "text",
        &[
            ("x", &((LEFT + RIGHT) / 2.0)),
            ("y", &((TOP + BOTTOM) / 2.0)),
            ("text-anchor", &"middle"),
            ("font-size", &14.0),
            ("fill", &"#666666"),
        ],
        text,
    );
}

/// An axis-aligned box in pixels.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rect {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Rect {
    pub(crate) fn around(x: f64, y: f64, half: f64) -> Rect {
        Rect {
            x0: x - half,
            y0: y - half,
            x1: x + half,
            y1: y + half,
        }
    }

    pub(crate) fn overlap(&self, o: &Rect) -> f64 {
        let w = self.x1.min(o.x1) - self.x0.max(o.x0);
        let h = self.y1.min(o.y1) - self.y0.max(o.y0);
        if w > 0.0 && h > 0.0 { w * h } else { 0.0 }
    }

    pub(crate) fn area(&self) -> f64 {
        (self.x1 - self.x0) * (self.y1 - self.y0)
    }
}

/// Greedy point-label placement: right, left, above, below or at a corner of the point,
/// close to it and then a little farther, whichever overlaps the least with markers and
/// labels already placed (with a pixel to spare) or leaves the plot. A label that is not
/// forced and finds no free place is left out, so labels never cover each other.
#[derive(Debug, Default)]
pub(crate) struct LabelPlacer {
    pub(crate) taken: Vec<Rect>,
}

impl LabelPlacer {
    /// The label's baseline position and `text-anchor`; `None` when the label is
    /// not `forced` and every position overlaps something.
    pub(crate) fn place(
        &mut self,
        x: f64,
        y: f64,
        label: &str,
        size: f64,
        forced: bool,
    ) -> Option<(f64, f64, &'static str)> {
        let w = text_width(label, size);
        let h = size;
        let mut candidates: Vec<(f64, f64, &'static str, f64)> = Vec::new();
        for d in [7.0, 15.0] {
            candidates.extend([
                (x + d, y + size * 0.35, "start", x + d),
                (x - d, y + size * 0.35, "end", x - d - w),
                (x, y - d - 1.0, "middle", x - w / 2.0),
                (x, y + d + 1.0 + size * 0.8, "middle", x - w / 2.0),
                (x + d * 0.7, y - d * 0.7, "start", x + d * 0.7),
                (x - d * 0.7, y - d * 0.7, "end", x - d * 0.7 - w),
                (x + d * 0.7, y + d * 0.7 + size * 0.8, "start", x + d * 0.7),
                (
                    x - d * 0.7,
                    y + d * 0.7 + size * 0.8,
                    "end",
                    x - d * 0.7 - w,
                ),
            ]);
        }
        let area = Rect {
            x0: LEFT,
            y0: TOP - 12.0,
            x1: WIDTH - 4.0,
            y1: BOTTOM,
        };
        let mut best: Option<(f64, usize, Rect)> = None;
        for (i, &(_, by, _, left)) in candidates.iter().enumerate() {
            let rect = Rect {
                x0: left - 1.0,
                y0: by - h * 0.8 - 1.0,
                x1: left + w + 1.0,
                y1: by + h * 0.2 + 1.0,
            };
            let cost = self.taken.iter().map(|t| rect.overlap(t)).sum::<f64>() + rect.area()
                - rect.overlap(&area);
            if best.as_ref().is_none_or(|(c, _, _)| cost < *c - 1e-9) {
                best = Some((cost, i, rect));
            }
        }
        let (cost, i, rect) = best?;
        if !forced && cost > 0.0 {
            return None;
        }
        self.taken.push(rect);
        let (lx, ly, anchor, _) = candidates[i];
        Some((lx, ly, anchor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_interfaces_keep_their_style_in_any_order() {
        let a = Styles::new(["traj_drop", "raw"].into_iter());
        let b = Styles::new(["raw", "custom", "traj_drop"].into_iter());
        assert_eq!(a.get("raw"), b.get("raw"));
        assert_eq!(a.get("traj_drop"), b.get("traj_drop"));
        assert_eq!(a.get("raw").colour, "#0072B2");
        assert_ne!(b.get("custom"), b.get("raw"));
    }

    #[test]
    fn labels_avoid_each_other() {
        let mut p = LabelPlacer::default();
        p.taken.push(Rect::around(300.0, 200.0, 5.0));
        let first = p.place(300.0, 200.0, "all·early", 9.5, false);
        let second = p.place(300.0, 200.0, "all·early", 9.5, false);
        assert!(first.is_some() && second.is_some());
        assert_ne!(first, second);
        // Once every place near the point is taken, an optional label is dropped, a
        // forced one still placed.
        while p.place(300.0, 200.0, "all·early", 9.5, false).is_some() {}
        assert_eq!(p.place(300.0, 200.0, "all·early", 9.5, false), None);
        assert!(p.place(300.0, 200.0, "x", 9.5, true).is_some());
    }
}
