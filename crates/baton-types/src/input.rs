//! Reading a user's input file under a size bound.
//!
//! Every file baton reads whole (an experiment, a dataset, a price card, a score input, a
//! handoff document) goes through [`read_bounded`]: a path that is not a regular file
//! (`/dev/zero`, a FIFO, a folder) is refused before it is opened, so it can neither fill
//! memory nor hang the process, and a file past its bound is refused from its size,
//! before a byte is read. The file is then opened with `O_NONBLOCK` and its type checked
//! again on the open handle, so a FIFO or device put in its place between the check and
//! the open is refused too instead of blocking the open or the read. This is the one piece
//! of I/O in the crate, kept here because every crate that loads input needs the same
//! rule.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Why an input file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The path names something other than a regular file.
    #[error("{} is not a regular file ({kind}); give the path of a file", .path.display())]
    NotAFile {
        /// The path as given.
        path: std::path::PathBuf,
        /// What it is instead (`a character device`, `a FIFO`, `a folder`, …).
        kind: &'static str,
    },
    /// The file is larger than its bound.
    #[error("{} is {size} bytes, more than the {limit} bytes a {what} may have", .path.display())]
    TooLarge {
        /// The file.
        path: std::path::PathBuf,
        /// Its size in bytes (at least; a file that grew while read may be larger).
        size: u64,
        /// The bound.
        limit: u64,
        /// What the file is (`dataset`, `price card`, …).
        what: &'static str,
    },
    /// The operating system refused.
    #[error("cannot read {}: {source}", .path.display())]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not UTF-8 text.
    #[error("{} is not UTF-8 text: invalid byte at offset {offset}", .path.display())]
    NotUtf8 {
        /// The file.
        path: std::path::PathBuf,
        /// The offset of the first invalid byte.
        offset: usize,
    },
}

/// The bound of an experiment file.
pub const EXPERIMENT_LIMIT: u64 = 1 << 20;
/// The bound of a price card (LiteLLM's whole card is under 2 MiB).
pub const PRICE_CARD_LIMIT: u64 = 32 << 20;
/// The bound of a dataset or score-input file (LiC's 600 sharded tasks take about 30 MiB).
pub const DATASET_LIMIT: u64 = 512 << 20;
/// The bound of a prompt template or other small text file.
pub const TEMPLATE_LIMIT: u64 = 1 << 20;

/// The bytes of the regular file at `path`, if it has at most `limit` of them; `what`
/// names the file in the error.
pub fn read_bounded(path: &Path, limit: u64, what: &'static str) -> Result<Vec<u8>, InputError> {
    let io = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let too_large = |size| InputError::TooLarge {
        path: path.to_path_buf(),
        size,
        limit,
        what,
    };
    let regular = |meta: &std::fs::Metadata| -> Result<u64, InputError> {
        let ft = meta.file_type();
        if !ft.is_file() {
            return Err(InputError::NotAFile {
                path: path.to_path_buf(),
                kind: file_kind(&ft),
            });
        }
        if meta.len() > limit {
            return Err(too_large(meta.len()));
        }
        Ok(meta.len())
    };
    regular(&std::fs::metadata(path).map_err(io)?)?;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(io)?;
    let size = regular(&file.metadata().map_err(io)?)?;
    let mut bytes = Vec::with_capacity(size as usize);
    // one byte past the bound tells a file that grew since it was measured
    file.take(limit + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_bounded`], as UTF-8 text.
pub fn read_text_bounded(
    path: &Path,
    limit: u64,
    what: &'static str,
) -> Result<String, InputError> {
    let bytes = read_bounded(path, limit, what)?;
    String::from_utf8(bytes).map_err(|e| InputError::NotUtf8 {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

fn file_kind(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a folder"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_folders_are_refused_before_a_read() {
        let t0 = std::time::Instant::now();
        let err = read_bounded(Path::new("/dev/zero"), 1 << 30, "dataset").unwrap_err();
        assert_eq!(
            err.to_string(),
            "/dev/zero is not a regular file (a character device); give the path of a file"
        );
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        // no writer: opening it would block forever
        let err = read_bounded(&fifo, 10, "experiment").unwrap_err();
        assert!(err.to_string().contains("(a FIFO)"), "{err}");
        let err = read_bounded(dir.path(), 10, "experiment").unwrap_err();
        assert!(err.to_string().contains("(a folder)"), "{err}");
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_file_past_its_bound_is_refused_from_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("card.json");
        std::fs::write(&path, "x".repeat(11)).unwrap();
        assert_eq!(read_bounded(&path, 11, "price card").unwrap().len(), 11);
        let err = read_bounded(&path, 10, "price card").unwrap_err();
        assert!(
            err.to_string()
                .ends_with("card.json is 11 bytes, more than the 10 bytes a price card may have"),
            "{err}"
        );
        std::fs::write(&path, b"ok \xff").unwrap();
        let err = read_text_bounded(&path, 10, "experiment").unwrap_err();
        assert!(
            err.to_string().ends_with("invalid byte at offset 3"),
            "{err}"
        );
    }
}
