//! Paper-ready output (issue 35): tables that fit a terminal, LaTeX that breaks across
//! pages with its intervals, and unstable QRec marked in every format.

use baton_report::{BootstrapConfig, EpisodeRecord, PairSpec, ReportInput, build};
use baton_types::{Cell, Family, Interface, SwitchPoint};

use crate::*;

const LONG_LC: &str = "openai/gpt-4o-mini-2024-07-18";
const LONG_HC: &str = "anthropic/claude-sonnet-4-5-20250929";

/// The demo's design with real-length model names: every family, three switch points,
/// five interfaces, both directions, six tasks per family, intervals on; scores that
/// give negative QRec intervals of three digits.
pub(crate) fn demo_shaped() -> ReportInput {
    let interfaces = [
        Interface::Raw,
        Interface::Disclosure,
        Interface::CompactPre,
        Interface::CompactSuf,
        Interface::TrajDrop,
    ];
    let switches = [SwitchPoint::Early, SwitchPoint::Middle, SwitchPoint::Late];
    let mut eps: Vec<EpisodeRecord> = Vec::new();
    for family in Family::ALL {
        for t in 0..6u32 {
            let task = format!("{}/{t}", family.as_str());
            let bit = |n: u32| f64::from((t + n).is_multiple_of(3));
            eps.push(scored(
                &task,
                family,
                &Cell::single(LONG_LC),
                0,
                bit(0),
                0.00091,
            ));
            eps.push(scored(
                &task,
                family,
                &Cell::single(LONG_HC),
                0,
                bit(1).max(bit(0)),
                0.0171,
            ));
            for (i, &switch) in switches.iter().enumerate() {
                for (j, &interface) in interfaces.iter().enumerate() {
                    let n = (i + j) as u32;
                    let up = Cell::handoff(LONG_LC, LONG_HC, switch, interface);
                    let down = Cell::handoff(LONG_HC, LONG_LC, switch, interface);
                    eps.push(scored(
                        &task,
                        family,
                        &up,
                        0,
                        bit(n),
                        0.0123 - 0.001 * n as f64,
                    ));
                    eps.push(scored(
                        &task,
                        family,
                        &down,
                        0,
                        bit(n + 1),
                        0.0051 + 0.002 * n as f64,
                    ));
                }
            }
        }
    }
    ReportInput {
        pairs: vec![PairSpec {
            name: "gpt-4o-mini/claude-sonnet-4-5".to_owned(),
            lc: LONG_LC.to_owned(),
            hc: LONG_HC.to_owned(),
        }],
        bootstrap: Some(BootstrapConfig {
            replicates: 200,
            seed: 0,
        }),
        ..input(eps)
    }
}

#[test]
fn issue_35_markdown_tables_fit_100_columns() {
    // See: issue 35 (terminal tables up to 195 columns)
    let report = build(&demo_shaped());
    let md = report.to_markdown();
    let rows = md.lines().filter(|l| l.starts_with('|')).count();
    // Per direction 5 families x (3 switch points + avg) x 5 interfaces = 100 rows.
    assert!(rows > 200, "{rows} table lines");
    for line in md.lines().filter(|l| l.starts_with('|')) {
        assert!(
            line.chars().count() <= 100,
            "{} wide: {line}",
            line.chars().count()
        );
    }
    // Every value is still there: the per-family handoff table's QRec 95% CI column and
    // the matched counts, each part under the row's key.
    let with_key = md
        .lines()
        .filter(|l| l.starts_with("| family    | K      | interface   |"))
        .count();
    assert!(with_key >= 4, "{md}");
    assert!(md.contains("QRec 95% CI"), "{md}");
    // One data2text row per part of each direction's per-family table: its key
    // starts every part.
    let parts = md
        .lines()
        .filter(|l| l.starts_with("| family    | K      | interface   |"))
        .count();
    let rows = md
        .lines()
        .filter(|l| l.starts_with("| data2text | middle | compact_pre |"))
        .count();
    assert_eq!(rows, parts, "{md}");
}

#[test]
fn issue_35_latex_breaks_long_tables_across_pages_and_prints_intervals() {
    // See: issue 35 (a 121-row table in one float, without intervals)
    let report = build(&demo_shaped());
    let tex = report.to_latex();
    assert!(!tex.contains("\\begin{table}"), "{tex}");
    assert!(tex.contains("% needs \\usepackage{booktabs}"));
    assert!(tex.contains("% needs \\usepackage{longtable}"));
    // Anchors, then per direction its per-family and all-families tables, then the
    // restart controls (composed from the escalation rows).
    assert_eq!(tex.matches("\\begin{longtable}").count(), 6);
    assert_eq!(tex.matches("\\end{longtable}").count(), 6);
    for env in ["\\endfirsthead", "\\endhead", "\\endfoot", "\\endlastfoot"] {
        assert_eq!(tex.matches(env).count(), 6, "{env}");
    }
    assert_eq!(
        tex.matches("\\toprule").count(),
        12,
        "first head and later heads"
    );
    assert_eq!(tex.matches("\\bottomrule").count(), 6);
    assert!(
        tex.contains("\\caption{Restart controls (escalation, composed from matched runs).}"),
        "{tex}"
    );
    // Every per-family escalation row is in its table, with its interval.
    let row = report
        .cells
        .iter()
        .find(|r| {
            r.family == "math"
                && r.k.as_deref() == Some("middle")
                && r.interface == "traj_drop"
                && r.direction == Some(baton_types::Direction::Escalation)
        })
        .unwrap();
    let [lo, hi] = row.score_ci.unwrap();
    let cell = format!(
        "{:.1} {{\\scriptsize[{lo:.1}, {hi:.1}]}}",
        row.score.unwrap()
    );
    assert!(
        tex.contains(&format!("math & middle & traj\\_drop & {cell} &")),
        "{cell}\n{tex}"
    );
    let body_rows = tex
        .lines()
        .filter(|l| l.ends_with(" \\\\") && l.matches(" & ").count() == 8)
        .count();
    let handoff_rows = report.cells.iter().filter(|r| !r.is_anchor()).count();
    // The header is printed twice per table (first page, later pages).
    assert_eq!(body_rows, handoff_rows + 2 * 4);
    // Braces balance outside escapes.
    let unescaped = tex.replace("\\{", "").replace("\\}", "");
    assert_eq!(
        unescaped.matches('{').count(),
        unescaped.matches('}').count()
    );
}

/// One data2text task: the anchors 3 points apart (50 and 53), the handoff at 51.
fn small_gap() -> ReportInput {
    let early = esc(SwitchPoint::Early, Interface::Raw);
    ReportInput {
        bootstrap: Some(BootstrapConfig {
            replicates: 20,
            seed: 0,
        }),
        ..input(vec![
            scored("d/0", Family::Data2Text, &lc(), 0, 0.50, 0.01),
            scored("d/0", Family::Data2Text, &hc(), 0, 0.53, 0.05),
            scored("d/0", Family::Data2Text, &early, 0, 0.51, 0.03),
        ])
    }
}

#[test]
fn issue_35_unstable_qrec_is_marked_in_every_format() {
    // See: issue 35 (an all-families QRec of -350 printed unmarked, anchors 4.2 apart)
    let report = build(&small_gap());
    let all = row(
        &report,
        Some(baton_types::Direction::Escalation),
        "all",
        Some("early"),
        "raw",
    );
    // QRec = 100 * (51 - 50) / (53 - 50) = 33.3, over a 3-point gap.
    assert!((all.qrec.unwrap() - 100.0 / 3.0).abs() < 1e-9);
    assert!(all.qrec_unstable);
    let per_family = row(
        &report,
        Some(baton_types::Direction::Escalation),
        "data2text",
        Some("early"),
        "raw",
    );
    assert_eq!(per_family.qrec, None);
    assert!(!per_family.qrec_unstable);

    let md = report.to_markdown();
    let line = md
        .lines()
        .find(|l| l.starts_with("| all    | early"))
        .unwrap();
    assert!(line.contains("| 33.3‡ |"), "{line}");
    assert!(
        md.contains(
            "\n‡ unstable QRec: on this row's units the anchors differ by less than 5 points"
        ),
        "{md}"
    );
    assert!(md.contains("—† QRec omitted"), "{md}");

    let html = report.to_html();
    assert!(html.contains(">33.3‡</td>"), "{html}");
    assert!(html.contains("‡ unstable QRec"), "{html}");

    let tex = report.to_latex();
    assert!(
        tex.contains("all & early & raw & 51.0 {\\scriptsize[51.0, 51.0]} & \\$0.03000 & 33.3 {\\scriptsize[33.3, 33.3]}$^\\ddagger$ &"),
        "{tex}"
    );
    assert!(tex.contains("$^\\ddagger$ Unstable QRec"), "{tex}");
    assert!(tex.contains("$^\\dagger$ QRec omitted"), "{tex}");

    let csv = report.to_csv();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == "qrec_unstable").unwrap();
    let flagged: Vec<&str> = csv
        .lines()
        .filter(|l| l.split(',').nth(at) == Some("true"))
        .collect();
    assert_eq!(flagged.len(), 1, "{csv}");
    assert!(
        flagged[0].starts_with("p,escalation,all,early,raw,"),
        "{csv}"
    );

    let json = report.to_json();
    let unstable: Vec<&serde_json::Value> = json["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["qrec_unstable"] == true)
        .collect();
    assert_eq!(unstable.len(), 1);
    assert_eq!(unstable[0]["family"], "all");
}
