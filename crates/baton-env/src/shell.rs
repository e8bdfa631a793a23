//! The shell every command runs in: `bash -c COMMAND` behind a small wrapper that applies
//! the resource limits first, and the variables baton sets itself.

use std::collections::BTreeMap;

use crate::config::{BackendKind, Limits};

/// The name of the sandbox's user (uid 1000 inside bwrap), listed in its `/etc/passwd`.
pub const SANDBOX_USER: &str = "baton";

/// The variables baton sets for every command, before the setup's own (which win).
///
/// Under bwrap and local: `PATH` (the usual system folders), `HOME=/tmp`, `USER` and
/// `LOGNAME` (`baton`), `LANG=C.UTF-8`, and `PYTHONDONTWRITEBYTECODE=1` (Python would
/// otherwise reuse a stale `.pyc` after an edit within the same second that keeps the file
/// size). Under Docker only `PYTHONDONTWRITEBYTECODE=1`: the image's own `ENV` (a conda
/// `PATH`, say) stays in force. Nothing else of baton's environment reaches a command, so
/// API keys never do.
pub fn base_env(backend: BackendKind) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    env.insert("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string());
    if backend != BackendKind::Docker {
        for (k, v) in [
            (
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            ),
            ("HOME", "/tmp"),
            ("USER", SANDBOX_USER),
            ("LOGNAME", SANDBOX_USER),
            ("LANG", "C.UTF-8"),
        ] {
            env.insert(k.to_string(), v.to_string());
        }
    }
    env
}

/// The variables a command sees: [`base_env`] overlaid with the setup's.
pub(crate) fn command_env(
    backend: BackendKind,
    setup: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env = base_env(backend);
    env.extend(setup.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

/// The limit values, clamped to what the current process may grant (a process can lower
/// its hard limits but not raise them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct UlimitValues {
    pub processes: u64,
    pub memory_kib: u64,
    pub cpu_secs: u64,
    pub file_kib: u64,
}

impl UlimitValues {
    pub(crate) fn from_limits(limits: &Limits) -> Self {
        UlimitValues {
            processes: limits.processes.max(1),
            memory_kib: (limits.memory_bytes / 1024).max(1),
            cpu_secs: limits.cpu_secs().max(1),
            file_kib: (limits.file_size_bytes / 1024).max(1),
        }
    }

    /// Clamp each value to this process's own hard limit (bwrap and local inherit them).
    pub(crate) fn clamped_to_own(self) -> Self {
        use rustix::process::{Resource, getrlimit};
        let hard = |r: Resource, unit: u64| getrlimit(r).maximum.map(|m| m / unit);
        let clamp = |v: u64, h: Option<u64>| h.map_or(v, |h| v.min(h.max(1)));
        UlimitValues {
            processes: clamp(self.processes, hard(Resource::Nproc, 1)),
            memory_kib: clamp(self.memory_kib, hard(Resource::As, 1024)),
            cpu_secs: clamp(self.cpu_secs, hard(Resource::Cpu, 1)),
            file_kib: clamp(self.file_kib, hard(Resource::Fsize, 1024)),
        }
    }
}

/// The exit code the wrapper uses when it cannot apply the limits (the command never ran).
pub const LIMITS_FAILED: i32 = 125;

/// `bash --noprofile --norc -c WRAPPER baton COMMAND [BASH_ENV]`: sets soft and hard limits
/// (so the command cannot raise them again), then `exec bash -c COMMAND`, a fresh
/// non-interactive shell as mini-SWE-agent runs. `BASH_ENV`, when the setup asks for it, is
/// exported only for that inner shell, so the wrapper itself never sources it.
pub(crate) fn wrapped_command(
    command: &str,
    limits: UlimitValues,
    env: &BTreeMap<String, String>,
) -> Vec<String> {
    let UlimitValues {
        processes,
        memory_kib,
        cpu_secs,
        file_kib,
    } = limits;
    let mut script = format!(
        "ulimit -S -H -u {processes} -v {memory_kib} -t {cpu_secs} -f {file_kib} || \
         {{ echo 'baton: cannot apply the resource limits' >&2; exit {LIMITS_FAILED}; }}\n"
    );
    let bash_env = env.get("BASH_ENV");
    if bash_env.is_some() {
        script.push_str("export BASH_ENV=\"$2\"\n");
    }
    script.push_str("exec bash -c \"$1\"");
    let mut argv = vec![
        "bash".to_string(),
        "--noprofile".to_string(),
        "--norc".to_string(),
        "-c".to_string(),
        script,
        "baton".to_string(),
        command.to_string(),
    ];
    if let Some(v) = bash_env {
        argv.push(v.clone());
    }
    argv
}

/// The variables to pass to the process itself: [`command_env`] without `BASH_ENV`, which
/// [`wrapped_command`] exports for the inner shell only.
pub(crate) fn process_env(
    env: &BTreeMap<String, String>,
) -> impl Iterator<Item = (&String, &String)> {
    env.iter().filter(|(k, _)| k.as_str() != "BASH_ENV")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapper_runs_the_command_under_limits() {
        let limits = UlimitValues {
            processes: 100,
            memory_kib: 1 << 20,
            cpu_secs: 7,
            file_kib: 2048,
        };
        let env = BTreeMap::new();
        let argv = wrapped_command("ulimit -t; ulimit -u; echo \"$0\" \"$1\"", limits, &env);
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "7\n100\nbash \n");
    }

    #[test]
    fn bash_env_reaches_only_the_inner_shell() {
        let dir = tempfile::tempdir().unwrap();
        let rc = dir.path().join("rc");
        std::fs::write(&rc, "echo sourced\n").unwrap();
        let mut env = BTreeMap::new();
        env.insert("BASH_ENV".to_string(), rc.display().to_string());
        let limits = UlimitValues::from_limits(&Limits::default()).clamped_to_own();
        let argv = wrapped_command("echo ran", limits, &env);
        let out = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "sourced\nran\n");
    }

    #[test]
    fn docker_keeps_the_images_path() {
        assert!(!base_env(BackendKind::Docker).contains_key("PATH"));
        assert_eq!(base_env(BackendKind::Bwrap)["PYTHONDONTWRITEBYTECODE"], "1");
    }
}
