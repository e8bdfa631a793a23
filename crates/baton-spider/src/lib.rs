//! LiC's database-family evaluator: Spider test-suite execution match.
//!
//! This crate scores an SQL answer the way Lost in Conversation's
//! `TaskDatabase.evaluator_function` does: `eval_exec_match` with
//! `plug_value=True, keep_distinct=False` and LiC's 100-candidate cap, run
//! against every `*.sqlite*` file of the sample's database folder, with the
//! result compared under Python value semantics. It is bit-compatible with
//! LiC on the conformance vectors, quirks included (DISTINCT is removed from
//! both queries; only the first statement survives; gold literal values are
//! plugged into the prediction; `order by` in the gold turns on order
//! sensitivity; `1` and `1.0` are equal values but sort differently).
//!
//! It is not a SQL engine or a general sqlparse port: the lexer reproduces
//! sqlparse 0.6.1 only where the evaluator's result depends on it, and
//! execution is SQLite through `rusqlite` (bundled), not Python.
//!
//! Main items: [`SpiderEvaluator`] (configured by [`SpiderConfig`]) with
//! [`SpiderEvaluator::evaluate`] on an already-extracted answer, and
//! [`read_sql`] / [`extract_sql`], baton's deterministic replacement for LiC's LLM-based
//! answer extraction (comments removed, the final query chosen, the rule that fired named).
//!
//! # Where this differs from LiC, on purpose
//!
//! - Databases are opened read-only and locked down (see the `exec` module):
//!   a prediction that would write (`INSERT`, `DROP`, `PRAGMA x = …`, `ATTACH`,
//!   `VACUUM INTO`, …) fails. LiC runs such statements against the files and
//!   can score them 1 when the gold returns no rows.
//! - Each query has a real time limit ([`SpiderConfig::query_timeout`]); a
//!   timeout ends the evaluation with score 0 (LiC's 60 s timeout never
//!   fires, it would hang). So does a result larger than [`MAX_RESULT_BYTES`]
//!   (no gold result is that large). A string or blob larger than
//!   [`MAX_VALUE_BYTES`] is an SQL error, as in any SQLite built with that
//!   limit.
//! - The whole evaluation of one answer (gold queries, the prediction and
//!   every value filling on every database file) has a time budget
//!   ([`SpiderConfig::score_budget`]). A prediction that runs 59 s and is
//!   wrong is therefore not re-run for each of up to 100 fillings: once the
//!   budget is spent the answer scores 0 with a reason naming the budget and
//!   the candidates tried, and each query's limit is the smaller of the query
//!   timeout and what is left of the budget.
//! - The gold query runs once per file up front instead of once per
//!   candidate; a gold that fails on any file scores 0 either way.
//! - Gold values are plugged in first-seen order, not Python set order (which
//!   is random per process), so results under the candidate cap are
//!   reproducible.
//! - A database folder that holds no `.sqlite` file is a setup error; LiC
//!   would score every parseable prediction 1.
//! - SQLite is the bundled 3.50 rather than LiC's 3.40; functions added since
//!   (e.g. `concat`) work here and would fail there.
//! - The lexer does not carry sqlparse's full keyword table (see `lexer`),
//!   which only matters for non-ASCII spellings of keywords; sqlparse's
//!   grouping-depth limit is copied for plain parentheses only (see
//!   `statement`).
//!
//! ```
//! use std::time::Duration;
//! use baton_spider::{SpiderConfig, SpiderEvaluator, extract_sql};
//!
//! let sql = extract_sql("Here you go:\n```sql\nSELECT name FROM singer\n```");
//! assert_eq!(sql, "SELECT name FROM singer");
//! let evaluator = SpiderEvaluator::new(SpiderConfig {
//!     databases_dir: "data/spider/databases".into(),
//!     query_timeout: Duration::from_secs(60),
//!     score_budget: Duration::from_secs(120),
//! });
//! assert_eq!(SpiderConfig::new("x").query_timeout, evaluator.config().query_timeout);
//! let sample = serde_json::json!({"reference_sql": "SELECT 1"});
//! assert!(evaluator.evaluate(&sql, &sample).is_err()); // no db_id
//! ```
#![deny(missing_docs)]

mod exec;
mod extract;
mod lexer;
mod pyre;
mod pyvalue;
mod statement;
mod values;

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use baton_types::Verdict;
use serde_json::json;

pub use exec::{MAX_RESULT_BYTES, MAX_VALUE_BYTES};
pub use extract::{SqlAnswer, extract_sql, read_sql};

use exec::{ExecError, execute};
use pyvalue::{Row, result_eq};
use values::{Fillings, extract_query_values, remove_distinct};

/// LiC's cap on candidates (the raw prediction plus value fillings).
pub const MAX_CANDIDATES: usize = 100;

/// Errors that are not a score: the evaluator cannot run at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SpiderError {
    /// The configured databases folder does not exist.
    #[error("spider databases folder {} not found", path.display())]
    DatabasesDirMissing {
        /// The configured folder.
        path: PathBuf,
    },
    /// The sample's database folder does not exist.
    #[error("database folder {} for db_id {db_id:?} not found", path.display())]
    DatabaseMissing {
        /// The sample's `db_id`.
        db_id: String,
        /// The folder that was looked for.
        path: PathBuf,
    },
    /// The sample's database folder holds no file whose name contains `.sqlite`.
    #[error("database folder {} for db_id {db_id:?} holds no .sqlite file", path.display())]
    NoDatabaseFiles {
        /// The sample's `db_id`.
        db_id: String,
        /// The folder that was listed.
        path: PathBuf,
    },
    /// The database folder could not be listed.
    #[error("cannot list database folder {}", path.display())]
    ListDatabases {
        /// The folder that was listed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The sample lacks a string field the evaluator reads.
    #[error("sample has no string field {key:?}")]
    MissingSampleKey {
        /// `db_id` or `reference_sql`.
        key: &'static str,
    },
    /// The sample's `db_id` is not a single folder name.
    #[error("sample db_id {db_id:?} is not a plain folder name")]
    InvalidDbId {
        /// The offending `db_id`.
        db_id: String,
    },
}

/// Where the databases are and how long a query may run.
#[derive(Debug, Clone)]
pub struct SpiderConfig {
    /// The folder LiC calls `data/spider/databases/`: one sub-folder per
    /// `db_id`, each holding the test-suite variants (`*.sqlite`).
    pub databases_dir: PathBuf,
    /// Limit for each query execution (LiC nominally uses 60 s).
    pub query_timeout: Duration,
    /// Limit for scoring one answer, all queries together (default twice the default
    /// query timeout, 120 s).
    pub score_budget: Duration,
}

impl SpiderConfig {
    /// LiC's nominal per-query limit.
    pub const DEFAULT_QUERY_TIMEOUT: Duration = Duration::from_secs(60);
    /// The default time budget for scoring one answer.
    pub const DEFAULT_SCORE_BUDGET: Duration = Duration::from_secs(120);

    /// Databases under `databases_dir`, with the default 60 s query limit and 120 s budget.
    pub fn new(databases_dir: impl Into<PathBuf>) -> Self {
        SpiderConfig {
            databases_dir: databases_dir.into(),
            query_timeout: Self::DEFAULT_QUERY_TIMEOUT,
            score_budget: Self::DEFAULT_SCORE_BUDGET,
        }
    }
}

/// LiC's database evaluator. Cheap to clone and safe to share across threads;
/// every query opens its own read-only connection.
#[derive(Debug, Clone)]
pub struct SpiderEvaluator {
    config: SpiderConfig,
}

/// Python's `postprocess`: glue `> =`, `< =` and `! =`.
fn postprocess(query: &str) -> String {
    query
        .replace("> =", ">=")
        .replace("< =", "<=")
        .replace("! =", "!=")
}

fn sample_str<'a>(
    sample: &'a serde_json::Value,
    key: &'static str,
) -> Result<&'a str, SpiderError> {
    sample
        .get(key)
        .and_then(serde_json::Value::as_str)
        .ok_or(SpiderError::MissingSampleKey { key })
}

fn file_label(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The clock of one evaluation: each query gets the smaller of the query timeout and what
/// is left of the budget.
struct Clock {
    query_timeout: Duration,
    budget: Duration,
    end: Instant,
}

impl Clock {
    fn start(config: &SpiderConfig) -> Clock {
        Clock {
            query_timeout: config.query_timeout,
            budget: config.score_budget,
            end: Instant::now() + config.score_budget,
        }
    }

    /// The limit of the next query; `None` once the budget is spent.
    fn next_limit(&self) -> Option<Duration> {
        let left = self.end.saturating_duration_since(Instant::now());
        (!left.is_zero()).then(|| left.min(self.query_timeout))
    }

    fn spent(&self) -> bool {
        Instant::now() >= self.end
    }
}

/// Why a candidate failed on the databases.
enum CandidateFailure {
    Error {
        file: String,
        error: ExecError,
    },
    Mismatch {
        file: String,
    },
    /// The scoring budget ran out before or during this candidate.
    OutOfTime,
}

impl SpiderEvaluator {
    /// An evaluator reading databases from `config.databases_dir`.
    pub fn new(config: SpiderConfig) -> Self {
        SpiderEvaluator { config }
    }

    /// The configuration in use.
    pub fn config(&self) -> &SpiderConfig {
        &self.config
    }

    /// Every entry of the sample's folder whose name contains `.sqlite`, sorted.
    fn database_files(&self, db_id: &str) -> Result<Vec<PathBuf>, SpiderError> {
        if !self.config.databases_dir.is_dir() {
            return Err(SpiderError::DatabasesDirMissing {
                path: self.config.databases_dir.clone(),
            });
        }
        let mut components = Path::new(db_id).components();
        if !matches!(
            (components.next(), components.next()),
            (Some(Component::Normal(_)), None)
        ) {
            return Err(SpiderError::InvalidDbId {
                db_id: db_id.to_owned(),
            });
        }
        let dir = self.config.databases_dir.join(db_id);
        if !dir.is_dir() {
            return Err(SpiderError::DatabaseMissing {
                db_id: db_id.to_owned(),
                path: dir,
            });
        }
        let entries = std::fs::read_dir(&dir).map_err(|source| SpiderError::ListDatabases {
            path: dir.clone(),
            source,
        })?;
        let mut names: Vec<OsString> = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| SpiderError::ListDatabases {
                path: dir.clone(),
                source,
            })?;
            let name = entry.file_name();
            if name
                .as_encoded_bytes()
                .windows(b".sqlite".len())
                .any(|w| w == b".sqlite")
            {
                names.push(name);
            }
        }
        if names.is_empty() {
            return Err(SpiderError::NoDatabaseFiles {
                db_id: db_id.to_owned(),
                path: dir,
            });
        }
        names.sort();
        Ok(names.into_iter().map(|n| dir.join(n)).collect())
    }

    /// LiC's `TaskDatabase.evaluator_function` on an already-extracted answer.
    ///
    /// Reads `db_id` and `reference_sql` from `sample`. Returns a score of 1.0
    /// or 0.0 with `is_correct: None` (LiC's database evaluator returns no
    /// `is_correct`); a failing verdict names the reason. `Err` only when the
    /// evaluation cannot run (missing folders or sample keys).
    pub fn evaluate(
        &self,
        extracted: &str,
        sample: &serde_json::Value,
    ) -> Result<Verdict, SpiderError> {
        let db_id = sample_str(sample, "db_id")?;
        let reference = sample_str(sample, "reference_sql")?;
        let files = self.database_files(db_id)?;
        Ok(self.score(extracted, reference, &files))
    }

    fn score(&self, extracted: &str, reference: &str, files: &[PathBuf]) -> Verdict {
        let timeout = self.config.query_timeout;
        let clock = Clock::start(&self.config);
        let out_of_time = |tried: usize| {
            format!(
                "time budget spent: scoring this answer may take {:?} in all, and it ran out \
                 after {tried} candidate(s)",
                clock.budget
            )
        };
        // The task wrapper: strip fences, collapse whitespace (the gold keeps
        // its whitespace).
        let pred = extracted.replace("```sql", "").replace("```", "");
        let pred = baton_py::strip(&pyre::collapse_space(&pred)).to_owned();

        let pred = match remove_distinct(&postprocess(&pred)) {
            Ok(p) => p,
            Err(e) => return Verdict::fail(None, format!("prediction could not be parsed: {e}")),
        };
        let gold = match remove_distinct(&postprocess(reference)) {
            Ok(g) => g,
            Err(e) => return Verdict::fail(None, format!("gold query could not be parsed: {e}")),
        };
        let order_matters = baton_py::lower(&gold).contains("order by");
        let gold_values = match extract_query_values(&gold) {
            Ok(v) => v.distinct_values(),
            Err(e) => {
                return Verdict::fail(None, format!("gold values could not be extracted: {e}"));
            }
        };
        let pred_slots = match extract_query_values(&pred) {
            Ok(s) => s,
            Err(e) => {
                return Verdict::fail(
                    None,
                    format!("prediction values could not be extracted: {e}"),
                );
            }
        };

        let mut gold_rows: Vec<Vec<Row>> = Vec::with_capacity(files.len());
        for file in files {
            let Some(limit) = clock.next_limit() else {
                return Verdict::fail(None, out_of_time(0));
            };
            match execute(file, &gold, limit) {
                Ok(rows) => gold_rows.push(rows),
                Err(ExecError::Timeout) if clock.spent() => {
                    return Verdict::fail(None, out_of_time(0));
                }
                Err(e) => {
                    return Verdict::fail(
                        None,
                        format!("gold query failed on {}: {e}", file_label(file)),
                    );
                }
            }
        }

        let details = |tried: usize| {
            json!({
                "candidates_tried": tried,
                "value_slots": pred_slots.slot_count(),
                "gold_values": gold_values.len(),
                "order_matters": order_matters,
                "databases": files.len(),
            })
        };
        let candidates =
            std::iter::once(pred.clone()).chain(Fillings::new(&pred_slots, &gold_values));
        let mut first_failure: Option<CandidateFailure> = None;
        let mut tried = 0;
        for (index, candidate) in candidates.enumerate() {
            if index >= MAX_CANDIDATES {
                return Verdict::fail(
                    None,
                    format!(
                        "candidate cap reached: {MAX_CANDIDATES} candidates failed ({})",
                        describe(first_failure.as_ref())
                    ),
                )
                .with_details(details(index));
            }
            tried = index + 1;
            match self.run_candidate(&candidate, files, &gold_rows, order_matters, &clock) {
                Ok(()) => {
                    let mut d = details(index + 1);
                    d["passed_candidate"] = json!(index);
                    return Verdict::new(1.0, None).with_details(d);
                }
                Err(CandidateFailure::OutOfTime) => {
                    return Verdict::fail(None, out_of_time(index))
                        .with_details(details(index + 1));
                }
                Err(CandidateFailure::Error {
                    file,
                    error: ExecError::Timeout,
                }) => {
                    return Verdict::fail(
                        None,
                        format!("timeout: candidate {index} ran past {timeout:?} on {file}"),
                    )
                    .with_details(details(index + 1));
                }
                Err(CandidateFailure::Error {
                    file,
                    error: ExecError::TooLarge,
                }) => {
                    return Verdict::fail(
                        None,
                        format!(
                            "result too large: candidate {index} returned more than \
                             {MAX_RESULT_BYTES} bytes on {file}"
                        ),
                    )
                    .with_details(details(index + 1));
                }
                Err(failure) => {
                    first_failure.get_or_insert(failure);
                }
            }
        }
        Verdict::fail(None, describe(first_failure.as_ref())).with_details(details(tried))
    }

    /// One candidate against every file; stops at the first failing file.
    fn run_candidate(
        &self,
        candidate: &str,
        files: &[PathBuf],
        gold_rows: &[Vec<Row>],
        order_matters: bool,
        clock: &Clock,
    ) -> Result<(), CandidateFailure> {
        for (file, gold) in files.iter().zip(gold_rows) {
            let limit = clock.next_limit().ok_or(CandidateFailure::OutOfTime)?;
            match execute(file, candidate, limit) {
                Err(ExecError::Timeout) if clock.spent() => {
                    return Err(CandidateFailure::OutOfTime);
                }
                Err(error) => {
                    return Err(CandidateFailure::Error {
                        file: file_label(file),
                        error,
                    });
                }
                Ok(rows) if !result_eq(gold, &rows, order_matters) => {
                    return Err(CandidateFailure::Mismatch {
                        file: file_label(file),
                    });
                }
                Ok(_) => {}
            }
        }
        Ok(())
    }
}

/// The reason reported for a failed evaluation: the raw prediction's failure.
fn describe(failure: Option<&CandidateFailure>) -> String {
    match failure {
        Some(CandidateFailure::Error { file, error }) => {
            format!("prediction error on {file}: {error}")
        }
        Some(CandidateFailure::Mismatch { file }) => {
            format!("result mismatch on {file}")
        }
        Some(CandidateFailure::OutOfTime) => "time budget spent".to_owned(),
        None => "no candidate to run".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two test-suite variants of a `singer` database; the second adds a
    /// French singer aged 41 (the spec's end-to-end setup).
    fn singer_databases() -> tempfile::TempDir {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("concert_singer");
        std::fs::create_dir(&dir).expect("db folder");
        for (file, extra) in [
            ("concert_singer.sqlite", false),
            ("concert_singer_v1.sqlite", true),
        ] {
            let conn = rusqlite::Connection::open(dir.join(file)).expect("create db");
            conn.execute_batch(
                "CREATE TABLE singer (name TEXT, country TEXT, age INTEGER);
                 INSERT INTO singer VALUES ('Alice', 'France', 45), ('Bob', 'France', 35),
                   ('Carl', 'USA', 50), ('Dana', 'France', 42), ('Eli', 'Peru', 30);",
            )
            .expect("fill db");
            if extra {
                conn.execute("INSERT INTO singer VALUES ('Eve', 'France', 41)", [])
                    .expect("extra row");
            }
        }
        root
    }

    fn evaluator(root: &Path) -> SpiderEvaluator {
        SpiderEvaluator::new(SpiderConfig {
            databases_dir: root.to_path_buf(),
            query_timeout: Duration::from_secs(10),
            score_budget: Duration::from_secs(60),
        })
    }

    const DEFAULT_GOLD: &str = "SELECT name FROM singer WHERE country = 'France' AND age > 40";

    #[test]
    fn spec_end_to_end_vectors() {
        let root = singer_databases();
        let ev = evaluator(root.path());
        let cases = [
            (
                "SELECT name FROM singer WHERE country = 'france' AND age > 30",
                DEFAULT_GOLD,
                1.0,
            ),
            (
                "SELECT name, age FROM singer WHERE country = 'France' AND age > 40",
                DEFAULT_GOLD,
                0.0,
            ),
            (
                "SELECT name FROM singer WHERE age > 40 AND country = 'France' ORDER BY name",
                DEFAULT_GOLD,
                1.0,
            ),
            (
                "SELECT name FROM singer WHERE country='France' ORDER BY age",
                "SELECT name FROM singer WHERE country = 'France' ORDER BY age DESC",
                0.0,
            ),
            (
                "SELECT DISTINCT country FROM singer",
                "SELECT country FROM singer",
                1.0,
            ),
            (
                "SELECT count(*) FROM singer WHERE age > 40",
                "SELECT count(*) FROM singer WHERE age > 41",
                1.0,
            ),
            (
                "SELECT age, name FROM singer WHERE country = 'France'",
                "SELECT name, age FROM singer WHERE country = 'France'",
                1.0,
            ),
        ];
        for (pred, gold, want) in cases {
            let sample = json!({"db_id": "concert_singer", "reference_sql": gold});
            let verdict = ev.evaluate(pred, &sample).expect("evaluates");
            assert_eq!(verdict.score, want, "{pred} vs {gold}: {:?}", verdict.error);
            assert_eq!(verdict.is_correct, None);
            assert_eq!(verdict.error.is_some(), want == 0.0);
        }
    }

    #[test]
    fn failure_reasons() {
        let root = singer_databases();
        let ev = evaluator(root.path());
        let sample = json!({"db_id": "concert_singer", "reference_sql": DEFAULT_GOLD});
        let reason = |pred: &str| {
            ev.evaluate(pred, &sample)
                .unwrap()
                .error
                .unwrap_or_default()
        };
        assert!(
            reason("SELECT nope FROM singer")
                .starts_with("prediction error on concert_singer.sqlite")
        );
        assert_eq!(
            reason("SELECT name FROM singer"),
            "result mismatch on concert_singer.sqlite"
        );
        assert!(reason("").starts_with("prediction could not be parsed"));
        let bad_gold = json!({"db_id": "concert_singer", "reference_sql": "SELECT x FROM nowhere"});
        let verdict = ev.evaluate(DEFAULT_GOLD, &bad_gold).unwrap();
        assert!(
            verdict
                .error
                .unwrap()
                .starts_with("gold query failed on concert_singer.sqlite")
        );
        // Many slots and values: the cap ends the search.
        let wide = json!({"db_id": "concert_singer",
            "reference_sql": "SELECT name FROM singer WHERE age IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)"});
        let verdict = ev
            .evaluate(
                "SELECT count(*) FROM singer WHERE age IN (20, 21) AND name != 'x'",
                &wide,
            )
            .unwrap();
        assert!(verdict.error.unwrap().starts_with("candidate cap reached"));
        assert_eq!(verdict.details["candidates_tried"], 100);
    }

    #[test]
    fn setup_errors_name_what_is_missing() {
        let root = singer_databases();
        let ev = evaluator(root.path());
        let err = ev
            .evaluate("SELECT 1", &json!({"reference_sql": "SELECT 1"}))
            .unwrap_err();
        assert_eq!(err.to_string(), "sample has no string field \"db_id\"");
        let err = ev
            .evaluate("SELECT 1", &json!({"db_id": "concert_singer"}))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "sample has no string field \"reference_sql\""
        );
        let sample = json!({"db_id": "nowhere", "reference_sql": "SELECT 1"});
        let err = ev.evaluate("SELECT 1", &sample).unwrap_err();
        assert!(matches!(err, SpiderError::DatabaseMissing { .. }));
        assert!(
            err.to_string()
                .contains(&root.path().join("nowhere").display().to_string())
        );
        let sample = json!({"db_id": "../concert_singer", "reference_sql": "SELECT 1"});
        assert!(matches!(
            ev.evaluate("SELECT 1", &sample),
            Err(SpiderError::InvalidDbId { .. })
        ));
        std::fs::create_dir(root.path().join("empty")).unwrap();
        let sample = json!({"db_id": "empty", "reference_sql": "SELECT 1"});
        assert!(matches!(
            ev.evaluate("SELECT 1", &sample),
            Err(SpiderError::NoDatabaseFiles { .. })
        ));
        let missing = root.path().join("not-there");
        let err = evaluator(&missing)
            .evaluate(
                "SELECT 1",
                &json!({"db_id": "x", "reference_sql": "SELECT 1"}),
            )
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("spider databases folder {} not found", missing.display())
        );
    }

    #[test]
    fn evaluator_is_shareable() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<SpiderEvaluator>();
        let root = singer_databases();
        let ev = evaluator(root.path());
        let sample = json!({"db_id": "concert_singer", "reference_sql": DEFAULT_GOLD});
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| assert_eq!(ev.evaluate(DEFAULT_GOLD, &sample).unwrap().score, 1.0));
            }
        });
    }
}
