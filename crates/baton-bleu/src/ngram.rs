//! Per-segment n-gram matching: sacreBLEU's `extract_all_word_ngrams`,
//! `_extract_reference_info`, `_get_closest_ref_len` and `_compute_segment_statistics`.
//!
//! sacreBLEU counts n-grams as tuples of strings in Python `Counter`s. Here every token is
//! interned to a nonzero `u32` once, an n-gram of up to four tokens is packed into a `u128` (32
//! bits per token id, so n-grams of different orders never share a key), and one small
//! open-addressing table per segment holds the hypothesis n-grams with their count and their
//! highest count in any single reference. Only counts are compared, never the order in which a
//! `Counter` iterates, so the result is the same.

use std::cell::RefCell;

use crate::bleu::{MAX_NGRAM_ORDER, Stats};
use crate::tokenizer::{Scratch, Tokenizer};

/// Everything needed to turn one (hypothesis, references) segment into [`Stats`], with buffers
/// kept across segments.
#[derive(Debug, Default)]
pub(crate) struct Matcher {
    interner: Interner,
    hyp: Vec<u32>,
    reference: Vec<u32>,
    table: NgramTable,
}

impl Matcher {
    /// Runs `f` with this thread's long-lived matcher, so that repeated sentence-level calls
    /// reuse its buffers and interned tokens instead of allocating them again.
    pub(crate) fn with_thread_local<T>(f: impl FnOnce(&mut Self) -> T) -> T {
        thread_local! {
            static MATCHER: RefCell<Matcher> = RefCell::default();
        }
        MATCHER.with(|cell| match cell.try_borrow_mut() {
            Ok(mut matcher) => {
                matcher.trim();
                f(&mut matcher)
            }
            // Only reachable if `f` itself scored a sentence; give it a fresh matcher.
            Err(_) => f(&mut Self::default()),
        })
    }

    /// Forgets interned tokens once there are many, so that a long-lived matcher used for
    /// unrelated sentences does not grow without bound. Ids only need to agree within a segment.
    fn trim(&mut self) {
        if self.interner.len() > 1 << 16 {
            self.interner.clear();
        }
    }

    /// The statistics of one segment: `hypothesis` against every string of `references`.
    pub(crate) fn segment<'r>(
        &mut self,
        (tokenizer, lowercase): (Tokenizer, bool),
        hypothesis: &str,
        references: impl Iterator<Item = &'r str>,
    ) -> Stats {
        self.interner
            .ids(tokenizer, lowercase, hypothesis, &mut self.hyp);
        let hyp = &self.hyp;
        let sys_len = hyp.len() as u64;
        let mut stats = Stats {
            sys_len,
            ..Stats::default()
        };

        let table = &mut self.table;
        table.start(hyp.len() * MAX_NGRAM_ORDER);
        for n in 1..=MAX_NGRAM_ORDER.min(hyp.len()) {
            stats.totals[n - 1] = (hyp.len() + 1 - n) as u64;
            for window in hyp.windows(n) {
                table.add_hypothesis(key(window), n);
            }
        }

        // `_get_closest_ref_len`: the reference length closest to the hypothesis length, ties
        // to the shorter one.
        let mut closest: Option<(u64, u64)> = None;
        for (r, reference) in references.enumerate() {
            self.interner
                .ids(tokenizer, lowercase, reference, &mut self.reference);
            let ref_len = self.reference.len() as u64;
            let diff = sys_len.abs_diff(ref_len);
            if closest.is_none_or(|(d, len)| diff < d || (diff == d && ref_len < len)) {
                closest = Some((diff, ref_len));
            }
            let r = r as u32 + 1;
            for n in 1..=MAX_NGRAM_ORDER.min(self.reference.len()) {
                for window in self.reference.windows(n) {
                    table.add_reference(key(window), r);
                }
            }
        }
        // sacreBLEU would use -1 with no reference at all; callers always pass at least one.
        stats.ref_len = closest.map_or(0, |(_, len)| len);

        for slot in table.occupied() {
            stats.counts[usize::from(slot.order) - 1] += u64::from(slot.hyp.min(slot.best));
        }
        stats
    }
}

/// The key of an n-gram: its token ids (never 0), 32 bits each, the last token lowest.
#[inline]
fn key(window: &[u32]) -> u128 {
    window
        .iter()
        .fold(0_u128, |key, &id| (key << 32) | u128::from(id))
}

#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    key: u128,
    /// The segment the slot belongs to; any other value means the slot is empty.
    segment: u32,
    /// Count in the hypothesis.
    hyp: u32,
    /// Highest count in any single reference so far.
    best: u32,
    /// Count in reference number `reference`.
    current: u32,
    reference: u32,
    order: u8,
}

/// An open-addressing (linear probing) table of the hypothesis n-grams of one segment. A
/// segment counter marks which slots are live, so starting a new segment costs nothing.
#[derive(Debug, Default)]
struct NgramTable {
    slots: Vec<Slot>,
    /// `64 - log2(slots.len())`: the hash's top bits pick the slot.
    shift: u32,
    segment: u32,
    /// Indices of the live slots.
    live: Vec<u32>,
}

impl NgramTable {
    /// Empties the table for a segment with at most `max_ngrams` hypothesis n-grams.
    fn start(&mut self, max_ngrams: usize) {
        self.live.clear();
        let wanted = (2 * max_ngrams).next_power_of_two().max(64);
        if self.slots.len() < wanted || self.segment == u32::MAX {
            self.slots = vec![Slot::default(); wanted.max(self.slots.len())];
            self.shift = 64 - self.slots.len().trailing_zeros();
            self.segment = 0;
        }
        self.segment += 1;
    }

    #[inline]
    fn home(&self, key: u128) -> usize {
        let folded = (key as u64) ^ ((key >> 64) as u64).rotate_left(23);
        (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    #[inline]
    fn add_hypothesis(&mut self, key: u128, order: usize) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let slot = &mut self.slots[i];
            if slot.segment != self.segment {
                *slot = Slot {
                    key,
                    segment: self.segment,
                    hyp: 1,
                    best: 0,
                    current: 0,
                    reference: 0,
                    order: order as u8,
                };
                self.live.push(i as u32);
                return;
            }
            if slot.key == key {
                slot.hyp += 1;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Counts one occurrence of `key` in reference number `reference` (from 1), if the
    /// hypothesis has that n-gram.
    #[inline]
    fn add_reference(&mut self, key: u128, reference: u32) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let slot = &mut self.slots[i];
            if slot.segment != self.segment {
                return;
            }
            if slot.key == key {
                if slot.reference != reference {
                    slot.reference = reference;
                    slot.current = 0;
                }
                slot.current += 1;
                slot.best = slot.best.max(slot.current);
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn occupied(&self) -> impl Iterator<Item = &Slot> {
        self.live.iter().map(|&i| &self.slots[i as usize])
    }
}

/// Tokenises lines and maps each token to a small nonzero integer that stays the same across
/// segments: a string interner specialised for short tokens (an open-addressing table of ids
/// over one byte arena, so interning a token seen before allocates nothing).
#[derive(Debug, Default)]
struct Interner {
    scratch: Scratch,
    /// The bytes of every interned token, back to back.
    arena: Vec<u8>,
    /// `(hash, start, end)` in `arena` of the token with id `i + 1`.
    tokens: Vec<(u64, usize, usize)>,
    /// Ids by hash, linear probing, 0 for an empty slot; the length is 0 or a power of two.
    table: Vec<u32>,
    /// `64 - log2(table.len())`: the hash's top bits pick the slot.
    shift: u32,
}

impl Interner {
    fn len(&self) -> usize {
        self.tokens.len()
    }

    fn clear(&mut self) {
        self.arena.clear();
        self.tokens.clear();
        self.table.fill(0);
    }

    /// Replaces `out` with the ids of the tokens of `line`.
    fn ids(&mut self, tokenizer: Tokenizer, lowercase: bool, line: &str, out: &mut Vec<u32>) {
        out.clear();
        let Self {
            scratch,
            arena,
            tokens,
            table,
            shift,
        } = self;
        scratch.tokens(tokenizer, lowercase, line, |token| {
            out.push(intern(arena, tokens, table, shift, token));
        });
    }
}

/// The id of `token`, adding it if it is new.
#[inline]
fn intern(
    arena: &mut Vec<u8>,
    tokens: &mut Vec<(u64, usize, usize)>,
    table: &mut Vec<u32>,
    shift: &mut u32,
    token: &[u8],
) -> u32 {
    if 2 * (tokens.len() + 1) > table.len() {
        grow(tokens, table, shift);
    }
    let hash = hash_bytes(token);
    let mask = table.len() - 1;
    let mut i = (hash >> *shift) as usize;
    loop {
        let id = table[i];
        if id == 0 {
            let id = u32::try_from(tokens.len() + 1)
                .unwrap_or_else(|_| panic!("more than {} distinct tokens", u32::MAX - 1));
            let start = arena.len();
            arena.extend_from_slice(token);
            tokens.push((hash, start, arena.len()));
            table[i] = id;
            return id;
        }
        let (h, start, end) = tokens[id as usize - 1];
        if h == hash && same_bytes(&arena[start..end], token) {
            return id;
        }
        i = (i + 1) & mask;
    }
}

/// Doubles the table (at least 256 slots) and re-inserts every id.
fn grow(tokens: &[(u64, usize, usize)], table: &mut Vec<u32>, shift: &mut u32) {
    let len = (2 * table.len()).max(256);
    *table = vec![0; len];
    *shift = 64 - len.trailing_zeros();
    let mask = len - 1;
    for (index, &(hash, _, _)) in tokens.iter().enumerate() {
        let mut i = (hash >> *shift) as usize;
        while table[i] != 0 {
            i = (i + 1) & mask;
        }
        table[i] = index as u32 + 1;
    }
}

/// Byte equality written as a plain loop: tokens are a few bytes long, and the loop is faster
/// than a call to `memcmp`.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// A multiplicative hash in the style of rustc's "Fx" hash: a rotate, xor and multiply per
/// eight bytes, seeded with the length. Tokens come from trusted text, so speed matters more
/// than resistance to crafted collisions; the table compares bytes, so collisions only cost
/// time.
#[inline]
fn hash_bytes(bytes: &[u8]) -> u64 {
    const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let mut hash = (bytes.len() as u64).wrapping_mul(SEED);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        hash = (hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
    let mut word = 0;
    for (i, &b) in chunks.remainder().iter().enumerate() {
        word |= u64::from(b) << (8 * i);
    }
    (hash.rotate_left(5) ^ word).wrapping_mul(SEED)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SETTINGS: (Tokenizer, bool) = (Tokenizer::V13a, false);

    fn words(n: usize) -> String {
        (0..n)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn closest_reference_length_ties_to_the_shorter() {
        let mut m = Matcher::default();
        let cases: [(usize, &[usize], u64); 5] = [
            (10, &[12, 8], 8),
            (10, &[8, 12], 8),
            (10, &[13, 11, 9], 9),
            (10, &[20, 10, 3], 10),
            (0, &[5, 3, 4], 3),
        ];
        for (hyp, refs, expected) in cases {
            let refs: Vec<String> = refs.iter().map(|&n| words(n)).collect();
            let stats = m.segment(SETTINGS, &words(hyp), refs.iter().map(String::as_str));
            assert_eq!(stats.ref_len, expected, "{hyp} vs {refs:?}");
        }
    }

    #[test]
    fn counts_clip_by_the_best_single_reference() {
        // "the the the the" against refs with 2 and 1 "the": unigram matches clip at 2, not 3.
        let mut m = Matcher::default();
        let stats = m.segment(
            SETTINGS,
            "the the the the",
            ["the the cat", "the mat"].into_iter(),
        );
        assert_eq!(stats.counts, [2, 1, 0, 0]);
        assert_eq!(stats.totals, [4, 3, 2, 1]);
        assert_eq!((stats.sys_len, stats.ref_len), (4, 3));
    }

    #[test]
    fn interned_ids_persist_across_segments() {
        let mut m = Matcher::default();
        let first = m.segment(SETTINGS, "a b c d", ["a b c d"].into_iter());
        let second = m.segment(SETTINGS, "d c b a", ["a b c d"].into_iter());
        assert_eq!(first.counts, [4, 3, 2, 1]);
        assert_eq!(second.counts, [4, 0, 0, 0]);
    }

    #[test]
    fn interner_keeps_ids_through_growth_and_forgets_on_trim() {
        let mut interner = Interner::default();
        let line: String = (0..5000).map(|i| format!("t{i} ")).collect();
        let mut first = Vec::new();
        interner.ids(Tokenizer::None, false, &line, &mut first);
        assert_eq!(first, (1..=5000).collect::<Vec<u32>>());
        let mut again = Vec::new();
        interner.ids(Tokenizer::None, false, "t4999 t0 t17 new", &mut again);
        assert_eq!(again, [5000, 1, 18, 5001]);

        let mut m = Matcher::default();
        let many: String = (0..70_000).map(|i| format!("w{i} ")).collect();
        m.segment(SETTINGS, &many, [""].into_iter());
        assert_eq!(m.interner.len(), 70_000);
        m.trim();
        assert_eq!(m.interner.len(), 0);
        let stats = m.segment(SETTINGS, "a b", ["a b"].into_iter());
        assert_eq!(stats.counts, [2, 1, 0, 0]);
    }

    #[test]
    fn lowercase_applies_to_both_sides() {
        let mut m = Matcher::default();
        let stats = m.segment(
            (Tokenizer::V13a, true),
            "ÉTÉ À Paris",
            ["été à paris"].into_iter(),
        );
        assert_eq!(stats.counts, [3, 2, 1, 0]);
    }
}
