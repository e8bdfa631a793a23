//! `baton bench harness`: what the harness itself costs on a full handoff matrix.
//! `baton bench agent-study`: the agent handoff study's full matrix, offline, and the
//! per-step cost on a generated large repository with the sandbox counted (below and
//! [`large_repo`]).
//! `baton bench batch`: a batched and a direct run side by side (below).
//!
//! The benchmark writes a math dataset of `--tasks` tasks (the sample set's math tasks,
//! each copy's first shard numbered so no two requests are the same), starts
//! `baton sim-server --latency-ms L` on it as a child process, and runs every cell (three
//! switch points, two directions, five interfaces, forked prefixes) through the `openai`
//! provider as a second child, `baton run`, exactly as a user would. It prints the run's
//! wall time against its bound (the busiest model's calls × latency / that model's
//! concurrency: no harness can finish sooner; none at `--latency-ms 0`, where the run is
//! CPU-bound), the run's CPU time per stored call and its peak resident memory, both read
//! from `/proc` (Linux only), and the store's size per stored call. Beside it, the
//! floor: a bare HTTP client (reqwest alone, `baton bench floor` as a third child) sends
//! every request the run stored to the same server, as many in flight per model, and
//! parses each reply; its CPU time per call is what any client pays on this machine for
//! the HTTP alone, and the difference is baton's own work (the runner, the store's
//! commits, scoring).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use baton_types::Family;

use crate::Outcome;
use crate::cli::{
    AgentStudyBenchArgs, BatchBenchArgs, BenchCommand, FloorBenchArgs, HarnessBenchArgs,
};
use crate::commands::data::load;
use crate::printer::Printer;

mod large_repo;

/// The environment variable the benchmark's models read their (dummy) key from: the
/// `openai` provider requires a key, and sim-server ignores it.
const KEY_ENV: &str = "BATON_BENCH_API_KEY";

/// `/proc` reports CPU times in USER_HZ ticks, which Linux fixes at 100 per second for
/// user space.
const USER_HZ: f64 = 100.0;

pub fn bench(cmd: BenchCommand, printer: &Printer) -> Result<Outcome> {
    match cmd {
        BenchCommand::Harness(args) => harness(args, printer),
        BenchCommand::AgentStudy(args) => agent_study(args, printer),
        BenchCommand::Batch(args) => batch(args, printer),
        BenchCommand::Evaluators(args) => super::bench_evaluators::evaluators(args, printer),
        BenchCommand::Floor(args) => floor(args, printer),
    }
}

/// The agent study's full matrix on the bundled agent sample with the simulated agents
/// (the sandbox runs every command for real), run by a child `baton run` exactly as a
/// user would. baton's own overhead per step is the run's CPU time (its own process,
/// read from `/proc`: the sandboxed commands are child processes and not in it) over the
/// steps made: it holds the loop, the store's writes, snapshots and restores, the
/// reports' inputs, and the simulated agent's replies (in-process, so model time is in
/// it, and small); command and model wall time are printed apart, from the store. Where
/// the benchmark can make a cgroup (root), the run's whole process tree is counted in it
/// too, so the per-step cost with the sandbox included is printed beside baton's own.
/// With `--docker-image` the matrix runs a second time under Docker (its containers in
/// the cgroup through `--cgroup-parent`). Each figure on the sample includes episode
/// setup (environment start, the first snapshot, a container per episode) and scoring,
/// not only steps. Then the per-step cost on a generated large repository
/// ([`large_repo`]), per backend.
fn agent_study(args: AgentStudyBenchArgs, printer: &Printer) -> Result<Outcome> {
    anyhow::ensure!(args.concurrency > 0, "--concurrency must be at least 1");
    let cgroup = large_repo::Cgroup::enter(&format!("baton-bench-{}", std::process::id()));
    if let Err(why) = &cgroup {
        printer.line(&format!(
            "no cgroup ({why}): the sandbox's CPU is not counted, only baton's own"
        ))?;
    }
    let cgroup = cgroup.ok();
    let out = &args.out;
    if out.exists() {
        std::fs::remove_dir_all(out)
            .with_context(|| format!("cannot clear the benchmark folder {}", out.display()))?;
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    printer.line(
        "agent study benchmark: agent-sample, sim/lc and sim/hc, 2 anchors + 7 percentiles × 5 interfaces × 2 directions, forked prefixes",
    )?;
    sample_study(&args, "bwrap", "", cgroup.as_ref(), printer)?;
    if let Some(image) = &args.docker_image {
        let mut docker = format!("default_image = {image:?}");
        if let Some(client) = &args.docker {
            docker.push_str(&format!(
                ", executable = {:?}",
                client.display().to_string()
            ));
        }
        if let Some(c) = &cgroup {
            docker.push_str(&format!(", cgroup_parent = {:?}", c.parent));
        }
        let environment = format!("[environment]\nbackend = \"docker\"\ndocker = {{ {docker} }}\n");
        sample_study(&args, "docker", &environment, cgroup.as_ref(), printer)?;
    }
    if args.repo_files > 0 {
        large_repository(&args, cgroup.as_ref(), printer)?;
    }
    Ok(Outcome::Success)
}

/// The sample's full matrix on one backend (`environment`: the experiment's
/// `[environment]` table, empty for the default bubblewrap), run by a child `baton run`
/// into `run-BACKEND`, with the figures printed under the backend's name.
fn sample_study(
    args: &AgentStudyBenchArgs,
    backend: &str,
    environment: &str,
    cgroup: Option<&large_repo::Cgroup>,
    printer: &Printer,
) -> Result<()> {
    let out = &args.out;
    let cg_start = cgroup.map(large_repo::Cgroup::cpu).transpose()?;
    let own_start = large_repo::own_cpu()?;
    let limit = args
        .limit
        .map_or_else(String::new, |n| format!("limit = {n}\n"));
    let spec = format!(
        r#"kind = "agent"
name = "bench-agent-study"
dataset = "agent-sample"
{limit}seed = 2026
concurrency = {}
[agent]
step_limit = 40
[models.lc]
model = "sim/lc"
[models.hc]
model = "sim/hc"
[[pairs]]
low = "lc"
high = "hc"
{environment}"#,
        args.concurrency
    );
    let file = format!("bench-{backend}.toml");
    let run = format!("run-{backend}");
    std::fs::write(out.join(&file), spec)
        .with_context(|| format!("cannot write {}", out.join(&file).display()))?;
    let (usage, wall) = run_child(out, &file, &run)?;
    // the run's tree in the cgroup, less this process's own polling
    let tree_cpu = match (cgroup, cg_start) {
        (Some(c), Some(start)) => {
            Some(c.cpu()?.saturating_sub(start) - (large_repo::own_cpu()? - own_start))
        }
        _ => None,
    };
    let db = out.join(&run).join(baton_runner::STORE_FILE);
    let reader = baton_store::Reader::open(&db)?;
    let rows = reader.agent_episodes()?;
    let episodes = rows.len();
    let handoffs = rows.iter().filter(|e| e.k.is_some()).count();
    let fired = rows
        .iter()
        .filter(|e| e.switch.as_ref().is_some_and(|s| s.switch.fired))
        .count();
    let calls = reader.call_count()?;
    let steps: u64 = rows.iter().map(|e| u64::from(e.calls)).sum();
    let commands: u64 = rows.iter().map(|e| u64::from(e.commands)).sum();
    let (mut command_ms, mut model_ms) = (0u64, 0u64);
    for e in &rows {
        let p = reader.agent_progress(e.id)?;
        command_ms += p.steps.iter().map(|s| s.step.duration_ms).sum::<u64>();
        model_ms += p.calls.iter().map(|c| c.call.call.latency_ms).sum::<u64>();
        model_ms += p.handoff_call.as_ref().map_or(0, |c| c.call.latency_ms);
    }
    printer.line(&format!(
        "{backend}: episodes: {episodes} ({handoffs} handoffs, {fired} fired); calls: {calls} ({steps} steps); sandbox commands: {commands} (scoring runs not counted)"
    ))?;
    printer.line(&format!(
        "{backend}: wall {:.1} s at concurrency {}; command time {:.1} s; model time {:.1} s (summed over episodes)",
        wall.as_secs_f64(),
        args.concurrency,
        command_ms as f64 / 1e3,
        model_ms as f64 / 1e3
    ))?;
    printer.line(&format!(
        "{backend}: baton's own CPU {:.1} s = {:.2} ms per step (goal ≤ 10 ms; episode setup, scoring and reports included); peak RSS {:.0} MB; store {:.1} MB",
        usage.cpu_secs,
        usage.cpu_secs * 1e3 / steps.max(1) as f64,
        usage.peak_rss_kb as f64 / 1024.0,
        file_mb(&db)
    ))?;
    if let Some(tree) = tree_cpu {
        printer.line(&format!(
            "{backend}: with the sandbox (cgroup: baton, its children and every command): {:.1} s = {:.2} ms per step",
            tree.as_secs_f64(),
            tree.as_secs_f64() * 1e3 / steps.max(1) as f64
        ))?;
    }
    Ok(())
}

/// The per-step cost on the generated repository, bubblewrap and (with an image) Docker.
fn large_repository(
    args: &AgentStudyBenchArgs,
    cgroup: Option<&large_repo::Cgroup>,
    printer: &Printer,
) -> Result<()> {
    let repo = args.out.join("large-repo");
    let bytes = large_repo::generate(&repo, args.repo_files, args.repo_mb)?;
    let mut configs = vec![baton_env::EnvConfig::for_backend(
        baton_env::BackendKind::Bwrap,
    )];
    let mut docker = baton_env::EnvConfig::for_backend(baton_env::BackendKind::Docker);
    if let Some(p) = &args.docker {
        docker.docker.executable = p.clone();
    }
    docker.docker.cgroup_parent = cgroup.map(|c| c.parent.clone());
    if args.docker_image.is_some() {
        configs.push(docker);
    }
    for config in configs {
        let mut setup = baton_env::Setup::tree(&repo);
        if config.backend == baton_env::BackendKind::Docker {
            setup.image = args.docker_image.clone();
        }
        let blobs = args
            .out
            .join(format!("large-repo-blobs-{}", config.backend));
        match large_repo::measure(
            &config,
            &setup,
            &blobs,
            args.repo_steps,
            args.repo_files,
            cgroup,
        ) {
            Ok(cost) => printer.line(&cost.line(args.repo_files, bytes))?,
            Err(e) => printer.line(&format!("{}: not measured ({e:#})", config.backend))?,
        }
    }
    Ok(())
}

fn harness(args: HarnessBenchArgs, printer: &Printer) -> Result<Outcome> {
    anyhow::ensure!(args.tasks > 0, "--tasks must be at least 1");
    anyhow::ensure!(
        args.model_concurrency > 0 && args.concurrency > 0,
        "--concurrency and --model-concurrency must be at least 1"
    );
    let out = &args.out;
    if out.exists() {
        std::fs::remove_dir_all(out)
            .with_context(|| format!("cannot clear the benchmark folder {}", out.display()))?;
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let dataset = out.join("bench-math.json");
    write_dataset(&dataset, args.tasks)?;

    let exe = std::env::current_exe().context("cannot find the baton executable")?;
    let server = Server::start(&exe, &dataset, args.latency_ms)?;
    let spec = out.join("bench.toml");
    std::fs::write(&spec, experiment(&args, &server.base_url))
        .with_context(|| format!("cannot write {}", spec.display()))?;
    printer.line(&format!(
        "harness benchmark: {} math tasks, every cell, openai provider against sim-server at {} ({} ms latency)",
        args.tasks, server.base_url, args.latency_ms
    ))?;

    let (usage, wall) = run_child(out, "bench.toml", "run")?;
    let store = baton_store::Reader::open(&out.join("run").join(baton_runner::STORE_FILE))?;
    let requests = out.join("floor-requests.jsonl");
    write_floor_requests(&store, &server.base_url, &requests)?;
    let floor = run_floor(&exe, &requests, &server.base_url, args.model_concurrency)?;
    drop(server);
    let _ = std::fs::remove_file(&requests);

    let per_model = store.call_count_by_model()?;
    let calls: u64 = per_model.values().sum();
    let busiest = per_model.values().copied().max().unwrap_or(0);
    let bound = Duration::from_secs_f64(
        busiest as f64 * args.latency_ms as f64 / 1000.0 / args.model_concurrency as f64,
    );
    let counts: Vec<String> = per_model.iter().map(|(m, n)| format!("{m} {n}")).collect();
    printer.line(&format!(
        "calls: {calls} ({}); {} in flight per model, {} task groups",
        counts.join(", "),
        args.model_concurrency,
        args.concurrency
    ))?;
    printer.line(&wall_line(wall, bound))?;
    let store_mb = file_mb(&out.join("run").join(baton_runner::STORE_FILE));
    printer.line(&format!(
        "CPU {:.1} s = {:.0} µs per call (goal ≤ 150); peak RSS {:.0} MB; store {:.1} MB = {:.2} KB per call (goal ≤ 1.6)",
        usage.cpu_secs,
        per_call(usage.cpu_secs, calls),
        usage.peak_rss_kb as f64 / 1024.0,
        store_mb,
        store_mb * 1e3 / calls.max(1) as f64
    ))?;
    printer.line(&format!(
        "a bare HTTP client sending the same {} requests against the same server ({} in flight per model): CPU {:.1} s = {:.0} µs per call; baton's run above it: {:.0} µs per call",
        floor.calls,
        args.model_concurrency,
        floor.cpu_secs,
        per_call(floor.cpu_secs, floor.calls),
        per_call(usage.cpu_secs, calls) - per_call(floor.cpu_secs, floor.calls)
    ))?;
    Ok(Outcome::Success)
}

/// Microseconds of CPU per call: `secs` over `calls` (none counts as one).
fn per_call(secs: f64, calls: u64) -> f64 {
    secs * 1e6 / calls.max(1) as f64
}

/// Every request the run stored, as the body the run's `openai` provider sent for it
/// (built by that provider, [`baton_http::HttpProvider::body`]), one JSON line each with
/// its model apart.
fn write_floor_requests(store: &baton_store::Reader, base_url: &str, path: &Path) -> Result<()> {
    use std::io::Write;
    let provider = baton_http::HttpProvider::new(
        baton_http::Wire::OpenAiChat,
        base_url,
        None,
        reqwest::Client::new(),
        baton_http::DEFAULT_TIMEOUT,
        false,
    );
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut file = std::io::BufWriter::new(file);
    for episode in store.all_episodes()? {
        for row in store.calls(episode.id)? {
            let request: baton_models::Request = serde_json::from_str(&row.call.request_json)
                .with_context(|| format!("call {}: its stored request", row.id))?;
            let body = provider.body(&request).to_string();
            let line = serde_json::json!({ "model": row.call.model, "body": body });
            writeln!(file, "{line}").with_context(|| format!("cannot write {}", path.display()))?;
        }
    }
    file.flush()
        .with_context(|| format!("cannot write {}", path.display()))
}

/// What the bare client used while it sent its requests.
struct Floor {
    calls: u64,
    cpu_secs: f64,
}

/// Run `baton bench floor` on `requests` as a child and read its figures.
fn run_floor(
    exe: &Path,
    requests: &Path,
    base_url: &str,
    model_concurrency: usize,
) -> Result<Floor> {
    let output = Command::new(exe)
        .args([
            "bench",
            "floor",
            "--base-url",
            base_url,
            "--model-concurrency",
        ])
        .arg(model_concurrency.to_string())
        .arg("--requests")
        .arg(requests)
        .env(KEY_ENV, "sim-server-ignores-this")
        .stderr(Stdio::inherit())
        .output()
        .context("cannot start baton bench floor")?;
    let text = String::from_utf8_lossy(&output.stdout);
    let figures: Vec<&str> = text.split_whitespace().collect();
    match (output.status.success(), figures.as_slice()) {
        (true, [calls, cpu]) => Ok(Floor {
            calls: calls.parse()?,
            cpu_secs: cpu.parse()?,
        }),
        _ => bail!("the bare client failed ({}): {text:?}", output.status),
    }
}

/// `baton bench floor`: send every request of `--requests` to `--base-url`'s chat
/// completions with reqwest alone, `--model-concurrency` at once per model, read and parse
/// each reply, and print the requests sent and the CPU seconds this process spent sending
/// them (reading the file excluded). A reply that is not a 2xx JSON body is an error.
fn floor(args: FloorBenchArgs, printer: &Printer) -> Result<Outcome> {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(serde::Deserialize)]
    struct Line {
        model: String,
        body: String,
    }
    let file = std::fs::File::open(&args.requests)
        .with_context(|| format!("cannot read {}", args.requests.display()))?;
    // a body is shared by reference, not copied, when handed to the request
    let mut by_model: BTreeMap<String, Vec<bytes::Bytes>> = BTreeMap::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let at = || format!("{} line {}", args.requests.display(), i + 1);
        let Line { model, body } =
            serde_json::from_str(&line.with_context(at)?).with_context(at)?;
        by_model.entry(model).or_default().push(body.into());
    }
    let calls: usize = by_model.values().map(Vec::len).sum();
    let url = format!("{}/chat/completions", args.base_url.trim_end_matches('/'));
    let key = std::env::var(KEY_ENV).unwrap_or_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let before = own_cpu_secs()?;
    runtime.block_on(async {
        let client = reqwest::Client::new();
        let mut workers = Vec::new();
        for bodies in by_model.into_values() {
            let (bodies, next) = (Arc::new(bodies), Arc::new(AtomicUsize::new(0)));
            for _ in 0..args.model_concurrency.max(1) {
                let (client, url, key) = (client.clone(), url.clone(), key.clone());
                let (bodies, next) = (bodies.clone(), next.clone());
                workers.push(tokio::spawn(async move {
                    while let Some(body) = bodies.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let reply = client
                            .post(&url)
                            .bearer_auth(&key)
                            .header("content-type", "application/json")
                            .body(body.clone())
                            .send()
                            .await?
                            .error_for_status()?;
                        let bytes = reply.bytes().await?;
                        serde_json::from_slice::<serde_json::Value>(&bytes)?;
                    }
                    anyhow::Ok(())
                }));
            }
        }
        for worker in workers {
            worker.await??;
        }
        anyhow::Ok(())
    })?;
    let spent = own_cpu_secs()? - before;
    printer.line(&format!("{calls} {spent:.3}"))?;
    Ok(Outcome::Success)
}

/// This process's CPU time so far (user and system), from `/proc/self/stat`.
fn own_cpu_secs() -> Result<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat")
        .context("cannot read /proc/self/stat (the benchmark needs Linux)")?;
    proc_stat_cpu_secs(&stat).context("/proc/self/stat has no CPU times")
}

/// The user and system CPU seconds of a `/proc/<pid>/stat` line: after the parenthesised
/// command name, the state is the first field, utime and stime the 12th and 13th.
fn proc_stat_cpu_secs(stat: &str) -> Option<f64> {
    let fields: Vec<&str> = stat.rsplit_once(") ")?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some((ticks(11)? + ticks(12)?) as f64 / USER_HZ)
}

/// The run's wall time against its bound; with no latency there is no bound (the run
/// is CPU-bound), and no ratio to print.
fn wall_line(wall: Duration, bound: Duration) -> String {
    if bound.is_zero() {
        return format!(
            "wall {:.1} s; no bound at 0 ms latency (the run is CPU-bound)",
            wall.as_secs_f64()
        );
    }
    format!(
        "wall {:.1} s; bound {:.1} s (busiest model's calls × latency / concurrency); ratio {:.2}× (goal ≤ 1.05)",
        wall.as_secs_f64(),
        bound.as_secs_f64(),
        wall.as_secs_f64() / bound.as_secs_f64()
    )
}

/// `tasks` math tasks cycling through the sample set's, each with its own id and a
/// numbered first shard.
fn write_dataset(path: &Path, tasks: usize) -> Result<()> {
    let sample = load(Path::new("sample"))?;
    let math: Vec<_> = sample
        .tasks
        .iter()
        .filter(|t| t.family == Family::Math)
        .collect();
    anyhow::ensure!(!math.is_empty(), "the sample set has no math tasks");
    let items: Vec<serde_json::Value> = (0..tasks)
        .map(|i| {
            let mut item = math[i % math.len()].sample.clone();
            item["task_id"] = format!("bench-math/{i:04}").into();
            if let Some(first) = item["shards"][0]["shard"].as_str() {
                item["shards"][0]["shard"] = format!("{first} (case {i})").into();
            }
            item
        })
        .collect();
    std::fs::write(path, serde_json::to_vec(&items)?)
        .with_context(|| format!("cannot write {}", path.display()))
}

fn experiment(args: &HarnessBenchArgs, base_url: &str) -> String {
    let model = |id: &str| {
        format!(
            "[models.{id}]\nmodel = \"openai/{id}\"\nprice = \"sim/{id}\"\nbase_url = \"{base_url}\"\napi_key_env = \"{KEY_ENV}\"\nconcurrency = {}\n",
            args.model_concurrency
        )
    };
    format!(
        r#"name = "bench-harness"
dataset = "bench-math.json"
families = ["math"]
seed = 1
concurrency = {}
switch_points = ["early", "middle", "late"]
directions = ["escalation", "downshift"]
interfaces = ["raw", "disclosure", "traj_drop", "compact_pre", "compact_suf"]

{}
{}
[[pairs]]
low = "lc"
high = "hc"
"#,
        args.concurrency,
        model("lc"),
        model("hc")
    )
}

/// `baton sim-server` as a child process, killed when dropped.
struct Server {
    child: Child,
    base_url: String,
}

impl Server {
    fn start(exe: &Path, dataset: &Path, latency_ms: u64) -> Result<Server> {
        Self::start_with(exe, dataset, latency_ms, &[])
    }

    fn start_with(exe: &Path, dataset: &Path, latency_ms: u64, extra: &[&str]) -> Result<Server> {
        let mut child = Command::new(exe)
            .args(["sim-server", "--port", "0", "--latency-ms"])
            .arg(latency_ms.to_string())
            .arg("--dataset")
            .arg(dataset)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start baton sim-server")?;
        let mut line = String::new();
        if let Some(stdout) = child.stdout.take() {
            BufReader::new(stdout).read_line(&mut line)?;
        }
        let Some(base_url) = line.split_whitespace().find(|w| w.starts_with("http://")) else {
            let _ = child.kill();
            let _ = child.wait();
            bail!("sim-server did not say where it listens: {line:?}");
        };
        Ok(Server {
            base_url: base_url.to_string(),
            child,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Run `baton run FILE --out RUN --quiet` in `out` as a child, as a user would, and
/// return what it used and its wall time; a failed run is an error naming the folder.
fn run_child(out: &Path, file: &str, run: &str) -> Result<(Usage, Duration)> {
    let exe = std::env::current_exe().context("cannot find the baton executable")?;
    let started = Instant::now();
    let child = Command::new(&exe)
        .args(["run", file, "--out", run, "--quiet"])
        .current_dir(out)
        .env(KEY_ENV, "sim-server-ignores-this")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("cannot start baton run")?;
    let usage = watch(child)?;
    let wall = started.elapsed();
    if !usage.success {
        bail!(
            "the benchmark's {run} run failed (see above); its store is in {}",
            out.join(run).display()
        );
    }
    Ok((usage, wall))
}

/// What the run used, read from `/proc` while it ran and, once it exited, from its
/// not yet reaped entry (a zombie keeps its CPU times).
struct Usage {
    success: bool,
    cpu_secs: f64,
    peak_rss_kb: u64,
}

fn watch(mut child: Child) -> Result<Usage> {
    let proc_dir = PathBuf::from(format!("/proc/{}", child.id()));
    let mut peak_rss_kb = 0;
    let cpu_secs = loop {
        let stat = std::fs::read_to_string(proc_dir.join("stat"))
            .context("cannot read the run's /proc entry (the benchmark needs Linux)")?;
        // a zombie: exited, its CPU times final (see `proc_stat_cpu_secs`)
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split_whitespace().next());
        if state == Some("Z") {
            break proc_stat_cpu_secs(&stat).unwrap_or(0.0);
        }
        if let Ok(status) = std::fs::read_to_string(proc_dir.join("status")) {
            let hwm = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak_rss_kb = peak_rss_kb.max(hwm.unwrap_or(0));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let status = child.wait()?;
    Ok(Usage {
        success: status.success(),
        cpu_secs,
        peak_rss_kb,
    })
}

/// A batched and a direct run of the same experiment, each against its own fresh
/// sim-server (so neither inherits the other's prompt cache), run by child `baton run`s
/// as a user would. Every cell of the pair with forked prefixes and the raw interface
/// on `--tasks` math tasks. Rounds are the waves of batches: batches submitted within
/// half a gather window of the one before belong to the same wave.
fn batch(args: BatchBenchArgs, printer: &Printer) -> Result<Outcome> {
    anyhow::ensure!(args.tasks > 0, "--tasks must be at least 1");
    let out = &args.out;
    if out.exists() {
        std::fs::remove_dir_all(out)
            .with_context(|| format!("cannot clear the benchmark folder {}", out.display()))?;
    }
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let dataset = out.join("bench-math.json");
    write_dataset(&dataset, args.tasks)?;
    let exe = std::env::current_exe().context("cannot find the baton executable")?;
    printer.line(&format!(
        "batch benchmark: {} math tasks, 3 switch points × 2 directions, raw, forked; sim-server batch turnaround {} ms, gather {} ms",
        args.tasks, args.turnaround_ms, args.gather_ms
    ))?;
    let run = |name: &str, batched: bool| -> Result<(Usage, Duration, baton_store::Reader)> {
        let turnaround = args.turnaround_ms.to_string();
        let server =
            Server::start_with(&exe, &dataset, 0, &["--batch-turnaround-ms", &turnaround])?;
        let model = |id: &str| {
            format!(
                "[models.{id}]\nmodel = \"openai-compatible/{id}\"\nprice = \"sim/{id}\"\nbase_url = \"{}\"\nbatch = {batched}\n",
                server.base_url
            )
        };
        let spec = format!(
            "name = \"bench-batch-{name}\"\ndataset = \"bench-math.json\"\nfamilies = [\"math\"]\nseed = 1\n\
             switch_points = [\"early\", \"middle\", \"late\"]\ndirections = [\"escalation\", \"downshift\"]\n\
             batch_gather_ms = {}\nbatch_poll_ms = 20\n{}{}[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n",
            args.gather_ms,
            model("lc"),
            model("hc")
        );
        let file = format!("{name}.toml");
        std::fs::write(out.join(&file), spec)
            .with_context(|| format!("cannot write {}", out.join(&file).display()))?;
        let (usage, wall) = run_child(out, &file, name)?;
        let reader = baton_store::Reader::open(&out.join(name).join(baton_runner::STORE_FILE))?;
        Ok((usage, wall, reader))
    };
    let (direct_usage, direct_wall, direct) = run("direct", false)?;
    let (usage, wall, batched) = run("batched", true)?;

    let verdicts = |r: &baton_store::Reader| -> Result<Vec<Verdict>> {
        let mut all: Vec<_> = r
            .episodes()?
            .into_iter()
            .map(|e| {
                let score = e.score();
                (e.init.task_id, e.init.cell_key, e.init.replicate, score)
            })
            .collect();
        // the runs create episodes in different orders
        all.sort_by(|a, b| (&a.0, &a.1, a.2).cmp(&(&b.0, &b.1, b.2)));
        Ok(all)
    };
    let same = verdicts(&direct)? == verdicts(&batched)?;
    let (paid_direct, paid_batched) = (direct.spend()?.paid, batched.spend()?.paid);
    let calls = batched.call_count()?;
    let batches = batched.batches()?;
    let mut times: Vec<i128> = batches
        .iter()
        .filter_map(|b| b.submitted_at.parse::<jiff::Timestamp>().ok())
        .map(|t| t.as_millisecond() as i128)
        .collect();
    times.sort_unstable();
    let gap = i128::from(args.gather_ms / 2);
    let rounds = 1 + times.windows(2).filter(|w| w[1] - w[0] > gap).count();
    let longest = batched
        .tasks()?
        .iter()
        .map(|t| t.n_turns)
        .max()
        .unwrap_or(0);
    let items: Vec<usize> = batches.iter().map(|b| b.batch.custom_ids.len()).collect();
    printer.line(&format!(
        "verdicts: {} ({} episodes each)",
        if same { "identical" } else { "DIFFERENT" },
        batched.episodes()?.len()
    ))?;
    printer.line(&format!(
        "spend: batched {} vs direct {}: ratio {:.3} (goal ≤ 0.55)",
        paid_batched,
        paid_direct,
        paid_batched.0 as f64 / paid_direct.0.max(1) as f64
    ))?;
    printer.line(&format!(
        "rounds: {rounds} waves of {} batches (lower bound 2 × {longest} turns = {}); requests per batch: mean {:.1}, max {}",
        batches.len(),
        2 * longest,
        items.iter().sum::<usize>() as f64 / items.len().max(1) as f64,
        items.iter().max().copied().unwrap_or(0)
    ))?;
    printer.line(&format!(
        "wall: batched {:.1} s, direct {:.1} s; baton's CPU {:.1} s = {:.0} µs per batched call (direct: {:.0} µs per call); peak RSS {:.0} MB batched, {:.0} MB direct",
        wall.as_secs_f64(),
        direct_wall.as_secs_f64(),
        usage.cpu_secs,
        per_call(usage.cpu_secs, calls),
        per_call(direct_usage.cpu_secs, direct.call_count()?),
        usage.peak_rss_kb as f64 / 1024.0,
        direct_usage.peak_rss_kb as f64 / 1024.0
    ))?;
    Ok(if same {
        Outcome::Success
    } else {
        Outcome::Partial
    })
}

/// An episode's (task, cell, replicate) and score, for comparing two runs.
type Verdict = (String, String, u32, Option<f64>);

fn file_mb(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |m| m.len() as f64 / 1e6)
}
