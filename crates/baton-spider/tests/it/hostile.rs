//! Hostile predictions: each must end within the time limit with LiC's verdict
//! and leave every database file byte-identical, with no journal, WAL or other
//! new file next to them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use baton_spider::{SpiderConfig, SpiderEvaluator};
use serde_json::json;
use sha2::{Digest, Sha256};

use baton_fixture::shared_dir;

const TIMEOUT: Duration = Duration::from_secs(2);
/// Time allowed on top of the query timeout (slow debug builds, busy machine).
const SLACK: Duration = Duration::from_secs(4);
const GOLD: &str = "SELECT name FROM artist";

/// Writable copies of the conformance databases in a temporary folder.
struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new(source: &Path) -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        for db in std::fs::read_dir(source).expect("list databases") {
            let db = db.expect("entry").path();
            if !db.is_dir() {
                continue;
            }
            let target = dir.path().join(db.file_name().expect("name"));
            std::fs::create_dir(&target).expect("create db folder");
            for file in std::fs::read_dir(&db).expect("list db folder") {
                let file = file.expect("entry").path();
                let copy = target.join(file.file_name().expect("name"));
                std::fs::copy(&file, &copy).expect("copy database");
                // Writable on purpose: protection must come from the evaluator.
                let mut perms = std::fs::metadata(&copy).expect("metadata").permissions();
                #[allow(clippy::permissions_set_readonly_false)]
                perms.set_readonly(false);
                std::fs::set_permissions(&copy, perms).expect("make writable");
            }
        }
        Sandbox { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// sha256 of every file under the sandbox, by relative path.
    fn snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("list") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let bytes = std::fs::read(&path).expect("read file");
                    let digest = Sha256::digest(&bytes);
                    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                    let rel = path
                        .strip_prefix(self.path())
                        .expect("inside")
                        .to_path_buf();
                    out.insert(rel, hex);
                }
            }
        }
        out
    }
}

struct Case {
    name: &'static str,
    prediction: String,
    score: f64,
}

fn case(name: &'static str, prediction: impl Into<String>, score: f64) -> Case {
    Case {
        name,
        prediction: prediction.into(),
        score,
    }
}

#[test]
fn hostile_predictions_are_contained() {
    let Some(conformance) = shared_dir("conformance") else {
        return;
    };
    let sandbox = Sandbox::new(&conformance.join("databases"));
    let outside = tempfile::tempdir().expect("temp dir");
    let db_dir = sandbox.path().join("music_festival");
    let attach_target = db_dir.join("evil.sqlite");
    let vacuum_target = outside.path().join("vacuumed.sqlite");
    let cross_join = format!(
        "SELECT count(*) FROM {}",
        (0..10)
            .map(|i| format!("artist a{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let cases = vec![
        case("insert", "INSERT INTO artist (name) VALUES ('x')", 0.0),
        case("drop table", "DROP TABLE artist", 0.0),
        case("update", "UPDATE artist SET name = 'x'", 0.0),
        case("delete returning", "DELETE FROM artist RETURNING name", 0.0),
        case(
            "replace",
            "REPLACE INTO artist (artist_id, name) VALUES (1, 'x')",
            0.0,
        ),
        case("create table", "CREATE TABLE evil (x)", 0.0),
        case(
            "create temp table",
            "CREATE TEMP TABLE evil AS SELECT name FROM artist",
            0.0,
        ),
        case("create index", "CREATE INDEX evil ON artist (name)", 0.0),
        case(
            "attach",
            format!("ATTACH DATABASE '{}' AS evil", attach_target.display()),
            0.0,
        ),
        case("pragma journal_mode", "PRAGMA journal_mode=DELETE", 0.0),
        case("pragma journal_mode wal", "PRAGMA journal_mode=WAL", 0.0),
        case("pragma user_version", "PRAGMA user_version=5", 0.0),
        case("pragma hard_heap_limit", "PRAGMA hard_heap_limit=1", 0.0),
        case("pragma query_only off", "PRAGMA query_only=0", 0.0),
        case(
            "endless recursive cte",
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
            0.0,
        ),
        case("huge cross join", cross_join, 0.0),
        case("randomblob bomb", "SELECT randomblob(2000000000)", 0.0),
        case(
            "randomblob per row",
            "SELECT length(randomblob(60000000)) FROM artist a, artist b",
            0.0,
        ),
        case(
            "group_concat bomb",
            "SELECT group_concat(hex(randomblob(1000000))) FROM artist a, artist b, artist c",
            0.0,
        ),
        case(
            "doubling strings",
            "WITH RECURSIVE r(s) AS (SELECT 'x' UNION ALL SELECT s || s FROM r) SELECT max(length(s)) FROM r",
            0.0,
        ),
        case(
            "result too large",
            "SELECT hex(randomblob(1000000)) FROM artist a, artist b",
            0.0,
        ),
        case(
            "endless rows",
            "SELECT a.name FROM artist a, artist b, artist c, artist d, artist e, artist f, artist g",
            0.0,
        ),
        case("printf bomb", "SELECT printf('%.*c', 2000000000, 'x')", 0.0),
        case("truncated drop", format!("{GOLD}; DROP TABLE artist"), 1.0),
        case(
            "truncated drop, no space",
            format!("{GOLD};DROP TABLE artist;"),
            1.0,
        ),
        case("gold second", format!("DROP TABLE artist; {GOLD}"), 0.0),
        case(
            "load_extension",
            "SELECT load_extension('/tmp/evil.so')",
            0.0,
        ),
        case(
            "vacuum into",
            format!("VACUUM INTO '{}'", vacuum_target.display()),
            0.0,
        ),
        case("vacuum", "VACUUM", 0.0),
        case(
            "write via cte",
            "WITH x AS (SELECT 1) INSERT INTO artist (name) SELECT 'x' FROM x",
            0.0,
        ),
        case(
            "delete via cte",
            "WITH x AS (SELECT 1) DELETE FROM artist",
            0.0,
        ),
        case("begin then drop", "BEGIN; DROP TABLE artist", 0.0),
        case("savepoint", "SAVEPOINT s", 0.0),
        case("analyze", "ANALYZE", 0.0),
        case("reindex", "REINDEX", 0.0),
        case("writefile", "SELECT writefile('/tmp/evil', 'x')", 0.0),
        case(
            "huge statement",
            format!("SELECT {}1", "1 + ".repeat(20_000)),
            0.0,
        ),
    ];

    let evaluator = SpiderEvaluator::new(SpiderConfig {
        databases_dir: sandbox.path().to_path_buf(),
        query_timeout: TIMEOUT,
        score_budget: TIMEOUT * 4,
    });
    let sample = json!({"db_id": "music_festival", "reference_sql": GOLD});
    let before = sandbox.snapshot();
    assert!(before.len() >= 10, "databases copied: {before:?}");

    let mut failures = Vec::new();
    for c in &cases {
        let start = Instant::now();
        let verdict = evaluator.evaluate(&c.prediction, &sample);
        let elapsed = start.elapsed();
        let after = sandbox.snapshot();
        match verdict {
            Ok(v) if v.score != c.score => failures.push(format!(
                "{}: score {} (expected {}), error {:?}",
                c.name, v.score, c.score, v.error
            )),
            Ok(_) => {}
            Err(e) => failures.push(format!("{}: setup error {e}", c.name)),
        }
        if elapsed > TIMEOUT + SLACK {
            failures.push(format!("{}: took {elapsed:?}", c.name));
        }
        if after != before {
            failures.push(format!(
                "{}: database files changed: before {before:?}, after {after:?}",
                c.name
            ));
        }
    }
    assert!(
        !attach_target.exists(),
        "ATTACH created {}",
        attach_target.display()
    );
    assert!(
        !vacuum_target.exists(),
        "VACUUM INTO created {}",
        vacuum_target.display()
    );
    assert!(
        !Path::new("/tmp/evil").exists(),
        "writefile wrote /tmp/evil"
    );

    // The gold still works afterwards: no pragma leaked into the process.
    let ok = evaluator.evaluate(GOLD, &sample).expect("evaluates");
    assert_eq!(ok.score, 1.0, "{:?}", ok.error);
    assert!(
        failures.is_empty(),
        "hostile cases failed:\n{}",
        failures.join("\n")
    );
}

#[test]
fn timeouts_fail_fast_and_name_the_cause() {
    let Some(conformance) = shared_dir("conformance") else {
        return;
    };
    let sandbox = Sandbox::new(&conformance.join("databases"));
    let evaluator = SpiderEvaluator::new(SpiderConfig {
        databases_dir: sandbox.path().to_path_buf(),
        query_timeout: Duration::from_millis(300),
        score_budget: Duration::from_secs(10),
    });
    // Several value slots: without the early stop this would run up to 100
    // candidates into the time limit.
    let sample = json!({
        "db_id": "music_festival",
        "reference_sql": "SELECT name FROM artist WHERE age > 30 AND debut_year > 1990 AND is_band = 0"
    });
    let prediction = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) \
                      SELECT count(*) FROM c WHERE x > 30 AND x > 1990 AND x > 0";
    let start = Instant::now();
    let verdict = evaluator.evaluate(prediction, &sample).expect("evaluates");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(verdict.score, 0.0);
    let error = verdict.error.expect("a reason");
    assert!(error.starts_with("timeout"), "{error}");

    // A gold that times out is a gold failure.
    let slow_gold = json!({
        "db_id": "music_festival",
        "reference_sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    });
    let verdict = evaluator
        .evaluate("SELECT 1", &slow_gold)
        .expect("evaluates");
    assert_eq!(verdict.score, 0.0);
    assert!(
        verdict
            .error
            .expect("a reason")
            .contains("gold query failed")
    );
}

// See: issue 9 ("a Spider query that runs 59 s and is wrong is retried for every one of up
// to 100 value fillings").
#[test]
fn issue_9_a_slow_wrong_query_is_not_retried_for_every_filling() {
    let Some(conformance) = shared_dir("conformance") else {
        return;
    };
    let sandbox = Sandbox::new(&conformance.join("databases"));
    let budget = Duration::from_secs(2);
    let evaluator = SpiderEvaluator::new(SpiderConfig {
        databases_dir: sandbox.path().to_path_buf(),
        // No single query times out: only the budget can end this evaluation early.
        query_timeout: Duration::from_secs(600),
        score_budget: budget,
    });
    let sample = json!({
        "db_id": "music_festival",
        "reference_sql": "SELECT name FROM artist WHERE age > 30 AND debut_year > 1990 AND is_band = 0"
    });
    // Slow, wrong, and with three value slots to fill from the gold's three values.
    let prediction = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c \
                      WHERE x < 20000000) SELECT count(*) FROM c WHERE x > 30 AND x > 1990 \
                      AND x > 0";
    let start = Instant::now();
    let verdict = evaluator.evaluate(prediction, &sample).expect("evaluates");
    let elapsed = start.elapsed();
    assert!(elapsed < budget + SLACK, "took {elapsed:?}");
    assert_eq!(verdict.score, 0.0);
    let error = verdict.error.expect("a reason");
    assert!(error.starts_with("time budget spent"), "{error}");
}
