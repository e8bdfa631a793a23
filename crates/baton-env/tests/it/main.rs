//! Tests of the sandbox boundary with the real backends: bubblewrap, and the docker backend
//! driven through a shim client (`tests/fixtures/docker-shim`, which runs each `exec` under
//! bubblewrap, since no Docker engine is assumed), and against a real engine where
//! `.ci/docker-engine` started one (`docker_engine`).
//!
//! Without a working `bwrap` these tests print a loud SKIPPED line and pass, unless
//! `BATON_REQUIRE_CONFORMANCE=1` (set in CI), in which case they fail.

#![allow(
    clippy::print_stderr,
    reason = "a skipped boundary test says so loudly"
)]

mod boundary;
mod bwrap_process;
mod docker_engine;
mod local;
mod settings;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use baton_env::{BackendKind, EnvConfig, Environment, Exec, ExecOutput, Setup, start};

/// Whether bubblewrap works here; decided once.
pub fn bwrap_works() -> bool {
    static WORKS: OnceLock<Result<(), String>> = OnceLock::new();
    let result = WORKS.get_or_init(|| {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let config = EnvConfig::for_backend(BackendKind::Bwrap);
        let mut env = start(&config, &Setup::tree(dir.path())).map_err(|e| e.to_string())?;
        let out = env.exec(&Exec::new("true")).map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(out.output.text())
        }
    });
    match result {
        Ok(()) => true,
        Err(why) => {
            baton_fixture::skip(format!(
                "bubblewrap does not work here ({why}); install it with `apt-get install -y bubblewrap`"
            ));
            false
        }
    }
}

/// One backend under test: how to configure it and where its working tree appears.
pub struct Harness {
    pub config: EnvConfig,
    /// Keeps the shim's folder alive.
    shim: Option<tempfile::TempDir>,
    pub image: Option<String>,
    pub name: &'static str,
    /// Whether the environment's own root file system is writable (a container's is).
    pub root_writable: bool,
}

impl Harness {
    /// The bubblewrap backend, or `None` (after a loud skip) when it does not work here.
    pub fn bwrap() -> Option<Harness> {
        bwrap_works().then(|| Harness {
            config: EnvConfig::for_backend(BackendKind::Bwrap),
            shim: None,
            image: None,
            name: "bwrap",
            root_writable: false,
        })
    }

    /// The docker backend with the shim client, or `None` when bubblewrap (which the shim
    /// uses) does not work here.
    pub fn docker_shim() -> Option<Harness> {
        if !bwrap_works() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        // The shim may run its sandboxes as an unprivileged user, who must reach its state.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let shim = dir.path().join("docker");
        std::fs::copy(fixtures().join("docker-shim"), &shim).unwrap();
        std::fs::create_dir_all(dir.path().join("images/empty")).unwrap();
        let mut config = EnvConfig::for_backend(BackendKind::Docker);
        config.docker.executable = shim;
        Some(Harness {
            config,
            shim: Some(dir),
            image: Some("empty".into()),
            name: "docker",
            root_writable: true,
        })
    }

    /// Start an environment on a copy of `tree`.
    pub fn start(&self, tree: &Path) -> Box<dyn Environment> {
        self.start_with(&self.config, tree)
    }

    /// Start with another configuration (other limits) of the same backend.
    pub fn start_with(&self, config: &EnvConfig, tree: &Path) -> Box<dyn Environment> {
        let mut setup = Setup::tree(tree);
        setup.image = self.image.clone();
        start(config, &setup).unwrap_or_else(|e| panic!("{}: start: {e:#}", self.name))
    }

    /// The shim's log of client calls.
    pub fn shim_calls(&self) -> String {
        let dir = self.shim.as_ref().expect("only the docker shim logs calls");
        std::fs::read_to_string(dir.path().join("calls.log")).unwrap_or_default()
    }
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Run `cmd`, panicking on a machinery error.
pub fn run(env: &mut Box<dyn Environment>, cmd: &str) -> ExecOutput {
    env.exec(&Exec::new(cmd))
        .unwrap_or_else(|e| panic!("exec {cmd:?}: {e:#}"))
}

/// Start an environment from `setup`, run `command` in it (it must succeed), close it,
/// and give the command's output.
pub fn run_once(config: &EnvConfig, setup: &Setup, command: &str) -> String {
    let mut env = start(config, setup).unwrap();
    let out = run(&mut env, command);
    assert!(out.status.success(), "{command}: {}", out.output.text());
    env.close().unwrap();
    out.output.text()
}

/// A temporary tree with a few files.
pub fn sample_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hello.py"),
        "print('hello from the tree')\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    std::fs::write(dir.path().join("pkg/__init__.py"), "VALUE = 1\n").unwrap();
    dir
}
