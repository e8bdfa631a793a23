//! The docker backend against a real Docker engine (`.ci/docker-engine` starts one and
//! names it in `BATON_CI_DOCKER_HOST`, with its base image in `BATON_CI_DOCKER_BASE` and
//! client in `BATON_CI_DOCKER_CLIENT`): a container from the image with a tree copied in,
//! the dataset's variables, `BASH_ENV` and startup command in every command, no network
//! by default, and no container left once the environment is closed. Without an engine it
//! prints a `SKIPPED:` line and passes.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use baton_env::{BackendKind, EnvConfig, Exec, RUN_LABEL, Setup, start};

use crate::run_once;

struct Engine {
    /// A client that always talks to the engine (`docker -H HOST "$@"`).
    client: PathBuf,
    base: String,
    _dir: tempfile::TempDir,
}

fn engine() -> Option<Engine> {
    let e = baton_fixture::docker_engine("the real-Docker backend test")?;
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("docker");
    let script = format!(
        "#!/bin/sh\nexec {} -H {} \"$@\"\n",
        e.client.display(),
        e.host
    );
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    Some(Engine {
        client: wrapper,
        base: e.base,
        _dir: dir,
    })
}

impl Engine {
    /// The docker backend on this engine, its containers labelled with a run of this
    /// configuration alone (other tests, of this binary and others, share the engine).
    fn config(&self) -> EnvConfig {
        let mut config = EnvConfig::for_backend(BackendKind::Docker);
        config.docker.executable = self.client.clone();
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        config.run_label = Some(format!("baton-env-it-{}-{n}", std::process::id()));
        config
    }

    fn setup(&self, tree: &Path) -> Setup {
        let mut setup = Setup::image(&self.base);
        setup.tree = Some(tree.to_path_buf());
        setup
    }

    /// The containers of `config`'s run that still exist.
    fn containers(&self, config: &EnvConfig) -> String {
        let label = format!(
            "label={RUN_LABEL}={}",
            config.run_label.as_deref().unwrap_or_default()
        );
        let out = Command::new(&self.client)
            .args(["ps", "-aq", "--filter", &label])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }
}

#[test]
fn a_real_container_runs_with_the_datasets_environment_and_no_network() {
    let Some(e) = engine() else { return };
    let tree = tempfile::tempdir().unwrap();
    std::fs::write(tree.path().join("activate.sh"), "export ACTIVE=testbed\n").unwrap();
    std::fs::write(tree.path().join("hello.txt"), "hello from the tree\n").unwrap();

    let mut config = e.config();
    config.env = BTreeMap::from([
        ("PAGER".to_string(), "cat".to_string()),
        ("BASH_ENV".to_string(), "/testbed/activate.sh".to_string()),
    ]);
    let setup = e.setup(tree.path());
    assert_eq!(
        run_once(
            &config,
            &setup,
            "echo $PAGER $ACTIVE $PWD; cat hello.txt; python3 -c 'import sys; print(sys.version_info[0])'"
        ),
        "cat testbed /testbed\nhello from the tree\n3\n"
    );
    // off by default: the container has loopback only
    assert!(!config.network);
    let interfaces = run_once(
        &config,
        &setup,
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '",
    );
    assert_eq!(interfaces, "lo\n");

    let mut config = e.config();
    config.env_startup_command = Some("source /testbed/activate.sh; cd /tmp".into());
    assert_eq!(
        run_once(&config, &setup, "echo $ACTIVE $PWD"),
        "testbed /tmp\n"
    );

    // a command's changes stay in its container; each environment starts from the image
    let mut env = start(&config, &setup).unwrap();
    let out = env
        .exec(&Exec::new(
            "cd /testbed && echo changed > hello.txt && cat hello.txt",
        ))
        .unwrap();
    assert_eq!(out.output.text(), "changed\n");
    env.close().unwrap();
    assert_eq!(
        run_once(&e.config(), &setup, "cat hello.txt"),
        "hello from the tree\n"
    );
    assert_eq!(
        e.containers(&config),
        "",
        "a closed environment's container is gone"
    );
}

/// A container carries the run's label, lives at most the configured time and is removed
/// when its first process ends (`--rm`); one that baton never closed (baton killed with
/// SIGKILL) is found by the run's label and removed.
// See: issue 34
#[test]
fn issue_34_a_killed_runs_containers_are_labelled_bounded_and_removable() {
    let Some(e) = engine() else { return };
    let tree = tempfile::tempdir().unwrap();
    let mut config = e.config();
    config.run_label = Some(format!("issue-34-{}", std::process::id()));
    config.docker.container_lifetime_secs = 3;
    let setup = e.setup(tree.path());
    let env = start(&config, &setup).unwrap();
    std::mem::forget(env); // nothing of baton removes it, as after SIGKILL
    let id = e.containers(&config);
    assert!(!id.is_empty(), "the container carries the run's label");
    let inspect = Command::new(&e.client)
        .args([
            "inspect",
            "--format",
            "{{.HostConfig.AutoRemove}} {{json .Config.Cmd}}",
            &id,
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&inspect.stdout).trim(),
        r#"true ["sleep","3"]"#
    );
    // its life is bounded: gone by itself after the lifetime
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !e.containers(&config).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "{id} outlived its lifetime"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // and a run's leftovers are removed by its label
    config.docker.container_lifetime_secs = 600;
    for _ in 0..2 {
        std::mem::forget(start(&config, &setup).unwrap());
    }
    let other = e.config();
    let kept = start(&other, &setup).unwrap();
    assert_eq!(e.containers(&config).lines().count(), 2);
    let removed = baton_env::remove_run_containers(&config).unwrap();
    assert_eq!(removed.len(), 2);
    assert_eq!(e.containers(&config), "");
    assert_eq!(baton_env::remove_run_containers(&config).unwrap().len(), 0);
    assert_eq!(
        e.containers(&other).lines().count(),
        1,
        "another run's is kept"
    );
    kept.close().unwrap();
}

/// Every file under `root`, recursively (the blob store's files).
fn count_files(root: &Path) -> usize {
    std::fs::read_dir(root)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            if p.is_dir() { count_files(&p) } else { 1 }
        })
        .sum()
}

/// A step stores only what changed: the changed files' contents and a small delta, not
/// the tree; a fresh container restored from it has the identical tree (what a resume or
/// a handoff does), and the next snapshot of that container copies nothing out.
// See: issue 34
#[test]
fn issue_34_a_docker_step_stores_only_what_changed_and_restores_exactly() {
    let Some(e) = engine() else { return };
    let tree = tempfile::tempdir().unwrap();
    for d in 0..10 {
        let dir = tree.path().join(format!("pkg{d}"));
        std::fs::create_dir(&dir).unwrap();
        for f in 0..30 {
            std::fs::write(
                dir.join(format!("m{f}.py")),
                format!("X = {d}{f}\n").repeat(50),
            )
            .unwrap();
        }
    }
    let store = tempfile::tempdir().unwrap();
    let blobs = baton_env::DirBlobStore::new(store.path()).unwrap();
    let config = e.config();
    let setup = e.setup(tree.path());
    let mut env = start(&config, &setup).unwrap();
    let s0 = env.snapshot(&blobs).unwrap();
    assert_eq!(s0.files, 300);
    let before = count_files(store.path());
    let out = env
        .exec(&Exec::new(
            "echo 'Y = 1' >> pkg3/m7.py && rm pkg4/m0.py && mv pkg5 moved \
             && ln -s moved/m1.py link && printf new > pkg0/new.txt && chmod +x pkg1/m2.py",
        ))
        .unwrap();
    assert!(out.status.success(), "{}", out.output.text());
    let s1 = env.snapshot(&blobs).unwrap();
    assert_eq!(s1.files, 300);
    // two new contents (the appended file, the new file) and the delta: nothing else
    assert_eq!(count_files(store.path()), before + 3);
    let delta = baton_env::BlobStore::get_bytes(&blobs, s1.id.as_str()).unwrap();
    assert!(delta.len() < 6000, "the delta is {} bytes", delta.len());
    let listing = "find . -path ./.git -prune -o -print0 | sort -z | \
                   xargs -0 stat -c '%n %F %a %s' && find . -type f -print0 | sort -z | xargs -0 sha256sum";
    let want = env.exec(&Exec::new(listing)).unwrap().output.text();
    env.close().unwrap();

    let mut fresh = start(&config, &Setup::image(&e.base)).unwrap();
    fresh.restore(&blobs, &s1.id).unwrap();
    let got = fresh.exec(&Exec::new(listing)).unwrap().output.text();
    assert_eq!(got.lines().count(), want.lines().count());
    // modes other than the execute bit are not recorded: compare the bit
    let norm = |t: &str| {
        t.lines()
            .map(|l| {
                let mut w: Vec<String> = l.split(' ').map(str::to_string).collect();
                if w.len() >= 4 && w[w.len() - 2].len() == 3 {
                    let n = w.len() - 2;
                    let exec = u32::from_str_radix(&w[n], 8).unwrap() & 0o111 != 0;
                    w[n] = exec.to_string();
                }
                w.join(" ")
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(norm(&got), norm(&want));
    let again = fresh.snapshot(&blobs).unwrap();
    assert_eq!(
        again.id, s1.id,
        "the restored tree records as the same snapshot"
    );
    assert_eq!(
        count_files(store.path()),
        before + 3,
        "nothing new copied out"
    );
    fresh.close().unwrap();
}

/// The tree in the container as `d PATH`, `l PATH TARGET`, `f PATH SHA256` and
/// `x PATH` (executable) lines, sorted: computed in the container, not by baton.
const TREE_LINES: &str = "find . -mindepth 1 -type d -printf 'd %P\\n'; \
    find . -mindepth 1 -type l -printf 'l %P %l\\n'; \
    find . -mindepth 1 -type f -printf '%P\\0' | xargs -0 -r sha256sum | \
    sed 's/^\\([0-9a-f]*\\)  \\(.*\\)$/f \\2 \\1/'; \
    find . -mindepth 1 -type f -perm /111 -printf 'x %P\\n'";

fn sorted_lines(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_string).collect();
    v.sort();
    v
}

/// A manifest in [`TREE_LINES`]'s form.
fn manifest_lines(m: &baton_env::snapshot::Manifest) -> Vec<String> {
    use baton_env::snapshot::EntryKind;
    let mut v = Vec::new();
    for e in &m.entries {
        let p = e.path.display();
        match &e.kind {
            EntryKind::Dir => v.push(format!("d {p}")),
            EntryKind::Symlink { target } => v.push(format!("l {p} {}", target.display())),
            EntryKind::File {
                digest, executable, ..
            } => {
                v.push(format!("f {p} {digest}"));
                if *executable {
                    v.push(format!("x {p}"));
                }
            }
        }
    }
    v.sort();
    v
}

/// Steps run through the container's command session: after the first snapshot no step
/// starts a `docker exec` of its own (counted by a client that logs every call), each
/// snapshot, made from the change watcher's report, is exactly the tree in the container
/// (listed and hashed there), whatever the step did (a write through a hard link outside
/// the tree included), a background process outlives its command and its later writes are
/// recorded, and after a timed-out command the next one runs.
// See: issue 34
#[test]
fn issue_34_docker_steps_run_through_one_session_and_record_the_exact_tree() {
    let Some(e) = engine() else { return };
    let tree = tempfile::tempdir().unwrap();
    for d in 0..6 {
        let dir = tree.path().join(format!("pkg{d}/sub"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..10 {
            std::fs::write(dir.join(format!("m{f}.py")), format!("X = {d}{f}\n")).unwrap();
        }
    }
    let calls = tempfile::tempdir().unwrap();
    let log = calls.path().join("calls.log");
    let client = calls.path().join("docker");
    std::fs::write(
        &client,
        format!(
            "#!/bin/sh\necho \"$1\" >> {}\nexec {} \"$@\"\n",
            log.display(),
            e.client.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&client, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut config = e.config();
    config.docker.executable = client;
    let store = tempfile::tempdir().unwrap();
    let blobs = baton_env::DirBlobStore::new(store.path()).unwrap();
    let mut env = start(&config, &e.setup(tree.path())).unwrap();
    env.snapshot(&blobs).unwrap();
    let execs = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|l| *l == "exec")
            .count()
    };
    let after_first = execs();
    let steps = [
        "echo 'Y = 1' >> pkg0/sub/m0.py",
        "mkdir -p a/b/c && echo deep > a/b/c/d.txt",
        "rm -rf pkg1",
        "mv pkg2 moved && echo more >> moved/sub/m1.py",
        "mv pkg3 pkg3-old && mkdir -p pkg3 && echo only > pkg3/only.py",
        "rm pkg4/sub/m4.py && mkdir pkg4/sub/m4.py && echo in > pkg4/sub/m4.py/inner",
        "rm -rf a/b && echo now-a-file > a/b",
        "ln -s moved/sub/m1.py link && chmod +x pkg5/sub/m5.py",
        "ln pkg0/sub/m1.py /tmp/outside && echo through-a-link-outside >> /tmp/outside",
        "mv pkg0/sub/m1.py pkg0/m1.py && echo moved-then-written >> /tmp/outside",
        "(sleep 1; echo late > late.txt) > /dev/null 2>&1 &",
        "sleep 2; test -f late.txt",
        "true",
    ];
    for step in steps {
        let out = env.exec(&Exec::new(step)).unwrap();
        assert!(out.status.success(), "{step}: {}", out.output.text());
        let s = env.snapshot(&blobs).unwrap();
        let got = manifest_lines(&baton_env::snapshot::Manifest::load(&blobs, &s.id).unwrap());
        let want = sorted_lines(&env.exec(&Exec::new(TREE_LINES)).unwrap().output.text());
        assert_eq!(got, want, "after {step}");
    }
    assert_eq!(execs(), after_first, "no docker exec of a step's own");
    // the steps' changes came from the change watcher, not from listings
    let watching = env
        .exec(&Exec::new(
            "grep -l 'inotify_[a]dd_watch' /proc/[0-9]*/cmdline | wc -l",
        ))
        .unwrap();
    assert_eq!(
        watching.output.text().trim(),
        "1",
        "one change watcher runs"
    );
    let out = env
        .exec(&Exec::new("echo started; sleep 30").timeout(std::time::Duration::from_secs(1)))
        .unwrap();
    assert_eq!(out.status, baton_env::ExitStatus::TimedOut);
    assert_eq!(out.output.text(), "started\n");
    let out = env.exec(&Exec::new("echo after")).unwrap();
    assert_eq!(
        (out.status.success(), out.output.text().as_str()),
        (true, "after\n")
    );
    env.close().unwrap();
    assert_eq!(e.containers(&config), "", "no container left");
}
