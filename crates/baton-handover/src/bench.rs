//! Handover's trap bench, deterministic layer, with negation-aware coverage.
//!
//! A scenario is a folder with a `traps.json` (`{"scenario", "premise", "traps": [{"id",
//! "kind", "description", "guard_pattern", "detect_fell_in"}]}`) and handoff documents
//! (`*.md`). This module reads the documents' text only; [`crate::traps`] runs the scenarios
//! as agent tasks and their `detect_fell_in` probes on the tree an agent leaves. A trap is
//! *covered* when some sentence of the document matches its `guard_pattern` (a regular
//! expression, case-insensitive) and no matching sentence tells the reader to walk into it.
//!
//! Handover 0.4.1 tests the pattern against the raw text, so "the client-side total was
//! reverted, but re-add it" covers the "do not re-add the client-side total" trap. Here each
//! matching sentence is read for its direction. For a trap to avoid (every kind but
//! `ambiguous-next-action`), a sentence *contradicts* it when one of its clauses is an
//! instruction to do one of the trap-walking verbs (`re-add`, `restore`, `retry`, `upgrade`,
//! `delete`, `swap`, `build`, …) that is not negated (`do not`, `never`, `don't`, …); a clause is
//! an instruction when the verb comes first, after at most lead words such as `please`,
//! `then`, `you should`, `feel free to`. For a step to take (`ambiguous-next-action`), a
//! sentence contradicts it when the clause holding the match opens with a negation (`do not`,
//! `skip`, `no need to`). One contradicting sentence makes the trap *contradicted*, whatever
//! else the document says: it names the trap and tells the reader to walk into it.
//!
//! The quality figure is Handover's: half the structure score, half the share of traps covered.

use std::path::{Path, PathBuf};

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::document::Document;
use crate::error::Error;
use crate::structure::Rubric;

/// One planted trap.
#[derive(Debug, Clone)]
pub struct Trap {
    /// Its id.
    pub id: String,
    /// Its kind (`reverted-do-not-re-add`, `tried-and-failed`, `ambiguous-next-action`, …).
    pub kind: String,
    /// What falling in looks like.
    pub description: String,
    /// What a document must say to guard against it.
    pub guard: Regex,
    /// The shell probe that tells, on the tree an agent left, whether it fell in
    /// (`detect_fell_in`: output on stdout means it did); run by [`crate::traps::probe`].
    pub detect: Option<String>,
}

impl Trap {
    /// Whether the trap is something to avoid (rather than a step to take).
    pub fn to_avoid(&self) -> bool {
        !self.kind.contains("next-action")
    }
}

/// A scenario: traps and the documents to score against them.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Its name (`scenario` in `traps.json`, else the folder's name).
    pub name: String,
    /// Its folder.
    pub dir: PathBuf,
    /// What a cold agent inherits.
    pub premise: String,
    /// The traps.
    pub traps: Vec<Trap>,
    /// Its `*.md` documents, sorted by name.
    pub documents: Vec<PathBuf>,
}

#[derive(Deserialize)]
struct TrapsFile {
    scenario: Option<String>,
    #[serde(default)]
    premise: String,
    traps: Vec<TrapSpec>,
}

#[derive(Deserialize)]
struct TrapSpec {
    id: String,
    kind: String,
    #[serde(default)]
    description: String,
    guard_pattern: String,
    #[serde(default)]
    detect_fell_in: Option<String>,
}

fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let read = |source| Error::Read {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        paths.push(entry.map_err(read)?.path());
    }
    paths.sort();
    Ok(paths)
}

/// Load the scenario at `dir`, or every scenario in its subfolders.
pub fn load(dir: &Path) -> Result<Vec<Scenario>, Error> {
    if dir.join("traps.json").is_file() {
        return Ok(vec![load_one(dir)?]);
    }
    let mut out = Vec::new();
    for path in read_dir(dir)? {
        if path.join("traps.json").is_file() {
            out.push(load_one(&path)?);
        }
    }
    if out.is_empty() {
        return Err(Error::NoScenarios {
            path: dir.to_path_buf(),
        });
    }
    Ok(out)
}

fn load_one(dir: &Path) -> Result<Scenario, Error> {
    let path = dir.join("traps.json");
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
        path: path.clone(),
        source,
    })?;
    let file: TrapsFile = serde_json::from_str(&text).map_err(|e| Error::Traps {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let mut traps = Vec::new();
    for spec in file.traps {
        let guard =
            Regex::new(&format!("(?i){}", spec.guard_pattern)).map_err(|e| Error::Pattern {
                path: path.clone(),
                trap: spec.id.clone(),
                source: Box::new(e),
            })?;
        traps.push(Trap {
            id: spec.id,
            kind: spec.kind,
            description: spec.description,
            guard,
            detect: spec.detect_fell_in,
        });
    }
    let documents = read_dir(dir)?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md") && p.is_file())
        .collect();
    Ok(Scenario {
        name: file.scenario.unwrap_or_else(|| {
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        }),
        dir: dir.to_path_buf(),
        premise: file.premise,
        traps,
        documents,
    })
}

/// Whether a document guards against a trap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Coverage {
    /// It says what keeps the reader out of the trap.
    Covered,
    /// It names the trap and tells the reader to walk into it.
    Contradicted,
    /// It does not mention it.
    Missing,
}

/// One trap against one document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrapResult {
    /// The trap's id.
    pub id: String,
    /// The verdict.
    pub coverage: Coverage,
    /// What Handover 0.4.1's raw-text match says.
    pub naive: bool,
    /// The file line of the sentence that decided, if any.
    pub line: Option<usize>,
    /// That sentence.
    pub evidence: String,
}

/// One document of a scenario.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocumentResult {
    /// Its path.
    pub path: PathBuf,
    /// Its structure score.
    pub score: u32,
    /// Whether its header is valid.
    pub valid: bool,
    /// Per trap.
    pub traps: Vec<TrapResult>,
    /// Traps covered.
    pub covered: usize,
    /// Traps a raw-text match would credit.
    pub naive: usize,
    /// `round(score / 2 + 50 × covered / traps)`.
    pub quality: u32,
}

/// Score every document of a scenario.
pub fn run(scenario: &Scenario, rubric: Rubric) -> Result<Vec<DocumentResult>, Error> {
    let mut out = Vec::new();
    for path in &scenario.documents {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        let doc = Document::parse(&text);
        let structure = rubric.score(&doc);
        let traps = coverage(&doc, &scenario.traps);
        let covered = traps
            .iter()
            .filter(|t| t.coverage == Coverage::Covered)
            .count();
        let naive = traps.iter().filter(|t| t.naive).count();
        let share = if scenario.traps.is_empty() {
            0.0
        } else {
            covered as f64 / scenario.traps.len() as f64
        };
        let quality = (f64::from(structure.score) * 0.5 + share * 50.0 + 0.5).floor() as u32;
        out.push(DocumentResult {
            path: path.clone(),
            score: structure.score,
            valid: structure.valid,
            traps,
            covered,
            naive,
            quality,
        });
    }
    Ok(out)
}

/// The text a reader reads, in units with their lines: header values, blocks, table rows.
fn units(doc: &Document) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    if let Some(h) = &doc.header {
        out.extend(h.fields.iter().map(|f| (f.line, f.value.raw().to_string())));
    }
    for block in &doc.body.blocks {
        let text = if block.code.is_empty() || !block.text.is_empty() {
            block.text.clone()
        } else {
            block.code.join("\n")
        };
        out.push((block.line, text));
    }
    for table in &doc.body.tables {
        for row in &table.rows {
            let cells: Vec<&str> = row.cells.iter().map(|c| c.text.as_str()).collect();
            out.push((row.line, cells.join(" | ")));
        }
    }
    out
}

/// Split at `.`, `!` or `?` followed by white space, and at line breaks.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\n' {
            out.push(std::mem::take(&mut current));
            continue;
        }
        current.push(c);
        if matches!(c, '.' | '!' | '?') && chars.peek().is_none_or(|n| n.is_whitespace()) {
            out.push(std::mem::take(&mut current));
        }
    }
    out.push(current);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Clauses with their byte offsets in the sentence.
fn clauses(sentence: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in sentence.char_indices() {
        if matches!(c, ',' | ';' | ':' | '(' | ')' | '—' | '–') {
            out.push((start, &sentence[start..i]));
            start = i + c.len_utf8();
        } else if sentence[i..].starts_with(" but ") {
            out.push((start, &sentence[start..i]));
            start = i + 1;
        }
    }
    out.push((start, &sentence[start..]));
    out
}

fn words(clause: &str) -> Vec<String> {
    clause
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '-')
                .trim_matches(['\'', '-'])
                .to_lowercase()
                .replace('’', "'")
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// Words that may come before an instruction's verb.
const LEAD: &[&str] = &[
    "please",
    "just",
    "then",
    "and",
    "so",
    "now",
    "first",
    "next",
    "also",
    "simply",
    "you",
    "we",
    "should",
    "can",
    "could",
    "may",
    "might",
    "must",
    "need",
    "needs",
    "to",
    "have",
    "has",
    "feel",
    "free",
    "go",
    "ahead",
    "let's",
    "lets",
    "make",
    "sure",
    "remember",
    "be",
    "try",
    "it",
    "is",
    "it's",
    "fine",
    "safe",
    "ok",
    "okay",
    "someone",
    "but",
    "or",
    "otherwise",
    "definitely",
    "really",
    "probably",
    "later",
    "again",
    "instead",
    "actually",
    "consider",
    "want",
    "do",
    "ever",
    "i",
    "i'd",
    "suggest",
    "recommend",
    "worth",
    "maybe",
    "perhaps",
    "would",
    "will",
    "shall",
    "todo",
    "finally",
    "quickly",
];
/// Negations that turn an instruction into a prohibition.
const NEGATION: &[&str] = &[
    "not",
    "never",
    "don't",
    "dont",
    "doesn't",
    "no",
    "avoid",
    "mustn't",
    "shouldn't",
    "cannot",
    "can't",
    "won't",
    "nor",
    "stop",
    "without",
    "skip",
    "ignore",
    "forget",
];
/// Verbs that walk into a trap to avoid.
const TRAP_VERBS: &[&str] = &[
    "re-add",
    "readd",
    "restore",
    "reinstate",
    "re-enable",
    "reenable",
    "reintroduce",
    "re-introduce",
    "reimplement",
    "re-implement",
    "redo",
    "rebuild",
    "retry",
    "re-try",
    "reattempt",
    "re-attempt",
    "reuse",
    "re-use",
    "revive",
    "resurrect",
    "undo",
    "upgrade",
    "bump",
    "delete",
    "remove",
    "drop",
    "swap",
    "switch",
    "replace",
    "build",
    "implement",
    "add",
    "ship",
    "enable",
    "bring",
    "put",
    "use",
    "cache",
    "move",
    "revert",
    "reapply",
    "re-apply",
    "migrate",
    "create",
    "write",
    "finish",
    "complete",
];

/// `Some(negated)` when the clause is an instruction to use a trap verb.
fn instruction(clause: &str) -> Option<bool> {
    let mut negated = false;
    for w in words(clause) {
        if TRAP_VERBS.contains(&w.as_str()) {
            return Some(negated);
        }
        if NEGATION.contains(&w.as_str()) {
            negated = true;
        } else if !LEAD.contains(&w.as_str()) {
            return None;
        }
    }
    None
}

/// Whether the clause opens with a negation before any other word that is not a lead word.
fn opens_negated(clause: &str) -> bool {
    for w in words(clause) {
        if NEGATION.contains(&w.as_str()) {
            return true;
        }
        if !LEAD.contains(&w.as_str()) {
            return false;
        }
    }
    false
}

/// Whether a sentence matching `trap` tells the reader to walk into it.
fn contradicts(trap: &Trap, sentence: &str) -> bool {
    if trap.to_avoid() {
        clauses(sentence)
            .iter()
            .any(|(_, c)| instruction(c) == Some(false))
    } else {
        let Some(m) = trap.guard.find(sentence) else {
            return false;
        };
        clauses(sentence)
            .iter()
            .rev()
            .find(|(start, _)| *start <= m.start())
            .is_some_and(|(_, c)| opens_negated(c))
    }
}

/// Each trap against a document.
pub fn coverage(doc: &Document, traps: &[Trap]) -> Vec<TrapResult> {
    let sentences: Vec<(usize, String)> = units(doc)
        .into_iter()
        .flat_map(|(line, text)| {
            sentences(&text)
                .into_iter()
                .map(move |s| (line, s))
                .collect::<Vec<_>>()
        })
        .collect();
    traps
        .iter()
        .map(|trap| {
            let matching: Vec<&(usize, String)> = sentences
                .iter()
                .filter(|(_, s)| trap.guard.is_match(s))
                .collect();
            let against = matching.iter().find(|(_, s)| contradicts(trap, s));
            let (coverage, decided) = match (against, matching.first()) {
                (Some(s), _) => (Coverage::Contradicted, Some(*s)),
                (None, Some(s)) => (Coverage::Covered, Some(*s)),
                (None, None) => (Coverage::Missing, None),
            };
            TrapResult {
                id: trap.id.clone(),
                coverage,
                naive: trap.guard.is_match(&doc.text),
                line: decided.map(|(l, _)| *l),
                evidence: decided.map(|(_, s)| s.clone()).unwrap_or_default(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trap(kind: &str, pattern: &str) -> Trap {
        Trap {
            id: "t".into(),
            kind: kind.into(),
            description: String::new(),
            guard: Regex::new(&format!("(?i){pattern}")).unwrap(),
            detect: None,
        }
    }

    #[test]
    fn instructions_and_prohibitions() {
        let t = trap(
            "reverted-do-not-re-add",
            "client-side .*(total|revert)|reverted.*total",
        );
        for s in [
            "Built then reverted, do NOT re-add: A client-side order-total calculation.",
            "The client-side total was reverted; the upgrade broke tax totals.",
            "The client-side total was reverted.",
            "Never restore the client-side total.",
            "Do not swap the client-side total back in.",
        ] {
            assert!(!contradicts(&t, s), "{s}");
        }
        for s in [
            "The client-side total was reverted, but re-add it for a snappier UI.",
            "Re-add the client-side total first.",
            "You should restore the client-side total.",
            "Feel free to bring back the client-side total.",
        ] {
            assert!(contradicts(&t, s), "{s}");
        }
        let step = trap("ambiguous-next-action", "lock:ci");
        assert!(!contradicts(&step, "Run npm run lock:ci first."));
        assert!(contradicts(&step, "Skip npm run lock:ci, it is slow."));
        assert!(contradicts(&step, "No need to run lock:ci first."));
    }

    #[test]
    fn sentences_split_at_stops_not_in_names() {
        assert_eq!(
            sentences("Do NOT delete `src/legacy-retry-shim.js`: it loads. Next."),
            [
                "Do NOT delete `src/legacy-retry-shim.js`: it loads.",
                "Next."
            ]
        );
    }
}
