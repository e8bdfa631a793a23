//! Which journal a store uses, from the file system its folder is on.
//!
//! SQLite's WAL mode needs shared memory between every process that opens the file
//! (the `-shm` file, mapped), which network file systems do not provide: SQLite
//! documents WAL as unsupported on them, and two hosts writing one store through NFS,
//! Lustre or GPFS could corrupt it. Cluster jobs usually write to such a file system.
//! So before a store is opened for writing its folder's file system type is read
//! (`statfs(2)`), and on a network file system ([`network_filesystem`]: NFS, SMB/CIFS,
//! Lustre, GPFS, 9p, Ceph, AFS, OCFS2, GFS2, BeeGFS, Coda) the store uses SQLite's
//! rollback journal (`journal_mode=DELETE`) instead, which locks the whole file for
//! each commit and works wherever POSIX locks do. The process says so once. Anywhere
//! else, and where the type cannot be read, the store uses WAL.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// File system magic numbers (`f_type` of `statfs(2)`, from Linux's `magic.h` and the
/// file systems' own sources) of network and cluster file systems, with their names.
const NETWORK: &[(u64, &str)] = &[
    (0x6969, "NFS"),
    (0x517b, "SMB"),
    (0xff53_4d42, "CIFS"),
    (0xfe53_4d42, "SMB2"),
    (0x0bd0_0bd0, "Lustre"),
    (0x4750_4653, "GPFS"),
    (0x0102_1997, "9p"),
    (0x00c3_6400, "Ceph"),
    (0x5346_414f, "AFS"),
    (0x7461_636f, "OCFS2"),
    (0x0116_1970, "GFS2"),
    (0x1983_0326, "BeeGFS"),
    (0x7375_7245, "Coda"),
];

/// The name of the network file system whose `statfs` type is `magic`, if it is one.
pub fn network_filesystem(magic: u64) -> Option<&'static str> {
    // f_type is a signed word on some platforms: only its low 32 bits are the magic
    let magic = magic & 0xffff_ffff;
    NETWORK.iter().find(|(m, _)| *m == magic).map(|(_, n)| *n)
}

/// The network file system `dir` is on, if it is on one (none when it cannot be read).
pub fn network_filesystem_of(dir: &Path) -> Option<&'static str> {
    let stat = rustix::fs::statfs(dir).ok()?;
    #[allow(clippy::unnecessary_cast)] // its type differs between platforms
    network_filesystem(stat.f_type as u64)
}

static SAID: AtomicBool = AtomicBool::new(false);

/// The journal mode for a store at `path`: `DELETE` on a network file system (said
/// once per process), `WAL` elsewhere.
pub(crate) fn journal_mode(path: &Path) -> &'static str {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match network_filesystem_of(dir) {
        Some(fs) => {
            if !SAID.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "{} is on {fs}, a network file system, where SQLite's WAL mode is unsupported: the store uses a rollback journal (journal_mode=DELETE), one file lock per commit",
                    dir.display()
                );
            }
            "DELETE"
        }
        None => "WAL",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_33_network_file_systems_are_known_by_their_magic_number() {
        assert_eq!(network_filesystem(0x6969), Some("NFS"));
        assert_eq!(network_filesystem(0x0bd0_0bd0), Some("Lustre"));
        assert_eq!(network_filesystem(0x4750_4653), Some("GPFS"));
        assert_eq!(network_filesystem(0xff53_4d42), Some("CIFS"));
        assert_eq!(network_filesystem(0x0102_1997), Some("9p"));
        // a sign-extended f_type (a negative signed word) is the same magic
        assert_eq!(network_filesystem(0xffff_ffff_ff53_4d42), Some("CIFS"));
        // ext4, xfs, btrfs, tmpfs, overlayfs, FUSE: local (or not known to be shared)
        for local in [
            0xef53,
            0x5846_5342,
            0x9123_683e,
            0x0102_1994,
            0x794c_7630,
            0x6573_5546,
        ] {
            assert_eq!(network_filesystem(local), None, "{local:#x}");
        }
    }

    #[test]
    fn a_store_on_a_local_folder_uses_wal() {
        let dir = tempfile::tempdir().unwrap();
        // the test machine's temporary folder is local
        if network_filesystem_of(dir.path()).is_none() {
            assert_eq!(journal_mode(&dir.path().join("results.sqlite")), "WAL");
        }
    }
}
