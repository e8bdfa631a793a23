//! LiC's comparison semantics through the real guest: values cross the boundary exactly.

use serde_json::json;

use crate::common::{lic_grader, sample};

/// Grade `code` on one test `solve(0) == expected` and return the score.
fn score(code: &str, expected: &str) -> f64 {
    let verdict = lic_grader()
        .grade_extracted(code, &sample("solve", &[("0", expected)]))
        .unwrap();
    verdict.score
}

#[test]
fn big_integers_cross_exactly() {
    let big = num_pow2(10_000);
    assert_eq!(score("def solve(x):\n    return 2 ** 10000", &big), 1.0);
    assert_eq!(score("def solve(x):\n    return 2 ** 10000 + 1", &big), 0.0);
    // Past Python's 4300-digit str limit: serialized anyway, and simply wrong here.
    assert_eq!(score("def solve(x):\n    return 10 ** 5000", "1"), 0.0);
}

/// 2**n in decimal, computed on the host.
fn num_pow2(n: u32) -> String {
    let mut digits = vec![1u8];
    for _ in 0..n {
        let mut carry = 0;
        for d in digits.iter_mut() {
            let v = *d * 2 + carry;
            *d = v % 10;
            carry = v / 10;
        }
        if carry > 0 {
            digits.push(carry);
        }
    }
    digits.iter().rev().map(|d| char::from(b'0' + d)).collect()
}

#[test]
fn floats_round_trip_and_compare_like_python() {
    assert_eq!(
        score("def solve(x):\n    return 0.1 + 0.2", "0.30000000000000004"),
        1.0
    );
    assert_eq!(score("def solve(x):\n    return 0.1 + 0.2", "0.3"), 0.0);
    assert_eq!(score("def solve(x):\n    return 2", "2.0"), 1.0);
    assert_eq!(score("def solve(x):\n    return True", "1"), 1.0);
    assert_eq!(
        score("def solve(x):\n    return float('inf')", "Infinity"),
        1.0
    );
    assert_eq!(score("def solve(x):\n    return float('nan')", "NaN"), 0.0);
    assert_eq!(score("def solve(x):\n    return -0.0", "0"), 1.0);
    assert_eq!(
        score("def solve(x):\n    return 1e16", "10000000000000000"),
        1.0
    );
}

#[test]
fn containers_compare_like_python() {
    assert_eq!(
        score(
            "def solve(x):\n    return {'a': [1, 2]}",
            r#"{"a": [1, 2.0]}"#
        ),
        1.0
    );
    assert_eq!(
        score("def solve(x):\n    return {1: 'a'}", r#"{"1": "a"}"#),
        0.0
    );
    assert_eq!(score("def solve(x):\n    return (1, 2)", "[1, 2]"), 1.0);
    assert_eq!(score("def solve(x):\n    return [(1, 2)]", "[[1, 2]]"), 0.0);
    assert_eq!(score("def solve(x):\n    return {1, 2}", "[1, 2]"), 0.0);
    assert_eq!(score("def solve(x):\n    return None", "null"), 1.0);
    assert_eq!(
        score(
            "def solve(x):\n    return 'é😀\\n'",
            r#""\u00e9\ud83d\ude00\n""#
        ),
        1.0
    );
    assert_eq!(
        score(
            "def solve(x):\n    a = []\n    a.append(a)\n    return a",
            "[[]]"
        ),
        0.0
    );
    let deep = format!("{}{}", "[".repeat(150), "]".repeat(150));
    assert_eq!(
        score(
            "def solve(x):\n    a = []\n    for _ in range(149):\n        a = [a]\n    return a",
            &deep
        ),
        1.0
    );
    // A hostile depth is refused on the host (it must not overflow the host's stack).
    let verdict = lic_grader()
        .grade_extracted(
            "def solve(x):\n    a = []\n    for _ in range(5000):\n        a = [a]\n    return a",
            &sample("solve", &[("0", "[]")]),
        )
        .unwrap();
    assert_eq!(verdict.score, 0.0);
    let error = verdict.error.unwrap();
    assert!(error.contains("too deep"), "{error}");
}

#[test]
fn module_state_persists_across_tests_as_in_lic() {
    let task = sample("solve", &[("0", "1"), ("0", "2"), ("0", "3")]);
    let code = "calls = [0]\ndef solve(x):\n    calls[0] += 1\n    return calls[0]";
    assert_eq!(
        lic_grader().grade_extracted(code, &task).unwrap().score,
        1.0
    );
}

#[test]
fn first_failure_stops_and_is_reported() {
    let task = sample("solve", &[("1", "2"), ("2", "5"), ("3", "4")]);
    let verdict = lic_grader()
        .grade_extracted("def solve(x):\n    return x + 1", &task)
        .unwrap();
    assert_eq!(verdict.score, 0.0);
    assert_eq!(verdict.error.as_deref(), Some("wrong answer on test 1"));
    let results = verdict.details["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "test 2 never runs: {results:?}");
    assert_eq!(results[1]["got"], "3");
    assert_eq!(results[1]["expected"], "5");
}

#[test]
fn humaneval_prompt_imports_and_class_solution() {
    let mut task = sample("total", &[("[1, 2, 3]", "6")]);
    task["prompt"] = json!(
        "from typing import List\n\n\ndef total(xs: List[int]) -> int:\n    \"\"\"Sum.\"\"\"\n"
    );
    let verdict = lic_grader()
        .grade_response(
            "```python\ndef add_all(xs: List[int]) -> int:\n    return sum(xs)\n```",
            &task,
        )
        .unwrap();
    assert_eq!(verdict.score, 1.0, "{verdict:?}");
    let solution =
        "```python\nclass Solution:\n    def total(self, xs):\n        return sum(xs)\n```";
    assert_eq!(
        lic_grader().grade_response(solution, &task).unwrap().score,
        1.0
    );
}

#[test]
fn extraction_alone() {
    let grader = lic_grader();
    let response = "Here:\n```python\nimport math\ndef helper():\n    pass\n\ndef main(x):\n    return math.floor(x)\n```\nDone.";
    assert_eq!(
        grader.extract(response).unwrap(),
        "import math\n\ndef main(x):\n    return math.floor(x)"
    );
    assert_eq!(
        grader
            .extract("class Solution is what I would write")
            .unwrap(),
        ""
    );
    assert_eq!(grader.extract("").unwrap(), "");
}
