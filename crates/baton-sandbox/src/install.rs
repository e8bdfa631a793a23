//! Building the runner component: a venv with the pinned componentize-py, the runner
//! sources (embedded in this crate, mirrored in `sandbox/`), `componentize-py componentize`,
//! then a compile into the cache and smoke tests.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::announce::{self, BuildEvent};
use crate::cache::{WASMTIME_VERSION, sha256_hex};
use crate::{CodeGrader, GraderConfig, Limits, RunStatus, Sandbox, SandboxError, SandboxHome};

/// The componentize-py release the runner is built with (PyPI). It carries CPython 3.14.
pub const COMPONENTIZE_PY_VERSION: &str = "0.25.1";

/// The runner's Python source (`sandbox/runner/app.py`).
const APP_PY: &str = include_str!("../../../sandbox/runner/app.py");
/// The runner's world (`sandbox/wit/runner.wit`).
const RUNNER_WIT: &str = include_str!("../../../sandbox/wit/runner.wit");
/// The WASI 0.2 WIT files, vendored from the wasmtime-wasi 48.0.8 crate (`src/p2/wit/deps`).
const WASI_WIT: [(&str, &str); 6] = [
    ("cli.wit", include_str!("../../../sandbox/wit/deps/cli.wit")),
    (
        "clocks.wit",
        include_str!("../../../sandbox/wit/deps/clocks.wit"),
    ),
    (
        "filesystem.wit",
        include_str!("../../../sandbox/wit/deps/filesystem.wit"),
    ),
    ("io.wit", include_str!("../../../sandbox/wit/deps/io.wit")),
    (
        "random.wit",
        include_str!("../../../sandbox/wit/deps/random.wit"),
    ),
    (
        "sockets.wit",
        include_str!("../../../sandbox/wit/deps/sockets.wit"),
    ),
];

/// What the runner is built from: a hash of the pinned tool version and every source file.
/// A stamp with another id means the component is stale and gets rebuilt.
pub fn source_id() -> String {
    let mut all = format!("componentize-py=={COMPONENTIZE_PY_VERSION}\n");
    for (name, text) in [("app.py", APP_PY), ("runner.wit", RUNNER_WIT)]
        .into_iter()
        .chain(WASI_WIT)
    {
        all.push_str(&format!("{name} {}\n", sha256_hex(text.as_bytes())));
    }
    sha256_hex(all.as_bytes())
}

/// Where a built runner is and what it was built from (`sandbox/build/runner.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// The runner component.
    pub wasm_path: PathBuf,
    /// sha256 of the component.
    pub wasm_sha256: String,
    /// [`source_id`] at build time.
    pub source_id: String,
    /// The componentize-py version that built it.
    pub componentize_py: String,
    /// The host Python that ran componentize-py.
    pub build_python: String,
}

/// Options for [`install`].
#[derive(Debug, Clone, Default)]
pub struct InstallOptions {
    /// The sandbox folder; default [`SandboxHome::locate`].
    pub home: Option<SandboxHome>,
    /// The Python used to create the venv; default `python3` on `PATH`.
    pub python: Option<PathBuf>,
    /// Rebuild even when the existing component is up to date.
    pub force: bool,
}

/// One smoke test's result.
#[derive(Debug, Clone, PartialEq)]
pub struct SmokeResult {
    /// What it checks.
    pub name: String,
    /// Whether it behaved.
    pub ok: bool,
    /// What happened.
    pub detail: String,
    /// How long it took.
    pub elapsed: Duration,
}

/// What [`install`] did.
#[derive(Debug, Clone)]
pub struct InstallReport {
    /// The sandbox folder.
    pub home: PathBuf,
    /// The runner and its provenance.
    pub runtime: RuntimeInfo,
    /// Size of the component in bytes.
    pub wasm_bytes: u64,
    /// False when an up-to-date component was already there.
    pub rebuilt: bool,
    /// Time spent building the component (zero when not rebuilt).
    pub build_time: Duration,
    /// Time spent loading or compiling it into the cache.
    pub load_time: Duration,
    /// Whether the compiled code came from the cache.
    pub from_cache: bool,
    /// The smoke tests (all passed, or `install` returns an error).
    pub smoke: Vec<SmokeResult>,
}

impl fmt::Display for InstallReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "sandbox folder:   {}", self.home.display())?;
        writeln!(
            f,
            "runner:           {} ({:.1} MB, sha256 {})",
            self.runtime.wasm_path.display(),
            self.wasm_bytes as f64 / 1e6,
            &self.runtime.wasm_sha256[..16]
        )?;
        if self.rebuilt {
            writeln!(
                f,
                "built with:       componentize-py {} on {} in {:.1} s",
                self.runtime.componentize_py,
                self.runtime.build_python,
                self.build_time.as_secs_f64()
            )?;
        } else {
            writeln!(
                f,
                "built with:       componentize-py {} (up to date, not rebuilt)",
                self.runtime.componentize_py
            )?;
        }
        writeln!(
            f,
            "compiled code:    {} in {:.1} s",
            if self.from_cache {
                "loaded from cache"
            } else {
                "compiled and cached"
            },
            self.load_time.as_secs_f64()
        )?;
        write_smoke(f, &self.smoke)
    }
}

/// What [`check`] found.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// The sandbox folder.
    pub home: PathBuf,
    /// The runner and its provenance.
    pub runtime: RuntimeInfo,
    /// Whether the component matches this build's runner sources.
    pub up_to_date: bool,
    /// The wasmtime version linked into this binary.
    pub wasmtime: String,
    /// `sys.version` inside the sandbox.
    pub guest_python: String,
    /// Whether the compiled code came from the cache.
    pub from_cache: bool,
    /// The smoke tests.
    pub smoke: Vec<SmokeResult>,
}

impl CheckReport {
    /// True when the runner is current and every smoke test passed.
    pub fn healthy(&self) -> bool {
        self.up_to_date && self.smoke.iter().all(|s| s.ok)
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "sandbox folder:   {}", self.home.display())?;
        writeln!(
            f,
            "runner:           {} (sha256 {}){}",
            self.runtime.wasm_path.display(),
            &self.runtime.wasm_sha256[..16.min(self.runtime.wasm_sha256.len())],
            if self.up_to_date {
                ""
            } else {
                " STALE: run `baton sandbox install`"
            }
        )?;
        writeln!(f, "componentize-py:  {}", self.runtime.componentize_py)?;
        writeln!(f, "guest python:     {}", self.guest_python)?;
        writeln!(f, "wasmtime:         {}", self.wasmtime)?;
        writeln!(
            f,
            "compiled code:    {}",
            if self.from_cache {
                "cache"
            } else {
                "compiled now"
            }
        )?;
        write_smoke(f, &self.smoke)?;
        write!(
            f,
            "status:           {}",
            if self.healthy() { "ok" } else { "NOT OK" }
        )
    }
}

fn write_smoke(f: &mut fmt::Formatter<'_>, smoke: &[SmokeResult]) -> fmt::Result {
    writeln!(f, "smoke tests:")?;
    for s in smoke {
        writeln!(
            f,
            "  [{}] {:<28} {:>7.1} ms  {}",
            if s.ok { "ok" } else { "FAIL" },
            s.name,
            s.elapsed.as_secs_f64() * 1e3,
            s.detail
        )?;
    }
    Ok(())
}

/// Build (or verify) the runtime: venv + componentize-py, the runner component, the compiled
/// cache, then smoke tests. Idempotent: an up-to-date component is not rebuilt unless
/// `force` is set.
pub fn install(options: &InstallOptions) -> Result<InstallReport, SandboxError> {
    let home = options.home.clone().unwrap_or_else(SandboxHome::locate);
    let (runtime, rebuilt, build_time) = {
        let _lock = lock(&home)?;
        match read_stamp(&home) {
            Some(info) if !options.force && info.source_id == source_id() => {
                (info, false, Duration::ZERO)
            }
            _ => {
                let started = Instant::now();
                let info = build(&home, options.python.as_deref())?;
                (info, true, started.elapsed())
            }
        }
    };
    let started = Instant::now();
    let sandbox = Sandbox::load(&home, runtime.clone())?;
    let load_time = started.elapsed();
    let (smoke, _) = smoke_tests(&sandbox);
    if let Some(failed) = smoke.iter().find(|s| !s.ok) {
        return Err(SandboxError::SmokeTest {
            path: runtime.wasm_path.clone(),
            test: failed.name.clone(),
            detail: failed.detail.clone(),
        });
    }
    let wasm_bytes = std::fs::metadata(&runtime.wasm_path)
        .map_err(|e| SandboxError::io(&runtime.wasm_path, e))?
        .len();
    Ok(InstallReport {
        home: home.root().to_path_buf(),
        runtime,
        wasm_bytes,
        rebuilt,
        build_time,
        load_time,
        from_cache: sandbox.loaded_from_cache(),
        smoke,
    })
}

/// Report versions and run the smoke tests against the installed runtime. Does not build:
/// a missing runtime is an error that says to run `baton sandbox install`.
pub fn check() -> Result<CheckReport, SandboxError> {
    check_in(&SandboxHome::locate())
}

/// [`check`] for an explicit sandbox folder.
pub fn check_in(home: &SandboxHome) -> Result<CheckReport, SandboxError> {
    let runtime = read_stamp(home).ok_or_else(|| SandboxError::NotInstalled {
        path: home.runner_wasm(),
    })?;
    let up_to_date = runtime.source_id == source_id();
    let sandbox = Sandbox::load(home, runtime.clone())?;
    let (smoke, guest_python) = smoke_tests(&sandbox);
    Ok(CheckReport {
        home: home.root().to_path_buf(),
        runtime,
        up_to_date,
        wasmtime: WASMTIME_VERSION.to_string(),
        guest_python,
        from_cache: sandbox.loaded_from_cache(),
        smoke,
    })
}

/// The runtime for `home`, building it first when missing or stale.
pub(crate) fn ensure_runtime(home: &SandboxHome) -> Result<RuntimeInfo, SandboxError> {
    if let Some(info) = read_stamp(home).filter(|i| i.source_id == source_id()) {
        return Ok(info);
    }
    let _lock = lock(home)?;
    if let Some(info) = read_stamp(home).filter(|i| i.source_id == source_id()) {
        return Ok(info);
    }
    tracing::info!(
        folder = %home.root().display(),
        "the Python sandbox runtime is missing or out of date; building it now \
         (python3 venv + componentize-py {COMPONENTIZE_PY_VERSION} from PyPI; takes a minute, once)"
    );
    build(home, None)
}

fn read_stamp(home: &SandboxHome) -> Option<RuntimeInfo> {
    let text = std::fs::read_to_string(home.stamp()).ok()?;
    let mut info: RuntimeInfo = serde_json::from_str(&text).ok()?;
    // The folder may have moved since the build: trust the layout, not the recorded path.
    info.wasm_path = home.runner_wasm();
    info.wasm_path.is_file().then_some(info)
}

/// An exclusive lock on `build/.lock`, held while building.
fn lock(home: &SandboxHome) -> Result<File, SandboxError> {
    let dir = home.build_dir();
    std::fs::create_dir_all(&dir).map_err(|e| SandboxError::io(&dir, e))?;
    let path = dir.join(".lock");
    let file = File::create(&path).map_err(|e| SandboxError::io(&path, e))?;
    file.lock().map_err(|e| SandboxError::io(&path, e))?;
    Ok(file)
}

fn build(home: &SandboxHome, python: Option<&Path>) -> Result<RuntimeInfo, SandboxError> {
    let python = python
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("python3"));
    let build_python = python_version(&python)?;
    let started = Instant::now();
    announce::tell(&BuildEvent::Starting {
        folder: home.root(),
    });
    let venv = home.venv();
    let venv_python = venv.join("bin").join("python");
    let tool = venv.join("bin").join("componentize-py");
    if !venv_python.is_file() {
        tracing::info!(venv = %venv.display(), "creating the build venv");
        let out = announce::step(0, || {
            run(
                Command::new(&python).arg("-m").arg("venv").arg(&venv),
                "python3 -m venv",
            )
        })?;
        if !out.status.success() {
            let text = output_tail(&out);
            if text.contains("ensurepip") || text.contains("venv") {
                return Err(SandboxError::MissingTool {
                    what: "python3-venv".into(),
                    detail: text,
                    install: "apt-get install python3-venv".into(),
                });
            }
            return Err(step_failed("python3 -m venv", &out));
        }
    }
    if tool_version(&tool).as_deref() != Some(COMPONENTIZE_PY_VERSION) {
        tracing::info!("installing componentize-py=={COMPONENTIZE_PY_VERSION} from PyPI");
        let spec = format!("componentize-py=={COMPONENTIZE_PY_VERSION}");
        let out = announce::step(1, || {
            run(
                Command::new(&venv_python)
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--disable-pip-version-check",
                        "--quiet",
                    ])
                    .arg(&spec),
                "pip install",
            )
        })?;
        if !out.status.success() {
            let text = output_tail(&out);
            if text.contains("No module named pip") {
                return Err(SandboxError::MissingTool {
                    what: "pip".into(),
                    detail: text,
                    install: "apt-get install python3-pip python3-venv".into(),
                });
            }
            return Err(step_failed(&format!("pip install {spec}"), &out));
        }
    }
    let componentize_py = tool_version(&tool).ok_or_else(|| SandboxError::BuildStep {
        step: "componentize-py --version".into(),
        detail: format!("{} does not run after installation", tool.display()),
    })?;

    // The app directory must stay apart from the venv: componentize-py bundles its python path.
    let src = home.build_dir().join("src");
    if src.exists() {
        std::fs::remove_dir_all(&src).map_err(|e| SandboxError::io(&src, e))?;
    }
    let deps = src.join("wit").join("deps");
    std::fs::create_dir_all(&deps).map_err(|e| SandboxError::io(&deps, e))?;
    write(&src.join("app.py"), APP_PY)?;
    write(&src.join("wit").join("runner.wit"), RUNNER_WIT)?;
    for (name, text) in WASI_WIT {
        write(&deps.join(name), text)?;
    }
    let tmp = home.build_dir().join("runner.wasm.tmp");
    tracing::info!("building the runner component with componentize-py (10-40 s)");
    let out = announce::step(2, || {
        run(
            Command::new(&tool)
                .current_dir(&src)
                .env_remove("VIRTUAL_ENV")
                .env_remove("PYTHONPATH")
                .env_remove("PYTHONHOME")
                .args([
                    "-q",
                    "-d",
                    "wit",
                    "-w",
                    "runner",
                    "componentize",
                    "-p",
                    ".",
                    "app",
                    "-o",
                ])
                .arg(&tmp),
            "componentize-py componentize",
        )
    })?;
    if !out.status.success() {
        return Err(step_failed("componentize-py componentize", &out));
    }
    let wasm_path = home.runner_wasm();
    std::fs::rename(&tmp, &wasm_path).map_err(|e| SandboxError::io(&wasm_path, e))?;
    let wasm = std::fs::read(&wasm_path).map_err(|e| SandboxError::io(&wasm_path, e))?;
    let info = RuntimeInfo {
        wasm_path: wasm_path.clone(),
        wasm_sha256: sha256_hex(&wasm),
        source_id: source_id(),
        componentize_py,
        build_python,
    };
    let stamp = home.stamp();
    let text = serde_json::to_string_pretty(&info).map_err(|e| SandboxError::BuildStep {
        step: "writing the stamp".into(),
        detail: e.to_string(),
    })?;
    // Compiled here, as the build's last step, so the first load finds it in the cache.
    announce::step(3, || -> Result<(), SandboxError> {
        let engine = wasmtime::Engine::new(&crate::runtime::engine_config())
            .map_err(|e| SandboxError::wasmtime("creating the engine", e))?;
        crate::cache::load_or_compile(&engine, &home.cache_dir(), &wasm_path)?;
        Ok(())
    })?;
    write(&stamp, &text)?;
    announce::tell(&BuildEvent::Finished {
        elapsed: started.elapsed(),
        wasm_bytes: wasm.len() as u64,
    });
    Ok(info)
}

fn write(path: &Path, text: &str) -> Result<(), SandboxError> {
    std::fs::write(path, text).map_err(|e| SandboxError::io(path, e))
}

fn run(command: &mut Command, step: &str) -> Result<std::process::Output, SandboxError> {
    command.output().map_err(|e| SandboxError::BuildStep {
        step: step.into(),
        detail: e.to_string(),
    })
}

fn python_version(python: &Path) -> Result<String, SandboxError> {
    let missing = |detail: String| SandboxError::MissingTool {
        what: "python3 (3.9 or newer, with venv)".into(),
        detail,
        install: "apt-get install python3 python3-venv".into(),
    };
    let out = Command::new(python)
        .arg("-c")
        .arg("import sys; print('%d.%d.%d' % sys.version_info[:3])")
        .output()
        .map_err(|e| missing(format!("running {}: {e}", python.display())))?;
    if !out.status.success() {
        return Err(missing(output_tail(&out)));
    }
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) < (3, 9) {
        return Err(missing(format!("{} is Python {version}", python.display())));
    }
    Ok(format!("Python {version}"))
}

fn tool_version(tool: &Path) -> Option<String> {
    let out = Command::new(tool).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace().nth(1).map(str::to_string)
}

fn output_tail(out: &std::process::Output) -> String {
    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stdout));
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(8)..].join(" | ");
    format!("{}: {tail}", out.status)
}

fn step_failed(step: &str, out: &std::process::Output) -> SandboxError {
    SandboxError::BuildStep {
        step: step.into(),
        detail: output_tail(out),
    }
}

/// The smoke tests, and `sys.version` as the guest reports it.
fn smoke_tests(sandbox: &Sandbox) -> (Vec<SmokeResult>, String) {
    let mut results = Vec::new();
    let mut guest_python = String::from("unknown");
    let limits = Limits {
        time: Duration::from_secs(1),
        ..Limits::default()
    };
    let mut check = |name: &str, f: &mut dyn FnMut() -> Result<String, String>| {
        let started = Instant::now();
        let (ok, detail) = match f() {
            Ok(detail) => (true, detail),
            Err(detail) => (false, detail),
        };
        results.push(SmokeResult {
            name: name.into(),
            ok,
            detail,
            elapsed: started.elapsed(),
        });
    };
    check("runs python", &mut || {
        let out = sandbox
            .run(
                "import sys; print(sys.version.split()[0])",
                b"",
                &Limits::default(),
            )
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && text.starts_with("3.") {
            guest_python = text.clone();
            Ok(format!("CPython {text}"))
        } else {
            Err(format!(
                "{:?}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    });
    check("empty environment", &mut || {
        let out = sandbox
            .run("import os; print(len(os.environ))", b"", &Limits::default())
            .map_err(|e| e.to_string())?;
        match String::from_utf8_lossy(&out.stdout).trim() {
            "0" => Ok("no variables".into()),
            other => Err(format!("{other} variables visible")),
        }
    });
    check("cpu loop is cut", &mut || {
        let out = sandbox
            .run("while True: pass", b"", &limits)
            .map_err(|e| e.to_string())?;
        expect_timeout(&out.status, out.elapsed)
    });
    check("sleep is cut", &mut || {
        let out = sandbox
            .run("import time; time.sleep(30)", b"", &limits)
            .map_err(|e| e.to_string())?;
        expect_timeout(&out.status, out.elapsed)
    });
    check("no network", &mut || {
        let out = sandbox
            .run(
                "import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), timeout=1)\n    print('connected')\nexcept OSError as e:\n    print('refused', type(e).__name__)",
                b"",
                &Limits::default(),
            )
            .map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if text.starts_with("refused") {
            Ok(text)
        } else {
            Err(text)
        }
    });
    check("grades a solution", &mut || {
        let grader = CodeGrader::from_sandbox(sandbox.clone(), GraderConfig::default());
        let sample = serde_json::json!({
            "metadata": {"func_name": "add"},
            "public_test_cases": "[{\"input\": \"1\\n2\", \"output\": \"3\"}, {\"input\": \"[1]\\n[2]\", \"output\": \"[1, 2]\"}]"
        });
        let good = grader
            .grade_response("```python\ndef plus(a, b):\n    return a + b\n```", &sample)
            .map_err(|e| e.to_string())?;
        let bad = grader
            .grade_extracted("def add(a, b):\n    return a - b", &sample)
            .map_err(|e| e.to_string())?;
        if good.score == 1.0 && bad.score == 0.0 {
            Ok("pass and fail as expected".into())
        } else {
            Err(format!("good: {good:?}; bad: {bad:?}"))
        }
    });
    (results, guest_python)
}

fn expect_timeout(status: &RunStatus, elapsed: Duration) -> Result<String, String> {
    if *status == RunStatus::TimedOut && elapsed < Duration::from_secs(3) {
        Ok(format!("stopped after {:.2} s", elapsed.as_secs_f64()))
    } else {
        Err(format!("{status:?} after {:.2} s", elapsed.as_secs_f64()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_id_is_stable_and_covers_the_sources() {
        assert_eq!(source_id(), source_id());
        assert_eq!(source_id().len(), 64);
        assert!(APP_PY.contains("class Grader"));
        assert!(RUNNER_WIT.contains("export grader"));
    }

    #[test]
    fn a_missing_python_names_the_package_to_install() {
        let err = python_version(Path::new("/nonexistent/python3")).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("apt-get install python3 python3-venv"),
            "{text}"
        );
    }
}
