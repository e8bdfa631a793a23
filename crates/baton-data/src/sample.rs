//! The bundled sample set and its small Spider-style databases.
//!
//! `datasets/sample/sample.json` and the SQL text under
//! `datasets/sample/databases/` are compiled into the binary, so `baton demo`
//! needs nothing on disk. [`materialize_sample_databases`] turns the SQL into
//! the `<db_id>/<name>.sqlite` layout the database evaluator reads.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use sha2::{Digest, Sha256};

use crate::error::DataError;
use crate::load::{Dataset, parse};

/// The name the embedded sample set reports as its path.
pub const SAMPLE_PATH: &str = "datasets/sample/sample.json";

const SAMPLE_JSON: &str = include_str!("../../../datasets/sample/sample.json");

/// One embedded sample database: its `db_id`, file stem and SQL text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleDatabase {
    /// The Spider-style database id (folder name).
    pub db_id: &'static str,
    /// The file stem; the built file is `<db_id>/<name>.sqlite`.
    pub name: &'static str,
    /// The SQL script that creates and fills it.
    pub sql: &'static str,
}

macro_rules! sample_db {
    ($db:literal, $name:literal) => {
        SampleDatabase {
            db_id: $db,
            name: $name,
            sql: include_str!(concat!(
                "../../../datasets/sample/databases/",
                $db,
                "/",
                $name,
                ".sql"
            )),
        }
    };
}

/// Every embedded sample database file: at least two test-suite variants
/// (same schema, different rows) per `db_id`.
pub const SAMPLE_DATABASES: &[SampleDatabase] = &[
    sample_db!("bookshop", "bookshop"),
    sample_db!("bookshop", "bookshop_v1"),
    sample_db!("bookshop", "bookshop_v2"),
    sample_db!("harbor", "harbor"),
    sample_db!("harbor", "harbor_v1"),
    sample_db!("harbor", "harbor_v2"),
    sample_db!("orchestra", "orchestra"),
    sample_db!("orchestra", "orchestra_v1"),
    sample_db!("orchestra", "orchestra_v2"),
];

/// The bundled sample set, parsed and validated.
///
/// # Panics
///
/// Never in practice: the text is compiled in and the crate's tests parse it
/// (`sample_set_parses_and_validates`), so a broken sample cannot ship. Use
/// [`try_sample_dataset`] to get the error instead.
pub fn sample_dataset() -> Dataset {
    match try_sample_dataset() {
        Ok(dataset) => dataset,
        Err(err) => panic!("the embedded sample set is invalid: {err}"),
    }
}

/// The bundled sample set, or the validation error if it were broken.
pub fn try_sample_dataset() -> Result<Dataset, DataError> {
    parse(SAMPLE_PATH, SAMPLE_JSON)
}

/// Build the sample databases as `<out_dir>/<db_id>/<name>.sqlite` and return
/// `out_dir`, the folder to hand to the database evaluator.
///
/// Idempotent: a file is rebuilt only if it is missing or was built from
/// different SQL (the script's sha256 is kept in the file's `user_version` and
/// `application_id` header fields). Each file is written to a temporary name
/// without `.sqlite` in it and renamed into place, so a reader never sees a
/// half-built database and an interrupted build leaves nothing the evaluator
/// would pick up.
pub fn materialize_sample_databases(out_dir: &Path) -> Result<PathBuf, DataError> {
    for db in SAMPLE_DATABASES {
        let folder = out_dir.join(db.db_id);
        std::fs::create_dir_all(&folder).map_err(|source| DataError::Io {
            path: folder.clone(),
            source,
        })?;
        let target = folder.join(format!("{}.sqlite", db.name));
        let stamp = sql_stamp(db.sql);
        if target.exists() && read_stamp(&target) == Some(stamp) {
            continue;
        }
        build_database(&folder, &target, db.sql, stamp)?;
    }
    Ok(out_dir.to_path_buf())
}

/// The first 8 bytes of the script's sha256, as two i32 header fields.
fn sql_stamp(sql: &str) -> (i32, i32) {
    let digest = Sha256::digest(sql.as_bytes());
    let a = i32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    let b = i32::from_be_bytes([digest[4], digest[5], digest[6], digest[7]]);
    (a, b)
}

fn read_stamp(path: &Path) -> Option<(i32, i32)> {
    let conn =
        Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
    let a = conn
        .query_row("PRAGMA user_version", [], |r| r.get::<_, i32>(0))
        .ok()?;
    let b = conn
        .query_row("PRAGMA application_id", [], |r| r.get::<_, i32>(0))
        .ok()?;
    Some((a, b))
}

fn build_database(
    folder: &Path,
    target: &Path,
    sql: &str,
    (a, b): (i32, i32),
) -> Result<(), DataError> {
    let io = |source| DataError::Io {
        path: folder.to_path_buf(),
        source,
    };
    let sqlite = |source| DataError::Sqlite {
        path: target.to_path_buf(),
        source,
    };
    let temp = tempfile::Builder::new()
        .prefix(".building-")
        .suffix(".tmp")
        .tempfile_in(folder)
        .map_err(io)?;
    {
        let mut conn = Connection::open(temp.path()).map_err(sqlite)?;
        // One transaction: one sync instead of one per INSERT.
        let tx = conn.transaction().map_err(sqlite)?;
        tx.execute_batch(sql).map_err(sqlite)?;
        tx.execute_batch(&format!(
            "PRAGMA user_version = {a}; PRAGMA application_id = {b};"
        ))
        .map_err(sqlite)?;
        tx.commit().map_err(sqlite)?;
        conn.close().map_err(|(_, source)| sqlite(source))?;
    }
    temp.persist(target).map_err(|err| io(err.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_types::Family;

    #[test]
    fn sample_set_parses_and_validates() {
        let ds = try_sample_dataset().expect("the embedded sample set must validate");
        for family in Family::ALL {
            let n = ds.tasks.iter().filter(|t| t.family == family).count();
            assert!(n >= 6, "{family}: only {n} sample tasks");
        }
        for task in &ds.tasks {
            assert!(
                (3..=8).contains(&task.shards.len()),
                "{}: {} shards",
                task.task_id,
                task.shards.len()
            );
            let prefix = format!("sample-{}/", task.family);
            assert!(task.task_id.starts_with(&prefix), "{}", task.task_id);
        }
        assert!(ds.skipped.is_empty());
        assert_eq!(sample_dataset(), ds);
    }

    #[test]
    fn every_database_file_is_embedded() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/sample/databases");
        let mut on_disk = Vec::new();
        for folder in std::fs::read_dir(&root).expect("databases folder") {
            let folder = folder.expect("entry").path();
            for file in std::fs::read_dir(&folder).expect("db folder") {
                let file = file.expect("entry").path();
                if file.extension().is_some_and(|e| e == "sql") {
                    let db_id = folder
                        .file_name()
                        .expect("name")
                        .to_string_lossy()
                        .into_owned();
                    let stem = file
                        .file_stem()
                        .expect("stem")
                        .to_string_lossy()
                        .into_owned();
                    on_disk.push((db_id, stem));
                }
            }
        }
        on_disk.sort();
        let mut embedded: Vec<(String, String)> = SAMPLE_DATABASES
            .iter()
            .map(|d| (d.db_id.to_owned(), d.name.to_owned()))
            .collect();
        embedded.sort();
        assert_eq!(
            on_disk, embedded,
            "SAMPLE_DATABASES must list every .sql file"
        );
    }

    #[test]
    fn materialize_is_idempotent_and_rebuilds_on_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = materialize_sample_databases(dir.path()).expect("build");
        assert_eq!(root, dir.path());
        let file = dir.path().join("bookshop/bookshop_v1.sqlite");
        let first = std::fs::metadata(&file)
            .expect("built")
            .modified()
            .expect("mtime");
        // A second call leaves a current file alone.
        std::thread::sleep(std::time::Duration::from_millis(20));
        materialize_sample_databases(dir.path()).expect("again");
        let second = std::fs::metadata(&file)
            .expect("kept")
            .modified()
            .expect("mtime");
        assert_eq!(first, second);
        // A file built from other SQL is replaced.
        {
            let conn = Connection::open(&file).expect("open");
            conn.execute_batch("PRAGMA user_version = 7;")
                .expect("stamp");
        }
        materialize_sample_databases(dir.path()).expect("rebuild");
        assert_eq!(read_stamp(&file), Some(sql_stamp(SAMPLE_DATABASES[1].sql)));
        // Only the .sqlite files are left in each folder.
        for entry in std::fs::read_dir(dir.path().join("harbor")).expect("folder") {
            let name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            assert!(name.ends_with(".sqlite"), "stray file {name}");
        }
    }
}
