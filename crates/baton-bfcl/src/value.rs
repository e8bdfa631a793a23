//! The Python value model: the objects `resolve_ast_by_type` produces and the checker compares.
//!
//! Only what the evaluator can meet is modelled: the literal types, the three containers a
//! literal can build (plus `set`, which arithmetic on set displays can produce), and
//! `Ellipsis`. Equality, membership, iteration and `repr` follow CPython 3.11.

use std::borrow::Cow;
use std::cell::Cell;
use std::cmp::Ordering;
use std::fmt::Write as _;

use baton_py::{bytes_repr, complex_repr, float_repr, str_repr};
use num_bigint::BigInt;
use num_traits::{FromPrimitive, ToPrimitive};

/// A Python object as LiC's evaluator sees it.
///
/// A `str` borrows its text where it lies (in the answer, for the common answer shape the
/// decoder reads directly, or in the sample's JSON) and owns it only where it was built;
/// [`Value::into_owned`] detaches a value from what it borrows.
#[derive(Debug, Clone)]
pub enum Value<'a> {
    /// `None`.
    None,
    /// `True` / `False` (a distinct type for the checker: `type(True) != int`).
    Bool(bool),
    /// An `int` of any size.
    Int(Int),
    /// A `float`.
    Float(f64),
    /// A `complex` (real, imaginary).
    Complex(f64, f64),
    /// A `str`.
    Str(Cow<'a, str>),
    /// A `bytes`.
    Bytes(Vec<u8>),
    /// The `Ellipsis` object (only inside evaluated arithmetic; `resolve` turns `...` into `"..."`).
    Ellipsis,
    /// A `list`.
    List(Vec<Value<'a>>),
    /// A `tuple`.
    Tuple(Vec<Value<'a>>),
    /// A `dict`, in insertion order, keys unique under Python equality.
    Dict(Vec<(Value<'a>, Value<'a>)>),
    /// A `set`, elements unique under Python equality.
    Set(Vec<Value<'a>>),
}

/// A Python `int`: inline when it fits an `i64` (nearly every int an answer or a reference
/// holds), a [`BigInt`] only beyond that.
///
/// Each `int` the decoder read or the checker built was a `BigInt`, a heap allocation of one
/// limb, allocated and freed again for every number of every answer. The two forms never
/// overlap (a value that fits an `i64` is always the inline one), so equality and order
/// compare the forms as they are; arithmetic works on `BigInt`s and its results are put back
/// into the inline form where they fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Int(IntRepr);

#[derive(Debug, Clone, PartialEq, Eq)]
enum IntRepr {
    Small(i64),
    Big(Box<BigInt>),
}

impl Int {
    /// The int `n`.
    pub const fn small(n: i64) -> Int {
        Int(IntRepr::Small(n))
    }

    /// The value as a `BigInt` (built for an inline one).
    pub fn to_big(&self) -> Cow<'_, BigInt> {
        match &self.0 {
            IntRepr::Small(n) => Cow::Owned(BigInt::from(*n)),
            IntRepr::Big(b) => Cow::Borrowed(b),
        }
    }

    /// The value as an `i64`, where it fits.
    pub fn to_i64(&self) -> Option<i64> {
        match &self.0 {
            IntRepr::Small(n) => Some(*n),
            IntRepr::Big(_) => None,
        }
    }

    /// The value as a `u64`, where it fits.
    pub fn to_u64(&self) -> Option<u64> {
        match &self.0 {
            IntRepr::Small(n) => u64::try_from(*n).ok(),
            IntRepr::Big(b) => b.to_u64(),
        }
    }

    /// The value as a `usize`, where it fits.
    pub fn to_usize(&self) -> Option<usize> {
        match &self.0 {
            IntRepr::Small(n) => usize::try_from(*n).ok(),
            IntRepr::Big(b) => b.to_usize(),
        }
    }

    /// The value as a `u8`, where it fits.
    pub fn to_u8(&self) -> Option<u8> {
        self.to_i64().and_then(|n| u8::try_from(n).ok())
    }

    /// The nearest `f64` (rounded half to even, infinite past `f64::MAX`), as `BigInt` gives it.
    pub fn to_f64(&self) -> Option<f64> {
        match &self.0 {
            IntRepr::Small(n) => Some(*n as f64),
            IntRepr::Big(b) => b.to_f64(),
        }
    }

    /// Whether the value is 0.
    pub fn is_zero(&self) -> bool {
        matches!(self.0, IntRepr::Small(0))
    }

    /// Whether the value is below 0.
    pub fn is_negative(&self) -> bool {
        match &self.0 {
            IntRepr::Small(n) => *n < 0,
            IntRepr::Big(b) => b.sign() == num_bigint::Sign::Minus,
        }
    }

    /// The bits of the magnitude (`abs(x).bit_length()`).
    pub fn bits(&self) -> u64 {
        match &self.0 {
            IntRepr::Small(n) => u64::from(64 - n.unsigned_abs().leading_zeros()),
            IntRepr::Big(b) => b.bits(),
        }
    }

    /// `~x`, that is `-x - 1`.
    pub fn invert(&self) -> Int {
        match &self.0 {
            IntRepr::Small(n) => Int::small(!n),
            IntRepr::Big(b) => Int::from(-(**b).clone() - 1),
        }
    }

    /// `str(x)` without a digit limit.
    fn text(&self) -> String {
        match &self.0 {
            IntRepr::Small(n) => n.to_string(),
            IntRepr::Big(b) => b.to_string(),
        }
    }
}

impl From<BigInt> for Int {
    fn from(b: BigInt) -> Int {
        match b.to_i64() {
            Some(n) => Int::small(n),
            None => Int(IntRepr::Big(Box::new(b))),
        }
    }
}

impl From<i64> for Int {
    fn from(n: i64) -> Int {
        Int::small(n)
    }
}

impl From<i32> for Int {
    fn from(n: i32) -> Int {
        Int::small(i64::from(n))
    }
}

impl From<u8> for Int {
    fn from(n: u8) -> Int {
        Int::small(i64::from(n))
    }
}

impl From<u64> for Int {
    fn from(n: u64) -> Int {
        match i64::try_from(n) {
            Ok(n) => Int::small(n),
            Err(_) => Int::from(BigInt::from(n)),
        }
    }
}

impl From<u128> for Int {
    fn from(n: u128) -> Int {
        match i64::try_from(n) {
            Ok(n) => Int::small(n),
            Err(_) => Int::from(BigInt::from(n)),
        }
    }
}

impl std::ops::Neg for Int {
    type Output = Int;
    fn neg(self) -> Int {
        match self.0 {
            IntRepr::Small(n) => match n.checked_neg() {
                Some(m) => Int::small(m),
                None => Int::from(-BigInt::from(n)),
            },
            IntRepr::Big(b) => Int::from(-*b),
        }
    }
}

impl PartialOrd for Int {
    fn partial_cmp(&self, other: &Int) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Int {
    fn cmp(&self, other: &Int) -> Ordering {
        match (&self.0, &other.0) {
            (IntRepr::Small(a), IntRepr::Small(b)) => a.cmp(b),
            // A big int lies beyond every inline one, on the side of its sign.
            (IntRepr::Small(_), IntRepr::Big(b)) => {
                if b.sign() == num_bigint::Sign::Minus {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            (IntRepr::Big(a), IntRepr::Small(_)) => {
                if a.sign() == num_bigint::Sign::Minus {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            (IntRepr::Big(a), IntRepr::Big(b)) => a.cmp(b),
        }
    }
}

/// The Python type of a [`Value`], for `type(x) == T` tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PyType {
    /// `NoneType`.
    NoneType,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `float`.
    Float,
    /// `complex`.
    Complex,
    /// `str`.
    Str,
    /// `bytes`.
    Bytes,
    /// `ellipsis`.
    Ellipsis,
    /// `list`.
    List,
    /// `tuple`.
    Tuple,
    /// `dict`.
    Dict,
    /// `set`.
    Set,
}

impl PyType {
    /// The type's `__name__`.
    pub fn name(self) -> &'static str {
        match self {
            PyType::NoneType => "NoneType",
            PyType::Bool => "bool",
            PyType::Int => "int",
            PyType::Float => "float",
            PyType::Complex => "complex",
            PyType::Str => "str",
            PyType::Bytes => "bytes",
            PyType::Ellipsis => "ellipsis",
            PyType::List => "list",
            PyType::Tuple => "tuple",
            PyType::Dict => "dict",
            PyType::Set => "set",
        }
    }
}

/// A Python exception raised while evaluating or checking (LiC lets these escape).
#[derive(Debug, Clone, PartialEq)]
pub struct Raise {
    /// The exception class name (`KeyError`, `TypeError`, ...).
    pub kind: &'static str,
    /// The exception message.
    pub message: String,
}

impl Raise {
    /// A raise of `kind` with `message`.
    pub fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Raise {
            kind,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Raise {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl PartialEq for Value<'_> {
    fn eq(&self, other: &Value<'_>) -> bool {
        py_eq(self, other)
    }
}

impl<'a> Value<'a> {
    /// A `str` value (borrowing a `&str`, owning a `String`).
    pub fn str(s: impl Into<Cow<'a, str>>) -> Value<'a> {
        Value::Str(s.into())
    }

    /// An `int` value.
    pub fn int(i: i64) -> Value<'a> {
        Value::Int(Int::small(i))
    }

    /// The value with every `str` it borrows copied.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::None => Value::None,
            Value::Bool(b) => Value::Bool(b),
            Value::Int(i) => Value::Int(i),
            Value::Float(f) => Value::Float(f),
            Value::Complex(re, im) => Value::Complex(re, im),
            Value::Str(s) => Value::Str(Cow::Owned(s.into_owned())),
            Value::Bytes(b) => Value::Bytes(b),
            Value::Ellipsis => Value::Ellipsis,
            Value::List(v) => Value::List(v.into_iter().map(Value::into_owned).collect()),
            Value::Tuple(v) => Value::Tuple(v.into_iter().map(Value::into_owned).collect()),
            Value::Dict(d) => Value::Dict(
                d.into_iter()
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect(),
            ),
            Value::Set(v) => Value::Set(v.into_iter().map(Value::into_owned).collect()),
        }
    }

    /// `type(self)`.
    pub fn py_type(&self) -> PyType {
        match self {
            Value::None => PyType::NoneType,
            Value::Bool(_) => PyType::Bool,
            Value::Int(_) => PyType::Int,
            Value::Float(_) => PyType::Float,
            Value::Complex(..) => PyType::Complex,
            Value::Str(_) => PyType::Str,
            Value::Bytes(_) => PyType::Bytes,
            Value::Ellipsis => PyType::Ellipsis,
            Value::List(_) => PyType::List,
            Value::Tuple(_) => PyType::Tuple,
            Value::Dict(_) => PyType::Dict,
            Value::Set(_) => PyType::Set,
        }
    }

    /// Whether `hash(self)` would succeed.
    pub fn is_hashable(&self) -> bool {
        match self {
            Value::List(_) | Value::Dict(_) | Value::Set(_) => false,
            Value::Tuple(items) => items.iter().all(Value::is_hashable),
            _ => true,
        }
    }

    /// Python truthiness (`bool(self)`).
    pub fn truthy(&self) -> bool {
        match self {
            Value::None => false,
            Value::Bool(b) => *b,
            Value::Int(i) => !i.is_zero(),
            Value::Float(f) => *f != 0.0,
            Value::Complex(re, im) => *re != 0.0 || *im != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::Ellipsis => true,
            Value::List(v) | Value::Tuple(v) | Value::Set(v) => !v.is_empty(),
            Value::Dict(d) => !d.is_empty(),
        }
    }

    /// `repr(self)`.
    pub fn repr(&self) -> String {
        let mut out = String::new();
        write_repr(self, &mut out);
        out
    }

    /// `repr(self)` appended to `out`.
    pub(crate) fn push_repr(&self, out: &mut String) {
        write_repr(self, out);
    }

    /// Convert from JSON the way `json.load` builds Python objects (its texts borrowed).
    pub fn from_json(json: &'a serde_json::Value) -> Value<'a> {
        match json {
            serde_json::Value::Null => Value::None,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int(Int::small(i))
                } else if let Some(u) = n.as_u64() {
                    Value::Int(Int::from(u))
                } else {
                    Value::Float(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            serde_json::Value::String(s) => Value::Str(Cow::Borrowed(s)),
            serde_json::Value::Array(items) => {
                Value::List(items.iter().map(Value::from_json).collect())
            }
            serde_json::Value::Object(map) => Value::Dict(
                map.iter()
                    .map(|(k, v)| (Value::Str(Cow::Borrowed(k)), Value::from_json(v)))
                    .collect(),
            ),
        }
    }

    /// A JSON rendering for reports (`None`-keyed or non-string keys use their `repr`).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value as J;
        match self {
            Value::None => J::Null,
            Value::Bool(b) => J::Bool(*b),
            Value::Int(i) => match i.to_i64() {
                Some(n) => J::from(n),
                None => J::String(other_int_text(i)),
            },
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(J::Number)
                .unwrap_or_else(|| J::String(float_repr(*f))),
            Value::Str(s) => J::String(s.to_string()),
            Value::List(v) | Value::Tuple(v) | Value::Set(v) => {
                J::Array(v.iter().map(Value::to_json).collect())
            }
            Value::Dict(d) => J::Object(
                d.iter()
                    .map(|(k, v)| {
                        let key = match k {
                            Value::Str(s) => s.to_string(),
                            other => other.repr(),
                        };
                        (key, v.to_json())
                    })
                    .collect(),
            ),
            other => J::String(other.repr()),
        }
    }
}

/// `str(i)` under CPython 3.11's limit of 4300 decimal digits, or `None` where Python
/// raises `ValueError` (which also spares the quadratic conversion of a huge int).
pub(crate) fn int_str(i: &Int) -> Option<String> {
    // 10^4300 needs 14,285 bits: anything wider has more than 4300 digits.
    if i.bits() > 14_300 {
        return None;
    }
    let text = i.text();
    (text.trim_start_matches('-').len() <= crate::lexer::INT_MAX_STR_DIGITS).then_some(text)
}

fn other_int_text(i: &Int) -> String {
    int_str(i).unwrap_or_else(|| format!("<int of {} bits>", i.bits()))
}

/// Numeric view used by equality and arithmetic.
pub(crate) enum Num<'a> {
    Int(Cow<'a, Int>),
    Float(f64),
    Complex(f64, f64),
}

pub(crate) fn as_num<'v>(v: &'v Value<'_>) -> Option<Num<'v>> {
    match v {
        Value::Bool(b) => Some(Num::Int(Cow::Owned(Int::small(i64::from(*b))))),
        Value::Int(i) => Some(Num::Int(Cow::Borrowed(i))),
        Value::Float(f) => Some(Num::Float(*f)),
        Value::Complex(re, im) => Some(Num::Complex(*re, *im)),
        _ => None,
    }
}

/// Exact comparison of an int with a float, as CPython does it.
fn int_eq_float(i: &Int, f: f64) -> bool {
    if !f.is_finite() || f.fract() != 0.0 {
        return false;
    }
    match i.to_i64() {
        // An integral float within [-2^63, 2^63) converts exactly; outside it, it equals
        // no inline int.
        Some(n) => (i64::MIN as f64..-(i64::MIN as f64)).contains(&f) && f as i64 == n,
        None => BigInt::from_f64(f).is_some_and(|g| g == *i.to_big()),
    }
}

fn num_eq(a: &Num<'_>, b: &Num<'_>) -> bool {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x == y,
        (Num::Int(x), Num::Float(f)) | (Num::Float(f), Num::Int(x)) => int_eq_float(x, *f),
        (Num::Float(x), Num::Float(y)) => x == y,
        (Num::Complex(re, im), other) | (other, Num::Complex(re, im)) => {
            if *im != 0.0 {
                return match other {
                    Num::Complex(r2, i2) => re == r2 && im == i2,
                    _ => false,
                };
            }
            match other {
                Num::Int(x) => int_eq_float(x, *re),
                Num::Float(f) => re == f,
                Num::Complex(r2, i2) => re == r2 && im == i2,
            }
        }
    }
}

/// Python `a == b`.
pub fn py_eq(a: &Value, b: &Value) -> bool {
    if let (Some(x), Some(y)) = (as_num(a), as_num(b)) {
        return num_eq(&x, &y);
    }
    match (a, b) {
        (Value::None, Value::None) | (Value::Ellipsis, Value::Ellipsis) => true,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::List(x), Value::List(y)) | (Value::Tuple(x), Value::Tuple(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| py_eq(p, q))
        }
        (Value::Dict(x), Value::Dict(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| dict_get(y, k).is_some_and(|w| py_eq(v, w)))
        }
        (Value::Set(x), Value::Set(y)) => {
            x.len() == y.len() && x.iter().all(|e| set_contains(y, e))
        }
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------------
// The lookup budget
//
// Dicts and sets are item lists searched with Python equality, so building or comparing
// one of n items takes n² equality tests: a hostile answer with a dict literal of a million
// keys would take hours. Every such search spends from a per-evaluation budget; once it is
// spent, searches stop early (their answers are then meaningless) and the evaluation is
// reported as not reproduced, which scores 0. No answer that can match a BFCL reference
// comes anywhere near the budget.

/// Equality tests one evaluation may spend on dict and set lookups.
pub const MAX_LOOKUP_STEPS: u64 = 20_000_000;

thread_local! {
    /// Steps left, or `None` outside an evaluation (no limit), and whether it ran out.
    static LOOKUPS: Cell<(Option<u64>, bool)> = const { Cell::new((None, false)) };
}

/// Spend `n` steps; false once the budget is exhausted.
pub(crate) fn spend(n: usize) -> bool {
    LOOKUPS.with(|cell| match cell.get() {
        (None, _) => true,
        (Some(_), true) => false,
        (Some(left), false) => {
            let n = n as u64;
            if n > left {
                cell.set((Some(0), true));
                false
            } else {
                cell.set((Some(left - n), false));
                true
            }
        }
    })
}

/// The state of this thread's lookup budget: what is left (`None` outside an evaluation)
/// and whether it ran out.
pub(crate) type LookupsLeft = (Option<u64>, bool);

/// This thread's lookup budget, to be put back with [`set_lookups_left`] by a caller that
/// repeats a deterministic check and must spend as if it ran once.
pub(crate) fn lookups_left() -> LookupsLeft {
    LOOKUPS.with(Cell::get)
}

/// Put back a state [`lookups_left`] returned.
pub(crate) fn set_lookups_left(state: LookupsLeft) {
    LOOKUPS.with(|cell| cell.set(state));
}

/// A lookup budget for the evaluation running on this thread; nested scopes share the
/// outermost one.
pub(crate) struct LookupBudget {
    outermost: bool,
}

impl LookupBudget {
    /// Start a budget of [`MAX_LOOKUP_STEPS`], unless one is already running.
    pub(crate) fn start() -> Self {
        let outermost = LOOKUPS.with(|cell| {
            if cell.get().0.is_none() {
                cell.set((Some(MAX_LOOKUP_STEPS), false));
                true
            } else {
                false
            }
        });
        LookupBudget { outermost }
    }

    /// Whether the budget ran out (every result since then is meaningless).
    pub(crate) fn exhausted(&self) -> bool {
        LOOKUPS.with(|cell| cell.get().1)
    }
}

impl Drop for LookupBudget {
    fn drop(&mut self) {
        if self.outermost {
            LOOKUPS.with(|cell| cell.set((None, false)));
        }
    }
}

/// The error for an evaluation whose lookup budget ran out.
pub(crate) fn budget_error() -> crate::BfclError {
    crate::BfclError::not_reproduced(format!(
        "dicts or sets too large to compare (more than {MAX_LOOKUP_STEPS} equality tests)"
    ))
}

/// Look a key up in a dict's item list.
pub fn dict_get<'d, 'a>(
    items: &'d [(Value<'a>, Value<'a>)],
    key: &Value<'_>,
) -> Option<&'d Value<'a>> {
    if !spend(items.len()) {
        return None;
    }
    items.iter().find(|(k, _)| py_eq(k, key)).map(|(_, v)| v)
}

/// `d[key] = value`: an existing equal key keeps its place and its original key object.
pub fn dict_insert<'a>(items: &mut Vec<(Value<'a>, Value<'a>)>, key: Value<'a>, value: Value<'a>) {
    if !spend(items.len()) {
        items.push((key, value));
        return;
    }
    match items.iter_mut().find(|(k, _)| py_eq(k, &key)) {
        Some(slot) => slot.1 = value,
        None => items.push((key, value)),
    }
}

/// Whether a set's item list holds an element equal to `v`.
pub(crate) fn set_contains(items: &[Value], v: &Value) -> bool {
    spend(items.len()) && items.iter().any(|e| py_eq(e, v))
}

fn unhashable(v: &Value) -> Raise {
    Raise::new(
        "TypeError",
        format!("unhashable type: '{}'", v.py_type().name()),
    )
}

/// Python `item in container`.
pub fn py_contains(container: &Value, item: &Value) -> Result<bool, Raise> {
    match container {
        Value::List(v) | Value::Tuple(v) => Ok(v.iter().any(|e| py_eq(item, e))),
        Value::Dict(d) => {
            if !item.is_hashable() {
                return Err(unhashable(item));
            }
            Ok(dict_get(d, item).is_some())
        }
        Value::Set(v) => {
            if !item.is_hashable() {
                return Err(unhashable(item));
            }
            Ok(set_contains(v, item))
        }
        Value::Str(s) => match item {
            Value::Str(needle) => Ok(s.contains(&**needle)),
            other => Err(Raise::new(
                "TypeError",
                format!(
                    "'in <string>' requires string as left operand, not {}",
                    other.py_type().name()
                ),
            )),
        },
        Value::Bytes(b) => match item {
            Value::Bytes(needle) => Ok(memchr::memmem::find(b, needle).is_some()),
            Value::Int(i) => match i.to_u8() {
                Some(byte) => Ok(b.contains(&byte)),
                None => Err(Raise::new("ValueError", "byte must be in range(0, 256)")),
            },
            other => Err(Raise::new(
                "TypeError",
                format!(
                    "a bytes-like object is required, not '{}'",
                    other.py_type().name()
                ),
            )),
        },
        other => Err(Raise::new(
            "TypeError",
            format!(
                "argument of type '{}' is not iterable",
                other.py_type().name()
            ),
        )),
    }
}

/// Python `iter(x)`, collected: the items of a list, tuple or set borrowed (the checker
/// walks the possible answers and documents this way for every call it checks), what
/// iterating anything else yields built.
pub fn py_iter<'v, 'a>(v: &'v Value<'a>) -> Result<Cow<'v, [Value<'a>]>, Raise> {
    match v {
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => Ok(Cow::Borrowed(items)),
        Value::Dict(d) => Ok(Cow::Owned(d.iter().map(|(k, _)| k.clone()).collect())),
        Value::Str(s) => Ok(Cow::Owned(
            s.chars().map(|c| Value::str(c.to_string())).collect(),
        )),
        Value::Bytes(b) => Ok(Cow::Owned(
            b.iter().map(|&x| Value::Int(Int::from(x))).collect(),
        )),
        other => Err(Raise::new(
            "TypeError",
            format!("'{}' object is not iterable", other.py_type().name()),
        )),
    }
}

/// Python `len(x)`.
pub fn py_len(v: &Value) -> Result<usize, Raise> {
    match v {
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => Ok(items.len()),
        Value::Dict(d) => Ok(d.len()),
        Value::Str(s) => Ok(s.chars().count()),
        Value::Bytes(b) => Ok(b.len()),
        other => Err(Raise::new(
            "TypeError",
            format!("object of type '{}' has no len()", other.py_type().name()),
        )),
    }
}

/// Python `x[key]` for the containers the checker indexes.
///
/// An item of a dict, list or tuple is borrowed, not copied: the checker indexes the
/// function documents and possible answers a few dozen times per answer, and copying
/// each nested dict was a third of the time the actions evaluator spent.
pub fn py_getitem<'v, 'a>(v: &'v Value<'a>, key: &Value<'_>) -> Result<Cow<'v, Value<'a>>, Raise> {
    match v {
        Value::Dict(d) => {
            if !key.is_hashable() {
                return Err(unhashable(key));
            }
            dict_get(d, key)
                .map(Cow::Borrowed)
                .ok_or_else(|| Raise::new("KeyError", key.repr()))
        }
        Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Bytes(_) => {
            let index = match key {
                Value::Int(i) => i.to_i64(),
                Value::Bool(b) => Some(i64::from(*b)),
                other => {
                    return Err(Raise::new(
                        "TypeError",
                        format!(
                            "{} indices must be integers or slices, not {}",
                            v.py_type().name(),
                            other.py_type().name()
                        ),
                    ));
                }
            };
            let len = py_len(v)?;
            let resolved = index
                .map(|i| if i < 0 { i + len as i64 } else { i })
                .filter(|i| *i >= 0 && (*i as usize) < len);
            let Some(i) = resolved else {
                return Err(Raise::new(
                    "IndexError",
                    format!("{} index out of range", v.py_type().name()),
                ));
            };
            let i = i as usize;
            Ok(match v {
                Value::List(items) | Value::Tuple(items) => Cow::Borrowed(&items[i]),
                Value::Str(s) => Cow::Owned(Value::str(
                    s.chars().nth(i).map(String::from).unwrap_or_default(),
                )),
                Value::Bytes(b) => Cow::Owned(Value::Int(Int::from(b[i]))),
                _ => unreachable!("matched above"),
            })
        }
        other => Err(Raise::new(
            "TypeError",
            format!("'{}' object is not subscriptable", other.py_type().name()),
        )),
    }
}

/// `[x[i] for i in range(len(x))]`: how the BFCL checkers walk their candidate lists (a
/// list's or tuple's items borrowed).
pub fn py_index_iter<'v, 'a>(v: &'v Value<'a>) -> Result<Cow<'v, [Value<'a>]>, Raise> {
    if let Value::List(items) | Value::Tuple(items) = v {
        return Ok(Cow::Borrowed(items));
    }
    let len = py_len(v)?;
    (0..len)
        .map(|i| py_getitem(v, &Value::int(i as i64)).map(Cow::into_owned))
        .collect::<Result<Vec<_>, _>>()
        .map(Cow::Owned)
}

/// `x["key"]` for a string key, as [`py_getitem`] with `Value::str(key)` but without
/// building the key unless the lookup fails or `x` is not a dict.
pub fn py_getitem_str<'v, 'a>(v: &'v Value<'a>, key: &str) -> Result<Cow<'v, Value<'a>>, Raise> {
    match v {
        Value::Dict(d) => dict_get_str(d, key)
            .map(Cow::Borrowed)
            .ok_or_else(|| Raise::new("KeyError", Value::str(key).repr())),
        other => py_getitem(other, &Value::str(key)),
    }
}

/// `d.get(key)` for a str key, as [`py_getitem_str`] looks it up but without building the
/// `KeyError` of a missing key.
pub(crate) fn dict_get_str<'d, 'a>(
    d: &'d [(Value<'a>, Value<'a>)],
    key: &str,
) -> Option<&'d Value<'a>> {
    // A str key equals only a str (no number equals a str), so a dict holds it under an
    // equal str key or not at all.
    if !spend(d.len()) {
        return None;
    }
    d.iter()
        .find(|(k, _)| matches!(k, Value::Str(t) if t == key))
        .map(|(_, v)| v)
}

/// BFCL's `standardize_string`: drop ` ,./-_*^`, lowercase, `'` → `"`.
pub fn standardize_string(s: &str) -> String {
    if s.is_ascii() {
        // One pass for ASCII, where Python's lower() is ASCII lowercasing.
        let mut out = String::with_capacity(s.len());
        out.extend(standardized_ascii(s).map(char::from));
        return out;
    }
    let kept: String = s
        .chars()
        .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
        .collect();
    baton_py::lower(&kept).replace('\'', "\"")
}

/// The bytes of [`standardize_string`] of an ASCII text.
fn standardized_ascii(s: &str) -> impl Iterator<Item = u8> + '_ {
    s.bytes()
        .filter(|b| !matches!(b, b' ' | b',' | b'.' | b'/' | b'-' | b'_' | b'*' | b'^'))
        .map(|b| match b {
            b'\'' => b'"',
            other => other.to_ascii_lowercase(),
        })
}

/// `standardize_string(a) == standardize_string(b)`, without building either text when
/// both are ASCII.
pub fn standardized_equal(a: &str, b: &str) -> bool {
    // Equal texts standardize alike: the common case of an answer spelt as its reference.
    if a == b {
        return true;
    }
    if a.is_ascii() && b.is_ascii() {
        standardized_ascii(a).eq(standardized_ascii(b))
    } else {
        standardize_string(a) == standardize_string(b)
    }
}

// ---------------------------------------------------------------------------------------------
// repr: containers here, scalars from `baton_py`

fn write_repr(v: &Value, out: &mut String) {
    match v {
        Value::None => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Int(i) => match int_str(i) {
            Some(text) => out.push_str(&text),
            // CPython 3.11 raises ValueError here; such an int never equals a reference
            // value (JSON loading has the same limit), so only the message differs.
            None => {
                let _ = write!(out, "<int of {} bits>", i.bits());
            }
        },
        Value::Float(f) => out.push_str(&float_repr(*f)),
        Value::Complex(re, im) => out.push_str(&complex_repr(*re, *im)),
        Value::Str(s) => out.push_str(&str_repr(s)),
        Value::Bytes(b) => out.push_str(&bytes_repr(b)),
        Value::Ellipsis => out.push_str("Ellipsis"),
        Value::List(items) => {
            out.push('[');
            write_items(items, out);
            out.push(']');
        }
        Value::Tuple(items) => {
            out.push('(');
            write_items(items, out);
            if items.len() == 1 {
                out.push(',');
            }
            out.push(')');
        }
        Value::Set(items) => {
            if items.is_empty() {
                out.push_str("set()");
            } else {
                out.push('{');
                write_items(items, out);
                out.push('}');
            }
        }
        Value::Dict(d) => {
            out.push('{');
            for (n, (k, val)) in d.iter().enumerate() {
                if n > 0 {
                    out.push_str(", ");
                }
                write_repr(k, out);
                out.push_str(": ");
                write_repr(val, out);
            }
            out.push('}');
        }
    }
}

fn write_items(items: &[Value], out: &mut String) {
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        write_repr(item, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass ASCII path of `standardize_string` against the general rule (drop the
    /// characters, Python's lower(), `'` to `"`), on every ASCII character in context.
    #[test]
    fn standardize_string_ascii_path_agrees() {
        for b in 0u8..128 {
            let text = format!("A{}b'C d", char::from(b));
            let kept: String = text
                .chars()
                .filter(|c| !matches!(c, ' ' | ',' | '.' | '/' | '-' | '_' | '*' | '^'))
                .collect();
            let want = baton_py::lower(&kept).replace('\'', "\"");
            assert_eq!(standardize_string(&text), want, "{text:?}");
        }
        assert_eq!(standardize_string("Ünï Côde's"), "ünïcôde\"s");
        for (a, b, same) in [
            ("Taylor-Swift", "taylor swift", true),
            ("It's", "it\"s", true),
            ("a.b", "ab_", true),
            ("ab", "abc", false),
            ("ÜB", "üb", true),
            ("ÜB", "ub", false),
        ] {
            assert_eq!(standardized_equal(a, b), same, "{a} {b}");
            assert_eq!(
                standardized_equal(a, b),
                standardize_string(a) == standardize_string(b)
            );
        }
    }

    /// The inline and big forms of an int agree with `BigInt` arithmetic on every property the
    /// evaluator reads, across the edges of `i64`.
    #[test]
    fn int_forms_agree_with_bigint() {
        let edges: Vec<BigInt> = [
            BigInt::from(0),
            BigInt::from(1),
            BigInt::from(-1),
            BigInt::from(255),
            BigInt::from(256),
            BigInt::from(1i64 << 53),
            BigInt::from((1i64 << 53) + 1),
            BigInt::from(i64::MAX),
            BigInt::from(i64::MIN),
            BigInt::from(i64::MAX) + 1,
            BigInt::from(i64::MIN) - 1,
            BigInt::from(u64::MAX),
            BigInt::from(u64::MAX) + 1,
            -BigInt::from(u64::MAX),
            BigInt::from(2).pow(200),
            -BigInt::from(2).pow(200),
        ]
        .into();
        for a in &edges {
            let i = Int::from(a.clone());
            assert_eq!(*i.to_big(), *a);
            assert_eq!(i.to_i64(), a.to_i64(), "{a}");
            assert_eq!(i.to_u64(), a.to_u64(), "{a}");
            assert_eq!(i.to_usize(), a.to_usize(), "{a}");
            assert_eq!(i.to_u8(), a.to_u8(), "{a}");
            assert_eq!(i.to_f64(), a.to_f64(), "{a}");
            assert_eq!(i.bits(), a.bits(), "{a}");
            assert_eq!(i.is_zero(), *a == BigInt::from(0));
            assert_eq!(i.is_negative(), *a < BigInt::from(0));
            assert_eq!(*(-i.clone()).to_big(), -a, "-({a})");
            assert_eq!(*i.invert().to_big(), -a - 1, "~{a}");
            assert_eq!(int_str(&i), Some(a.to_string()));
            for b in &edges {
                let j = Int::from(b.clone());
                assert_eq!(i.cmp(&j), a.cmp(b), "{a} <=> {b}");
                assert_eq!(i == j, a == b, "{a} == {b}");
            }
            for f in [
                0.0,
                1.0,
                -1.0,
                9.007_199_254_740_992e15,
                2f64.powi(63),
                -(2f64.powi(63)),
            ] {
                let want = BigInt::from_f64(f).is_some_and(|g| g == *a);
                assert_eq!(int_eq_float(&i, f), want, "{a} == {f}");
            }
        }
    }

    #[test]
    fn python_equality() {
        assert!(py_eq(&Value::int(5), &Value::Float(5.0)));
        assert!(py_eq(&Value::Bool(true), &Value::int(1)));
        assert!(!py_eq(&Value::str("5"), &Value::int(5)));
        assert!(!py_eq(
            &Value::List(vec![Value::int(1)]),
            &Value::Tuple(vec![Value::int(1)])
        ));
        assert!(py_eq(&Value::Complex(2.0, 0.0), &Value::int(2)));
        let big = BigInt::from(2).pow(1000);
        assert!(py_eq(
            &Value::Int(big.into()),
            &Value::Float(2f64.powi(1000))
        ));
        assert!(!py_eq(&Value::None, &Value::str("")));
    }

    #[test]
    fn standardize_matches_bfcl() {
        assert_eq!(
            standardize_string("April 1, 2024 - It's *NEW*^/_."),
            "april12024it\"snew"
        );
        assert_eq!(standardize_string("Taylor-Swift"), "taylorswift");
    }

    #[test]
    fn membership_and_indexing() {
        let d = Value::Dict(vec![(Value::str("a"), Value::int(1))]);
        assert_eq!(py_contains(&d, &Value::str("a")), Ok(true));
        assert!(py_contains(&d, &Value::List(vec![])).is_err());
        assert_eq!(py_contains(&Value::str("abc"), &Value::str("b")), Ok(true));
        assert!(py_contains(&Value::int(3), &Value::int(3)).is_err());
        assert_eq!(py_index_iter(&Value::str("")).map(|v| v.len()), Ok(0));
        assert!(py_getitem(&d, &Value::str("b")).is_err());
    }
}
