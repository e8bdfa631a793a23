//! Reading a document from disk without trusting it: bounded, regular files only, any
//! encoding a handoff is likely to be saved in.
//!
//! The file is read as every input of baton is (`baton_types::input::read_bounded`): a
//! FIFO, a device (`/dev/zero`, a link to it) or a folder is refused at once instead of
//! hanging or reading until memory runs out, checked before the open and again on the open
//! handle; at most [`MAX_BYTES`] are read.
//! A UTF-8 byte-order mark is dropped; UTF-16 with a byte-order mark (little or big endian)
//! is decoded; bytes that are not UTF-8 are read as U+FFFD, as Handover 0.4.1 (Node's
//! `utf8` decoding) does, and the first one's line, column and offset are reported.

use std::path::Path;

use baton_types::input::{InputError, read_bounded};

use crate::error::Error;
use crate::structure::{Finding, Severity};

/// The largest document read.
pub const MAX_BYTES: u64 = 8 * 1024 * 1024;

/// A document's text as read, and what the reading found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The decoded text.
    pub text: String,
    /// A note on how it was decoded (UTF-16, or where bytes were not UTF-8).
    pub finding: Option<Finding>,
}

/// Read the document at `path` (with baton's bounded reader, `baton_types::input`).
pub fn read(path: &Path) -> Result<Input, Error> {
    let bytes = read_bounded(path, MAX_BYTES, "handoff document").map_err(|e| match e {
        InputError::NotAFile { path, kind } => Error::NotAFile { path, what: kind },
        InputError::TooLarge { path, limit, .. } => Error::TooLarge { path, limit },
        InputError::Io { path, source } => Error::Read { path, source },
        other => Error::Read {
            path: path.to_path_buf(),
            source: std::io::Error::other(other.to_string()),
        },
    })?;
    Ok(decode(&bytes))
}

/// Decode a document's bytes (see the module docs).
pub fn decode(bytes: &[u8]) -> Input {
    let utf16 = |le: bool| {
        let units = bytes[2..].chunks(2).map(|c| match (c, le) {
            ([a, b], true) => u16::from_le_bytes([*a, *b]),
            ([a, b], false) => u16::from_be_bytes([*a, *b]),
            _ => 0xfffd,
        });
        char::decode_utf16(units)
            .map(|c| c.unwrap_or('\u{fffd}'))
            .collect::<String>()
    };
    let note = |msg: String| Some(Finding::new("encoding", Severity::Note, Some(1), msg));
    match bytes {
        [0xff, 0xfe, ..] => Input {
            text: utf16(true),
            finding: note("decoded as UTF-16 (little endian, from its byte-order mark)".into()),
        },
        [0xfe, 0xff, ..] => Input {
            text: utf16(false),
            finding: note("decoded as UTF-16 (big endian, from its byte-order mark)".into()),
        },
        _ => {
            let bytes = bytes.strip_prefix(&[0xef, 0xbb, 0xbf]).unwrap_or(bytes);
            match std::str::from_utf8(bytes) {
                Ok(text) => Input {
                    text: text.to_string(),
                    finding: None,
                },
                Err(e) => {
                    let at = e.valid_up_to();
                    let before = &bytes[..at];
                    let line = before.iter().filter(|b| **b == b'\n').count() + 1;
                    let line_start = before
                        .iter()
                        .rposition(|b| *b == b'\n')
                        .map_or(0, |i| i + 1);
                    let column = String::from_utf8_lossy(&bytes[line_start..at])
                        .chars()
                        .count()
                        + 1;
                    let text = String::from_utf8_lossy(bytes).into_owned();
                    let bad = text.matches('\u{fffd}').count()
                        - String::from_utf8_lossy(before).matches('\u{fffd}').count();
                    Input {
                        text,
                        finding: Some(Finding::new(
                            "encoding",
                            Severity::Warning,
                            Some(line),
                            format!(
                                "byte 0x{:02x} at line {line}, column {column} (offset {at}) is not UTF-8; {bad} invalid sequence(s) were read as U+FFFD",
                                bytes[at]
                            ),
                        )),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings() {
        let bad = decode(b"---\nhandoff: x\n# T\xe9st\n");
        assert_eq!(bad.text, "---\nhandoff: x\n# T\u{fffd}st\n");
        let f = bad.finding.unwrap();
        assert_eq!(f.line, Some(3));
        assert_eq!(
            f.message,
            "byte 0xe9 at line 3, column 4 (offset 18) is not UTF-8; 1 invalid sequence(s) were read as U+FFFD"
        );
        let mut le = vec![0xff, 0xfe];
        le.extend("---\né\n".encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(decode(&le).text, "---\né\n");
        let mut be = vec![0xfe, 0xff];
        be.extend("ok".encode_utf16().flat_map(u16::to_be_bytes));
        assert_eq!(decode(&be).text, "ok");
        assert_eq!(decode(b"\xef\xbb\xbfok").text, "ok");
    }
}
