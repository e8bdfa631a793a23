//! A tree's listing as GNU `find` prints it (inside a container, or on the host for the
//! bwrap and local backends' trees): every entry's type, inode,
//! size, change time and mode, its path and its link target, NUL-separated (a name may
//! hold any byte but NUL). The Docker backend compares it with what it recorded at the
//! last snapshot and copies out only the files whose inode, size, change time or mode
//! differ: a step that edits one file of a 10,000-file repository streams that file, not
//! the repository. The change time cannot be set back by a process (unlike the
//! modification time), so a file whose stamp is unchanged has its recorded content.

use std::collections::HashMap;

use crate::snapshot::RelPath;

/// `find`'s `-printf` format of a listing.
pub(crate) const FORMAT: &str = "%y %i %s %C@ %m\\0%P\\0%l\\0";

/// `bash -c LIST_SCRIPT baton WORKDIR`: the listing of the working directory.
pub(crate) const LIST_SCRIPT: &str =
    "cd -- \"$1\" && exec find . -mindepth 1 -printf '%y %i %s %C@ %m\\0%P\\0%l\\0'";

/// What identifies an unchanged file without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stamp {
    inode: u64,
    size: u64,
    ctime: String,
    executable: bool,
}

impl Stamp {
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    pub(crate) fn executable(&self) -> bool {
        self.executable
    }
}

/// One listed entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Listed {
    Dir,
    File(Stamp),
    Symlink(Vec<u8>),
    /// A socket, pipe or device: not recorded.
    Special,
}

impl Listed {
    pub(crate) fn size(&self) -> u64 {
        match self {
            Listed::File(s) => s.size,
            _ => 0,
        }
    }
}

/// Parse `find`'s output: records of three NUL-terminated fields.
pub(crate) fn parse(out: &[u8]) -> Result<Vec<(RelPath, Listed)>, String> {
    let mut fields = out.split(|b| *b == 0);
    let mut entries = Vec::new();
    // the split after the final NUL is empty
    while let Some(head) = fields.next().filter(|h| !h.is_empty()) {
        let (Some(path), Some(target)) = (fields.next(), fields.next()) else {
            return Err("a listing record is cut short".into());
        };
        let head = std::str::from_utf8(head).map_err(|_| "a listing record is not text")?;
        let bad = || format!("bad listing record {head:?}");
        let mut parts = head.split(' ');
        let (Some(kind), Some(inode), Some(size), Some(ctime), Some(mode)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(bad());
        };
        let listed = match kind {
            "d" => Listed::Dir,
            "f" => Listed::File(Stamp {
                inode: inode.parse().map_err(|_| bad())?,
                size: size.parse().map_err(|_| bad())?,
                ctime: ctime.to_string(),
                executable: u32::from_str_radix(mode, 8).map_err(|_| bad())? & 0o111 != 0,
            }),
            "l" => Listed::Symlink(target.to_vec()),
            _ => Listed::Special,
        };
        entries.push((RelPath(path.to_vec()), listed));
    }
    Ok(entries)
}

/// One record of the Docker change watcher's answer (`session.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// Nothing is at the path (nor under it).
    Gone(RelPath),
    /// The folder was walked whole: its entries follow, and what they leave out of what
    /// was under it is gone.
    Walked(RelPath),
    /// The entry at the path now.
    Entry(RelPath, Listed),
}

/// Parse the change watcher's records: the listing's, or `G`/`W` ones naming a path.
pub(crate) fn parse_changes(out: &[u8]) -> Result<Vec<Change>, String> {
    let mut fields = out.split(|b| *b == 0);
    let mut changes = Vec::new();
    while let Some(head) = fields.next().filter(|h| !h.is_empty()) {
        let (Some(path), Some(target)) = (fields.next(), fields.next()) else {
            return Err("a change record is cut short".into());
        };
        let path_of = || RelPath(path.to_vec());
        match head.first() {
            Some(b'G') => changes.push(Change::Gone(path_of())),
            Some(b'W') => changes.push(Change::Walked(path_of())),
            _ => {
                let record = [head, b"\0", path, b"\0", target, b"\0"].concat();
                for (p, l) in parse(&record)? {
                    changes.push(Change::Entry(p, l));
                }
            }
        }
    }
    Ok(changes)
}

/// The files recorded at the last snapshot: their stamp and content digest.
#[derive(Debug, Default)]
pub(crate) struct Known {
    files: HashMap<RelPath, (Stamp, String)>,
}

impl Known {
    /// The recorded digest of `path` when its stamp is unchanged.
    pub(crate) fn digest(&self, path: &RelPath, stamp: &Stamp) -> Option<&str> {
        self.files
            .get(path)
            .filter(|(s, _)| s == stamp)
            .map(|(_, d)| d.as_str())
    }

    /// Record `path` as having `digest` at `stamp`.
    pub(crate) fn insert(&mut self, path: RelPath, stamp: Stamp, digest: String) {
        self.files.insert(path, (stamp, digest));
    }

    /// Forget everything (the tree was replaced).
    pub(crate) fn clear(&mut self) {
        self.files.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_own_output_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("pkg")).unwrap();
        std::fs::write(root.join("pkg/a b.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("new\nline"), "").unwrap();
        std::os::unix::fs::symlink("../etc/passwd", root.join("link")).unwrap();
        std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            root.join("run.sh"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let out = std::process::Command::new("bash")
            .args(["-c", LIST_SCRIPT, "baton"])
            .arg(root)
            .output()
            .unwrap();
        assert!(out.status.success());
        let mut listed = parse(&out.stdout).unwrap();
        listed.sort_by(|a, b| a.0.cmp(&b.0));
        let names: Vec<String> = listed.iter().map(|(p, _)| p.display()).collect();
        assert_eq!(names, ["link", "new\nline", "pkg", "pkg/a b.py", "run.sh"]);
        assert_eq!(listed[0].1, Listed::Symlink(b"../etc/passwd".to_vec()));
        assert_eq!(listed[2].1, Listed::Dir);
        let Listed::File(a) = &listed[3].1 else {
            panic!("{:?}", listed[3])
        };
        assert_eq!((a.size, a.executable), (6, false));
        let Listed::File(run) = &listed[4].1 else {
            panic!()
        };
        assert!(run.executable);
        // a rewrite changes the stamp (a clock tick later: file times are coarse)
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("pkg/a b.py"), "x = 2\n").unwrap();
        let again = std::process::Command::new("bash")
            .args(["-c", LIST_SCRIPT, "baton"])
            .arg(root)
            .output()
            .unwrap();
        let again = parse(&again.stdout).unwrap();
        let (_, now) = again
            .iter()
            .find(|(p, _)| p.display() == "pkg/a b.py")
            .unwrap();
        assert_ne!(now, &listed[3].1);
        assert!(parse(b"f 1 2 3 644\0cut").is_err());
    }

    #[test]
    fn change_records_name_gone_and_walked_paths_and_entries() {
        let out = b"G 0 0 0 0\0old\0\0W 0 0 0 0\0pkg\0\0d 5 4096 1.0 755\0pkg\0\0\
f 7 3 2.0 644\0pkg/a\0\0l 8 3 3.0 777\0ln\0a/b\0";
        let got = parse_changes(out).unwrap();
        let p = |s: &str| RelPath(s.as_bytes().to_vec());
        assert_eq!(got.len(), 5);
        assert_eq!(got[0], Change::Gone(p("old")));
        assert_eq!(got[1], Change::Walked(p("pkg")));
        assert_eq!(got[2], Change::Entry(p("pkg"), Listed::Dir));
        assert!(
            matches!(&got[3], Change::Entry(q, Listed::File(s)) if *q == p("pkg/a") && s.size() == 3)
        );
        assert_eq!(
            got[4],
            Change::Entry(p("ln"), Listed::Symlink(b"a/b".to_vec()))
        );
        assert!(parse_changes(b"G 0 0 0 0\0cut").is_err());
    }
}
