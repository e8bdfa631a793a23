//! Compiles `datasets/agent-sample/` into the crate: writes `$OUT_DIR/agent_sample.rs`, a
//! table of `(path, include_bytes!(...))` for every file of the set, and asks Cargo to
//! rerun when any file or folder of it changes (including files added or removed).

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.join("../../datasets/agent-sample");
    let root = root.canonicalize().unwrap_or(root);
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    files.sort();
    let mut out = String::from(
        "/// Every file of `datasets/agent-sample/`, as (path relative to it, contents).\n\
         pub(crate) static FILES: &[(&str, &[u8])] = &[\n",
    );
    for (rel, abs) in &files {
        out.push_str(&format!(
            "    ({rel:?}, include_bytes!({:?})),\n",
            abs.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("agent_sample.rs");
    std::fs::write(dest, out).expect("write agent_sample.rs");
}

fn walk(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) {
    println!("cargo:rerun-if-changed={}", dir.display());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "__pycache__" || name.to_string_lossy().ends_with(".pyc") {
            continue;
        }
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            walk(root, &path, files);
        } else if ft.is_file() {
            println!("cargo:rerun-if-changed={}", path.display());
            let rel = path.strip_prefix(root).expect("under root");
            files.push((rel.to_string_lossy().replace('\\', "/"), path));
        }
    }
}
