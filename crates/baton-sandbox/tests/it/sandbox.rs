//! The plain `Sandbox::run` API.

use std::time::Duration;

use baton_sandbox::{Limits, RunStatus};

use crate::common::sandbox;

#[test]
fn runs_python_and_captures_output() {
    let out = sandbox()
        .run(
            "import sys; print('hi', sys.version_info[:2]); print('err', file=sys.stderr)",
            b"",
            &Limits::default(),
        )
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hi (3, 14)\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
}

#[test]
fn reads_stdin_and_reports_failure() {
    let out = sandbox()
        .run(
            "import sys; data = sys.stdin.read(); print(data.upper()); raise SystemExit(3)",
            b"abc",
            &Limits::default(),
        )
        .unwrap();
    assert_eq!(out.status, RunStatus::Exited { success: false });
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ABC\n");
}

#[test]
fn wall_clock_limit_cuts_sleep() {
    let limits = Limits {
        time: Duration::from_millis(500),
        ..Limits::default()
    };
    let out = sandbox()
        .run("import time; time.sleep(60)", b"", &limits)
        .unwrap();
    assert_eq!(out.status, RunStatus::TimedOut);
    assert!(out.elapsed < Duration::from_secs(2), "{:?}", out.elapsed);
}

#[test]
fn scratch_dir_is_writable_and_private() {
    let program = "open('/tmp/a.txt', 'w').write('x'); import os; print(os.listdir('/tmp'))";
    let first = sandbox().run(program, b"", &Limits::default()).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&first.stdout),
        "['a.txt']\n",
        "{first:?}"
    );
    let second = sandbox()
        .run(
            "import os; print(os.listdir('/tmp'))",
            b"",
            &Limits::default(),
        )
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&second.stdout),
        "[]\n",
        "a fresh scratch dir per run"
    );
}

#[test]
fn stdout_cap_ends_the_run() {
    let limits = Limits {
        stdout: 1 << 16,
        ..Limits::default()
    };
    let out = sandbox()
        .run(
            "import os\nwhile True: os.write(1, b'x' * 4096)",
            b"",
            &limits,
        )
        .unwrap();
    assert_eq!(out.status, RunStatus::OutputLimit, "{:?}", out.status);
    assert!(out.stdout.len() <= 1 << 16);
}

#[test]
fn memory_cap_raises_memory_error() {
    let limits = Limits {
        memory: 64 << 20,
        ..Limits::default()
    };
    let out = sandbox()
        .run("try:\n    x = bytearray(200 * 2**20)\n    print('allocated')\nexcept MemoryError:\n    print('MemoryError')", b"", &limits)
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "MemoryError\n",
        "{out:?}"
    );
    assert!(out.memory_limit_hit);
}

#[test]
fn check_reports_a_healthy_runtime() {
    crate::common::sandbox();
    let report = baton_sandbox::check().unwrap();
    assert!(report.healthy(), "{report}");
    assert!(report.guest_python.starts_with("3.14"), "{report}");
    let text = report.to_string();
    assert!(text.contains("componentize-py:  0.25.1"), "{text}");
}
