//! Which paths of a host tree may have changed since the last snapshot, from the kernel
//! (inotify) instead of a walk of the tree.
//!
//! Every folder of the tree is watched for entries created, deleted, moved, written,
//! closed after writing (which covers writes through a memory map: the file is dirty
//! from the close on, and the snapshot reads it after every process has ended) and
//! changed attributes. The events name a folder and an entry; [`Watch::drain`] turns them
//! into the set of paths to look at again. It says it cannot when the kernel's queue
//! overflowed, a folder could not be watched, or an event names a folder it no longer
//! knows: the caller then walks the whole tree and starts a new watch.
//!
//! What inotify cannot see, the caller handles: a write through a second hard link names
//! only that link (so a tree holding a file with several links is walked whole at every
//! snapshot), and folders created inside a new folder before it was watched (a new
//! folder is walked whole when it is seen).

use std::collections::{BTreeSet, HashMap};
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

use crate::snapshot::RelPath;

/// An inotify instance over a tree's folders.
#[derive(Debug)]
pub(crate) struct Watch {
    fd: OwnedFd,
    /// Each watch descriptor's folder, relative to the root (empty: the root).
    dirs: HashMap<i32, RelPath>,
}

/// What [`Watch::drain`] found.
pub(crate) enum Changes {
    /// These paths (and nothing else) may differ from what was recorded.
    Paths(BTreeSet<RelPath>),
    /// The events cannot say: walk the whole tree.
    Unknown,
}

fn mask() -> WatchFlags {
    WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::DONT_FOLLOW
        | WatchFlags::ONLYDIR
}

impl Watch {
    /// A new watch, or `None` when the kernel offers none.
    pub(crate) fn new() -> Option<Watch> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
        Some(Watch {
            fd,
            dirs: HashMap::new(),
        })
    }

    /// Watch the folder `rel` under `root`; `false` when the kernel refuses (out of
    /// watches, or no longer a folder).
    pub(crate) fn add(&mut self, root: &Path, rel: &RelPath) -> bool {
        let path = if rel.0.is_empty() {
            root.to_path_buf()
        } else {
            rel.under(root)
        };
        match inotify::add_watch(&self.fd, &path, mask()) {
            Ok(wd) => {
                self.dirs.insert(wd, rel.clone());
                true
            }
            Err(_) => false,
        }
    }

    /// The paths named by the events since the last call. A folder moved or removed is
    /// named by its parent's event; its own watch is dropped.
    pub(crate) fn drain(&mut self) -> Changes {
        let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 64 * 1024];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        let mut paths = BTreeSet::new();
        let mut unknown = false;
        loop {
            let event = match reader.next() {
                Ok(e) => e,
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return Changes::Unknown,
            };
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                return Changes::Unknown;
            }
            let wd = event.wd();
            if flags.contains(ReadFlags::IGNORED) {
                self.dirs.remove(&wd);
                continue;
            }
            if flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) {
                // the parent's event names it
                continue;
            }
            let Some(dir) = self.dirs.get(&wd) else {
                unknown = true;
                continue;
            };
            let path = match event.file_name() {
                Some(name) => {
                    let name = name.to_bytes();
                    if dir.0.is_empty() {
                        RelPath(name.to_vec())
                    } else {
                        RelPath([dir.0.as_slice(), b"/", name].concat())
                    }
                }
                // an event on the folder itself (its attributes)
                None => dir.clone(),
            };
            if !path.0.is_empty() {
                paths.insert(path);
            }
        }
        if unknown {
            Changes::Unknown
        } else {
            Changes::Paths(paths)
        }
    }

    /// Forget the watches of `rel` and everything under it (it was removed or replaced).
    pub(crate) fn forget_under(&mut self, rel: &RelPath) {
        let prefix = [rel.0.as_slice(), b"/"].concat();
        let gone: Vec<i32> = self
            .dirs
            .iter()
            .filter(|(_, d)| **d == *rel || d.0.starts_with(&prefix))
            .map(|(wd, _)| *wd)
            .collect();
        for wd in gone {
            let _ = inotify::remove_watch(&self.fd, wd);
            self.dirs.remove(&wd);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(c: Changes) -> Vec<String> {
        match c {
            Changes::Paths(p) => p.iter().map(RelPath::display).collect(),
            Changes::Unknown => vec!["UNKNOWN".into()],
        }
    }

    #[test]
    fn events_name_the_entries_that_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("pkg")).unwrap();
        std::fs::write(root.join("pkg/a.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("b.py"), "").unwrap();
        let mut w = Watch::new().unwrap();
        assert!(w.add(root, &RelPath(Vec::new())));
        assert!(w.add(root, &RelPath(b"pkg".to_vec())));
        assert_eq!(paths(w.drain()), Vec::<String>::new());
        std::fs::write(root.join("pkg/a.py"), "x = 2\n").unwrap();
        std::fs::remove_file(root.join("b.py")).unwrap();
        std::fs::create_dir(root.join("new")).unwrap();
        std::fs::write(root.join("new/inside"), "").unwrap();
        assert_eq!(paths(w.drain()), ["b.py", "new", "pkg/a.py"]);
        std::fs::rename(root.join("pkg"), root.join("moved")).unwrap();
        assert_eq!(paths(w.drain()), ["moved", "pkg"]);
    }
}
