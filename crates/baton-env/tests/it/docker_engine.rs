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
    /// test process alone (tests of other binaries share the engine).
    fn config(&self) -> EnvConfig {
        let mut config = EnvConfig::for_backend(BackendKind::Docker);
        config.docker.executable = self.client.clone();
        config.run_label = Some(format!("baton-env-it-{}", std::process::id()));
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
