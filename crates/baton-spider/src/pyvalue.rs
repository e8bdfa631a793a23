//! Query results as Python sees them, and `result_eq`.
//!
//! Python's `sqlite3` returns rows of `int`, `float`, `str`, `bytes` and
//! `None`. The comparison relies on Python semantics: `1 == 1.0` (and the two
//! hash alike, so they are one set element), `str` never equals a number, and
//! the quick-rejection sort key is `str(v) + str(type(v))`, which needs Python's
//! float `repr`.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use baton_py::{bytes_repr, float_repr};

/// One value of a result row.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    /// `None`.
    Null,
    /// `int` (SQLite integers are 64-bit).
    Int(i64),
    /// `float`.
    Float(f64),
    /// `str` (TEXT decoded as UTF-8 with invalid bytes dropped).
    Text(String),
    /// `bytes`.
    Blob(Vec<u8>),
}

/// The integer an integral float equals exactly, if it fits in `i64`.
fn float_as_int(f: f64) -> Option<i64> {
    // 2^63 is exactly representable; every integral float below it fits i64.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (f.is_finite() && f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f)).then_some(f as i64)
}

impl PartialEq for Value {
    /// Python `==`: numbers compare by exact value across `int` and `float`.
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Int(i), Value::Float(f)) | (Value::Float(f), Value::Int(i)) => {
                float_as_int(*f) == Some(*i)
            }
            (Value::Text(a), Value::Text(b)) => a == b,
            (Value::Blob(a), Value::Blob(b)) => a == b,
            _ => false,
        }
    }
}

// SQLite never yields NaN (it stores NULL instead), so `==` is an equivalence
// on every value that can occur.
impl Eq for Value {}

impl Hash for Value {
    /// Consistent with `eq`: an integral float hashes like the equal int.
    fn hash<H: Hasher>(&self, state: &mut H) {
        match self {
            Value::Null => state.write_u8(0),
            Value::Int(i) => {
                state.write_u8(1);
                i.hash(state);
            }
            Value::Float(f) => match float_as_int(*f) {
                Some(i) => {
                    state.write_u8(1);
                    i.hash(state);
                }
                None => {
                    state.write_u8(2);
                    f.to_bits().hash(state);
                }
            },
            Value::Text(s) => {
                state.write_u8(3);
                s.hash(state);
            }
            Value::Blob(b) => {
                state.write_u8(4);
                b.hash(state);
            }
        }
    }
}

impl Value {
    /// `str(v) + str(type(v))`.
    pub(crate) fn sort_key(&self) -> String {
        match self {
            Value::Null => "None<class 'NoneType'>".to_owned(),
            Value::Int(i) => format!("{i}<class 'int'>"),
            Value::Float(f) => format!("{}<class 'float'>", float_repr(*f)),
            Value::Text(s) => format!("{s}<class 'str'>"),
            Value::Blob(b) => format!("{}<class 'bytes'>", bytes_repr(b)),
        }
    }

    /// Approximate heap size, for bounding result sets.
    pub(crate) fn size_hint(&self) -> usize {
        std::mem::size_of::<Value>()
            + match self {
                Value::Text(s) => s.len(),
                Value::Blob(b) => b.len(),
                _ => 0,
            }
    }
}

/// A result row.
pub(crate) type Row = Vec<Value>;

/// `unorder_row`: a row's values sorted by their `str + type` key (stable).
fn unorder_row(row: &Row) -> Row {
    let mut keyed: Vec<(String, &Value)> = row.iter().map(|v| (v.sort_key(), v)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.into_iter().map(|(_, v)| v.clone()).collect()
}

/// `quick_rej`: true when the rows, each sorted by key, agree (as lists when
/// order matters, as sets otherwise).
fn quick_rej(gold: &[Row], pred: &[Row], order_matters: bool) -> bool {
    let s1: Vec<Row> = gold.iter().map(unorder_row).collect();
    let s2: Vec<Row> = pred.iter().map(unorder_row).collect();
    if order_matters {
        s1 == s2
    } else {
        s1.iter().collect::<HashSet<_>>() == s2.iter().collect::<HashSet<_>>()
    }
}

/// Do the gold rows restricted to columns `0..perm.len()` and the pred rows
/// restricted to columns `perm` hold the same multiset of tuples? With every
/// column chosen this is upstream's `set(r1) == set(r2_perm) and
/// multiset_eq(r1, r2_perm)`; with fewer it is a necessary condition for it.
fn prefix_multiset_eq(gold: &[Row], pred: &[Row], perm: &[usize]) -> bool {
    let mut counts: HashMap<Vec<&Value>, usize> = HashMap::with_capacity(gold.len());
    for row in gold {
        *counts
            .entry(row[..perm.len()].iter().collect())
            .or_default() += 1;
    }
    for row in pred {
        let key: Vec<&Value> = perm.iter().map(|&j| &row[j]).collect();
        match counts.get_mut(&key) {
            Some(n) if *n > 0 => *n -= 1,
            _ => return false,
        }
    }
    true
}

/// Column multiset, for pruning permutations (a necessary condition).
fn column_counts(rows: &[Row], col: usize) -> HashMap<&Value, usize> {
    let mut counts = HashMap::new();
    for row in rows {
        *counts.entry(&row[col]).or_default() += 1;
    }
    counts
}

/// `result_eq(result1=gold, result2=pred, order_matters)`.
///
/// Upstream tries every column permutation (pruned by sampled membership
/// tests when there are more than 3 columns); any permutation that makes the
/// results equal wins, so the order of trying does not matter. Here the
/// permutations are searched depth-first and a branch is cut as soon as it
/// cannot match: when order matters the permuted column must equal the gold
/// column element by element; otherwise the two columns must hold the same
/// multiset of values, and the rows cut down to the columns chosen so far
/// must form the same multiset. These are necessary conditions, so the answer
/// is the same as trying every permutation, without the factorial blow-up.
pub(crate) fn result_eq(gold: &[Row], pred: &[Row], order_matters: bool) -> bool {
    if gold.is_empty() && pred.is_empty() {
        return true;
    }
    if gold.len() != pred.len() {
        return false;
    }
    let num_cols = gold[0].len();
    if pred[0].len() != num_cols {
        return false;
    }
    if !quick_rej(gold, pred, order_matters) {
        return false;
    }
    let gold_counts: Vec<HashMap<&Value, usize>> =
        (0..num_cols).map(|c| column_counts(gold, c)).collect();
    let pred_counts: Vec<HashMap<&Value, usize>> =
        (0..num_cols).map(|c| column_counts(pred, c)).collect();
    // candidates[i]: pred columns that may stand in gold column i.
    let candidates: Vec<Vec<usize>> = (0..num_cols)
        .map(|i| {
            (0..num_cols)
                .filter(|&j| {
                    if order_matters {
                        gold.iter().zip(pred).all(|(g, p)| g[i] == p[j])
                    } else {
                        gold_counts[i] == pred_counts[j]
                    }
                })
                .collect()
        })
        .collect();
    let mut perm = Vec::with_capacity(num_cols);
    let mut used = vec![false; num_cols];
    search(gold, pred, order_matters, &candidates, &mut perm, &mut used)
}

fn search(
    gold: &[Row],
    pred: &[Row],
    order_matters: bool,
    candidates: &[Vec<usize>],
    perm: &mut Vec<usize>,
    used: &mut [bool],
) -> bool {
    let col = perm.len();
    if col == candidates.len() {
        // Every column passed its check: element by element when order
        // matters, and the multiset of (partial, then full) rows otherwise.
        return true;
    }
    for &j in &candidates[col] {
        if used[j] {
            continue;
        }
        used[j] = true;
        perm.push(j);
        if (order_matters || prefix_multiset_eq(gold, pred, perm))
            && search(gold, pred, order_matters, candidates, perm, used)
        {
            return true;
        }
        perm.pop();
        used[j] = false;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use Value::*;

    #[test]
    fn sort_keys() {
        assert_eq!(Int(3).sort_key(), "3<class 'int'>");
        assert_eq!(Float(3.0).sort_key(), "3.0<class 'float'>");
        assert_eq!(Null.sort_key(), "None<class 'NoneType'>");
        assert_eq!(
            Blob(b"a'\x00\xff".to_vec()).sort_key(),
            "b\"a'\\x00\\xff\"<class 'bytes'>"
        );
        assert_eq!(Blob(b"'\"".to_vec()).sort_key(), "b'\\'\"'<class 'bytes'>");
    }

    #[test]
    fn python_equality_and_hashing() {
        assert_eq!(Int(1), Float(1.0));
        assert_ne!(Int(9_007_199_254_740_993), Float(9_007_199_254_740_992.0));
        assert_ne!(Text("1".into()), Int(1));
        let set: HashSet<Value> = [Int(1), Float(1.0), Float(-0.0), Int(0)]
            .into_iter()
            .collect();
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn spec_result_eq_cases() {
        // int 12 vs float 12.0 next to 12.5: equal rows, different sort keys.
        assert!(!result_eq(
            &[vec![Float(12.0), Float(12.5)]],
            &[vec![Int(12), Float(12.5)]],
            false
        ));
        // 1 == 1.0 as whole values.
        assert!(result_eq(&[vec![Int(1)]], &[vec![Float(1.0)]], false));
        // Column permutation.
        let gold = vec![
            vec![Text("a".into()), Int(1)],
            vec![Text("b".into()), Int(2)],
        ];
        let pred = vec![
            vec![Int(2), Text("b".into())],
            vec![Int(1), Text("a".into())],
        ];
        assert!(result_eq(&gold, &pred, false));
        assert!(!result_eq(&gold, &pred, true));
        // Bags, not sets.
        let gold = vec![vec![Int(1)], vec![Int(1)], vec![Int(2)]];
        let pred = vec![vec![Int(1)], vec![Int(2)], vec![Int(2)]];
        assert!(!result_eq(&gold, &pred, false));
        assert!(result_eq(&[], &[], true));
        assert!(!result_eq(&[vec![Int(1)]], &[], false));
        assert!(!result_eq(&[vec![Int(1)]], &[vec![Int(1), Int(1)]], false));
    }

    #[test]
    fn adversarial_columns_finish_quickly() {
        // Ten columns with identical value multisets, rows built so that no
        // permutation matches: pruning on partial rows keeps this fast.
        let n = 10;
        let gold: Vec<Row> = (0..n)
            .map(|r| (0..n).map(|c| Int(((r + c) % n) as i64)).collect())
            .collect();
        let pred: Vec<Row> = (0..n)
            .map(|r| (0..n).map(|c| Int(((r * 3 + c * 7) % n) as i64)).collect())
            .collect();
        let start = std::time::Instant::now();
        let _ = result_eq(&gold, &pred, false);
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
        let mut shuffled: Vec<Row> = gold
            .iter()
            .rev()
            .map(|r| r.iter().rev().cloned().collect())
            .collect();
        assert!(result_eq(&gold, &shuffled, false));
        shuffled[0][0] = Int(99);
        assert!(!result_eq(&gold, &shuffled, false));
    }

    #[test]
    fn many_identical_columns_still_finish() {
        let row: Row = vec![Int(0); 9];
        let gold = vec![row.clone(); 50];
        let mut pred = gold.clone();
        pred[0][8] = Float(0.0);
        assert!(result_eq(&gold, &pred, false));
        pred[0][8] = Int(1);
        assert!(!result_eq(&gold, &pred, false));
    }
}
