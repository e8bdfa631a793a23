//! Hostile answers: deep, huge and malformed. Each must end in a verdict (score 0 with a
//! reason unless noted) within a bounded time, on whatever thread calls the evaluator.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A generous bound for an unoptimised build on a busy 2-core machine (measured up to 27 s
/// for the slowest case there, under a load average of 20); an optimised build runs in a
/// fraction.
const BOUND: Duration = Duration::from_secs(if cfg!(debug_assertions) { 120 } else { 20 });

fn sample() -> Value {
    json!({
        "function": [{"name": "f", "parameters": {"type": "dict",
            "properties": {"x": {"type": "integer"}}, "required": ["x"]}}],
        "reference_answer": [{"f": {"x": [1]}}],
        "language": "Python",
        "test_category": "parallel",
    })
}

/// Score `response`; check the score, that a failure has a reason, and the time taken.
fn assert_verdict(name: &str, response: &str, want: f64) -> Option<String> {
    let started = Instant::now();
    let verdict = baton_bfcl::evaluate_response(response, &sample());
    let elapsed = started.elapsed();
    assert_eq!(verdict.score, want, "{name}: {:?}", verdict.error);
    assert_eq!(verdict.is_correct, Some(want == 1.0), "{name}");
    if want == 0.0 {
        assert!(verdict.error.is_some(), "{name}: no reason");
    }
    assert!(elapsed < BOUND, "{name}: took {elapsed:?}");
    if std::env::var_os("BATON_TIMINGS").is_some() {
        let line = format!("{name}: {elapsed:?}\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
    }
    verdict.error
}

fn details_mention(name: &str, response: &str, words: &[&str]) {
    let verdict = baton_bfcl::evaluate_response(response, &sample());
    let text = format!("{} {}", verdict.error.unwrap_or_default(), verdict.details);
    assert!(
        words.iter().any(|w| text.contains(w)),
        "{name}: {} mentions none of {words:?}",
        &text[..text.len().min(300)]
    );
}

// See: issue 9 ("`baton score` on an actions reply `[f(x=` + 300,000 × `-` + `1)]` (or
// 100,000 × `not `) dies with "stack overflow, aborting"").
#[test]
fn issue_9_parser_bombs_score_zero_with_a_reason() {
    let minus = format!("[f(x={}1)]", "-".repeat(300_000));
    let not = format!("[f(x={}1)]", "not ".repeat(100_000));
    assert_verdict("300,000 minus", &minus, 0.0);
    assert_verdict("100,000 not", &not, 0.0);
    details_mention("300,000 minus", &minus, &["too complex", "nesting"]);
    details_mention("100,000 not", &not, &["too complex", "nesting"]);
}

#[test]
fn deep_answers_score_zero() {
    let cases = [
        ("left-deep sum", format!("[f(x={}1)]", "1+".repeat(400_000))),
        (
            "attribute chain",
            format!("[f(x=a{})]", ".b".repeat(400_000)),
        ),
        ("call chain", format!("[f(x=a{})]", "()".repeat(300_000))),
        (
            "subscript chain",
            format!("[f(x=a{})]", "[0]".repeat(250_000)),
        ),
        ("power tower", format!("[f(x={}1)]", "2**".repeat(100_000))),
        (
            "lambda chain",
            format!("[f(x={}1)]", "lambda: ".repeat(100_000)),
        ),
        (
            "conditional chain",
            format!("[f(x={}1)]", "1 if 1 else ".repeat(100_000)),
        ),
        (
            "comparison of sums",
            format!("[f(x={}1 < 2)]", "1+".repeat(3_000)),
        ),
        (
            "closed brackets",
            format!("[f(x={}{})]", "[".repeat(100_000), "]".repeat(100_000)),
        ),
        (
            "unclosed brackets",
            format!("[f(x={}", "(".repeat(1_000_000)),
        ),
        (
            "nested dicts",
            format!("[f(x={}1{})]", "{1: ".repeat(150), "}".repeat(150)),
        ),
        (
            "f-string braces",
            format!("[f(x=f'{}')]", "{".repeat(100_000)),
        ),
        (
            "deep value in arithmetic",
            format!("[f(x={}1+1{})]", "(".repeat(190), ")".repeat(190)),
        ),
        (
            "sum past unparse's recursion",
            format!("[f(x={}1)]", "1+".repeat(400)),
        ),
    ];
    for (name, response) in &cases {
        assert_verdict(name, response, 0.0);
    }
}

#[test]
fn huge_and_malformed_answers_score_zero() {
    let cases = [
        (
            "10 MB string",
            format!("[f(x='{}')]", "a".repeat(10_000_000)),
        ),
        (
            "unterminated string",
            format!("[f(x='{}", "a".repeat(10_000_000)),
        ),
        (
            "unterminated triple-quoted string",
            format!("[f(x='''{}", "a\n".repeat(1_000_000)),
        ),
        (
            "10 MB of digits",
            format!("[f(x={})]", "1".repeat(10_000_000)),
        ),
        (
            "huge hex literal",
            format!("[f(x=0x{})]", "f".repeat(2_000_000)),
        ),
        (
            "huge product",
            "[f(x=2**500000*2**500000*2**500000)]".to_string(),
        ),
        ("huge power", "[f(x=10**10**10)]".to_string()),
        ("huge shift", "[f(x=1<<10**12)]".to_string()),
        (
            "slow division",
            "[f(x=(1<<1000000)//((1<<999999)+1))]".to_string(),
        ),
        ("huge repetition", "[f(x='a'*10**9)]".to_string()),
        ("nested repetition", "[f(x=[[0]*10**6]*10**6)]".to_string()),
        (
            "repeated concatenation",
            format!("[f(x={}'')]", "'a'*10**6+".repeat(100)),
        ),
        (
            "dict of 200,000 keys",
            format!(
                "[f(x={{{}}})]",
                (0..200_000)
                    .map(|i| format!("{i}:0"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        (
            "sets in arithmetic",
            format!(
                "[f(x=({{{0}}}|{{{0}}})-{{0}})]",
                (0..100_000)
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        (
            "200,000 keywords",
            format!(
                "[f(x=1,{})]",
                (0..200_000)
                    .map(|i| format!("y{i}=1"))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
        (
            "a million tokens",
            format!("[{}f(x=1)]", "1,".repeat(600_000)),
        ),
        ("many calls", "f(x=1),".repeat(200_000)),
        ("null byte", "[f(x=1)]\0".to_string()),
        ("control characters", "[f(x=\u{1b}[31m1)]".to_string()),
        ("prose", "I would call f with x set to one.".repeat(100_000)),
        ("only brackets", "[".repeat(5_000_000)),
        ("only quotes", "'".repeat(5_000_001)),
    ];
    for (name, response) in &cases {
        assert_verdict(name, response, 0.0);
    }
    details_mention(
        "huge product",
        "[f(x=2**500000*2**500000*2**500000)]",
        &["integer product too large"],
    );
    details_mention(
        "dict of many keys",
        &format!(
            "[f(x={{{}}})]",
            (0..200_000)
                .map(|i| format!("{i}:0"))
                .collect::<Vec<_>>()
                .join(",")
        ),
        &["too large to compare"],
    );
}

/// Inputs near the limits that CPython accepts still score as LiC scores them.
#[test]
fn answers_inside_the_limits_still_score() {
    let cases = [
        ("plain", "[f(x=1)]".to_string(), 1.0),
        (
            "199 brackets around the value",
            format!("[f(x=1, y={}1{})]", "[".repeat(199), "]".repeat(199)),
            0.0,
        ),
        (
            "deep positional argument (dropped upstream)",
            format!("[f({}1, x=1)]", "-".repeat(2_000)),
            1.0,
        ),
        (
            "long positional sum",
            format!("[f({}1, x=1)]", "1+".repeat(2_500)),
            1.0,
        ),
        (
            "sum of 300 terms",
            format!("[f(x={}1-299)]", "1+".repeat(299)),
            1.0,
        ),
        (
            "product within the bound",
            "[f(x=2**200000*2**200000//2**399999-1)]".to_string(),
            1.0,
        ),
        (
            "bytes search",
            format!("[f(x=(b'{0}' in b'{0}{0}')+0)]", "a".repeat(1_000_000)),
            1.0,
        ),
        (
            "4300 digits",
            format!("[f(x={0}//{0})]", "9".repeat(4_300)),
            1.0,
        ),
        (
            "padded with spaces",
            format!("[f(x=1{})]", " ".repeat(10_000_000)),
            1.0,
        ),
    ];
    for (name, response, want) in &cases {
        assert_verdict(name, response, *want);
    }
}
