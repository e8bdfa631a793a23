//! Scoring through the docker backend, with baton-env's shim client standing in for Docker.

use std::os::unix::fs::PermissionsExt;

use baton_agent::{LocalScorer, PatchOutcome};
use baton_env::{BackendKind, EnvConfig};

#[test]
fn the_docker_backend_scores_a_task_like_bwrap() {
    if crate::scorer().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shim = dir.path().join("docker");
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../baton-env/tests/fixtures/docker-shim");
    std::fs::copy(source, &shim).unwrap();
    std::fs::create_dir_all(dir.path().join("images/python")).unwrap();
    let mut config = EnvConfig::for_backend(BackendKind::Docker);
    config.docker.executable = shim;
    config.docker.default_image = Some("python".into());
    let scorer = LocalScorer::new(config);
    let task = crate::sample("lru-cache");
    let unchanged = scorer.score(&task, "").unwrap();
    assert!(
        !unchanged.resolved && unchanged.run_error.is_none(),
        "{unchanged:?}"
    );
    let reference = scorer
        .score(&task, &task.reference_patch().unwrap().unwrap())
        .unwrap();
    assert!(reference.resolved, "{}", reference.summary());
    assert!(matches!(reference.patch, PatchOutcome::Applied { .. }));
    let calls = std::fs::read_to_string(dir.path().join("calls.log")).unwrap();
    assert!(
        calls
            .lines()
            .any(|l| l.starts_with("run ") && l.contains("--network none")),
        "{calls}"
    );
}
