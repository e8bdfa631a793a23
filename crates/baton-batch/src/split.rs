//! Cutting a round's items into batches under an API's limits.

use std::collections::HashSet;

use crate::{BatchError, BatchItem, check_custom_id};

/// How much one batch may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Requests per batch.
    pub requests: usize,
    /// Bytes of serialized items per batch (OpenAI: the JSONL file; Anthropic: the
    /// request body).
    pub bytes: usize,
}

/// What one item adds to a batch's size: its JSONL line (OpenAI's wrapper, the widest of
/// the two) and a newline.
fn item_bytes(item: &BatchItem) -> usize {
    // {"custom_id":"…","method":"POST","url":"/v1/chat/completions","body":…}\n
    let body = serde_json::to_vec(&item.body).map_or(0, |b| b.len());
    body + item.custom_id.len() + 80
}

/// Splits `items` in order into batches of at most `limits.requests` items and
/// `limits.bytes` bytes. Ids are checked (the rule, and no repeats in the list); an item
/// larger than a whole batch is an error naming it.
pub fn split(items: Vec<BatchItem>, limits: Limits) -> Result<Vec<Vec<BatchItem>>, BatchError> {
    let mut seen = HashSet::with_capacity(items.len());
    let mut batches = Vec::new();
    let mut current = Vec::new();
    let mut current_bytes = 0usize;
    for item in items {
        check_custom_id(&item.custom_id)?;
        if !seen.insert(item.custom_id.clone()) {
            return Err(BatchError::InvalidId {
                custom_id: item.custom_id,
                message: "appears twice in one round".into(),
            });
        }
        let bytes = item_bytes(&item);
        if bytes > limits.bytes {
            return Err(BatchError::TooLarge {
                custom_id: item.custom_id,
                bytes,
                limit: limits.bytes,
            });
        }
        if !current.is_empty()
            && (current.len() == limits.requests || current_bytes + bytes > limits.bytes)
        {
            batches.push(std::mem::take(&mut current));
            current_bytes = 0;
        }
        current_bytes += bytes;
        current.push(item);
    }
    if !current.is_empty() {
        batches.push(current);
    }
    Ok(batches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn item(id: &str, text: &str) -> BatchItem {
        BatchItem {
            custom_id: id.into(),
            body: json!({"text": text}),
        }
    }

    #[test]
    fn splits_by_count_and_by_bytes_in_order() {
        let items: Vec<_> = (0..5).map(|i| item(&format!("i{i}"), "x")).collect();
        let by_count = split(
            items.clone(),
            Limits {
                requests: 2,
                bytes: 1 << 20,
            },
        )
        .unwrap();
        let sizes: Vec<_> = by_count.iter().map(Vec::len).collect();
        assert_eq!(sizes, [2, 2, 1]);
        let one = item_bytes(&items[0]);
        let by_bytes = split(
            items,
            Limits {
                requests: 100,
                bytes: one * 3,
            },
        )
        .unwrap();
        let sizes: Vec<_> = by_bytes.iter().map(Vec::len).collect();
        assert_eq!(sizes, [3, 2]);
        assert_eq!(by_bytes[1][0].custom_id, "i3");
    }

    #[test]
    fn bad_repeated_and_oversized_items_are_named() {
        let limits = Limits {
            requests: 10,
            bytes: 200,
        };
        let err = split(vec![item("a b", "x")], limits).unwrap_err();
        assert!(err.to_string().contains("\"a b\""), "{err}");
        let err = split(vec![item("a", "x"), item("a", "y")], limits).unwrap_err();
        assert!(err.to_string().contains("twice"), "{err}");
        let err = split(vec![item("big", &"x".repeat(500))], limits).unwrap_err();
        assert!(matches!(err, BatchError::TooLarge { .. }), "{err}");
        assert!(split(Vec::new(), limits).unwrap().is_empty());
    }
}
