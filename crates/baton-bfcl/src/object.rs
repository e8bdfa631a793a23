//! JSON objects of fixed keys (a verdict's `details`, the parallel checker's sub-errors),
//! built by cloning a template instead of inserting key by key.
//!
//! `serde_json`'s map keeps insertion order (the workspace enables `preserve_order`), so it
//! is an `IndexMap` with std's randomly seeded SipHash: each insert hashes its key, which
//! took a few hundred instructions a key, about a third of building a sub-error. A clone
//! copies the template's hash table and its keys' stored hashes as they are, and the values
//! are then set in key order without a lookup. The object is the same map, keys in the same
//! order, as the inserts built.

use std::sync::OnceLock;

use serde_json::{Map, Value as Json};

/// An object of the keys `keys`, in that order.
pub(crate) struct Object<const N: usize> {
    keys: [&'static str; N],
    template: OnceLock<Map<String, Json>>,
}

impl<const N: usize> Object<N> {
    /// An object of `keys` (distinct), its template built at first use.
    pub(crate) const fn new(keys: [&'static str; N]) -> Self {
        Object {
            keys,
            template: OnceLock::new(),
        }
    }

    /// `{keys[0]: values[0], keys[1]: values[1], …}`.
    pub(crate) fn with(&self, values: [Json; N]) -> Json {
        let template = self.template.get_or_init(|| {
            let mut map = Map::with_capacity(N);
            for key in self.keys {
                map.insert(key.to_owned(), Json::Null);
            }
            debug_assert_eq!(map.len(), N, "the keys of an object are distinct");
            map
        });
        let mut map = template.clone();
        for (slot, value) in map.values_mut().zip(values) {
            *slot = value;
        }
        Json::Object(map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_object_as_inserting_key_by_key() {
        static SUB: Object<3> = Object::new(["b", "a", "c"]);
        let mut built = Map::new();
        built.insert("b".into(), Json::from(1));
        built.insert("a".into(), Json::from("x"));
        built.insert("c".into(), Json::Null);
        let cloned = SUB.with([Json::from(1), Json::from("x"), Json::Null]);
        assert_eq!(cloned, Json::Object(built.clone()));
        assert_eq!(cloned.to_string(), Json::Object(built).to_string());
        assert_eq!(cloned["a"], "x");
        assert_eq!(
            SUB.with([Json::Null, Json::Null, Json::Null]).to_string(),
            r#"{"b":null,"a":null,"c":null}"#
        );
    }
}
