//! A Docker agent run killed with SIGKILL leaves its containers (nothing of baton runs to
//! remove them); its resume removes them before it starts new ones, and when it has
//! finished no container of the run is left (issue 34). Against the real engine
//! `.ci/docker-engine` starts; without one the test prints `SKIPPED:` and passes.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::stderr;

fn experiment(image: &str) -> String {
    format!(
        r#"
kind = "agent"
name = "docker-leftovers"
dataset = "agent-sample"
replicates = 1
seed = 3
limit = 3

[agent]
step_limit = 12

[environment]
backend = "docker"
docker = {{ default_image = "{image}" }}

[models.lc]
model = "sim/lc"
[models.lc.sim]
latency_ms = 400
"#
    )
}

/// The ids of the containers labelled with the run of `out`.
fn containers(client: &Path, host: &str, out: &Path) -> Vec<String> {
    let label = format!(
        "label={}={}",
        baton_env::RUN_LABEL,
        baton_env::run_label(out)
    );
    let o = Command::new(client)
        .args(["-H", host, "ps", "-a", "-q", "--filter", &label])
        .output()
        .unwrap();
    assert!(o.status.success(), "docker ps: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

// See: issue 34
#[test]
fn issue_34_a_resume_removes_the_containers_a_killed_run_left() {
    let Some(e) = baton_fixture::docker_engine("the Docker leftovers test") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("exp.toml"), experiment(&e.base)).unwrap();
    let out = root.join("out");
    let baton = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_baton"));
        c.args(args)
            .current_dir(root)
            .env_remove("BATON_LOG")
            .env("BATON_DOCKER", &e.client)
            .env("DOCKER_HOST", &e.host);
        c
    };
    let mut run = baton(&["run", "exp.toml", "--out", "out", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // wait for the run to be in the middle of an episode: a container of it is up
    let deadline = Instant::now() + Duration::from_secs(120);
    while containers(&e.client, &e.host, &out).is_empty() {
        assert!(
            run.try_wait().unwrap().is_none(),
            "the run ended before a container was seen"
        );
        assert!(
            Instant::now() < deadline,
            "no container of the run appeared"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    run.kill().unwrap(); // SIGKILL
    run.wait().unwrap();
    let left = containers(&e.client, &e.host, &out);
    assert!(!left.is_empty(), "SIGKILL leaves the run's containers");

    let resumed: Output = baton(&["run", "exp.toml", "--out", "out", "--resume", "--quiet"])
        .output()
        .unwrap();
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(
        containers(&e.client, &e.host, &out),
        Vec::<String>::new(),
        "no container of the run is left once the resume finished"
    );
    // the first run's containers are gone, not only the resume's own
    for id in &left {
        let o = Command::new(&e.client)
            .args(["-H", &e.host, "inspect", id])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{id} still exists");
    }
}

/// `baton env clean RESULTS` removes the containers of that run, and only those.
// See: issue 34
#[test]
fn issue_34_env_clean_removes_a_runs_containers() {
    let Some(e) = baton_fixture::docker_engine("the env clean test") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    // a client that always talks to the engine
    let client = dir.path().join("docker");
    std::fs::write(
        &client,
        format!(
            "#!/bin/sh\nexec {} -H {} \"$@\"\n",
            e.client.display(),
            e.host
        ),
    )
    .unwrap();
    std::fs::set_permissions(&client, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let start = |results: &Path| {
        let mut config = baton_env::EnvConfig::for_backend(baton_env::BackendKind::Docker);
        config.docker.executable = client.clone();
        config.run_label = Some(baton_env::run_label(results));
        // never closed, as after SIGKILL
        std::mem::forget(baton_env::start(&config, &baton_env::Setup::image(&e.base)).unwrap());
    };
    start(&out);
    start(&out);
    start(&other);
    assert_eq!(containers(&e.client, &e.host, &out).len(), 2);
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["env", "clean"])
        .arg(&out)
        .args(["--docker"])
        .arg(&client)
        .env_remove("BATON_DOCKER")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        crate::stdout(&o).contains("removed 2 container(s) of the run in"),
        "{}",
        crate::stdout(&o)
    );
    assert!(containers(&e.client, &e.host, &out).is_empty());
    assert_eq!(
        containers(&e.client, &e.host, &other).len(),
        1,
        "another run's stays"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["env", "clean"])
        .arg(&other)
        .args(["--docker"])
        .arg(&client)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(containers(&e.client, &e.host, &other).is_empty());
}
