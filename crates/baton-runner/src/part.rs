//! Parts: one experiment run as N processes, each on its own folder, merged afterwards.
//!
//! A part `I/N` (1 ≤ I ≤ N) runs the tasks whose id hashes to it: the first 8 bytes of
//! the sha256 of the task id, read little-endian, modulo N, plus 1. Every cell and
//! replicate of a task is in the task's part, so a forked prefix never crosses parts,
//! and the partition is computed after `limit`'s sampling over the whole experiment, so
//! every part sees the same sample. Each part records `I/N` in its store
//! (`baton_store::part_of`), which `baton merge` checks.
//!
//! Money is the experiment's: `--max-cost X` gives a part the share X × (its dry-run
//! upper bound ÷ the sum of all parts' bounds) ([`share`]), and each model's rate limits
//! are divided by N unless the part is told they are its own
//! ([`crate::RunOptions::part_rate_limits`]).

use std::fmt;
use std::str::FromStr;

use std::path::Path;

use baton_types::Cost;
use sha2::{Digest, Sha256};

use crate::{RunError, RunOptions};

/// Part `index` of `count` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Part {
    /// Which part, 1 ≤ index ≤ count.
    pub index: u32,
    /// How many parts the experiment is split into.
    pub count: u32,
}

/// A part's phase of the agent handoff study (`--phase`): its anchors first, then,
/// with the thresholds of every part's anchors, its handoff cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PartPhase {
    /// The anchor episodes only.
    Anchors,
    /// The handoff cells, with a thresholds file (`baton thresholds`).
    Handoffs,
}

/// A `--part` value that is not `I/N` with 1 ≤ I ≤ N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--part {given:?}: {why}; write it I/N with 1 ≤ I ≤ N (e.g. 2/8)")]
pub struct PartError {
    /// What was given.
    pub given: String,
    /// What is wrong with it.
    pub why: String,
}

impl FromStr for Part {
    type Err = PartError;

    fn from_str(s: &str) -> Result<Part, PartError> {
        let err = |why: &str| PartError {
            given: s.to_string(),
            why: why.to_string(),
        };
        let (i, n) = s.split_once('/').ok_or_else(|| err("no '/'"))?;
        let index: u32 = i
            .trim()
            .parse()
            .map_err(|_| err("I is not a whole number"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| err("N is not a whole number"))?;
        if count == 0 {
            return Err(err("N is 0"));
        }
        if index == 0 || index > count {
            return Err(err("I is outside 1..=N"));
        }
        Ok(Part { index, count })
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Part {
    /// The part (1-based) of `task_id` among `count` parts.
    pub fn of_task(task_id: &str, count: u32) -> u32 {
        let digest = Sha256::digest(task_id.as_bytes());
        let head = u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"));
        (head % u64::from(count.max(1))) as u32 + 1
    }

    /// Whether `task_id` is in this part.
    pub fn contains(&self, task_id: &str) -> bool {
        Part::of_task(task_id, self.count) == self.index
    }

    /// The default results folder of this part of experiment `name`:
    /// `<name>-part-<I>-of-<N>`.
    pub fn folder_name(&self, name: &str) -> String {
        format!("{name}-part-{}-of-{}", self.index, self.count)
    }

    /// A rate limit of the whole experiment as this part's: divided by N, at least 1.
    pub fn divide<T>(&self, limit: T) -> T
    where
        T: Copy + TryFrom<u64> + Into<u64>,
    {
        let share = (limit.into() / u64::from(self.count)).max(1);
        T::try_from(share).unwrap_or(limit)
    }
}

/// This part's share of the experiment's cap `max_cost`: `max_cost × bounds[I-1] ÷
/// Σ bounds`, rounded down to the picodollar (so the shares never add up to more than
/// the cap). With every bound zero the parts share the cap equally.
pub fn share(max_cost: Cost, part: Part, bounds: &[Cost]) -> Cost {
    let total: i128 = bounds.iter().map(|b| i128::from(b.0.max(0))).sum();
    let mine = bounds
        .get(part.index as usize - 1)
        .map_or(0, |b| i128::from(b.0.max(0)));
    let cap = i128::from(max_cost.0.max(0));
    let value = if total == 0 {
        cap / i128::from(part.count)
    } else {
        cap * mine / total
    };
    Cost(i64::try_from(value).unwrap_or(i64::MAX))
}

/// Before a run opens its store at `store`: a part records which part it is (and is
/// refused on a folder that holds another part); a run without `--part` is refused on
/// a part's folder. Returns the run's cap: `max_cost`, or a part's share of it from
/// `bounds` (each part's upper bound).
pub(crate) fn record(
    store: &Path,
    options: &RunOptions,
    bounds: &[Cost],
) -> Result<Option<Cost>, RunError> {
    let folder = || store.parent().unwrap_or(Path::new(".")).to_path_buf();
    match options.part {
        Some(part) => {
            if store.exists()
                && let Some(stored) = baton_store::stored_part(store)?
                && stored != part.to_string()
            {
                return Err(RunError::PartFolder {
                    folder: folder(),
                    stored: Some(stored),
                    given: Some(part.to_string()),
                });
            }
            baton_store::record_part(store, &part.to_string())?;
            Ok(options.max_cost.map(|cap| share(cap, part, bounds)))
        }
        None => {
            if store.exists()
                && let Some(stored) = baton_store::stored_part(store)?
            {
                return Err(RunError::PartFolder {
                    folder: folder(),
                    stored: Some(stored),
                    given: None,
                });
            }
            Ok(options.max_cost)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_read_as_i_of_n_and_refused_otherwise() {
        assert_eq!("2/8".parse::<Part>(), Ok(Part { index: 2, count: 8 }));
        for bad in ["0/3", "4/3", "1/0", "1", "a/3", "1/b"] {
            let e = bad.parse::<Part>().unwrap_err();
            assert!(e.to_string().starts_with(&format!("--part {bad:?}")), "{e}");
        }
    }

    #[test]
    fn every_task_is_in_exactly_one_part_and_the_hash_is_stable() {
        // the partition is sha256's: fixed values, so a part never moves between builds
        assert_eq!(Part::of_task("t1", 3), Part::of_task("t1", 3));
        let ids: Vec<String> = (0..300).map(|i| format!("task-{i}")).collect();
        let mut sizes = [0usize; 3];
        for id in &ids {
            let owners: Vec<u32> = (1..=3)
                .filter(|&i| Part { index: i, count: 3 }.contains(id))
                .collect();
            assert_eq!(owners.len(), 1, "{id}: {owners:?}");
            sizes[owners[0] as usize - 1] += 1;
        }
        // a hash spreads 300 ids over 3 parts roughly evenly
        assert!(sizes.iter().all(|&s| (70..=130).contains(&s)), "{sizes:?}");
        assert!(Part { index: 1, count: 1 }.contains("anything"));
    }

    #[test]
    fn shares_follow_the_bounds_and_never_add_up_past_the_cap() {
        let cap = Cost(1_000_000_007);
        let bounds = [Cost(1), Cost(2), Cost(4)];
        let shares: Vec<Cost> = (1..=3)
            .map(|i| share(cap, Part { index: i, count: 3 }, &bounds))
            .collect();
        assert_eq!(
            shares,
            [Cost(142_857_143), Cost(285_714_287), Cost(571_428_575)]
        );
        assert!(shares.iter().map(|c| c.0).sum::<i64>() <= cap.0);
        let zero = [Cost::ZERO; 2];
        assert_eq!(share(Cost(9), Part { index: 2, count: 2 }, &zero), Cost(4));
    }

    #[test]
    fn a_parts_models_get_the_rate_limits_divided_unless_told_they_are_its_own() {
        let text = "name = \"x\"\ndataset = \"sample\"\n[models.lc]\nmodel = \"sim/lc\"\nrequests_per_minute = 90\ntokens_per_minute = 30000\n[models.hc]\nmodel = \"sim/hc\"\n[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n";
        let spec = crate::ExperimentSpec::parse("x", text).unwrap();
        let mut options = RunOptions::new("out", ".", text);
        let limits = |s: &crate::ExperimentSpec| {
            let m = &s.models["lc"];
            (m.requests_per_minute, m.tokens_per_minute)
        };
        assert_eq!(
            limits(&options.part_limits(&spec)),
            (Some(90), Some(30_000))
        );
        options.part = Some(Part { index: 2, count: 3 });
        assert_eq!(
            limits(&options.part_limits(&spec)),
            (Some(30), Some(10_000))
        );
        assert_eq!(
            options.part_limits(&spec).models["hc"].requests_per_minute,
            None
        );
        options.part_rate_limits = true;
        assert_eq!(
            limits(&options.part_limits(&spec)),
            (Some(90), Some(30_000))
        );
    }

    #[test]
    fn rate_limits_are_divided_and_stay_at_least_one() {
        let p = Part { index: 1, count: 4 };
        assert_eq!(p.divide(100u32), 25);
        assert_eq!(p.divide(3u32), 1);
        assert_eq!(p.divide(90_000u64), 22_500);
    }
}
