//! Commit ids named in the document's text, checked against the repository.
//!
//! A handoff often says "fixed in a1b2c3d" or "reverted by 9f8e7d6c": a fabricated or
//! mistyped id there misleads as much as a fabricated anchor. Every 7–40 character hex word
//! of the body (prose and code spans, outside masked blocks) that has a digit and a letter
//! is looked up; ids the repository does not hold are a warning, with their lines.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::{Run, Status};
use crate::git::Repo;

/// At most this many distinct ids are looked up.
pub const MAX_COMMITS: usize = 20;

static HEX: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b[0-9a-fA-F]{7,40}\b").expect("a valid built-in pattern"));

/// The commit-shaped words of the body, with the first line each is on.
pub fn named(doc: &crate::Document) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for line in doc.body.lines.iter().filter(|l| !l.masked) {
        for m in HEX.find_iter(&line.raw) {
            let word = m.as_str();
            let digit = word.bytes().any(|b| b.is_ascii_digit());
            let letter = word.bytes().any(|b| b.is_ascii_alphabetic());
            if digit && letter && (out.len() < MAX_COMMITS || out.contains_key(word)) {
                out.entry(word.to_ascii_lowercase()).or_insert(line.number);
            }
        }
    }
    out
}

/// Add the `commits` check: every id named in the body resolves.
pub(super) fn check(run: &mut Run<'_>, repo: &Repo) {
    let named = named(run.doc);
    if named.is_empty() {
        return;
    }
    let missing: Vec<(String, usize)> = named
        .iter()
        .filter(|(sha, _)| repo.resolve(sha).is_none())
        .map(|(sha, line)| (sha.clone(), *line))
        .collect();
    if missing.is_empty() {
        run.add(
            "commits",
            Status::Ok,
            format!("{} commit id(s) named in the text exist", named.len()),
            None,
        );
    } else {
        let list: Vec<String> = missing
            .iter()
            .map(|(sha, line)| format!("{sha} (L{line})"))
            .collect();
        run.add(
            "commits",
            Status::Warn,
            format!(
                "{} of {} commit id(s) named in the text are not in this repository: {}",
                missing.len(),
                named.len(),
                list.join(", ")
            ),
            missing.first().map(|(_, line)| *line),
        );
    }
}
