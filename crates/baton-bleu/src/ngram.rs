//! Per-segment n-gram matching: sacreBLEU's `extract_all_word_ngrams`,
//! `_extract_reference_info`, `_get_closest_ref_len` and `_compute_segment_statistics`.
//!
//! sacreBLEU counts n-grams as tuples of strings in Python `Counter`s. Here every token is
//! interned to a `u32` once, an n-gram of up to four tokens is packed into a `u128` (32 bits per
//! token, so distinct n-grams of one order get distinct keys), and the n-grams of one order are
//! sorted and counted by merging sorted runs. Sentences are short, so sorting a few dozen keys
//! beats hashing every n-gram, and the result is the same: only counts are compared, never the
//! order in which a `Counter` happens to iterate.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::bleu::{MAX_NGRAM_ORDER, Stats};
use crate::tokenizer::{Scratch, Tokenizer};
use crate::whitespace::split_spans;

/// Everything needed to turn one (hypothesis, references) segment into [`Stats`], with buffers
/// kept across segments.
#[derive(Debug)]
pub(crate) struct Matcher {
    tokenizer: Tokenizer,
    lowercase: bool,
    interner: Interner,
    hyp: Vec<u32>,
    refs: Vec<Vec<u32>>,
    ref_lens: Vec<u64>,
    hyp_keys: Vec<u128>,
    ref_keys: Vec<u128>,
    /// Distinct hypothesis n-grams of the current order with their counts.
    distinct: Vec<(u128, u32)>,
    /// Highest count of each `distinct` n-gram in any one reference.
    best: Vec<u32>,
}

impl Matcher {
    pub(crate) fn new(tokenizer: Tokenizer, lowercase: bool) -> Self {
        Self {
            tokenizer,
            lowercase,
            interner: Interner::default(),
            hyp: Vec::new(),
            refs: Vec::new(),
            ref_lens: Vec::new(),
            hyp_keys: Vec::new(),
            ref_keys: Vec::new(),
            distinct: Vec::new(),
            best: Vec::new(),
        }
    }

    /// The statistics of one segment: `hypothesis` against every string of `references`.
    pub(crate) fn segment<'r>(
        &mut self,
        hypothesis: &str,
        references: impl Iterator<Item = &'r str>,
    ) -> Stats {
        let (tokenizer, lowercase) = (self.tokenizer, self.lowercase);
        self.interner
            .ids(tokenizer, lowercase, hypothesis, &mut self.hyp);
        let mut n_refs = 0;
        self.ref_lens.clear();
        for reference in references {
            if self.refs.len() == n_refs {
                self.refs.push(Vec::new());
            }
            let ids = &mut self.refs[n_refs];
            self.interner.ids(tokenizer, lowercase, reference, ids);
            self.ref_lens.push(ids.len() as u64);
            n_refs += 1;
        }
        let refs = &self.refs[..n_refs];

        let sys_len = self.hyp.len() as u64;
        let mut stats = Stats {
            sys_len,
            ref_len: closest_ref_len(sys_len, &self.ref_lens),
            ..Stats::default()
        };
        for n in 1..=MAX_NGRAM_ORDER {
            if self.hyp.len() < n {
                break;
            }
            stats.totals[n - 1] = (self.hyp.len() + 1 - n) as u64;

            sorted_keys(&self.hyp, n, &mut self.hyp_keys);
            self.distinct.clear();
            for &key in &self.hyp_keys {
                match self.distinct.last_mut() {
                    Some((last, count)) if *last == key => *count += 1,
                    _ => self.distinct.push((key, 1)),
                }
            }
            self.best.clear();
            self.best.resize(self.distinct.len(), 0);
            for reference in refs {
                sorted_keys(reference, n, &mut self.ref_keys);
                count_in(&self.distinct, &self.ref_keys, &mut self.best);
            }
            stats.counts[n - 1] = self
                .distinct
                .iter()
                .zip(&self.best)
                .map(|(&(_, count), &best)| u64::from(count.min(best)))
                .sum();
        }
        stats
    }
}

/// `BLEU._get_closest_ref_len`: the reference length closest to `hyp_len`, ties to the shorter.
fn closest_ref_len(hyp_len: u64, ref_lens: &[u64]) -> u64 {
    let mut closest: Option<(u64, u64)> = None;
    for &ref_len in ref_lens {
        let diff = hyp_len.abs_diff(ref_len);
        closest = match closest {
            Some((closest_diff, closest_len))
                if diff > closest_diff || (diff == closest_diff && ref_len >= closest_len) =>
            {
                Some((closest_diff, closest_len))
            }
            _ => Some((diff, ref_len)),
        };
    }
    // sacreBLEU returns -1 when there is no reference; callers always pass at least one.
    closest.map_or(0, |(_, len)| len)
}

/// The keys of all `n`-grams of `ids`, sorted.
#[inline]
fn sorted_keys(ids: &[u32], n: usize, out: &mut Vec<u128>) {
    out.clear();
    out.extend(ids.windows(n).map(|w| {
        w.iter()
            .fold(0_u128, |key, &id| (key << 32) | u128::from(id))
    }));
    out.sort_unstable();
}

/// For each distinct hypothesis key, raise `best` to its number of occurrences in the sorted
/// `reference` keys.
#[inline]
fn count_in(distinct: &[(u128, u32)], reference: &[u128], best: &mut [u32]) {
    let mut j = 0;
    for (&(key, _), best) in distinct.iter().zip(best) {
        while j < reference.len() && reference[j] < key {
            j += 1;
        }
        let start = j;
        while j < reference.len() && reference[j] == key {
            j += 1;
        }
        *best = (*best).max((j - start) as u32);
    }
}

/// Tokenises lines and maps each token to a small integer that stays the same across segments.
#[derive(Debug, Default)]
struct Interner {
    scratch: Scratch,
    ids: HashMap<Box<[u8]>, u32, BuildHasherDefault<FxHasher>>,
}

impl Interner {
    fn ids(&mut self, tokenizer: Tokenizer, lowercase: bool, line: &str, out: &mut Vec<u32>) {
        out.clear();
        let bytes = self.scratch.preprocess(tokenizer, lowercase, line);
        let ids = &mut self.ids;
        split_spans(bytes, |a, b| {
            let token = &bytes[a..b];
            let id = match ids.get(token) {
                Some(&id) => id,
                None => {
                    let id = u32::try_from(ids.len())
                        .unwrap_or_else(|_| panic!("more than {} distinct tokens", u32::MAX));
                    ids.insert(token.into(), id);
                    id
                }
            };
            out.push(id);
        });
    }
}

/// The Firefox/rustc "Fx" hash: a rotate, xor and multiply per machine word. Tokens are short
/// and come from trusted text, so the speed matters more than resistance to crafted collisions.
#[derive(Debug, Default, Clone, Copy)]
struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // The multiply leaves the low bits weakest; the table indexes buckets by the low bits.
        self.hash.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_reference_length_ties_to_the_shorter() {
        assert_eq!(closest_ref_len(10, &[12, 8]), 8);
        assert_eq!(closest_ref_len(10, &[8, 12]), 8);
        assert_eq!(closest_ref_len(10, &[13, 11, 9]), 9);
        assert_eq!(closest_ref_len(10, &[20, 10, 3]), 10);
        assert_eq!(closest_ref_len(0, &[5, 3, 4]), 3);
    }

    #[test]
    fn counts_clip_by_the_best_single_reference() {
        // "the the the the" against refs with 2 and 1 "the": unigram matches clip at 2, not 3.
        let mut m = Matcher::new(Tokenizer::V13a, false);
        let stats = m.segment("the the the the", ["the the cat", "the mat"].into_iter());
        assert_eq!(stats.counts, [2, 1, 0, 0]);
        assert_eq!(stats.totals, [4, 3, 2, 1]);
        assert_eq!((stats.sys_len, stats.ref_len), (4, 3));
    }

    #[test]
    fn interned_ids_persist_across_segments() {
        let mut m = Matcher::new(Tokenizer::V13a, false);
        let first = m.segment("a b c d", ["a b c d"].into_iter());
        let second = m.segment("d c b a", ["a b c d"].into_iter());
        assert_eq!(first.counts, [4, 3, 2, 1]);
        assert_eq!(second.counts, [4, 0, 0, 0]);
    }

    #[test]
    fn lowercase_applies_to_both_sides() {
        let mut m = Matcher::new(Tokenizer::V13a, true);
        let stats = m.segment("ÉTÉ À Paris", ["été à paris"].into_iter());
        assert_eq!(stats.counts, [3, 2, 1, 0]);
    }
}
