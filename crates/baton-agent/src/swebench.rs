//! SWE-bench (Verified) instances: loading and validating the JSONL, and scoring stored
//! patches with the official harness.
//!
//! # Loading
//!
//! One JSON object per line (a JSON array is accepted too), or a Parquet file as Hugging
//! Face exports a split (`data/test-00000-of-00001.parquet`; read row by row with the
//! `parquet` crate, every column as JSON), each row with SWE-bench's keys:
//! `instance_id`, `repo`, `base_commit`, `problem_statement`, `patch` (the gold patch, the
//! reference), `test_patch`, `FAIL_TO_PASS` and `PASS_TO_PASS` (JSON lists, or strings
//! holding JSON lists as on Hugging Face), and `difficulty` (Verified's annotated fix
//! time, bucketed by [`Difficulty::from_swebench`]). The environment is the instance's
//! image: `image` when the row has one (`swebench` 5.0.2's instances do, and its harness
//! scores in that image), else `image_name` (mini-SWE-agent's key), else SWE-bench's naming
//! (`docker.io/swebench/sweb.eval.x86_64.<id with __ as _1776_>:latest`, lower case), with
//! the repository at `/testbed`.
//!
//! # Scoring
//!
//! [`SweBenchHarness::evaluate`] writes the predictions to a JSONL file and runs the pinned
//! official harness as a subprocess (`python -m swebench.harness.run_evaluation`, version
//! [`SWEBENCH_VERSION`], which needs Docker), then reads each instance's `report.json`.
//! Verdicts are cached by (instance, sha256 of the patch) under the harness's work folder,
//! so a patch is never evaluated twice; an empty patch is unresolved without a harness run
//! (the harness skips those too), and a harness failure is not cached. A report the
//! harness flags as an infrastructure failure (`infra_failure`: the environment broke,
//! not the patch) is no verdict either: it is [`HarnessStatus::Error`] and judged again
//! next time.
//!
//! [`SweBenchHarness::evaluate_as`] files the predictions under a `model_name_or_path` of
//! the caller's (`baton swebench eval` names each cell and replicate), and
//! [`SweBenchHarness::pending`] says which predictions would need a harness run (so a
//! caller checks Docker only when something is left to judge).
//!
//! The invocation and the report layout are those of `swebench` 5.0.2's
//! `harness/run_evaluation.py`: the flags below, `report.json` at
//! `logs/run_evaluation/RUN_ID/MODEL/INSTANCE/` under the working folder (with `/` in the
//! model name written `__`), keyed by the instance id, with `resolved`,
//! `patch_successfully_applied`, `infra_failure` and `tests_status`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::AgentError;
use crate::own::DEFAULT_TEST_TIMEOUT;
use crate::task::{AgentTask, Difficulty, HiddenTests, Reference, Repository, TaskFormat};

/// The pinned version of the official harness (`pip install swebench==5.0.2`).
pub const SWEBENCH_VERSION: &str = "5.0.2";

/// The `model_name_or_path` baton writes into predictions (the harness files reports under it).
pub const MODEL_NAME: &str = "baton";

/// Read a SWE-bench file (JSON Lines, a JSON array, or Parquet).
pub fn load_swebench(path: &Path) -> Result<Vec<AgentTask>, AgentError> {
    load_swebench_with(path, None)
}

/// [`load_swebench`], an instance that does not load kept in `skips` when given.
pub(crate) fn load_swebench_with(
    path: &Path,
    skips: crate::dataset::Skips<'_>,
) -> Result<Vec<AgentTask>, AgentError> {
    let file = path.display().to_string();
    tasks_of(&file, &read_rows(&file, read_file(path)?)?, skips)
}

/// The bytes of a SWE-bench file, under the dataset bound every input file has.
fn read_file(path: &Path) -> Result<Vec<u8>, AgentError> {
    use baton_types::input::{DATASET_LIMIT, read_bounded};
    Ok(read_bounded(path, DATASET_LIMIT, "SWE-bench dataset")?)
}

/// The tasks of `file`'s rows, each checked, ids unique.
fn tasks_of(
    file: &str,
    rows: &[(String, Value)],
    mut skips: crate::dataset::Skips<'_>,
) -> Result<Vec<AgentTask>, AgentError> {
    let mut tasks = Vec::with_capacity(rows.len());
    let mut seen = std::collections::HashSet::new();
    for (at, row) in rows {
        let id = row
            .get("instance_id")
            .and_then(Value::as_str)
            .map_or_else(|| at.clone(), str::to_string);
        let parsed = parse_row(&format!("{file}: {at}"), row);
        let Some(task) = crate::dataset::keep_or_skip(parsed, &id, &mut skips)? else {
            continue;
        };
        if !seen.insert(task.id.clone()) {
            return Err(AgentError::invalid(
                format!("{file}: {at}"),
                Some(&task.id),
                Some("instance_id"),
                "appears twice",
            ));
        }
        tasks.push(task);
    }
    if tasks.is_empty() && skips.as_ref().is_none_or(|s| s.is_empty()) {
        return Err(AgentError::invalid(file, None, None, "no instances"));
    }
    Ok(tasks)
}

/// The rows of a SWE-bench file's bytes, each with where it is: `line N` (JSON Lines),
/// `item N` (a JSON array) or `row N` (Parquet, as Hugging Face exports a dataset).
fn read_rows(file: &str, bytes: Vec<u8>) -> Result<Vec<(String, Value)>, AgentError> {
    if bytes.starts_with(PARQUET_MAGIC) {
        return parquet_rows(file, bytes);
    }
    let text = String::from_utf8(bytes)
        .map_err(|e| AgentError::invalid(file, None, None, format!("not UTF-8: {e}")))?;
    if text.trim_start().starts_with('[') {
        let items: Vec<Value> = serde_json::from_str(&text)
            .map_err(|e| AgentError::invalid(file, None, None, format!("not a JSON array: {e}")))?;
        return Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (format!("item {}", i + 1), v))
            .collect());
    }
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", i + 1);
        let v: Value = serde_json::from_str(line).map_err(|e| {
            AgentError::invalid(
                format!("{file}: {at}"),
                None,
                None,
                format!("not JSON: {e}"),
            )
        })?;
        rows.push((at, v));
    }
    Ok(rows)
}

/// The first (and last) bytes of a Parquet file.
const PARQUET_MAGIC: &[u8] = b"PAR1";

/// The rows of a Parquet file as JSON objects (strings stay strings, lists become arrays),
/// the form `datasets`' `to_parquet` and the Hub's exports take. A malformed file is an
/// error naming the file; the reader's panics on a corrupt file are caught as errors too.
fn parquet_rows(file: &str, bytes: Vec<u8>) -> Result<Vec<(String, Value)>, AgentError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let read = || -> Result<Vec<(String, Value)>, parquet::errors::ParquetError> {
        let reader = SerializedFileReader::new(bytes::Bytes::from(bytes))?;
        let mut rows = Vec::new();
        for (i, row) in reader.get_row_iter(None)?.enumerate() {
            rows.push((format!("row {}", i + 1), row?.to_json_value()));
        }
        Ok(rows)
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)) {
        Ok(Ok(rows)) => Ok(rows),
        Ok(Err(e)) => Err(AgentError::invalid(
            file,
            None,
            None,
            format!("not a readable Parquet file: {e}"),
        )),
        Err(_) => Err(AgentError::invalid(
            file,
            None,
            None,
            "not a readable Parquet file (its reader gave up on it)",
        )),
    }
}

fn parse_row(at: &str, row: &Value) -> Result<AgentTask, AgentError> {
    let obj = row
        .as_object()
        .ok_or_else(|| AgentError::invalid(at, None, None, "not a JSON object"))?;
    let id = match obj.get("instance_id").and_then(Value::as_str) {
        Some(id) if valid_instance_id(id) => id.to_string(),
        Some(id) => {
            return Err(AgentError::invalid(
                at,
                Some(id),
                Some("instance_id"),
                "may hold only letters, digits, '_', '-' and '.'",
            ));
        }
        None => {
            return Err(AgentError::invalid(
                at,
                None,
                Some("instance_id"),
                "missing or not a string",
            ));
        }
    };
    let string = |key: &str| -> Result<String, AgentError> {
        obj.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| AgentError::invalid(at, Some(&id), Some(key), "missing or not a string"))
    };
    let list = |key: &str| -> Result<Vec<String>, AgentError> {
        let bad = || {
            AgentError::invalid(
                at,
                Some(&id),
                Some(key),
                "expected a list of test names (or a string holding a JSON list)",
            )
        };
        let value = obj.get(key).ok_or_else(bad)?;
        let parsed: Value = match value {
            Value::String(s) => serde_json::from_str(s).map_err(|_| bad())?,
            other => other.clone(),
        };
        parsed
            .as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or_else(bad))
            .collect()
    };
    let problem = string("problem_statement")?;
    let gold = string("patch")?;
    let test_patch = string("test_patch")?;
    string("repo")?;
    string("base_commit")?;
    let fail_to_pass = list("FAIL_TO_PASS")?;
    let pass_to_pass = list("PASS_TO_PASS")?;
    if fail_to_pass.is_empty() {
        return Err(AgentError::invalid(
            at,
            Some(&id),
            Some("FAIL_TO_PASS"),
            "is empty",
        ));
    }
    let label = string("difficulty")?;
    let difficulty = Difficulty::from_swebench(&label).ok_or_else(|| {
        AgentError::invalid(
            at,
            Some(&id),
            Some("difficulty"),
            format!("{label:?} is not one of \"<15 min fix\", \"15 min - 1 hour\", \"1-4 hours\", \">4 hours\""),
        )
    })?;
    let image = named_image(obj).map_or_else(|| image_name(&id), |(_, name)| name.to_string());
    Ok(AgentTask {
        id,
        format: TaskFormat::SweBench,
        origin: at.to_string(),
        instruction: problem,
        difficulty,
        repository: Repository::Image(image),
        workdir: baton_env::DEFAULT_WORKDIR.to_string(),
        tests: HiddenTests {
            files: Vec::new(),
            patch: Some(test_patch),
            fail_to_pass,
            pass_to_pass,
            timeout: DEFAULT_TEST_TIMEOUT,
        },
        reference: Some(Reference::Patch(gold)),
    })
}

/// The image a row names, with the key it is under: `image` (the key `swebench` 5.0.2's
/// instances carry and its harness evaluates in) before `image_name` (mini-SWE-agent's).
fn named_image(obj: &serde_json::Map<String, Value>) -> Option<(&'static str, &str)> {
    ["image", "image_name"].into_iter().find_map(|key| {
        obj.get(key)
            .and_then(Value::as_str)
            .filter(|name| !name.trim().is_empty())
            .map(|name| (key, name))
    })
}

/// The keys `swebench` 5.0.2's harness reads from each instance to score it, beyond the
/// ones loading needs (its `make_test_spec`).
pub const HARNESS_KEYS: [&str; 5] = ["image", "version", "eval_script", "log_parser", "eval_type"];

/// What `baton data swebench` says of a file: every row loaded and checked as for a run.
#[derive(Debug, Clone, Serialize)]
pub struct SweBenchSummary {
    /// The file.
    pub file: String,
    /// sha256 of its bytes.
    pub sha256: String,
    /// Instances (each one loaded).
    pub instances: usize,
    /// Instances per repository (`repo`).
    pub repos: BTreeMap<String, usize>,
    /// Instances per difficulty label, as the file spells it.
    pub difficulty: BTreeMap<String, usize>,
    /// Each instance's image, in file order.
    pub images: Vec<InstanceImage>,
    /// For each of [`HARNESS_KEYS`], the instances that lack it (the harness cannot
    /// score those).
    pub missing_harness_keys: BTreeMap<String, Vec<String>>,
}

/// The image one instance runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstanceImage {
    /// The instance.
    pub instance_id: String,
    /// The image.
    pub image: String,
    /// Where the name came from: the row's `image` or `image_name`, or `naming` for
    /// SWE-bench's convention ([`image_name`]).
    pub from: &'static str,
}

/// Load every instance of a SWE-bench file (errors as [`load_swebench`]'s) and describe it.
pub fn summarize_swebench(path: &Path) -> Result<SweBenchSummary, AgentError> {
    let file = path.display().to_string();
    let bytes = read_file(path)?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let rows = read_rows(&file, bytes)?;
    let tasks = tasks_of(&file, &rows, None)?;
    let mut summary = SweBenchSummary {
        file,
        sha256,
        instances: tasks.len(),
        repos: BTreeMap::new(),
        difficulty: BTreeMap::new(),
        images: Vec::new(),
        missing_harness_keys: BTreeMap::new(),
    };
    for (_, row) in &rows {
        let Some(obj) = row.as_object() else { continue };
        let field = |key: &str| obj.get(key).and_then(Value::as_str).unwrap_or_default();
        let id = field("instance_id").to_string();
        *summary.repos.entry(field("repo").to_string()).or_default() += 1;
        *summary
            .difficulty
            .entry(field("difficulty").to_string())
            .or_default() += 1;
        let (from, image) = named_image(obj)
            .map_or_else(|| ("naming", image_name(&id)), |(k, n)| (k, n.to_string()));
        for key in HARNESS_KEYS {
            let present = match key {
                "image" => from == "image",
                _ => obj.get(key).is_some_and(|v| !v.is_null()),
            };
            if !present {
                summary
                    .missing_harness_keys
                    .entry(key.to_string())
                    .or_default()
                    .push(id.clone());
            }
        }
        summary.images.push(InstanceImage {
            instance_id: id,
            image,
            from,
        });
    }
    Ok(summary)
}

/// SWE-bench's image name for an instance.
pub fn image_name(instance_id: &str) -> String {
    format!(
        "docker.io/swebench/sweb.eval.x86_64.{}:latest",
        instance_id.replace("__", "_1776_")
    )
    .to_lowercase()
}

fn valid_instance_id(id: &str) -> bool {
    !id.is_empty()
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// One patch to evaluate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prediction {
    /// The instance.
    pub instance_id: String,
    /// The unified diff (empty: no change).
    pub patch: String,
}

/// How the harness judged a patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HarnessStatus {
    /// Every FAIL_TO_PASS and PASS_TO_PASS test passed.
    Resolved,
    /// The harness ran the tests and some did not pass (or the patch did not apply).
    Unresolved,
    /// Nothing was submitted.
    EmptyPatch,
    /// The harness produced no report for the instance (not cached; retry later).
    Error,
}

/// The verdict on one SWE-bench prediction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarnessVerdict {
    /// The instance.
    pub instance_id: String,
    /// sha256 of the patch (the cache key with the instance).
    pub patch_sha256: String,
    /// The outcome.
    pub status: HarnessStatus,
    /// The report's `patch_successfully_applied`, when it has one.
    pub patch_applied: Option<bool>,
    /// FAIL_TO_PASS tests that passed / failed, from the report.
    pub fail_to_pass: TestLists,
    /// PASS_TO_PASS tests that passed / failed.
    pub pass_to_pass: TestLists,
    /// The harness version that judged it.
    pub harness_version: String,
    /// Why there is no verdict ([`HarnessStatus::Error`]).
    pub error: Option<String>,
    /// Served from the cache (not stored in it).
    #[serde(skip)]
    pub cached: bool,
}

/// Passed and failed test names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TestLists {
    /// Passed.
    pub success: Vec<String>,
    /// Did not pass.
    pub failure: Vec<String>,
}

/// The official SWE-bench harness, run as a subprocess.
#[derive(Debug, Clone)]
pub struct SweBenchHarness {
    /// The Python that has `swebench` installed (a venv's `bin/python`).
    pub python: PathBuf,
    /// The dataset file the instances come from (passed as `--dataset_name`).
    pub dataset: PathBuf,
    /// Where runs, logs and the verdict cache live.
    pub work_dir: PathBuf,
    /// `--max_workers`. Default 1.
    pub max_workers: usize,
    /// `--timeout` per instance. Default 1800 s (the harness's own default).
    pub timeout: Duration,
}

impl SweBenchHarness {
    /// A harness for `dataset` using `python`, keeping its files under `work_dir`.
    pub fn new(
        python: impl Into<PathBuf>,
        dataset: impl Into<PathBuf>,
        work_dir: impl Into<PathBuf>,
    ) -> Self {
        SweBenchHarness {
            python: python.into(),
            dataset: dataset.into(),
            work_dir: work_dir.into(),
            max_workers: 1,
            timeout: Duration::from_secs(1800),
        }
    }

    /// The installed `swebench` version, checked against [`SWEBENCH_VERSION`].
    pub fn check_version(&self) -> Result<String, AgentError> {
        let python = self.python.display().to_string();
        let out = Command::new(&self.python)
            .args(["-c", "import swebench; print(swebench.__version__)"])
            .stdin(Stdio::null())
            .output();
        let found = match out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
            Ok(_) => "not installed".to_string(),
            Err(e) => format!("not runnable ({e})"),
        };
        if found != SWEBENCH_VERSION {
            return Err(AgentError::HarnessVersion {
                python,
                found,
                wanted: SWEBENCH_VERSION.to_string(),
            });
        }
        Ok(found)
    }

    fn cache_path(&self, instance: &str, sha: &str) -> PathBuf {
        self.work_dir
            .join("cache")
            .join(instance)
            .join(format!("{sha}.json"))
    }

    fn cached(&self, instance: &str, sha: &str) -> Option<HarnessVerdict> {
        let text = std::fs::read_to_string(self.cache_path(instance, sha)).ok()?;
        let mut v: HarnessVerdict = serde_json::from_str(&text).ok()?;
        (v.harness_version == SWEBENCH_VERSION && v.status != HarnessStatus::Error).then(|| {
            v.cached = true;
            v
        })
    }

    fn store(&self, v: &HarnessVerdict) -> Result<(), AgentError> {
        let path = self.cache_path(&v.instance_id, &v.patch_sha256);
        let dir = path.parent().unwrap_or(&self.work_dir);
        std::fs::create_dir_all(dir).map_err(|e| AgentError::io(dir, "create cache folder", e))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)
            .map_err(|e| AgentError::io(dir, "write cache", e))?;
        serde_json::to_writer_pretty(&mut tmp, v)
            .map_err(|e| AgentError::io(&path, "write cache", e.into()))?;
        tmp.persist(&path)
            .map_err(|e| AgentError::io(&path, "write cache", e.error))?;
        Ok(())
    }

    /// The indices of the predictions that need a harness run: neither empty nor judged
    /// before (in the cache).
    pub fn pending(&self, predictions: &[Prediction]) -> Vec<usize> {
        predictions
            .iter()
            .enumerate()
            .filter(|(_, p)| {
                !p.patch.trim().is_empty()
                    && self.cached(&p.instance_id, &sha256(&p.patch)).is_none()
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Judge every prediction: from the cache, or by one harness run for all the others.
    /// Verdicts come back in the order of `predictions`.
    pub fn evaluate(&self, predictions: &[Prediction]) -> Result<Vec<HarnessVerdict>, AgentError> {
        self.evaluate_as(MODEL_NAME, predictions)
    }

    /// [`evaluate`](Self::evaluate), with `model` as the predictions'
    /// `model_name_or_path` (letters, digits, `_`, `-` and `.`; the harness files its
    /// logs and reports under it).
    pub fn evaluate_as(
        &self,
        model: &str,
        predictions: &[Prediction],
    ) -> Result<Vec<HarnessVerdict>, AgentError> {
        if !valid_instance_id(model) {
            return Err(AgentError::invalid(
                "predictions",
                None,
                Some("model_name_or_path"),
                format!("{model:?} may hold only letters, digits, '_', '-' and '.'"),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for p in predictions {
            if !seen.insert(&p.instance_id) || !valid_instance_id(&p.instance_id) {
                return Err(AgentError::invalid(
                    "predictions",
                    Some(&p.instance_id),
                    Some("instance_id"),
                    "repeated or not a valid instance id",
                ));
            }
        }
        let mut verdicts: BTreeMap<usize, HarnessVerdict> = BTreeMap::new();
        let mut todo = Vec::new();
        for (i, p) in predictions.iter().enumerate() {
            let sha = sha256(&p.patch);
            if p.patch.trim().is_empty() {
                verdicts.insert(
                    i,
                    blank(&p.instance_id, &sha, HarnessStatus::EmptyPatch, None),
                );
            } else if let Some(v) = self.cached(&p.instance_id, &sha) {
                verdicts.insert(i, v);
            } else {
                todo.push((i, p, sha));
            }
        }
        if !todo.is_empty() {
            self.check_version()?;
            let run_id = {
                let mut h = Sha256::new();
                h.update(model.as_bytes());
                h.update(b"\0");
                for (_, p, sha) in &todo {
                    h.update(p.instance_id.as_bytes());
                    h.update(b"\0");
                    h.update(sha.as_bytes());
                }
                format!("baton-{}", &hex::encode(h.finalize())[..16])
            };
            let run_dir = self.work_dir.join("runs").join(&run_id);
            std::fs::create_dir_all(&run_dir)
                .map_err(|e| AgentError::io(&run_dir, "create run folder", e))?;
            let preds = run_dir.join("predictions.jsonl");
            let mut lines = String::new();
            for (_, p, _) in &todo {
                let row = serde_json::json!({
                    "instance_id": p.instance_id,
                    "model_name_or_path": model,
                    "model_patch": p.patch,
                });
                lines.push_str(&row.to_string());
                lines.push('\n');
            }
            std::fs::write(&preds, lines)
                .map_err(|e| AgentError::io(&preds, "write predictions", e))?;
            let log = run_dir.join("harness.log");
            let log_file =
                std::fs::File::create(&log).map_err(|e| AgentError::io(&log, "create log", e))?;
            let log_err = log_file
                .try_clone()
                .map_err(|e| AgentError::io(&log, "create log", e))?;
            let dataset = std::path::absolute(&self.dataset)
                .map_err(|e| AgentError::io(&self.dataset, "resolve", e))?;
            let preds_abs =
                std::path::absolute(&preds).map_err(|e| AgentError::io(&preds, "resolve", e))?;
            // the harness runs in its run folder: a relative Python path is made absolute
            // (a bare name is looked up on PATH as usual)
            let python = if self.python.components().count() > 1 {
                std::path::absolute(&self.python)
                    .map_err(|e| AgentError::io(&self.python, "resolve", e))?
            } else {
                self.python.clone()
            };
            let status = Command::new(&python)
                .args(["-m", "swebench.harness.run_evaluation", "--dataset_name"])
                .arg(&dataset)
                .args(["--split", "test", "--predictions_path"])
                .arg(&preds_abs)
                .arg("--instance_ids")
                .args(todo.iter().map(|(_, p, _)| p.instance_id.as_str()))
                .args(["--max_workers", &self.max_workers.max(1).to_string()])
                .args(["--timeout", &self.timeout.as_secs().max(1).to_string()])
                .args(["--run_id", &run_id, "--report_dir", "."])
                .current_dir(&run_dir)
                .stdin(Stdio::null())
                .stdout(log_file)
                .stderr(log_err)
                .status()
                .map_err(|e| AgentError::Harness {
                    message: format!("cannot run {}: {e}", self.python.display()),
                    log: log.clone(),
                })?;
            let mut any = false;
            for (i, p, sha) in &todo {
                let report = run_dir
                    .join("logs/run_evaluation")
                    .join(&run_id)
                    .join(model.replace('/', "__"))
                    .join(&p.instance_id)
                    .join("report.json");
                let v = match read_report(&report, &p.instance_id) {
                    Some(parsed) => {
                        any = true;
                        let v = HarnessVerdict {
                            instance_id: p.instance_id.clone(),
                            patch_sha256: sha.clone(),
                            ..parsed
                        };
                        if v.status != HarnessStatus::Error {
                            self.store(&v)?;
                        }
                        v
                    }
                    None => blank(
                        &p.instance_id,
                        sha,
                        HarnessStatus::Error,
                        Some(format!(
                            "the harness ({status}) wrote no report; see {}",
                            log.display()
                        )),
                    ),
                };
                verdicts.insert(*i, v);
            }
            if !any && !status.success() {
                return Err(AgentError::Harness {
                    message: format!("run_evaluation failed ({status}) and judged nothing"),
                    log,
                });
            }
        }
        Ok(verdicts.into_values().collect())
    }
}

fn blank(
    instance: &str,
    sha: &str,
    status: HarnessStatus,
    error: Option<String>,
) -> HarnessVerdict {
    HarnessVerdict {
        instance_id: instance.to_string(),
        patch_sha256: sha.to_string(),
        status,
        patch_applied: None,
        fail_to_pass: TestLists::default(),
        pass_to_pass: TestLists::default(),
        harness_version: SWEBENCH_VERSION.to_string(),
        error,
        cached: false,
    }
}

/// An instance's `report.json`: `{id: {resolved, patch_successfully_applied,
/// infra_failure, infra_failure_reason, tests_status}}`. A flagged infrastructure
/// failure is [`HarnessStatus::Error`].
fn read_report(path: &Path, instance: &str) -> Option<HarnessVerdict> {
    let text = std::fs::read_to_string(path).ok()?;
    let root: Value = serde_json::from_str(&text).ok()?;
    let r = root.get(instance)?;
    let resolved = r.get("resolved")?.as_bool()?;
    if r.get("infra_failure").and_then(Value::as_bool) == Some(true) {
        let why = r
            .get("infra_failure_reason")
            .and_then(Value::as_str)
            .unwrap_or("no reason given");
        return Some(blank(
            instance,
            "",
            HarnessStatus::Error,
            Some(format!(
                "the harness flagged an infrastructure failure ({why}); see {}",
                path.parent()
                    .unwrap_or(path)
                    .join("test_output.txt")
                    .display()
            )),
        ));
    }
    let lists = |key: &str| -> TestLists {
        r.get("tests_status")
            .and_then(|t| t.get(key))
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    };
    Some(HarnessVerdict {
        instance_id: instance.to_string(),
        patch_sha256: String::new(),
        status: if resolved {
            HarnessStatus::Resolved
        } else {
            HarnessStatus::Unresolved
        },
        patch_applied: r.get("patch_successfully_applied").and_then(Value::as_bool),
        fail_to_pass: lists("FAIL_TO_PASS"),
        pass_to_pass: lists("PASS_TO_PASS"),
        harness_version: SWEBENCH_VERSION.to_string(),
        error: None,
        cached: false,
    })
}

fn sha256(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_names_follow_swebench() {
        assert_eq!(
            image_name("django__django-11099"),
            "docker.io/swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
        );
        assert_eq!(
            image_name("Sympy__Sympy-1"),
            "docker.io/swebench/sweb.eval.x86_64.sympy_1776_sympy-1:latest"
        );
    }

    #[test]
    fn instance_ids_are_safe_path_components() {
        assert!(valid_instance_id("astropy__astropy-12907"));
        for bad in ["", "../x", "a/b", ".hidden", "a b"] {
            assert!(!valid_instance_id(bad), "{bad}");
        }
    }
}
