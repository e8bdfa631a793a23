//! Finding the shared Handover fixtures, and throwaway git repositories.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `../shared/handover` (or `BATON_HANDOVER_DIR`); `None` after a loud skip notice when it
/// is absent, a panic when `BATON_REQUIRE_CONFORMANCE=1`.
pub fn handover_dir() -> Option<PathBuf> {
    baton_fixture::shared_dir("handover")
}

/// Run git in `dir`, panicking with its output on failure; returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A new repository in a temp dir with `files` committed; returns the dir and the commit.
/// The folder is readable by others (as a checkout usually is), so the sandbox binds its
/// ignored folders even when the tests run as root.
pub fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    git(dir.path(), &["init", "-q"]);
    write(dir.path(), files);
    let sha = commit(dir.path(), "initial");
    (dir, sha)
}

/// Write files (creating folders).
pub fn write(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// Commit everything; returns the new HEAD.
pub fn commit(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "--allow-empty", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}
