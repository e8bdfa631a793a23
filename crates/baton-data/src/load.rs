//! Reading LiC datasets (JSON array, JSON Lines, or the Hub's Parquet) into validated
//! [`Task`]s.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

use baton_types::input::{DATASET_LIMIT, InputError, read_bounded};
use baton_types::{Family, Shard, Task};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{DataError, Problems};

/// LiC families baton does not run; their items are counted, not loaded.
pub const SKIPPED_FAMILIES: [&str; 2] = ["summary", "translation"];

/// A loaded and validated dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// Where the data came from (a path, or a name for in-memory data).
    pub path: PathBuf,
    /// Hex sha256 of the file's bytes.
    pub sha256: String,
    /// The tasks of the five in-scope families, in file order.
    pub tasks: Vec<Task>,
    /// Items of out-of-scope families (`summary`, `translation`), counted by family.
    pub skipped: BTreeMap<String, usize>,
    /// Items that failed validation, with why, when the dataset was read with
    /// [`load_lenient`] (always empty after [`load`], which refuses such a file).
    pub invalid: Vec<InvalidTask>,
}

/// One item a lenient read left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InvalidTask {
    /// The item's `task_id`, or its position (`item 7`, `line 7`) when it has none.
    pub task_id: String,
    /// Every problem found in it, joined by `; `, each naming the file, the position,
    /// the task id and the key.
    pub reason: String,
}

impl Dataset {
    /// Keep only the tasks of the given families. An empty list keeps every
    /// task, so an unset filter means "all families".
    pub fn filter_families(&mut self, fams: &[Family]) {
        if fams.is_empty() {
            return;
        }
        self.tasks.retain(|t| fams.contains(&t.family));
    }

    /// The task with this id, if any.
    pub fn task(&self, task_id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.task_id == task_id)
    }
}

/// The bytes of a dataset file, under [`DATASET_LIMIT`]; an operating-system error
/// stays [`DataError::Io`].
fn read_dataset(path: &Path) -> Result<Vec<u8>, DataError> {
    read_bounded(path, DATASET_LIMIT, "dataset").map_err(|e| match e {
        InputError::Io { path, source } => DataError::Io { path, source },
        other => DataError::Input(other),
    })
}

/// Read and validate a dataset file.
///
/// The format is decided by content: a file that starts with `PAR1` is Parquet, as the
/// Hugging Face Hub serves a dataset (one row per item, `row N` in messages; see
/// `parquet.rs`); a file whose first non-space character is `[` is one JSON array of
/// objects (LiC's own format); anything else is JSON Lines, one object per line (blank
/// lines are ignored).
pub fn load(path: &Path) -> Result<Dataset, DataError> {
    let bytes = read_dataset(path)?;
    let name = path.display().to_string();
    if bytes.starts_with(crate::parquet::MAGIC) {
        return load_parquet(path, &name, bytes, false);
    }
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            let mut problems = Problems::default();
            problems.push(format!(
                "{name}: the file is not valid UTF-8 (first bad byte at offset {})",
                err.utf8_error().valid_up_to()
            ));
            return Err(DataError::Invalid {
                file: name,
                problems,
            });
        }
    };
    let mut dataset = parse(&name, &text)?;
    dataset.path = path.to_path_buf();
    Ok(dataset)
}

/// Read a dataset file, leaving out the items that fail validation: they are listed in
/// [`Dataset::invalid`] with their problems. Problems of the file as a whole (not
/// UTF-8, not JSON, no items) are still errors.
pub fn load_lenient(path: &Path) -> Result<Dataset, DataError> {
    let bytes = read_dataset(path)?;
    let name = path.display().to_string();
    if bytes.starts_with(crate::parquet::MAGIC) {
        return load_parquet(path, &name, bytes, true);
    }
    let text = String::from_utf8(bytes).map_err(|err| {
        let mut problems = Problems::default();
        problems.push(format!(
            "{name}: the file is not valid UTF-8 (first bad byte at offset {})",
            err.utf8_error().valid_up_to()
        ));
        DataError::Invalid {
            file: name.clone(),
            problems,
        }
    })?;
    let mut dataset = read(&name, &text, true)?;
    dataset.path = path.to_path_buf();
    Ok(dataset)
}

/// Validate a dataset held in memory; `name` stands for the file in messages.
pub fn parse(name: &str, text: &str) -> Result<Dataset, DataError> {
    read(name, text, false)
}

/// A Parquet file's rows as a dataset; its hash is the file's bytes'.
fn load_parquet(
    path: &Path,
    name: &str,
    bytes: Vec<u8>,
    lenient: bool,
) -> Result<Dataset, DataError> {
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let items = crate::parquet::rows(name, bytes)?
        .into_iter()
        .enumerate()
        .map(|(i, row)| (Pos::Row(i + 1), Ok(row)))
        .collect();
    let mut dataset = check_items(name, sha256, items, lenient)?;
    dataset.path = path.to_path_buf();
    Ok(dataset)
}

/// Read items; with `lenient`, an invalid item is listed instead of failing the file.
fn read(name: &str, text: &str, lenient: bool) -> Result<Dataset, DataError> {
    let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let items = read_items(name, body)?;
    check_items(name, sha256, items, lenient)
}

/// Checks read items into a dataset; with `lenient`, an invalid item is listed instead
/// of failing the file.
fn check_items(
    name: &str,
    sha256: String,
    items: Vec<Item>,
    lenient: bool,
) -> Result<Dataset, DataError> {
    let mut problems = Problems::default();
    if items.is_empty() {
        problems.push(format!("{name}: the file holds no items"));
    }

    let mut tasks = Vec::new();
    let mut invalid: Vec<InvalidTask> = Vec::new();
    let mut skipped = BTreeMap::new();
    let mut positions: HashMap<String, Vec<Pos>> = HashMap::new();
    let mut id_order = Vec::new();
    for (pos, item) in items {
        let value = match item {
            Ok(value) => value,
            Err(message) if lenient => {
                invalid.push(InvalidTask {
                    task_id: pos.to_string(),
                    reason: message,
                });
                continue;
            }
            Err(message) => {
                problems.push(message);
                continue;
            }
        };
        let task_id = value
            .get("task_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let at = Where {
            file: name,
            pos,
            task_id: task_id.as_deref(),
        };
        if let Some(id) = at.task_id {
            let seen = positions.entry(id.to_owned()).or_default();
            if seen.is_empty() {
                id_order.push(id.to_owned());
            }
            seen.push(pos);
        }
        let mut own = Problems::default();
        let outcome = check_item(&at, &value, &mut own);
        if lenient && !own.is_empty() {
            invalid.push(InvalidTask {
                task_id: task_id.clone().unwrap_or_else(|| pos.to_string()),
                reason: own.messages.join("; "),
            });
            continue;
        }
        let uncounted = own.total - own.messages.len();
        for m in own.messages {
            problems.push(m);
        }
        problems.total += uncounted;
        match outcome {
            Some(Outcome::Task { family, shards }) => {
                tasks.push(Task {
                    task_id: task_id.clone().unwrap_or_default(),
                    family,
                    shards,
                    sample: value,
                });
            }
            Some(Outcome::Skipped(family)) => *skipped.entry(family).or_insert(0) += 1,
            None => {}
        }
    }
    for id in id_order {
        let seen = &positions[&id];
        if seen.len() > 1 {
            let list: Vec<String> = seen.iter().map(Pos::to_string).collect();
            let message = format!(
                "{name}: task_id \"{id}\" appears {} times: {}",
                seen.len(),
                list.join(", ")
            );
            if lenient {
                // which copy is meant is unknowable: every copy is left out
                tasks.retain(|t| t.task_id != id);
                invalid.retain(|t| t.task_id != id);
                invalid.push(InvalidTask {
                    task_id: id.clone(),
                    reason: message,
                });
            } else {
                problems.push(message);
            }
        }
    }

    if !problems.is_empty() {
        return Err(DataError::Invalid {
            file: name.to_owned(),
            problems,
        });
    }
    Ok(Dataset {
        path: PathBuf::from(name),
        sha256,
        tasks,
        skipped,
        invalid,
    })
}

/// Where an item sits in its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pos {
    /// 0-based index in a JSON array (as `data[i]` in Python).
    Item(usize),
    /// 1-based line in a JSON Lines file.
    Line(usize),
    /// 1-based row of a Parquet file.
    Row(usize),
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pos::Item(i) => write!(f, "item {i}"),
            Pos::Line(n) => write!(f, "line {n}"),
            Pos::Row(n) => write!(f, "row {n}"),
        }
    }
}

/// One item of a file: its value, or (for a JSON Lines line that does not
/// parse) the problem message, so problems stay in file order.
type Item = (Pos, Result<Value, String>);

fn read_items(name: &str, text: &str) -> Result<Vec<Item>, DataError> {
    if text.trim_start().starts_with('[') {
        let items: Vec<Value> = serde_json::from_str(text).map_err(|err| DataError::Json {
            file: name.to_owned(),
            line: err.line(),
            column: err.column(),
            message: bare_message(&err),
        })?;
        return Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (Pos::Item(i), Ok(v)))
            .collect());
    }
    let mut items = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        let item = serde_json::from_str::<Value>(line).map_err(|err| {
            format!(
                "{name}: line {}: invalid JSON at column {}: {} (a file that does not start with '[' is read as JSON Lines, one object per line)",
                i + 1,
                err.column(),
                bare_message(&err)
            )
        });
        items.push((Pos::Line(i + 1), item));
    }
    Ok(items)
}

/// serde_json's message without its " at line L column C" suffix.
fn bare_message(err: &serde_json::Error) -> String {
    let full = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    full.strip_suffix(&suffix).unwrap_or(&full).to_owned()
}

/// The location prefix of every problem about one item.
struct Where<'a> {
    file: &'a str,
    pos: Pos,
    task_id: Option<&'a str>,
}

impl Where<'_> {
    fn prefix(&self) -> String {
        match self.task_id {
            Some(id) => format!("{}: {} (task_id \"{id}\")", self.file, self.pos),
            None => format!("{}: {}", self.file, self.pos),
        }
    }

    fn key(&self, key: &str, message: impl fmt::Display) -> String {
        format!("{}: key \"{key}\": {message}", self.prefix())
    }
}

enum Outcome {
    Task { family: Family, shards: Vec<Shard> },
    Skipped(String),
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Checks one object's keys, reporting into `problems` under one prefix.
struct Checker<'a, 'p> {
    at: &'a Where<'a>,
    problems: &'p mut Problems,
    ok: bool,
}

impl Checker<'_, '_> {
    fn fail(&mut self, key: &str, message: impl fmt::Display) {
        self.problems.push(self.at.key(key, message));
        self.ok = false;
    }

    fn string<'v>(&mut self, obj: &'v Map<String, Value>, key: &str) -> Option<&'v str> {
        self.string_at(obj.get(key), key)
    }

    fn string_at<'v>(&mut self, v: Option<&'v Value>, key: &str) -> Option<&'v str> {
        match v {
            None => {
                self.fail(key, "missing (expected a string)");
                None
            }
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.fail(
                    key,
                    format!("expected a string, found {}", type_name(other)),
                );
                None
            }
        }
    }

    fn nonempty_string<'v>(&mut self, obj: &'v Map<String, Value>, key: &str) -> Option<&'v str> {
        let s = self.string(obj, key)?;
        if s.trim().is_empty() {
            self.fail(key, "expected a non-empty string");
            return None;
        }
        Some(s)
    }

    fn array<'v>(&mut self, obj: &'v Map<String, Value>, key: &str) -> Option<&'v [Value]> {
        match obj.get(key) {
            None => {
                self.fail(key, "missing (expected an array)");
                None
            }
            Some(Value::Array(a)) => Some(a),
            Some(other) => {
                self.fail(
                    key,
                    format!("expected an array, found {}", type_name(other)),
                );
                None
            }
        }
    }
}

fn check_item(at: &Where<'_>, value: &Value, problems: &mut Problems) -> Option<Outcome> {
    let Value::Object(obj) = value else {
        problems.push(format!(
            "{}: expected a JSON object, found {}",
            at.prefix(),
            type_name(value)
        ));
        return None;
    };
    let mut c = Checker {
        at,
        problems,
        ok: true,
    };
    c.nonempty_string(obj, "task_id");
    let family_name = c.string(obj, "task")?;
    if SKIPPED_FAMILIES.contains(&family_name) {
        return c.ok.then(|| Outcome::Skipped(family_name.to_owned()));
    }
    let family = match family_name.parse::<Family>() {
        Ok(f) => Some(f),
        Err(_) => {
            c.fail(
                "task",
                format!(
                    "unknown task family \"{family_name}\" (expected one of code, database, actions, math, data2text; summary and translation are skipped){}",
                    did_you_mean(family_name)
                ),
            );
            None
        }
    };
    let shards = check_shards(&mut c, obj);
    if let Some(family) = family {
        check_family(&mut c, obj, family);
    }
    match (family, shards) {
        (Some(family), Some(shards)) if c.ok => Some(Outcome::Task { family, shards }),
        _ => None,
    }
}

/// `; did you mean "math"?` for the family name closest to `name`, when one is close.
fn did_you_mean(name: &str) -> String {
    let wanted = name.trim().to_lowercase();
    Family::ALL
        .iter()
        .map(|f| f.as_str())
        .chain(SKIPPED_FAMILIES)
        .map(|f| (strsim::normalized_damerau_levenshtein(&wanted, f), f))
        .filter(|(score, _)| *score >= 0.6)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, f)| format!("; did you mean \"{f}\"?"))
        .unwrap_or_default()
}

fn check_shards(c: &mut Checker<'_, '_>, obj: &Map<String, Value>) -> Option<Vec<Shard>> {
    let list = c.array(obj, "shards")?;
    if list.is_empty() {
        c.fail(
            "shards",
            "expected at least one shard, found an empty array",
        );
        return None;
    }
    let mut shards = Vec::with_capacity(list.len());
    let mut seen_ids: HashMap<i64, usize> = HashMap::new();
    for (i, item) in list.iter().enumerate() {
        let Value::Object(shard) = item else {
            c.fail(
                &format!("shards[{i}]"),
                format!(
                    "expected an object with \"shard_id\" and \"shard\", found {}",
                    type_name(item)
                ),
            );
            continue;
        };
        let id_key = format!("shards[{i}].shard_id");
        let shard_id = match shard.get("shard_id") {
            Some(v) if v.as_i64().is_some() => v.as_i64(),
            Some(v) => {
                c.fail(
                    &id_key,
                    format!("expected an integer, found {}", type_name(v)),
                );
                None
            }
            None => {
                c.fail(&id_key, "missing (expected an integer)");
                None
            }
        };
        if let Some(id) = shard_id
            && let Some(first) = seen_ids.insert(id, i)
        {
            c.fail(&id_key, format!("shard_id {id} repeats shards[{first}]"));
        }
        let (text_key, text_value) = match (shard.get("shard"), shard.get("shard_text")) {
            (Some(v), _) => (format!("shards[{i}].shard"), Some(v)),
            (None, Some(v)) => (format!("shards[{i}].shard_text"), Some(v)),
            (None, None) => (format!("shards[{i}].shard"), None),
        };
        let text = match text_value {
            None => {
                c.fail(
                    &text_key,
                    "missing (expected a string; \"shard_text\" is accepted too)",
                );
                None
            }
            Some(Value::String(s)) if s.trim().is_empty() => {
                c.fail(&text_key, "expected non-empty text");
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => {
                c.fail(
                    &text_key,
                    format!("expected a string, found {}", type_name(v)),
                );
                None
            }
        };
        if let (Some(shard_id), Some(shard)) = (shard_id, text) {
            shards.push(Shard { shard_id, shard });
        }
    }
    (shards.len() == list.len()).then_some(shards)
}

fn check_family(c: &mut Checker<'_, '_>, obj: &Map<String, Value>, family: Family) {
    match family {
        Family::Math => {
            if let Some(answer) = c.string(obj, "answer")
                && !answer.contains("####")
            {
                c.fail("answer", "expected a string containing \"####\"");
            }
        }
        Family::Database => {
            if let Some(db_id) = c.nonempty_string(obj, "db_id")
                && !is_plain_folder_name(db_id)
            {
                c.fail(
                    "db_id",
                    format!(
                        "\"{db_id}\" is not a plain folder name (it selects databases/<db_id>/)"
                    ),
                );
            }
            c.nonempty_string(obj, "reference_sql");
            c.string(obj, "schema_sql");
        }
        Family::Actions => {
            if let Some(functions) = c.array(obj, "function") {
                if functions.is_empty() {
                    c.fail("function", "expected at least one function description");
                }
                for (i, f) in functions.iter().enumerate() {
                    let key = format!("function[{i}].name");
                    match f {
                        Value::Object(doc) => {
                            if let Some(name) = c.string_at(doc.get("name"), &key)
                                && name.is_empty()
                            {
                                c.fail(&key, "expected a non-empty string");
                            }
                        }
                        other => c.fail(
                            &format!("function[{i}]"),
                            format!("expected an object, found {}", type_name(other)),
                        ),
                    }
                }
            }
            c.array(obj, "reference_answer");
            c.string(obj, "language");
            c.string(obj, "test_category");
        }
        Family::Code => {
            match obj.get("metadata") {
                Some(Value::Object(meta)) => {
                    if let Some(name) = c.string_at(meta.get("func_name"), "metadata.func_name")
                        && name.trim().is_empty()
                    {
                        c.fail("metadata.func_name", "expected a non-empty string");
                    }
                }
                Some(other) => c.fail(
                    "metadata",
                    format!("expected an object, found {}", type_name(other)),
                ),
                None => c.fail(
                    "metadata",
                    "missing (expected an object with \"func_name\")",
                ),
            }
            if let Some(text) = c.string(obj, "public_test_cases")
                && let Err(message) = check_test_cases(text)
            {
                c.fail("public_test_cases", message);
            }
            if let Some(v) = obj.get("private_test_cases")
                && let Some(text) = c.string_at(Some(v), "private_test_cases")
            {
                // JSON text, or LiveCodeBench's packing (which LiC tries when the text is
                // not JSON; text that opens a list is reported as broken JSON).
                let checked = if text.trim_start().starts_with('[')
                    || serde_json::from_str::<Value>(text).is_ok()
                {
                    check_test_cases(text)
                } else {
                    match crate::testcases::unpack_private(text) {
                        Err(e) => Err(format!("neither JSON text nor packed test cases: {e}")),
                        Ok(json) => check_test_cases(&json)
                            .map_err(|e| format!("{e} (after unpacking base64, zlib and pickle)")),
                    }
                };
                if let Err(message) = checked {
                    c.fail("private_test_cases", message);
                }
            }
            if let Some(v) = obj.get("prompt") {
                c.string_at(Some(v), "prompt");
            }
        }
        Family::Data2Text => {
            if let Some(refs) = c.array(obj, "references") {
                if refs.is_empty() {
                    c.fail("references", "expected at least one reference sentence");
                }
                for (i, r) in refs.iter().enumerate() {
                    if !r.is_string() {
                        c.fail(
                            &format!("references[{i}]"),
                            format!("expected a string, found {}", type_name(r)),
                        );
                    }
                }
            }
        }
    }
}

/// LiC test cases: JSON text of an array of `{"input": str, "output": str}`.
fn check_test_cases(text: &str) -> Result<(), String> {
    let value: Value = serde_json::from_str(text).map_err(|err| {
        format!(
            "expected JSON text of an array of test cases, but it does not parse: {} at column {}",
            bare_message(&err),
            err.column()
        )
    })?;
    let Value::Array(cases) = value else {
        return Err(format!(
            "expected JSON text of an array of test cases, found {}",
            type_name(&value)
        ));
    };
    for (i, case) in cases.iter().enumerate() {
        let ok = case.get("input").is_some_and(Value::is_string)
            && case.get("output").is_some_and(Value::is_string);
        if !ok {
            return Err(format!(
                "test case {i} must be an object with string \"input\" and \"output\""
            ));
        }
    }
    Ok(())
}

fn is_plain_folder_name(s: &str) -> bool {
    s != "." && s != ".." && !s.contains(['/', '\\', '\0'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn math(id: &str) -> String {
        format!(
            r#"{{"task_id": "{id}", "task": "math", "shards": [{{"shard_id": 1, "shard": "q"}}], "answer": "2+2 #### 4"}}"#
        )
    }

    #[test]
    fn format_is_decided_by_content() {
        let arr = format!("  \n[{}, {}]", math("a"), math("b"));
        let ds = parse("x.jsonl", &arr).expect("array parses");
        assert_eq!(ds.tasks.len(), 2);
        let lines = format!("{}\n\n{}\r\n", math("a"), math("b"));
        let ds = parse("x.json", &lines).expect("lines parse");
        assert_eq!(ds.tasks.len(), 2);
        assert_eq!(ds.tasks[1].task_id, "b");
    }

    #[test]
    fn shard_text_alias_and_unknown_keys_are_kept() {
        let text = r#"[{"task_id": "t", "task": "data2text", "shards": [{"shard_id": 1, "shard_text": "hello"}], "references": ["r"], "extra": 7}]"#;
        let ds = parse("d.json", text).expect("valid");
        assert_eq!(ds.tasks[0].shards[0].shard, "hello");
        assert_eq!(ds.tasks[0].sample["extra"], 7);
    }

    #[test]
    fn out_of_scope_families_are_counted_not_loaded() {
        let text = format!(
            "[{}, {{\"task_id\": \"s\", \"task\": \"summary\", \"shards\": []}}, {{\"task_id\": \"u\", \"task\": \"summary\"}}]",
            math("a")
        );
        let ds = parse("d.json", &text).expect("valid");
        assert_eq!(ds.tasks.len(), 1);
        assert_eq!(ds.skipped.get("summary"), Some(&2));
    }

    #[test]
    fn filter_families_keeps_all_on_empty_list() {
        let mut ds = parse("d.jsonl", &math("a")).expect("valid");
        ds.filter_families(&[]);
        assert_eq!(ds.tasks.len(), 1);
        ds.filter_families(&[Family::Code]);
        assert!(ds.tasks.is_empty());
    }

    #[test]
    fn sha256_is_of_the_bytes() {
        let text = math("a");
        let ds = parse("d.jsonl", &text).expect("valid");
        assert_eq!(ds.sha256, hex::encode(Sha256::digest(text.as_bytes())));
    }
}
