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
use crate::recorded::Recorded;
use crate::snapshot::{BlobStore, Entry, EntryKind, Manifest, RelPath, SnapshotId, SnapshotInfo};
use crate::watch::{Changes, Watch};

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
/// change time (any write changes the change time, so a hit is exact), the tree as last
/// recorded ([`Recorded`], with the full manifest its snapshots are stored against), and
/// the kernel's word on which paths changed since ([`Watch`]).
pub(crate) struct HostTree {
    root: PathBuf,
    owner: Owner,
    cache: HashMap<RelPath, (Stamp, String)>,
    /// The blob store ([`BlobStore::identity`]) every cached digest is known to be in.
    verified_in: Option<PathBuf>,
    recorded: Recorded,
    /// Watching every folder since `recorded` was last made whole; `None`: walk the
    /// whole tree at the next snapshot.
    watch: Option<Watch>,
    /// A file with more than one link was seen: a write through one link is not
    /// reported for the others, so every snapshot walks the whole tree.
    hard_links: bool,
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
            recorded: Recorded::default(),
            watch: None,
            hard_links: false,
            known: Known::default(),
        }
    }

    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// Record the tree. Between snapshots the kernel reports which paths changed
    /// ([`Watch`]): only those are looked at again (a folder that is new or changed is
    /// walked), so a step that edits one file reads that file. Without a usable report
    /// (the first snapshot, another blob store, the kernel's queue overflowed, a file
    /// with several links) the whole tree is walked here (which also repairs folders and
    /// files the sandbox made unreadable) and a new watch starts; where the kernel offers
    /// no watch at all, from GNU `find`'s listing (a child process walks the tree, baton
    /// reads back only the files whose stamp changed).
    pub(crate) fn snapshot(
        &mut self,
        blobs: &dyn BlobStore,
        limit: u64,
    ) -> Result<SnapshotInfo, EnvError> {
        let trusted = blobs.identity().is_some() && blobs.identity() == self.verified_in.as_deref();
        if trusted
            && !self.hard_links
            && let Some(watch) = self.watch.as_mut()
            && let Changes::Paths(paths) = watch.drain()
            && self.refresh(paths, blobs)?
        {
            return self.recorded.store(blobs, limit);
        }
        self.watch = None;
        let mut watch = Watch::new();
        // watch first: nothing runs during a snapshot, but a restore's own writes after
        // it are then reported too
        if let Some(w) = watch.as_mut()
            && !w.add(&self.root, &RelPath(Vec::new()))
        {
            watch = None;
        }
        let info = match watch {
            Some(_) => self.snapshot_walked(blobs, limit)?,
            None => match self.snapshot_listed(blobs, limit)? {
                Some(info) => info,
                None => {
                    self.known.clear();
                    self.snapshot_walked(blobs, limit)?
                }
            },
        };
        if let Some(mut w) = watch {
            let all = self.recorded.dirs().all(|d| w.add(&self.root, d));
            if all {
                self.watch = Some(w);
            }
        }
        Ok(info)
    }

    /// Look again at `paths` (and under those that are folders), updating the recorded
    /// tree and storing changed contents in `blobs`. `false`: something could not be
    /// read as expected, so the whole tree is to be walked.
    fn refresh(
        &mut self,
        paths: std::collections::BTreeSet<RelPath>,
        blobs: &dyn BlobStore,
    ) -> Result<bool, EnvError> {
        for rel in paths {
            if rel.validate().is_err() {
                return Ok(false);
            }
            let path = rel.under(&self.root);
            let md = match fs::symlink_metadata(&path) {
                Ok(md) => md,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.recorded.remove(&rel);
                    if let Some(w) = self.watch.as_mut() {
                        w.forget_under(&rel);
                    }
                    continue;
                }
                Err(_) => return Ok(false),
            };
            let ft = md.file_type();
            if ft.is_dir() {
                // new, replaced, moved here or changed itself: walk it whole
                self.recorded.remove(&rel);
                let mut walked = Vec::new();
                if walk_into(&self.root, &rel, true, &mut walked).is_err() {
                    return Ok(false);
                }
                self.recorded.set(rel.clone(), EntryKind::Dir);
                let Some(w) = self.watch.as_mut() else {
                    return Ok(false);
                };
                if !w.add(&self.root, &rel) {
                    return Ok(false);
                }
                for item in walked {
                    if !self.record(item, blobs)? {
                        return Ok(false);
                    }
                }
                continue;
            }
            let item = Walked {
                path: rel.clone(),
                kind: if ft.is_file() {
                    WalkedKind::File(md)
                } else if ft.is_symlink() {
                    match fs::read_link(&path) {
                        Ok(t) => WalkedKind::Symlink(t.as_os_str().as_bytes().to_vec()),
                        Err(_) => return Ok(false),
                    }
                } else {
                    WalkedKind::Special
                },
            };
            if matches!(self.recorded.get(&rel), Some(EntryKind::Dir)) {
                self.recorded.remove(&rel);
                if let Some(w) = self.watch.as_mut() {
                    w.forget_under(&rel);
                }
            }
            if !self.record(item, blobs)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Record one walked entry (a folder is also watched); `false` as for
    /// [`refresh`](Self::refresh).
    fn record(&mut self, item: Walked, blobs: &dyn BlobStore) -> Result<bool, EnvError> {
        match item.kind {
            WalkedKind::Dir => {
                let Some(w) = self.watch.as_mut() else {
                    return Ok(false);
                };
                if !w.add(&self.root, &item.path) {
                    return Ok(false);
                }
                self.recorded.set(item.path, EntryKind::Dir);
            }
            WalkedKind::File(md) => {
                if md.nlink() > 1 {
                    self.hard_links = true;
                    return Ok(false);
                }
                let digest = match self.digest(&item.path, &md, Some(blobs), true) {
                    Ok(d) => d,
                    // unreadable (the walk repairs it); what the store refuses stands
                    Err(EnvError::Io { .. }) => return Ok(false),
                    Err(e) => return Err(e),
                };
                self.recorded.set(
                    item.path,
                    EntryKind::File {
                        digest,
                        size: md.len(),
                        executable: md.mode() & 0o111 != 0,
                    },
                );
            }
            WalkedKind::Symlink(target) => self.recorded.set(
                item.path,
                EntryKind::Symlink {
                    target: RelPath(target),
                },
            ),
            WalkedKind::Special => self.recorded.set_special(item.path),
        }
        Ok(true)
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
                    skipped.push(path);
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
        self.recorded.replace_all(entries, skipped);
        let info = self.recorded.store(blobs, limit)?;
        self.verified_in = blobs.identity().map(Path::to_path_buf);
        Ok(Some(info))
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
        self.hard_links = false;
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
                    skipped.push(w.path);
                    continue;
                }
                WalkedKind::File(md) => {
                    self.hard_links |= md.nlink() > 1;
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
        self.recorded.replace_all(entries, skipped);
        let info = self.recorded.store(blobs, limit)?;
        self.verified_in = blobs.identity().map(Path::to_path_buf);
        Ok(info)
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
        self.watch = None;
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
        // The tree is now the manifest's, and every file's content is in `blobs`: the next
        // snapshot looks only at what changes after the restore (a resumed episode's
        // first step), as the kernel reports it, or as `find`'s stamps show.
        self.cache.retain(|p, _| target.contains_key(p));
        self.recorded.restored(&manifest, base);
        self.verified_in = blobs.identity().map(Path::to_path_buf);
        if let Some(mut w) = Watch::new() {
            let all = w.add(&self.root, &RelPath(Vec::new()))
                && self.recorded.dirs().all(|d| w.add(&self.root, d));
            if all {
                self.watch = Some(w);
                return Ok(());
            }
        }
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

    /// The manifest of `root` as a tree with no history records it.
    fn fresh_manifest(root: &Path, blobs: &DirBlobStore) -> Manifest {
        let mut fresh = HostTree::new(root.to_path_buf(), None);
        let id = fresh.snapshot(blobs, u64::MAX).unwrap().id;
        Manifest::load(blobs, &id).unwrap()
    }

    /// Each step's snapshot, taken from what the kernel reported changed, is exactly the
    /// tree a full walk records, whatever the step did: edits, new nested folders, removed
    /// and moved folders, a folder moved away and another made at its path, files and
    /// folders replacing each other, links, modes, unreadable entries, a pipe, a second
    /// hard link written through, and a restore followed by more steps.
    #[test]
    fn issue_34_snapshots_from_reported_changes_are_the_walked_tree() {
        // See: issues show 34 (cheap per-step state, exact snapshots)
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let blobs = DirBlobStore::new(dir.path().join("blobs")).unwrap();
        let root = dir.path().join("tree");
        fs::create_dir(&root).unwrap();
        for i in 0..40 {
            write(
                &root,
                &format!("pkg{}/sub{}/m{i}.py", i % 4, i % 3),
                &format!("x = {i}\n"),
            );
        }
        let mut tree = HostTree::new(root.clone(), None);
        let first = tree.snapshot(&blobs, u64::MAX).unwrap();
        assert!(tree.watch.is_some(), "the kernel offers inotify here");
        // 'static, so the steps' closures can share it
        let base: &'static Path = Box::leak(root.clone().into_boxed_path());
        let r = move |p: &str| base.join(p);
        type Step = Box<dyn Fn()>;
        let steps: Vec<(&str, Step)> = vec![
            (
                "edit",
                Box::new(move || fs::write(r("pkg0/sub0/m0.py"), "x = -1\n").unwrap()),
            ),
            (
                "nested new folders",
                Box::new(move || write(&r(""), "a/b/c/d.txt", "deep")),
            ),
            (
                "remove a folder",
                Box::new(move || fs::remove_dir_all(r("pkg1")).unwrap()),
            ),
            (
                "move a folder",
                Box::new(move || fs::rename(r("pkg2"), r("moved")).unwrap()),
            ),
            (
                "write inside the moved folder",
                Box::new(move || {
                    write(&r(""), "moved/sub1/new.py", "n");
                    fs::write(r("moved/sub2/m2.py"), "changed").unwrap();
                }),
            ),
            (
                "move away and make another at the path",
                Box::new(move || {
                    fs::rename(r("pkg3"), r("pkg3-old")).unwrap();
                    write(&r(""), "pkg3/only.py", "o");
                }),
            ),
            (
                "file becomes a folder and back",
                Box::new(move || {
                    fs::remove_file(r("pkg0/sub0/m0.py")).unwrap();
                    write(&r(""), "pkg0/sub0/m0.py/inner", "i");
                    fs::remove_dir_all(r("a/b")).unwrap();
                    fs::write(r("a/b"), "now a file").unwrap();
                }),
            ),
            (
                "links and modes",
                Box::new(move || {
                    symlink("/etc/passwd", r("evil")).unwrap();
                    symlink("../moved", r("a/up")).unwrap();
                    fs::set_permissions(r("moved/sub1/new.py"), fs::Permissions::from_mode(0o755))
                        .unwrap();
                }),
            ),
            (
                "unreadable file and folder",
                Box::new(move || {
                    fs::set_permissions(
                        r("pkg3-old/sub0/m3.py"),
                        fs::Permissions::from_mode(0o000),
                    )
                    .unwrap();
                    fs::set_permissions(r("pkg3-old/sub1"), fs::Permissions::from_mode(0o000))
                        .unwrap();
                }),
            ),
            (
                "a pipe",
                Box::new(move || {
                    let made = std::process::Command::new("mkfifo").arg(r("fifo")).status();
                    assert!(made.unwrap().success());
                }),
            ),
            ("nothing", Box::new(|| {})),
            (
                "a second hard link written through",
                Box::new(move || {
                    fs::hard_link(r("moved/sub1/new.py"), r("hard")).unwrap();
                    fs::write(r("hard"), "through the link").unwrap();
                }),
            ),
            (
                "the link removed, the other path edited",
                Box::new(move || {
                    fs::remove_file(r("hard")).unwrap();
                    fs::write(r("moved/sub1/new.py"), "again").unwrap();
                }),
            ),
        ];
        let mut ids = vec![first.id.clone()];
        for (what, step) in &steps {
            step();
            let info = tree.snapshot(&blobs, u64::MAX).unwrap();
            let got = Manifest::load(&blobs, &info.id).unwrap();
            let want = fresh_manifest(&root, &blobs);
            assert_eq!(got, want, "after {what}");
            assert_eq!((info.files, info.bytes), want.file_stats(), "after {what}");
            assert_eq!(
                info.skipped.contains(&"fifo".to_string()),
                root.join("fifo").exists()
            );
            ids.push(info.id);
        }
        // restored to an earlier step, the tree goes on from there exactly
        tree.restore(&blobs, &ids[3]).unwrap();
        assert_eq!(
            fresh_manifest(&root, &blobs),
            Manifest::load(&blobs, &ids[3]).unwrap()
        );
        write(&root, "after-restore.txt", "r");
        fs::remove_dir_all(root.join("a")).unwrap();
        let info = tree.snapshot(&blobs, u64::MAX).unwrap();
        assert_eq!(
            Manifest::load(&blobs, &info.id).unwrap(),
            fresh_manifest(&root, &blobs)
        );
    }
}
