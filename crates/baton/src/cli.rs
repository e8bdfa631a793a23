//! Command-line types (clap only; no behaviour here).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// baton: replay LiC sharded tasks, hand the conversation from one LLM to another,
/// score the final answer with LiC's evaluators and price every call.
#[derive(Debug, Parser)]
#[command(name = "baton", version, about, long_about = None)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// Commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the bundled demo: the sample set, two simulated models, every switch point and
    /// both directions; writes results/demo/ and prints the table.
    Demo(DemoArgs),
    /// Run (or resume) an experiment file.
    Run(RunArgs),
    /// Build the report of a stored experiment.
    Report(ReportArgs),
    /// Merge the folders of an experiment's parts (`run --part I/N`) into one store
    /// whose report is the unsplit run's.
    Merge(MergeArgs),
    /// The agent handoff study's switch thresholds from the anchors of all its parts
    /// (`run --part I/N --phase anchors`), written to a file for `--phase handoffs`.
    Thresholds(ThresholdsArgs),
    /// Write a transcript viewer of a stored experiment: every episode's conversation,
    /// switch, extracted answer and verdict, as static HTML (`view/index.html`).
    View(ViewArgs),
    /// Score answers or responses from a JSONL file (the conformance format).
    Score(ScoreArgs),
    /// Validate and describe datasets.
    #[command(subcommand)]
    Data(DataCommand),
    /// Show what a model will see for one task: the system prompt and every user turn
    /// (the last with its final-turn instruction).
    Show(ShowArgs),
    /// Build or verify the Python-for-WASI runtime that grades code.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Serve the simulated models over OpenAI Chat Completions, OpenAI Responses and
    /// Anthropic Messages on loopback, with fault injection, for tests and benchmarks.
    SimServer(SimServerArgs),
    /// Check handoff documents (Handover-compatible) and run Handover's trap bench.
    #[command(subcommand)]
    Handoff(HandoffCommand),
    /// Sandboxed environments for coding agents: check them, run a command, check tasks.
    #[command(subcommand)]
    Env(EnvCommand),
    /// Benchmarks that print figures.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// SWE-bench with the official harness (needs Docker).
    #[command(subcommand)]
    Swebench(SwebenchCommand),
}

/// `baton swebench`.
#[derive(Debug, Subcommand)]
pub enum SwebenchCommand {
    /// Judge a finished agent run's SWE-bench patches with the pinned official harness:
    /// writes one predictions file per (cell, replicate) under RESULTS/swebench/predictions/,
    /// runs the harness on the patches not judged yet, and stores the verdicts so
    /// `baton report` scores those episodes. Checks Docker before running anything.
    Eval(SwebenchEvalArgs),
}

/// `baton swebench eval`.
#[derive(Debug, Args)]
pub struct SwebenchEvalArgs {
    /// The results folder of an agent run (holding results.sqlite).
    pub results: PathBuf,
    /// The Python with swebench 5.0.2 installed (default: the experiment's swebench_python).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// The SWE-bench JSONL the run used (default: the file the run loaded its tasks from).
    #[arg(long)]
    pub dataset: Option<PathBuf>,
    /// Instances the harness evaluates at once (its --max_workers).
    #[arg(long, default_value_t = 1)]
    pub max_workers: usize,
    /// Seconds the harness allows each instance's tests (its --timeout).
    #[arg(long, default_value_t = 1800)]
    pub timeout: u64,
    /// The docker client the preflight asks (a compatible client works).
    #[arg(long, env = "BATON_DOCKER")]
    pub docker: Option<PathBuf>,
}

/// `baton bench`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The harness's own cost: every cell of a math dataset through the `openai` provider
    /// against `baton sim-server`; prints wall time against its bound, CPU time per call
    /// and peak memory of the run, and beside it the CPU time per call of a bare HTTP
    /// client sending the same requests.
    Harness(HarnessBenchArgs),
    /// The agent handoff study's full matrix on the bundled agent sample with simulated
    /// agents, offline: 2 anchors + percentiles × interfaces × 2 directions, forked;
    /// prints wall time, calls, sandbox commands and baton's own CPU time per step.
    AgentStudy(AgentStudyBenchArgs),
    /// A batched and a direct run of the same math experiment against `baton
    /// sim-server`, side by side: spend ratio at the same verdicts (forking on), batch
    /// rounds against 2 × the longest task's turns, requests per round, and baton's CPU
    /// and peak memory per batched call.
    Batch(BatchBenchArgs),
    /// baton's evaluators against LiC's own Python evaluators on the conformance vectors,
    /// side by side: whole process and per vector (the scoring loop alone), per family.
    Evaluators(EvaluatorsBenchArgs),
    /// `bench harness`'s reference: a bare HTTP client sending the requests a run stored
    /// (run by `bench harness` as a child; prints its own CPU time).
    #[command(hide = true)]
    Floor(FloorBenchArgs),
}

/// `baton bench floor`.
#[derive(Debug, Args)]
pub struct FloorBenchArgs {
    /// The requests, one JSON line each: `{"model": ..., "body": ...}`.
    #[arg(long)]
    pub requests: PathBuf,
    /// The server's base URL (`.../v1`).
    #[arg(long)]
    pub base_url: String,
    /// Requests in flight at once per model.
    #[arg(long)]
    pub model_concurrency: usize,
}

/// `baton bench evaluators`.
#[derive(Debug, Args)]
pub struct EvaluatorsBenchArgs {
    /// LiC's evaluator code: a folder with `lic_harness.py` and LiC's checkout in `lic/`,
    /// laid out like `../shared/bench/lic-python`. Without it only baton's figures print.
    #[arg(long, default_value = "../shared/bench/lic-python")]
    pub lic: PathBuf,
    /// A Python with the packages LiC's evaluators import (the folder's `setup.sh`
    /// builds one: `VENV=DIR bash setup.sh`, then `--python DIR/bin/python`).
    #[arg(long, env = "BATON_LIC_PYTHON", default_value = "python3")]
    pub python: PathBuf,
    /// The conformance vectors: `<family>.jsonl` and the `databases/` folder.
    #[arg(long, default_value = "../shared/conformance")]
    pub conformance: PathBuf,
    /// Families to compare (comma-separated; default actions, math, data2text, database).
    #[arg(long = "family", value_delimiter = ',')]
    pub families: Vec<baton_types::Family>,
    /// Runs of each measurement; the fastest is printed.
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Folder for the copy of LiC's code and the timing script (cleared first).
    #[arg(long, default_value = "results/bench-evaluators")]
    pub out: PathBuf,
}

/// `baton bench batch`.
#[derive(Debug, Args)]
pub struct BatchBenchArgs {
    /// Math tasks in the generated dataset (copies of the sample set's, numbered).
    #[arg(long, default_value_t = 40)]
    pub tasks: usize,
    /// sim-server's batch turnaround, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub turnaround_ms: u64,
    /// The batched run's gather window (`batch_gather_ms`), in milliseconds.
    #[arg(long, default_value_t = 250)]
    pub gather_ms: u64,
    /// Folder for the dataset, the experiments and both runs' stores (cleared first).
    #[arg(long, default_value = "results/bench-batch")]
    pub out: PathBuf,
}

/// `baton bench agent-study`.
#[derive(Debug, Args)]
pub struct AgentStudyBenchArgs {
    /// At most this many tasks of the sample (default all 12).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Episodes in flight at once.
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// Folder for the experiment and the run's store (cleared first).
    #[arg(long, default_value = "results/bench-agent-study")]
    pub out: PathBuf,
    /// Files in the generated large repository the per-step cost is measured on (0: no
    /// large-repository measurement).
    #[arg(long, default_value_t = 10_000)]
    pub repo_files: usize,
    /// Its size in MB.
    #[arg(long, default_value_t = 80)]
    pub repo_mb: usize,
    /// Steps (a command and a snapshot) per backend on it.
    #[arg(long, default_value_t = 20)]
    pub repo_steps: usize,
    /// An image to measure the Docker backend on as well (needs `bash`, GNU `find` and
    /// `tar`); without it only bubblewrap is measured.
    #[arg(long)]
    pub docker_image: Option<String>,
    /// The docker client (a compatible one such as podman works).
    #[arg(long, env = "BATON_DOCKER")]
    pub docker: Option<PathBuf>,
}

/// `baton bench harness`.
#[derive(Debug, Args)]
pub struct HarnessBenchArgs {
    /// Math tasks in the generated dataset (copies of the sample set's, numbered).
    #[arg(long, default_value_t = 400)]
    pub tasks: usize,
    /// sim-server's added latency per request, in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub latency_ms: u64,
    /// Calls in flight at once per model.
    #[arg(long, default_value_t = 64)]
    pub model_concurrency: usize,
    /// Task groups in flight at once (the experiment's `concurrency`).
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
    /// Folder for the dataset, the experiment and the run's store (cleared first).
    #[arg(long, default_value = "results/bench-harness")]
    pub out: PathBuf,
}

/// `baton handoff`.
#[derive(Debug, Subcommand)]
pub enum HandoffCommand {
    /// Score handoff documents and, on request, verify them against their git repository.
    /// Exit 0 when every document passes, 1 when one fails, 2 on usage or read errors.
    Lint(HandoffLintArgs),
    /// Handover's trap bench (deterministic layer): lint score and negation-aware trap
    /// coverage per scenario and document.
    Bench(HandoffBenchArgs),
    /// Scaffold a handoff document from the repository's git state: name from the branch,
    /// true_at_sha = HEAD, status from the working tree, recent commits, the repository's
    /// own test command as verify_cmd when it passes, checked claims, and marked places for
    /// what only a person knows.
    Write(HandoffWriteArgs),
    /// Handover's trap bench run by agents: scenarios × conditions × models × trials in the
    /// sandbox, each trial judged by the traps' own probes on the tree the agent left.
    #[command(subcommand)]
    Traps(HandoffTrapsCommand),
}

/// `baton handoff traps`.
#[derive(Debug, Subcommand)]
pub enum HandoffTrapsCommand {
    /// Run a trap-bench experiment (e.g. examples/trap-bench-sim.toml) and write its reports;
    /// the same command again keeps every finished trial and runs the rest.
    Run(HandoffTrapsRunArgs),
    /// Write report.md, report.json and report.html from DIR/results.json and print the
    /// Markdown.
    Report(HandoffTrapsReportArgs),
}

/// `baton handoff traps run`.
#[derive(Debug, Args)]
pub struct HandoffTrapsRunArgs {
    /// The experiment file.
    #[arg(value_name = "EXPERIMENT")]
    pub experiment: PathBuf,
    /// The output folder (results.json and the reports).
    #[arg(long, default_value = "results/trap-bench")]
    pub out: PathBuf,
}

/// `baton handoff traps report`.
#[derive(Debug, Args)]
pub struct HandoffTrapsReportArgs {
    /// The folder a run wrote (holding results.json).
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

/// Scoring rubrics for handoff documents.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HandoffRubric {
    /// baton's rubric: claims carry checks, vacuous checks, first-action agreement, optional
    /// keys and calendar dates count.
    Baton,
    /// Handover 0.4.1's rubric, reproduced exactly, to compare with existing scores.
    #[value(name = "handover-0.4")]
    Handover04,
}

/// `baton handoff lint`.
#[derive(Debug, Args)]
pub struct HandoffLintArgs {
    /// The documents (handoff documents, or AGENTS.md / CLAUDE.md agent instruction files).
    #[arg(required_unless_present = "changed", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Lint only the handoff documents (and AGENTS.md / CLAUDE.md files) that the commits
    /// since BASE changed (`git diff BASE...HEAD`; default HEAD~1), for CI.
    #[arg(long, value_name = "BASE", num_args = 0..=1, default_missing_value = "HEAD~1")]
    pub changed: Option<String>,
    /// A config file turning rules off (default: `.baton-handoff.toml` at the top of the
    /// repository, when present): `disable = ["rule", …]`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Verify against the document's git repository (read-only): anchor, ancestry, drift,
    /// uncommitted changes, future dates.
    #[arg(long)]
    pub repo: bool,
    /// Also run verify_cmd (implies --repo).
    #[arg(long)]
    pub verify: bool,
    /// Also run each claim's check at the anchor and now, each in a sandboxed copy of the
    /// tree (implies --verify).
    #[arg(long)]
    pub claims: bool,
    /// The scoring rubric.
    #[arg(long, value_enum, default_value = "baton")]
    pub rubric: HandoffRubric,
    /// Fail a document scoring below this (0-100).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub min: Option<u32>,
    /// Fail on warnings too (findings and verification checks).
    #[arg(long)]
    pub strict: bool,
    /// Print the versioned JSON report.
    #[arg(long, conflicts_with = "sarif")]
    pub json: bool,
    /// Print SARIF 2.1.0 for code-scanning annotations.
    #[arg(long)]
    pub sarif: bool,
    /// Seconds each claim's check may run, per run.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub claim_timeout: u64,
    /// Seconds verify_cmd may run.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub verify_timeout: u64,
    /// Seconds the whole verification of one document may take (every check together).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub total_timeout: u64,
    /// Run the document's commands on the host instead of the bubblewrap sandbox: in a
    /// staged copy of the tree, without secret-like files, with the allow-list environment
    /// and limits, but no namespaces: a command can read what the user can and reach the
    /// network. When baton runs as root, each command drops to the unprivileged user 65534
    /// first. Destructive commands are still skipped unless --allow-destructive.
    #[arg(long)]
    pub no_sandbox: bool,
    /// Let the document's commands reach the network.
    #[arg(long)]
    pub allow_network: bool,
    /// Run checks flagged destructive too, still in the sandbox: `rm -r`/`-f` in any
    /// spelling or through `command`, `xargs`, `find -exec`, `find -delete`, `dd`, `shred`,
    /// `sudo`, `eval`, text piped into a shell, interpreters given code that deletes files,
    /// writes outside the tree, fork bombs.
    #[arg(long)]
    pub allow_destructive: bool,
    /// Let a document pass when some of its checks did not run (skipped as destructive,
    /// past the cap of 25 claims, out of time); each is listed. By default an unrun check
    /// fails the document.
    #[arg(long)]
    pub allow_unverified: bool,
    /// Put this secret-like file (`.env*`, `*.pem`, `id_*`, `.npmrc`, `.netrc`, credential
    /// files), relative to the top of the repository, into the sandbox; they are left out
    /// by default. Repeatable.
    #[arg(long, value_name = "PATH")]
    pub include: Vec<String>,
}

/// `baton handoff write`.
#[derive(Debug, Args)]
pub struct HandoffWriteArgs {
    /// Where to write the document (default: print it).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Probe the test commands on the host instead of the bubblewrap sandbox (see
    /// `handoff lint --no-sandbox`).
    #[arg(long)]
    pub no_sandbox: bool,
}

/// `baton handoff bench`.
#[derive(Debug, Args)]
pub struct HandoffBenchArgs {
    /// A scenario folder (with traps.json) or a folder of them.
    #[arg(default_value = "bench/scenarios", value_name = "SCENARIOS_DIR")]
    pub scenarios: PathBuf,
    /// The rubric of the lint score.
    #[arg(long, value_enum, default_value = "baton")]
    pub rubric: HandoffRubric,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `baton env`.
#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// Say which sandbox works on this machine (isolation, python3, git, limits, overhead);
    /// fails with the fix when bwrap, python3 or git is missing.
    Check(EnvArgs),
    /// Run one command in the sandbox on a copy of TREE; prints its output, then its return
    /// code and duration on stderr.
    Exec {
        /// The folder to copy into the sandbox (it is never modified).
        tree: PathBuf,
        /// The command: one argument is a shell string run as `bash -c` (pipes, `;`, `&&`);
        /// several are the program and its arguments, passed as given with no shell
        /// parsing (`-- python3 -c "print(1)"`).
        #[arg(last = true, required = true)]
        command: Vec<String>,
        /// Seconds before the command's process tree is killed.
        #[arg(long, default_value_t = 60.0)]
        timeout: f64,
        /// Environment settings.
        #[command(flatten)]
        env: EnvArgs,
    },
    /// Run every task's tests on its unchanged repository (they must fail) and with its
    /// reference solution (they must pass).
    CheckTasks {
        /// `agent-sample` (bundled), a folder of baton tasks or Exercism exercises, or a
        /// SWE-bench .jsonl.
        dataset: String,
        /// Scorings at a time (default: the number of CPUs).
        #[arg(long)]
        jobs: Option<usize>,
        /// For a SWE-bench file: the Python with the pinned `swebench` harness, to check
        /// the gold patches (needs Docker).
        #[arg(long)]
        swebench_python: Option<PathBuf>,
        /// Environment settings.
        #[command(flatten)]
        env: EnvArgs,
    },
    /// Remove every Docker container the run in RESULTS left (a run killed with SIGKILL
    /// cannot remove its own; a resume removes them too). Not while that run is going.
    Clean {
        /// The run's results folder (`--out` of `baton run`).
        results: PathBuf,
        /// Environment settings (the docker client).
        #[command(flatten)]
        env: EnvArgs,
    },
}

/// Environment backends on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum EnvBackend {
    /// bubblewrap (default): namespaces, read-only system, no network.
    Bwrap,
    /// One Docker container per task.
    Docker,
    /// No isolation (only when you name it).
    Local,
}

/// Settings shared by the `baton env` commands.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// The sandbox backend.
    #[arg(long, value_enum, default_value = "bwrap")]
    pub backend: EnvBackend,
    /// The bwrap executable.
    #[arg(long, env = "BATON_BWRAP")]
    pub bwrap: Option<PathBuf>,
    /// The docker client (a compatible client or a shim works).
    #[arg(long, env = "BATON_DOCKER")]
    pub docker: Option<PathBuf>,
    /// The image for tasks that bring a tree but no image (docker backend).
    #[arg(long)]
    pub docker_image: Option<String>,
}

/// `baton sandbox`.
#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Create a venv, install the pinned componentize-py from PyPI, build the runner
    /// component, smoke-test it and cache its compiled code under sandbox/.
    Install {
        /// Rebuild even when the runner is up to date.
        #[arg(long)]
        force: bool,
        /// The Python that creates the venv (default: python3 on PATH).
        #[arg(long)]
        python: Option<PathBuf>,
    },
    /// Report versions and run the smoke tests.
    Check,
}

/// `baton sim-server`.
#[derive(Debug, Args)]
pub struct SimServerArgs {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 8089)]
    pub port: u16,
    /// Added latency per request, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Chance that a request gets a fault (0..=1).
    #[arg(long, default_value_t = 0.0)]
    pub fault_rate: f64,
    /// Faults to draw from, comma-separated (e.g. `rate-limit,server-error,overloaded,reset,stall,malformed,empty,quota`);
    /// default: every retryable kind.
    #[arg(long)]
    pub faults: Option<String>,
    /// Seed of the fault draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The tasks the simulated models know (`sample` for the bundled set).
    #[arg(long, default_value = "sample")]
    pub dataset: PathBuf,
    /// The agent tasks the simulated coding agents (`agent-lc`, `agent-hc`) know
    /// (`agent-sample` for the bundled set, or a path).
    #[arg(long, default_value = "agent-sample")]
    pub agent_dataset: String,
    /// How long after its creation a batch (OpenAI Batch API, Anthropic Message
    /// Batches) ends, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub batch_turnaround_ms: u64,
    /// Share of batch items (0..=1) that fail with a 500, drawn per item id.
    #[arg(long, default_value_t = 0.0)]
    pub batch_fail_rate: f64,
    /// Share of batch items (0..=1) left unprocessed when their batch ends, which then
    /// ends as expired.
    #[arg(long, default_value_t = 0.0)]
    pub batch_expire_rate: f64,
    /// How long a batch create request waits for its answer after the batch was made,
    /// in milliseconds (a slow gateway).
    #[arg(long, default_value_t = 0)]
    pub batch_create_latency_ms: u64,
    /// Faults of a hostile batch provider, comma-separated: `malformed-line`,
    /// `failed-downloads=N`, `stalled-download-ms=N`, `stuck`, `not-found`, `redirect`,
    /// `padding-mb=N` (results files padded with lines of no item), `echo-key` (errored
    /// items echo the key).
    #[arg(long)]
    pub batch_faults: Option<String>,
}

/// `baton demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Output folder.
    #[arg(long, default_value = "results/demo")]
    pub out: PathBuf,
}

/// `baton run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The experiment file (TOML).
    pub experiment: PathBuf,
    /// Output folder; default results/<experiment name>.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Require an existing store and finish what is missing (re-running the same command
    /// does the same).
    #[arg(long)]
    pub resume: bool,
    /// At most this many tasks per family: a sample seeded by the experiment's seed,
    /// stratified by source (code) and difficulty (database).
    #[arg(long, value_parser = at_least_one)]
    pub limit: Option<usize>,
    /// Task groups in flight at once (1 to 4096).
    #[arg(long, value_parser = concurrency)]
    pub concurrency: Option<usize>,
    /// Re-sample handoff prefixes instead of forking them from the single-sender episode.
    #[arg(long)]
    pub independent: bool,
    /// Run the valid tasks of a partly invalid dataset (and the database tasks whose
    /// databases are installed); the others are stored with why and listed in every
    /// report.
    #[arg(long)]
    pub skip_invalid: bool,
    /// Print cells, episodes, calls and an upper-bound cost, then stop without calling
    /// any model.
    #[arg(long)]
    pub dry_run: bool,
    /// Stop scheduling calls before the experiment's total spend (every run of it) would
    /// pass this many US dollars; unfinished episodes stay incomplete.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Run again the stored episodes whose identity changed (a model's request
    /// settings, a task's data, the templates, interface texts or evaluator they use):
    /// the stored ones are kept, out of the report. Without it a run that would do so
    /// lists what changed and stops with exit 2 before any call. A grown experiment (more
    /// tasks, cells or replicates) and a changed price card (stored usage is re-priced)
    /// need no flag. An agent experiment: run again the stored episodes a changed key
    /// concerns (a model's setting: that model's anchors and the handoffs it sends or
    /// receives), and resume although its inputs changed, the change recorded in the
    /// store.
    #[arg(long)]
    pub allow_changed: bool,
    /// Send every model's calls through its provider's batch API (OpenAI's Batch API,
    /// Anthropic's Message Batches) at the card's batch rates, as `batch = true` on each
    /// model: one batch per turn round.
    #[arg(long)]
    pub batch: bool,
    /// Do not show a progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Run part I of N (1-based): the tasks whose id hashes to it, each with every cell
    /// and replicate, in its own folder (default results/<name>-part-<I>-of-<N>);
    /// `baton merge` joins the parts. --max-cost is then the experiment's total (this
    /// part gets its share), and rate limits are divided by N.
    #[arg(long, value_name = "I/N")]
    pub part: Option<baton_runner::Part>,
    /// With --part: the experiment's requests_per_minute and tokens_per_minute are this
    /// part's own, not divided by N (set them per part by hand, so they add up to what
    /// the provider allows).
    #[arg(long, requires = "part")]
    pub part_rate_limits: bool,
    /// With --part, an agent handoff study's phase: `anchors` (every part, first), then
    /// `baton thresholds`, then `handoffs` with --thresholds.
    #[arg(long, value_enum, requires = "part")]
    pub phase: Option<PartPhase>,
    /// With --phase handoffs: the file `baton thresholds` wrote from every part's
    /// anchors.
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,
}

/// A part's phase of the agent handoff study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PartPhase {
    /// The anchor episodes (every model alone).
    Anchors,
    /// The handoff cells, with the thresholds of every part's anchors.
    Handoffs,
}

/// `baton merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The parts' folders (each part's --out).
    #[arg(required = true)]
    pub parts: Vec<PathBuf>,
    /// The merged folder (its report is the unsplit run's).
    #[arg(long)]
    pub out: PathBuf,
}

/// `baton thresholds`.
#[derive(Debug, Args)]
pub struct ThresholdsArgs {
    /// The parts' folders after `--phase anchors`.
    #[arg(required = true)]
    pub parts: Vec<PathBuf>,
    /// The thresholds file to write (JSON).
    #[arg(long)]
    pub out: PathBuf,
}

/// Report formats.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Format {
    /// Markdown tables.
    Md,
    /// One CSV row per cell.
    Csv,
    /// JSON with a `cells` array.
    Json,
    /// LaTeX tables.
    Latex,
    /// One self-contained HTML page with the tables and SVG plots.
    Html,
}

/// The bootstrap draws of every report baton writes unless told otherwise (`baton report`
/// and the demo's), so the same results always print the same intervals.
pub const BOOTSTRAP_DRAWS: usize = 10_000;

/// `baton report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The experiment's SQLite file (or its output folder).
    pub results: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "md")]
    pub format: Format,
    /// Write to this file instead of stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Bootstrap replicates for 95% intervals (0 turns them off), in both studies.
    #[arg(long, default_value_t = BOOTSTRAP_DRAWS)]
    pub bootstrap: usize,
    /// Bootstrap seed (default 0; an agent study's own `seed`).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `baton view`.
#[derive(Debug, Args)]
pub struct ViewArgs {
    /// The experiment's SQLite file (or its output folder).
    pub results: PathBuf,
    /// The folder to write the viewer into (default `view/` beside the store).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `baton score`.
#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// Cases, one JSON object per line: `family`, `stage` (`evaluator` or `response`),
    /// `sample`, `input`, optional `id` and `expected`.
    #[arg(long)]
    pub input: PathBuf,
    /// Write the cases with an added `actual` here (default stdout).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// The Spider test-suite folder (`<db_id>/*.sqlite`).
    #[arg(long)]
    pub spider_dir: Option<PathBuf>,
    /// How `response` cases are read: `baton` the way models write answers, `lic` as LiC's
    /// own code does (its verdicts on the conformance vectors).
    #[arg(long, value_enum, default_value = "baton")]
    pub rules: ScoreRules,
}

/// Extraction rules on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ScoreRules {
    /// baton's rules: answers read the way models write them.
    Baton,
    /// LiC's own deterministic extraction where it has one (code, actions).
    Lic,
}

impl From<ScoreRules> for baton_eval::Rules {
    fn from(rules: ScoreRules) -> Self {
        match rules {
            ScoreRules::Baton => baton_eval::Rules::Baton,
            ScoreRules::Lic => baton_eval::Rules::Lic,
        }
    }
}

/// `baton show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The dataset file (`sample` for the bundled set).
    pub dataset: PathBuf,
    /// The task's id.
    pub task_id: String,
    /// `lic` for LiC's own system prompts (with --lic-dir), or a folder of edited
    /// templates; default baton's own.
    #[arg(long, value_name = "lic|DIR")]
    pub templates: Option<PathBuf>,
    /// Your lost_in_conversation checkout (the folder with prompts/), for --templates lic.
    #[arg(long, value_name = "DIR")]
    pub lic_dir: Option<PathBuf>,
    /// Print one JSON object: `task_id`, `family`, `system`, `turns`, and `full` and
    /// `concat` (LiC's single-turn prompts; `null` for now).
    #[arg(long)]
    pub json: bool,
}

/// `baton data`.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Validate a LiC JSON/JSONL file; errors name the file, item, task_id and key.
    Check {
        /// The dataset file (`sample` for the bundled set).
        file: PathBuf,
    },
    /// Counts per family, shards per task, and whether Spider databases exist.
    Stats {
        /// The dataset file (`sample` for the bundled set).
        file: PathBuf,
        /// The Spider test-suite folder.
        #[arg(long, default_value = "datasets/spider/databases")]
        spider_dir: PathBuf,
    },
    /// Load a SWE-bench (Verified) export (JSON Lines, a JSON array, or the Hub's Parquet)
    /// as a run would, and list its instances per repository and difficulty, each
    /// instance's image, and the keys the pinned harness needs to score it.
    Swebench {
        /// The export (`.jsonl`, `.json`, or `.parquet`).
        file: PathBuf,
        /// Print the description as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// A count of at least one.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// A concurrency: 1 to [`baton_runner::spec::MAX_CONCURRENCY`].
fn concurrency(s: &str) -> Result<usize, String> {
    let n = at_least_one(s)?;
    if n > baton_runner::spec::MAX_CONCURRENCY {
        return Err(format!(
            "must be at most {}",
            baton_runner::spec::MAX_CONCURRENCY
        ));
    }
    Ok(n)
}
