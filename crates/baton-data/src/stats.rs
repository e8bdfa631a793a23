//! A description of a dataset for `baton data stats`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use baton_types::Family;
use serde_json::Value;

use crate::load::Dataset;

/// Counts and shard-length figures of one dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// The dataset's path or name.
    pub path: PathBuf,
    /// Hex sha256 of the dataset's bytes.
    pub sha256: String,
    /// Per-family figures; families without tasks are absent.
    pub families: BTreeMap<Family, FamilyStats>,
    /// Out-of-scope items, counted by family.
    pub skipped: BTreeMap<String, usize>,
    /// Database folders, when a Spider folder was given.
    pub databases: Option<DatabaseStats>,
    /// Items left out as invalid (a lenient read), with why; not counted in `families`.
    pub invalid: Vec<crate::load::InvalidTask>,
}

/// Figures for one family.
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyStats {
    /// Number of tasks.
    pub tasks: usize,
    /// Fewest shards in a task.
    pub shards_min: usize,
    /// Median shards per task (mean of the middle two for an even count).
    pub shards_median: f64,
    /// Most shards in a task.
    pub shards_max: usize,
}

/// Whether each `db_id` the database tasks need has database files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseStats {
    /// The Spider databases folder that was checked.
    pub dir: PathBuf,
    /// One entry per `db_id` used by the dataset.
    pub db_ids: BTreeMap<String, DbStatus>,
}

/// The state of one `<dir>/<db_id>/` folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DbStatus {
    /// How many tasks use this `db_id`.
    pub tasks: usize,
    /// Files whose name contains `.sqlite` (LiC's own test), excluding `._*`.
    pub sqlite_files: usize,
    /// macOS `._*` files, which LiC would also pick up and fail on.
    pub apple_double_files: usize,
}

impl Dataset {
    /// Describe the dataset. With `spider_dir`, also check that every
    /// `db_id` used by a database task has a `<spider_dir>/<db_id>/` folder
    /// holding `*.sqlite` files.
    pub fn stats(&self, spider_dir: Option<&Path>) -> Stats {
        let mut shard_counts: BTreeMap<Family, Vec<usize>> = BTreeMap::new();
        let mut db_tasks: BTreeMap<String, usize> = BTreeMap::new();
        for task in &self.tasks {
            shard_counts
                .entry(task.family)
                .or_default()
                .push(task.shards.len());
            if task.family == Family::Database
                && let Some(db_id) = task.sample.get("db_id").and_then(Value::as_str)
            {
                *db_tasks.entry(db_id.to_owned()).or_default() += 1;
            }
        }
        let families = shard_counts
            .into_iter()
            .map(|(family, mut counts)| {
                counts.sort_unstable();
                let n = counts.len();
                let median = if n % 2 == 1 {
                    counts[n / 2] as f64
                } else {
                    (counts[n / 2 - 1] + counts[n / 2]) as f64 / 2.0
                };
                let stats = FamilyStats {
                    tasks: n,
                    shards_min: counts[0],
                    shards_median: median,
                    shards_max: counts[n - 1],
                };
                (family, stats)
            })
            .collect();
        let databases = spider_dir.map(|dir| DatabaseStats {
            dir: dir.to_path_buf(),
            db_ids: db_tasks
                .into_iter()
                .map(|(db_id, tasks)| {
                    let mut status = scan_db_folder(&dir.join(&db_id));
                    status.tasks = tasks;
                    (db_id, status)
                })
                .collect(),
        });
        Stats {
            path: self.path.clone(),
            sha256: self.sha256.clone(),
            families,
            skipped: self.skipped.clone(),
            databases,
            invalid: self.invalid.clone(),
        }
    }
}

fn scan_db_folder(folder: &Path) -> DbStatus {
    let mut status = DbStatus::default();
    let Ok(entries) = std::fs::read_dir(folder) else {
        return status;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.contains(".sqlite") {
            continue;
        }
        if name.starts_with("._") {
            status.apple_double_files += 1;
        } else {
            status.sqlite_files += 1;
        }
    }
    status
}

impl Stats {
    /// Total number of in-scope tasks.
    pub fn total_tasks(&self) -> usize {
        self.families.values().map(|f| f.tasks).sum()
    }

    /// `db_id`s with no usable database file (only meaningful after a check).
    pub fn missing_databases(&self) -> Vec<&str> {
        self.databases
            .iter()
            .flat_map(|d| d.db_ids.iter())
            .filter(|(_, s)| s.sqlite_files == 0)
            .map(|(id, _)| id.as_str())
            .collect()
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "dataset {}", self.path.display())?;
        writeln!(f, "sha256  {}", self.sha256)?;
        writeln!(f)?;
        writeln!(f, "{:<10} {:>6}  shards min/median/max", "family", "tasks")?;
        for family in Family::ALL {
            match self.families.get(&family) {
                Some(s) => writeln!(
                    f,
                    "{:<10} {:>6}  {}/{}/{}",
                    family.as_str(),
                    s.tasks,
                    s.shards_min,
                    s.shards_median,
                    s.shards_max
                )?,
                None => writeln!(f, "{:<10} {:>6}  -", family.as_str(), 0)?,
            }
        }
        writeln!(f, "{:<10} {:>6}", "total", self.total_tasks())?;
        if !self.invalid.is_empty() {
            writeln!(
                f,
                "invalid: {} item(s), not counted above (`baton run --skip-invalid` leaves them out):",
                self.invalid.len()
            )?;
            for t in &self.invalid {
                writeln!(f, "  {}: {}", t.task_id, t.reason)?;
            }
        }
        if !self.skipped.is_empty() {
            let list: Vec<String> = self
                .skipped
                .iter()
                .map(|(fam, n)| format!("{fam} {n}"))
                .collect();
            writeln!(f, "skipped (out of scope): {}", list.join(", "))?;
        }
        match &self.databases {
            None => {
                if self.families.contains_key(&Family::Database) {
                    writeln!(
                        f,
                        "databases: not checked (no Spider databases folder given)"
                    )?;
                }
            }
            Some(db) => {
                let missing = self.missing_databases();
                writeln!(
                    f,
                    "databases in {}: {} db_id(s) used, {} with *.sqlite files, {} missing",
                    db.dir.display(),
                    db.db_ids.len(),
                    db.db_ids.len() - missing.len(),
                    missing.len()
                )?;
                for (db_id, status) in &db.db_ids {
                    let state = if status.sqlite_files == 0 {
                        "MISSING".to_owned()
                    } else {
                        format!("{} file(s)", status.sqlite_files)
                    };
                    write!(f, "  {db_id:<28} {state:<12} {} task(s)", status.tasks)?;
                    if status.apple_double_files > 0 {
                        write!(
                            f,
                            "  warning: {} macOS ._* file(s); remove them",
                            status.apple_double_files
                        )?;
                    }
                    writeln!(f)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::load::parse;

    #[test]
    fn medians_and_missing_databases() {
        let text = r#"[
 {"task_id": "a", "task": "math", "answer": "so #### 1", "shards": [{"shard_id": 1, "shard": "x"}, {"shard_id": 2, "shard": "y"}]},
 {"task_id": "b", "task": "math", "answer": "so #### 1", "shards": [{"shard_id": 1, "shard": "x"}, {"shard_id": 2, "shard": "y"}, {"shard_id": 3, "shard": "z"}, {"shard_id": 4, "shard": "w"}, {"shard_id": 5, "shard": "v"}]},
 {"task_id": "c", "task": "database", "db_id": "here", "reference_sql": "SELECT 1", "schema_sql": "", "shards": [{"shard_id": 1, "shard": "x"}]},
 {"task_id": "d", "task": "database", "db_id": "gone", "reference_sql": "SELECT 1", "schema_sql": "", "shards": [{"shard_id": 1, "shard": "x"}]},
 {"task_id": "e", "task": "translation", "shards": []}
]"#;
        let ds = parse("mem.json", text).expect("valid");
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("here")).expect("mkdir");
        std::fs::write(dir.path().join("here/here.sqlite"), b"").expect("write");
        std::fs::write(dir.path().join("here/._here.sqlite"), b"").expect("write");
        let stats = ds.stats(Some(dir.path()));
        let math = &stats.families[&baton_types::Family::Math];
        assert_eq!((math.shards_min, math.shards_max), (2, 5));
        assert!((math.shards_median - 3.5).abs() < 1e-12);
        assert_eq!(stats.missing_databases(), vec!["gone"]);
        let shown = stats
            .to_string()
            .replace(&dir.path().display().to_string(), "<dir>");
        insta::assert_snapshot!(shown, @r"
        dataset mem.json
        sha256  452cd6b6069fffd2569ce19313748919e6cb26e7015d0523d91c4b5870121eb1

        family      tasks  shards min/median/max
        code            0  -
        database        2  1/1/1
        actions         0  -
        math            2  2/3.5/5
        data2text       0  -
        total           4
        skipped (out of scope): translation 1
        databases in <dir>: 2 db_id(s) used, 1 with *.sqlite files, 1 missing
          gone                         MISSING      1 task(s)
          here                         1 file(s)    1 task(s)  warning: 1 macOS ._* file(s); remove them
        ");
    }
}
