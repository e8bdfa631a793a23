//! The HTML report: one self-contained file with the Markdown report's tables (from
//! the same table definitions) and the plots inline.
//!
//! No scripts, external stylesheets, fonts or images: it opens offline and prints
//! (headers repeat on each page, plots are not split, the scrolling table frames
//! open up). Every piece of text from the input is escaped.

use std::fmt::Write;

use baton_types::Direction;

use crate::format::{Align, DASH, Grid};
use crate::markdown::{
    ALL_FAMILIES_SUFFIX, CALLS_HEADING, CALLS_INTRO, EXTRACTION_HEADING, INCOMPLETE_HEADING,
    NO_HANDOFFS, RESTART_HEADING, RESTART_INTRO, RULES_HEADING, RULES_INTRO, SIMULATED_NOTICE,
    SMALL_GAP_MARK, anchor_table, direction_title, handoff_table,
};
pub(crate) use crate::plot::svg::escape;
use crate::plot::{DIRECTIONS, pair_slugs};
use crate::report::{CellRow, Report};

const STYLE: &str = "\
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #1a1a1a; font: 15px/1.5 sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 1.5rem 1.25rem 3rem; }
h1 { font-size: 1.7rem; margin: 0 0 1rem; }
h2 { font-size: 1.35rem; margin: 2.4rem 0 .8rem; padding-bottom: .2rem; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.12rem; margin: 1.8rem 0 .6rem; }
h4 { font-size: 1rem; margin: 1.4rem 0 .5rem; }
code { font-family: monospace; font-size: .92em; background: #f2f2f2; padding: 0 .25em; border-radius: 3px; }
a { color: #0058a3; }
.notice { border: 2px solid #D55E00; background: #fff3eb; padding: .6rem .9rem; font-weight: bold; }
nav ul { margin: .3rem 0; padding-left: 1.3rem; }
.table-wrap { overflow: auto; max-height: 85vh; margin: .5rem 0 1.2rem; border: 1px solid #d6d6d6; }
table { border-collapse: collapse; font-size: .86rem; }
th, td { padding: .28rem .65rem; text-align: left; white-space: nowrap; border-bottom: 1px solid #ececec; }
thead th { position: sticky; top: 0; z-index: 1; background: #f0f0f0; box-shadow: inset 0 -1px 0 #b5b5b5; font-weight: 600; }
tbody tr:nth-child(even) { background: #fafafa; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
td.na { color: #767676; }
.plots { display: flex; flex-wrap: wrap; gap: 1rem; }
figure { margin: .5rem 0 1rem; flex: 1 1 600px; max-width: 760px; }
figure svg { display: block; width: 100%; height: auto; border: 1px solid #e2e2e2; }
.footnotes { margin-top: 2.5rem; padding-top: .6rem; border-top: 1px solid #ccc; font-size: .9rem; color: #333; }
@page { margin: 1.5cm; }
@media print {
  body { font-size: 10pt; }
  main { max-width: none; padding: 0; }
  nav { display: none; }
  .notice { background: none; }
  .table-wrap { overflow: visible; max-height: none; border: 0; }
  table { font-size: 8pt; }
  th, td { padding: .12rem .35rem; }
  thead { display: table-header-group; }
  thead th { position: static; }
  tr, figure { break-inside: avoid; }
  h2, h3, h4 { break-after: avoid; }
  a { color: inherit; text-decoration: none; }
}
";

impl Report {
    /// The report as one self-contained HTML page: the same sections and tables as
    /// [`Report::to_markdown`], with each direction's two plots ([`Report::plots`])
    /// inline after its tables. Deterministic: the same report gives the same bytes.
    pub fn to_html(&self) -> String {
        self.html(None)
    }

    /// [`Report::to_html`] with the first cell of every row that is one cell of the
    /// design (an anchor or a handoff cell, in one family or all) linking to the
    /// transcript viewer at `viewer` (a URL relative to the page, such as
    /// `view/index.html`), opened on that cell's episodes.
    pub fn to_html_linked(&self, viewer: &str) -> String {
        self.html(Some(viewer))
    }

    fn html(&self, viewer: Option<&str>) -> String {
        let slugs = pair_slugs(&self.pairs);
        let ci = self.bootstrap.is_some();
        let mut out = page_start(&self.title);
        if self.simulated {
            let _ = writeln!(
                out,
                "<p class=\"notice\" role=\"note\">{}</p>",
                inline(SIMULATED_NOTICE)
            );
        }
        let _ = writeln!(out, "<p>{}</p>", inline(self.method_paragraph().trim()));
        if let Some(spend) = &self.spend {
            let _ = writeln!(out, "<p class=\"spend\">{}</p>", escape(&spend.sentence()));
        }
        out.push_str(&self.contents(&slugs));

        for (pair, slug) in self.pairs.iter().zip(&slugs) {
            let _ = writeln!(
                out,
                "<section>\n<h2 id=\"pair-{slug}\">Pair {}: LC {}, HC {}</h2>",
                code(&pair.name),
                code(&pair.lc),
                code(&pair.hc)
            );
            let anchors: Vec<&CellRow> = self.rows(&pair.name, None).collect();
            let _ = writeln!(out, "<h3 id=\"pair-{slug}-anchors\">Anchors</h3>");
            out.push_str(&linked_table(&anchor_table(&anchors, ci), &anchors, viewer));
            for direction in DIRECTIONS {
                let (from, to) = match direction {
                    Direction::Escalation => (&pair.lc, &pair.hc),
                    Direction::Downshift => (&pair.hc, &pair.lc),
                };
                let title = direction_title(direction);
                let _ = writeln!(
                    out,
                    "<h3 id=\"pair-{slug}-{}\">{title} ({} → {})</h3>",
                    direction.as_str(),
                    code(from),
                    code(to)
                );
                let rows: Vec<&CellRow> = self.rows(&pair.name, Some(direction)).collect();
                if rows.is_empty() {
                    let _ = writeln!(out, "<p>{}</p>", escape(NO_HANDOFFS));
                    continue;
                }
                let (all, per_family): (Vec<&CellRow>, Vec<&CellRow>) =
                    rows.into_iter().partition(|r| r.is_aggregate());
                out.push_str(&linked_table(
                    &handoff_table(&per_family, ci),
                    &per_family,
                    viewer,
                ));
                let _ = writeln!(out, "<h4>{title}, {}</h4>", escape(ALL_FAMILIES_SUFFIX));
                out.push_str(&linked_table(&handoff_table(&all, ci), &all, viewer));
                let _ = writeln!(out, "<h4>{title}, plots</h4>\n<div class=\"plots\">");
                for plot in [
                    self.score_plot(pair, slug, direction),
                    self.tradeoff_plot(pair, slug, direction),
                ] {
                    let _ = write!(out, "<figure>\n{}</figure>\n", plot.svg);
                }
                out.push_str("</div>\n");
            }
            out.push_str("</section>\n");
        }

        if !self.baselines.is_empty() {
            let _ = writeln!(
                out,
                "<section>\n<h2 id=\"baselines\">{}</h2>\n<p>{}</p>",
                escape(crate::protocol::BASELINES_HEADING),
                escape(crate::protocol::BASELINES_INTRO)
            );
            out.push_str(&html_table(&self.baseline_table()));
            out.push_str("</section>\n");
        }
        if self.has_reliability() {
            let _ = writeln!(
                out,
                "<section>\n<h2 id=\"lic-metrics\">{}</h2>\n<p>{}</p>",
                escape(crate::protocol::RELIABILITY_HEADING),
                escape(crate::protocol::RELIABILITY_INTRO)
            );
            out.push_str(&html_table(&self.reliability_table()));
            out.push_str("</section>\n");
        }
        if !self.restart_controls.is_empty() {
            let _ = writeln!(
                out,
                "<section>\n<h2 id=\"restart-controls\">{}</h2>\n<p>{}</p>",
                escape(RESTART_HEADING),
                escape(RESTART_INTRO)
            );
            out.push_str(&html_table(&self.restart_table()));
            out.push_str("</section>\n");
        }
        let _ = writeln!(
            out,
            "<section>\n<h2 id=\"incomplete\">{}</h2>",
            escape(INCOMPLETE_HEADING)
        );
        if self.incomplete.is_empty() {
            out.push_str("<p>None.</p>\n");
        } else {
            out.push_str(&html_table(&self.incomplete_table()));
        }
        out.push_str("</section>\n");
        if !self.skipped_tasks.is_empty() {
            let _ = writeln!(
                out,
                "<section>\n<h2 id=\"skipped\">{}</h2>",
                escape(crate::markdown::SKIPPED_HEADING)
            );
            out.push_str(&html_table(&self.skipped_table()));
            out.push_str("</section>\n");
        }
        let calls = self.calls_table();
        if !calls.rows.is_empty() {
            let _ = writeln!(
                out,
                "<section>\n<h2 id=\"calls\">{}</h2>\n<p>{}</p>",
                escape(CALLS_HEADING),
                inline(CALLS_INTRO)
            );
            out.push_str(&html_table(&calls));
            out.push_str("</section>\n");
        }
        if let Some(intro) = self.extraction_intro() {
            let _ = writeln!(
                out,
                "<section>\n<h2 id=\"extraction\">{}</h2>\n<p>{}</p>",
                escape(EXTRACTION_HEADING),
                inline(&intro)
            );
            out.push_str(&html_table(&self.extraction_table()));
            out.push_str("</section>\n");
        }
        if !self.extraction_rules.is_empty() {
            let _ = writeln!(
                out,
                "<section>\n<h2 id=\"extraction-rules\">{}</h2>\n<p>{}</p>",
                escape(RULES_HEADING),
                inline(RULES_INTRO)
            );
            out.push_str(&html_table(&self.rules_table()));
            out.push_str("</section>\n");
        }
        if !self.notes.is_empty() {
            out.push_str("<section>\n<h2 id=\"notes\">Notes</h2>\n<ul>\n");
            for n in &self.notes {
                let _ = writeln!(out, "<li>{}</li>", escape(n));
            }
            out.push_str("</ul>\n</section>\n");
        }
        out.push_str("<footer class=\"footnotes\" id=\"footnotes\">\n");
        for paragraph in self.footnotes().split("\n\n") {
            let paragraph = paragraph.trim();
            if !paragraph.is_empty() {
                let _ = writeln!(out, "<p>{}</p>", escape(paragraph));
            }
        }
        out.push_str("</footer>\n");
        out.push_str(PAGE_END);
        out
    }

    /// Links to each section.
    fn contents(&self, slugs: &[String]) -> String {
        let mut s = String::from("<nav aria-label=\"Contents\">\n<ul>\n");
        for (pair, slug) in self.pairs.iter().zip(slugs) {
            let _ = write!(
                s,
                "<li><a href=\"#pair-{slug}\">Pair {}</a>: <a href=\"#pair-{slug}-anchors\">anchors</a>",
                escape(&pair.name)
            );
            for direction in DIRECTIONS {
                let _ = write!(
                    s,
                    ", <a href=\"#pair-{slug}-{d}\">{d}</a>",
                    d = direction.as_str()
                );
            }
            s.push_str("</li>\n");
        }
        if !self.restart_controls.is_empty() {
            s.push_str("<li><a href=\"#restart-controls\">Restart controls</a></li>\n");
        }
        s.push_str("<li><a href=\"#incomplete\">Incomplete and errored episodes</a></li>\n");
        if !self.skipped_tasks.is_empty() {
            s.push_str("<li><a href=\"#skipped\">Tasks left out</a></li>\n");
        }
        if !self.calls_table().rows.is_empty() {
            s.push_str("<li><a href=\"#calls\">Calls per cell</a></li>\n");
        }
        if self.extraction.is_some() {
            s.push_str("<li><a href=\"#extraction\">Answer extraction</a></li>\n");
        }
        if !self.extraction_rules.is_empty() {
            s.push_str("<li><a href=\"#extraction-rules\">Extraction rules</a></li>\n");
        }
        if !self.notes.is_empty() {
            s.push_str("<li><a href=\"#notes\">Notes</a></li>\n");
        }
        s.push_str("</ul>\n</nav>\n");
        s
    }
}

/// The start of a report page, both studies': the head with the one style sheet, then
/// `<main>` and the title as `<h1>`.
pub(crate) fn page_start(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<main>\n\
         <h1>{}</h1>\n",
        escape(title),
        escape(title)
    )
}

/// The end of a report page.
pub(crate) const PAGE_END: &str = "</main>\n</body>\n</html>\n";

/// `<code>` around escaped text.
fn code(s: &str) -> String {
    format!("<code>{}</code>", escape(s))
}

/// Escapes Markdown-ish text, turning `` `x` `` spans into `<code>`.
pub(crate) fn inline(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        // An unmatched last backtick stays literal.
        if i % 2 == 1 && i + 1 < parts.len() {
            out.push_str(&code(part));
        } else {
            if i % 2 == 1 {
                out.push('`');
            }
            out.push_str(&escape(part));
        }
    }
    out
}

/// [`html_table`] of `grid`, whose rows are `rows`, with each row of one cell linking
/// to the viewer at `viewer` filtered to that cell (and family, unless `all`).
fn linked_table(grid: &Grid, rows: &[&CellRow], viewer: Option<&str>) -> String {
    let Some(viewer) = viewer else {
        return html_table(grid);
    };
    let links: Vec<Option<String>> = rows
        .iter()
        .map(|r| {
            let cell = r.cell.clone().or_else(|| {
                r.model
                    .as_ref()
                    .filter(|_| r.anchor.is_some())
                    .map(|m| format!("single({m})"))
            })?;
            let mut query = format!("cell={}", url_encode(&cell));
            if r.family != "all" {
                query += &format!("&group={}", url_encode(&r.family));
            }
            Some(format!("{viewer}#{query}"))
        })
        .collect();
    table(grid, &links)
}

/// `s` with everything but unreserved characters percent-encoded (RFC 3986).
fn url_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A table in a scrolling frame with a sticky header; right-aligned columns get
/// the `num` class, missing values the `na` class.
pub(crate) fn html_table(grid: &Grid) -> String {
    table(grid, &[])
}

/// [`html_table`], the first cell of row `i` a link to `links[i]` where there is one.
fn table(grid: &Grid, links: &[Option<String>]) -> String {
    let class = |a: Align| match a {
        Align::Left => "",
        Align::Right => " class=\"num\"",
    };
    let mut s = String::from("<div class=\"table-wrap\">\n<table>\n<thead>\n<tr>");
    for &(h, a) in &grid.headers {
        let _ = write!(s, "<th scope=\"col\"{}>{}</th>", class(a), escape(h));
    }
    s.push_str("</tr>\n</thead>\n<tbody>\n");
    for (i, row) in grid.rows.iter().enumerate() {
        s.push_str("<tr>");
        for (j, (cell, &(_, a))) in row.iter().zip(&grid.headers).enumerate() {
            let missing = cell == DASH || cell == SMALL_GAP_MARK;
            let attr = match (a, missing) {
                (Align::Left, false) => "",
                (Align::Left, true) => " class=\"na\"",
                (Align::Right, false) => " class=\"num\"",
                (Align::Right, true) => " class=\"num na\"",
            };
            match links.get(i).and_then(Option::as_deref).filter(|_| j == 0) {
                Some(href) => {
                    let _ = write!(
                        s,
                        "<td{attr}><a href=\"{}\">{}</a></td>",
                        escape(href),
                        escape(cell)
                    );
                }
                None => {
                    let _ = write!(s, "<td{attr}>{}</td>", escape(cell));
                }
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody>\n</table>\n</div>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_code_spans_become_code_elements() {
        assert_eq!(
            inline("a `<x>` b & `c"),
            "a <code>&lt;x&gt;</code> b &amp; `c"
        );
    }

    #[test]
    fn viewer_links_percent_encode_the_cell() {
        assert_eq!(
            url_encode("handoff(lc -> hc, early, raw)"),
            "handoff%28lc%20-%3E%20hc%2C%20early%2C%20raw%29"
        );
        assert_eq!(url_encode("single(m)"), "single%28m%29");
    }

    #[test]
    fn tables_mark_numbers_and_missing_values() {
        let columns: [crate::format::Column<'_, (&str, &str)>; 2] = [
            crate::format::column("name", Align::Left, |r: &(&str, &str)| r.0.to_owned()),
            crate::format::column("n", Align::Right, |r: &(&str, &str)| r.1.to_owned()),
        ];
        let grid = Grid::of(&columns, [("a<b", DASH)]);
        let t = html_table(&grid);
        assert!(
            t.contains("<tr><td>a&lt;b</td><td class=\"num na\">—</td></tr>"),
            "{t}"
        );
        assert!(t.contains("<th scope=\"col\" class=\"num\">n</th>"), "{t}");
    }
}
