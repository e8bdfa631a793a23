//! Working trees on the host: copying a source tree in, walking it into a [`Manifest`],
//! restoring one, and writing single files -- all without following a symbolic link the
//! sandboxed code may have planted.
//!
//! Safety rests on two facts: every path is checked with `symlink_metadata` (a link is an
//! entry, never a way through), and no sandboxed process runs while the host touches the
//! tree (each command's processes are gone when `exec` returns, except under the `local`
//! backend, which isolates nothing anyway).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::error::EnvError;
use crate::listing::{self, Known, Listed};
use crate::snapshot::{
    Base, BlobStore, Entry, EntryKind, Manifest, RelPath, SnapshotId, SnapshotInfo,
};

/// A host user and group that should own what baton writes into a tree.
pub(crate) type Owner = Option<(u32, u32)>;

/// One walked entry with the metadata needed for the hash cache.
struct Walked {
    path: RelPath,
    kind: WalkedKind,
}

enum WalkedKind {
    Dir,
    File(fs::Metadata),
    Symlink(Vec<u8>),
    Special,
}

/// What identifies an unchanged file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(md: &fs::Metadata) -> Self {
        Stamp {
            dev: md.dev(),
            ino: md.ino(),
            size: md.len(),
            mtime: (md.mtime(), md.mtime_nsec()),
            ctime: (md.ctime(), md.ctime_nsec()),
        }
    }
}

/// A working tree on the host, with a cache of file digests keyed by inode, size and
/// change time (any write changes the change time, so a hit is exact), and the full
/// manifest its snapshots are stored against.
pub(crate) struct HostTree {
    root: PathBuf,
    owner: Owner,
    cache: HashMap<RelPath, (Stamp, String)>,
    /// The blob store ([`BlobStore::identity`]) every cached digest is known to be in.
    verified_in: Option<PathBuf>,
    base: Option<Base>,
    /// Digests by `find`'s stamps, for snapshots taken from a listing.
    known: Known,
}

impl HostTree {
    pub(crate) fn new(root: PathBuf, owner: Owner) -> Self {
        HostTree {
            root,
            owner,
            cache: HashMap::new(),
            verified_in: None,
            base: None,
            known: Known::default(),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Record the tree: from GNU `find`'s listing when it reads the whole tree (a child
    /// process walks it, baton reads back only the files whose stamp changed), else by
    /// walking it here (which also repairs folders and files the sandbox made unreadable).
    pub(crate) fn snapshot(
        &mut self,
        blobs: &dyn BlobStore,
        limit: u64,
    ) -> Result<SnapshotInfo, EnvError> {
        if let Some(info) = self.snapshot_listed(blobs, limit)? {
            return Ok(info);
        }
        self.known.clear();
        self.snapshot_walked(blobs, limit)
    }

    /// [`snapshot`](Self::snapshot) from `find`'s listing, or `None` when `find` is
    /// missing or could not read the whole tree, or a changed file cannot be opened.
    fn snapshot_listed(
        &mut self,
        blobs: &dyn BlobStore,
        limit: u64,
    ) -> Result<Option<SnapshotInfo>, EnvError> {
        let Some(listed) = self.list() else {
            return Ok(None);
        };
        let trusted = blobs.identity().is_some() && blobs.identity() == self.verified_in.as_deref();
        let total: u64 = listed.iter().map(|(_, l)| l.size()).sum();
        if total > limit {
            return Err(EnvError::TreeTooLarge { limit });
        }
        let mut entries = Vec::with_capacity(listed.len());
        let mut skipped = Vec::new();
        for (path, l) in listed {
            path.validate()?;
            let kind = match l {
                Listed::Dir => EntryKind::Dir,
                Listed::Symlink(target) => EntryKind::Symlink {
                    target: RelPath(target),
                },
                Listed::Special => {
                    skipped.push(path.display());
                    continue;
                }
                Listed::File(stamp) => {
                    let digest = match self.known.digest(&path, &stamp) {
                        Some(d) if trusted || blobs.contains(d) => d.to_string(),
                        _ => {
                            let host = path.under(&self.root);
                            let Ok(mut file) = fs::File::open(&host) else {
                                return Ok(None);
                            };
                            let d = blobs.put(&mut file)?.digest;
                            self.known.insert(path.clone(), stamp.clone(), d.clone());
                            d
                        }
                    };
                    EntryKind::File {
                        digest,
                        size: stamp.size(),
                        executable: stamp.executable(),
                    }
                }
            };
            entries.push(Entry { path, kind });
        }
        let manifest = Manifest::new(entries);
        let (files, bytes) = manifest.file_stats();
        let id = manifest.store_against(&mut self.base, blobs)?;
        self.verified_in = blobs.identity().map(Path::to_path_buf);
        Ok(Some(SnapshotInfo {
            id,
            files,
            bytes,
            skipped,
        }))
    }

    /// `find`'s listing of the tree, or `None` when it is missing or could not read it all.
    fn list(&self) -> Option<Vec<(RelPath, Listed)>> {
        let out = std::process::Command::new("find")
            .arg(&self.root)
            .args(["-mindepth", "1", "-printf", listing::FORMAT])
            .env_clear()
            .env("LC_ALL", "C")
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()?;
        if !out.status.success() {
            return None;
        }
        listing::parse(&out.stdout).ok()
    }

    /// [`snapshot`](Self::snapshot) by walking the tree here.
    fn snapshot_walked(
        &mut self,
        blobs: &dyn BlobStore,
        limit: u64,
    ) -> Result<SnapshotInfo, EnvError> {
        let walked = walk(&self.root, true)?;
        let trusted = blobs.identity().is_some() && blobs.identity() == self.verified_in.as_deref();
        let mut entries = Vec::with_capacity(walked.len());
        let mut skipped = Vec::new();
        let mut total = 0u64;
        for w in walked {
            let kind = match w.kind {
                WalkedKind::Dir => EntryKind::Dir,
                WalkedKind::Symlink(target) => EntryKind::Symlink {
                    target: RelPath(target),
                },
                WalkedKind::Special => {
                    skipped.push(w.path.display());
                    continue;
                }
                WalkedKind::File(md) => {
                    total += md.len();
                    if total > limit {
                        return Err(EnvError::TreeTooLarge { limit });
                    }
                    let digest = self.digest(&w.path, &md, Some(blobs), trusted)?;
                    EntryKind::File {
                        digest,
                        size: md.len(),
                        executable: md.mode() & 0o111 != 0,
                    }
                }
            };
            entries.push(Entry { path: w.path, kind });
        }
        let manifest = Manifest::new(entries);
        let (files, bytes) = manifest.file_stats();
        let id = manifest.store_against(&mut self.base, blobs)?;
        self.verified_in = blobs.identity().map(Path::to_path_buf);
        Ok(SnapshotInfo {
            id,
            files,
            bytes,
            skipped,
        })
    }

    /// The digest of a walked file, from the cache or by reading it (storing it in `blobs`
    /// when given). A cached digest is used only when its blob is present: `trusted` (the
    /// store is the one every cached digest was stored in), or asked.
    fn digest(
        &mut self,
        rel: &RelPath,
        md: &fs::Metadata,
        blobs: Option<&dyn BlobStore>,
        trusted: bool,
    ) -> Result<String, EnvError> {
        let stamp = Stamp::of(md);
        if let Some((s, d)) = self.cache.get(rel)
            && *s == stamp
            && (trusted || blobs.is_none_or(|b| b.contains(d)))
        {
            return Ok(d.clone());
        }
        let path = rel.under(&self.root);
        let mut file = fs::File::open(&path).map_err(|e| EnvError::io(&path, "read file", e))?;
        let digest = match blobs {
            Some(b) => b.put(&mut file)?.digest,
            None => {
                let mut hasher = <sha2::Sha256 as sha2::Digest>::new();
                std::io::copy(&mut file, &mut hasher)
                    .map_err(|e| EnvError::io(&path, "read file", e))?;
                hex::encode(sha2::Digest::finalize(hasher))
            }
        };
        self.cache.insert(rel.clone(), (stamp, digest.clone()));
        Ok(digest)
    }

    /// Make the tree exactly the snapshot `id`: remove what it does not hold, write what
    /// differs, leave identical files alone.
    pub(crate) fn restore(
        &mut self,
        blobs: &dyn BlobStore,
        id: &SnapshotId,
    ) -> Result<(), EnvError> {
        let (manifest, base) = Manifest::load_with_base(blobs, id)?;
        manifest.check_blobs(blobs)?;
        // what the cache holds from here on was checked in this store only
        self.verified_in = None;
        self.known.clear();
        self.base = Some(base);
        let target: HashMap<&RelPath, &EntryKind> = manifest
            .entries
            .iter()
            .map(|e| (&e.path, &e.kind))
            .collect();
        let current = walk(&self.root, true)?;
        let mut keep: HashMap<RelPath, ()> = HashMap::new();
        // Children come after their folder, so going backwards removes contents first.
        for w in current.iter().rev() {
            let wanted = target.get(&w.path);
            let same = match (&w.kind, wanted) {
                (WalkedKind::Dir, Some(EntryKind::Dir)) => true,
                (WalkedKind::Symlink(t), Some(EntryKind::Symlink { target })) => *t == target.0,
                (
                    WalkedKind::File(md),
                    Some(EntryKind::File {
                        digest,
                        size,
                        executable,
                    }),
                ) => {
                    md.len() == *size
                        && (md.mode() & 0o111 != 0) == *executable
                        && self.digest(&w.path, md, None, false)? == *digest
                }
                _ => false,
            };
            if same {
                keep.insert(w.path.clone(), ());
                continue;
            }
            let path = w.path.under(&self.root);
            let removed = match w.kind {
                WalkedKind::Dir => fs::remove_dir_all(&path),
                _ => fs::remove_file(&path),
            };
            // A folder removed as a whole takes entries we already decided to keep with it.
            if let WalkedKind::Dir = w.kind {
                let prefix = [w.path.0.as_slice(), b"/"].concat();
                keep.retain(|k, _| !k.0.starts_with(&prefix));
            }
            match removed {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(EnvError::io(path, "remove", e)),
            }
        }
        for e in &manifest.entries {
            if keep.contains_key(&e.path) {
                continue;
            }
            let path = e.path.under(&self.root);
            match &e.kind {
                EntryKind::Dir => {
                    fs::create_dir(&path)
                        .map_err(|err| EnvError::io(&path, "create folder", err))?;
                    set_mode(&path, 0o755)?;
                }
                EntryKind::File {
                    digest, executable, ..
                } => {
                    let mut src = blobs.open(digest)?;
                    write_new(&path, &mut src, *executable)?;
                }
                EntryKind::Symlink { target } => {
                    std::os::unix::fs::symlink(OsStr::from_bytes(&target.0), &path)
                        .map_err(|err| EnvError::io(&path, "create link", err))?;
                }
            }
            chown(&path, self.owner)?;
        }
        // The tree is now the manifest's: record its stamps, so the next snapshot reads
        // back only what changes after the restore (a resumed episode's first step).
        if let Some(listed) = self.list() {
            for (path, l) in listed {
                if let (Listed::File(stamp), Some(EntryKind::File { digest, .. })) =
                    (l, target.get(&path))
                {
                    self.known.insert(path, stamp, digest.clone());
                }
            }
        }
        Ok(())
    }

    /// Write one file at `rel` (creating folders, replacing whatever is in the way,
    /// including a symbolic link at any level).
    pub(crate) fn write_file(
        &self,
        rel: &str,
        contents: &[u8],
        executable: bool,
    ) -> Result<(), EnvError> {
        let rel = parse_rel(rel)?;
        let parts: Vec<&[u8]> = rel.components().collect();
        let mut dir = self.root.clone();
        for part in &parts[..parts.len() - 1] {
            dir.push(OsStr::from_bytes(part));
            match fs::symlink_metadata(&dir) {
                Ok(md) if md.is_dir() => continue,
                Ok(_) => {
                    fs::remove_file(&dir).map_err(|e| EnvError::io(&dir, "remove", e))?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(EnvError::io(&dir, "inspect", e)),
            }
            fs::create_dir(&dir).map_err(|e| EnvError::io(&dir, "create folder", e))?;
            set_mode(&dir, 0o755)?;
            chown(&dir, self.owner)?;
        }
        let path = dir.join(OsStr::from_bytes(parts[parts.len() - 1]));
        match fs::symlink_metadata(&path) {
            Ok(md) if md.is_dir() => {
                fs::remove_dir_all(&path).map_err(|e| EnvError::io(&path, "remove", e))?
            }
            Ok(_) => fs::remove_file(&path).map_err(|e| EnvError::io(&path, "remove", e))?,
            Err(_) => {}
        }
        write_new(&path, &mut &contents[..], executable)?;
        chown(&path, self.owner)
    }
}

/// Parse a caller's relative path (`/`-separated, inside the tree).
pub(crate) fn parse_rel(rel: &str) -> Result<RelPath, EnvError> {
    let p = RelPath(rel.trim_start_matches("./").as_bytes().to_vec());
    p.validate()?;
    Ok(p)
}

/// Copy `src` to the (existing, empty) folder `dst`: folders, regular files with their
/// execute bit, and symbolic links as links. Anything else is skipped.
pub(crate) fn copy_tree(src: &Path, dst: &Path, owner: Owner) -> Result<usize, EnvError> {
    let md = fs::metadata(src).map_err(|e| EnvError::io(src, "read tree", e))?;
    if !md.is_dir() {
        return Err(EnvError::io(
            src,
            "read tree",
            std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a folder"),
        ));
    }
    let mut files = 0;
    for w in walk(src, false)? {
        let to = w.path.under(dst);
        match w.kind {
            WalkedKind::Dir => {
                fs::create_dir(&to).map_err(|e| EnvError::io(&to, "create folder", e))?;
                set_mode(&to, 0o755)?;
            }
            WalkedKind::File(md) => {
                let from = w.path.under(src);
                let mut f =
                    fs::File::open(&from).map_err(|e| EnvError::io(&from, "read file", e))?;
                write_new(&to, &mut f, md.mode() & 0o111 != 0)?;
                files += 1;
            }
            WalkedKind::Symlink(target) => {
                std::os::unix::fs::symlink(OsStr::from_bytes(&target), &to)
                    .map_err(|e| EnvError::io(&to, "create link", e))?;
            }
            WalkedKind::Special => continue,
        }
        chown(&to, owner)?;
    }
    Ok(files)
}

/// Remove a tree the sandbox may have made unreadable (`chmod 000` on a folder).
pub(crate) fn remove_tree(root: &Path) {
    if fs::remove_dir_all(root).is_ok() || !root.exists() {
        return;
    }
    fn open_up(dir: &Path) {
        let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
        if let Ok(rd) = fs::read_dir(dir) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    open_up(&e.path());
                }
            }
        }
    }
    open_up(root);
    if let Err(e) = fs::remove_dir_all(root) {
        tracing::warn!("could not remove {}: {e}", root.display());
    }
}

/// Every entry under `root`, folders before their contents, names in byte order.
/// With `repair`, folders and files the owner cannot read are given owner access first
/// (the sandbox runs as the tree's owner, so it can `chmod 000` its own files).
fn walk(root: &Path, repair: bool) -> Result<Vec<Walked>, EnvError> {
    let mut out = Vec::new();
    walk_into(root, &RelPath(Vec::new()), repair, &mut out)?;
    Ok(out)
}

fn walk_into(
    root: &Path,
    rel: &RelPath,
    repair: bool,
    out: &mut Vec<Walked>,
) -> Result<(), EnvError> {
    let dir = if rel.0.is_empty() {
        root.to_path_buf()
    } else {
        rel.under(root)
    };
    if repair {
        let md = fs::symlink_metadata(&dir).map_err(|e| EnvError::io(&dir, "inspect", e))?;
        if md.mode() & 0o700 != 0o700 {
            set_mode(&dir, (md.mode() & 0o7777) | 0o700)?;
        }
    }
    let mut names: Vec<Vec<u8>> = fs::read_dir(&dir)
        .map_err(|e| EnvError::io(&dir, "list folder", e))?
        .map(|e| e.map(|e| e.file_name().as_bytes().to_vec()))
        .collect::<Result<_, _>>()
        .map_err(|e| EnvError::io(&dir, "list folder", e))?;
    names.sort();
    for name in names {
        let child = if rel.0.is_empty() {
            RelPath(name)
        } else {
            RelPath([rel.0.as_slice(), b"/", &name].concat())
        };
        let path = child.under(root);
        let md = fs::symlink_metadata(&path).map_err(|e| EnvError::io(&path, "inspect", e))?;
        let ft = md.file_type();
        if ft.is_dir() {
            out.push(Walked {
                path: child.clone(),
                kind: WalkedKind::Dir,
            });
            walk_into(root, &child, repair, out)?;
        } else if ft.is_file() {
            let md = if repair && md.mode() & 0o400 == 0 {
                set_mode(&path, (md.mode() & 0o7777) | 0o400)?;
                fs::symlink_metadata(&path).map_err(|e| EnvError::io(&path, "inspect", e))?
            } else {
                md
            };
            out.push(Walked {
                path: child,
                kind: WalkedKind::File(md),
            });
        } else if ft.is_symlink() {
            let target = fs::read_link(&path).map_err(|e| EnvError::io(&path, "read link", e))?;
            out.push(Walked {
                path: child,
                kind: WalkedKind::Symlink(target.as_os_str().as_bytes().to_vec()),
            });
        } else {
            out.push(Walked {
                path: child,
                kind: WalkedKind::Special,
            });
        }
    }
    Ok(())
}

/// Create a new file (never through an existing link) with `data`.
fn write_new(path: &Path, data: &mut dyn std::io::Read, executable: bool) -> Result<(), EnvError> {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| EnvError::io(path, "create file", e))?;
    std::io::copy(data, &mut f).map_err(|e| EnvError::io(path, "write file", e))?;
    set_mode(path, if executable { 0o755 } else { 0o644 })
}

fn set_mode(path: &Path, mode: u32) -> Result<(), EnvError> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .map_err(|e| EnvError::io(path, "set permissions", e))
}

pub(crate) fn chown(path: &Path, owner: Owner) -> Result<(), EnvError> {
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))
            .map_err(|e| EnvError::io(path, "change owner", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::DirBlobStore;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn snapshot_restore_round_trips_and_ignores_links() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = DirBlobStore::new(dir.path().join("blobs")).unwrap();
        let root = dir.path().join("tree");
        fs::create_dir(&root).unwrap();
        write(&root, "a.py", "print(1)\n");
        write(&root, "pkg/.git/HEAD", "ref: refs/heads/main\n");
        write(&root, "pkg/mod.py", "x = 1\n");
        fs::set_permissions(root.join("a.py"), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("evil")).unwrap();
        let mut tree = HostTree::new(root.clone(), None);
        let s1 = tree.snapshot(&blobs, u64::MAX).unwrap();
        assert_eq!(s1.files, 3);

        write(&root, "pkg/mod.py", "x = 2\n");
        write(&root, "new/deep/file.txt", "new");
        fs::remove_file(root.join("evil")).unwrap();
        fs::create_dir(root.join("evil")).unwrap();
        fs::remove_dir_all(root.join("pkg/.git")).unwrap();
        let s2 = tree.snapshot(&blobs, u64::MAX).unwrap();
        assert_ne!(s1.id, s2.id);

        tree.restore(&blobs, &s1.id).unwrap();
        assert_eq!(tree.snapshot(&blobs, u64::MAX).unwrap().id, s1.id);
        assert_eq!(
            fs::read_to_string(root.join("pkg/mod.py")).unwrap(),
            "x = 1\n"
        );
        assert_eq!(
            fs::read_to_string(root.join("pkg/.git/HEAD")).unwrap(),
            "ref: refs/heads/main\n"
        );
        assert!(!root.join("new").exists());
        assert_eq!(
            fs::read_link(root.join("evil")).unwrap(),
            Path::new("/etc/passwd")
        );
        assert_eq!(
            fs::metadata(root.join("a.py")).unwrap().mode() & 0o777,
            0o755
        );

        tree.restore(&blobs, &s2.id).unwrap();
        assert_eq!(tree.snapshot(&blobs, u64::MAX).unwrap().id, s2.id);
    }

    #[test]
    fn write_file_replaces_links_instead_of_following_them() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        let root = dir.path().join("tree");
        fs::create_dir(&root).unwrap();
        std::os::unix::fs::symlink(&outside, root.join("tests")).unwrap();
        std::os::unix::fs::symlink(outside.join("f"), root.join("top.py")).unwrap();
        let tree = HostTree::new(root.clone(), None);
        tree.write_file("tests/test_a.py", b"ok", false).unwrap();
        tree.write_file("top.py", b"ok", false).unwrap();
        assert!(
            fs::read_dir(&outside).unwrap().next().is_none(),
            "nothing written outside"
        );
        assert_eq!(fs::read(root.join("tests/test_a.py")).unwrap(), b"ok");
        assert!(matches!(
            tree.write_file("../x", b"", false),
            Err(EnvError::BadPath { .. })
        ));
        assert!(matches!(
            tree.write_file("/etc/x", b"", false),
            Err(EnvError::BadPath { .. })
        ));
    }

    #[test]
    fn snapshot_refuses_trees_over_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = DirBlobStore::new(dir.path().join("blobs")).unwrap();
        let root = dir.path().join("tree");
        fs::create_dir(&root).unwrap();
        write(&root, "big", &"x".repeat(100));
        let mut tree = HostTree::new(root, None);
        assert!(matches!(
            tree.snapshot(&blobs, 50),
            Err(EnvError::TreeTooLarge { limit: 50 })
        ));
    }
}
