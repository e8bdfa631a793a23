//! The sandbox boundary, the same cases for every isolating backend.

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use baton_env::{DirBlobStore, Exec, ExitStatus};

use crate::{Harness, run, sample_tree};

/// Instantiate every boundary case for one backend.
macro_rules! boundary_tests {
    ($module:ident, $harness:expr) => {
        mod $module {
            use super::*;

            fn harness() -> Option<Harness> {
                $harness
            }

            #[test]
            fn no_address_is_reachable() {
                if let Some(h) = harness() {
                    no_address_is_reachable_case(&h)
                }
            }

            #[test]
            fn writes_outside_the_tree_fail() {
                if let Some(h) = harness() {
                    writes_outside_the_tree_fail_case(&h)
                }
            }

            #[test]
            fn host_files_and_variables_are_not_visible() {
                if let Some(h) = harness() {
                    host_files_and_variables_are_not_visible_case(&h)
                }
            }

            #[test]
            fn a_fork_bomb_stays_under_the_process_limit() {
                if let Some(h) = harness() {
                    a_fork_bomb_stays_under_the_process_limit_case(&h)
                }
            }

            #[test]
            fn a_fork_bomb_ends_at_the_timeout_without_leftovers() {
                if let Some(h) = harness() {
                    a_fork_bomb_ends_at_the_timeout_without_leftovers_case(&h)
                }
            }

            #[test]
            fn a_gigabyte_of_output_is_cut_to_the_limit() {
                if let Some(h) = harness() {
                    a_gigabyte_of_output_is_cut_to_the_limit_case(&h)
                }
            }

            #[test]
            fn memory_is_limited() {
                if let Some(h) = harness() {
                    memory_is_limited_case(&h)
                }
            }

            #[test]
            fn cpu_time_and_file_size_are_limited() {
                if let Some(h) = harness() {
                    cpu_time_and_file_size_are_limited_case(&h)
                }
            }

            #[test]
            fn a_timeout_kills_grandchildren() {
                if let Some(h) = harness() {
                    a_timeout_kills_grandchildren_case(&h, true)
                }
            }

            #[test]
            fn files_persist_but_directory_and_variables_do_not() {
                if let Some(h) = harness() {
                    files_persist_but_directory_and_variables_do_not_case(&h)
                }
            }

            #[test]
            fn python_never_reuses_stale_bytecode() {
                if let Some(h) = harness() {
                    python_never_reuses_stale_bytecode_case(&h)
                }
            }

            #[test]
            fn snapshots_round_trip_with_a_nested_git_repository() {
                if let Some(h) = harness() {
                    snapshots_round_trip_with_a_nested_git_repository_case(&h)
                }
            }

            #[test]
            fn stdin_and_written_files_reach_the_command() {
                if let Some(h) = harness() {
                    stdin_and_written_files_reach_the_command_case(&h)
                }
            }
        }
    };
}

boundary_tests!(bwrap, Harness::bwrap());
boundary_tests!(docker, Harness::docker_shim());

pub fn no_address_is_reachable_case(h: &Harness) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    let script = format!(
        r#"python3 - <<'PY'
import socket
for host, port in [("127.0.0.1", {port}), ("1.1.1.1", 53), ("8.8.8.8", 443), ("::1", {port})]:
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        print("CONNECTED", host)
    except OSError as e:
        print("failed", host, type(e).__name__)
try:
    socket.getaddrinfo("example.com", 80)
    print("RESOLVED")
except OSError:
    print("no dns")
PY
(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo CONNECTED-bash"#
    );
    let out = run(&mut env, &script);
    let text = out.output.text();
    assert!(
        !text.contains("CONNECTED") && !text.contains("RESOLVED"),
        "{}: {text}",
        h.name
    );
    assert_eq!(text.matches("failed").count(), 4, "{}: {text}", h.name);
    assert!(
        listener.accept().is_err(),
        "{}: the host listener saw a connection",
        h.name
    );
}

pub fn writes_outside_the_tree_fail_case(h: &Harness) {
    let outside = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    let o = outside.path().display();
    // A container's own root is writable (an image layer, not the host); under bwrap
    // nothing but the tree and /tmp is.
    let system = if h.root_writable {
        ""
    } else {
        "/usr/x /usr/bin/x /etc/x /x /home/x /root/x /var/x /testbed/../x"
    };
    let script = format!(
        "for p in {system} {o}/direct; do \
           (echo hi > $p) 2>/dev/null && echo WROTE $p; done; \
         ln -s {o} escape; (echo x > escape/via-link) 2>/dev/null && echo WROTE-link; \
         ln -s {o}/file flink; (echo x > flink) 2>/dev/null && echo WROTE-flink; \
         echo hi > inside && echo inside-ok"
    );
    let out = run(&mut env, &script);
    let text = out.output.text();
    assert!(!text.contains("WROTE"), "{}: {text}", h.name);
    assert!(text.contains("inside-ok"), "{}: {text}", h.name);
    // The host's own operations on the tree do not follow the planted links either.
    env.write_file("escape/planted.py", b"x", false).unwrap();
    let blobs = DirBlobStore::new(store.path()).unwrap();
    let snap = env.snapshot(&blobs).unwrap();
    env.restore(&blobs, &snap.id).unwrap();
    let leaked: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
    assert!(leaked.is_empty(), "{}: written outside: {leaked:?}", h.name);
}

pub fn host_files_and_variables_are_not_visible_case(h: &Harness) {
    let secret_dir = tempfile::tempdir().unwrap();
    let secret = secret_dir.path().join("secret.txt");
    std::fs::write(&secret, "top secret").unwrap();
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    let repo = env!("CARGO_MANIFEST_DIR");
    // The markers are put together at run time: the sandbox's PID 1 is bwrap's own init,
    // whose command line holds the script.
    let script = format!(
        "s=SAW; cat /proc/1/cmdline | tr '\\0\\n' '  '; echo; \
         ls /proc | grep -c '^[0-9]'; \
         cat {} 2>/dev/null && echo $s-secret; \
         ls {repo} 2>/dev/null && echo $s-repo; \
         for d in /root /home /work /mnt /opt /srv /var /boot /sys /run; do \
           [ -n \"$(ls -A $d 2>/dev/null)\" ] && echo $s-$d; done; \
         [ -e /etc/shadow ] && echo $s-shadow; \
         echo ---; env | cut -d= -f1 | sort",
        secret.display()
    );
    let out = run(&mut env, &script);
    let text = out.output.text();
    let after_init: String = text.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert!(!after_init.contains("SAW-"), "{}: {text}", h.name);
    let host_init = std::fs::read("/proc/1/cmdline").unwrap_or_default();
    let host_init = String::from_utf8_lossy(&host_init).replace('\0', " ");
    let sandbox_init = text.lines().next().unwrap_or_default();
    assert_ne!(
        sandbox_init.trim(),
        host_init.trim(),
        "{}: sees the host's PID 1",
        h.name
    );
    let procs: usize = text.lines().nth(1).unwrap().trim().parse().unwrap();
    assert!(procs < 10, "{}: sees {procs} processes: {text}", h.name);
    let vars: Vec<&str> = text.split("---\n").nth(1).unwrap().lines().collect();
    let allowed = [
        "HOME",
        "LANG",
        "LOGNAME",
        "OLDPWD",
        "PATH",
        "PWD",
        "PYTHONDONTWRITEBYTECODE",
        "SHLVL",
        "USER",
        "_",
    ];
    for v in &vars {
        assert!(
            allowed.contains(v),
            "{}: unexpected variable {v} in {vars:?}",
            h.name
        );
    }
}

pub fn a_fork_bomb_stays_under_the_process_limit_case(h: &Harness) {
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    let limit = h.config.limits.processes as usize;
    let script = r#"python3 - <<'PY'
import os, subprocess, time
p = subprocess.Popen(["bash", "-c", "b(){ b|b& };b"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
peak = 0
for _ in range(25):
    time.sleep(0.1)
    peak = max(peak, sum(1 for d in os.listdir("/proc") if d.isdigit()))
print("peak", peak)
PY"#;
    let t = Instant::now();
    let out = env
        .exec(&Exec::new(script).timeout(Duration::from_secs(30)))
        .unwrap();
    let text = out.output.text();
    let peak: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("peak "))
        .unwrap_or_else(|| panic!("{}: {text}", h.name))
        .trim()
        .parse()
        .unwrap();
    assert!(peak > 20, "{}: the bomb did not run: {text}", h.name);
    // RLIMIT_NPROC holds exactly (256 of 256) when the bomb runs alone; while other
    // sandboxes' bombs are being killed at the same time, the count seen in /proc has
    // briefly reached 280-321 on a 2-core machine (the cause is in the kernel's accounting
    // and was not pinned down). Bounded either way, and ended by the timeout.
    assert!(
        peak <= limit + limit / 2,
        "{}: {peak} processes over a limit of {limit}",
        h.name
    );
    assert!(
        t.elapsed() < Duration::from_secs(25),
        "{}: took {:?}",
        h.name,
        t.elapsed()
    );
}

pub fn a_fork_bomb_ends_at_the_timeout_without_leftovers_case(h: &Harness) {
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    let marker = format!("bomb{}x{}", std::process::id(), h.name);
    let t = Instant::now();
    let out = env
        .exec(
            &Exec::new(format!(
                "{marker}(){{ {marker}|{marker}& }};{marker}; while :; do :; done"
            ))
            .timeout(Duration::from_secs(2)),
        )
        .unwrap();
    assert_eq!(out.status, ExitStatus::TimedOut, "{}", h.name);
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "{}: took {:?}",
        h.name,
        t.elapsed()
    );
    // Nothing with the marker survives on the host.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_with(&marker);
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{}: {left} bomb processes survived",
            h.name
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(run(&mut env, "echo alive").output.text(), "alive\n");
}

/// Host processes whose command line mentions `marker`.
fn processes_with(marker: &str) -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.chars().all(|c| c.is_ascii_digit()) && name != me
        })
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(marker))
        })
        .count()
}

pub fn a_gigabyte_of_output_is_cut_to_the_limit_case(h: &Harness) {
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    let t = Instant::now();
    let out = env
        .exec(
            &Exec::new("echo start; head -c 1000000000 /dev/zero | tr '\\0' x; echo; echo end")
                .timeout(Duration::from_secs(60)),
        )
        .unwrap();
    assert!(out.status.success(), "{}: {:?}", h.name, out.status);
    let limit = h.config.limits.output_bytes;
    assert_eq!(out.output.total_bytes, 1_000_000_000 + 11, "{}", h.name);
    assert!(
        out.output.head.len() as u64 <= limit / 2 && out.output.tail.len() as u64 <= limit / 2 + 1
    );
    assert!(out.output.head.starts_with("start\nxxx"), "{}", h.name);
    assert!(out.output.tail.ends_with("xxx\nend\n"), "{}", h.name);
    assert_eq!(
        out.output.omitted_bytes,
        out.output.total_bytes - out.output.head.len() as u64 - out.output.tail.len() as u64
    );
    assert!(out.output.text().contains("bytes of output omitted"));
    assert!(
        t.elapsed() < Duration::from_secs(50),
        "{}: took {:?}",
        h.name,
        t.elapsed()
    );
}

pub fn memory_is_limited_case(h: &Harness) {
    let tree = sample_tree();
    let mut config = h.config.clone();
    config.limits.memory_bytes = 512 << 20;
    let mut env = h.start_with(&config, tree.path());
    let out = run(
        &mut env,
        "python3 -c 'b = bytearray(2 * 1024**3); print(\"ALLOCATED\")'",
    );
    let text = out.output.text();
    assert!(
        !out.status.success() && text.contains("MemoryError"),
        "{}: {:?} {text}",
        h.name,
        out.status
    );
    let ok = run(
        &mut env,
        "python3 -c 'b = bytearray(64 * 1024**2); print(len(b))'",
    );
    assert!(ok.status.success(), "{}: {}", h.name, ok.output.text());
}

pub fn cpu_time_and_file_size_are_limited_case(h: &Harness) {
    let tree = sample_tree();
    let mut config = h.config.clone();
    config.limits.cpu_secs = Some(1);
    config.limits.file_size_bytes = 1 << 20;
    let mut env = h.start_with(&config, tree.path());
    let t = Instant::now();
    let out = env
        .exec(&Exec::new("python3 -c 'while True: pass'").timeout(Duration::from_secs(30)))
        .unwrap();
    // Soft and hard limits are equal: SIGXCPU (24) or straight SIGKILL (9).
    assert!(
        matches!(out.return_code(), Some(152) | Some(137)),
        "{}: {:?}",
        h.name,
        out.status
    );
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "{}: took {:?}",
        h.name,
        t.elapsed()
    );
    let out = run(
        &mut env,
        "head -c 2000000 /dev/zero > big; echo rc=$?; stat -c %s big",
    );
    assert_eq!(
        out.output.text().trim_end().lines().last(),
        Some("1048576"),
        "{}: {}",
        h.name,
        out.output.text()
    );
    assert!(
        out.output.text().contains("rc=153"),
        "{}: SIGXFSZ expected: {}",
        h.name,
        out.output.text()
    );
}

pub fn a_timeout_kills_grandchildren_case(h: &Harness, with_setsid: bool) {
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    // Each loop appends a counter with builtins first, so the file exists at once; it
    // appends rather than rewrites, so a kill between truncating and writing cannot
    // leave it empty.
    let setsid = if with_setsid {
        "setsid bash -c 'i=0; while true; do i=$((i+1)); echo $i >> tick2; sleep 0.05; done' & "
    } else {
        ""
    };
    let cmd = format!(
        "(i=0; while true; do i=$((i+1)); echo $i >> tick; sleep 0.05; done) & {setsid}\
         bash -c 'sleep 100' & sleep 100"
    );
    let t = Instant::now();
    let out = env
        // Long enough for the loops to start on a loaded machine; what is tested is that
        // nothing outlives the timeout.
        .exec(&Exec::new(cmd).timeout(Duration::from_secs(8)))
        .unwrap();
    assert_eq!(out.status, ExitStatus::TimedOut, "{}", h.name);
    assert!(
        t.elapsed() < Duration::from_secs(16),
        "{}: took {:?}",
        h.name,
        t.elapsed()
    );
    let files = if with_setsid { "tick tick2" } else { "tick" };
    let first = run(&mut env, &format!("cat {files}")).output.text();
    std::thread::sleep(Duration::from_millis(400));
    let second = run(&mut env, &format!("cat {files}")).output.text();
    assert!(
        !first.is_empty(),
        "{}: the loops never ran; the command said: {}",
        h.name,
        out.output.text()
    );
    assert_eq!(first, second, "{}: a grandchild is still writing", h.name);
}

pub fn files_persist_but_directory_and_variables_do_not_case(h: &Harness) {
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    let workdir = env.info().workdir.clone();
    let out = run(
        &mut env,
        "cd pkg && export BATON_X=1 && echo kept > made.txt && pwd",
    );
    assert_eq!(out.output.text(), format!("{workdir}/pkg\n"), "{}", h.name);
    let out = run(
        &mut env,
        "pwd; echo ${BATON_X:-unset}; cat pkg/made.txt; python3 hello.py",
    );
    assert_eq!(
        out.output.text(),
        format!("{workdir}\nunset\nkept\nhello from the tree\n"),
        "{}",
        h.name
    );
    // The source tree is a copy: nothing written in the environment reaches it.
    assert!(!tree.path().join("pkg/made.txt").exists());
    let out = run(&mut env, "exit 7");
    assert_eq!(out.status, ExitStatus::Exited(7));
    assert_eq!(out.return_code(), Some(7));
    let out = run(&mut env, "kill -9 $$");
    assert_eq!(out.return_code(), Some(137), "{}: {:?}", h.name, out.status);
}

pub fn python_never_reuses_stale_bytecode_case(h: &Harness) {
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    let out = run(
        &mut env,
        "echo 'X = 1' > m.py; python3 -c 'import m; print(m.X)'; \
         echo 'X = 2' > m.py; python3 -c 'import m; print(m.X)'; \
         ls __pycache__ 2>/dev/null | wc -l",
    );
    assert_eq!(out.output.text(), "1\n2\n0\n", "{}", h.name);
}

pub fn snapshots_round_trip_with_a_nested_git_repository_case(h: &Harness) {
    let store_dir = tempfile::tempdir().unwrap();
    let blobs = DirBlobStore::new(store_dir.path()).unwrap();
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    let git = "git -c user.name=t -c user.email=t@example.com";
    let out = run(
        &mut env,
        &format!(
            "mkdir sub && cd sub && git init -q && echo a > a.txt && git add a.txt && \
             {git} commit -qm one && chmod +x a.txt && ln -s a.txt link && mkdir empty && \
             git log --oneline | wc -l"
        ),
    );
    assert_eq!(
        out.output.text(),
        "1\n",
        "{}: {}",
        h.name,
        out.output.text()
    );
    let status_before = run(&mut env, "git -C sub status --porcelain").output.text();
    let s1 = env.snapshot(&blobs).unwrap();
    assert!(s1.files > 5, "{}: {s1:?}", h.name);
    assert_eq!(
        env.snapshot(&blobs).unwrap().id,
        s1.id,
        "{}: not deterministic",
        h.name
    );

    run(
        &mut env,
        &format!(
            "echo changed > hello.py && rm -rf pkg && mkdir -p new/deep && echo n > new/deep/n.txt && \
             cd sub && echo b > b.txt && git add b.txt && {git} commit -qm two && rm link && rmdir empty"
        ),
    );
    let s2 = env.snapshot(&blobs).unwrap();
    assert_ne!(s1.id, s2.id);

    env.restore(&blobs, &s1.id).unwrap();
    let out = run(
        &mut env,
        "cat hello.py pkg/__init__.py; ls new 2>&1 >/dev/null | wc -l; \
         git -C sub log --oneline | wc -l; \
         readlink sub/link; test -x sub/a.txt && echo exec; test -d sub/empty && echo empty-dir",
    );
    assert_eq!(
        out.output.text(),
        "print('hello from the tree')\nVALUE = 1\n1\n1\na.txt\nexec\nempty-dir\n",
        "{}",
        h.name
    );
    assert_eq!(
        run(&mut env, "git -C sub status --porcelain").output.text(),
        status_before,
        "{}: git sees a different tree",
        h.name
    );
    assert_eq!(env.snapshot(&blobs).unwrap().id, s1.id);

    env.restore(&blobs, &s2.id).unwrap();
    let out = run(
        &mut env,
        "git -C sub log --oneline | wc -l; cat new/deep/n.txt",
    );
    assert_eq!(out.output.text(), "2\nn\n", "{}", h.name);

    // A fresh environment forks from a snapshot.
    let empty = tempfile::tempdir().unwrap();
    let mut fork = h.start(empty.path());
    fork.restore(&blobs, &s1.id).unwrap();
    assert_eq!(fork.snapshot(&blobs).unwrap().id, s1.id, "{}", h.name);
    assert_eq!(
        run(&mut fork, "git -C sub log --oneline | wc -l")
            .output
            .text(),
        "1\n"
    );
    fork.close().unwrap();
    env.close().unwrap();
}

pub fn stdin_and_written_files_reach_the_command_case(h: &Harness) {
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    env.write_file("deep/er/x.txt", b"data\n", false).unwrap();
    env.write_file("run.sh", b"#!/bin/sh\necho ran\n", true)
        .unwrap();
    let out = run(&mut env, "cat deep/er/x.txt; ./run.sh");
    assert_eq!(out.output.text(), "data\nran\n", "{}", h.name);
    let out = env
        .exec(&Exec::new("wc -c").stdin(vec![b'z'; 300_000]))
        .unwrap();
    assert_eq!(out.output.text().trim(), "300000", "{}", h.name);
}

#[test]
fn bwrap_runs_as_the_sandbox_user_with_a_synthetic_etc() {
    let Some(h) = Harness::bwrap() else { return };
    let tree = sample_tree();
    let mut env = h.start(tree.path());
    let out = run(
        &mut env,
        "whoami; id -u; hostname; cut -d: -f1 /etc/passwd | tr '\\n' ' '; echo; awk 'BEGIN{print 40+2}'",
    );
    assert_eq!(
        out.output.text(),
        "baton\n1000\nsandbox\nroot baton nobody \n42\n"
    );
    assert!(env.info().isolation.contains("bubblewrap"));
}

#[test]
fn docker_backend_passes_network_and_limit_flags() {
    let Some(h) = Harness::docker_shim() else {
        return;
    };
    let tree = sample_tree();
    let env = h.start(tree.path());
    let calls = h.shim_calls();
    let run_line = calls.lines().find(|l| l.starts_with("run ")).unwrap();
    for flag in [
        "--network none",
        "--pids-limit 256",
        "--memory 4294967296",
        "--label org.baton.workdir=/testbed",
        "empty sleep 14400",
        "--rm",
    ] {
        assert!(run_line.contains(flag), "missing {flag}: {run_line}");
    }
    env.close().unwrap();
    assert!(
        h.shim_calls().lines().any(|l| l.starts_with("rm -f ")),
        "close removes the container"
    );
}

#[test]
fn docker_backend_without_an_image_is_refused() {
    let Some(h) = Harness::docker_shim() else {
        return;
    };
    let err = baton_env::start(
        &h.config,
        &baton_env::Setup::tree(Path::new("/nonexistent")),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("no image"), "{err}");
}

/// Containers carry the run's label, and a killed run's (never closed) are removed by it,
/// another run's kept.
// See: issue 34
#[test]
fn issue_34_a_runs_leftover_containers_are_removed_by_its_label() {
    let Some(h) = Harness::docker_shim() else {
        return;
    };
    let tree = sample_tree();
    let mut config = h.config.clone();
    config.run_label = Some("run-a".into());
    let mut other = h.config.clone();
    other.run_label = Some("run-b".into());
    std::mem::forget(h.start_with(&config, tree.path())); // as after SIGKILL
    let kept = h.start_with(&other, tree.path());
    let calls = h.shim_calls();
    assert!(
        calls
            .lines()
            .any(|l| l.starts_with("run ") && l.contains("--label org.baton.run=run-a")),
        "{calls}"
    );
    assert_eq!(baton_env::remove_run_containers(&config).unwrap().len(), 1);
    assert!(
        baton_env::remove_run_containers(&config)
            .unwrap()
            .is_empty()
    );
    kept.close().unwrap();
    assert!(baton_env::remove_run_containers(&other).unwrap().is_empty());
    // no label, nothing to look for
    assert!(
        baton_env::remove_run_containers(&h.config)
            .unwrap()
            .is_empty()
    );
}
