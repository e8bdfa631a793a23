//! Real replies (`../shared/replies`: 4,026 answers real models wrote to LiC tasks, with
//! LiC's verdicts) read by baton's extraction rules.
//!
//! Per family it counts *misses* (LiC judged the reply right, baton scores it 0) and *false
//! credit* (LiC's extractor found an answer and judged it wrong, baton scores it 1), prints
//! both with the rules that fired, and holds them under thresholds set from these files.
//! For actions LiC's extraction is the whole response, so a LiC-wrong reply whose calls sit
//! inside prose can be right: credit there is counted apart (`credit_in_prose`) and only
//! credit on a reply LiC's parser read whole is false credit.
//!
//! For math both rates are printed as percentages with the categories of what is still
//! missed and credited, and held under issue 35's bar (under 3 % missed, under 1 % false
//! credit). A false credit where baton read the very number LiC's extractor read, written
//! with the `$` the reply has and LiC's extractor dropped, is counted apart: LiC's scorer
//! strips `.00` only after a `$` (`rstrip(".00")`), so `$2.00` scores right and `2.00`
//! wrong against a gold `2`; the reading agrees and the verdicts differ by that quirk.

use std::collections::{BTreeMap, HashMap};

use baton_eval::{EvalConfig, Evaluators, Rules};
use baton_types::Family;
use rayon::prelude::*;
use serde_json::Value;

struct Replies {
    replies: Vec<Value>,
    tasks: HashMap<String, Value>,
}

fn load() -> Option<Replies> {
    let dir = baton_fixture::shared_dir("replies")?;
    let text = std::fs::read_to_string(dir.join("replies.jsonl")).expect("readable replies");
    let replies = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON reply"))
        .collect();
    let tasks: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(dir.join("tasks.json")).expect("readable tasks"),
    )
    .expect("a JSON task list");
    let tasks = tasks
        .into_iter()
        .map(|t| (t["task_id"].as_str().expect("task_id").to_owned(), t))
        .collect();
    Some(Replies { replies, tasks })
}

/// LiC's verdict on a reply: `Some(true)` right, `Some(false)` wrong with an answer found,
/// `None` unknown (LiC's extractor found nothing, or LiC gave no verdict).
fn lic_verdict(r: &Value) -> Option<bool> {
    if r["lic_is_correct"] == true || r["lic_score"].as_f64() == Some(1.0) {
        return Some(true);
    }
    let found = r["lic_extracted"].as_str().is_some_and(|s| !s.is_empty());
    let wrong = r["lic_is_correct"] == false || r["lic_score"].as_f64() == Some(0.0);
    (found && wrong).then_some(false)
}

#[derive(Default, Debug)]
struct Tally {
    right: usize,
    missed: usize,
    wrong: usize,
    credited: usize,
    credit_in_prose: usize,
    /// Math: credit where baton read LiC's own number, differing only by a `$`.
    credit_same_number: usize,
    /// What is still missed and credited, by category.
    categories: BTreeMap<String, usize>,
    no_answer: usize,
    rules: BTreeMap<String, usize>,
    examples: Vec<String>,
}

fn tally(replies: &Replies, family: Family, rules: Rules) -> Tally {
    let evaluators = Evaluators::lic(&EvalConfig {
        rules,
        ..EvalConfig::default()
    });
    let name = family.to_string();
    let rows: Vec<(Option<bool>, f64, String, bool, String)> = replies
        .replies
        .par_iter()
        .filter(|r| r["family"] == name.as_str())
        .map(|r| {
            let task = &replies.tasks[r["task_id"].as_str().expect("task_id")];
            let response = r["response"].as_str().expect("response");
            let scored = evaluators
                .score_response(family, response, task)
                .expect("scoring never fails on a reply");
            let rule = scored.verdict.rule.clone().unwrap_or_default();
            (
                lic_verdict(r),
                scored.verdict.score,
                rule,
                scored.verdict.no_answer,
                scored.extracted,
            )
        })
        .collect();
    let mut t = Tally::default();
    for ((lic, score, rule, no_answer, extracted), r) in rows.into_iter().zip(
        replies
            .replies
            .iter()
            .filter(|r| r["family"] == name.as_str()),
    ) {
        *t.rules.entry(rule.clone()).or_default() += 1;
        t.no_answer += usize::from(no_answer);
        match lic {
            Some(true) => {
                t.right += 1;
                if score != 1.0 {
                    t.missed += 1;
                    if family == Family::Math {
                        let gold = gold_of(&replies.tasks[r["task_id"].as_str().unwrap_or("")]);
                        let stated = reply_states(r["response"].as_str().unwrap_or(""), &gold);
                        let what = if no_answer {
                            "no number read".to_owned()
                        } else if stated {
                            format!("the right number is in the reply, {rule} read another")
                        } else {
                            format!(
                                "the reply never writes the gold number (LiC's extractor read a figure that matched), {rule}"
                            )
                        };
                        *t.categories.entry(format!("missed: {what}")).or_default() += 1;
                    }
                    if t.examples.len() < 40 {
                        t.examples.push(format!(
                            "miss {} ({rule}): read {extracted:?}, LiC's {}",
                            r["task_id"], r["lic_extracted"]
                        ));
                    }
                }
            }
            Some(false) => {
                t.wrong += 1;
                if score == 1.0 {
                    if family == Family::Actions && rule != "actions.full_response" {
                        t.credit_in_prose += 1;
                    } else if family == Family::Math
                        && bare(&extracted) == bare(r["lic_extracted"].as_str().unwrap_or(""))
                    {
                        t.credit_same_number += 1;
                        *t.categories
                            .entry(
                                "credited: LiC's own number, its `$` dropped by LiC's extractor"
                                    .into(),
                            )
                            .or_default() += 1;
                    } else {
                        t.credited += 1;
                        if family == Family::Math {
                            *t.categories
                                .entry(format!(
                                    "credited: LiC's extractor read another number, {rule}"
                                ))
                                .or_default() += 1;
                        }
                    }
                }
            }
            None => {}
        }
    }
    t
}

/// The number after the gold solution's `####`.
fn gold_of(task: &Value) -> String {
    let answer = task["answer"].as_str().unwrap_or("");
    bare(answer.rsplit("####").next().unwrap_or(""))
}

/// A number as compared here: no `$`, thousands separators, spaces or final `.`.
fn bare(s: &str) -> String {
    s.trim()
        .trim_end_matches('.')
        .chars()
        .filter(|c| !matches!(c, '$' | ',' | ' '))
        .collect()
}

/// Whether `reply` writes `gold` as a number of its own (with or without separators).
fn reply_states(reply: &str, gold: &str) -> bool {
    let digits: String = reply.chars().filter(|c| !matches!(c, ',' | '$')).collect();
    digits.match_indices(gold).any(|(at, _)| {
        let before = digits[..at].chars().next_back();
        let after = digits[at + gold.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit() || c == '.')
            && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

fn percent(n: usize, of: usize) -> f64 {
    100.0 * n as f64 / of.max(1) as f64
}

fn report(family: Family, rules: Rules, t: &Tally) {
    eprintln!(
        "replies {family} ({rules:?} rules): missed {} of {} LiC-right, false credit {} of {} LiC-wrong{}, no answer {}; rules {:?}",
        t.missed,
        t.right,
        t.credited,
        t.wrong,
        if family == Family::Actions {
            format!(", credit for calls in prose {}", t.credit_in_prose)
        } else {
            String::new()
        },
        t.no_answer,
        t.rules
    );
    if family == Family::Math {
        eprintln!(
            "replies math: missed {:.2} % of right answers; false credit {:.2} % ({} of {}) plus {} ({:.2} % in all) where baton read LiC's own number with its `$`",
            percent(t.missed, t.right),
            percent(t.credited, t.wrong),
            t.credited,
            t.wrong,
            t.credit_same_number,
            percent(t.credited + t.credit_same_number, t.wrong)
        );
        for (category, n) in &t.categories {
            eprintln!("  {n:>3}  {category}");
        }
    }
    for e in &t.examples {
        eprintln!("  {e}");
    }
}

#[test]
fn math_replies_are_read_as_lic_reads_them() {
    let Some(replies) = load() else { return };
    let t = tally(&replies, Family::Math, Rules::Baton);
    report(Family::Math, Rules::Baton, &t);
    assert_eq!((t.right, t.wrong), (632, 1029), "the replies file changed");
    // Issue 35's bar: under 3 % of right answers missed, under 1 % false credit. Before
    // the rules of issue 35 (quotations, recaps, two-unit quantities, abbreviations,
    // qualified labels, restated results): 48 missed (7.6 %), 12 credited (1.17 %: 8, plus
    // 4 on LiC's own number).
    assert!(percent(t.missed, t.right) < 3.0, "{} misses", t.missed);
    assert!(
        percent(t.credited, t.wrong) < 1.0,
        "{} false credits",
        t.credited
    );
    // Pinned at what these rules give, so a change that loses ground shows.
    assert!(t.missed <= 14, "{} misses (was 14)", t.missed);
    assert!(t.credited <= 9, "{} false credits (was 9)", t.credited);
    assert!(
        t.credit_same_number <= 5,
        "{} credits on LiC's own number (was 5)",
        t.credit_same_number
    );
}

#[test]
fn actions_replies_agree_with_lic_and_read_calls_in_prose() {
    let Some(replies) = load() else { return };
    let lic = tally(&replies, Family::Actions, Rules::Lic);
    report(Family::Actions, Rules::Lic, &lic);
    assert_eq!(
        (lic.right, lic.wrong),
        (108, 2077),
        "the replies file changed"
    );
    assert_eq!(
        (lic.missed, lic.credited),
        (0, 0),
        "LiC's rules must agree with LiC"
    );

    let baton = tally(&replies, Family::Actions, Rules::Baton);
    report(Family::Actions, Rules::Baton, &baton);
    assert_eq!(baton.missed, 0, "a reply LiC reads right must stay right");
    assert_eq!(
        baton.credited, 0,
        "credit on a reply LiC's parser read whole"
    );
    assert!(baton.credit_in_prose <= 40, "{}", baton.credit_in_prose);
}
