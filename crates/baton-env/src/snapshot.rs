//! Content-addressed snapshots of a working tree.
//!
//! A snapshot is a [`Manifest`]: every directory, regular file (sha256 of its content and
//! whether it is executable) and symbolic link (its target, never followed) under the
//! working directory, in a canonical order. File contents live in a [`BlobStore`] under
//! their sha256; the manifest itself is stored there too, and its digest is the
//! [`SnapshotId`]. Two trees with the same content have the same id, unchanged files are
//! stored once however many steps keep them, and a handoff can fork from the snapshot
//! after step *s* by restoring that id into a fresh environment.
//!
//! Not git: a tree may hold its own `.git` (SWE-bench repositories do, agents run `git`),
//! and that folder is snapshotted like any other. Sockets, pipes and device files are
//! skipped (and listed); owners, times and permission bits other than "executable" are not
//! recorded. Bump [`MANIFEST_VERSION`] on any change to the manifest format.
//!
//! # Only what changed, per step
//!
//! An environment stores its first snapshot as a full manifest and keeps it in memory as
//! its base, with the tree as last recorded and its differences from the base, which it
//! updates from what changed (a step's cost follows what the step changed, not the size
//! of the tree); each later snapshot is stored as a delta against that base
//! (version [`DELTA_VERSION`]: the entries added or changed, the paths removed), so a step
//! that edits one file of a 10,000-file repository stores a few hundred bytes, not a
//! manifest of the whole tree. When the differences grow past a quarter of the base, a
//! new full manifest is stored and becomes the base. [`Manifest::load`] resolves a delta
//! against its base (one level, never a chain), so a restore, a resume or a handoff gets
//! exactly the tree that was recorded. The id is the sha256 of what was stored: the same
//! tree recorded as a delta and as a full manifest has two ids.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

use crate::error::EnvError;

/// The manifest format's version, stored in every manifest.
pub const MANIFEST_VERSION: u32 = 1;

/// The version of a manifest stored as its differences from a full one (its base).
pub const DELTA_VERSION: u32 = 2;

/// The id of a snapshot: the sha256 (hex) of its manifest.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SnapshotId(pub String);

impl SnapshotId {
    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SnapshotId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A path relative to the working tree, as bytes (file names need not be UTF-8).
/// Serialized as a string when it is UTF-8 and as `{"hex": "..."}` otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RelPath(pub Vec<u8>);

impl RelPath {
    /// Its components.
    pub fn components(&self) -> impl Iterator<Item = &[u8]> {
        self.0.split(|b| *b == b'/')
    }

    /// The canonical order: by components, so a folder comes right before its contents.
    /// The same as comparing the bytes with `/` taken as the lowest byte (a name holds no
    /// NUL), which is what this does, without splitting either path.
    pub fn canonical_cmp(&self, other: &RelPath) -> std::cmp::Ordering {
        let key = |b: &u8| if *b == b'/' { 0 } else { *b };
        self.0.iter().map(key).cmp(other.0.iter().map(key))
    }

    /// The path for display (lossy).
    pub fn display(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }

    /// Check that it is a plain relative path: no empty, `.` or `..` components, no NUL.
    pub fn validate(&self) -> Result<(), EnvError> {
        let bad = self.0.is_empty()
            || self.0.contains(&0)
            || self
                .components()
                .any(|c| c.is_empty() || c == b"." || c == b"..");
        if bad {
            return Err(EnvError::BadPath {
                path: self.display(),
            });
        }
        Ok(())
    }

    /// The host path of this entry under `root`.
    pub fn under(&self, root: &Path) -> PathBuf {
        use std::os::unix::ffi::OsStrExt;
        root.join(std::ffi::OsStr::from_bytes(&self.0))
    }
}

impl Serialize for RelPath {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match std::str::from_utf8(&self.0) {
            Ok(text) => s.serialize_str(text),
            Err(_) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("hex", &hex::encode(&self.0))?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for RelPath {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Hex { hex: String },
        }
        match Raw::deserialize(d)? {
            Raw::Text(t) => Ok(RelPath(t.into_bytes())),
            Raw::Hex { hex } => hex::decode(hex)
                .map(RelPath)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// One entry of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Where it is, relative to the working directory.
    pub path: RelPath,
    /// What it is.
    #[serde(flatten)]
    pub kind: EntryKind,
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file.
    File {
        /// sha256 of the content (hex), the key in the blob store.
        digest: String,
        /// Size in bytes.
        size: u64,
        /// Whether any execute bit is set (restored as mode 755, else 644).
        executable: bool,
    },
    /// A symbolic link (stored, never followed).
    Symlink {
        /// The link's target, as written.
        target: RelPath,
    },
}

/// Everything in a working tree, in canonical order (by path components, so a directory
/// comes right before its contents).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`] when written.
    pub version: u32,
    /// The entries.
    pub entries: Vec<Entry>,
}

impl Manifest {
    /// A manifest of `entries`, sorted canonically.
    pub fn new(mut entries: Vec<Entry>) -> Self {
        entries.sort_unstable_by(|a, b| a.path.canonical_cmp(&b.path));
        Manifest {
            version: MANIFEST_VERSION,
            entries,
        }
    }

    /// The canonical bytes whose sha256 is the snapshot id.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Store the manifest and return its id.
    pub fn store(&self, blobs: &dyn BlobStore) -> Result<SnapshotId, EnvError> {
        let bytes = self.to_bytes();
        let blob = blobs.put(&mut bytes.as_slice())?;
        Ok(SnapshotId(blob.digest))
    }

    /// Store the manifest as a delta against `base` when the differences are small,
    /// otherwise in full, which then becomes the base (see the module docs). The
    /// environments keep the recorded tree between snapshots and store from its
    /// differences alone ([`Recorded`](crate::recorded)); this whole-tree comparison is
    /// what the tests hold that to.
    #[cfg(test)]
    pub(crate) fn store_against(
        &self,
        base: &mut Option<Base>,
        blobs: &dyn BlobStore,
    ) -> Result<SnapshotId, EnvError> {
        if let Some(b) = base.as_ref().filter(|b| blobs.contains(b.id.as_str())) {
            let (entries, removed) = differences(&b.manifest, self);
            if entries.is_empty() && removed.is_empty() {
                return Ok(b.id.clone());
            }
            if (entries.len() + removed.len()) * 4 <= b.manifest.entries.len() + 64 {
                let delta = Delta {
                    version: DELTA_VERSION,
                    base: b.id.clone(),
                    entries,
                    removed,
                };
                let bytes = serde_json::to_vec(&delta).unwrap_or_default();
                let blob = blobs.put(&mut bytes.as_slice())?;
                return Ok(SnapshotId(blob.digest));
            }
        }
        let id = self.store(blobs)?;
        *base = Some(Base {
            id: id.clone(),
            manifest: self.clone(),
        });
        Ok(id)
    }

    /// Load the manifest of `id` (a delta resolved against its base), checking that it is
    /// well formed.
    pub fn load(blobs: &dyn BlobStore, id: &SnapshotId) -> Result<Self, EnvError> {
        Self::load_with_base(blobs, id).map(|(m, _)| m)
    }

    /// Load the manifest of `id`, and the full manifest it was stored against (itself
    /// when it is full), which an environment restored to it keeps as its base.
    pub(crate) fn load_with_base(
        blobs: &dyn BlobStore,
        id: &SnapshotId,
    ) -> Result<(Self, Base), EnvError> {
        let bad = |message: String| EnvError::BadSnapshot {
            id: id.0.clone(),
            message,
        };
        let bytes = Self::stored_bytes(blobs, id)?;
        #[derive(Deserialize)]
        struct Probe {
            version: u32,
        }
        let probe: Probe =
            serde_json::from_slice(&bytes).map_err(|e| bad(format!("manifest: {e}")))?;
        if probe.version == DELTA_VERSION {
            let delta: Delta =
                serde_json::from_slice(&bytes).map_err(|e| bad(format!("delta: {e}")))?;
            let full = Self::parse_full(blobs, &delta.base)?;
            let manifest = full.apply(&delta)?;
            let base = Base {
                id: delta.base,
                manifest: full,
            };
            return Ok((manifest, base));
        }
        let manifest = Self::parse_full(blobs, id)?;
        let base = Base {
            id: id.clone(),
            manifest: manifest.clone(),
        };
        Ok((manifest, base))
    }

    fn stored_bytes(blobs: &dyn BlobStore, id: &SnapshotId) -> Result<Vec<u8>, EnvError> {
        let bytes = blobs.get_bytes(id.as_str())?;
        if sha256_hex(&bytes) != id.0 {
            return Err(EnvError::BadSnapshot {
                id: id.0.clone(),
                message: "the stored manifest does not match its digest".into(),
            });
        }
        Ok(bytes)
    }

    /// A full manifest (version [`MANIFEST_VERSION`], never a delta).
    fn parse_full(blobs: &dyn BlobStore, id: &SnapshotId) -> Result<Self, EnvError> {
        let bad = |message: String| EnvError::BadSnapshot {
            id: id.0.clone(),
            message,
        };
        let bytes = Self::stored_bytes(blobs, id)?;
        let manifest: Manifest =
            serde_json::from_slice(&bytes).map_err(|e| bad(format!("manifest: {e}")))?;
        if manifest.version != MANIFEST_VERSION {
            return Err(bad(format!(
                "manifest version {} where a full manifest (version {MANIFEST_VERSION}) is needed",
                manifest.version
            )));
        }
        for e in &manifest.entries {
            e.path.validate()?;
        }
        Ok(manifest)
    }

    /// This (full) manifest with `delta` applied.
    fn apply(&self, delta: &Delta) -> Result<Manifest, EnvError> {
        let mut map: std::collections::BTreeMap<&RelPath, &EntryKind> =
            self.entries.iter().map(|e| (&e.path, &e.kind)).collect();
        for p in &delta.removed {
            map.remove(p);
        }
        for e in &delta.entries {
            e.path.validate()?;
            map.insert(&e.path, &e.kind);
        }
        Ok(Manifest::new(
            map.into_iter()
                .map(|(path, kind)| Entry {
                    path: path.clone(),
                    kind: kind.clone(),
                })
                .collect(),
        ))
    }

    /// Fail with [`EnvError::MissingBlob`] unless every file's blob is in `blobs` (checked
    /// before a restore touches anything).
    pub fn check_blobs(&self, blobs: &dyn BlobStore) -> Result<(), EnvError> {
        for e in &self.entries {
            if let EntryKind::File { digest, .. } = &e.kind
                && !blobs.contains(digest)
            {
                return Err(EnvError::MissingBlob {
                    digest: digest.clone(),
                    store: PathBuf::from("(the snapshot store)"),
                });
            }
        }
        Ok(())
    }

    /// Files, and their total size.
    pub fn file_stats(&self) -> (usize, u64) {
        self.entries.iter().fold((0, 0), |(n, b), e| match e.kind {
            EntryKind::File { size, .. } => (n + 1, b + size),
            _ => (n, b),
        })
    }
}

/// A manifest stored as the differences from its base (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Delta {
    /// [`DELTA_VERSION`].
    pub(crate) version: u32,
    /// The full manifest it is stored against.
    pub(crate) base: SnapshotId,
    /// Entries added or changed.
    pub(crate) entries: Vec<Entry>,
    /// Paths the base has and this one does not.
    pub(crate) removed: Vec<RelPath>,
}

/// A full manifest an environment stores its next snapshots against.
#[derive(Debug, Clone)]
pub(crate) struct Base {
    pub(crate) id: SnapshotId,
    pub(crate) manifest: Manifest,
}

/// What `new` adds or changes relative to `old`, and what it no longer has (both in
/// canonical order, walked side by side).
pub(crate) fn differences(old: &Manifest, new: &Manifest) -> (Vec<Entry>, Vec<RelPath>) {
    use std::cmp::Ordering;
    let (mut a, mut b) = (old.entries.iter().peekable(), new.entries.iter().peekable());
    let (mut changed, mut removed) = (Vec::new(), Vec::new());
    loop {
        match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(x), None) => {
                removed.push(x.path.clone());
                a.next();
            }
            (None, Some(y)) => {
                changed.push((*y).clone());
                b.next();
            }
            (Some(x), Some(y)) => match x.path.canonical_cmp(&y.path) {
                Ordering::Less => {
                    removed.push(x.path.clone());
                    a.next();
                }
                Ordering::Greater => {
                    changed.push((*y).clone());
                    b.next();
                }
                Ordering::Equal => {
                    if x.kind != y.kind {
                        changed.push((*y).clone());
                    }
                    a.next();
                    b.next();
                }
            },
        }
    }
    (changed, removed)
}

/// What [`Environment::snapshot`](crate::Environment::snapshot) reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    /// The id to restore.
    pub id: SnapshotId,
    /// Regular files in the tree.
    pub files: usize,
    /// Their total size.
    pub bytes: u64,
    /// Entries that were not recorded (sockets, pipes, devices), for the record.
    pub skipped: Vec<String>,
}

/// A stored blob's digest and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// sha256 hex.
    pub digest: String,
    /// Bytes.
    pub size: u64,
    /// Whether this put stored it (false: a blob with that digest was there already).
    pub fresh: bool,
}

/// Where snapshot contents are kept, keyed by sha256. [`DirBlobStore`] is the file-system
/// implementation; a run's store can provide another.
pub trait BlobStore: Send + Sync {
    /// Store what `data` yields and return its digest (a no-op if already present).
    fn put(&self, data: &mut dyn Read) -> Result<Blob, EnvError>;
    /// Open a stored blob.
    fn open(&self, digest: &str) -> Result<Box<dyn Read + Send>, EnvError>;
    /// Whether a blob is present.
    fn contains(&self, digest: &str) -> bool;

    /// Where the blobs are, when that identifies the store: an environment that stored a
    /// file's content in this store once trusts it is still there (blobs are never
    /// deleted) instead of asking [`contains`](BlobStore::contains) for every unchanged
    /// file at every step. `None` (the default): always ask.
    fn identity(&self) -> Option<&Path> {
        None
    }

    /// A stored blob's bytes.
    fn get_bytes(&self, digest: &str) -> Result<Vec<u8>, EnvError> {
        let mut out = Vec::new();
        self.open(digest)?
            .read_to_end(&mut out)
            .map_err(|e| EnvError::io(digest, "read blob", e))?;
        Ok(out)
    }
}

/// Blobs as files `<root>/<first two hex digits>/<rest>`, written atomically (a temporary
/// file renamed into place), so a crash never leaves a partial blob under its digest.
#[derive(Debug, Clone)]
pub struct DirBlobStore {
    root: PathBuf,
}

impl DirBlobStore {
    /// A store rooted at `root` (created if missing).
    pub fn new(root: impl Into<PathBuf>) -> Result<Self, EnvError> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|e| EnvError::io(&root, "create blob store", e))?;
        Ok(DirBlobStore { root })
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, digest: &str) -> Result<PathBuf, EnvError> {
        let valid = digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit());
        if !valid {
            return Err(EnvError::BadPath {
                path: digest.to_string(),
            });
        }
        Ok(self.root.join(&digest[..2]).join(&digest[2..]))
    }
}

/// Sources up to this size are hashed in memory before anything is written: most files of
/// a working tree are already stored (a snapshot re-reads every file it has no cached
/// digest for), and a temporary file created and unlinked for each of them costs an inode
/// allocation and release, which dominates a snapshot on a disk file system. Larger
/// sources stream through a temporary file, so memory stays bounded.
const IN_MEMORY_BYTES: usize = 1 << 20;

impl DirBlobStore {
    /// Store `bytes` under `digest` unless already present: written to a temporary file in
    /// the root and renamed into place, so the blob appears whole or not at all.
    fn put_bytes(&self, digest: &str, bytes: &[u8]) -> Result<bool, EnvError> {
        let path = self.path_of(digest)?;
        if path.exists() {
            return Ok(false);
        }
        let mut tmp = self.temp()?;
        tmp.write_all(bytes)
            .map_err(|e| EnvError::io(tmp.path(), "write blob", e))?;
        self.persist(tmp, &path)?;
        Ok(true)
    }

    fn temp(&self) -> Result<tempfile::NamedTempFile, EnvError> {
        tempfile::NamedTempFile::new_in(&self.root)
            .map_err(|e| EnvError::io(&self.root, "create blob", e))
    }

    /// Rename a fully written temporary file to `path`, creating its folder first.
    fn persist(&self, tmp: tempfile::NamedTempFile, path: &Path) -> Result<(), EnvError> {
        let dir = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(dir).map_err(|e| EnvError::io(dir, "create blob folder", e))?;
        tmp.persist(path)
            .map_err(|e| EnvError::io(path, "store blob", e.error))?;
        Ok(())
    }
}

/// Read from `data` until `buf` holds `limit` bytes or the source ends; `true` at its end.
fn fill(data: &mut dyn Read, buf: &mut Vec<u8>, limit: usize) -> std::io::Result<bool> {
    let mut chunk = [0u8; 64 * 1024];
    while buf.len() < limit {
        let want = chunk.len().min(limit - buf.len());
        match data.read(&mut chunk[..want]) {
            Ok(0) => return Ok(true),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

impl BlobStore for DirBlobStore {
    fn put(&self, data: &mut dyn Read) -> Result<Blob, EnvError> {
        let read_err = |e| EnvError::io(&self.root, "read blob source", e);
        let mut head = Vec::new();
        if fill(data, &mut head, IN_MEMORY_BYTES).map_err(read_err)? {
            let digest = sha256_hex(&head);
            let fresh = self.put_bytes(&digest, &head)?;
            return Ok(Blob {
                digest,
                size: head.len() as u64,
                fresh,
            });
        }
        // Too large to hold: hash while streaming into a temporary file, which is kept
        // only when no blob has that digest yet.
        let mut tmp = self.temp()?;
        let mut hasher = Sha256::new();
        hasher.update(&head);
        tmp.write_all(&head)
            .map_err(|e| EnvError::io(tmp.path(), "write blob", e))?;
        let mut size = head.len() as u64;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match data.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_err(e)),
            };
            hasher.update(&buf[..n]);
            tmp.write_all(&buf[..n])
                .map_err(|e| EnvError::io(tmp.path(), "write blob", e))?;
            size += n as u64;
        }
        let digest = hex::encode(hasher.finalize());
        let path = self.path_of(&digest)?;
        let fresh = !path.exists();
        if fresh {
            self.persist(tmp, &path)?;
        }
        Ok(Blob {
            digest,
            size,
            fresh,
        })
    }

    fn open(&self, digest: &str) -> Result<Box<dyn Read + Send>, EnvError> {
        let path = self.path_of(digest)?;
        match File::open(&path) {
            Ok(f) => Ok(Box::new(f)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(EnvError::MissingBlob {
                digest: digest.to_string(),
                store: self.root.clone(),
            }),
            Err(e) => Err(EnvError::io(path, "open blob", e)),
        }
    }

    fn contains(&self, digest: &str) -> bool {
        self.path_of(digest).is_ok_and(|p| p.exists())
    }

    fn identity(&self) -> Option<&Path> {
        Some(&self.root)
    }
}

pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_round_trip_and_dedupe() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirBlobStore::new(dir.path().join("blobs")).unwrap();
        let a = store.put(&mut b"hello".as_slice()).unwrap();
        let b = store.put(&mut b"hello".as_slice()).unwrap();
        assert_eq!((&a.digest, a.size), (&b.digest, b.size));
        assert!(a.fresh && !b.fresh, "the second put stored nothing");
        assert_eq!(a.size, 5);
        assert_eq!(store.get_bytes(&a.digest).unwrap(), b"hello");
        assert!(store.contains(&a.digest));
        let missing = "0".repeat(64);
        assert!(matches!(
            store.open(&missing),
            Err(EnvError::MissingBlob { .. })
        ));
        assert!(matches!(store.open("../x"), Err(EnvError::BadPath { .. })));
    }

    /// Every file under `root`, recursively.
    fn files_under(root: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(root).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
        out.sort();
        out
    }

    #[test]
    fn a_put_of_a_stored_blob_creates_no_file() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let store = DirBlobStore::new(dir.path().join("blobs")).unwrap();
        let small = store.put(&mut b"print(1)\n".as_slice()).unwrap();
        let path = store.path_of(&small.digest).unwrap();
        let ino = std::fs::metadata(&path).unwrap().ino();
        let before = files_under(store.root());
        assert_eq!(
            before,
            std::slice::from_ref(&path),
            "one blob, no temporary file left"
        );

        let again = store.put(&mut b"print(1)\n".as_slice()).unwrap();
        assert_eq!(
            again,
            Blob {
                fresh: false,
                ..small.clone()
            }
        );
        assert_eq!(files_under(store.root()), before);
        assert_eq!(
            std::fs::metadata(&path).unwrap().ino(),
            ino,
            "the stored blob is not replaced"
        );

        // Past the in-memory size the source streams through a temporary file, which is
        // dropped when the blob already exists.
        let big: Vec<u8> = (0..IN_MEMORY_BYTES * 2 + 7)
            .map(|i| (i % 251) as u8)
            .collect();
        let b1 = store.put(&mut big.as_slice()).unwrap();
        assert_eq!(b1.size, big.len() as u64);
        assert_eq!(b1.digest, sha256_hex(&big));
        let with_big = files_under(store.root());
        assert_eq!(with_big.len(), 2);
        assert_eq!(
            store.put(&mut big.as_slice()).unwrap(),
            Blob {
                fresh: false,
                ..b1.clone()
            }
        );
        assert_eq!(files_under(store.root()), with_big);
        assert_eq!(store.get_bytes(&b1.digest).unwrap(), big);

        // A source of exactly the in-memory size takes the streaming path (its end is not
        // seen before the buffer is full) and is stored all the same.
        let edge = vec![b'x'; IN_MEMORY_BYTES];
        let e = store.put(&mut edge.as_slice()).unwrap();
        assert_eq!(e.digest, sha256_hex(&edge));
        assert_eq!(store.get_bytes(&e.digest).unwrap(), edge);
        assert_eq!(files_under(store.root()).len(), 3);
    }

    #[test]
    fn manifests_are_canonical_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirBlobStore::new(dir.path()).unwrap();
        let e = |p: &str| Entry {
            path: RelPath(p.as_bytes().to_vec()),
            kind: EntryKind::Dir,
        };
        let m1 = Manifest::new(vec![e("a-b"), e("a/x"), e("a")]);
        let m2 = Manifest::new(vec![e("a/x"), e("a"), e("a-b")]);
        assert_eq!(m1, m2);
        let order: Vec<String> = m1.entries.iter().map(|e| e.path.display()).collect();
        assert_eq!(
            order,
            ["a", "a/x", "a-b"],
            "a folder comes right before its contents"
        );
        let id = m1.store(&store).unwrap();
        assert_eq!(Manifest::load(&store, &id).unwrap(), m1);

        let evil = Manifest::new(vec![e("../etc")]);
        let id = evil.store(&store).unwrap();
        assert!(matches!(
            Manifest::load(&store, &id),
            Err(EnvError::BadPath { .. })
        ));
    }

    #[test]
    fn deltas_store_only_what_changed_and_load_as_the_full_tree() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirBlobStore::new(dir.path()).unwrap();
        let file = |p: &str, d: &str| Entry {
            path: RelPath(p.as_bytes().to_vec()),
            kind: EntryKind::File {
                digest: d.repeat(64),
                size: 1,
                executable: false,
            },
        };
        let many: Vec<Entry> = (0..1000).map(|i| file(&format!("f{i:04}"), "a")).collect();
        let first = Manifest::new(many.clone());
        let mut base = None;
        let id1 = first.store_against(&mut base, &store).unwrap();
        assert_eq!(
            id1,
            first.store(&store).unwrap(),
            "the first is stored in full"
        );
        let mut next = many.clone();
        next[7] = file("f0007", "b");
        next.remove(9);
        next.push(file("new", "c"));
        let second = Manifest::new(next);
        let id2 = second.store_against(&mut base, &store).unwrap();
        let stored = store.get_bytes(id2.as_str()).unwrap();
        assert!(stored.len() < 1000, "a delta of {} bytes", stored.len());
        assert_eq!(base.as_ref().unwrap().id, id1, "the base stays");
        assert_eq!(Manifest::load(&store, &id2).unwrap(), second);
        let (m, b) = Manifest::load_with_base(&store, &id2).unwrap();
        assert_eq!((m, b.id), (second, id1.clone()));
        // differences past a quarter of the base: stored in full, the new base
        let third = Manifest::new((0..1000).map(|i| file(&format!("g{i}"), "d")).collect());
        let id3 = third.store_against(&mut base, &store).unwrap();
        assert_eq!(base.as_ref().unwrap().id, id3);
        assert_eq!(Manifest::load(&store, &id3).unwrap(), third);
        // a delta is never a base
        let chained = Delta {
            version: DELTA_VERSION,
            base: id2.clone(),
            entries: Vec::new(),
            removed: Vec::new(),
        };
        let bytes = serde_json::to_vec(&chained).unwrap();
        let id = SnapshotId(store.put(&mut bytes.as_slice()).unwrap().digest);
        assert!(matches!(
            Manifest::load(&store, &id),
            Err(EnvError::BadSnapshot { .. })
        ));
    }

    #[test]
    fn the_canonical_order_is_by_components() {
        let mut paths: Vec<RelPath> = ["a-b", "a/x", "a", "a/x/y", "a.b", "a/ x", "ab", "a/x-y"]
            .iter()
            .map(|p| RelPath(p.as_bytes().to_vec()))
            .collect();
        let mut by_components = paths.clone();
        by_components.sort_by(|a, b| a.components().cmp(b.components()));
        paths.sort_by(|a, b| a.canonical_cmp(b));
        assert_eq!(paths, by_components);
        assert_eq!(paths[0].display(), "a");
    }

    #[test]
    fn non_utf8_names_survive_serialization() {
        let p = RelPath(vec![b'a', 0xff, b'b']);
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, r#"{"hex":"61ff62"}"#);
        assert_eq!(serde_json::from_str::<RelPath>(&json).unwrap(), p);
    }
}
