//! LiC files in Parquet, as the Hugging Face Hub serves a dataset: each row read as the
//! JSON object it was converted from.
//!
//! The Hub's Parquet export gives every row the union of all rows' keys, a key a row did
//! not have holding null (a math task gets `db_id: null`). Those nulls are dropped, at
//! every depth, so a row reads as the object LiC's JSON holds and is checked by the same
//! rules; LiC's own files hold no null where a check looks. Lists read as arrays, structs
//! as objects, strings as strings, integers as integers.

use bytes::Bytes;
use parquet::file::reader::{FileReader, SerializedFileReader};
use serde_json::Value;

use crate::error::DataError;

/// The first (and last) bytes of a Parquet file.
pub(crate) const MAGIC: &[u8] = b"PAR1";

/// The rows of a Parquet file's bytes, nulls dropped. A file the reader cannot read (one
/// cut short by a stopped download, say) is [`DataError::Parquet`] naming it; the
/// reader's panics on a corrupt file are caught as that error too.
pub(crate) fn rows(name: &str, bytes: Vec<u8>) -> Result<Vec<Value>, DataError> {
    let read = || -> Result<Vec<Value>, parquet::errors::ParquetError> {
        let reader = SerializedFileReader::new(Bytes::from(bytes))?;
        let mut rows = Vec::new();
        for row in reader.get_row_iter(None)? {
            let mut value = row?.to_json_value();
            drop_nulls(&mut value);
            rows.push(value);
        }
        Ok(rows)
    };
    let failed = |message: String| DataError::Parquet {
        file: name.to_owned(),
        message,
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)) {
        Ok(Ok(rows)) => Ok(rows),
        Ok(Err(e)) => Err(failed(e.to_string())),
        Err(_) => Err(failed("its reader gave up on it".to_owned())),
    }
}

/// Removes every null-valued key of every object in `value`.
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_of_the_union_schema_are_dropped_at_every_depth() {
        let mut v = serde_json::json!({
            "task_id": "m/1", "db_id": null,
            "shards": [{"shard_id": 1, "shard": "a", "shard_text": null}],
        });
        drop_nulls(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"task_id": "m/1", "shards": [{"shard_id": 1, "shard": "a"}]})
        );
    }
}
