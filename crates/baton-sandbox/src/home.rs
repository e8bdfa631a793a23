//! Where the sandbox runtime lives on disk.

use std::path::{Path, PathBuf};

/// Environment variable naming the workspace root (the folder holding `sandbox/`).
pub const BATON_HOME_ENV: &str = "BATON_HOME";

/// The sandbox folder and the paths inside it.
///
/// Layout (everything but the sources is git-ignored):
///
/// ```text
/// sandbox/
///   README.md          what lives here
///   runner/app.py      the Python side (also embedded in the binary)
///   wit/               the component's WIT world and the vendored WASI 0.2 WIT files
///   build/venv/        the Python venv holding componentize-py
///   build/src/         the sources as the build saw them
///   build/runner.wasm  the built component
///   build/runner.json  its stamp: source id, tool versions, sha256
///   cache/*.cwasm      compiled code for this wasmtime version and engine config
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxHome {
    root: PathBuf,
}

impl SandboxHome {
    /// A sandbox folder at an explicit path (the folder that holds `build/` and `cache/`).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        SandboxHome { root: root.into() }
    }

    /// Find the sandbox folder: `$BATON_HOME/sandbox`; else the nearest `sandbox/README.md`
    /// above the current directory; else above the running executable; else
    /// `~/.cache/baton/sandbox`.
    pub fn locate() -> Self {
        if let Some(home) = std::env::var_os(BATON_HOME_ENV).filter(|v| !v.is_empty()) {
            return SandboxHome::at(PathBuf::from(home).join("sandbox"));
        }
        let from_cwd = std::env::current_dir().ok();
        let from_exe = std::env::current_exe().ok();
        for start in [from_cwd, from_exe].into_iter().flatten() {
            if let Some(found) = find_upwards(&start) {
                return SandboxHome::at(found);
            }
        }
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        SandboxHome::at(cache.join("baton").join("sandbox"))
    }

    /// The sandbox folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `build/`: the venv, the build sources, the component and its stamp.
    pub fn build_dir(&self) -> PathBuf {
        self.root.join("build")
    }

    /// `cache/`: compiled code.
    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }

    /// `build/runner.wasm`: the CPython-for-WASI runner component.
    pub fn runner_wasm(&self) -> PathBuf {
        self.build_dir().join("runner.wasm")
    }

    /// `build/runner.json`: what the component was built from.
    pub fn stamp(&self) -> PathBuf {
        self.build_dir().join("runner.json")
    }

    /// `build/venv`: the Python venv holding componentize-py.
    pub fn venv(&self) -> PathBuf {
        self.build_dir().join("venv")
    }
}

fn find_upwards(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join("sandbox"))
        .find(|candidate| candidate.join("README.md").is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_nearest_sandbox_folder_upwards() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("sandbox")).unwrap();
        std::fs::write(dir.path().join("sandbox/README.md"), "x").unwrap();
        let deep = dir.path().join("crates/a/src");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(find_upwards(&deep), Some(dir.path().join("sandbox")));
        let other = tempfile::tempdir().unwrap();
        assert_eq!(find_upwards(other.path()), None);
    }

    #[test]
    fn paths_sit_under_the_root() {
        let home = SandboxHome::at("/x/sandbox");
        assert_eq!(
            home.runner_wasm(),
            Path::new("/x/sandbox/build/runner.wasm")
        );
        assert_eq!(home.cache_dir(), Path::new("/x/sandbox/cache"));
    }
}
