//! The compiled-code cache: `Component::serialize` output under `sandbox/cache/`.
//!
//! Compiling the 30 MB runner with cranelift takes several seconds, so the result is kept.
//! A file's name is a hash of the wasmtime version, the engine configuration (wasmtime's own
//! `precompile_compatibility_hash`) and the sha256 of the `.wasm`; beside it sits the sha256
//! of its own bytes, written by the same code. A file is loaded only when both match, so the
//! cache only ever hands wasmtime bytes this crate produced for this exact engine.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::SandboxError;

/// The wasmtime version this crate is pinned to (root `Cargo.toml`).
pub const WASMTIME_VERSION: &str = "48.0.8";

/// Hex sha256 of some bytes.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// The cache file for this engine and this component.
pub(crate) fn cache_path(cache_dir: &Path, engine: &Engine, wasm_sha256: &str) -> PathBuf {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    let engine_hash = hasher.finish();
    let key = sha256_hex(format!("{WASMTIME_VERSION}/{engine_hash:016x}/{wasm_sha256}").as_bytes());
    cache_dir.join(format!("runner-{}.cwasm", &key[..24]))
}

fn checksum_path(path: &Path) -> PathBuf {
    path.with_extension("cwasm.sha256")
}

/// Load the compiled component from the cache, or compile `wasm` and store it.
/// Returns the component and whether it came from the cache.
pub(crate) fn load_or_compile(
    engine: &Engine,
    cache_dir: &Path,
    wasm_path: &Path,
) -> Result<(Component, bool), SandboxError> {
    let wasm = std::fs::read(wasm_path).map_err(|e| SandboxError::io(wasm_path, e))?;
    let path = cache_path(cache_dir, engine, &sha256_hex(&wasm));
    if let Some(component) = try_load(engine, &path) {
        return Ok((component, true));
    }
    tracing::info!(
        wasm = %wasm_path.display(),
        "compiling the Python sandbox runner with cranelift (once per wasmtime version; several seconds)"
    );
    let compiled = engine
        .precompile_component(&wasm)
        .map_err(|e| SandboxError::wasmtime("compiling the runner component", e))?;
    store(&path, &compiled)?;
    prune(cache_dir, &path);
    // SAFETY: `compiled` was produced just now by `precompile_component` on this very engine.
    #[allow(unsafe_code)]
    let component = unsafe { Component::deserialize(engine, &compiled) }
        .map_err(|e| SandboxError::wasmtime("loading the freshly compiled runner", e))?;
    Ok((component, false))
}

fn try_load(engine: &Engine, path: &Path) -> Option<Component> {
    let bytes = std::fs::read(path).ok()?;
    let recorded = std::fs::read_to_string(checksum_path(path)).ok()?;
    if recorded.trim() != sha256_hex(&bytes) {
        tracing::warn!(path = %path.display(), "ignoring a cached runner whose checksum does not match");
        return None;
    }
    // SAFETY: the file sits under a name derived from this wasmtime version, this engine's
    // compatibility hash and the component's sha256, and its bytes match the checksum that
    // `store` wrote beside it: it is output of `precompile_component` for this engine, written
    // by this crate. wasmtime re-checks the version and configuration header as well.
    #[allow(unsafe_code)]
    let loaded = unsafe { Component::deserialize(engine, &bytes) };
    match loaded {
        Ok(component) => Some(component),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "ignoring an unusable cached runner");
            None
        }
    }
}

/// Remove compiled runners other than `keep` (older builds of the component). Safe while
/// another process uses one: loading reads the whole file into memory first.
fn prune(cache_dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(cache_dir) else {
        return;
    };
    let keep_sum = checksum_path(keep);
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("runner-") && path != keep && path != keep_sum {
            let _ = std::fs::remove_file(&path);
        }
    }
}

fn store(path: &Path, compiled: &[u8]) -> Result<(), SandboxError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| SandboxError::io(dir, e))?;
    let checksum = sha256_hex(compiled);
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, compiled).map_err(|e| SandboxError::io(&tmp, e))?;
    let sum = checksum_path(path);
    let sum_tmp = sum.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&sum_tmp, &checksum).map_err(|e| SandboxError::io(&sum_tmp, e))?;
    // The checksum lands first: a reader that sees the new code also sees its sum.
    std::fs::rename(&sum_tmp, &sum).map_err(|e| SandboxError::io(&sum, e))?;
    std::fs::rename(&tmp, path).map_err(|e| SandboxError::io(path, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_is_lowercase_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_tampered_cache_file_is_ignored() {
        let engine = Engine::default();
        let dir = tempfile::tempdir().unwrap();
        let path = cache_path(dir.path(), &engine, "00");
        store(&path, b"not a component").unwrap();
        std::fs::write(&path, b"changed").unwrap();
        assert!(try_load(&engine, &path).is_none());
        assert!(
            path.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("runner-")
        );
    }

    #[test]
    fn pruning_keeps_only_the_current_runner() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("runner-old.cwasm");
        let keep = dir.path().join("runner-new.cwasm");
        store(&old, b"old").unwrap();
        store(&keep, b"new").unwrap();
        std::fs::write(dir.path().join("other.txt"), "x").unwrap();
        prune(dir.path(), &keep);
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["other.txt", "runner-new.cwasm", "runner-new.cwasm.sha256"]
        );
    }
}
