//! Every table of every report in every format: one cell per header (issue 31), and
//! the agent report and its handoff study as paper-ready as the chat report: LaTeX
//! longtables with intervals and the rules in the foot, Markdown within 100 columns,
//! long cells abbreviated with a legend (issue 35).

use baton_report::{
    AgentEpisodeRecord, AgentExperimentReport, AgentReportInput, EpisodeCalls, Export,
    ExportFormat, PairSpec, ReportInput, SkippedTask, StudyThreshold, build, build_agent,
    build_study,
};
use baton_types::agent::{AgentCell, AgentExit, Difficulty};
use baton_types::{Baseline, Cell, Cost, Direction, EpisodeStatus, Family, Interface, SwitchPoint};

use crate::*;

const LONG_LC: &str = "openai/gpt-4o-mini-2024-07-18";
const LONG_HC: &str = "anthropic/claude-sonnet-4-5-20250929";
const LONG_MC: &str = "google/gemini-2.5-flash-preview-05-20";

/// A failure reason as long as a provider's real ones.
const LONG_REASON: &str = "HTTP 404 from http://127.0.0.1:41234/v1/chat/completions: \
     {\"error\":{\"message\":\"The model `openai/gpt-4o-mini-2024-07-18` does not exist or \
     you do not have access to it.\",\"type\":\"invalid_request_error\"}}";

/// The demo's design with real model names, plus what a real run adds: incomplete and
/// errored episodes with long reasons, skipped tasks, baselines, a second replicate
/// (LiC's metrics), extraction rules, LiC's extraction calls and call counts.
fn realistic_chat() -> ReportInput {
    let mut input = crate::paper::demo_shaped();
    let math: Vec<_> = input
        .episodes
        .iter()
        .filter(|e| e.family == Family::Math)
        .cloned()
        .collect();
    for mut e in math {
        e.replicate = 1;
        e.score = e.score.map(|s| 1.0 - s);
        input.episodes.push(e);
    }
    for e in &mut input.episodes {
        e.rule = Some(
            if e.score == Some(1.0) {
                "boxed"
            } else {
                "last_number"
            }
            .to_owned(),
        );
        // LiC's LLM extractor read the math and database answers; one of them gave none.
        let extracted = matches!(e.family, Family::Math | Family::Database);
        e.calls = EpisodeCalls {
            input_tokens: 1000,
            cache_read_tokens: 250,
            empty_replies: u64::from(e.task_id.ends_with('0')),
            extraction_calls: u64::from(extracted),
            extraction_cost: Cost::from_usd(if extracted { 0.00002 } else { 0.0 }),
            extraction_failed: u64::from(extracted && e.task_id.ends_with('5')),
            ..EpisodeCalls::default()
        };
    }
    for t in 0..6u32 {
        let task = format!("math/{t}");
        input.episodes.push(scored(
            &task,
            Family::Math,
            &Cell::baseline(LONG_LC, Baseline::Full),
            0,
            f64::from(t % 2),
            0.002,
        ));
    }
    input.episodes.push(unfinished(
        "code/9",
        Family::Code,
        &Cell::handoff(LONG_LC, LONG_HC, SwitchPoint::Early, Interface::Raw),
        0,
        EpisodeStatus::Errored,
        LONG_REASON,
    ));
    input.episodes.push(unfinished(
        "code/9",
        Family::Code,
        &Cell::single(LONG_LC),
        0,
        EpisodeStatus::Incomplete,
        "not run yet",
    ));
    input.skipped_tasks = vec![SkippedTask {
        task_id: "database/77".to_owned(),
        reason: "its SQLite file `spider/database/concert_singer/concert_singer.sqlite` is \
                 missing from the dataset folder given with --data"
            .to_owned(),
    }];
    input
}

/// Two models over three buckets, every exit status, incomplete episodes with a long
/// reason; the study of `crate::study::input` with real model names and its switch calls.
fn realistic_agent() -> AgentExperimentReport {
    let mut episodes = Vec::new();
    for (m, model) in [LONG_LC, LONG_HC].into_iter().enumerate() {
        for (b, bucket) in ["easy", "medium", "hard"].into_iter().enumerate() {
            for (i, exit) in AgentExit::ALL.iter().enumerate() {
                let steps = 3 + (m + b + i) as u32 * 4;
                episodes.push(AgentEpisodeRecord {
                    task_id: format!("{bucket}-{i}"),
                    model: model.to_owned(),
                    bucket: bucket.to_owned(),
                    replicate: 0,
                    exit: Some(exit.name().to_owned()),
                    resolved: Some((m + i).is_multiple_of(2)),
                    steps,
                    paid: Cost::from_usd(0.0021 * f64::from(steps)),
                    reason: None,
                });
            }
            episodes.push(AgentEpisodeRecord {
                task_id: format!("{bucket}-x"),
                model: model.to_owned(),
                bucket: bucket.to_owned(),
                replicate: 1,
                exit: None,
                resolved: None,
                steps: 2,
                paid: Cost::from_usd(0.004),
                reason: Some(LONG_REASON.to_owned()),
            });
        }
    }
    let agent = build_agent(&AgentReportInput {
        title: "agent handoffs".to_owned(),
        simulated: false,
        episodes,
    });
    let rename = |m: &str| if m == "lc" { LONG_LC } else { LONG_HC }.to_owned();
    let mut input = crate::study::input(50);
    input.pairs = vec![(LONG_LC.to_owned(), LONG_HC.to_owned())];
    for e in &mut input.episodes {
        e.cell = match &e.cell {
            AgentCell::Single { model } => AgentCell::single(rename(model)),
            AgentCell::AgentHandoff {
                sender,
                receiver,
                p,
                interface,
                independent,
            } => AgentCell::handoff(
                rename(sender),
                rename(receiver),
                *p,
                *interface,
                *independent,
            ),
        };
    }
    input.thresholds = [(10, 4), (50, 9)]
        .into_iter()
        .map(|(p, s)| StudyThreshold {
            pair: format!("{LONG_LC}/{LONG_HC}"),
            direction: Direction::Escalation,
            bucket: Difficulty::Easy,
            p,
            s,
        })
        .collect();
    let study = build_study(&input).expect("the fixture reconciles");
    AgentExperimentReport {
        agent,
        study: Some(study),
    }
}

/// The number of cells of a Markdown table line: its unescaped `|`s, less one.
fn markdown_cells(line: &str) -> usize {
    let mut n = 0;
    let mut escaped = false;
    for c in line.chars() {
        if c == '|' && !escaped {
            n += 1;
        }
        escaped = c == '\\' && !escaped;
    }
    n - 1
}

/// Each Markdown table (a run of lines starting with `|`) as its cell counts per line.
fn markdown_tables(md: &str) -> Vec<Vec<usize>> {
    let mut tables: Vec<Vec<usize>> = Vec::new();
    let mut in_table = false;
    for line in md.lines() {
        if line.starts_with('|') {
            if !in_table {
                tables.push(Vec::new());
            }
            tables.last_mut().unwrap().push(markdown_cells(line));
            in_table = true;
        } else {
            in_table = false;
        }
    }
    tables
}

/// The fields of each CSV record (RFC 4180 quoting; no field here holds a newline).
fn csv_field_counts(csv: &str) -> Vec<usize> {
    csv.lines()
        .map(|line| {
            let mut n = 1;
            let mut quoted = false;
            for c in line.chars() {
                match c {
                    '"' => quoted = !quoted,
                    ',' if !quoted => n += 1,
                    _ => {}
                }
            }
            n
        })
        .collect()
}

/// Each HTML table as the number of `<th>`/`<td>` cells in each of its rows.
fn html_tables(html: &str) -> Vec<Vec<usize>> {
    html.split("<table")
        .skip(1)
        .map(|t| {
            let t = &t[..t.find("</table>").expect("a closed table")];
            t.split("<tr")
                .skip(1)
                .map(|row| {
                    let row = &row[..row.find("</tr>").expect("a closed row")];
                    ["<th>", "<th ", "<td>", "<td "]
                        .iter()
                        .map(|tag| row.matches(tag).count())
                        .sum()
                })
                .collect()
        })
        .collect()
}

/// The `&`s of a LaTeX line that separate cells (not `\&`).
fn latex_separators(line: &str) -> usize {
    let mut n = 0;
    let mut prev = ' ';
    for c in line.chars() {
        if c == '&' && prev != '\\' {
            n += 1;
        }
        prev = c;
    }
    n
}

/// The number of columns of the longtable spec `t` starts with (up to its closing
/// brace): its `l`, `r`, `c` and `p{width}` columns.
fn spec_columns(t: &str) -> usize {
    let mut depth = 0;
    let mut columns = 0;
    for c in t.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return columns,
            '}' => depth -= 1,
            'l' | 'r' | 'c' | 'p' if depth == 0 => columns += 1,
            _ => {}
        }
    }
    panic!("an unclosed column spec: {t}")
}

/// Each longtable as (columns of its spec, cells of its header and of each row).
fn latex_tables(tex: &str) -> Vec<(usize, Vec<usize>)> {
    tex.split("\\begin{longtable}{")
        .skip(1)
        .map(|t| {
            let t = &t[..t.find("\\end{longtable}").expect("a closed longtable")];
            let columns = spec_columns(t);
            let head = t
                .split("\\toprule\n")
                .nth(1)
                .and_then(|h| h.lines().next())
                .expect("a header line");
            let body = t.split("\\endlastfoot\n").nth(1).expect("a body");
            let counts = std::iter::once(head)
                .chain(body.lines())
                .map(|l| latex_separators(l) + 1)
                .collect();
            (columns, counts)
        })
        .collect()
}

/// Every table of `report` in every format it is written in has one cell per header
/// in every row; returns how many tables were checked per format.
fn check_every_format(report: &dyn Export, name: &str) -> [usize; 4] {
    let md = report.export(ExportFormat::Markdown).unwrap();
    let tables = markdown_tables(&md);
    for t in &tables {
        assert!(t.iter().all(|&n| n == t[0]), "{name} md: {t:?}\n{md}");
    }
    let html = report.export(ExportFormat::Html).unwrap();
    let html_tables = html_tables(&html);
    for t in &html_tables {
        assert!(t.iter().all(|&n| n == t[0]), "{name} html: {t:?}");
    }
    let tex = report.export(ExportFormat::Latex).unwrap();
    let latex = latex_tables(&tex);
    for (columns, t) in &latex {
        assert!(
            t.iter().all(|n| n == columns),
            "{name} latex: {columns} {t:?}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&report.export(ExportFormat::Json).unwrap()).unwrap();
    let mut arrays = 0;
    check_json(&json, &mut arrays, name);
    assert!(arrays > 0);
    if let Ok(csv) = report.export(ExportFormat::Csv) {
        let counts = csv_field_counts(&csv);
        assert!(counts.len() > 1, "{name} csv");
        assert!(counts.iter().all(|&n| n == counts[0]), "{name} csv");
    }
    [tables.len(), html_tables.len(), latex.len(), arrays]
}

/// Every array of objects in `v` is a table: its objects' keys come in one order, each
/// object's keys a subsequence of the widest one's (a value the rules leave out, such
/// as LiC's metrics of a single-replicate row, is left out of its object).
fn check_json(v: &serde_json::Value, arrays: &mut usize, name: &str) {
    match v {
        serde_json::Value::Array(items) => {
            let keys = |o: &serde_json::Value| {
                o.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>())
            };
            if items.first().and_then(keys).is_some() {
                *arrays += 1;
                let all: Vec<Vec<String>> = items
                    .iter()
                    .map(|i| keys(i).unwrap_or_else(|| panic!("{name} json: {i}")))
                    .collect();
                let widest = all.iter().max_by_key(|k| k.len()).unwrap();
                for k in &all {
                    let mut rest = widest.iter();
                    assert!(
                        k.iter().all(|key| rest.any(|w| w == key)),
                        "{name} json: {k:?} not in the order of {widest:?}"
                    );
                }
            }
            for item in items {
                check_json(item, arrays, name);
            }
        }
        serde_json::Value::Object(o) => {
            for item in o.values() {
                check_json(item, arrays, name);
            }
        }
        _ => {}
    }
}

// See: issue 31 (the exit-status table had 9 cells under 8 headers)
#[test]
fn issue_31_every_table_has_one_cell_per_header_in_every_format() {
    let chat = build(&realistic_chat());
    assert!(!chat.baselines.is_empty() && !chat.restart_controls.is_empty());
    assert!(chat.cells.iter().any(|r| r.aptitude.is_some()));
    assert!(chat.extraction.is_some() && !chat.extraction_rules.is_empty());
    // Anchors, 2 directions x 2 tables, baselines, LiC metrics, restart controls,
    // incomplete, skipped, calls, answer extraction, extraction rules, each Markdown
    // table in one part or more.
    let [md, html, tex, json] = check_every_format(&chat, "chat");
    assert!(md >= 15, "{md} Markdown tables");
    assert_eq!(html, 13, "HTML tables");
    assert_eq!(
        tex, 10,
        "anchors, 2 directions x 2 tables, baselines, LiC metrics, restart controls, \
         incomplete, skipped"
    );
    // The baselines in LaTeX: the degradation with its interval in one cell.
    let full = chat
        .baselines
        .iter()
        .find(|b| b.family == "math" && b.interface == "full")
        .unwrap();
    let [lo, hi] = full.degradation_ci.expect("a degradation interval");
    let latex = chat.to_latex();
    let row = latex
        .lines()
        .find(|l| l.starts_with(&format!("{} & math & full & ", LONG_LC)))
        .expect("the math full baseline row");
    let (d, lo, hi) = (full.degradation.unwrap(), lo, hi);
    assert!(
        row.contains(&format!(" & {d:.1} {{\\scriptsize[{lo:.1}, {hi:.1}]}} & ")),
        "{row}"
    );
    assert!(json >= 3, "{json} JSON arrays");
    let csv = chat.to_csv();
    assert_eq!(
        csv.lines().count(),
        1 + chat.cells.len() + chat.baselines.len()
    );

    let agent = realistic_agent();
    let [md, html, tex, json] = check_every_format(&agent, "agent");
    // The agent report's 3 tables and the study's 8 (in Markdown, in parts).
    assert!(md > 11, "{md} Markdown tables");
    assert_eq!((html, tex), (11, 11));
    assert!(json >= 9, "{json} JSON arrays");
    // The exit-status table in Markdown: every status under its own header.
    let md = agent.export(ExportFormat::Markdown).unwrap();
    let exit = md
        .lines()
        .find(|l| l.starts_with("| model") && l.contains("snapshot_limit"))
        .expect("an exit-status part with snapshot_limit");
    assert!(
        exit.ends_with("| bucket | snapshot_limit | incomplete |"),
        "{exit}"
    );
    assert!(
        md.contains(&format!(
            "| {LONG_HC} | easy   |              1 |          1 |\n"
        )),
        "{md}"
    );
}

/// The agent report and its study in LaTeX: booktabs longtables, a value and its
/// interval in one cell, the rules in each table's last foot.
// See: issue 35 (paper-ready output)
#[test]
fn issue_35_agent_and_study_latex_have_longtables_intervals_and_rules() {
    let report = realistic_agent();
    let tex = report.export(ExportFormat::Latex).unwrap();
    assert!(tex.starts_with("% agent handoffs (agent)\n% needs \\usepackage{booktabs}\n"));
    assert_eq!(tex.matches("\\begin{longtable}").count(), 11);
    assert_eq!(tex.matches("\\toprule").count(), 22, "first head and head");
    // The main table: model, bucket and 7 numbers; dollars escaped.
    assert!(
        tex.contains(
            "\\begin{longtable}{llrrrrrrr}\n\\caption{Resolve rate and cost per model and bucket.}"
        ),
        "{tex}"
    );
    assert!(
        tex.contains("model & bucket & finished & incomplete & resolved & resolve rate & \\$ / task & steps & \\$ / step \\\\"),
        "{tex}"
    );
    // Exit statuses: 2 + 6 statuses + incomplete, each row 2 finished per status.
    assert!(
        tex.contains(
            "model & bucket & submitted & step\\_limit & cost\\_limit & format\\_errors & error & snapshot\\_limit & incomplete \\\\"
        ),
        "{tex}"
    );
    assert!(
        tex.contains(
            "anthropic/claude-sonnet-4-5-20250929 & easy & 1 & 1 & 1 & 1 & 1 & 1 & 1 \\\\"
        ),
        "{tex}"
    );
    assert!(
        tex.contains(
            "\\multicolumn{9}{p{0.95\\linewidth}}{Incomplete episodes are not counted as unresolved; their spend is kept apart.} \\\\"
        ),
        "{tex}"
    );
    assert!(
        tex.contains(
            "\\item anthropic/claude-sonnet-4-5-20250929 on easy-x (replicate 1): HTTP 404"
        )
    );
    // Table 1 of the study: 16 Markdown columns, 13 in LaTeX (each interval in its
    // value's cell): raw escalation's CSRet 57.5 with its bootstrap interval.
    let study = report.study.as_ref().unwrap();
    let raw = study
        .table1
        .iter()
        .find(|r| r.direction == "escalation" && r.interface == "raw")
        .unwrap();
    let [lo, hi] = raw.csret_ci.expect("an interval");
    let cell = format!("57.5 {{\\scriptsize[{lo:.1}, {hi:.1}]}}");
    let table1 = tex
        .split("\\begin{longtable}")
        .find(|t| t.contains("Handoff study: Table 1"))
        .unwrap();
    assert!(table1.starts_with("{lllllrrrrrrrr}"), "{table1}");
    assert!(
        table1.contains("pair & direction & interface & p & window & n & fired & unfired & matched & pass rate & \\$ / task & QRec & CSRet \\\\"),
        "{table1}"
    );
    let row = table1
        .lines()
        .find(|l| l.contains("& escalation & raw & avg & all &"))
        .unwrap();
    assert!(row.ends_with(&format!("{cell} \\\\")), "{row}");
    assert!(
        row.contains("& 50.0\\% {\\scriptsize[")
            && row.starts_with("LC/HC & escalation & raw & avg & all & 8 & 7 & 1 & 6 & "),
        "{row}"
    );
    // The foot: the audit and what a dash means, code in \texttt.
    assert!(
        table1.contains("\\multicolumn{13}{p{0.95\\linewidth}}{A -- is a value the rules leave out: QRec where the anchors differ by less than 5 points on the row's units (\\texttt{qrec\\_omitted\\_reason} in JSON)"),
        "{table1}"
    );
    assert!(table1.contains("}{Cost audit: prefix + handoff + suffix reconcile"));
    // Unicode of the Markdown headers becomes LaTeX.
    assert!(tex.contains("\\$/step $\\div$ compact\\_pre"), "{tex}");
    assert!(tex.contains("$\\Delta$ pass rate (pts)"), "{tex}");
    assert!(!tex.contains('—') && !tex.contains('–'), "{tex}");
}

/// Every table line of the agent report and its study fits 100 columns with real model
/// names; the incomplete episodes' long reasons stay whole in the list.
// See: issue 35 (terminal tables up to 195 columns)
#[test]
fn issue_35_agent_markdown_fits_100_columns() {
    let md = realistic_agent().export(ExportFormat::Markdown).unwrap();
    let lines: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert!(lines.len() > 60, "{md}");
    for line in &lines {
        assert!(
            line.chars().count() <= 100,
            "{} wide: {line}",
            line.chars().count()
        );
    }
    // The study's pair (66 characters) is LC/HC in its cells, named under the audit.
    assert!(
        md.contains(&format!(
            "In the tables the pair LC/HC is `{LONG_LC}/{LONG_HC}`.\n"
        )),
        "{md}"
    );
    assert!(
        md.contains("| LC/HC | escalation | raw         | avg | all    |   8 |"),
        "{md}"
    );
    // The model names (36 characters) stay whole as the agent tables' key.
    assert!(
        md.contains(&format!("| {LONG_HC} | easy   |         1 |          1 |")),
        "{md}"
    );
    assert!(
        md.contains(&format!("(replicate 1): {LONG_REASON}")),
        "{md}"
    );
}

/// Several pairs of long model names and long error reasons: cell names use M1, M2, …
/// (named in the method paragraph) and a reason too long for any part is abbreviated,
/// whole in the legend under its table.
// See: issue 35 (terminal tables up to 195 columns)
#[test]
fn issue_35_long_names_and_reasons_fit_100_columns() {
    let mut input = realistic_chat();
    input.pairs.push(PairSpec {
        name: "gpt-4o-mini/gemini-flash".to_owned(),
        lc: LONG_LC.to_owned(),
        hc: LONG_MC.to_owned(),
    });
    input.episodes.push(scored(
        "code/0",
        Family::Code,
        &Cell::single(LONG_MC),
        0,
        1.0,
        0.004,
    ));
    input.episodes.push(unfinished(
        "code/1",
        Family::Code,
        &Cell::handoff(LONG_MC, LONG_LC, SwitchPoint::Late, Interface::Disclosure),
        0,
        EpisodeStatus::Errored,
        LONG_REASON,
    ));
    let report = build(&input);
    let md = report.to_markdown();
    for line in md.lines().filter(|l| l.starts_with('|')) {
        assert!(
            line.chars().count() <= 100,
            "{} wide: {line}",
            line.chars().count()
        );
    }
    assert!(
        md.contains(&format!(
            "In cell names M1 is `{LONG_LC}`, M2 is `{LONG_HC}` and M3 is `{LONG_MC}`."
        )),
        "{md}"
    );
    let incomplete = md
        .split("## Incomplete and errored episodes")
        .nth(1)
        .and_then(|s| s.split("## Tasks left out").next())
        .unwrap();
    // Too wide for one part: the reason reads in a second part under the same key
    // (task and cell), cut to fit.
    assert!(
        incomplete.contains(
            "| code/1 | handoff(M3 -> M1, late, disclosure) |         0 | errored    |\n"
        ),
        "{incomplete}"
    );
    assert!(
        incomplete.contains(
            "| code/1 | handoff(M3 -> M1, late, disclosure) | HTTP 404 from http://127.0.0.1:41234/v1/chat… [1] |\n"
        ),
        "{incomplete}"
    );
    // The legend: the reason once, for both rows, wrapped at 100 columns.
    let legend: Vec<&str> = incomplete
        .lines()
        .skip_while(|l| !l.starts_with("- [1] "))
        .take_while(|l| l.starts_with("- [") || l.starts_with("  "))
        .collect();
    let whole: Vec<&str> = legend.iter().map(|l| l.trim()).collect();
    assert_eq!(whole.join(" "), format!("- [1] {LONG_REASON}"));
    assert!(
        legend.iter().all(|l| l.chars().count() <= 100),
        "{legend:?}"
    );
    assert_eq!(incomplete.matches("… [1] |").count(), 2, "{incomplete}");
    // The HTML and CSV keep the whole reason and model names.
    assert!(
        report
            .to_html()
            .contains("does not exist or you do not have access")
    );
    assert!(report.to_csv().contains(&format!(
        "\"handoff({LONG_MC} -> {LONG_LC}, late, disclosure)\""
    )));
}

/// The chat report's HTML has the Markdown report's calls, answer-extraction and
/// extraction-rules tables, row for row.
// See: issue 35 (the HTML report lacked three of the Markdown report's tables)
#[test]
fn issue_35_chat_html_has_the_calls_extraction_and_rules_tables() {
    let chat = build(&realistic_chat());
    let html = chat.to_html();
    let md = chat.to_markdown();
    // Each section's table, as its rows' cells (header row first).
    let section = |id: &str| -> Vec<Vec<String>> {
        let start = html
            .find(&format!("<h2 id=\"{id}\">"))
            .unwrap_or_else(|| panic!("no section {id}"));
        let rest = &html[start..];
        let table = &rest[..rest.find("</table>").unwrap()];
        table
            .split("<tr>")
            .skip(1)
            .map(|row| {
                row.split("</t")
                    .filter_map(|c| c.rsplit_once('>').map(|(_, text)| text.to_owned()))
                    .filter(|c| !c.trim().is_empty())
                    .collect()
            })
            .collect()
    };
    for (id, heading) in [
        ("calls", "Calls per cell"),
        ("extraction", "Answer extraction (LiC&#39;s LLM extractor)"),
        ("extraction-rules", "Extraction rules"),
    ] {
        assert!(
            html.contains(&format!("<h2 id=\"{id}\">{heading}</h2>")),
            "{id}"
        );
        assert!(
            html.contains(&format!("<a href=\"#{id}\">")),
            "{id} in contents"
        );
    }
    // Calls: every handoff and anchor row with calls, its cache share as Markdown has it.
    let calls = section("calls");
    assert_eq!(
        calls[0],
        ["pair", "family", "cell", "cache share %", "empty", "cut"]
    );
    let with_calls = chat
        .cells
        .iter()
        .filter(|r| r.cell.is_some() && r.cache_read_share.is_some())
        .count();
    assert_eq!(calls.len() - 1, with_calls);
    assert!(calls[1..].iter().all(|r| r[3] == "25.0"), "{calls:?}");
    // Answer extraction: the math and database rows, the total in the intro, as in
    // Markdown.
    let extraction = section("extraction");
    assert_eq!(
        extraction[0],
        ["pair", "family", "cell", "calls", "failed", "cost $"]
    );
    let extracted = chat
        .cells
        .iter()
        .filter(|r| r.cell.is_some() && r.extraction_calls > 0)
        .count()
        + chat
            .baselines
            .iter()
            .filter(|b| b.family != "all" && b.extraction_calls > 0)
            .count();
    assert_eq!(extraction.len() - 1, extracted);
    assert!(
        extraction[1..]
            .iter()
            .all(|r| r[1] == "math" || r[1] == "database"),
        "{extraction:?}"
    );
    let total = chat.extraction.as_ref().unwrap();
    let sentence = format!(
        "Its spend is not in the cells&#39; costs: {} calls, ${:.6} in all; {} extraction(s) gave no answer",
        total.extraction_calls, total.extraction_cost_usd, total.extraction_failed
    );
    assert!(html.contains(&sentence), "{sentence}");
    assert!(md.contains(&sentence.replace("&#39;", "'")));
    // Extraction rules: one row per (family, cell, rule), the counts of the report.
    let rules = section("extraction-rules");
    assert_eq!(rules[0], ["family", "cell", "rule", "replies", "no answer"]);
    assert_eq!(rules.len() - 1, chat.extraction_rules.len());
    for (row, rule) in rules[1..].iter().zip(&chat.extraction_rules) {
        assert_eq!(
            (row[0].as_str(), row[2].as_str(), row[3].clone()),
            (rule.family.as_str(), rule.rule.as_str(), rule.n.to_string())
        );
    }
    assert!(html.contains("(<code>evaluators/README.md</code> lists them)"));
}

/// The LaTeX export lists the incomplete and errored episodes and the tasks left out, as
/// the Markdown report does: escaped, their reasons in a wrapping column, the short cell
/// names explained; a report without any says so in a comment.
// See: issue 35 (the LaTeX export had no incomplete or skipped list)
#[test]
fn issue_35_latex_lists_incomplete_episodes_and_skipped_tasks() {
    let chat = build(&realistic_chat());
    let tex = chat.to_latex();
    let table = |caption: &str| -> &str {
        let start = tex
            .find(&format!("\\caption{{{caption}.}}"))
            .unwrap_or_else(|| panic!("no table {caption}\n{tex}"));
        let begin = tex[..start].rfind("\\begin{longtable}").unwrap();
        let end = start + tex[start..].find("\\end{longtable}").unwrap();
        &tex[begin..end]
    };
    let incomplete = table("Incomplete and errored episodes (excluded from every metric)");
    assert!(
        incomplete.starts_with("\\begin{longtable}{llrlp{0.4\\linewidth}}\n"),
        "{incomplete}"
    );
    assert!(
        incomplete.contains("\\toprule\ntask & cell & replicate & status & reason \\\\\n"),
        "{incomplete}"
    );
    let body: Vec<&str> = incomplete
        .split("\\endlastfoot\n")
        .nth(1)
        .unwrap()
        .lines()
        .collect();
    assert_eq!(body.len(), chat.incomplete.len());
    let reason = "HTTP 404 from http://127.0.0.1:41234/v1/chat/completions: \
                  \\{\"error\":\\{\"message\":\"The model `openai/gpt-4o-mini-2024-07-18` \
                  does not exist or you do not have access to it.\",\
                  \"type\":\"invalid\\_request\\_error\"\\}\\}";
    assert!(
        body.contains(&format!(
            "code/9 & handoff(LC -\\textgreater{{}} HC, early, raw) & 0 & errored & {reason} \\\\"
        )
        .as_str()),
        "{body:#?}"
    );
    assert!(
        body.contains(&"code/9 & single(LC) & 0 & incomplete & not run yet \\\\"),
        "{body:#?}"
    );
    assert!(
        incomplete.contains(&format!(
            "{{In cell names LC is \\texttt{{{LONG_LC}}} and HC is \\texttt{{{LONG_HC}}}.}} \\\\\n"
        )),
        "{incomplete}"
    );
    let skipped = table("Tasks left out (never run, not in any metric)");
    assert!(
        skipped.starts_with("\\begin{longtable}{lp{0.7\\linewidth}}\n"),
        "{skipped}"
    );
    assert!(
        skipped.ends_with(
            "\\endlastfoot\ndatabase/77 & its SQLite file \
             `spider/database/concert\\_singer/concert\\_singer.sqlite` is missing from the \
             dataset folder given with --data \\\\\n"
        ),
        "{skipped}"
    );
    // Braces balance outside escapes.
    let unescaped = tex.replace("\\{", "").replace("\\}", "");
    assert_eq!(
        unescaped.matches('{').count(),
        unescaped.matches('}').count()
    );

    // Nothing incomplete, nothing left out: a comment, no table.
    let clean = build(&crate::paper::demo_shaped()).to_latex();
    assert!(
        clean.contains("\n% Incomplete and errored episodes (excluded from every metric): none.\n"),
        "{clean}"
    );
    assert!(!clean.contains("Tasks left out"));
}
