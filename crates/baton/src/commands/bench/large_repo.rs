//! The per-step cost of the agent study on a large repository, with the sandbox counted:
//! a generated repository (about 80 MB in 10,000 files by default, deterministic), one
//! environment per backend, and steps as the agent loop makes them (a command that edits
//! one file and reads another, then a snapshot into the run's blob store). CPU is counted
//! twice: baton's own process (`/proc/self/stat`), and a cgroup holding baton, every
//! process it starts (bwrap, the Docker client) and, through `--cgroup-parent`, the
//! containers, so the sandbox's and the container's work is in the second figure and not
//! the first. At the end the last snapshot is restored into a fresh environment and its
//! tree compared with the one it was taken from (what a resume does).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use baton_env::{BackendKind, DirBlobStore, EnvConfig, Environment, Exec, Setup};

use super::USER_HZ;

/// A cgroup the benchmark moves itself into (v2, or v1's `cpuacct`), for CPU time of the
/// whole process tree, containers started under it included.
pub struct Cgroup {
    dir: PathBuf,
    /// The cgroup's path as `--cgroup-parent` names it.
    pub parent: String,
    usage: PathBuf,
    v2: bool,
}

impl Cgroup {
    /// A new cgroup `name` with this process in it, or `None` (with the reason) when the
    /// machine does not let us make one (not root, a read-only `/sys/fs/cgroup`).
    pub fn enter(name: &str) -> std::result::Result<Cgroup, String> {
        let root = Path::new("/sys/fs/cgroup");
        let (base, v2) = if root.join("cgroup.controllers").exists() {
            (root.to_path_buf(), true)
        } else if root.join("cpuacct").is_dir() {
            (root.join("cpuacct"), false)
        } else {
            return Err("no cgroup v2 and no cpuacct hierarchy".into());
        };
        let dir = base.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let procs = dir.join("cgroup.procs");
        std::fs::write(&procs, std::process::id().to_string())
            .map_err(|e| format!("{}: {e}", procs.display()))?;
        let usage = if v2 {
            dir.join("cpu.stat")
        } else {
            dir.join("cpuacct.usage")
        };
        Ok(Cgroup {
            dir,
            parent: format!("/{name}"),
            usage,
            v2,
        })
    }

    /// CPU time of everything that ran in the cgroup so far.
    pub fn cpu(&self) -> Result<Duration> {
        let text = std::fs::read_to_string(&self.usage)
            .with_context(|| format!("cannot read {}", self.usage.display()))?;
        let value = if self.v2 {
            text.lines()
                .find_map(|l| l.strip_prefix("usage_usec "))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_micros)
        } else {
            text.trim().parse::<u64>().ok().map(Duration::from_nanos)
        };
        value.with_context(|| format!("unexpected {}: {text:?}", self.usage.display()))
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // back to the root, then the (empty) cgroup can go
        let root = self.dir.parent().map(|p| p.join("cgroup.procs"));
        if let Some(root) = root {
            let _ = std::fs::write(root, std::process::id().to_string());
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// This process's CPU time (user and system, all threads).
pub fn own_cpu() -> Result<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").context("cannot read /proc/self/stat")?;
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Ok(Duration::from_secs_f64(
        (ticks(11) + ticks(12)) as f64 / USER_HZ,
    ))
}

/// Write the repository: `files` Python files of `mb` MB in all, 100 per folder, the same
/// bytes on every run.
pub fn generate(dir: &Path, files: usize, mb: usize) -> Result<u64> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let per_file = (mb << 20) / files.max(1);
    let mut total = 0u64;
    let mut seed = 0x2026_u64;
    for i in 0..files {
        let folder = dir.join(format!("pkg{:03}/sub{}", i / 100, i % 7));
        std::fs::create_dir_all(&folder)?;
        // sizes vary around the mean, deterministically
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let size = per_file / 2 + (seed >> 33) as usize % per_file.max(1);
        let line = format!("value_{i} = {i}  # generated\n");
        let text = line.repeat(size / line.len() + 1);
        std::fs::write(folder.join(format!("mod{i:05}.py")), &text)?;
        total += text.len() as u64;
    }
    Ok(total)
}

/// What one backend's steps cost.
pub struct StepCost {
    pub backend: BackendKind,
    pub steps: usize,
    pub wall: Duration,
    pub own: Duration,
    pub cgroup: Option<Duration>,
    pub restored_identical: bool,
}

impl StepCost {
    pub fn line(&self, files: usize, bytes: u64) -> String {
        let per = |d: Duration| d.as_secs_f64() * 1e3 / self.steps.max(1) as f64;
        let total = match self.cgroup {
            Some(c) => format!(
                "{:.1} ms per step sandbox included (goal ≤ 50 ms; cgroup)",
                per(c)
            ),
            None => "sandbox not counted (no cgroup here)".to_string(),
        };
        format!(
            "{} on {files} files, {:.0} MB: {} steps, {:.1} ms wall per step; {total}; baton's own CPU {:.2} ms per step (goal ≤ 10 ms); a fresh environment restored from the last snapshot {} the tree",
            self.backend,
            bytes as f64 / 1e6,
            self.steps,
            per(self.wall),
            per(self.own),
            if self.restored_identical {
                "has exactly"
            } else {
                "DIFFERS FROM"
            }
        )
    }
}

/// The command of step `i`: edit one file, read another (as an agent's steps do).
fn step_command(i: usize, files: usize) -> String {
    let a = (i * 7919) % files;
    let b = (i * 104_729 + 13) % files;
    format!(
        "sed -i '1s/^/# step {i}\\n/' pkg{:03}/sub{}/mod{a:05}.py && grep -c value pkg{:03}/sub{}/mod{b:05}.py",
        a / 100,
        a % 7,
        b / 100,
        b % 7
    )
}

/// Every file's path and sha256 in the environment (to compare trees).
const TREE_DIGEST: &str =
    "find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum";

/// Run `steps` steps on `repo` under `config`, counting CPU in `cgroup` when given.
pub fn measure(
    config: &EnvConfig,
    setup: &Setup,
    blobs_dir: &Path,
    steps: usize,
    files: usize,
    cgroup: Option<&Cgroup>,
) -> Result<StepCost> {
    let blobs = DirBlobStore::new(blobs_dir)?;
    let mut env = baton_env::start(config, setup)
        .with_context(|| format!("cannot start a {} environment", config.backend))?;
    // the episode's first snapshot records the whole tree once
    env.snapshot(&blobs)?;
    let (own0, cg0, t0) = (
        own_cpu()?,
        cgroup.map(Cgroup::cpu).transpose()?,
        Instant::now(),
    );
    let mut last = None;
    for i in 0..steps {
        let out = env.exec(&Exec::new(step_command(i, files)))?;
        if !out.status.success() {
            bail!("step {i} failed: {}", out.output.last(400));
        }
        last = Some(env.snapshot(&blobs)?.id);
    }
    let wall = t0.elapsed();
    let own = own_cpu()? - own0;
    let cg = match (cgroup, cg0) {
        (Some(c), Some(start)) => Some(c.cpu()? - start),
        _ => None,
    };
    let want = digest(&mut env)?;
    env.close()?;
    let mut fresh = baton_env::start(config, setup)?;
    if let Some(id) = &last {
        fresh.restore(&blobs, id)?;
    }
    let got = digest(&mut fresh)?;
    fresh.close()?;
    Ok(StepCost {
        backend: config.backend,
        steps,
        wall,
        own,
        cgroup: cg,
        restored_identical: got == want,
    })
}

fn digest(env: &mut Box<dyn Environment>) -> Result<String> {
    let out = env.exec(&Exec::new(TREE_DIGEST).timeout(Duration::from_secs(300)))?;
    if !out.status.success() {
        bail!("cannot list the tree: {}", out.output.last(400));
    }
    Ok(out.output.text())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repository_is_the_same_every_time_and_about_the_size_asked() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let size = generate(a.path(), 200, 2).unwrap();
        assert_eq!(generate(b.path(), 200, 2).unwrap(), size);
        assert!((1 << 20..3 << 20).contains(&size), "{size}");
        let f = "pkg001/sub2/mod00156.py";
        assert_eq!(
            std::fs::read(a.path().join(f)).unwrap(),
            std::fs::read(b.path().join(f)).unwrap()
        );
        assert!(
            step_command(3, 200).contains("mod00157.py"),
            "{}",
            step_command(3, 200)
        );
    }
}
