//! Finding the shared Handover fixtures, and throwaway git repositories.

use std::path::{Path, PathBuf};
use std::process::Command;

/// `../shared/handover` (or `BATON_HANDOVER_DIR`); `None` after a loud skip notice when it
/// is absent, a panic when `BATON_REQUIRE_CONFORMANCE=1`.
#[allow(clippy::print_stderr)] // a skip says so loudly
pub fn handover_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("BATON_HANDOVER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../../shared/handover"
            ))
        });
    if dir.join("reference-0.4.1.json").is_file() {
        return Some(dir);
    }
    if std::env::var("BATON_REQUIRE_CONFORMANCE").as_deref() == Ok("1") {
        panic!(
            "BATON_REQUIRE_CONFORMANCE=1 but the Handover fixtures are not at {}",
            dir.display()
        );
    }
    eprintln!(
        "\n!!!! SKIPPED: Handover fixtures not found at {} (set BATON_HANDOVER_DIR) !!!!\n",
        dir.display()
    );
    None
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
pub fn repo(files: &[(&str, &str)]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("temp dir");
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
