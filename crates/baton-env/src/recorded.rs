//! The tree as an environment last recorded it, kept between snapshots and updated by
//! what changed, so a step that edits one file of a 10,000-file repository costs baton
//! work in proportion to that file, not to the repository.
//!
//! [`Recorded`] holds every entry of the tree (in canonical order), the full manifest its
//! snapshots are stored against ([`Base`]), and the entries that differ from that base.
//! A backend that knows which paths may have changed ([`set`](Recorded::set),
//! [`remove`](Recorded::remove)) stores the next snapshot from those differences alone;
//! one that does not ([`replace_all`](Recorded::replace_all)) compares the whole tree
//! once. Either way what is stored is byte for byte what
//! [`Manifest::store_against`] stores for the same tree: the same full manifests, the
//! same deltas, the same ids.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::error::EnvError;
use crate::snapshot::{
    Base, BlobStore, DELTA_VERSION, Delta, Entry, EntryKind, Manifest, RelPath, SnapshotId,
    SnapshotInfo, differences,
};

/// A path ordered canonically (by components: a folder right before its contents).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Canon(pub(crate) RelPath);

impl Ord for Canon {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.canonical_cmp(&other.0)
    }
}

impl PartialOrd for Canon {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// The recorded tree; see the module docs.
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    entries: BTreeMap<Canon, EntryKind>,
    /// Sockets, pipes and devices: not recorded, listed in [`SnapshotInfo::skipped`].
    skipped: BTreeMap<Canon, ()>,
    base: Option<Base>,
    /// Paths whose entry differs from the base's: the new entry, or `None` when the base
    /// has the path and the tree does not.
    diff: BTreeMap<Canon, Option<EntryKind>>,
    files: usize,
    bytes: u64,
}

impl Recorded {
    /// The base snapshots are stored against, if any.
    #[cfg(test)]
    pub(crate) fn base(&self) -> Option<&Base> {
        self.base.as_ref()
    }

    /// The recorded entry at `path`.
    pub(crate) fn get(&self, path: &RelPath) -> Option<&EntryKind> {
        self.entries.get(&Canon(path.clone()))
    }

    /// Every recorded folder.
    pub(crate) fn dirs(&self) -> impl Iterator<Item = &RelPath> {
        self.entries
            .iter()
            .filter(|(_, k)| matches!(k, EntryKind::Dir))
            .map(|(p, _)| &p.0)
    }

    /// Make the recorded tree exactly `entries` (and `skipped`), compared with the base
    /// once.
    pub(crate) fn replace_all(&mut self, entries: Vec<Entry>, skipped: Vec<RelPath>) {
        self.entries = entries
            .into_iter()
            .map(|e| (Canon(e.path), e.kind))
            .collect();
        self.skipped = skipped.into_iter().map(|p| (Canon(p), ())).collect();
        self.recount();
        self.rediff();
    }

    /// After a restore: the tree is `manifest`, stored against `base`.
    pub(crate) fn restored(&mut self, manifest: &Manifest, base: Base) {
        self.base = Some(base);
        self.replace_all(manifest.entries.clone(), Vec::new());
    }

    fn recount(&mut self) {
        let (mut files, mut bytes) = (0, 0);
        for k in self.entries.values() {
            if let EntryKind::File { size, .. } = k {
                files += 1;
                bytes += size;
            }
        }
        (self.files, self.bytes) = (files, bytes);
    }

    fn rediff(&mut self) {
        self.diff.clear();
        let Some(base) = &self.base else {
            return;
        };
        let now = self.manifest();
        let (changed, removed) = differences(&base.manifest, &now);
        for e in changed {
            self.diff.insert(Canon(e.path), Some(e.kind));
        }
        for p in removed {
            self.diff.insert(Canon(p), None);
        }
    }

    /// Record `kind` at `path` (which may be new).
    pub(crate) fn set(&mut self, path: RelPath, kind: EntryKind) {
        let key = Canon(path);
        self.skipped.remove(&key);
        if let Some(EntryKind::File { size, .. }) = self.entries.get(&key) {
            self.files -= 1;
            self.bytes -= size;
        }
        if let EntryKind::File { size, .. } = &kind {
            self.files += 1;
            self.bytes += size;
        }
        self.note(&key, Some(&kind));
        self.entries.insert(key, kind);
    }

    /// Record a socket, pipe or device at `path` (no entry, listed as skipped).
    pub(crate) fn set_special(&mut self, path: RelPath) {
        self.remove(&path);
        self.skipped.insert(Canon(path), ());
    }

    /// Record that nothing is at `path` (nor under it).
    pub(crate) fn remove(&mut self, path: &RelPath) {
        self.remove_under(path);
        let key = Canon(path.clone());
        self.skipped.remove(&key);
        if let Some(old) = self.entries.remove(&key) {
            if let EntryKind::File { size, .. } = old {
                self.files -= 1;
                self.bytes -= size;
            }
            self.note(&key, None);
        }
    }

    /// Record that nothing is under the folder `path` (whatever is at `path` itself stays).
    pub(crate) fn remove_under(&mut self, path: &RelPath) {
        let prefix = [path.0.as_slice(), b"/"].concat();
        let under = |k: &Canon| k.0.0.starts_with(&prefix);
        let start = Bound::Excluded(Canon(path.clone()));
        let gone: Vec<Canon> = self
            .entries
            .range((start.clone(), Bound::Unbounded))
            .map(|(k, _)| k)
            .take_while(|k| under(k))
            .cloned()
            .collect();
        let specials: Vec<Canon> = self
            .skipped
            .range((start, Bound::Unbounded))
            .map(|(k, _)| k)
            .take_while(|k| under(k))
            .cloned()
            .collect();
        for k in specials {
            self.skipped.remove(&k);
        }
        for k in gone {
            if let Some(EntryKind::File { size, .. }) = self.entries.remove(&k) {
                self.files -= 1;
                self.bytes -= size;
            }
            self.note(&k, None);
        }
    }

    /// Keep the differences from the base current for `key`, now `kind`.
    fn note(&mut self, key: &Canon, kind: Option<&EntryKind>) {
        let Some(base) = &self.base else {
            return;
        };
        let entries = &base.manifest.entries;
        let before = entries
            .binary_search_by(|e| e.path.canonical_cmp(&key.0))
            .ok()
            .map(|i| &entries[i].kind);
        if before == kind {
            self.diff.remove(key);
        } else {
            self.diff.insert(key.clone(), kind.cloned());
        }
    }

    /// The recorded tree as a full manifest.
    pub(crate) fn manifest(&self) -> Manifest {
        Manifest {
            version: crate::snapshot::MANIFEST_VERSION,
            entries: self
                .entries
                .iter()
                .map(|(p, k)| Entry {
                    path: p.0.clone(),
                    kind: k.clone(),
                })
                .collect(),
        }
    }

    /// Store the recorded tree in `blobs` (every file's content is there already) as
    /// [`Manifest::store_against`] would: the base's id when nothing differs, a delta
    /// when little does, else a full manifest that becomes the base. `limit`: the most
    /// bytes of files a snapshot may hold.
    pub(crate) fn store(
        &mut self,
        blobs: &dyn BlobStore,
        limit: u64,
    ) -> Result<SnapshotInfo, EnvError> {
        if self.bytes > limit {
            return Err(EnvError::TreeTooLarge { limit });
        }
        let skipped = self.skipped.keys().map(|k| k.0.display()).collect();
        let (files, bytes) = (self.files, self.bytes);
        let info = |id| SnapshotInfo {
            id,
            files,
            bytes,
            skipped,
        };
        if let Some(b) = self.base.as_ref().filter(|b| blobs.contains(b.id.as_str())) {
            if self.diff.is_empty() {
                return Ok(info(b.id.clone()));
            }
            if self.diff.len() * 4 <= b.manifest.entries.len() + 64 {
                let mut delta = Delta {
                    version: DELTA_VERSION,
                    base: b.id.clone(),
                    entries: Vec::new(),
                    removed: Vec::new(),
                };
                for (p, k) in &self.diff {
                    match k {
                        Some(kind) => delta.entries.push(Entry {
                            path: p.0.clone(),
                            kind: kind.clone(),
                        }),
                        None => delta.removed.push(p.0.clone()),
                    }
                }
                let bytes = serde_json::to_vec(&delta).unwrap_or_default();
                let blob = blobs.put(&mut bytes.as_slice())?;
                return Ok(info(SnapshotId(blob.digest)));
            }
        }
        let manifest = self.manifest();
        let id = manifest.store(blobs)?;
        self.base = Some(Base {
            id: id.clone(),
            manifest,
        });
        self.diff.clear();
        Ok(info(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::DirBlobStore;

    fn file(d: &str) -> EntryKind {
        EntryKind::File {
            digest: d.repeat(64),
            size: 3,
            executable: false,
        }
    }

    fn p(s: &str) -> RelPath {
        RelPath(s.as_bytes().to_vec())
    }

    /// Whatever way the recorded tree got there, what it stores is what
    /// `Manifest::store_against` stores for the same tree.
    #[test]
    fn incremental_updates_store_what_a_full_comparison_stores() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirBlobStore::new(dir.path()).unwrap();
        let mut entries = vec![Entry {
            path: p("pkg"),
            kind: EntryKind::Dir,
        }];
        for i in 0..300 {
            entries.push(Entry {
                path: p(&format!("pkg/f{i:03}")),
                kind: file("a"),
            });
        }
        entries.push(Entry {
            path: p("pkg-b"),
            kind: file("b"),
        });
        let mut rec = Recorded::default();
        let mut base = None;
        let m0 = Manifest::new(entries.clone());
        rec.replace_all(entries, Vec::new());
        let s0 = rec.store(&store, u64::MAX).unwrap();
        assert_eq!(s0.id, m0.store_against(&mut base, &store).unwrap());
        assert_eq!((s0.files, s0.bytes), (301, 903));

        // an edit, a new folder with a file, a removed file
        rec.set(p("pkg/f007"), file("c"));
        rec.set(p("new"), EntryKind::Dir);
        rec.set(p("new/x"), file("d"));
        rec.remove(&p("pkg/f009"));
        let s1 = rec.store(&store, u64::MAX).unwrap();
        let m1 = rec.manifest();
        assert_eq!(s1.id, m1.store_against(&mut base, &store).unwrap());
        assert_eq!(Manifest::load(&store, &s1.id).unwrap(), m1);
        assert!(store.get_bytes(s1.id.as_str()).unwrap().len() < 1000);

        // back to the base: its own id
        rec.set(p("pkg/f007"), file("a"));
        rec.remove(&p("new"));
        rec.set(p("pkg/f009"), file("a"));
        assert_eq!(rec.store(&store, u64::MAX).unwrap().id, s0.id);

        // a removed folder takes its contents; past a quarter a full manifest, the new base
        rec.remove(&p("pkg"));
        let s2 = rec.store(&store, u64::MAX).unwrap();
        let m2 = rec.manifest();
        assert_eq!(m2.entries.len(), 1, "{:?}", m2.entries);
        assert_eq!(s2.id, m2.store_against(&mut base, &store).unwrap());
        assert_eq!(rec.base().unwrap().id, s2.id);
        assert!(matches!(
            rec.store(&store, 2),
            Err(EnvError::TreeTooLarge { limit: 2 })
        ));
    }
}
