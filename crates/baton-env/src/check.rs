//! `baton env check`: what works on this machine, each item with the fix when it does not.

use std::process::Command;
use std::time::Duration;

use serde::Serialize;

use crate::config::{BackendKind, EnvConfig, Setup};
use crate::env::{Environment, start};
use crate::exec::Exec;

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Works.
    Ok,
    /// Missing but optional.
    Warn,
    /// Missing and required: agent tasks cannot run.
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckItem {
    /// What was checked (`bwrap`, `python3`, ...).
    pub name: String,
    /// The outcome.
    pub status: CheckStatus,
    /// What was found.
    pub detail: String,
    /// How to fix it, when it failed.
    pub fix: Option<String>,
}

/// Everything [`check`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    /// The backend checked.
    pub backend: BackendKind,
    /// The items, in the order they were checked.
    pub items: Vec<CheckItem>,
    /// Median wall time of `true` in the environment, when it ran.
    pub per_command: Option<Duration>,
}

impl CheckReport {
    /// Items that failed.
    pub fn failures(&self) -> impl Iterator<Item = &CheckItem> {
        self.items.iter().filter(|i| i.status == CheckStatus::Fail)
    }

    /// Whether nothing required is missing.
    pub fn passed(&self) -> bool {
        self.failures().next().is_none()
    }
}

impl std::fmt::Display for CheckReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "environment backend: {}", self.backend)?;
        for i in &self.items {
            let tag = match i.status {
                CheckStatus::Ok => "ok  ",
                CheckStatus::Warn => "warn",
                CheckStatus::Fail => "FAIL",
            };
            write!(f, "{tag}  {:<12} {}", i.name, i.detail)?;
            if let Some(fix) = &i.fix {
                write!(f, "\n      fix: {fix}")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

struct Items(Vec<CheckItem>);

impl Items {
    fn ok(&mut self, name: &str, detail: impl Into<String>) {
        self.push(name, CheckStatus::Ok, detail, None);
    }
    fn fail(&mut self, name: &str, detail: impl Into<String>, fix: impl Into<String>) {
        self.push(name, CheckStatus::Fail, detail, Some(fix.into()));
    }
    fn warn(&mut self, name: &str, detail: impl Into<String>, fix: impl Into<String>) {
        self.push(name, CheckStatus::Warn, detail, Some(fix.into()));
    }
    fn push(
        &mut self,
        name: &str,
        status: CheckStatus,
        detail: impl Into<String>,
        fix: Option<String>,
    ) {
        self.0.push(CheckItem {
            name: name.to_string(),
            status,
            detail: detail.into(),
            fix,
        });
    }
}

/// The fix for a missing system program, by Debian/Ubuntu package.
fn apt(package: &str) -> String {
    format!(
        "install it under /usr: `sudo apt-get install -y {package}` (or your distribution's {package} package)"
    )
}

/// Check the configured backend: the executables it needs, that a sandbox starts, that
/// `python3` and `git` run inside it, that the network and the host's files are out of
/// reach and the limits apply, and the per-command overhead.
pub fn check(config: &EnvConfig) -> CheckReport {
    let mut items = Items(Vec::new());
    let mut per_command = None;
    match config.backend {
        BackendKind::Bwrap => {
            let program = config.bwrap.executable.display().to_string();
            match version(Command::new(&config.bwrap.executable).arg("--version")) {
                Some(v) => items.ok("bwrap", format!("{v} ({program})")),
                None => {
                    let err = crate::bwrap::missing_bwrap(&program);
                    let fix = match &err {
                        crate::EnvError::MissingProgram { hint, .. } => hint.clone(),
                        _ => String::new(),
                    };
                    items.fail("bwrap", format!("{program} not found"), fix);
                    return CheckReport {
                        backend: config.backend,
                        items: items.0,
                        per_command,
                    };
                }
            }
        }
        BackendKind::Docker => {
            let program = &config.docker.executable;
            match crate::preflight::docker_preflight(program) {
                Ok(info) => items.ok(
                    "docker",
                    format!("server {} ({})", info.server_version, program.display()),
                ),
                Err(crate::EnvError::DockerUnavailable { what, fix, .. }) => {
                    items.fail(
                        "docker",
                        format!("`{} version` {what}", program.display()),
                        fix,
                    );
                    return CheckReport {
                        backend: config.backend,
                        items: items.0,
                        per_command,
                    };
                }
                Err(e) => {
                    items.fail("docker", e.to_string(), "see the error");
                    return CheckReport {
                        backend: config.backend,
                        items: items.0,
                        per_command,
                    };
                }
            }
            if config.docker.default_image.is_none() {
                items.ok(
                    "image",
                    "tasks bring their own image (docker.default_image not set); nothing more to check here",
                );
                return CheckReport {
                    backend: config.backend,
                    items: items.0,
                    per_command,
                };
            }
        }
        BackendKind::Local => items.warn(
            "isolation",
            "none: the local backend runs commands on the host as you",
            "use the bwrap backend (the default) for untrusted code",
        ),
    }

    let tree = match tempfile::tempdir() {
        Ok(t) => t,
        Err(e) => {
            items.fail(
                "temp",
                format!("cannot create a temporary folder: {e}"),
                "check TMPDIR",
            );
            return CheckReport {
                backend: config.backend,
                items: items.0,
                per_command,
            };
        }
    };
    let mut env = match start(config, &Setup::tree(tree.path())) {
        Ok(env) => env,
        Err(e) => {
            items.fail(
                "sandbox",
                format!("cannot start: {e}"),
                "see the error above",
            );
            return CheckReport {
                backend: config.backend,
                items: items.0,
                per_command,
            };
        }
    };
    let short = Duration::from_secs(20);
    let run = |env: &mut Box<dyn Environment>, cmd: &str| env.exec(&Exec::new(cmd).timeout(short));
    match run(&mut env, "true") {
        Ok(out) if out.status.success() => {
            let mut times: Vec<Duration> = (0..5)
                .filter_map(|_| run(&mut env, "true").ok().map(|o| o.duration))
                .collect();
            times.sort();
            per_command = times.get(times.len() / 2).copied();
            items.ok(
                "sandbox",
                format!(
                    "starts; {:.1} ms per command (median of {})",
                    per_command.unwrap_or_default().as_secs_f64() * 1e3,
                    times.len()
                ),
            );
        }
        Ok(out) => {
            items.fail(
                "sandbox",
                format!("`true` failed ({}): {}", out.status, out.output.text().trim()),
                "unprivileged user namespaces must be allowed: `sudo sysctl -w kernel.unprivileged_userns_clone=1`; \
                 on Ubuntu 24.04 also `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`",
            );
            return CheckReport {
                backend: config.backend,
                items: items.0,
                per_command,
            };
        }
        Err(e) => {
            items.fail(
                "sandbox",
                format!("cannot run a command: {e}"),
                "see the error above",
            );
            return CheckReport {
                backend: config.backend,
                items: items.0,
                per_command,
            };
        }
    }
    for (name, cmd, package) in [
        ("python3", "python3 --version", "python3"),
        ("git", "git --version", "git"),
    ] {
        match run(&mut env, cmd) {
            Ok(out) if out.status.success() => {
                items.ok(name, format!("{} inside", out.output.text().trim()))
            }
            Ok(out) => items.fail(
                name,
                format!(
                    "not runnable inside ({}): {}",
                    out.status,
                    out.output.text().trim()
                ),
                apt(package),
            ),
            Err(e) => items.fail(name, e.to_string(), apt(package)),
        }
    }
    match run(&mut env, "patch --version | head -1") {
        Ok(out) if out.status.success() && !out.output.text().trim().is_empty() => items.ok(
            "patch",
            format!(
                "{} (fallback when `git apply` refuses a patch)",
                out.output.text().trim()
            ),
        ),
        _ => items.warn(
            "patch",
            "not found; patches are applied with `git apply` only",
            apt("patch"),
        ),
    }
    if config.backend != BackendKind::Local {
        isolation_checks(&mut items, &mut env, config);
    }
    let _ = env.close();
    CheckReport {
        backend: config.backend,
        items: items.0,
        per_command,
    }
}

fn isolation_checks(items: &mut Items, env: &mut Box<dyn Environment>, config: &EnvConfig) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0");
    let port = listener
        .as_ref()
        .ok()
        .and_then(|l| l.local_addr().ok())
        .map_or(9, |a| a.port());
    let net = format!(
        "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached-host; \
         (exec 3<>/dev/tcp/1.1.1.1/53) 2>/dev/null && echo reached-internet; echo done"
    );
    match env.exec(&Exec::new(net).timeout(Duration::from_secs(20))) {
        Ok(out) if out.output.text().trim() == "done" => {
            items.ok("network", "unreachable (host loopback and internet)")
        }
        Ok(out) => items.fail(
            "network",
            format!("reachable from the sandbox: {}", out.output.text().trim()),
            "this bwrap does not isolate the network; update bubblewrap",
        ),
        Err(e) => items.fail("network", e.to_string(), "see the error"),
    }
    drop(listener);
    let write = "touch /usr/.baton-check 2>/dev/null && echo wrote; echo done";
    match env.exec(&Exec::new(write)) {
        Ok(out) if out.output.text().trim() == "done" => {
            items.ok("filesystem", "system folders read-only")
        }
        Ok(out) => items.fail(
            "filesystem",
            format!("a write to /usr succeeded: {}", out.output.text().trim()),
            "update bubblewrap",
        ),
        Err(e) => items.fail("filesystem", e.to_string(), "see the error"),
    }
    let want = config.limits.processes;
    match env.exec(&Exec::new("ulimit -u")) {
        Ok(out) if out.output.text().trim() == want.to_string() => items.ok(
            "limits",
            format!(
                "{want} processes, {} MiB memory, {} s per command",
                config.limits.memory_bytes >> 20,
                config.limits.timeout_secs
            ),
        ),
        Ok(out) => items.warn(
            "limits",
            format!(
                "process limit is {} (wanted {want}; baton's own hard limit is lower)",
                out.output.text().trim()
            ),
            "raise the hard limit of the user running baton (`ulimit -Hu`)",
        ),
        Err(e) => items.fail("limits", e.to_string(), "see the error"),
    }
}

fn version(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!text.is_empty()).then_some(text)
}
