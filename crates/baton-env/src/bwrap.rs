//! The bubblewrap backend (the default).
//!
//! Every command is its own `bwrap` invocation with fresh user, mount, PID, network, IPC,
//! UTS and cgroup namespaces. Inside: the host's `/usr` (and the `/bin`, `/lib*` links or
//! folders next to it) read-only; a synthetic `/etc` (passwd and group naming the sandbox
//! user, hosts, hostname, nsswitch.conf) plus the host's `/etc/alternatives` and loader
//! cache read-only; fresh `/proc` and `/dev`; the working tree read-write at the working
//! directory; the environment's own `/tmp` read-write; everything else absent, and the
//! root itself read-only. No network beyond a private loopback; with `network = true` the
//! host's network, its `/etc/resolv.conf` and a name service that uses it. bwrap itself
//! starts with the configured variables only (its init is PID 1 of the sandbox, whose
//! `/proc/1/environ` a command can read). The sandbox user is uid
//! 1000 (`baton`) inside; no capabilities; a new session (no terminal injection); the
//! sandbox dies with baton (`--die-with-parent`), and its PID namespace dies with its first
//! process, so killing `bwrap` at the timeout kills every process the command started.
//!
//! When baton runs as root, `bwrap` runs as an unprivileged host user (65534 by default):
//! root is exempt from `RLIMIT_NPROC`, which is what stops a fork bomb; the tree is owned
//! by that user. Unprivileged `bwrap` needs unprivileged user namespaces, which `baton env
//! check` tests.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::config::{BackendKind, EnvConfig, Setup};
use crate::env::EnvInfo;
use crate::error::EnvError;
use crate::host::{HostDir, HostEnv, Launcher};
use crate::shell::{self, SANDBOX_USER, UlimitValues};
use crate::tree;

/// The uid and gid of the sandbox user inside the namespace.
pub const SANDBOX_UID: u32 = 1000;

/// Host folders made visible read-only (or re-created as the same link).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Host files and folders under `/etc` made visible read-only when present: the
/// alternatives links (`awk`, `vi` ... point there) and the dynamic loader's cache.
const HOST_ETC: &[&str] = &[
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
];

/// Runs each command in a fresh bubblewrap sandbox.
pub(crate) struct Bwrap {
    program: PathBuf,
    etc: Arc<SharedEtc>,
    host_user: Option<u32>,
    /// `setpriv`, found on `PATH`, to drop from root to the host user in an exec rather
    /// than in a forked copy of baton (see [`Launcher::command`]).
    setpriv: Option<PathBuf>,
    /// Share the host's network (`network = true`).
    network: bool,
}

/// The bubblewrap backend; see the module docs.
pub(crate) type BwrapEnv = HostEnv<Bwrap>;

impl BwrapEnv {
    /// Copy the setup's tree and prepare the sandbox (nothing runs until the first exec).
    pub(crate) fn start(config: &EnvConfig, setup: &Setup) -> Result<Self, EnvError> {
        if setup.image.is_some() && setup.tree.is_none() {
            return Err(EnvError::Unsupported {
                backend: "bwrap",
                message: format!(
                    "image {:?} needs the docker backend (bwrap runs on a host tree)",
                    setup.image.as_deref().unwrap_or_default()
                ),
            });
        }
        let workdir = setup.workdir().to_string();
        validate_workdir(&workdir)?;
        let program = on_path(&config.bwrap.executable);
        let host_user = (rustix::process::geteuid().is_root()).then_some(config.bwrap.host_uid);
        let setpriv = host_user
            .map(|_| on_path(Path::new("setpriv")))
            .filter(|p| p.is_absolute());
        let owner = host_user.map(|u| (u, u));
        let etc = SharedEtc::get(&config.base_dir())?;
        let dir = HostDir::create(config, setup, owner)?;
        let env = shell::command_env(BackendKind::Bwrap, &setup.env);
        let info = EnvInfo {
            backend: BackendKind::Bwrap,
            workdir,
            env: env.clone(),
            limits: config.limits.clone(),
            isolation: format!(
                "bubblewrap ({}): new user/mount/pid/net/ipc/uts namespaces, no capabilities, \
                 /usr read-only, synthetic /etc, {}; runs as uid {SANDBOX_UID} inside{}",
                program.display(),
                if config.network {
                    "the host's network shared"
                } else {
                    "no network"
                },
                host_user.map_or(String::new(), |u| format!(", host uid {u}"))
            ),
            image: None,
        };
        Ok(HostEnv {
            dir: Some(dir),
            launcher: Bwrap {
                program,
                etc,
                host_user,
                setpriv,
                network: config.network,
            },
            ulimits: UlimitValues::from_limits(&config.limits).clamped_to_own(),
            limits: config.limits.clone(),
            env,
            info,
        })
    }
}

impl Bwrap {
    /// The full `bwrap` argument list for one command.
    fn args(&self, dir: &HostDir, workdir: &str, env: &BTreeMap<String, String>) -> Vec<String> {
        let mut a: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| a.extend(items.iter().map(|s| s.to_string()));
        push(&[
            "--unshare-all",
            "--unshare-user",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--hostname",
            "sandbox",
        ]);
        if self.network {
            push(&["--share-net"]);
        }
        let id = SANDBOX_UID.to_string();
        push(&["--uid", &id, "--gid", &id]);
        for d in SYSTEM_DIRS {
            let p = Path::new(d);
            match std::fs::symlink_metadata(p) {
                Ok(md) if md.file_type().is_symlink() => {
                    if let Ok(target) = std::fs::read_link(p) {
                        push(&["--symlink", &target.to_string_lossy(), d]);
                    }
                }
                Ok(md) if md.is_dir() => push(&["--ro-bind", d, d]),
                _ => {}
            }
        }
        push(&["--dir", "/etc"]);
        for name in ETC_FILES.iter().map(|(n, _)| n) {
            let host = self.etc.dir.join(name).display().to_string();
            push(&["--ro-bind", &host, &format!("/etc/{name}")]);
        }
        for p in HOST_ETC {
            push(&["--ro-bind-try", p, p]);
        }
        if self.network {
            // The host's resolver configuration (followed to its file: it is often a link
            // into /run), and a name service that asks it after /etc/hosts.
            let resolv = std::fs::canonicalize(RESOLV_CONF)
                .unwrap_or_else(|_| PathBuf::from(RESOLV_CONF))
                .display()
                .to_string();
            push(&["--ro-bind-try", &resolv, RESOLV_CONF]);
            let nss = self.etc.dir.join(NSSWITCH_NET.0).display().to_string();
            push(&["--ro-bind", &nss, "/etc/nsswitch.conf"]);
        }
        push(&["--proc", "/proc", "--dev", "/dev"]);
        let tmp = dir.tmp.display().to_string();
        let tree = dir.tree.root().display().to_string();
        push(&[
            "--bind", &tmp, "/tmp", "--bind", &tree, workdir, "--chdir", workdir,
        ]);
        push(&["--clearenv"]);
        for (k, v) in shell::process_env(env) {
            push(&["--setenv", k, v]);
        }
        push(&["--remount-ro", "/", "--"]);
        a
    }
}

impl Launcher for Bwrap {
    fn command(
        &self,
        dir: &HostDir,
        workdir: &str,
        env: &BTreeMap<String, String>,
        argv: Vec<String>,
    ) -> Command {
        // As root, the sandbox runs as the host user. `Command::uid` would make the
        // standard library fork a copy of baton to call setuid in (page tables, copy on
        // write: milliseconds per command); `setpriv` drops the ids in its own process,
        // then execs bwrap, so the spawn stays a cheap `posix_spawn`. Without `setpriv`,
        // `Command::uid` it is.
        let mut cmd = match (self.host_user, &self.setpriv) {
            (Some(uid), Some(setpriv)) => {
                let id = uid.to_string();
                let mut cmd = Command::new(setpriv);
                cmd.args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"])
                    .arg(&self.program);
                cmd
            }
            (Some(uid), None) => {
                let mut cmd = Command::new(&self.program);
                cmd.uid(uid).gid(uid);
                cmd
            }
            (None, _) => Command::new(&self.program),
        };
        cmd.args(self.args(dir, workdir, env)).args(argv);
        // bwrap (and `setpriv` before it) start with the configured variables only, not
        // baton's: bwrap's own copy is PID 1 of the sandbox, whose `/proc/1/environ` a
        // command can read. The programs are absolute paths (`on_path`), so no host `PATH`
        // is needed to find them; the command itself gets `--clearenv` and `--setenv`.
        cmd.env_clear();
        cmd.envs(shell::process_env(env));
        cmd
    }

    fn program(&self) -> String {
        self.program.display().to_string()
    }

    /// bwrap's child is PID 1 of the sandbox's PID namespace and dies with bwrap
    /// (`--die-with-parent`); the kernel then kills every process in the namespace.
    fn kill(&self, child: &mut Child) {
        let _ = child.kill();
    }

    fn spawn_error(&self, err: EnvError) -> EnvError {
        match err {
            EnvError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                missing_bwrap(&self.program())
            }
            other => other,
        }
    }
}

/// `program` as an absolute path when it is a bare name found on `PATH` (the standard
/// library spawns with `posix_spawn` only when it need not search a `PATH` it was given);
/// otherwise unchanged, so a missing program still fails at spawn with its own name.
fn on_path(program: &Path) -> PathBuf {
    if program.components().count() != 1 {
        return program.to_path_buf();
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_absolute() && p.is_file())
        .unwrap_or_else(|| program.to_path_buf())
}

/// The error for a missing `bwrap`, with the fix.
pub(crate) fn missing_bwrap(program: &str) -> EnvError {
    EnvError::MissingProgram {
        program: program.to_string(),
        hint: "install bubblewrap: `sudo apt-get install -y bubblewrap` (Debian/Ubuntu), \
               `sudo dnf install bubblewrap` (Fedora); or set BATON_BWRAP to its path"
            .to_string(),
    }
}

/// The working directory must be an absolute, plain path outside the system folders.
fn validate_workdir(workdir: &str) -> Result<(), EnvError> {
    let p = Path::new(workdir);
    let plain = p.is_absolute()
        && p.components()
            .skip(1)
            .all(|c| matches!(c, std::path::Component::Normal(_)))
        && p.components().count() > 1;
    let system = [
        "/usr", "/bin", "/sbin", "/lib", "/etc", "/proc", "/dev", "/tmp",
    ]
    .iter()
    .any(|s| p.starts_with(s));
    if !plain || system {
        return Err(EnvError::Unsupported {
            backend: "bwrap",
            message: format!(
                "working directory {workdir:?} must be an absolute path outside the system folders"
            ),
        });
    }
    Ok(())
}

/// The host's resolver configuration, bound in with `network = true`.
const RESOLV_CONF: &str = "/etc/resolv.conf";

/// The name service switch bound over the synthetic one with `network = true`: host names
/// are looked up in `/etc/hosts`, then through the resolver.
const NSSWITCH_NET: (&str, &str) = (
    "nsswitch-net.conf",
    "passwd: files\ngroup: files\nhosts: files dns\n",
);

/// The synthetic `/etc`: enough for `whoami`, `id`, `getent hosts localhost` and Python's
/// `getpass`/`pwd`.
const ETC_FILES: &[(&str, &str)] = &[
    (
        "passwd",
        "root:x:0:0:root:/root:/bin/bash\n\
         baton:x:1000:1000:baton:/tmp:/bin/bash\n\
         nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    ),
    ("group", "root:x:0:\nbaton:x:1000:\nnogroup:x:65534:\n"),
    (
        "hosts",
        "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost\n",
    ),
    ("hostname", "sandbox\n"),
    (
        "nsswitch.conf",
        "passwd: files\ngroup: files\nhosts: files\n",
    ),
];

/// The synthetic `/etc` on the host, written once and shared by every bwrap environment
/// of this process under the same work folder. It is bound read-only into each sandbox and
/// its files are the same for all of them, so writing them again for every environment
/// only cost file creations (an agent study starts an environment per episode). Removed
/// when the last environment holding it is gone; the next one writes a new one.
struct SharedEtc {
    dir: PathBuf,
}

impl SharedEtc {
    /// The shared `/etc` under `base`, written if no open environment holds one.
    fn get(base: &Path) -> Result<Arc<SharedEtc>, EnvError> {
        static SHARED: Mutex<BTreeMap<PathBuf, Weak<SharedEtc>>> = Mutex::new(BTreeMap::new());
        let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(etc) = shared.get(base).and_then(Weak::upgrade) {
            return Ok(etc);
        }
        shared.retain(|_, etc| etc.strong_count() > 0);
        std::fs::create_dir_all(base).map_err(|e| EnvError::io(base, "create work folder", e))?;
        let dir = tempfile::Builder::new()
            .prefix("baton-etc-")
            .tempdir_in(base)
            .map_err(|e| EnvError::io(base, "create /etc", e))?
            .keep();
        // From here on, a failure drops `etc`, which removes the folder.
        let etc = Arc::new(SharedEtc { dir });
        write_etc(&etc.dir)?;
        shared.insert(base.to_path_buf(), Arc::downgrade(&etc));
        Ok(etc)
    }
}

impl Drop for SharedEtc {
    fn drop(&mut self) {
        tree::remove_tree(&self.dir);
    }
}

/// Write the synthetic `/etc` files into the (existing, private) folder `etc` and open it
/// to every user: as root, `bwrap` runs as the host user, who must read them.
fn write_etc(etc: &Path) -> Result<(), EnvError> {
    for (name, text) in ETC_FILES.iter().chain([&NSSWITCH_NET]) {
        let p = etc.join(name);
        std::fs::write(&p, text).map_err(|e| EnvError::io(&p, "write /etc file", e))?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644))
            .map_err(|e| EnvError::io(&p, "set permissions", e))?;
    }
    std::fs::set_permissions(etc, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| EnvError::io(etc, "set permissions", e))?;
    debug_assert!(
        ETC_FILES
            .iter()
            .any(|(n, t)| *n == "passwd" && t.contains(SANDBOX_USER))
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workdirs_must_be_plain_and_outside_system_folders() {
        assert!(validate_workdir("/testbed").is_ok());
        assert!(validate_workdir("/work/repo").is_ok());
        for bad in ["testbed", "/", "/usr/x", "/tmp", "/a/../etc", "/etc"] {
            assert!(validate_workdir(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn environments_share_one_etc_while_any_is_open() {
        let base = tempfile::tempdir().unwrap();
        let a = SharedEtc::get(base.path()).unwrap();
        let b = SharedEtc::get(base.path()).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "one /etc per work folder");
        let dir = a.dir.clone();
        assert!(dir.starts_with(base.path()));
        for (name, text) in ETC_FILES {
            let p = dir.join(name);
            assert_eq!(std::fs::read_to_string(&p).unwrap(), *text);
            assert_eq!(
                std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o644
            );
        }
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o755,
            "the host user bwrap runs as can read it"
        );

        let other = tempfile::tempdir().unwrap();
        let c = SharedEtc::get(other.path()).unwrap();
        assert!(
            c.dir.starts_with(other.path()),
            "another work folder has its own"
        );

        drop(a);
        assert!(dir.exists(), "still held by an open environment");
        drop(b);
        assert!(!dir.exists(), "removed with the last environment");
        let d = SharedEtc::get(base.path()).unwrap();
        assert_ne!(d.dir, dir, "written afresh after");
        assert_eq!(
            std::fs::read_to_string(d.dir.join("passwd")).unwrap(),
            ETC_FILES[0].1
        );
    }
}
