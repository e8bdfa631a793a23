//! The hostile-output suite: every family's evaluator, through the same [`Evaluators`]
//! registry that runs and `baton score` use, fed huge, deep and malformed final replies.
//! Each must end in a verdict (never a panic, an abort or a setup error), with a reason
//! when it fails, within a bounded time.
//!
//! The crates behind each family have their own, finer suites (`baton-bfcl`,
//! `baton-spider` and `baton-sandbox` `tests/it/hostile.rs`); this one checks that the
//! bounds hold end to end, on the registry's scoring thread, for extraction and scoring
//! together.
//!
//! See: issue 9 ("Hostile model output aborts the process").

use std::time::{Duration, Instant};

use baton_eval::{EvalConfig, Evaluators};
use baton_sandbox::GraderConfig;
use baton_types::{Family, Verdict};

use serde_json::{Value, json};

/// The bound on one verdict: generous for an unoptimised build on a busy 2-core machine
/// (a 10 MB reply takes tens of seconds there), tighter for an optimised one.
const BOUND: Duration = Duration::from_secs(if cfg!(debug_assertions) { 150 } else { 20 });

/// Ten megabytes.
const TEN_MB: usize = 10 << 20;
const ONE_MB: usize = 1 << 20;

fn evaluators(spider_dir: std::path::PathBuf) -> Evaluators {
    Evaluators::lic(&EvalConfig {
        spider_dir,
        query_timeout: Duration::from_secs(2),
        database_budget: Duration::from_secs(5),
        code: GraderConfig {
            test_time_limit: Duration::from_secs(2),
            extract_time_limit: Duration::from_secs(10),
            ..GraderConfig::default()
        },
        ..EvalConfig::default()
    })
}

/// Score every reply and check each ends in a verdict in bounded time. A
/// reply expected to fail must score 0 with a reason; the others must score in `0..=1`.
fn assert_verdicts(
    evaluators: &Evaluators,
    family: Family,
    sample: &Value,
    replies: &[(&str, String, bool)],
) {
    let failures: Vec<String> = replies
        .iter()
        .filter_map(|(name, reply, must_fail)| {
            let started = Instant::now();
            let scored = evaluators.score_response(family, reply, sample);
            let elapsed = started.elapsed();
            let verdict: Verdict = match scored {
                Ok(s) => s.verdict,
                Err(e) => return Some(format!("{family} {name}: no verdict: {e:#}")),
            };
            if elapsed > BOUND {
                return Some(format!("{family} {name}: took {elapsed:?}"));
            }
            if !(0.0..=1.0).contains(&verdict.score) {
                return Some(format!("{family} {name}: score {}", verdict.score));
            }
            if *must_fail
                && (verdict.score != 0.0 || (verdict.error.is_none() && verdict.details.is_null()))
            {
                return Some(format!(
                    "{family} {name}: expected 0 with a reason, got {} {:?}",
                    verdict.score, verdict.error
                ));
            }
            if let Some(error) = &verdict.error
                && error.len() > 4096
            {
                return Some(format!(
                    "{family} {name}: a {} byte reason repeats the reply",
                    error.len()
                ));
            }
            if std::env::var_os("BATON_TIMINGS").is_some() {
                eprintln!("{family} {name}: {elapsed:?} {:?}", verdict.error);
            }
            None
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Replies every family must survive (whatever it makes of them).
fn common_replies() -> Vec<(&'static str, String, bool)> {
    vec![
        ("empty", String::new(), true),
        ("10 MB of one letter", "a".repeat(TEN_MB), true),
        ("10 MB of digits", "9".repeat(TEN_MB), true),
        ("1 MB of newlines", "\n".repeat(ONE_MB), true),
        ("1 MB of one word", "word ".repeat(ONE_MB / 5), true),
        ("deep brackets", "[".repeat(1_000_000), true),
        ("deep parentheses", "(".repeat(1_000_000), true),
        ("deep braces", "{".repeat(1_000_000), true),
        ("not not not", "not ".repeat(100_000), true),
        (
            "unterminated fence",
            format!("```python\n{}", "x".repeat(1000)),
            true,
        ),
        (
            "control characters",
            "\u{0}\u{1b}[2J\u{7f}\u{feff}\u{202e}".repeat(1000),
            true,
        ),
        ("lone backslashes", "\\".repeat(100_001), true),
        ("quotes", "'\"".repeat(500_000), true),
        (
            "many fences",
            "```python\ndef f(:\n```\n".repeat(100_000),
            true,
        ),
    ]
}

#[test]
fn math_survives_hostile_replies() {
    let sample = json!({"answer": "Half of 8 is 4.\n#### 4"});
    let mut replies = common_replies();
    replies.extend([
        ("deep boxed", "\\boxed{".repeat(200_000), true),
        ("boxed bomb", "\\boxed{{}".repeat(200_000), true),
        ("answer lines", "The answer is: 5\n".repeat(500_000), true),
        ("dollars", "$".repeat(ONE_MB), true),
        ("commas and dots", ",.".repeat(ONE_MB / 2), true),
        (
            "a giant number",
            format!("The answer is {}", "4".repeat(ONE_MB)),
            true,
        ),
        (
            "right at the end",
            format!("{}\n#### 4\nThe answer is 4", "x".repeat(ONE_MB)),
            false,
        ),
    ]);
    assert_verdicts(
        &evaluators("missing".into()),
        Family::Math,
        &sample,
        &replies,
    );
}

#[test]
fn data2text_survives_hostile_replies() {
    let sample = json!({"references": ["Naomi Osaka won the 2018 US Open."]});
    let mut replies: Vec<_> = common_replies()
        .into_iter()
        // BLEU may give a tiny positive score to text sharing a token with a reference.
        .map(|(name, reply, _)| (name, reply, false))
        .collect();
    replies.extend([
        (
            "1 MB of the reference",
            "Naomi Osaka won the 2018 US Open. ".repeat(30_000),
            false,
        ),
        ("one huge token", "Osaka".repeat(200_000), false),
        ("punctuation storm", ".,-!?\"&()".repeat(100_000), false),
        (
            "unicode whitespace",
            "\u{2028}\u{3000}\u{85}".repeat(100_000),
            false,
        ),
    ]);
    assert_verdicts(
        &evaluators("missing".into()),
        Family::Data2Text,
        &sample,
        &replies,
    );
}

#[test]
fn actions_survive_hostile_replies() {
    let sample = json!({
        "function": [{"name": "f", "parameters": {"type": "dict",
            "properties": {"x": {"type": "integer"}}, "required": ["x"]}}],
        "reference_answer": [{"f": {"x": [1]}}],
        "language": "Python",
        "test_category": "parallel",
    });
    let mut replies = common_replies();
    replies.extend([
        // The two bombs of issue 9.
        (
            "300,000 minus",
            format!("[f(x={}1)]", "-".repeat(300_000)),
            true,
        ),
        (
            "100,000 not",
            format!("[f(x={}1)]", "not ".repeat(100_000)),
            true,
        ),
        (
            "deep list",
            format!("[f(x={}1{})]", "[".repeat(100_000), "]".repeat(100_000)),
            true,
        ),
        (
            "deep calls",
            format!("[f(x={}1{})]", "g(".repeat(100_000), ")".repeat(100_000)),
            true,
        ),
        (
            "deep lambdas",
            format!("[f(x={}1)]", "lambda: ".repeat(100_000)),
            true,
        ),
        (
            "left-deep sum",
            format!("[f(x={}1)]", "1+".repeat(1_000_000)),
            true,
        ),
        (
            "power tower",
            format!("[f(x={}9)]", "9**".repeat(100)),
            true,
        ),
        (
            "giant product",
            format!("[f(x={})]", vec!["(1<<60000)"; 1000].join("*")),
            true,
        ),
        ("giant shift", "[f(x=1<<(1<<40))]".into(), true),
        (
            "giant literal",
            format!("[f(x={})]", "7".repeat(TEN_MB)),
            true,
        ),
        (
            "10 MB string",
            format!("[f(x='{}')]", "s".repeat(TEN_MB)),
            true,
        ),
        ("string times", "[f(x='s' * 10**12)]".into(), true),
        ("list times", "[f(x=[[0] * 10**6] * 10**6)]".into(), true),
        (
            "unterminated string",
            format!("[f(x='{}", "s".repeat(1000)),
            true,
        ),
        ("unterminated call", "[f(x=".repeat(100_000), true),
        (
            "deep f-string",
            format!("[f(x=f'{{{}1}}')]", "-".repeat(300_000)),
            true,
        ),
        (
            "a million calls",
            format!("[{}]", vec!["f(x=2)"; 1_000_000].join(", ")),
            true,
        ),
        ("the right answer", "[f(x=1)]".into(), false),
    ]);
    assert_verdicts(
        &evaluators("missing".into()),
        Family::Actions,
        &sample,
        &replies,
    );
}

#[test]
fn database_survives_hostile_replies() {
    let Some(conformance) = baton_fixture::shared_dir("conformance") else {
        return;
    };
    let sample = json!({
        "db_id": "music_festival",
        "reference_sql": "SELECT name FROM artist WHERE country = 'France' AND age > 30",
    });
    let wrap = |sql: &str| format!("```sql\n{sql}\n```");
    let mut replies = common_replies();
    replies.extend([
        (
            "endless recursion",
            wrap("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"),
            true,
        ),
        (
            "cross join bomb",
            wrap("SELECT count(*) FROM artist a, artist b, artist c, artist d, artist e, artist f, artist g, artist h"),
            true,
        ),
        ("a gigabyte blob", wrap("SELECT randomblob(1000000000)"), true),
        ("a long zeroblob", wrap("SELECT zeroblob(2000000000)"), true),
        ("a huge printf", wrap("SELECT printf('%.*c', 2000000000, 'x')"), true),
        (
            "nested parentheses",
            wrap(&format!("SELECT {}1{}", "(".repeat(100_000), ")".repeat(100_000))),
            true,
        ),
        (
            "a long union",
            wrap(&vec!["SELECT name FROM artist"; 50_000].join(" UNION ALL ")),
            true,
        ),
        ("unterminated literal", wrap("SELECT name FROM artist WHERE country = 'Fr"), true),
        ("1 MB literal", wrap(&format!("SELECT '{}'", "x".repeat(ONE_MB))), true),
        (
            "writes",
            wrap("DROP TABLE artist; DELETE FROM artist; ATTACH DATABASE '/tmp/x' AS x"),
            true,
        ),
        (
            "many value slots",
            wrap(&format!(
                "SELECT name FROM artist WHERE {}",
                vec!["age > 1"; 10_000].join(" AND ")
            )),
            true,
        ),
        (
            "the right answer",
            wrap("SELECT name FROM artist WHERE country = 'France' AND age > 30"),
            false,
        ),
    ]);
    assert_verdicts(
        &evaluators(conformance.join("databases")),
        Family::Database,
        &sample,
        &replies,
    );
}

#[test]
fn code_survives_hostile_replies() {
    let sample = json!({
        "metadata": {"func_name": "solve"},
        "public_test_cases": "[{\"input\": \"5\", \"output\": \"6\"}]",
    });
    let fenced = |code: &str| format!("```python\n{code}\n```");
    let mut replies = common_replies();
    replies.extend([
        ("fork", fenced("import os\ndef solve(x):\n    os.fork()\n    return x + 1"), true),
        ("recursion", fenced("def solve(x):\n    return solve(x + 1)"), true),
        (
            "C recursion",
            fenced("import functools\n@functools.lru_cache(None)\ndef solve(x):\n    return solve(x + 1)"),
            true,
        ),
        (
            "allocation",
            fenced("def solve(x):\n    keep = []\n    while True:\n        keep.append(bytearray(1 << 24))"),
            true,
        ),
        (
            "waits",
            fenced("import threading\ndef solve(x):\n    threading.Event().wait(120)\n    return x + 1"),
            true,
        ),
        (
            "sleep",
            fenced("import time\ndef solve(x):\n    time.sleep(120)\n    return x + 1"),
            true,
        ),
        (
            "files",
            fenced("def solve(x):\n    for i in range(100000):\n        open('/tmp/%d' % i, 'w').write('x' * 100000)\n    return x + 1"),
            true,
        ),
        (
            "a huge result",
            fenced("def solve(x):\n    return 'x' * (100 << 20)"),
            true,
        ),
        (
            "a deep result",
            fenced("def solve(x):\n    a = []\n    for _ in range(10 ** 6):\n        a = [a]\n    return a"),
            true,
        ),
        (
            "deep source",
            fenced(&format!("def solve(x):\n    return {}x{}", "(".repeat(100_000), ")".repeat(100_000))),
            true,
        ),
        (
            "a long source",
            fenced(&format!("def solve(x):\n    return x{}", " + 1".repeat(1_000_000))),
            true,
        ),
        ("exit", fenced("import os\ndef solve(x):\n    os._exit(0)"), true),
        ("the right answer", fenced("def solve(x):\n    return x + 1"), false),
    ]);
    let evaluators = evaluators("missing".into());
    assert_verdicts(&evaluators, Family::Code, &sample, &replies);
    let right = evaluators
        .score_response(
            Family::Code,
            &fenced("def plus_one(x):\n    return x + 1"),
            &sample,
        )
        .unwrap();
    assert_eq!(right.verdict.score, 1.0, "{:?}", right.verdict);
}
