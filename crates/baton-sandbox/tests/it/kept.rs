//! baton's code extraction (`extract_kept`): what LiC's extractor loses, kept; what it
//! wrongly takes, left. Each case is extracted and then graded, so "kept" means "runs".

use crate::common::{lic_grader, sample};

const FENCE: &str = "```";

fn block(code: &str) -> String {
    format!("{FENCE}python\n{code}\n{FENCE}")
}

/// (rule, extracted code, score under baton's rules, score under LiC's).
fn both(response: &str, fn_name: &str, tests: &[(&str, &str)]) -> (String, String, f64, f64) {
    let grader = lic_grader();
    let task = sample(fn_name, tests);
    let (rule, kept) = grader.extract_kept(response, Some(fn_name)).unwrap();
    let baton = grader.grade_extracted(&kept, &task).unwrap().score;
    let lic = grader.grade_response(response, &task).unwrap().score;
    (rule, kept, baton, lic)
}

#[test]
fn a_module_constant_above_the_function_is_kept() {
    let response = format!(
        "Here is the solution.\n{}",
        block("MOD = 10**9 + 7\n\ndef count_ways(n):\n    return pow(2, n, MOD)")
    );
    let (rule, kept, baton, lic) = both(&response, "countWays", &[("10", "1024")]);
    assert_eq!(rule, "code.last_def");
    assert!(
        kept.starts_with("def count_ways"),
        "the function comes first: {kept}"
    );
    assert!(kept.contains("MOD = 10**9 + 7"), "{kept}");
    assert_eq!(
        (baton, lic),
        (1.0, 0.0),
        "LiC drops MOD and fails with a NameError"
    );
}

#[test]
fn helpers_are_kept_and_the_renamed_def_is_the_solution() {
    // The helper comes first in the reply; LiC's evaluator renames the first `def`, so the
    // solution must come first in the extracted code.
    let response = block(
        "from typing import List\n\ndef double(x):\n    return x * 2\n\n\
         def take(nums: List[int], k):\n    return [double(v) for v in nums[:k]]",
    );
    let (_, kept, baton, lic) = both(&response, "firstK", &[("[1, 2, 3]\n2", "[2, 4]")]);
    assert!(
        kept.starts_with("from typing import List\n\ndef take"),
        "{kept}"
    );
    assert_eq!((baton, lic), (1.0, 0.0));
}

#[test]
fn a_trailing_test_block_is_never_chosen() {
    let response = format!(
        "{}\nAnd some tests:\n{}",
        block("def add_all(a, b):\n    return a + b"),
        block(
            "def test_add_all():\n    assert add_all(1, 2) == 3\n\ntest_add_all()\nprint(add_all(2, 3))"
        ),
    );
    let (rule, kept, baton, lic) = both(&response, "add", &[("1\n2", "3")]);
    assert_eq!(rule, "code.last_def");
    assert_eq!(kept, "def add_all(a, b):\n    return a + b");
    assert_eq!((baton, lic), (1.0, 0.0), "LiC takes the test function");
}

#[test]
fn a_trailing_main_block_and_inline_checks_are_left_out() {
    let response = format!(
        "{}\n{}",
        block(
            "LIMIT = 10\n\ndef cap(x, lim=LIMIT):\n    return min(x, lim)\n\n\
             assert cap(3) == 3\nprint(cap(20))\nresult = cap(5)\nwhile True:\n    pass"
        ),
        block("def main():\n    print(cap(1))\n\nif __name__ == '__main__':\n    main()"),
    );
    let (_, kept, baton, _) = both(&response, "capped", &[("30", "10")]);
    // The default needs LIMIT when the def runs, so LIMIT goes first; the checks, the loop
    // and `main` are gone.
    assert_eq!(
        kept,
        "LIMIT = 10\n\ndef cap(x, lim=LIMIT):\n    return min(x, lim)"
    );
    assert_eq!(baton, 1.0);
}

#[test]
fn the_task_function_wins_and_names_from_earlier_blocks_are_borrowed() {
    let response = format!(
        "First a helper:\n{}\nThen the function:\n{}\nUsage:\n{}",
        block("MOD = 7\n\ndef reduce(x):\n    return x % MOD"),
        block("def solve(x):\n    return reduce(x) + 1"),
        block("def demo():\n    return solve(9)"),
    );
    let (rule, kept, baton, lic) = both(&response, "solve", &[("9", "3")]);
    assert_eq!(rule, "code.named");
    assert!(kept.starts_with("def solve"), "{kept}");
    assert!(
        kept.contains("MOD = 7") && kept.contains("def reduce"),
        "{kept}"
    );
    assert_eq!((baton, lic), (1.0, 0.0));
}

#[test]
fn class_solution_keeps_its_helpers_and_drops_example_calls() {
    let response = block(
        "def total(a):\n    return sum(a)\n\nclass Solution:\n    def sumAll(self, a):\n        \
         return total(a)\n\nprint(Solution().sumAll([1]))",
    );
    let (rule, kept, baton, _) = both(&response, "sumAll", &[("[1, 2]", "3")]);
    assert_eq!(rule, "code.class");
    assert!(kept.starts_with("class Solution"), "{kept}");
    assert!(!kept.contains("print("), "{kept}");
    assert_eq!(baton, 1.0);
}

#[test]
fn unfenced_code_after_prose_is_read_from_its_first_line() {
    let response =
        "Sure, here it is.\nimport math\nK = 3\ndef f_up(x):\n    return math.floor(x) + K\n";
    let (rule, kept, baton, lic) = both(response, "floorPlus", &[("2.5", "5")]);
    assert_eq!(rule, "code.unfenced_last_def");
    assert!(kept.contains("K = 3"), "{kept}");
    assert_eq!((baton, lic), (1.0, 0.0));
}

#[test]
fn nothing_to_take_is_none_and_hostile_text_is_survived() {
    let grader = lic_grader();
    let none = grader
        .extract_kept("I cannot write that.", Some("f"))
        .unwrap();
    assert_eq!(none.1, "");
    let deep = block(&format!("x = {}1{}", "(".repeat(5000), ")".repeat(5000)));
    assert_eq!(grader.extract_kept(&deep, None).unwrap().1, "");
    let many_starts = "x = 1 +\n".repeat(20_000);
    assert_eq!(grader.extract_kept(&many_starts, None).unwrap().1, "");
}
