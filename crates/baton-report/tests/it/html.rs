use baton_report::{BootstrapConfig, PairSpec, ReportInput, build};
use baton_types::{EpisodeStatus, Family, Interface, SwitchPoint};

use crate::exports::tiny;
use crate::*;

const DIRECTIONS: [&str; 2] = ["escalation", "downshift"];

#[test]
fn html_for_a_tiny_input() {
    let html = build(&tiny()).to_html();
    assert_well_formed(&html, true).unwrap_or_else(|e| panic!("{e}\n{html}"));
    insta::assert_snapshot!("tiny_html", html);
}

#[test]
fn score_plot_for_a_tiny_input() {
    let plots = build(&tiny()).plots();
    let plot = plots
        .iter()
        .find(|p| p.name == "score-by-k-escalation-p")
        .expect("escalation score plot");
    assert_eq!(plot.title, "Score by switch point: pair p, escalation");
    insta::assert_snapshot!("tiny_score_svg", plot.svg);
}

#[test]
fn tradeoff_plot_for_a_tiny_input() {
    let plots = build(&tiny()).plots();
    let plot = plots
        .iter()
        .find(|p| p.name == "qrec-vs-csret-escalation-p")
        .expect("escalation trade-off plot");
    insta::assert_snapshot!("tiny_tradeoff_svg", plot.svg);
}

#[test]
fn html_is_self_contained_and_flags_simulation() {
    let html = build(&tiny()).to_html();
    for external in [
        "<script", "<link", "src=", "url(", "@import", "http://", "https://",
    ] {
        // The SVG namespace is the one URL allowed: it is a name, not a fetch.
        let found = html
            .replace("xmlns=\"http://www.w3.org/2000/svg\"", "")
            .contains(external);
        assert!(!found, "found {external:?} in the HTML");
    }
    assert!(html.contains("not a finding about real LLMs"));
    let real = build(&ReportInput {
        simulated: false,
        ..tiny()
    })
    .to_html();
    assert!(!real.contains("Simulated models"));
}

#[test]
fn html_shows_intervals_and_the_small_gap_footnote() {
    let eps = vec![
        scored("d/0", Family::Data2Text, &lc(), 0, 0.50, 0.01),
        scored("d/0", Family::Data2Text, &hc(), 0, 0.53, 0.05),
        scored(
            "d/0",
            Family::Data2Text,
            &esc(SwitchPoint::Early, Interface::Raw),
            0,
            0.51,
            0.03,
        ),
    ];
    let report = build(&ReportInput {
        bootstrap: Some(BootstrapConfig {
            replicates: 20,
            seed: 0,
        }),
        ..input(eps)
    });
    let html = report.to_html();
    assert!(
        html.contains("<th scope=\"col\" class=\"num\">QRec 95% CI</th>"),
        "{html}"
    );
    assert!(html.contains("<td class=\"num na\">—†</td>"), "{html}");
    assert!(
        html.contains("—† QRec omitted: the anchors differ by less than 5 points"),
        "{html}"
    );
    // Intervals become error bars in the score plot.
    let svg = &report.plots()[0].svg;
    assert!(svg.contains("95% CI"), "{svg}");
}

/// Every string the input controls is escaped wherever it lands.
#[test]
fn text_from_the_input_is_always_escaped() {
    let hostile_pair = r#"<b>&"x'"#;
    let hostile_lc = "sim/<i>lc</i>";
    let hostile_hc = "sim/hc'\"&amp;";
    let hostile_title = "<script>alert('t')</script>";
    let hostile_reason = "budget <stop> & \"quote\"";
    let early = Cell::handoff(hostile_lc, hostile_hc, SwitchPoint::Early, Interface::Raw);
    let down = Cell::handoff(hostile_hc, hostile_lc, SwitchPoint::Late, Interface::Raw);
    let mut eps = vec![
        scored(
            "math/0",
            Family::Math,
            &Cell::single(hostile_lc),
            0,
            0.0,
            0.01,
        ),
        scored(
            "math/0",
            Family::Math,
            &Cell::single(hostile_hc),
            0,
            1.0,
            0.1,
        ),
        scored("math/0", Family::Math, &early, 0, 1.0, 0.05),
        scored("math/0", Family::Math, &down, 0, 0.0, 0.02),
        unfinished(
            "math/1",
            Family::Math,
            &early,
            0,
            EpisodeStatus::Errored,
            hostile_reason,
        ),
        // Outside every pair: its cell label goes into the notes.
        scored(
            "math/0",
            Family::Math,
            &Cell::single("<u>other</u>"),
            0,
            1.0,
            0.1,
        ),
    ];
    eps.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    let report = build(&ReportInput {
        title: hostile_title.to_owned(),
        simulated: true,
        pairs: vec![PairSpec {
            name: hostile_pair.to_owned(),
            lc: hostile_lc.to_owned(),
            hc: hostile_hc.to_owned(),
        }],
        episodes: eps,
        bootstrap: None,
        spend: None,
        skipped_tasks: Vec::new(),
        notes: Vec::new(),
    });
    let html = report.to_html();
    let plots = report.plots();
    assert_eq!(plots.len(), 4);
    let hostile = [
        hostile_pair,
        hostile_lc,
        hostile_hc,
        hostile_title,
        hostile_reason,
        "<u>other</u>",
    ];
    for doc in std::iter::once(&html).chain(plots.iter().map(|p| &p.svg)) {
        for raw in hostile {
            assert!(!doc.contains(raw), "unescaped {raw:?} in:\n{doc}");
        }
        for tag in ["<b>", "<i>", "<u>", "<script", "<stop>"] {
            assert!(!doc.contains(tag), "stray {tag} in:\n{doc}");
        }
        assert_well_formed(doc, doc.starts_with("<!DOCTYPE"))
            .unwrap_or_else(|e| panic!("{e}\n{doc}"));
    }
    for raw in hostile {
        assert!(
            html.contains(&escaped(raw)),
            "{raw:?} missing from the HTML"
        );
    }
    for plot in &plots {
        assert!(
            plot.svg.contains(&escaped(hostile_pair)),
            "pair name missing from {}",
            plot.name
        );
        assert!(plot.svg.contains(&escaped(hostile_lc)), "{}", plot.name);
        assert!(
            plot.name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{}",
            plot.name
        );
    }
}

#[test]
fn plots_exist_for_every_pair_and_direction() {
    let mut tiny = tiny();
    // A second pair with no episodes at all, and a third whose name collapses to
    // the same file name as the first.
    tiny.pairs.push(PairSpec {
        name: "Second pair".to_owned(),
        lc: "sim/a".to_owned(),
        hc: "sim/b".to_owned(),
    });
    tiny.pairs.push(PairSpec {
        name: "P".to_owned(),
        lc: "sim/c".to_owned(),
        hc: "sim/d".to_owned(),
    });
    let report = build(&tiny);
    let plots = report.plots();
    let names: Vec<&str> = plots.iter().map(|p| p.name.as_str()).collect();
    for slug in ["p", "second-pair", "p-2"] {
        for d in DIRECTIONS {
            for kind in ["score-by-k", "qrec-vs-csret"] {
                let name = format!("{kind}-{d}-{slug}");
                assert!(names.contains(&name.as_str()), "no {name} in {names:?}");
            }
        }
    }
    assert_eq!(plots.len(), 3 * 2 * 2);
    for plot in &plots {
        assert!(
            plot.svg
                .starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"")
        );
        assert_well_formed(&plot.svg, false).unwrap_or_else(|e| panic!("{}: {e}", plot.name));
    }
    // Pairs without data say so instead of drawing nothing.
    let empty = plots
        .iter()
        .find(|p| p.name == "score-by-k-escalation-second-pair")
        .unwrap();
    assert!(empty.svg.contains("No handoff cells in this direction."));
    // The HTML carries the plots of every direction that has handoff rows.
    let html = report.to_html();
    for plot in plots.iter().filter(|p| p.name.ends_with("-p")) {
        assert!(html.contains(&plot.svg), "{} not inline", plot.name);
    }
}

#[test]
fn score_plot_draws_one_line_per_interface_and_both_anchors() {
    let mut eps = math_anchors();
    for (switch, interface, score) in [
        (SwitchPoint::Early, Interface::Raw, 1.0),
        (SwitchPoint::Late, Interface::Raw, 0.0),
        (SwitchPoint::At(2), Interface::Raw, 1.0),
        (SwitchPoint::Middle, Interface::Raw, 1.0),
        (SwitchPoint::Early, Interface::TrajDrop, 0.0),
        (SwitchPoint::Late, Interface::TrajDrop, 1.0),
    ] {
        eps.extend(series(
            "math",
            Family::Math,
            &esc(switch, interface),
            &[(score, 0.05); 4],
        ));
    }
    let report = build(&input(eps));
    let plot = report
        .plots()
        .into_iter()
        .find(|p| p.name == "score-by-k-escalation-p")
        .unwrap();
    let svg = &plot.svg;
    // x axis: early, middle, late, then explicit K; no avg.
    let at = |s: &str| {
        svg.find(&format!(">{s}</text>"))
            .unwrap_or_else(|| panic!("no {s}"))
    };
    assert!(at("early") < at("middle") && at("middle") < at("late") && at("late") < at("k2"));
    assert!(!svg.contains(">avg</text>"));
    // Legend entries for both interfaces and both anchors (R_LC = 25, R_HC = 75),
    // taken on the matched units since every row matches all four tasks.
    for label in [
        "raw",
        "traj_drop",
        "LC anchor, matched units (25.0)",
        "HC anchor, matched units (75.0)",
    ] {
        assert!(
            svg.contains(&format!(">{label}</text>")),
            "no {label}:\n{svg}"
        );
    }
    // Lines join neighbouring switch points only: raw has all four (3 segments),
    // traj_drop misses middle, so its early and late stay apart (0 segments).
    // Each count includes the legend's sample line.
    let segments = |colour: &str| {
        svg.matches(&format!("stroke=\"{colour}\" stroke-width=\"2\""))
            .count()
    };
    assert_eq!(segments("#0072B2"), 3 + 1, "{svg}");
    assert_eq!(segments("#CC79A7"), 1, "{svg}");
    // The LC reference line and its legend sample.
    assert_eq!(svg.matches("stroke-dasharray=\"8 4\"").count(), 2, "{svg}");
}

#[test]
fn tradeoff_axes_extend_to_values_outside_0_100() {
    let mut eps = math_anchors();
    // QRec -50, CSRet -85 at early; QRec 150, CSRet 110 at late (see metrics tests).
    eps.extend(series(
        "math",
        Family::Math,
        &esc(SwitchPoint::Early, Interface::Raw),
        &[(0.0, 0.2); 4],
    ));
    eps.extend(series(
        "math",
        Family::Math,
        &esc(SwitchPoint::Late, Interface::Raw),
        &[(1.0, 0.005); 4],
    ));
    let report = build(&input(eps));
    let plot = report
        .plots()
        .into_iter()
        .find(|p| p.name == "qrec-vs-csret-escalation-p")
        .unwrap();
    let svg = &plot.svg;
    for tick in [">-50</text>", ">150</text>"] {
        assert!(svg.contains(tick), "no tick {tick}:\n{svg}");
    }
    assert!(svg.contains("QRec -50.0, CSRet -85.0"), "{svg}");
    assert!(svg.contains("QRec 150.0, CSRet 110.0"), "{svg}");
    // Every data point lies inside the axes (read from the axis polyline).
    let frame: Vec<f64> = svg
        .split("<polyline points=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("axis polyline")
        .split([' ', ','])
        .map(|v| v.parse().unwrap())
        .collect();
    let (left, top, bottom, right) = (frame[0], frame[1], frame[3], frame[4]);
    let points: Vec<&str> = svg
        .split("<g>\n")
        .skip(1)
        .filter_map(|g| g.split("<circle ").nth(1))
        .collect();
    assert_eq!(points.len(), 6, "math and all, each at early, late and avg");
    for circle in points {
        let attr = |name: &str| -> f64 {
            let start = circle.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            circle[start..].split('"').next().unwrap().parse().unwrap()
        };
        assert!((left..=right).contains(&attr("cx")), "{circle}");
        assert!((top..=bottom).contains(&attr("cy")), "{circle}");
    }
}

fn escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// A small well-formedness check: tags balance (HTML void elements aside),
/// attribute values are quoted, and every `&` starts an entity.
fn assert_well_formed(doc: &str, html: bool) -> Result<(), String> {
    const VOID: [&str; 4] = ["meta", "br", "hr", "img"];
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = doc;
    let check_entities = |text: &str| -> Result<(), String> {
        for (i, _) in text.match_indices('&') {
            let tail = &text[i..];
            let ok = ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
                .iter()
                .any(|e| tail.starts_with(e));
            if !ok {
                return Err(format!("bare & at {:?}", &tail[..tail.len().min(20)]));
            }
        }
        Ok(())
    };
    let mut in_style = false;
    while let Some(open) = rest.find('<') {
        if !in_style {
            check_entities(&rest[..open])?;
        }
        let close = rest[open..]
            .find('>')
            .ok_or_else(|| "unterminated tag".to_owned())?
            + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if tag.starts_with('!') || tag.starts_with('?') {
            continue;
        }
        if !tag.matches('"').count().is_multiple_of(2) || tag.contains('<') {
            return Err(format!("bad attribute quoting in <{tag}>"));
        }
        if let Some(name) = tag.strip_prefix('/') {
            let name = name.trim();
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            in_style = false;
            continue;
        }
        let name = tag
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap_or_default();
        if name.is_empty() {
            return Err(format!("empty tag name in <{tag}>"));
        }
        // Values inside attributes must be escaped too.
        for value in tag.split('"').skip(1).step_by(2) {
            check_entities(value)?;
        }
        if tag.ends_with('/') || (html && VOID.contains(&name)) {
            continue;
        }
        in_style = name == "style";
        stack.push(name);
    }
    check_entities(rest)?;
    match stack.as_slice() {
        [] => Ok(()),
        open => Err(format!("unclosed {open:?}")),
    }
}

#[test]
fn the_well_formedness_check_catches_mistakes() {
    assert!(assert_well_formed("<svg><g></g></svg>", false).is_ok());
    assert!(assert_well_formed("<svg><g></svg>", false).is_err());
    assert!(assert_well_formed("<svg><text>a & b</text></svg>", false).is_err());
    assert!(assert_well_formed("<svg><g class=\"a></g></svg>", false).is_err());
    assert!(assert_well_formed("<svg><rect/></svg>", false).is_ok());
    assert!(assert_well_formed("<html><meta charset=\"utf-8\"></html>", true).is_ok());
}

/// See: issue 35, "What to build" 1: the HTML report links every row of one cell to the
/// transcript viewer, filtered to that cell and family; without a viewer it is unchanged.
#[test]
fn issue_35_rows_of_one_cell_link_to_the_viewer() {
    let report = build(&tiny());
    let plain = report.to_html();
    let linked = report.to_html_linked("view/index.html");
    assert_well_formed(&linked, true).unwrap_or_else(|e| panic!("{e}\n{linked}"));
    assert!(!plain.contains("view/index.html"));
    let hrefs: Vec<&str> = linked
        .split("<a href=\"view/index.html#")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    // every anchor row and every handoff row of one cell links, each to its own cell
    let cells: Vec<&baton_report::CellRow> = report
        .cells
        .iter()
        .filter(|r| r.cell.is_some() || r.anchor.is_some())
        .collect();
    assert_eq!(hrefs.len(), cells.len(), "{hrefs:?}");
    assert!(
        hrefs
            .iter()
            .any(|h| h.starts_with("cell=handoff%28") && h.contains("&amp;group=")),
        "{hrefs:?}"
    );
    assert!(
        hrefs.iter().any(|h| h.starts_with("cell=single%28")),
        "{hrefs:?}"
    );
    // the same page apart from the links
    let unlinked = linked
        .split("<a href=\"view/index.html#")
        .enumerate()
        .map(|(i, s)| {
            if i == 0 {
                s.to_owned()
            } else {
                s[s.find("\">").unwrap() + 2..].replacen("</a></td>", "</td>", 1)
            }
        })
        .collect::<String>();
    assert!(
        unlinked == plain,
        "the linked page differs beyond its links"
    );
}
