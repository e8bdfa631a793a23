//! LiC files in Parquet, as the Hub serves them (issue 35): a real Parquet file written
//! with the `parquet` crate's writer, in the Hub's shape (one row per item, the union of
//! every row's columns, a column a row lacks null, shards a list of structs).

use std::sync::Arc;

use baton_data::{DataError, load, load_lenient, sample_dataset};
use baton_types::{Family, Task};
use parquet::basic::{Compression, GzipLevel, ZstdLevel};
use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

const SCHEMA: &str = "
message lic {
  OPTIONAL BYTE_ARRAY task_id (UTF8);
  OPTIONAL BYTE_ARRAY task (UTF8);
  OPTIONAL group shards (LIST) {
    REPEATED group list {
      OPTIONAL group element {
        OPTIONAL INT64 shard_id;
        OPTIONAL BYTE_ARRAY shard (UTF8);
      }
    }
  }
  OPTIONAL BYTE_ARRAY answer (UTF8);
  OPTIONAL BYTE_ARRAY db_id (UTF8);
  OPTIONAL BYTE_ARRAY reference_sql (UTF8);
  OPTIONAL BYTE_ARRAY schema_sql (UTF8);
}
";

/// A top-level string column of the tasks: its values and definition levels (1 set,
/// 0 null).
fn strings(tasks: &[&Task], key: &str) -> (Vec<ByteArray>, Vec<i16>) {
    let mut values = Vec::new();
    let mut defs = Vec::new();
    for t in tasks {
        let v = match key {
            "task_id" => Some(t.task_id.clone()),
            "task" => Some(t.family.as_str().to_owned()),
            _ => t
                .sample
                .get(key)
                .and_then(|v| v.as_str())
                .map(str::to_owned),
        };
        defs.push(i16::from(v.is_some()));
        if let Some(v) = v {
            values.push(ByteArray::from(v.as_str()));
        }
    }
    (values, defs)
}

/// Writes `tasks` as one row group of an uncompressed Parquet file at `path`.
fn write_parquet(path: &std::path::Path, tasks: &[&Task]) {
    write_compressed(path, tasks, Compression::UNCOMPRESSED);
}

/// Writes `tasks` as one row group of a Parquet file at `path`, its pages compressed
/// with `codec`.
fn write_compressed(path: &std::path::Path, tasks: &[&Task], codec: Compression) {
    let schema = Arc::new(parse_message_type(SCHEMA).unwrap());
    let file = std::fs::File::create(path).unwrap();
    let props = Arc::new(WriterProperties::builder().set_compression(codec).build());
    let mut writer = SerializedFileWriter::new(file, schema, props).unwrap();
    let mut group = writer.next_row_group().unwrap();
    // shards.list.element.{shard_id, shard}: definition 4 for a set value (shards,
    // list, element, the field), repetition 0 for a row's first shard, 1 for the others.
    let reps: Vec<i16> = tasks
        .iter()
        .flat_map(|t| (0..t.shards.len()).map(|i| i16::from(i > 0)))
        .collect();
    let defs = vec![4i16; reps.len()];
    let mut column = 0;
    while let Some(mut col) = group.next_column().unwrap() {
        match column {
            2 => {
                let ids: Vec<i64> = tasks
                    .iter()
                    .flat_map(|t| t.shards.iter().map(|s| s.shard_id))
                    .collect();
                col.typed::<Int64Type>()
                    .write_batch(&ids, Some(&defs), Some(&reps))
                    .unwrap();
            }
            3 => {
                let texts: Vec<ByteArray> = tasks
                    .iter()
                    .flat_map(|t| t.shards.iter().map(|s| ByteArray::from(s.shard.as_str())))
                    .collect();
                col.typed::<ByteArrayType>()
                    .write_batch(&texts, Some(&defs), Some(&reps))
                    .unwrap();
            }
            n => {
                let key = [
                    "task_id",
                    "task",
                    "",
                    "",
                    "answer",
                    "db_id",
                    "reference_sql",
                    "schema_sql",
                ][n];
                let (values, defs) = strings(tasks, key);
                col.typed::<ByteArrayType>()
                    .write_batch(&values, Some(&defs), None)
                    .unwrap();
            }
        }
        col.close().unwrap();
        column += 1;
    }
    assert_eq!(column, 8);
    group.close().unwrap();
    writer.close().unwrap();
}

#[test]
fn issue_35_a_lic_file_in_parquet_loads_like_its_json() {
    // See: issue 35 (a LiC file in Parquet was rejected as "not valid UTF-8")
    let sample = sample_dataset();
    let tasks: Vec<&Task> = sample
        .tasks
        .iter()
        .filter(|t| matches!(t.family, Family::Math | Family::Database))
        .collect();
    assert_eq!(tasks.len(), 16);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sharded_instructions_600.parquet");
    write_parquet(&path, &tasks);
    assert_eq!(&std::fs::read(&path).unwrap()[..4], b"PAR1");

    let loaded = load(&path).unwrap();
    assert_eq!(loaded.tasks.len(), 16);
    for (got, want) in loaded.tasks.iter().zip(&tasks) {
        assert_eq!(got.task_id, want.task_id);
        assert_eq!(got.family, want.family);
        assert_eq!(got.shards, want.shards, "{}", want.task_id);
        for key in ["answer", "db_id", "reference_sql", "schema_sql"] {
            assert_eq!(
                got.sample.get(key),
                want.sample.get(key),
                "{} {key}",
                want.task_id
            );
        }
    }
    // The union schema's nulls are gone: a math row has no db_id, a database row no answer.
    let math = loaded
        .tasks
        .iter()
        .find(|t| t.family == Family::Math)
        .unwrap();
    assert!(math.sample.get("db_id").is_none(), "{}", math.sample);
    assert!(math.sample["answer"].as_str().unwrap().contains("####"));
    let db = loaded
        .tasks
        .iter()
        .find(|t| t.family == Family::Database)
        .unwrap();
    assert!(db.sample.get("answer").is_none(), "{}", db.sample);
    // The hash is the file's.
    let bytes = std::fs::read(&path).unwrap();
    use sha2::Digest;
    assert_eq!(loaded.sha256, hex::encode(sha2::Sha256::digest(&bytes)));
    assert_eq!(load_lenient(&path).unwrap().tasks, loaded.tasks);
}

/// The codecs baton reads: Snappy (what the Hub's converter and `datasets` write), gzip
/// and zstd (Polars' default) give the same tasks as the uncompressed file.
#[test]
fn issue_35_snappy_gzip_and_zstd_parquet_load_alike() {
    // See: issue 35 (Parquet built with only the codecs exports use)
    let sample = sample_dataset();
    let tasks: Vec<&Task> = sample
        .tasks
        .iter()
        .filter(|t| t.family == Family::Math)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.parquet");
    write_parquet(&plain, &tasks);
    let want = load(&plain).unwrap().tasks;
    assert_eq!(want.len(), tasks.len());
    for (name, codec) in [
        ("snappy", Compression::SNAPPY),
        ("gzip", Compression::GZIP(GzipLevel::default())),
        ("zstd", Compression::ZSTD(ZstdLevel::default())),
    ] {
        let path = dir.path().join(format!("{name}.parquet"));
        write_compressed(&path, &tasks, codec);
        assert_ne!(
            std::fs::read(&path).unwrap(),
            std::fs::read(&plain).unwrap(),
            "{name}"
        );
        assert_eq!(load(&path).unwrap().tasks, want, "{name}");
    }
}

#[test]
fn issue_35_a_bad_parquet_row_or_a_cut_file_names_the_file_and_row() {
    // See: issue 35
    let sample = sample_dataset();
    let mut math: Vec<Task> = sample
        .tasks
        .iter()
        .filter(|t| t.family == Family::Math)
        .take(2)
        .cloned()
        .collect();
    math[1].sample["answer"] = serde_json::json!("42");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lic.parquet");
    write_parquet(&path, &math.iter().collect::<Vec<_>>());
    let err = load(&path).unwrap_err().to_string();
    assert!(
        err.contains(&format!("{}: row 2", path.display()))
            && err.contains("expected a string containing \"####\""),
        "{err}"
    );
    let lenient = load_lenient(&path).unwrap();
    assert_eq!(lenient.tasks.len(), 1);
    assert_eq!(lenient.invalid[0].task_id, math[1].task_id);

    let bytes = std::fs::read(&path).unwrap();
    for cut in [bytes.len() / 2, 4] {
        let short = dir.path().join("short.parquet");
        std::fs::write(&short, &bytes[..cut]).unwrap();
        let err = load(&short).unwrap_err();
        assert!(matches!(err, DataError::Parquet { .. }), "{err:?}");
        assert!(
            err.to_string()
                .starts_with(&format!("{}: not a readable Parquet file", short.display())),
            "{err}"
        );
    }
}
