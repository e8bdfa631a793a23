//! A blob store with a budget: what one episode's snapshots may add to the store.
//!
//! [`CappedBlobs`] wraps the run's store and counts the bytes of the blobs it newly
//! stores (content already there, from any episode, is free: snapshots are deduplicated
//! by content). A source is read through a limit of what is left, so a file that would
//! pass the cap fails with [`EnvError::SnapshotCap`] before it is stored: the store never
//! grows past the cap. A file whose content is already stored but is larger than what is
//! left also fails (its digest is known only once it has been read).

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::EnvError;
use crate::snapshot::{Blob, BlobStore};

/// See the module docs.
pub struct CappedBlobs<'a> {
    inner: &'a dyn BlobStore,
    cap: u64,
    written: AtomicU64,
}

impl<'a> CappedBlobs<'a> {
    /// `inner` with `cap` new bytes in all, `written` of them used already.
    pub fn new(inner: &'a dyn BlobStore, cap: u64, written: u64) -> Self {
        CappedBlobs {
            inner,
            cap,
            written: AtomicU64::new(written),
        }
    }

    /// New bytes stored so far (those before included).
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::SeqCst)
    }
}

/// Reads at most `left` bytes; one more is an error that marks `over`.
struct Limited<'r> {
    data: &'r mut dyn Read,
    left: u64,
    over: bool,
}

impl Read for Limited<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            let mut one = [0u8; 1];
            return match self.data.read(&mut one)? {
                0 => Ok(0),
                _ => {
                    self.over = true;
                    Err(std::io::Error::other("the snapshot cap is reached"))
                }
            };
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.data.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

impl BlobStore for CappedBlobs<'_> {
    fn put(&self, data: &mut dyn Read) -> Result<Blob, EnvError> {
        let mut limited = Limited {
            data,
            left: self.cap.saturating_sub(self.written()),
            over: false,
        };
        match self.inner.put(&mut limited) {
            Ok(blob) => {
                if blob.fresh {
                    self.written.fetch_add(blob.size, Ordering::SeqCst);
                }
                Ok(blob)
            }
            Err(_) if limited.over => Err(EnvError::SnapshotCap { cap: self.cap }),
            Err(e) => Err(e),
        }
    }

    fn open(&self, digest: &str) -> Result<Box<dyn Read + Send>, EnvError> {
        self.inner.open(digest)
    }

    fn contains(&self, digest: &str) -> bool {
        self.inner.contains(digest)
    }

    fn identity(&self) -> Option<&std::path::Path> {
        self.inner.identity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::DirBlobStore;

    #[test]
    fn only_new_content_counts_and_nothing_past_the_cap_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let store = DirBlobStore::new(dir.path()).unwrap();
        let capped = CappedBlobs::new(&store, 10, 0);
        assert!(capped.put(&mut &b"abc"[..]).unwrap().fresh);
        assert_eq!(capped.written(), 3);
        // the same content again is free
        assert!(!capped.put(&mut &b"abc"[..]).unwrap().fresh);
        assert_eq!(capped.written(), 3);
        assert!(capped.put(&mut &b"uvwxyzz"[..]).unwrap().fresh);
        assert_eq!(capped.written(), 10);
        let err = capped.put(&mut &b"1"[..]).unwrap_err();
        assert!(matches!(err, EnvError::SnapshotCap { cap: 10 }), "{err}");
        assert!(!store.contains(&crate::snapshot::sha256_hex(b"1")));
        // content already stored but larger than what is left fails too (its digest is
        // known only once it is read): the documented cost of never growing past the cap
        let err = capped.put(&mut &b"abc"[..]).unwrap_err();
        assert!(matches!(err, EnvError::SnapshotCap { cap: 10 }), "{err}");
        assert_eq!(capped.written(), 10);
    }
}
