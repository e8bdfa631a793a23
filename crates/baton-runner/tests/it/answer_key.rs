//! The simulated models' answer key on the sample set: references pass, wrong
//! responses fail.
//!
//! Math is checked with LiC's exact rule. The other evaluators live in other
//! crates, so this file checks what can be checked here: SQL on every database
//! variant (with LiC's value plugging approximated), the actions answers with
//! a Python re-statement of LiC's parallel checker, the code answers by running
//! their tests under LiC's rules with `python3`, and data2text by n-gram overlap.

use std::collections::BTreeMap;

use baton_data::{Dataset, materialize_sample_databases, sample_dataset};
use baton_fixture::run_python;
use baton_models::{reference_response, wrong_response};
use baton_types::{Family, Task};
use regex::Regex;
use rusqlite::Connection;
use rusqlite::types::Value as Sql;
use serde_json::{Value, json};

const VARIANTS: u64 = 6;

fn tasks(ds: &Dataset, family: Family) -> impl Iterator<Item = &Task> {
    ds.tasks.iter().filter(move |t| t.family == family)
}

fn wrongs(task: &Task) -> Vec<String> {
    let mut out: Vec<String> = (0..VARIANTS)
        .map(|v| wrong_response(task, v).expect("wrong response"))
        .collect();
    out.sort();
    out.dedup();
    out
}

// ------------------------------------------------------------------ math

/// Our deterministic extraction: last `\boxed{…}`, else the last line
/// matching `answer( is|:)`, else the last non-empty line.
fn extract_math(response: &str) -> String {
    let boxed = Regex::new(r"\\boxed\{([^{}]*)\}").expect("regex");
    if let Some(m) = boxed.captures_iter(response).last() {
        return m[1].to_owned();
    }
    let answer_line = Regex::new(r"(?i)answer( is|:)").expect("regex");
    let lines: Vec<&str> = response.lines().collect();
    if let Some(line) = lines.iter().rev().find(|l| answer_line.is_match(l)) {
        return (*line).to_owned();
    }
    lines
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .map(|l| (*l).to_owned())
        .unwrap_or_default()
}

/// LiC's `TaskMath.evaluator_function`.
fn lic_math_score(extracted: &str, answer: &str) -> bool {
    let gold = answer
        .split("####")
        .nth(1)
        .expect("####")
        .trim()
        .to_lowercase();
    let number = Regex::new(r"(-?[$0-9.,]{2,})|(-?[0-9]+)").expect("regex");
    let Some(m) = number.captures_iter(extracted.trim()).last() else {
        return false;
    };
    let mut cand = m
        .get(1)
        .filter(|g| !g.as_str().is_empty())
        .or_else(|| m.get(2))
        .map(|g| g.as_str().to_owned())
        .unwrap_or_default();
    if cand.contains('$') && cand.ends_with(".00") {
        cand = cand.trim_end_matches(['.', '0']).to_owned();
    }
    let norm = |s: &str| {
        let s = s.replace([',', '$'], "");
        let s = Regex::new(r"(?s).*#### ")
            .expect("regex")
            .replace_all(&s, "")
            .into_owned();
        Regex::new(r"\.$")
            .expect("regex")
            .replace_all(&s, "")
            .into_owned()
    };
    norm(&cand) == norm(&gold)
}

#[test]
fn math_answers_follow_the_lic_rule() {
    let ds = sample_dataset();
    for task in tasks(&ds, Family::Math) {
        let answer = task.sample["answer"].as_str().expect("answer");
        let right = reference_response(task).expect("reference");
        assert!(
            lic_math_score(&extract_math(&right), answer),
            "{}: reference fails: {right:?}",
            task.task_id
        );
        for wrong in wrongs(task) {
            assert!(
                !lic_math_score(&extract_math(&wrong), answer),
                "{}: wrong response passes: {wrong:?}",
                task.task_id
            );
        }
    }
}

#[test]
fn math_rule_agrees_with_the_documented_vectors() {
    for (extracted, gold, want) in [
        ("The answer is $18.", "18", true),
        ("$10.00", "10", false),
        ("$1,000.00", "1000", false),
        ("18.0", "18", false),
        ("12.", "12", true),
        ("2024", "2,024", true),
        ("The total is 5 apples and 3 pears so 8", "8", true),
        ("$30.00.", "30", false),
        ("no number", "3", false),
    ] {
        assert_eq!(
            lic_math_score(extracted, &format!("x #### {gold}")),
            want,
            "{extracted:?} vs {gold:?}"
        );
    }
}

// ------------------------------------------------------------------ database

type Rows = Vec<Vec<String>>;

fn run_sql(conn: &Connection, sql: &str) -> Option<Rows> {
    let mut stmt = conn.prepare(sql).ok()?;
    let n = stmt.column_count();
    let rows = stmt
        .query_map([], |row| {
            (0..n)
                .map(|i| {
                    row.get::<_, Sql>(i).map(|v| match v {
                        // Python compares 1 == 1.0, so numbers compare by value.
                        Sql::Integer(i) => format!("num:{}", i as f64),
                        Sql::Real(f) => format!("num:{f}"),
                        Sql::Text(s) => format!("text:{s}"),
                        Sql::Null => "null".to_owned(),
                        Sql::Blob(b) => format!("blob:{b:?}"),
                    })
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .ok()?
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    Some(rows)
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            out.push(q);
        }
    }
    out
}

/// LiC's `result_eq`, on value-normalized rows.
fn same_result(gold: &Rows, pred: &Rows, order_matters: bool) -> bool {
    if gold.is_empty() && pred.is_empty() {
        return true;
    }
    if gold.len() != pred.len() || gold[0].len() != pred[0].len() {
        return false;
    }
    let mut sorted_gold = gold.clone();
    sorted_gold.sort();
    permutations(gold[0].len()).into_iter().any(|perm| {
        let mut permuted: Rows = pred
            .iter()
            .map(|row| perm.iter().map(|&i| row[i].clone()).collect())
            .collect();
        if order_matters {
            &permuted == gold
        } else {
            permuted.sort();
            permuted == sorted_gold
        }
    })
}

/// The prediction with each literal slot filled by each combination of the
/// gold's literals (LiC's `plug_value`), plus the prediction itself.
fn plugged(pred: &str, gold: &str) -> Vec<String> {
    let literal = Regex::new(r#"'(?:[^']|'')*'|"[^"]*"|\b-?\d+(?:\.\d+)?\b"#).expect("regex");
    let mut gold_values: Vec<&str> = Vec::new();
    for m in literal.find_iter(gold) {
        if !gold_values.contains(&m.as_str()) {
            gold_values.push(m.as_str());
        }
    }
    let slots: Vec<_> = literal.find_iter(pred).collect();
    let mut out = vec![pred.to_owned()];
    if slots.is_empty() || gold_values.is_empty() {
        return out;
    }
    let total = gold_values.len().pow(slots.len() as u32);
    for mut code in 0..total {
        let mut text = String::new();
        let mut last = 0;
        for slot in &slots {
            text.push_str(&pred[last..slot.start()]);
            text.push_str(gold_values[code % gold_values.len()]);
            code /= gold_values.len();
            last = slot.end();
        }
        text.push_str(&pred[last..]);
        out.push(text);
    }
    out
}

fn strip_sql_fence(response: &str) -> String {
    let sql = response.replace("```sql", "").replace("```", "");
    sql.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn database_answers_run_on_every_variant() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = materialize_sample_databases(dir.path()).expect("build databases");
    let ds = sample_dataset();
    let mut checked = 0;
    for task in tasks(&ds, Family::Database) {
        let db_id = task.sample["db_id"].as_str().expect("db_id");
        let mut conns: Vec<(String, Connection)> = std::fs::read_dir(root.join(db_id))
            .expect("database folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.to_string_lossy().contains(".sqlite"))
            .map(|p| (p.display().to_string(), Connection::open(&p).expect("open")))
            .collect();
        conns.sort_by(|a, b| a.0.cmp(&b.0));
        assert!(conns.len() >= 2, "{db_id}: need at least two variants");

        let gold = task.sample["reference_sql"]
            .as_str()
            .expect("reference_sql");
        let reference = reference_response(task).expect("reference");
        assert_eq!(strip_sql_fence(&reference), strip_sql_fence(gold));
        // LiC removes DISTINCT from both queries before running them.
        let without_distinct = |s: &str| s.replace("DISTINCT ", "");
        let gold_run = without_distinct(gold);
        let order_matters = gold_run.to_lowercase().contains("order by");
        let gold_rows: Vec<Rows> = conns
            .iter()
            .map(|(name, c)| {
                let rows = run_sql(c, &gold_run)
                    .unwrap_or_else(|| panic!("{}: gold fails on {name}", task.task_id));
                assert!(
                    !rows.is_empty(),
                    "{}: gold returns no rows on {name}",
                    task.task_id
                );
                rows
            })
            .collect();
        let distinct_results: std::collections::BTreeSet<&Rows> = gold_rows.iter().collect();
        assert!(
            distinct_results.len() > 1,
            "{}: every variant gives the same gold rows, so the variants test nothing",
            task.task_id
        );

        for wrong in wrongs(task) {
            let pred = without_distinct(&strip_sql_fence(&wrong));
            for candidate in plugged(&pred, &gold_run) {
                let passes_everywhere = conns.iter().zip(&gold_rows).all(|((_, c), want)| {
                    run_sql(c, &candidate).is_some_and(|got| same_result(want, &got, order_matters))
                });
                assert!(
                    !passes_everywhere,
                    "{}: wrong query {candidate:?} matches the gold on every variant",
                    task.task_id
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 16, "only {checked} wrong queries checked");
}

#[test]
fn generic_database_wrong_answer_returns_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = materialize_sample_databases(dir.path()).expect("build databases");
    let ds = sample_dataset();
    for task in tasks(&ds, Family::Database) {
        let mut bare = task.clone();
        bare.sample
            .as_object_mut()
            .expect("object")
            .remove(baton_models::WRONG_SQL_KEY);
        let db_id = task.sample["db_id"].as_str().expect("db_id");
        let conn =
            Connection::open(root.join(db_id).join(format!("{db_id}.sqlite"))).expect("open");
        let sql = strip_sql_fence(&wrong_response(&bare, 0).expect("wrong"));
        let rows = run_sql(&conn, &sql).unwrap_or_else(|| panic!("{sql} must run"));
        assert!(rows.is_empty(), "{}: {sql}", task.task_id);
    }
}

// ------------------------------------------------------------------ actions and code

/// LiC's actions parsing and no-order parallel checker, and the code harness
/// (extraction, import carry-over, rename, call-based tests), restated in
/// Python for this test.
const PY_CHECKS: &str = r#"
import ast, json, re, sys

def standardize(s):
    return "".join(c for c in s if c not in " ,./-_*^").lower().replace("'", '"')

def parse_calls(resp):
    s = resp.strip()
    for p in sorted(["```tool_code", "```python", "```json", "```", "`"], key=len, reverse=True):
        if s.startswith(p):
            s = s[len(p):]
    for p in ["```", "`"]:
        if s.endswith(p):
            s = s[: -len(p)]
    s = s.strip().replace("\n", " ").strip("[]'")
    body = ast.parse(s, mode="eval").body
    calls = body.elts if isinstance(body, ast.Tuple) else [body]
    out = []
    for c in calls:
        assert isinstance(c, ast.Call)
        out.append((ast.unparse(c.func), {k.arg: ast.literal_eval(k.value) for k in c.keywords}))
    return out

TYPES = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "dict": dict}

def check_call(doc, params, possible):
    props = doc["parameters"]["properties"]
    if any(r not in params for r in doc["parameters"]["required"]):
        return False
    for k, v in params.items():
        if k not in props or k not in possible:
            return False
        t = props[k]["type"]
        if t == "float" and type(v) == int:
            v = float(v)
        if type(v) != TYPES[t]:
            return False
        acc = possible[k]
        if t == "string":
            if standardize(v) not in [standardize(a) for a in acc if isinstance(a, str)]:
                return False
        elif t == "array":
            norm = lambda l: [standardize(x) if isinstance(x, str) else x for x in l]
            if norm(v) not in [norm(a) for a in acc if isinstance(a, list)]:
                return False
        elif v not in acc:
            return False
    return all(k in params or "" in acc for k, acc in possible.items())

def check_actions(sample, resp):
    try:
        calls = parse_calls(resp)
    except Exception:
        return False
    possible = sample["reference_answer"]
    if len(calls) != len(possible):
        return False
    used = set()
    for entry in possible:
        (fname, params), = entry.items()
        doc = next(d for d in sample["function"] if d["name"] == fname)
        hit = next((i for i, (n, p) in enumerate(calls)
                    if i not in used and n == fname and check_call(doc, p, params)), None)
        if hit is None:
            return False
        used.add(hit)
    return True

PRELUDE = "\n".join("from %s import *" % m for m in ["string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics", "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing"])

def top_imports(src):
    return [ast.unparse(n) for n in ast.parse(src).body if isinstance(n, (ast.Import, ast.ImportFrom))]

def extract_code(resp):
    blocks = re.findall(r"```(?:python)?\s*(.*?)\s*```", resp, re.DOTALL)
    code = blocks[-1]
    tree = ast.parse(code)
    imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    fn = [n for n in tree.body if isinstance(n, ast.FunctionDef)][-1]
    start = (fn.decorator_list[0].lineno if fn.decorator_list else fn.lineno) - 1
    body = "\n".join(code.split("\n")[start:fn.end_lineno])
    return ("\n".join(imports) + "\n\n" + body) if imports else body

def check_code(sample, resp):
    try:
        code = extract_code(resp)
    except Exception:
        return False
    if "prompt" in sample and top_imports(sample["prompt"]):
        code = "\n".join(top_imports(sample["prompt"])) + "\n\n" + code
    name = sample["metadata"]["func_name"]
    old = code.split("def ", 1)[1].split("(", 1)[0].strip()
    code = code.replace(old, name)
    tests = json.loads(sample["public_test_cases"]) + json.loads(sample.get("private_test_cases") or "[]")
    ns = {}
    try:
        exec(compile(PRELUDE + "\n\n" + code, "<answer>", "exec"), ns)
        fn = ns[name]
        for t in tests:
            args = [json.loads(line) for line in t["input"].split("\n")]
            got = fn(*args)
            if isinstance(got, tuple):
                got = list(got)
            if got != json.loads(t["output"]):
                return False
    except Exception:
        return False
    return True

report = {}
for case in json.load(sys.stdin):
    check = check_actions if case["family"] == "actions" else check_code
    report[case["task_id"]] = {
        "reference": check(case["sample"], case["reference"]),
        "wrong": [check(case["sample"], w) for w in case["wrong"]],
    }
print(json.dumps(report))
"#;

#[test]
fn actions_and_code_answers_pass_and_fail_as_intended() {
    let ds = sample_dataset();
    let cases: Vec<Value> = ds
        .tasks
        .iter()
        .filter(|t| matches!(t.family, Family::Actions | Family::Code))
        .map(|t| {
            json!({
                "task_id": t.task_id,
                "family": t.family.as_str(),
                "sample": t.sample,
                "reference": reference_response(t).expect("reference"),
                "wrong": wrongs(t),
            })
        })
        .collect();
    let Some(out) = run_python(PY_CHECKS, &serde_json::to_string(&cases).expect("json")) else {
        return;
    };
    let report: BTreeMap<String, Value> = serde_json::from_str(&out).expect("report");
    assert_eq!(report.len(), cases.len());
    let mut problems = Vec::new();
    for (id, r) in &report {
        if r["reference"] != json!(true) {
            problems.push(format!("{id}: reference response fails"));
        }
        for (i, passed) in r["wrong"].as_array().expect("list").iter().enumerate() {
            if passed == &json!(true) {
                problems.push(format!("{id}: wrong response #{i} passes"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn actions_references_render_as_one_python_list() {
    let ds = sample_dataset();
    let first = ds.task("sample-actions/01").expect("bundled");
    assert_eq!(
        reference_response(first).expect("reference"),
        "[weather.get_forecast(city='Lisbon', days=3), weather.get_forecast(city='Oslo', days=5, units='imperial')]"
    );
    for task in tasks(&ds, Family::Actions) {
        let r = reference_response(task).expect("reference");
        assert!(
            r.starts_with('[') && r.ends_with(")]") && !r.contains('\n'),
            "{r}"
        );
    }
}

// ------------------------------------------------------------------ data2text

fn ngrams(s: &str, n: usize) -> Vec<Vec<String>> {
    let words: Vec<String> = s
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.windows(n).map(<[String]>::to_vec).collect()
}

fn shared(hyp: &str, refs: &[&str], n: usize) -> usize {
    let pool: Vec<Vec<String>> = refs.iter().flat_map(|r| ngrams(r, n)).collect();
    ngrams(hyp, n).iter().filter(|g| pool.contains(g)).count()
}

#[test]
fn data2text_answers_are_a_reference_or_off_topic() {
    let ds = sample_dataset();
    for task in tasks(&ds, Family::Data2Text) {
        let refs: Vec<&str> = task.sample["references"]
            .as_array()
            .expect("references")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert_eq!(reference_response(task).expect("reference"), refs[0]);
        // Off-topic: no shared trigram and at most one shared bigram, so
        // BLEU's 3- and 4-gram precisions fall to the smoothing floor.
        for wrong in wrongs(task) {
            assert_eq!(shared(&wrong, &refs, 3), 0, "{}: {wrong:?}", task.task_id);
            assert!(shared(&wrong, &refs, 2) <= 1, "{}: {wrong:?}", task.task_id);
        }
    }
}
