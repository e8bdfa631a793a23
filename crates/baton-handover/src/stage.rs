//! What goes into the sandbox: a small staged tree instead of a copy of the whole working tree.
//!
//! A claim needs the repository's files (tracked, and untracked but not ignored) at the anchor
//! or now, its history, and the ignored folders it was written against (`node_modules`, a
//! virtualenv, build output). Copying all of it made `--claims` take 12–78 s on an 87 MB
//! repository of 14,000 files, most of them an ignored `node_modules`. So a [`Staged`] tree
//! holds only:
//!
//! - the files of the tree: now, the tracked and untracked-not-ignored files as they are on
//!   disk; at the anchor, the anchor's tracked files (`git read-tree` into a private index,
//!   then `git checkout-index --prefix`, so the repository's own index is never touched);
//! - a private `.git`: `HEAD` (the branch now, the anchor detached), the index, the refs,
//!   `info/exclude`, a minimal `config` (the repository's own may hold credentials in remote
//!   URLs), and the objects reached through `objects/info/alternates`, read-only;
//! - the ignored entries: given to the sandbox as read-only binds of the real folders
//!   ([`Staged::binds`]), or copied when binds cannot be used (`--no-sandbox`, or the
//!   sandbox user cannot read the repository).
//!
//! Files that look like secrets ([`secret_like`]: `.env*`, `*.pem`, `id_*`, `.npmrc`,
//! `.netrc`, credential files) are left out wherever they are, and masked inside bound
//! folders, unless named with `--include`; the values found in them are handed to
//! [`crate::redact`], so an encoded copy of one (`base64 -w0 .env`) is redacted too.

use std::path::{Path, PathBuf};

use crate::git::Repo;

/// The inside path of the real object store in the sandbox.
pub const OBJECTS_INSIDE: &str = "/.baton-git/objects";

/// The most entries walked inside ignored folders to find secret-like files to mask.
const MAX_WALK: usize = 500_000;

/// The most bytes of a secret-like file read for its values.
const MAX_SECRET_FILE: u64 = 256 * 1024;

/// How ignored entries and the object store reach the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Read-only binds of the real paths (bubblewrap).
    Bind,
    /// Copies (no bubblewrap, or the sandbox user cannot read the repository).
    Copy,
}

/// A staged tree, ready to be given to the sandbox.
#[derive(Debug, Default)]
pub struct Staged {
    /// Real folders or files to bind read-only, with their path in the tree.
    pub binds: Vec<(PathBuf, String)>,
    /// Paths in the tree (inside bound folders) to hide behind an empty file.
    pub masks: Vec<String>,
    /// The real object store, to bind at [`OBJECTS_INSIDE`] (bind mode).
    pub objects: Option<PathBuf>,
    /// Secret-like paths left out, relative to the top of the tree.
    pub left_out: Vec<String>,
    /// Files copied into the staged tree.
    pub copied: usize,
}

/// Whether a file name looks like it holds credentials.
pub fn secret_like(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let template = [".example", ".sample", ".template", ".dist"]
        .iter()
        .any(|s| lower.ends_with(s));
    if lower == ".env" || lower.starts_with(".env.") || lower.ends_with(".env") {
        return !template;
    }
    if template {
        return false;
    }
    [".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".ppk"]
        .iter()
        .any(|s| lower.ends_with(s))
        || (lower.starts_with("id_") && !lower.ends_with(".pub"))
        || matches!(
            lower.as_str(),
            ".npmrc"
                | ".netrc"
                | "_netrc"
                | ".pypirc"
                | ".git-credentials"
                | ".dockercfg"
                | ".htpasswd"
                | ".pgpass"
                | "credentials"
                | "secrets.json"
                | "secrets.yml"
                | "secrets.yaml"
                | "secrets.toml"
        )
        || lower.contains("credentials")
        || lower.starts_with("service-account")
}

fn last(rel: &str) -> &str {
    rel.trim_end_matches('/').rsplit('/').next().unwrap_or(rel)
}

/// Whether `rel` is left out: secret-like and not named in `include`.
fn leave_out(rel: &str, include: &[String]) -> bool {
    let rel = rel.trim_end_matches('/');
    secret_like(last(rel)) && !include.iter().any(|i| i.trim_start_matches("./") == rel)
}

/// Stage `repo`'s tree (at `anchor` when given) into the empty folder `into`; `scratch` is
/// for a private index.
pub fn stage(
    repo: &Repo,
    anchor: Option<&str>,
    into: &Path,
    scratch: &Path,
    mode: Mode,
    include: &[String],
) -> Result<Staged, String> {
    let root = &repo.root;
    let mut staged = Staged::default();
    let (git_dir, common) = repo.git_dirs()?;
    let index = scratch.join(format!(
        "index-{}",
        into.file_name().unwrap_or_default().to_string_lossy()
    ));
    match anchor {
        Some(sha) => {
            if !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(format!("{sha} is not a commit id"));
            }
            let env = [("GIT_INDEX_FILE", index.as_path())];
            repo.git_env(&["read-tree", "--end-of-options", sha], &env)
                .map_err(|e| format!("cannot read the anchor's tree: {e}"))?;
            let prefix = format!("{}/", into.display());
            repo.git_env(&["checkout-index", "-a", "-f", "--prefix", &prefix], &env)
                .map_err(|e| format!("cannot check out the anchor: {e}"))?;
            // Secret-like tracked files of the anchor are left out too.
            remove_secret_like(into, into, include, &mut staged)?;
        }
        None => {
            let files = repo.list(&[
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ])?;
            for rel in files {
                if rel == ".git" || rel.starts_with(".git/") {
                    continue;
                }
                if leave_out(&rel, include) {
                    staged.left_out.push(rel);
                    continue;
                }
                let src = root.join(&rel);
                if src.symlink_metadata().is_err() {
                    continue; // deleted, not committed
                }
                copy_entry(&src, &into.join(&rel), &mut staged.copied)
                    .map_err(|e| format!("cannot stage {rel}: {e}"))?;
            }
        }
    }
    let ignored = repo.list(&[
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
    ])?;
    let mut walked = 0usize;
    for entry in ignored {
        let rel = entry.trim_end_matches('/').to_string();
        if rel.is_empty() || rel == ".git" || rel.starts_with(".git/") {
            continue;
        }
        if leave_out(&rel, include) {
            staged.left_out.push(rel);
            continue;
        }
        let src = root.join(&rel);
        match mode {
            Mode::Bind => {
                if src.is_dir() {
                    find_secret_like(&src, &rel, include, &mut staged, &mut walked);
                }
                staged.binds.push((src, rel));
            }
            Mode::Copy => {
                copy_filtered(&src, &into.join(&rel), &rel, include, &mut staged)
                    .map_err(|e| format!("cannot stage {rel}: {e}"))?;
            }
        }
    }
    // Included secret-like files that git does not list (none, usually) are copied as named.
    for inc in include {
        let rel = inc.trim_start_matches("./").trim_end_matches('/');
        let src = root.join(rel);
        let dst = into.join(rel);
        if src.is_file() && dst.symlink_metadata().is_err() && !rel.contains("..") {
            copy_entry(&src, &dst, &mut staged.copied)
                .map_err(|e| format!("cannot stage {rel}: {e}"))?;
        }
    }
    private_git(
        &git_dir,
        &common,
        &into.join(".git"),
        anchor,
        &index,
        mode,
        &mut staged,
    )?;
    let _ = std::fs::remove_file(&index);
    // The values of every secret-like file found (left out or included) are redacted.
    for rel in staged.left_out.iter().chain(&staged.masks).chain(include) {
        crate::redact::remember_file(&root.join(rel), MAX_SECRET_FILE);
    }
    Ok(staged)
}

fn private_git(
    git_dir: &Path,
    common: &Path,
    dot_git: &Path,
    anchor: Option<&str>,
    anchor_index: &Path,
    mode: Mode,
    staged: &mut Staged,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("cannot make the sandbox's .git: {e}");
    std::fs::create_dir_all(dot_git.join("objects/info")).map_err(io)?;
    std::fs::create_dir_all(dot_git.join("info")).map_err(io)?;
    match anchor {
        Some(sha) => {
            std::fs::write(dot_git.join("HEAD"), format!("{sha}\n")).map_err(io)?;
            if anchor_index.exists() {
                std::fs::copy(anchor_index, dot_git.join("index")).map_err(io)?;
            }
        }
        None => {
            std::fs::copy(git_dir.join("HEAD"), dot_git.join("HEAD")).map_err(io)?;
            if git_dir.join("index").is_file() {
                std::fs::copy(git_dir.join("index"), dot_git.join("index")).map_err(io)?;
            }
        }
    }
    let mut n = 0;
    for name in ["packed-refs", "shallow", "info/exclude"] {
        let src = common.join(name);
        if src.is_file() {
            std::fs::copy(&src, dot_git.join(name)).map_err(io)?;
        }
    }
    if common.join("refs").is_dir() {
        copy_entry(&common.join("refs"), &dot_git.join("refs"), &mut n).map_err(io)?;
    } else {
        std::fs::create_dir_all(dot_git.join("refs/heads")).map_err(io)?;
    }
    let format = std::fs::read_to_string(common.join("config"))
        .ok()
        .filter(|c| c.to_ascii_lowercase().contains("objectformat = sha256"))
        .map(|_| "\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n")
        .unwrap_or("\trepositoryformatversion = 0\n");
    std::fs::write(
        dot_git.join("config"),
        format!("[core]\n\tbare = false\n\tfilemode = true\n{format}"),
    )
    .map_err(io)?;
    let objects = common.join("objects");
    match mode {
        Mode::Bind => {
            std::fs::write(
                dot_git.join("objects/info/alternates"),
                format!("{OBJECTS_INSIDE}\n"),
            )
            .map_err(io)?;
            staged.objects = Some(objects);
        }
        Mode::Copy => {
            std::fs::remove_dir_all(dot_git.join("objects")).map_err(io)?;
            copy_entry(&objects, &dot_git.join("objects"), &mut n).map_err(io)?;
        }
    }
    Ok(())
}

/// Remove secret-like files from a checked-out tree.
fn remove_secret_like(
    top: &Path,
    dir: &Path,
    include: &[String],
    staged: &mut Staged,
) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path
            .strip_prefix(top)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Ok(md) = path.symlink_metadata() else {
            continue;
        };
        if leave_out(&rel, include) {
            if md.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            }
            .map_err(|e| format!("cannot leave out {rel}: {e}"))?;
            staged.left_out.push(rel);
        } else if md.is_dir() {
            remove_secret_like(top, &path, include, staged)?;
        }
    }
    Ok(())
}

/// Record the secret-like files under a bound folder, to mask them.
fn find_secret_like(
    dir: &Path,
    rel: &str,
    include: &[String],
    staged: &mut Staged,
    walked: &mut usize,
) {
    let mut stack = vec![(dir.to_path_buf(), rel.to_string())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            *walked += 1;
            if *walked > MAX_WALK {
                return;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = format!("{rel}/{name}");
            let Ok(ft) = entry.file_type() else {
                continue;
            };
            if leave_out(&child, include) && !ft.is_dir() {
                staged.masks.push(child);
            } else if ft.is_dir() {
                stack.push((entry.path(), child));
            }
        }
    }
}

/// Copy `src` to `dst` (links kept as links, modes kept), leaving secret-like files out.
fn copy_filtered(
    src: &Path,
    dst: &Path,
    rel: &str,
    include: &[String],
    staged: &mut Staged,
) -> std::io::Result<()> {
    let md = src.symlink_metadata()?;
    if md.is_dir() {
        std::fs::create_dir_all(dst)?;
        for entry in std::fs::read_dir(src)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let child = format!("{rel}/{name}");
            if leave_out(&child, include) {
                staged.left_out.push(child);
                continue;
            }
            copy_filtered(&entry.path(), &dst.join(&name), &child, include, staged)?;
        }
        Ok(())
    } else {
        copy_entry(src, dst, &mut staged.copied)
    }
}

/// Copy a file, link or folder (links kept as links, modes kept).
fn copy_entry(src: &Path, dst: &Path, count: &mut usize) -> std::io::Result<()> {
    let md = src.symlink_metadata()?;
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if md.file_type().is_symlink() {
        let target = std::fs::read_link(src)?;
        std::os::unix::fs::symlink(target, dst)?;
        *count += 1;
    } else if md.is_dir() {
        std::fs::create_dir_all(dst)?;
        for entry in std::fs::read_dir(src)? {
            let entry = entry?;
            copy_entry(&entry.path(), &dst.join(entry.file_name()), count)?;
        }
    } else if md.is_file() {
        std::fs::copy(src, dst)?;
        *count += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_like_names() {
        for name in [
            ".env",
            ".env.local",
            "prod.env",
            "server.pem",
            "id_rsa",
            "id_ed25519",
            ".npmrc",
            ".netrc",
            "credentials.json",
            "aws-credentials",
            "tls.key",
        ] {
            assert!(secret_like(name), "{name}");
        }
        for name in [
            ".env.example",
            "README.md",
            "id_rsa.pub",
            "package.json",
            "keyboard.rs",
            "environment.ts",
        ] {
            assert!(!secret_like(name), "{name}");
        }
    }
}
