use baton_sandbox::Limits;
use crate::common::{quick_grader, sample, sandbox};

#[test]
fn probe() {
    let prog = r#"
import time, threading, select, queue, asyncio
def t(name, f):
    s = time.monotonic()
    try:
        r = f()
    except BaseException as e:
        r = repr(e)
    print(name, round(time.monotonic() - s, 2), r, flush=True)
t("sleep", lambda: time.sleep(1))
t("event", lambda: threading.Event().wait(1))
c = threading.Condition()
def cw():
    with c:
        return c.wait(1)
t("cond", cw)
t("select", lambda: select.select([], [], [], 1))
t("queue", lambda: queue.Queue().get(timeout=1))
l = threading.Lock(); l.acquire()
t("lock", lambda: l.acquire(timeout=1))
t("sem", lambda: threading.Semaphore(0).acquire(timeout=1))
t("asyncio", lambda: asyncio.run(asyncio.sleep(1)))
t("perf", lambda: time.perf_counter())
import os
t("fds", lambda: len([open('/tmp/f%d' % i, 'w') for i in range(3000)]))
"#;
    let out = sandbox().run(prog, b"", &Limits { time: std::time::Duration::from_secs(30), ..Limits::default() }).unwrap();
    eprintln!("{}\n{}\n{:?}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr), out.status);
    let g = quick_grader();
    let empty = sample("bar", &[]);
    for code in ["x = 'def foo('", "def foo():\n    pass", "if False:\n    def foo():\n        pass", "class A:\n    def foo(self): pass"] {
        let v = g.grade_extracted(code, &empty).unwrap();
        eprintln!("{code:?} -> {} {:?}", v.score, v.error);
    }
}
