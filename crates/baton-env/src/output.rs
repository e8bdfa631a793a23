//! Bounded capture of a command's combined output: the head and the tail are kept, the
//! middle is counted and dropped, so a command that prints a gigabyte costs a megabyte.

use serde::{Deserialize, Serialize};

/// A command's combined stdout and stderr, in the order it was written.
///
/// When the command printed more than the limit, `head` holds the first half of the limit,
/// `tail` the last half, and `omitted_bytes` what was dropped between them. Bytes that are
/// not UTF-8 are replaced with U+FFFD; a cut never splits a character.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Output {
    /// The output (all of it when nothing was cut).
    pub head: String,
    /// The end of the output when the middle was cut; empty otherwise.
    pub tail: String,
    /// Bytes dropped between `head` and `tail`.
    pub omitted_bytes: u64,
    /// Bytes the command wrote in all.
    pub total_bytes: u64,
}

impl Output {
    /// Whether the middle was cut.
    pub fn is_truncated(&self) -> bool {
        self.omitted_bytes > 0
    }

    /// The last `max` bytes of [`text`](Output::text), trimmed, on a character boundary,
    /// prefixed with `...` when cut: for error messages and logs.
    pub fn last(&self, max: usize) -> String {
        tail(&self.text(), max)
    }

    /// The output as one string; a cut middle is replaced by one line saying how many bytes
    /// were dropped.
    pub fn text(&self) -> String {
        if self.is_truncated() {
            format!(
                "{}\n[... {} bytes of output omitted ...]\n{}",
                self.head, self.omitted_bytes, self.tail
            )
        } else {
            self.head.clone()
        }
    }
}

/// Collects bytes as they arrive, keeping at most `limit` of them: a head buffer, and a
/// ring buffer for the tail (plain `memcpy`s, so a gigabyte streams through quickly).
#[derive(Debug)]
pub(crate) struct Capture {
    head_limit: usize,
    head: Vec<u8>,
    ring: Vec<u8>,
    /// Where the next tail byte goes in `ring`.
    pos: usize,
    /// Bytes in `ring` (at most its capacity).
    filled: usize,
    total: u64,
}

impl Capture {
    pub(crate) fn new(limit: u64) -> Self {
        let limit = usize::try_from(limit).unwrap_or(usize::MAX / 2).max(2);
        Capture {
            head_limit: limit / 2,
            head: Vec::new(),
            ring: vec![0; limit - limit / 2],
            pos: 0,
            filled: 0,
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.head.len() < self.head_limit {
            let n = (self.head_limit - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        let cap = self.ring.len();
        if bytes.len() >= cap {
            self.ring.copy_from_slice(&bytes[bytes.len() - cap..]);
            self.pos = 0;
            self.filled = cap;
            return;
        }
        let first = (cap - self.pos).min(bytes.len());
        self.ring[self.pos..self.pos + first].copy_from_slice(&bytes[..first]);
        let rest = bytes.len() - first;
        self.ring[..rest].copy_from_slice(&bytes[first..]);
        self.pos = (self.pos + bytes.len()) % cap;
        self.filled = (self.filled + bytes.len()).min(cap);
    }

    fn tail(&self) -> Vec<u8> {
        let cap = self.ring.len();
        let start = (self.pos + cap - self.filled) % cap;
        let mut out = Vec::with_capacity(self.filled);
        if start + self.filled <= cap {
            out.extend_from_slice(&self.ring[start..start + self.filled]);
        } else {
            out.extend_from_slice(&self.ring[start..]);
            out.extend_from_slice(&self.ring[..self.filled - (cap - start)]);
        }
        out
    }

    pub(crate) fn finish(&self) -> Output {
        let tail = self.tail();
        let kept = (self.head.len() + tail.len()) as u64;
        if kept == self.total {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return Output {
                head: String::from_utf8_lossy(&all).into_owned(),
                tail: String::new(),
                omitted_bytes: 0,
                total_bytes: self.total,
            };
        }
        let head = trim_incomplete_end(&self.head);
        let tail = trim_incomplete_start(&tail);
        Output {
            head: String::from_utf8_lossy(head).into_owned(),
            tail: String::from_utf8_lossy(tail).into_owned(),
            omitted_bytes: self.total - head.len() as u64 - tail.len() as u64,
            total_bytes: self.total,
        }
    }
}

/// The last `max` bytes of `text`, trimmed, on a character boundary.
pub(crate) fn tail(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("...{}", &text[start..])
}

/// Drop a UTF-8 sequence cut off at the end.
fn trim_incomplete_end(bytes: &[u8]) -> &[u8] {
    // Look back over at most 3 continuation bytes for the lead byte of the last character.
    let n = bytes.len();
    for back in 1..=4.min(n) {
        let b = bytes[n - back];
        if b & 0xC0 != 0x80 {
            let need = match b {
                0x00..=0x7F => 1,
                0xC0..=0xDF => 2,
                0xE0..=0xEF => 3,
                0xF0..=0xF7 => 4,
                _ => return bytes,
            };
            return if back < need {
                &bytes[..n - back]
            } else {
                bytes
            };
        }
    }
    bytes
}

/// Drop continuation bytes of a character cut off at the start.
fn trim_incomplete_start(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| *b & 0xC0 == 0x80)
        .count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = Capture::new(16);
        c.push(b"hello ");
        c.push(b"world");
        let o = c.finish();
        assert_eq!(o.head, "hello world");
        assert!(!o.is_truncated());
        assert_eq!(o.text(), "hello world");
        assert_eq!(o.total_bytes, 11);
    }

    #[test]
    fn exactly_the_limit_is_not_truncated() {
        let mut c = Capture::new(10);
        c.push(b"0123456789");
        let o = c.finish();
        assert_eq!(o.head, "0123456789");
        assert_eq!(o.omitted_bytes, 0);
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_counts_the_rest() {
        let mut c = Capture::new(10);
        for chunk in [b"abc".as_slice(), b"defghij", b"klmnop", b"qrstuvwxyz"] {
            c.push(chunk);
        }
        let o = c.finish();
        assert_eq!(o.head, "abcde");
        assert_eq!(o.tail, "vwxyz");
        assert_eq!(o.omitted_bytes, 16);
        assert_eq!(o.total_bytes, 26);
        assert!(o.text().contains("[... 16 bytes of output omitted ...]"));
    }

    #[test]
    fn the_tail_ring_wraps_correctly() {
        let text: Vec<u8> = (0..1000u32).map(|i| b'a' + (i % 26) as u8).collect();
        for chunk in [1, 3, 7, 64, 999] {
            let mut c = Capture::new(20);
            for piece in text.chunks(chunk) {
                c.push(piece);
            }
            let o = c.finish();
            assert_eq!(o.head.as_bytes(), &text[..10], "chunk {chunk}");
            assert_eq!(o.tail.as_bytes(), &text[990..], "chunk {chunk}");
            assert_eq!(o.omitted_bytes, 980);
        }
    }

    #[test]
    fn cuts_never_split_a_character() {
        let text = "ééééééééééé"; // 2 bytes each
        let mut c = Capture::new(9);
        c.push(text.as_bytes());
        let o = c.finish();
        assert!(
            !o.head.contains('\u{FFFD}') && !o.tail.contains('\u{FFFD}'),
            "{o:?}"
        );
        assert_eq!(
            o.head.len() as u64 + o.tail.len() as u64 + o.omitted_bytes,
            o.total_bytes
        );
    }
}
