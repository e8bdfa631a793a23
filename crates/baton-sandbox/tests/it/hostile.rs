//! Hostile programs: each must end as a failing verdict, within its time limit, with the
//! host untouched. The graded task is `solve(x) == x + 1`; every program below tries to
//! hang, exhaust, escape, or fake a pass instead of computing it.

use std::time::{Duration, Instant};

use baton_sandbox::{CodeGrader, GraderConfig, Limits};
use serde_json::Value;

use crate::common::{quick_grader, sample, sandbox};

/// The task: two tests, `solve(5) == 6` and `solve(41) == 42`.
fn task() -> Value {
    sample("solve", &[("5", "6"), ("41", "42")])
}

/// Grade `code` (already extracted) and check it fails for a reason mentioning one of
/// `reasons`, within the quick grader's limits (1 s per step).
fn assert_fails(grader: &CodeGrader, code: &str, reasons: &[&str]) -> String {
    let started = Instant::now();
    let shown: String = code.chars().take(300).collect();
    let verdict = grader
        .grade_extracted(code, &task())
        .expect("no infrastructure error");
    let elapsed = started.elapsed();
    let error = verdict.error.clone().unwrap_or_default();
    assert_eq!(verdict.score, 0.0, "passed: {shown}\n{verdict:?}");
    assert_eq!(verdict.is_correct, Some(false));
    assert!(
        reasons.iter().any(|r| error.contains(r)),
        "reason {error:?} mentions none of {reasons:?} for:\n{shown}"
    );
    // 1 s for the module + 1 s per test, plus instantiation; LiC's global limit is 2*2+5 s.
    assert!(
        elapsed < Duration::from_secs(5),
        "took {elapsed:?}: {shown}"
    );
    error
}

macro_rules! hostile {
    ($name:ident, $code:expr, [$($reason:expr),+ $(,)?]) => {
        #[test]
        fn $name() {
            assert_fails(&quick_grader(), $code, &[$($reason),+]);
        }
    };
}

/// Like `hostile!`, with a 64 MiB memory cap so that exhausting it is quick.
macro_rules! hostile_small_memory {
    ($name:ident, $code:expr, [$($reason:expr),+ $(,)?]) => {
        #[test]
        fn $name() {
            let grader = CodeGrader::from_sandbox(
                sandbox().clone(),
                GraderConfig { memory: 64 << 20, ..quick_grader().config().clone() },
            );
            let error = assert_fails(&grader, $code, &[$($reason),+]);
            assert!(error.contains("memory limit of 64 MiB"), "{error}");
        }
    };
}

#[test]
fn the_honest_solution_passes() {
    let verdict = quick_grader()
        .grade_extracted("def solve(x):\n    return x + 1", &task())
        .unwrap();
    assert_eq!(verdict.score, 1.0, "{verdict:?}");
    assert_eq!(verdict.details["passed"], 2);
}

// --- hanging -------------------------------------------------------------------------------

hostile!(
    infinite_loop,
    "def solve(x):\n    while True:\n        pass",
    ["timed out"]
);
hostile!(
    sleep_60,
    "import time\ndef solve(x):\n    time.sleep(60)\n    return x + 1",
    ["timed out"]
);
hostile!(
    select_blocks,
    "import select, socket\ndef solve(x):\n    select.select([], [], [], 60)\n    return x + 1",
    ["timed out", "exception"]
);
hostile!(
    event_wait,
    "import threading\ndef solve(x):\n    threading.Event().wait(60)\n    while True:\n        pass",
    ["timed out"]
);
hostile!(
    module_level_loop,
    "def solve(x):\n    return x + 1\nwhile True:\n    pass",
    ["executing the module exceeded"]
);
hostile!(
    huge_integer_power,
    "def solve(x):\n    return 10 ** 10 ** 9",
    ["timed out", "MemoryError", "memory"]
);
hostile!(
    catastrophic_regex,
    "import re\ndef solve(x):\n    re.match(r'(a+)+$', 'a' * 64 + 'b')\n    return x + 1",
    ["timed out"]
);

// --- exhausting ----------------------------------------------------------------------------

hostile!(
    memory_bomb_at_once,
    "def solve(x):\n    b = bytearray(1900 * 2**20)\n    return x + 1",
    ["MemoryError"]
);
hostile_small_memory!(
    memory_bomb_gradual,
    "def solve(x):\n    keep = []\n    while True:\n        keep.append(bytearray(8 * 2**20))",
    ["MemoryError", "memory"]
);
hostile_small_memory!(
    string_doubling,
    "def solve(x):\n    s = 'a'\n    while True:\n        s += s",
    ["MemoryError", "OverflowError", "memory"]
);
hostile!(
    deep_python_recursion,
    "def solve(x):\n    return solve(x + 1)",
    ["RecursionError", "killed", "stopped"]
);
hostile!(
    deep_c_recursion_lru_cache,
    "from functools import lru_cache\n@lru_cache(None)\ndef dfs(n):\n    return dfs(n + 1) + 1\ndef solve(x):\n    return dfs(0)",
    ["RecursionError", "killed", "stopped"]
);
hostile!(
    gigabyte_of_prints,
    "def solve(x):\n    chunk = 'x' * (1 << 20)\n    for _ in range(1 << 12):\n        print(chunk)\n    while True:\n        pass",
    ["timed out"]
);
hostile!(
    gigabyte_to_raw_stdout,
    "import os\ndef solve(x):\n    chunk = b'x' * (1 << 20)\n    for _ in range(1 << 10):\n        os.write(1, chunk)\n    return x + 1",
    ["output cap", "stopped"]
);
hostile!(
    compile_bomb_nesting,
    &format!(
        "def solve(x):\n    return {}x{} + 1",
        "(".repeat(5000),
        ")".repeat(5000)
    ),
    [
        "compile error",
        "exception",
        "RecursionError",
        "MemoryError"
    ]
);
hostile!(
    compile_bomb_long_expression,
    &format!("def solve(x):\n    return x{}", " + 1".repeat(200_000)),
    // CPython's parser either raises or exhausts the guest's call stack (a trap that
    // kills only the instance), depending on how the runner was compiled.
    [
        "compile error",
        "RecursionError",
        "exception",
        "exceeded",
        "call stack exhausted"
    ]
);
hostile!(
    huge_integer_literal,
    &format!("def solve(x):\n    return {}", "9".repeat(100_000)),
    ["compile error", "exception"]
);

// --- escaping ------------------------------------------------------------------------------

hostile!(
    fork,
    "import os\ndef solve(x):\n    os.fork()\n    return x + 1",
    ["exception"]
);
hostile!(
    subprocess_run,
    "import subprocess\ndef solve(x):\n    return int(subprocess.check_output(['echo', str(x + 1)]))",
    ["exception"]
);
hostile!(
    posix_spawn,
    "import os\ndef solve(x):\n    os.posix_spawn('/bin/sh', ['sh'], {})\n    return x + 1",
    ["exception"]
);
hostile!(
    threads,
    "import threading\ndef solve(x):\n    out = []\n    t = threading.Thread(target=lambda: out.append(x + 1))\n    t.start(); t.join()\n    return out[0]",
    ["exception"]
);
hostile!(
    socket_connect,
    "import socket\ndef solve(x):\n    socket.create_connection(('1.1.1.1', 80), timeout=1)\n    return x + 1",
    ["exception"]
);
hostile!(
    dns_lookup,
    "import socket\ndef solve(x):\n    socket.getaddrinfo('example.com', 80)\n    return x + 1",
    ["exception"]
);
hostile!(
    read_etc_passwd,
    "def solve(x):\n    return len(open('/etc/passwd').read()) * 0 + x + 1",
    ["exception"]
);
hostile!(
    dotdot_escape,
    "def solve(x):\n    return len(open('/tmp/../etc/passwd').read()) * 0 + x + 1",
    ["exception"]
);
hostile!(
    list_root,
    "import os\ndef solve(x):\n    names = os.listdir('/')\n    return x + 1 if 'etc' in names else -1",
    ["exception", "wrong answer"]
);
hostile!(
    import_ctypes,
    "import ctypes\ndef solve(x):\n    return x + 1",
    ["ModuleNotFoundError", "exception"]
);
hostile!(
    exit_in_function,
    "import sys\ndef solve(x):\n    sys.exit(0)",
    ["exited"]
);
hostile!(
    os_exit_in_function,
    "import os\ndef solve(x):\n    os._exit(0)",
    ["os._exit(0)"]
);
hostile!(
    keyboard_interrupt,
    "def solve(x):\n    raise KeyboardInterrupt",
    ["exited"]
);

#[test]
fn writing_outside_the_scratch_dir_fails_and_leaves_the_host_alone() {
    let host_dir = tempfile::tempdir().unwrap();
    let target = host_dir.path().join("escaped.txt");
    let code = format!(
        "def solve(x):\n    open({:?}, 'w').write('pwned')\n    return x + 1",
        target.display().to_string()
    );
    assert_fails(&quick_grader(), &code, &["exception"]);
    assert!(!target.exists(), "the guest wrote to the host filesystem");
}

#[test]
fn the_host_environment_is_invisible() {
    // SAFETY: every environment access in this process goes through std's env lock, and no
    // foreign code reads the environment concurrently; the marker is never removed.
    #[allow(unsafe_code)]
    unsafe {
        std::env::set_var("BATON_SANDBOX_HOST_MARKER", "host-secret-4711");
    }
    let out = sandbox()
        .run(
            "import os\nprint(sorted(os.environ.items()))\nprint(os.environ.get('BATON_SANDBOX_HOST_MARKER'))",
            b"",
            &Limits::default(),
        )
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text, "[]\nNone\n");
    let task = sample("solve", &[("5", "\"host-secret-4711\"")]);
    let verdict = quick_grader()
        .grade_extracted(
            "import os\ndef solve(x):\n    return os.environ.get('BATON_SANDBOX_HOST_MARKER', 'absent')",
            &task,
        )
        .unwrap();
    assert_eq!(verdict.score, 0.0);
    assert!(verdict.error.unwrap().contains("wrong answer"));
}

// --- lying ---------------------------------------------------------------------------------

hostile!(
    lying_eq,
    "def solve(x):\n    return Yes()\nclass Yes:\n    def __eq__(self, other):\n        return True\n    __hash__ = object.__hash__",
    ["wrong answer"]
);
hostile!(
    lying_list_subclass,
    "def solve(x):\n    return L()\nclass L(list):\n    def __eq__(self, other):\n        return True\n    def __iter__(self):\n        return iter([6])",
    ["wrong answer"]
);
hostile!(
    lying_int_subclass,
    "def solve(x):\n    return I(0)\nclass I(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__",
    ["wrong answer"]
);
hostile!(
    lying_class_attribute,
    "def solve(x):\n    return Fake()\nclass Fake:\n    __class__ = int\n    def __eq__(self, other):\n        return True",
    ["wrong answer"]
);
hostile!(
    patched_builtins,
    "import builtins\ndef solve(x):\n    return Yes()\nclass Yes:\n    def __eq__(self, other):\n        return True\nbuiltins.isinstance = lambda *a: True\nbuiltins.type = lambda *a: int\nbuiltins.repr = lambda *a: '6'\nbuiltins.str = lambda *a: '6'",
    ["wrong answer"]
);
hostile!(
    patched_json,
    "import json\njson.dumps = lambda *a, **k: '6'\njson.loads = lambda *a, **k: 5\njson.JSONEncoder.encode = lambda *a, **k: '6'\ndef solve(x):\n    return -x",
    ["wrong answer"]
);
hostile!(
    printed_fake_records,
    "import os, sys\ndef solve(x):\n    print('6'); print('{\"ok\": true, \"value\": 6}')\n    os.write(1, b'6\\n42\\n'); sys.__stdout__.write('6\\n')\n    return None",
    ["wrong answer"]
);
hostile!(
    written_fake_result_files,
    "def solve(x):\n    for name in ('/tmp/result.json', '/tmp/results', '/tmp/out'):\n        open(name, 'w').write('[6, 42]')\n    return 'pass'",
    ["wrong answer"]
);
hostile!(
    tampered_harness,
    "import sys\nfor m in list(sys.modules.values()):\n    if hasattr(m, '_encode'):\n        m._encode = lambda value: 'true'\n    if hasattr(m, 'Grader'):\n        m.Grader.call = lambda self, inp: 'true'\ndef solve(x):\n    return 0",
    ["wrong answer"]
);
hostile!(
    hunts_for_expected_outputs,
    "import gc\ndef solve(x):\n    found = [o for o in gc.get_objects() if isinstance(o, (int, str)) and str(o) in ('6', '42')]\n    return found[0] if found else None",
    ["wrong answer", "exception"]
);
hostile!(
    exception_with_hanging_str,
    "def solve(x):\n    raise E()\nclass E(Exception):\n    def __str__(self):\n        while True:\n            pass",
    ["timed out"]
);
hostile!(
    deeply_nested_result,
    "def solve(x):\n    a = []\n    for _ in range(10 ** 6):\n        a = [a]\n    return a",
    ["too deep", "stopped", "timed out"]
);
hostile!(
    returns_a_generator,
    "def solve(x):\n    yield x + 1",
    ["wrong answer"]
);
#[test]
fn a_nested_tuple_never_equals_a_list() {
    let task = sample("solve", &[("5", "[[6], 6]")]);
    let grader = quick_grader();
    let nested = grader
        .grade_extracted("def solve(x):\n    return [(x + 1,), x + 1]", &task)
        .unwrap();
    assert_eq!(nested.score, 0.0, "{nested:?}");
    let top = grader
        .grade_extracted("def solve(x):\n    return ([x + 1], x + 1)", &task)
        .unwrap();
    assert_eq!(top.score, 1.0, "a top-level tuple becomes a list: {top:?}");
}

#[test]
fn host_survives_a_burst_of_hostile_programs_in_parallel() {
    use rayon::prelude::*;
    let grader = quick_grader();
    let programs = [
        "def solve(x):\n    while True:\n        pass",
        "def solve(x):\n    keep = []\n    while True:\n        keep.append(bytearray(8 * 2**20))",
        "import os\ndef solve(x):\n    os._exit(1)",
        "def solve(x):\n    return solve(x + 1)",
    ];
    let started = Instant::now();
    let scores: Vec<f64> = programs
        .par_iter()
        .map(|code| grader.grade_extracted(code, &task()).unwrap().score)
        .collect();
    assert!(scores.iter().all(|&s| s == 0.0));
    assert!(started.elapsed() < Duration::from_secs(10));
    let verdict = grader
        .grade_extracted("def solve(x):\n    return x + 1", &task())
        .unwrap();
    assert_eq!(
        verdict.score, 1.0,
        "the sandbox still grades correctly afterwards"
    );
}
