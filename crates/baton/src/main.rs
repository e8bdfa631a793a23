//! The `baton` command-line tool: argument parsing, settings, progress display, and the
//! glue between the library crates. The only crate that uses `anyhow`.
//!
//! Exit codes: 0 when everything succeeded, 1 when a run finished but some episodes are
//! incomplete or errored, 2 for usage and fatal
//! errors. A closed stdout (`baton report | head`) counts as success.

mod cli;
mod commands;
mod printer;
mod progress;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::printer::Printer;

/// Ask Linux for no transparent huge pages in this process (mimalloc's `allow_thp = 0`,
/// done here because its option is read before `main`). Where the system's setting is
/// `always`, each 2 MB region mimalloc touches, or touches again after giving it back, is
/// zeroed whole by the kernel: 23 % of `baton run`'s CPU in `bench harness --latency-ms 0
/// --tasks 40` (perf, `clear_page_erms` under `do_huge_pmd_anonymous_page`). Elsewhere
/// (`madvise`, `never`, not Linux) nothing changes.
fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::thread::disable_transparent_huge_pages(true) {
        tracing::debug!("transparent huge pages stay on: {e}");
    }
}

/// mimalloc instead of the system allocator: the harness, the store and the evaluators
/// allocate and free many small buffers per call and per vector.
#[global_allocator]
static ALLOCATOR: Mimalloc = Mimalloc;

/// mimalloc, asked for plain blocks when their natural alignment suffices.
///
/// `mimalloc::MiMalloc` sends every allocation through `mi_malloc_aligned`, whose checks cost
/// about 8 % of the actions evaluator's instructions. A block from `mi_malloc(size)` is
/// aligned to `min(16, size)` rounded down to a power of two (`MI_MAX_ALIGN_SIZE` is 16 on
/// every 64-bit target; mimalloc's own `mi_malloc_is_naturally_aligned` takes the plain path
/// on the same condition as [`plain`]), so a layout whose alignment is at most 16 and at most
/// its size gets a plain block; any other goes to `MiMalloc`'s aligned calls.
struct Mimalloc;

/// mimalloc's `MI_SMALL_SIZE_MAX` (128 words): the largest size `mi_malloc_small` takes.
const SMALL_SIZE_MAX: usize = 128 * std::mem::size_of::<usize>();

// `mi_malloc_small` is `mi_malloc`'s path for a small block without its size test and one
// call deep less (most of the evaluators' blocks are small: 1.6 % of the actions evaluator's
// instructions). The C library libmimalloc-sys builds always defines it; the crate declares
// it only with its `extended` feature, which needs a crate the workspace does not have.
#[allow(unsafe_code)]
unsafe extern "C" {
    fn mi_malloc_small(size: usize) -> *mut std::ffi::c_void;
}

/// Whether `mi_malloc(size)` is aligned enough for `align` (std's `System` uses the same test).
fn plain(align: usize, size: usize) -> bool {
    align <= 16 && align <= size
}

// SAFETY: every block comes from mimalloc and goes back to it: `mi_free` frees blocks of
// `mi_malloc`, `mi_zalloc`, `mi_realloc` and the aligned calls alike, and `mi_realloc` takes
// any of them. Null is returned on exhaustion, as `GlobalAlloc` requires.
#[allow(unsafe_code)]
unsafe impl std::alloc::GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            if layout.size() <= SMALL_SIZE_MAX {
                // SAFETY: a size of at most `MI_SMALL_SIZE_MAX`, as `mi_malloc_small` requires;
                // its block is one of `mi_malloc`'s, aligned to `layout` (see `plain`).
                unsafe { mi_malloc_small(layout.size()).cast() }
            } else {
                // SAFETY: any size may be asked for; the block is aligned to `layout` (see
                // `plain`).
                unsafe { libmimalloc_sys::mi_malloc(layout.size()).cast() }
            }
        } else {
            // SAFETY: the caller's contract for `layout` is passed on unchanged.
            unsafe { mimalloc::MiMalloc.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            // SAFETY: as in `alloc`; `mi_zalloc` zeroes the block.
            unsafe { libmimalloc_sys::mi_zalloc(layout.size()).cast() }
        } else {
            // SAFETY: the caller's contract for `layout` is passed on unchanged.
            unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc (`MiMalloc` calls `mi_free`).
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        if plain(layout.align(), new_size) {
            // SAFETY: `ptr` is a live mimalloc block; the block returned is either `ptr` (aligned
            // to `layout` when it was allocated) or a fresh `mi_malloc(new_size)` block, aligned
            // to `layout` by `plain`.
            unsafe { libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast() }
        } else {
            // SAFETY: the caller's contract for `ptr`, `layout` and `new_size` is passed on.
            unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
        }
    }
}

/// What a command reports back to `main`.
pub enum Outcome {
    /// Everything succeeded.
    Success,
    /// Finished, but something needs the user's attention (exit 1).
    Partial,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let level = match cli.verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("BATON_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level)),
        )
        .with_writer(std::io::stderr)
        // No colour codes in a log file (nohup, Slurm's output files, CI).
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    no_transparent_huge_pages();
    let printer = Printer::stdout();
    let result = match cli.command {
        Command::Demo(args) => commands::run::demo(args, &printer),
        Command::Run(args) => commands::run::run(args, &printer),
        Command::Report(args) => commands::report::report(args, &printer),
        Command::Merge(args) => commands::merge::merge(args, &printer),
        Command::Thresholds(args) => commands::thresholds::thresholds(args, &printer),
        Command::Score(args) => commands::score::score(args, &printer),
        Command::Data(cmd) => commands::data::data(cmd, &printer),
        Command::Show(args) => commands::show::show(args, &printer),
        Command::Sandbox(cmd) => commands::sandbox::sandbox(cmd, &printer),
        Command::SimServer(args) => commands::sim_server::sim_server(args, &printer),
        Command::Handoff(cmd) => commands::handoff::handoff(cmd, &printer),
        Command::Env(cmd) => commands::env::env(cmd, &printer),
        Command::Bench(cmd) => commands::bench::bench(cmd, &printer),
        Command::Swebench(cmd) => commands::swebench::swebench(cmd, &printer),
        Command::View(args) => commands::view::view(args, &printer),
    };
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Partial) => ExitCode::from(1),
        Err(e) if printer::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            printer.error(&format!("error: {e:#}"));
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    /// An over-aligned element, so that its vectors take mimalloc's aligned calls.
    #[derive(Clone, Copy)]
    #[repr(align(64))]
    struct Wide(#[allow(dead_code)] u8);

    /// Blocks of every small size, grown and shrunk, keep their type's alignment through the
    /// global allocator, plain (8 and 16) and aligned (64) alike, and keep their contents.
    #[test]
    fn allocations_keep_their_alignment() {
        fn check<T: Copy>(item: T, align: usize) {
            for n in 1..300 {
                let mut items = Vec::with_capacity(n);
                items.push(item);
                assert_eq!(items.as_ptr() as usize % align, 0, "{n} items");
                items.resize(n * 3, item);
                assert_eq!(items.as_ptr() as usize % align, 0, "grown from {n} items");
                items.truncate(n);
                items.shrink_to_fit();
                assert_eq!(items.as_ptr() as usize % align, 0, "shrunk to {n} items");
                assert_eq!(items.len(), n);
            }
        }
        check(7_u64, 8);
        check(7_u128, std::mem::align_of::<u128>());
        check(Wide(7), 64);
        let zeroed = vec![0_u64; 1000];
        assert!(zeroed.iter().all(|&x| x == 0));
        assert_eq!(zeroed.as_ptr() as usize % 8, 0);
    }
}
