//! The limits issue 9 asked for: waits that take their time, the scratch quotas, the cap on
//! a returned value, LiC's rule for a task without tests, and the grading concurrency cap.

use std::time::{Duration, Instant};

use baton_sandbox::{CodeGrader, GraderConfig, Limits, MAX_RESULT_BYTES, ScratchLimits};
use serde_json::Value;

use crate::common::{quick_grader, sample, sandbox};

/// The task: two tests, `solve(5) == 6` and `solve(41) == 42`.
fn task() -> Value {
    sample("solve", &[("5", "6"), ("41", "42")])
}

/// Grade `code` with the quick grader (1 s per step) and return the verdict's reason,
/// checking that it failed within LiC's global limit for two tests (2 * 2 + 5 s).
fn failure(code: &str) -> String {
    failure_with(&quick_grader(), code)
}

/// A grader with small scratch quotas (4 MiB, 100 entries, 32 handles) and 5 s per step,
/// so that reaching a quota or building a big value is not cut by the time limit first.
fn quota_grader() -> CodeGrader {
    CodeGrader::from_sandbox(
        sandbox().clone(),
        GraderConfig {
            test_time_limit: Duration::from_secs(5),
            scratch: ScratchLimits {
                bytes: 4 << 20,
                files: 100,
                open_files: 32,
            },
            ..GraderConfig::default()
        },
    )
}

fn failure_with(grader: &CodeGrader, code: &str) -> String {
    let started = Instant::now();
    let verdict = grader.grade_extracted(code, &task()).unwrap();
    let limit = grader.config().test_time_limit;
    assert!(
        started.elapsed() < limit * 4 + Duration::from_secs(5),
        "{code}"
    );
    assert_eq!(verdict.score, 0.0, "passed: {code}\n{verdict:?}");
    verdict.error.unwrap_or_default()
}

fn passes(code: &str) {
    let verdict = quick_grader().grade_extracted(code, &task()).unwrap();
    assert_eq!(verdict.score, 1.0, "{code}\n{verdict:?}");
}

// See: issue 9 ("`threading.Event().wait(120)` returns at once in the guest, so an answer
// that waits two minutes passes where LiC's time limit fails it").
#[test]
fn issue_9_waits_count_against_the_time_limit() {
    let waits = [
        "threading.Event().wait(30)",
        "threading.Event().wait()",
        "c = threading.Condition()\n    with c:\n        c.wait(30)",
        "l = threading.Lock()\n    l.acquire()\n    l.acquire(timeout=30)",
        "l = _thread.allocate_lock()\n    l.acquire()\n    l.acquire()",
        "threading.Semaphore(0).acquire(timeout=30)",
        "threading.Barrier(2).wait(30)",
        "queue.SimpleQueue().get(timeout=30)",
        "queue.Queue().get()",
        "select.select([], [], [], 30)",
        "time.sleep(30)",
        "time.sleep(1e9)",
    ];
    for wait in waits {
        let indented = wait.replace("\n    ", "\n        ");
        let code = format!(
            "import threading, _thread, queue, select, time\ndef solve(x):\n    try:\n        {indented}\n    except BaseException:\n        pass\n    return x + 1"
        );
        let reason = failure(&code);
        assert!(reason.contains("timed out"), "{wait}: {reason}");
    }
}

#[test]
fn short_waits_take_as_long_as_natively_and_still_pass() {
    passes(
        "import threading, queue, time\ndef solve(x):\n    t = time.monotonic()\n    threading.Event().wait(0.1)\n    c = threading.Condition()\n    with c:\n        c.wait(0.1)\n    try:\n        queue.SimpleQueue().get(timeout=0.1)\n    except queue.Empty:\n        pass\n    l = threading.Lock()\n    assert l.acquire() and not l.acquire(False) and not l.acquire(timeout=0.1)\n    l.release()\n    with l:\n        assert l.locked()\n    return x + 1 if time.monotonic() - t >= 0.39 else -1",
    );
}

#[test]
fn scratch_files_work_within_the_quotas() {
    passes(
        "import os\ndef solve(x):\n    os.makedirs('/tmp/a/b', exist_ok=True)\n    with open('/tmp/a/b/n', 'w') as f:\n        f.write(str(x + 1) * 1000)\n    with open('/tmp/a/b/n', 'a') as f:\n        f.write('!')\n    data = open('/tmp/a/b/n').read()\n    return int(data[:len(str(x + 1))])",
    );
}

// See: issue 9 ("the guest's `/tmp` has no size or file-count limit and every guest `open`
// holds a host descriptor").
#[test]
fn issue_9_scratch_quotas_hold() {
    let programs = [
        (
            "bytes through a stream",
            "def solve(x):\n    with open('/tmp/big', 'wb') as f:\n        for _ in range(10):\n            f.write(b'x' * (1 << 20))\n    return x + 1",
        ),
        (
            "bytes in many files",
            "def solve(x):\n    for i in range(10):\n        with open('/tmp/f%d' % i, 'wb') as f:\n            f.write(b'x' * (1 << 20))\n    return x + 1",
        ),
        (
            "a sparse truncate",
            "def solve(x):\n    with open('/tmp/sparse', 'wb') as f:\n        f.truncate(1 << 40)\n    return x + 1",
        ),
        (
            "a write far past the end",
            "import os\ndef solve(x):\n    fd = os.open('/tmp/seek', os.O_WRONLY | os.O_CREAT)\n    os.pwrite(fd, b'x', 1 << 40)\n    return x + 1",
        ),
        (
            "entries",
            "def solve(x):\n    for i in range(5000):\n        open('/tmp/e%d' % i, 'w').close()\n    return x + 1",
        ),
        (
            "directories",
            "import os\ndef solve(x):\n    for i in range(5000):\n        os.mkdir('/tmp/d%d' % i)\n    return x + 1",
        ),
        (
            "open files",
            "def solve(x):\n    keep = [open('/tmp/o', 'w')]\n    for i in range(5000):\n        keep.append(open('/tmp/o'))\n    return x + 1",
        ),
    ];
    let grader = quota_grader();
    for (what, code) in programs {
        let reason = failure_with(&grader, code);
        assert!(reason.contains("scratch quota"), "{what}: {reason}");
    }
}

#[test]
fn a_run_reports_the_quota_and_the_guest_sees_os_errors() {
    let limits = Limits {
        scratch: ScratchLimits {
            bytes: 1 << 20,
            files: 10,
            open_files: 16,
        },
        ..Limits::default()
    };
    // A write through a stream fails with EIO: wasi-libc reports every failed stream write
    // so. A positioned write and the entry and handle quotas give their own codes.
    let program = "import errno, os\ndef err(f):\n    try:\n        f()\n    except OSError as e:\n        return errno.errorcode.get(e.errno, e.errno)\n    return 'ok'\nprint(err(lambda: open('/tmp/a', 'wb').write(b'x' * (2 << 20))))\nprint(err(lambda: os.pwrite(os.open('/tmp/b', os.O_WRONLY | os.O_CREAT), b'x', 2 << 20)))\nprint(err(lambda: [open('/tmp/e%d' % i, 'w').close() for i in range(20)]))\nprint(err(lambda: [open('/tmp/b') for i in range(20)]))\n";
    let out = sandbox().run(program, b"", &limits).unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text,
        "EIO\nENOSPC\nEDQUOT\nEDQUOT\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.scratch_limit_hit);
    let quiet = sandbox()
        .run("open('/tmp/a', 'w').write('hi')", b"", &limits)
        .unwrap();
    assert!(quiet.status.success() && !quiet.scratch_limit_hit);
}

// See: issue 9 ("a guest's returned value has a depth limit but no size limit").
#[test]
fn issue_9_returned_values_have_a_byte_cap() {
    let big = MAX_RESULT_BYTES + 1;
    let programs = [
        format!("def solve(x):\n    return 'x' * {big}"),
        "def solve(x):\n    return [7] * (6 * 10 ** 6)".to_string(),
        "def solve(x):\n    return [None] * (10 ** 7)".to_string(),
        "def solve(x):\n    return dict.fromkeys(range(3 * 10 ** 6))".to_string(),
        "def solve(x):\n    return 1 << (200 << 20)".to_string(),
        "def solve(x):\n    return ['y' * 1000] * 20000".to_string(),
    ];
    let grader = quota_grader();
    for code in &programs {
        let reason = failure_with(&grader, code);
        assert!(
            reason.contains(&format!("longer than {MAX_RESULT_BYTES} bytes")),
            "{code}: {reason}"
        );
    }
    // A program that replaces the serializer still meets the host's cap.
    let reason = failure_with(
        &grader,
        &format!(
            "import sys\nfor m in list(sys.modules.values()):\n    if hasattr(m, '_encode'):\n        m._encode = lambda value: 'x' * {big}\ndef solve(x):\n    return 0"
        ),
    );
    assert!(reason.contains("longer than"), "{reason}");
    passes("def solve(x):\n    return x + 1 + 0 * len('z' * (1 << 20))");
}

// See: issue 9 ("a task with no test cases passes any answer containing `def` (LiC resolves
// the named function and fails when it is missing)").
#[test]
fn issue_9_without_tests_the_named_function_must_exist() {
    let no_tests = sample("bar", &[]);
    let grader = quick_grader();
    for (code, want) in [
        ("def foo():\n    pass", 1.0),
        ("x = 1\ndef foo(a, b):\n    return a", 1.0),
        ("x = 'def foo('", 0.0),
        ("if False:\n    def foo():\n        pass", 0.0),
        ("class A:\n    def foo(self):\n        pass", 0.0),
        ("def foo(:\n    pass", 0.0),
        ("def foo():\n    pass\ndel bar", 0.0),
        ("def foo():\n    pass\nraise ValueError", 0.0),
    ] {
        let verdict = grader.grade_extracted(code, &no_tests).unwrap();
        assert_eq!(verdict.score, want, "{code}: {verdict:?}");
        if want == 0.0 {
            assert!(verdict.error.is_some(), "{code}");
        }
    }
}

// See: issue 9 ("graders run without a cap (a group's 30 episodes grade at once, 512 MiB
// each)").
#[test]
fn issue_9_graders_run_under_a_concurrency_limit() {
    use rayon::prelude::*;
    let one_at_a_time = CodeGrader::from_sandbox(
        sandbox().clone(),
        GraderConfig {
            max_concurrent: 1,
            ..GraderConfig::default()
        },
    );
    let code = "import time\ndef solve(x):\n    time.sleep(0.2)\n    return x + 1";
    let started = Instant::now();
    let scores: Vec<f64> = (0..4)
        .into_par_iter()
        .map(|_| {
            let grader = one_at_a_time.clone();
            grader.grade_extracted(code, &task()).unwrap().score
        })
        .collect();
    // Each grading sleeps 2 × 0.2 s; one at a time, four take at least 1.6 s, and waiting
    // for a turn does not count against anyone's time limit.
    assert_eq!(scores, [1.0; 4]);
    assert!(started.elapsed() >= Duration::from_millis(1600));
    assert!(GraderConfig::default().max_concurrent >= 1);
    assert!(GraderConfig::machine_concurrency(usize::MAX) == 1);
}
