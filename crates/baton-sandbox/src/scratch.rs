//! Quotas on the guest's scratch directory (`/tmp`): bytes stored, entries created, and
//! handles held open.
//!
//! The scratch directory is a real host directory, preopened read-write, so without limits
//! a guest could fill the host's disk or its inode table, and since every guest `open`
//! holds a host file descriptor, a guest that keeps a few thousand files open would take
//! the descriptors that the rest of the process (SQLite, HTTP connections, other graders)
//! needs. wasmtime-wasi has no such limits, so the few WASI functions that create entries,
//! grow files or open descriptors are wrapped here (the linker lets a definition shadow
//! the one from `wasmtime_wasi::p2::add_to_linker_async`):
//!
//! - `open-at` refuses once the guest holds [`ScratchLimits::open_files`] handles
//!   (descriptors and streams, each of which may keep a host file open), and refuses to
//!   *create* an entry past [`ScratchLimits::files`]; `create-directory-at`, `symlink-at`
//!   and `link-at` count as creating one. Both refusals are `quota` (`EDQUOT` in the
//!   guest: "Disk quota exceeded").
//! - `write`, `set-size` and every write through `write-via-stream` / `append-via-stream`
//!   (a wrapped output stream, so `blocking-write-and-flush`, `write-zeroes` and `splice`
//!   are covered too) refuse to grow the directory past [`ScratchLimits::bytes`]
//!   (`insufficient-space`, `ENOSPC` in the guest).
//!
//! Sizes are apparent sizes (a sparse write far past the end counts in full). The running
//! totals are upper bounds kept cheaply (every byte written through a stream counts as
//! growth, every creation request as an entry) and are recounted exactly, by walking the
//! directory, before anything is refused and whenever something shrank; the walk is
//! cheap because the entry count is capped. A refusal is remembered, so a verdict can say
//! that the quota, not the program, failed the write. LiC runs programs natively without
//! any such limit; no HumanEval or LiveCodeBench solution touches the filesystem.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::WasiFilesystemView;
use wasmtime_wasi::p2::bindings::filesystem::types::{
    Descriptor, DescriptorFlags, ErrorCode, Filesize, HostDescriptor, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{
    DynInputStream, DynOutputStream, FsError, OutputStream, Pollable, StreamError,
};

use crate::runtime::Host;

/// The WASI filesystem interface whose functions are wrapped (the version wasmtime-wasi
/// 48 defines; guests importing an older 0.2 version are matched to it).
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Quotas of one run's scratch directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScratchLimits {
    /// Bytes the directory may hold, all files together (default 64 MiB).
    pub bytes: u64,
    /// Entries (files, directories, links) the directory may hold (default 1000).
    pub files: usize,
    /// Handles the guest may hold at once when it opens another file: descriptors (the
    /// preopened `/tmp` included) and streams (stdin, stdout and stderr included), each of
    /// which may keep a host file descriptor open (default 128).
    pub open_files: usize,
}

impl Default for ScratchLimits {
    fn default() -> Self {
        ScratchLimits {
            bytes: 64 << 20,
            files: 1000,
            open_files: 128,
        }
    }
}

/// What one run's scratch directory holds, shared with its wrapped output streams.
#[derive(Debug)]
pub(crate) struct ScratchUsage {
    root: PathBuf,
    limits: ScratchLimits,
    /// An upper bound on the bytes stored (exact right after a walk).
    bytes: u64,
    /// An upper bound on the entries stored (exact right after a walk).
    entries: usize,
    /// Whether a quota refused something.
    hit: bool,
}

pub(crate) type SharedUsage = Arc<Mutex<ScratchUsage>>;

impl ScratchUsage {
    pub(crate) fn new(root: PathBuf, limits: ScratchLimits) -> SharedUsage {
        Arc::new(Mutex::new(ScratchUsage {
            root,
            limits,
            bytes: 0,
            entries: 0,
            hit: false,
        }))
    }

    /// Whether a quota refused a write, a creation or an open during this run.
    pub(crate) fn hit(usage: &SharedUsage) -> bool {
        lock(usage).hit
    }

    pub(crate) fn limits(usage: &SharedUsage) -> ScratchLimits {
        lock(usage).limits
    }

    /// Count entries and apparent bytes under the root (stopping past the entry quota).
    fn walk(&self) -> (usize, u64) {
        let (mut entries, mut bytes) = (0usize, 0u64);
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            let Ok(listing) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in listing.flatten() {
                entries += 1;
                if entries > self.limits.files + 1 {
                    return (entries, bytes.max(self.bytes));
                }
                let Ok(meta) = entry.path().symlink_metadata() else {
                    continue;
                };
                if meta.is_dir() {
                    stack.push(entry.path());
                } else {
                    bytes += meta.len();
                }
            }
        }
        (entries, bytes)
    }

    /// Make room for `growth` more bytes, or say no (and remember it).
    fn reserve(&mut self, growth: u64) -> bool {
        if self.bytes.saturating_add(growth) > self.limits.bytes {
            self.recount();
            if self.bytes.saturating_add(growth) > self.limits.bytes {
                self.hit = true;
                return false;
            }
        }
        self.bytes += growth;
        true
    }

    /// Whether one more entry may be created (remembering a refusal); if so, it counts.
    fn may_create(&mut self) -> bool {
        if self.entries >= self.limits.files {
            self.recount();
            if self.entries >= self.limits.files {
                self.hit = true;
                return false;
            }
        }
        self.entries += 1;
        true
    }

    /// Something may have shrunk (or a creation did not happen): recount exactly.
    fn recount(&mut self) {
        (self.entries, self.bytes) = self.walk();
    }
}

fn lock(usage: &SharedUsage) -> std::sync::MutexGuard<'_, ScratchUsage> {
    usage
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The guest-visible error of a host-side result, or a trap.
fn guest_result<T>(result: Result<T, FsError>) -> wasmtime::Result<Result<T, ErrorCode>> {
    match result {
        Ok(value) => Ok(Ok(value)),
        Err(e) => e.downcast().map(Err),
    }
}

/// Replace a file output stream in the table by one that counts against the quota.
fn wrap_stream(
    host: &mut Host,
    stream: Resource<DynOutputStream>,
) -> wasmtime::Result<Resource<DynOutputStream>> {
    let inner: DynOutputStream = host.table().delete(stream)?;
    let wrapped: DynOutputStream = Box::new(QuotaStream {
        inner,
        usage: host.scratch.clone(),
    });
    Ok(host.table().push(wrapped)?)
}

/// The current size of the file behind a descriptor (0 for a directory).
fn file_size(host: &mut Host, fd: &Resource<Descriptor>) -> u64 {
    match host.table().get(fd) {
        Ok(Descriptor::File(f)) => f.file.metadata().map_or(0, |m| m.len()),
        _ => 0,
    }
}

/// Shadow the filesystem functions that create, grow or open, with the quotas above.
pub(crate) fn add_to_linker(linker: &mut Linker<Host>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;

    types.func_wrap_async(
        "[method]descriptor.open-at",
        |mut store: StoreContextMut<'_, Host>,
         (fd, path_flags, path, open_flags, flags): (
            Resource<Descriptor>,
            PathFlags,
            String,
            OpenFlags,
            DescriptorFlags,
        )| {
            Box::new(async move {
                let host = store.data_mut();
                let open = host
                    .table()
                    .iter_mut()
                    .filter(|entry| {
                        entry.is::<Descriptor>()
                            || entry.is::<DynOutputStream>()
                            || entry.is::<DynInputStream>()
                    })
                    .count();
                if open >= ScratchUsage::limits(&host.scratch).open_files {
                    lock(&host.scratch).hit = true;
                    return Ok((Err(ErrorCode::Quota),));
                }
                let creating = open_flags.contains(OpenFlags::CREATE);
                let full = creating && !lock(&host.scratch).may_create();
                let truncating = open_flags.contains(OpenFlags::TRUNCATE);
                let mut view = host.filesystem();
                let result = if full {
                    if open_flags.contains(OpenFlags::EXCLUSIVE) {
                        return Ok((Err(ErrorCode::Quota),));
                    }
                    // At the quota an existing file may still be opened; a new one may not.
                    let existing = open_flags & !OpenFlags::CREATE;
                    match guest_result(view.open_at(fd, path_flags, path, existing, flags).await)? {
                        Err(ErrorCode::NoEntry) => Err(ErrorCode::Quota),
                        other => other,
                    }
                } else {
                    guest_result(view.open_at(fd, path_flags, path, open_flags, flags).await)?
                };
                if truncating {
                    lock(&host.scratch).recount();
                }
                Ok((result,))
            })
        },
    )?;

    types.func_wrap_async(
        "[method]descriptor.write",
        |mut store: StoreContextMut<'_, Host>,
         (fd, buffer, offset): (Resource<Descriptor>, Vec<u8>, Filesize)| {
            Box::new(async move {
                let host = store.data_mut();
                let size = file_size(host, &fd);
                let end = offset.saturating_add(buffer.len() as u64);
                if !lock(&host.scratch).reserve(end.saturating_sub(size)) {
                    return Ok((Err(ErrorCode::InsufficientSpace),));
                }
                Ok((guest_result(
                    host.filesystem().write(fd, buffer, offset).await,
                )?,))
            })
        },
    )?;

    types.func_wrap_async(
        "[method]descriptor.set-size",
        |mut store: StoreContextMut<'_, Host>, (fd, size): (Resource<Descriptor>, Filesize)| {
            Box::new(async move {
                let host = store.data_mut();
                let current = file_size(host, &fd);
                if !lock(&host.scratch).reserve(size.saturating_sub(current)) {
                    return Ok((Err(ErrorCode::InsufficientSpace),));
                }
                let result = guest_result(host.filesystem().set_size(fd, size).await)?;
                if size < current {
                    lock(&host.scratch).recount();
                }
                Ok((result,))
            })
        },
    )?;

    types.func_wrap(
        "[method]descriptor.write-via-stream",
        |mut store: StoreContextMut<'_, Host>, (fd, offset): (Resource<Descriptor>, Filesize)| {
            let host = store.data_mut();
            let opened = host.filesystem().write_via_stream(fd, offset);
            let stream = match guest_result(opened)? {
                Ok(stream) => stream,
                Err(code) => return Ok((Err(code),)),
            };
            Ok((Ok(wrap_stream(host, stream)?),))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.append-via-stream",
        |mut store: StoreContextMut<'_, Host>, (fd,): (Resource<Descriptor>,)| {
            let host = store.data_mut();
            let stream = match guest_result(host.filesystem().append_via_stream(fd))? {
                Ok(stream) => stream,
                Err(code) => return Ok((Err(code),)),
            };
            Ok((Ok(wrap_stream(host, stream)?),))
        },
    )?;

    types.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut store: StoreContextMut<'_, Host>, (fd, path): (Resource<Descriptor>, String)| {
            Box::new(async move {
                let host = store.data_mut();
                if !lock(&host.scratch).may_create() {
                    return Ok((Err(ErrorCode::Quota),));
                }
                Ok((guest_result(
                    host.filesystem().create_directory_at(fd, path).await,
                )?,))
            })
        },
    )?;

    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store: StoreContextMut<'_, Host>,
         (fd, old, new): (Resource<Descriptor>, String, String)| {
            Box::new(async move {
                let host = store.data_mut();
                if !lock(&host.scratch).may_create() {
                    return Ok((Err(ErrorCode::Quota),));
                }
                Ok((guest_result(
                    host.filesystem().symlink_at(fd, old, new).await,
                )?,))
            })
        },
    )?;

    types.func_wrap_async(
        "[method]descriptor.link-at",
        |mut store: StoreContextMut<'_, Host>,
         (fd, flags, old, new_fd, new): (
            Resource<Descriptor>,
            PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| {
            Box::new(async move {
                let host = store.data_mut();
                if !lock(&host.scratch).may_create() {
                    return Ok((Err(ErrorCode::Quota),));
                }
                let linked = host.filesystem().link_at(fd, flags, old, new_fd, new).await;
                Ok((guest_result(linked)?,))
            })
        },
    )?;

    for name in [
        "[method]descriptor.unlink-file-at",
        "[method]descriptor.remove-directory-at",
    ] {
        let unlink = name.contains("unlink");
        types.func_wrap_async(
            name,
            move |mut store: StoreContextMut<'_, Host>,
                  (fd, path): (Resource<Descriptor>, String)| {
                Box::new(async move {
                    let host = store.data_mut();
                    let mut view = host.filesystem();
                    let removed = if unlink {
                        view.unlink_file_at(fd, path).await
                    } else {
                        view.remove_directory_at(fd, path).await
                    };
                    let result = guest_result(removed)?;
                    lock(&host.scratch).recount();
                    Ok((result,))
                })
            },
        )?;
    }

    linker.allow_shadowing(false);
    Ok(())
}

/// A file output stream whose writes count against the scratch quota.
struct QuotaStream {
    inner: DynOutputStream,
    usage: SharedUsage,
}

fn no_space() -> StreamError {
    StreamError::LastOperationFailed(wasmtime::Error::from(std::io::Error::from_raw_os_error(
        28, // ENOSPC: the guest sees insufficient-space.
    )))
}

#[wasmtime_wasi::async_trait]
impl Pollable for QuotaStream {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for QuotaStream {
    fn write(&mut self, bytes: bytes::Bytes) -> Result<(), StreamError> {
        if !lock(&self.usage).reserve(bytes.len() as u64) {
            return Err(no_space());
        }
        self.inner.write(bytes)
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        self.inner.check_write()
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
    }
}
