//! Per-task grading time over the `code` conformance vectors: the WASI sandbox against
//! native `python3` run the LiC way (one subprocess per task doing the same extraction and
//! call-based grading), in the same run. Prints both and the ratio.
//!
//! `cargo bench -p baton-sandbox --bench grading` (set `BATON_CONFORMANCE_DIR` if the
//! vectors are not at `../shared/conformance`; `BATON_BENCH_PYTHON` picks the interpreter).
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use baton_sandbox::{CodeGrader, GraderConfig};
use serde_json::{Value, json};

/// The native reference: LiC's extraction and LiveCodeBench's call-based grading, as one
/// Python process per task (task JSON on stdin, `{"score": ...}` on stdout).
const NATIVE_HARNESS: &str = r#"
import ast, json, re, signal, sys, types
task = json.load(sys.stdin)
PRELUDE = ("from string import *\nfrom re import *\nfrom datetime import *\nfrom collections import *\n"
    "from heapq import *\nfrom bisect import *\nfrom copy import *\nfrom math import *\n"
    "from random import *\nfrom statistics import *\nfrom itertools import *\n"
    "from functools import *\nfrom operator import *\nfrom io import *\nfrom sys import *\n"
    "from json import *\nfrom builtins import *\nfrom typing import *\nimport string\nimport re\n"
    "import datetime\nimport collections\nimport heapq\nimport bisect\nimport copy\nimport math\n"
    "import random\nimport statistics\nimport itertools\nimport functools\nimport operator\n"
    "import io\nimport sys\nimport json\nsys.setrecursionlimit(50000)\n")
def last_def(code):
    try:
        tree = ast.parse(code)
        imports = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
        defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
        if not defs:
            return ""
        f = defs[-1]
        first = f.decorator_list[0].lineno if f.decorator_list else f.lineno
        body = "\n".join(code.splitlines()[first - 1:f.end_lineno])
        return "\n".join(imports) + "\n\n" + body if imports else body
    except Exception:
        return ""
def extract(text):
    blocks = re.findall(r"```(?:python)?\s*(.*?)\s*```", text, re.DOTALL)
    if "class Solution" in text:
        return [b for b in blocks if "class Solution" in b][-1]
    if blocks:
        for b in reversed(blocks):
            r = last_def(b)
            if r:
                return r
        return ""
    text = text.strip()
    if text.startswith("`"):
        text = text[text.find("\n"):].strip()
    i = text.rfind("import")
    if i < 0:
        i = text.rfind("def")
    if i >= 0:
        text = text[i:]
    return last_def(text)
def grade():
    sample = task["sample"]
    code = task["input"] if task["stage"] == "evaluator" else extract(task["input"])
    code = code.replace("```python", "").replace("```", "")
    if "def " not in code:
        return 0
    if "prompt" in sample:
        imports = [ast.unparse(n) for n in ast.parse(sample["prompt"]).body if isinstance(n, (ast.Import, ast.ImportFrom))]
        if imports:
            code = "\n".join(imports) + "\n\n" + code
    code = code.replace(code.split("def ")[1].split("(")[0].strip(), sample["metadata"]["func_name"])
    tests = json.loads(sample["public_test_cases"])
    if "private_test_cases" in sample:
        import base64, pickle, zlib
        try:
            tests += json.loads(sample["private_test_cases"])
        except Exception:
            tests += json.loads(pickle.loads(zlib.decompress(base64.b64decode(sample["private_test_cases"].encode()))))
    def alarm(*_):
        raise TimeoutError()
    signal.signal(signal.SIGALRM, alarm)
    source = PRELUDE + "\n\n" + code
    import builtins, os, shutil, subprocess
    builtins.quit = None
    for name in ("kill system putenv remove removedirs rmdir fchdir setuid fork forkpty killpg rename "
                 "renames truncate replace unlink fchmod fchown chmod chown chroot lchflags lchmod "
                 "lchown getcwd chdir").split():
        setattr(os, name, None)
    shutil.rmtree = shutil.move = shutil.chown = None
    subprocess.Popen = None
    signal.alarm(6)
    try:
        mod = types.ModuleType("tmp_sol", "")
        exec(source, mod.__dict__)
        target = mod.Solution() if "class Solution" in source else mod
        fn = getattr(target, sample["metadata"]["func_name"])
    except Exception:
        return 0
    finally:
        signal.alarm(0)
    for t in tests:
        args = [json.loads(line) for line in t["input"].split("\n")]
        expected = json.loads(t["output"])
        signal.alarm(6)
        try:
            got = fn(*args)
        except Exception:
            return 0
        finally:
            signal.alarm(0)
        if isinstance(got, tuple):
            got = list(got)
        if not (got == expected):
            return 0
    return 1
try:
    score = grade()
except Exception:
    score = 0
sys.stdout.write(json.dumps({"score": score}))
"#;

fn main() {
    let Some(dir) = baton_fixture::shared_dir("conformance") else {
        return;
    };
    let text = std::fs::read_to_string(dir.join("code.jsonl"))
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.join("code.jsonl").display()));
    let vectors: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let python = std::env::var("BATON_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    // Resolve launcher shims (pyenv, asdf) to the interpreter itself, so that only Python's
    // own start-up is measured.
    let python = Command::new(&python)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|p| !p.is_empty())
        .unwrap_or(python);
    println!("native interpreter: {python}");

    let started = Instant::now();
    let grader = CodeGrader::new(GraderConfig::default()).expect("the sandbox runtime opens");
    println!(
        "sandbox ready in {:.2} s (compiled code from cache: {})",
        started.elapsed().as_secs_f64(),
        grader.sandbox().loaded_from_cache()
    );

    // Warm up both sides once.
    let _ = grader.grade_extracted(
        vectors[0]["input"].as_str().unwrap_or(""),
        &vectors[0]["sample"],
    );
    let _ = native(&python, &vectors[0]);

    let mut sandboxed = Vec::new();
    let mut native_times = Vec::new();
    let (mut agree_sandbox, mut agree_native) = (0, 0);
    for v in &vectors {
        let input = v["input"].as_str().unwrap_or("");
        let expected = v["expected"]["score"].as_f64();
        let t = Instant::now();
        let verdict = match v["stage"].as_str() {
            Some("response") => grader.grade_response(input, &v["sample"]),
            _ => grader.grade_extracted(input, &v["sample"]),
        }
        .expect("no infrastructure error");
        sandboxed.push(t.elapsed());
        agree_sandbox += usize::from(Some(verdict.score) == expected);

        let t = Instant::now();
        let score = native(&python, v);
        native_times.push(t.elapsed());
        agree_native += usize::from(score == expected);
    }

    let n = vectors.len();
    println!("{n} code vectors, one task at a time, sandbox and native interleaved");
    println!(
        "agreement with LiC's expected scores: sandbox {agree_sandbox}/{n}, native harness {agree_native}/{n}"
    );
    println!(
        "{:<22} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "per task (ms)", "mean", "median", "p90", "max", "total s"
    );
    report("sandbox (wasmtime)", &sandboxed);
    report("native python3", &native_times);
    let ratio_mean = mean(&sandboxed) / mean(&native_times);
    let ratio_median = pct(&sandboxed, 0.5) / pct(&native_times, 0.5);
    println!(
        "ratio sandbox/native: mean {ratio_mean:.2}x, median {ratio_median:.2}x (target <= 2x)"
    );
}

fn native(python: &str, v: &Value) -> Option<f64> {
    let task = json!({"stage": v["stage"], "input": v["input"], "sample": v["sample"]});
    let mut child = Command::new(python)
        .arg("-c")
        .arg(NATIVE_HARNESS)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()?
        .write_all(task.to_string().as_bytes())
        .ok()?;
    let out = child.wait_with_output().ok()?;
    // No result (an exit or a kill in the child) is LiC's upstream crash: score 0.
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or(json!({"score": 0.0}));
    result["score"].as_f64()
}

fn mean(times: &[Duration]) -> f64 {
    times.iter().map(Duration::as_secs_f64).sum::<f64>() / times.len().max(1) as f64 * 1e3
}

fn pct(times: &[Duration], q: f64) -> f64 {
    let mut sorted: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    sorted.sort_by(f64::total_cmp);
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn report(name: &str, times: &[Duration]) {
    println!(
        "{name:<22} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2}",
        mean(times),
        pct(times, 0.5),
        pct(times, 0.9),
        pct(times, 1.0),
        times.iter().map(Duration::as_secs_f64).sum::<f64>()
    );
}
