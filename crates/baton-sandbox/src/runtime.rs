//! The wasmtime side: one engine and one pre-linked component, a fresh store per run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tempfile::TempDir;
use wasmtime::component::{
    Component, ComponentExportIndex, Instance, InstancePre, Linker, ResourceTable,
};
use wasmtime::{Config, Engine, ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap};
use wasmtime_wasi::p2::bindings::Command;
use wasmtime_wasi::p2::pipe::{MemoryInputPipe, MemoryOutputPipe};
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::install::{RuntimeInfo, ensure_runtime};
use crate::scratch::{self, ScratchLimits, ScratchUsage, SharedUsage};
use crate::{SandboxError, SandboxHome, cache};

/// How often the engine's epoch advances; wasm yields to the host at every tick.
const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Wasm stack for deep C-level recursion (`@lru_cache` DFS goes through C frames).
const MAX_WASM_STACK: usize = 8 << 20;
/// Each async call runs on a fiber stack of this size; it must exceed `MAX_WASM_STACK`.
const ASYNC_STACK: usize = 10 << 20;
/// Wasm tables hold host-side entries; CPython never needs many.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;
/// Where the private scratch directory appears in the guest.
pub const SCRATCH_GUEST_PATH: &str = "/tmp";

/// Resource limits for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock limit for the whole run, host calls (sleeps, polls) included.
    pub time: Duration,
    /// Cap on guest linear memory, in bytes (default 512 MiB).
    pub memory: usize,
    /// Cap on bytes written to stdout (default 1 MiB); writing past it ends the run.
    pub stdout: usize,
    /// Cap on bytes written to stderr (default 1 MiB); writing past it ends the run.
    pub stderr: usize,
    /// Quotas of the scratch directory at `/tmp` (bytes, entries, open descriptors).
    pub scratch: ScratchLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            time: Duration::from_secs(10),
            memory: 512 << 20,
            stdout: 1 << 20,
            stderr: 1 << 20,
            scratch: ScratchLimits::default(),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// The program finished; `success` is false after an uncaught exception or a
    /// non-zero `sys.exit` (WASI 0.2 reports only ok or err).
    Exited {
        /// Whether the exit status was ok.
        success: bool,
    },
    /// The program called `os._exit(code)`.
    ExitCode(i32),
    /// The wall-clock limit cut the run.
    TimedOut,
    /// The program wrote more than the stdout or stderr cap.
    OutputLimit,
    /// The guest trapped (stack overflow, an abort after failed allocation, ...).
    Trapped(String),
}

impl RunStatus {
    /// True only for a clean, successful exit.
    pub fn success(&self) -> bool {
        matches!(self, RunStatus::Exited { success: true })
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// How it ended.
    pub status: RunStatus,
    /// Everything written to stdout (at most the cap).
    pub stdout: Vec<u8>,
    /// Everything written to stderr (at most the cap).
    pub stderr: Vec<u8>,
    /// Wall-clock time from instantiation to the end.
    pub elapsed: Duration,
    /// Whether the memory cap refused a growth request during the run.
    pub memory_limit_hit: bool,
    /// Whether a scratch quota (bytes, entries, open descriptors) refused something.
    pub scratch_limit_hit: bool,
}

/// A memory limiter that remembers whether it said no.
struct Limiter {
    inner: StoreLimits,
    denied: bool,
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.inner.memory_growing(current, desired, maximum)?;
        self.denied |= !allowed;
        Ok(allowed)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.inner.table_growing(current, desired, maximum)
    }
}

/// Per-store host state.
pub(crate) struct Host {
    ctx: WasiCtx,
    table: ResourceTable,
    limiter: Limiter,
    /// What the scratch directory holds, against its quotas.
    pub(crate) scratch: SharedUsage,
}

impl Host {
    /// The run's resource table (descriptors, streams, pollables).
    pub(crate) fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.ctx,
            table: &mut self.table,
        }
    }
}

/// Export indices of the `baton:sandbox/grader` interface.
#[derive(Clone)]
struct GraderExports {
    extract: ComponentExportIndex,
    extract_kept: ComponentExportIndex,
    load: ComponentExportIndex,
    call: ComponentExportIndex,
}

/// Stops the epoch thread when the last [`Sandbox`] clone goes away.
struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// CPython 3.14 for WASI under wasmtime: a compiled runner component, linked once, with a
/// fresh instance (fresh memory, fresh scratch dir, empty environment, no sockets) per run.
///
/// `Sandbox` is cheap to clone and `Send + Sync`; runs on different threads proceed in
/// parallel. Calls block the calling thread (each run drives its own small tokio runtime),
/// so call them from a plain thread, rayon, or `tokio::task::spawn_blocking`, not from
/// inside an async task.
#[derive(Clone)]
pub struct Sandbox {
    inner: Arc<Inner>,
}

struct Inner {
    engine: Engine,
    pre: InstancePre<Host>,
    grader: GraderExports,
    info: RuntimeInfo,
    from_cache: bool,
    _ticker: Ticker,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox")
            .field("runner", &self.inner.info.wasm_path)
            .field("from_cache", &self.inner.from_cache)
            .finish_non_exhaustive()
    }
}

pub(crate) fn engine_config() -> Config {
    let mut config = Config::new();
    config.epoch_interruption(true);
    config.max_wasm_stack(MAX_WASM_STACK);
    config.async_stack_size(ASYNC_STACK);
    config
}

impl Sandbox {
    /// Open the runtime in the sandbox folder found by [`SandboxHome::locate`], building it
    /// first if it is missing or stale (see [`crate::install`]).
    pub fn open() -> Result<Self, SandboxError> {
        Self::open_in(&SandboxHome::locate())
    }

    /// Open the runtime in an explicit sandbox folder, building it first if needed.
    pub fn open_in(home: &SandboxHome) -> Result<Self, SandboxError> {
        let info = ensure_runtime(home)?;
        Self::load(home, info)
    }

    pub(crate) fn load(home: &SandboxHome, info: RuntimeInfo) -> Result<Self, SandboxError> {
        let engine = Engine::new(&engine_config())
            .map_err(|e| SandboxError::wasmtime("creating the engine", e))?;
        let (component, from_cache) =
            cache::load_or_compile(&engine, &home.cache_dir(), &info.wasm_path)?;
        let mut linker: Linker<Host> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| SandboxError::wasmtime("linking WASI", e))?;
        scratch::add_to_linker(&mut linker)
            .map_err(|e| SandboxError::wasmtime("linking the scratch quotas", e))?;
        let pre = linker
            .instantiate_pre(&component)
            .map_err(|e| SandboxError::wasmtime("pre-linking the runner", e))?;
        let grader = grader_exports(&component).ok_or_else(|| SandboxError::Wasmtime {
            context: "looking up the grader exports".into(),
            detail: format!(
                "{} has no baton:sandbox/grader interface with extract/load/call",
                info.wasm_path.display()
            ),
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), stop.clone())?;
        Ok(Sandbox {
            inner: Arc::new(Inner {
                engine,
                pre,
                grader,
                info,
                from_cache,
                _ticker: Ticker { stop },
            }),
        })
    }

    /// What the runtime was built from (paths, versions, sha256).
    pub fn info(&self) -> &RuntimeInfo {
        &self.inner.info
    }

    /// Whether the compiled code came from `sandbox/cache/` rather than a fresh compile.
    pub fn loaded_from_cache(&self) -> bool {
        self.inner.from_cache
    }

    /// Run a Python program (`python -c PROGRAM`) with `stdin` as its standard input.
    ///
    /// The guest sees an empty environment, no sockets, and a fresh empty scratch
    /// directory at `/tmp` (deleted afterwards) as its only filesystem.
    pub fn run(
        &self,
        program: &str,
        stdin: &[u8],
        limits: &Limits,
    ) -> Result<RunOutput, SandboxError> {
        let mut run = self.start(limits, &["python", "-c", program], stdin)?;
        let runtime = small_runtime()?;
        let limit = limits.time;
        let (status, elapsed) = runtime.block_on(async {
            let started = Instant::now();
            let outcome = tokio::time::timeout(limit, async {
                let instance = run.instantiate().await?;
                let command = Command::new(&mut run.store, &instance)?;
                command.wasi_cli_run().call_run(&mut run.store).await
            })
            .await;
            let status = match outcome {
                Err(_) => RunStatus::TimedOut,
                Ok(_) if run.output_capped() => RunStatus::OutputLimit,
                Ok(Ok(Ok(()))) => RunStatus::Exited { success: true },
                Ok(Ok(Err(()))) => RunStatus::Exited { success: false },
                Ok(Err(e)) => run.classify(&e),
            };
            (status, started.elapsed())
        });
        Ok(RunOutput {
            status,
            stdout: run.stdout.contents().to_vec(),
            stderr: run.stderr.contents().to_vec(),
            elapsed,
            memory_limit_hit: run.store.data().limiter.denied,
            scratch_limit_hit: run.scratch_limit_hit(),
        })
    }

    /// A fresh store (not yet instantiated) for a run with these limits and arguments.
    pub(crate) fn start(
        &self,
        limits: &Limits,
        args: &[&str],
        stdin: &[u8],
    ) -> Result<Run, SandboxError> {
        let scratch = tempfile::Builder::new()
            .prefix("baton-sandbox-")
            .tempdir()
            .map_err(|e| SandboxError::io(std::env::temp_dir(), e))?;
        let stdout = MemoryOutputPipe::new(limits.stdout);
        let stderr = MemoryOutputPipe::new(limits.stderr);
        let mut wasi = WasiCtxBuilder::new();
        wasi.args(args)
            .stdin(MemoryInputPipe::new(stdin.to_vec()))
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .socket_addr_check(|_, _| Box::pin(async { false }));
        wasi.preopened_dir(scratch.path(), SCRATCH_GUEST_PATH, FsPerms::ReadWrite)
            .map_err(|e| SandboxError::wasmtime("opening the scratch directory", e))?;
        let limiter = Limiter {
            inner: StoreLimitsBuilder::new()
                .memory_size(limits.memory)
                .table_elements(MAX_TABLE_ELEMENTS)
                .build(),
            denied: false,
        };
        let host = Host {
            ctx: wasi.build(),
            table: ResourceTable::new(),
            limiter,
            scratch: ScratchUsage::new(scratch.path().to_path_buf(), limits.scratch),
        };
        let mut store = Store::new(&self.inner.engine, host);
        store.limiter(|host| &mut host.limiter);
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        Ok(Run {
            store,
            pre: self.inner.pre.clone(),
            grader: self.inner.grader.clone(),
            instance: None,
            stdout,
            stderr,
            stdout_cap: limits.stdout,
            stderr_cap: limits.stderr,
            _scratch: scratch,
        })
    }
}

/// One store and (once instantiated) one instance.
pub(crate) struct Run {
    pub(crate) store: Store<Host>,
    pre: InstancePre<Host>,
    grader: GraderExports,
    instance: Option<Instance>,
    pub(crate) stdout: MemoryOutputPipe,
    pub(crate) stderr: MemoryOutputPipe,
    stdout_cap: usize,
    stderr_cap: usize,
    _scratch: TempDir,
}

/// How a call into the guest ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallOutcome<T> {
    /// It returned.
    Returned(T),
    /// The deadline passed first.
    TimedOut,
    /// The guest stopped: exit, trap, output cap.
    Stopped(RunStatus),
}

impl Run {
    pub(crate) async fn instantiate(&mut self) -> wasmtime::Result<Instance> {
        let instance = self.pre.instantiate_async(&mut self.store).await?;
        self.instance = Some(instance);
        Ok(instance)
    }

    /// Whether stdout or stderr reached its cap (the guest then sees a broken pipe).
    pub(crate) fn output_capped(&self) -> bool {
        self.stdout.contents().len() >= self.stdout_cap
            || self.stderr.contents().len() >= self.stderr_cap
    }

    /// Whether the memory cap refused an allocation during this run.
    pub(crate) fn memory_limit_hit(&self) -> bool {
        self.store.data().limiter.denied
    }

    /// Whether a scratch quota refused a write, a creation or an open during this run.
    pub(crate) fn scratch_limit_hit(&self) -> bool {
        ScratchUsage::hit(&self.store.data().scratch)
    }

    pub(crate) fn classify(&self, error: &wasmtime::Error) -> RunStatus {
        if let Some(exit) = error.downcast_ref::<I32Exit>() {
            return RunStatus::ExitCode(exit.0);
        }
        let text = format!("{error:?}");
        if text.contains("write beyond capacity") || text.contains("MemoryOutputPipe") {
            return RunStatus::OutputLimit;
        }
        if let Some(trap) = error.downcast_ref::<Trap>() {
            return RunStatus::Trapped(trap.to_string());
        }
        RunStatus::Trapped(first_line(&text))
    }

    /// Instantiate (if not done yet) with a deadline.
    pub(crate) async fn ensure_instance(&mut self, deadline: Instant) -> CallOutcome<Instance> {
        if let Some(instance) = self.instance {
            return CallOutcome::Returned(instance);
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(remaining, self.instantiate()).await {
            Err(_) => CallOutcome::TimedOut,
            Ok(Ok(instance)) => CallOutcome::Returned(instance),
            Ok(Err(e)) => CallOutcome::Stopped(self.classify(&e)),
        }
    }

    /// `grader.extract(response)`.
    pub(crate) async fn extract(
        &mut self,
        response: &str,
        deadline: Instant,
    ) -> CallOutcome<Result<String, String>> {
        let index = self.grader.extract;
        self.call_export::<(&str,), Result<String, String>>(index, (response,), deadline)
            .await
    }

    /// `grader.extract-kept(response, fn_name)`: (rule, code).
    pub(crate) async fn extract_kept(
        &mut self,
        response: &str,
        fn_name: Option<&str>,
        deadline: Instant,
    ) -> CallOutcome<Result<(String, String), String>> {
        let index = self.grader.extract_kept;
        self.call_export::<(&str, Option<&str>), Result<(String, String), String>>(
            index,
            (response, fn_name),
            deadline,
        )
        .await
    }

    /// Instantiate if needed, then call one grader export with a deadline.
    async fn call_export<Params, Output>(
        &mut self,
        index: ComponentExportIndex,
        params: Params,
        deadline: Instant,
    ) -> CallOutcome<Output>
    where
        Params: wasmtime::component::ComponentNamedList + wasmtime::component::Lower + Send + Sync,
        Output:
            wasmtime::component::ComponentType + wasmtime::component::Lift + Send + Sync + 'static,
    {
        let instance = match self.ensure_instance(deadline).await {
            CallOutcome::Returned(instance) => instance,
            CallOutcome::TimedOut => return CallOutcome::TimedOut,
            CallOutcome::Stopped(s) => return CallOutcome::Stopped(s),
        };
        let func = match instance.get_typed_func::<Params, (Output,)>(&mut self.store, &index) {
            Ok(func) => func,
            Err(e) => {
                return CallOutcome::Stopped(RunStatus::Trapped(first_line(&format!("{e:?}"))));
            }
        };
        let remaining = deadline.saturating_duration_since(Instant::now());
        let result =
            tokio::time::timeout(remaining, func.call_async(&mut self.store, params)).await;
        self.finish(result.map(|r| r.map(|(v,)| v)))
    }

    /// `grader.load(code, fn_name, prompt)`.
    pub(crate) async fn load(
        &mut self,
        code: &str,
        fn_name: &str,
        prompt: Option<&str>,
        deadline: Instant,
    ) -> CallOutcome<Result<(), String>> {
        let index = self.grader.load;
        self.call_export::<(&str, &str, Option<&str>), Result<(), String>>(
            index,
            (code, fn_name, prompt),
            deadline,
        )
        .await
    }

    /// `grader.call(input)`.
    pub(crate) async fn call(
        &mut self,
        input: &str,
        deadline: Instant,
    ) -> CallOutcome<Result<String, String>> {
        let Some(instance) = self.instance else {
            return CallOutcome::Stopped(RunStatus::Trapped("call before load".into()));
        };
        let index = self.grader.call;
        let func = match instance
            .get_typed_func::<(&str,), (Result<String, String>,)>(&mut self.store, &index)
        {
            Ok(func) => func,
            Err(e) => {
                return CallOutcome::Stopped(RunStatus::Trapped(first_line(&format!("{e:?}"))));
            }
        };
        let remaining = deadline.saturating_duration_since(Instant::now());
        let result =
            tokio::time::timeout(remaining, func.call_async(&mut self.store, (input,))).await;
        self.finish(result.map(|r| r.map(|(v,)| v)))
    }

    fn finish<T>(
        &mut self,
        result: Result<wasmtime::Result<T>, tokio::time::error::Elapsed>,
    ) -> CallOutcome<T> {
        match result {
            Err(_) => {
                // The call future was dropped mid-flight; this instance must not be used again.
                self.instance = None;
                CallOutcome::TimedOut
            }
            Ok(Ok(value)) => CallOutcome::Returned(value),
            Ok(Err(e)) => {
                self.instance = None;
                CallOutcome::Stopped(self.classify(&e))
            }
        }
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    line.chars().take(300).collect()
}

fn grader_exports(component: &Component) -> Option<GraderExports> {
    let interface = component.get_export_index(None, "baton:sandbox/grader")?;
    Some(GraderExports {
        extract: component.get_export_index(Some(&interface), "extract")?,
        extract_kept: component.get_export_index(Some(&interface), "extract-kept")?,
        load: component.get_export_index(Some(&interface), "load")?,
        call: component.get_export_index(Some(&interface), "call")?,
    })
}

fn spawn_ticker(engine: Engine, stop: Arc<AtomicBool>) -> Result<(), SandboxError> {
    std::thread::Builder::new()
        .name("baton-sandbox-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
            }
        })
        .map(drop)
        .map_err(|e| SandboxError::io("epoch thread", e))
}

/// A current-thread tokio runtime with timers, for driving one run.
pub(crate) fn small_runtime() -> Result<tokio::runtime::Runtime, SandboxError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| SandboxError::io("tokio runtime", e))
}
