//! `repr()` of the Python object `json.loads` builds, for a `serde_json::Value` (feature `json`).

use std::fmt::Write as _;

use serde_json::Value;

use crate::{float_repr, str_repr};

/// Python's `repr(json.loads(text))` where `value` was read from `text`.
///
/// `null`, `true` and `false` print as `None`, `True` and `False`; integers as ints, numbers
/// with a fraction or an exponent as floats ([`float_repr`]), strings by [`str_repr`]; lists and
/// dicts in insertion order with `, ` and `: ` separators. (An integer too large for `u64` is
/// read by serde_json as a float and prints as one, where Python would keep it an int.)
///
/// ```
/// use serde_json::json;
/// let v = json!([{"name": "f", "ok": true, "x": 1.0, "tags": ["it's"], "none": null}]);
/// assert_eq!(
///     baton_py::json_repr(&v),
///     r#"[{'name': 'f', 'ok': True, 'x': 1.0, 'tags': ["it's"], 'none': None}]"#
/// );
/// ```
#[must_use]
pub fn json_repr(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = write!(out, "{i}");
            } else if let Some(u) = n.as_u64() {
                let _ = write!(out, "{u}");
            } else {
                // Without serde_json's `arbitrary_precision` every other number is an f64.
                out.push_str(&float_repr(n.as_f64().unwrap_or(f64::NAN)));
            }
        }
        Value::String(s) => out.push_str(&str_repr(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&str_repr(key));
                out.push_str(": ");
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_nest_with_python_separators() {
        let v = json!({"b": [1, 2.0, -3], "a": {"t": true, "f": false, "n": null}, "e": []});
        assert_eq!(
            json_repr(&v),
            "{'b': [1, 2.0, -3], 'a': {'t': True, 'f': False, 'n': None}, 'e': []}"
        );
        assert_eq!(json_repr(&json!(u64::MAX)), "18446744073709551615");
        assert_eq!(json_repr(&json!(i64::MIN)), "-9223372036854775808");
    }
}
