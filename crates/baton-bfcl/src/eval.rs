//! Evaluation of the expressions LiC hands to `eval(ast.unparse(node))` (a `BinOp` value).
//!
//! Python semantics for literals, containers, unary/binary/boolean operators, comparisons,
//! conditional expressions and subscripts. Names raise `NameError` (LiC's module scope has
//! no user variables); calls, attribute access, comprehensions and `%`-formatting are
//! refused as not reproduced (they could only succeed upstream through builtins or methods).
//!
//! # Bounds
//!
//! Upstream evaluates `eval(ast.unparse(node))`, so a value nested deeper than
//! [`MAX_UNPARSE_DEPTH`](crate::unparse::MAX_UNPARSE_DEPTH) raises `RecursionError` before
//! it is evaluated; the same limit applies here. Results have size bounds CPython does not
//! have: an `int` of more than [`MAX_INT_BITS`] bits (from `*`, `**` or `<<`), a division
//! whose operands would take more than [`MAX_DIVISION_WORK`] limb operations, and a
//! sequence or string larger than [`MAX_WEIGHT`] (repetition, concatenation, `|` of
//! dicts) are refused as not reproduced. Upstream would compute such a value (or hang on
//! it: CPython's long division is quadratic) and compare it with a BFCL reference, which
//! is a small JSON value, so the score is 0 either way.

use num_bigint::BigInt;
use num_integer::Integer;
use num_traits::{Signed, ToPrimitive, Zero};

use crate::ast::{BinOp, BoolOp, CmpOp, Constant, Expr, UnaryOp};
use crate::error::BfclError;
use crate::unparse::MAX_UNPARSE_DEPTH;
use crate::value::{
    Int, Num, Raise, Value, as_num, dict_get, dict_insert, py_contains, py_eq, py_getitem, py_iter,
    py_len, set_contains,
};

/// Widest `int` result computed, in bits (about 315,000 decimal digits).
pub const MAX_INT_BITS: u64 = 1 << 20;

/// Most 64-bit limb operations one `//`, `%` or `/` of two `int`s may take (num-bigint's
/// division, like CPython's, is quadratic).
pub const MAX_DIVISION_WORK: u64 = 1 << 26;

/// Largest sequence, string or dict built by an operator, in weight units (one value,
/// or eight bytes of text): at most a few tens of megabytes.
pub const MAX_WEIGHT: u64 = 1 << 21;

/// The size of a value in the units of [`MAX_WEIGHT`]: one per value, plus one per eight
/// bytes of text and per 64 bits of an `int`.
pub(crate) fn weight(v: &Value) -> u64 {
    1 + match v {
        Value::Str(s) => s.len() as u64 / 8,
        Value::Bytes(b) => b.len() as u64 / 8,
        Value::Int(i) => i.bits() / 64,
        Value::List(items) | Value::Tuple(items) | Value::Set(items) => {
            items.iter().map(weight).sum()
        }
        Value::Dict(items) => items.iter().map(|(k, v)| weight(k) + weight(v)).sum(),
        _ => 0,
    }
}

fn too_large(what: &str) -> BfclError {
    BfclError::not_reproduced(format!("{what} too large"))
}

/// Refuse a result whose predicted weight is past [`MAX_WEIGHT`].
fn bounded(predicted: u64, what: &str) -> Result<(), BfclError> {
    if predicted > MAX_WEIGHT {
        Err(too_large(what))
    } else {
        Ok(())
    }
}

fn raise(kind: &'static str, message: impl Into<String>) -> BfclError {
    BfclError::from(Raise::new(kind, message))
}

/// The value of a constant node.
pub(crate) fn constant_value(c: &Constant) -> Value<'static> {
    match c {
        Constant::None => Value::None,
        Constant::Bool(b) => Value::Bool(*b),
        Constant::Ellipsis => Value::Ellipsis,
        Constant::Int(i) => Value::Int(i.clone()),
        Constant::Float(f) => Value::Float(*f),
        Constant::Imag(im) => Value::Complex(0.0, *im),
        Constant::Str(s) => Value::str(s.clone()),
        Constant::Bytes(b) => Value::Bytes(b.clone()),
    }
}

/// Evaluate `e` as Python would.
pub(crate) fn eval(e: &Expr) -> Result<Value<'static>, BfclError> {
    eval_at(e, 0)
}

fn eval_at(e: &Expr, depth: usize) -> Result<Value<'static>, BfclError> {
    if depth >= MAX_UNPARSE_DEPTH {
        return Err(raise(
            "RecursionError",
            "maximum recursion depth exceeded while calling a Python object",
        ));
    }
    let eval = |e: &Expr| eval_at(e, depth + 1);
    let eval_items = |elts: &[Expr]| eval_items(elts, depth + 1);
    match e {
        Expr::Constant { value, .. } => Ok(constant_value(value)),
        Expr::Name(n) => Err(raise("NameError", format!("name '{n}' is not defined"))),
        Expr::UnaryOp(op, operand) => unary(*op, &eval(operand)?),
        Expr::BinOp(l, op, r) => {
            let left = eval(l)?;
            let right = eval(r)?;
            binop(&left, *op, &right)
        }
        Expr::BoolOp(op, values) => {
            let mut last = Value::None;
            for v in values {
                last = eval(v)?;
                let stop = match op {
                    BoolOp::And => !last.truthy(),
                    BoolOp::Or => last.truthy(),
                };
                if stop {
                    break;
                }
            }
            Ok(last)
        }
        Expr::Compare(left, ops) => {
            let mut lhs = eval(left)?;
            for (op, comparator) in ops {
                let rhs = eval(comparator)?;
                if !compare(&lhs, *op, &rhs)? {
                    return Ok(Value::Bool(false));
                }
                lhs = rhs;
            }
            Ok(Value::Bool(true))
        }
        Expr::IfExp { test, body, orelse } => {
            if eval(test)?.truthy() {
                eval(body)
            } else {
                eval(orelse)
            }
        }
        Expr::List(elts) => Ok(Value::List(eval_items(elts)?)),
        Expr::Tuple(elts) => Ok(Value::Tuple(eval_items(elts)?)),
        Expr::Set(elts) => {
            let mut out: Vec<Value> = Vec::new();
            for v in eval_items(elts)? {
                set_add(&mut out, v)?;
            }
            Ok(Value::Set(out))
        }
        Expr::Dict(items) => {
            let mut out = Vec::new();
            for (key, value) in items {
                match key {
                    None => match eval(value)? {
                        Value::Dict(d) => {
                            for (k, v) in d {
                                dict_insert(&mut out, k, v);
                            }
                        }
                        other => {
                            return Err(raise(
                                "TypeError",
                                format!("'{}' object is not a mapping", other.py_type().name()),
                            ));
                        }
                    },
                    Some(k) => {
                        let k = eval(k)?;
                        let v = eval(value)?;
                        if !k.is_hashable() {
                            return Err(raise(
                                "TypeError",
                                format!("unhashable type: '{}'", k.py_type().name()),
                            ));
                        }
                        dict_insert(&mut out, k, v);
                    }
                }
            }
            Ok(Value::Dict(out))
        }
        Expr::Subscript(value, slice) => {
            let container = eval(value)?;
            match &**slice {
                Expr::Slice(lower, upper, step) => {
                    let bound = |b: &Option<Box<Expr>>| -> Result<Value, BfclError> {
                        b.as_deref().map(eval).unwrap_or(Ok(Value::None))
                    };
                    slice_value(&container, &bound(lower)?, &bound(upper)?, &bound(step)?)
                }
                other => Ok(py_getitem(&container, &eval(other)?)?.into_owned()),
            }
        }
        Expr::JoinedStr(_) => Err(BfclError::not_reproduced("f-string inside arithmetic")),
        Expr::Call { .. } => Err(BfclError::not_reproduced("function call inside arithmetic")),
        Expr::Attribute(..) => Err(BfclError::not_reproduced(
            "attribute access inside arithmetic",
        )),
        _ => Err(BfclError::not_reproduced(
            "expression kind inside arithmetic",
        )),
    }
}

fn eval_items(elts: &[Expr], depth: usize) -> Result<Vec<Value<'static>>, BfclError> {
    let mut out = Vec::new();
    let mut total = 0;
    for e in elts {
        match e {
            Expr::Starred(inner) => {
                let items = py_iter(&eval_at(inner, depth)?)?.into_owned();
                total += items.iter().map(weight).sum::<u64>();
                bounded(total, "unpacked sequence")?;
                out.extend(items);
            }
            other => out.push(eval_at(other, depth)?),
        }
    }
    Ok(out)
}

fn set_add<'a>(set: &mut Vec<Value<'a>>, v: Value<'a>) -> Result<(), BfclError> {
    if !v.is_hashable() {
        return Err(raise(
            "TypeError",
            format!("unhashable type: '{}'", v.py_type().name()),
        ));
    }
    if !set_contains(set, &v) {
        set.push(v);
    }
    Ok(())
}

fn unary(op: UnaryOp, v: &Value<'_>) -> Result<Value<'static>, BfclError> {
    if op == UnaryOp::Not {
        return Ok(Value::Bool(!v.truthy()));
    }
    let bad = || {
        let symbol = match op {
            UnaryOp::USub => "-",
            UnaryOp::UAdd => "+",
            _ => "~",
        };
        raise(
            "TypeError",
            format!(
                "bad operand type for unary {symbol}: '{}'",
                v.py_type().name()
            ),
        )
    };
    match (op, as_num(v)) {
        (UnaryOp::USub, Some(Num::Int(i))) => Ok(Value::Int(-i.into_owned())),
        (UnaryOp::USub, Some(Num::Float(f))) => Ok(Value::Float(-f)),
        (UnaryOp::USub, Some(Num::Complex(re, im))) => Ok(Value::Complex(-re, -im)),
        (UnaryOp::UAdd, Some(Num::Int(i))) => Ok(Value::Int(i.into_owned())),
        (UnaryOp::UAdd, Some(Num::Float(f))) => Ok(Value::Float(f)),
        (UnaryOp::UAdd, Some(Num::Complex(re, im))) => Ok(Value::Complex(re, im)),
        (UnaryOp::Invert, Some(Num::Int(i))) => Ok(Value::Int(i.invert())),
        _ => Err(bad()),
    }
}

fn unsupported(a: &Value, op: BinOp, b: &Value) -> BfclError {
    raise(
        "TypeError",
        format!(
            "unsupported operand type(s) for {}: '{}' and '{}'",
            op.symbol(),
            a.py_type().name(),
            b.py_type().name()
        ),
    )
}

/// `int` → `float` as CPython converts (raising on overflow).
fn int_to_f64(i: &Int) -> Result<f64, BfclError> {
    finite_float(i.to_f64())
}

/// [`int_to_f64`] of a `BigInt`.
fn big_to_f64(i: &BigInt) -> Result<f64, BfclError> {
    finite_float(i.to_f64())
}

/// An int's nearest float, or CPython's error when it has none.
fn finite_float(f: Option<f64>) -> Result<f64, BfclError> {
    match f {
        Some(f) if f.is_finite() => Ok(f),
        _ => Err(raise("OverflowError", "int too large to convert to float")),
    }
}

fn repeat_count(n: &Value) -> Option<i64> {
    match n {
        Value::Int(i) => Some(
            i.to_i64()
                .unwrap_or(if i.is_negative() { 0 } else { i64::MAX }),
        ),
        Value::Bool(b) => Some(i64::from(*b)),
        _ => None,
    }
}

/// `items * n`, where `items` weigh `unit` together.
fn repeat<T: Clone>(items: &[T], unit: u64, n: i64) -> Result<Vec<T>, BfclError> {
    let n = n.max(0) as u64;
    if n > 0 {
        bounded(unit.max(1).saturating_mul(n), "sequence repetition")?;
    }
    Ok(items
        .iter()
        .cloned()
        .cycle()
        .take(items.len() * n as usize)
        .collect())
}

/// Python `a <op> b`.
pub(crate) fn binop<'a>(a: &Value<'a>, op: BinOp, b: &Value<'a>) -> Result<Value<'a>, BfclError> {
    if let (Some(x), Some(y)) = (as_num(a), as_num(b)) {
        if let (Value::Bool(p), Value::Bool(q)) = (a, b) {
            match op {
                BinOp::BitAnd => return Ok(Value::Bool(*p && *q)),
                BinOp::BitOr => return Ok(Value::Bool(*p || *q)),
                BinOp::BitXor => return Ok(Value::Bool(p != q)),
                _ => {}
            }
        }
        return numeric(x, op, y).map_err(|e| match e {
            NumErr::Unsupported => unsupported(a, op, b),
            NumErr::Other(e) => e,
        });
    }
    if matches!((a, op, b), |(Value::Str(_), BinOp::Add, Value::Str(_))| (
        Value::Bytes(_),
        BinOp::Add,
        Value::Bytes(_)
    )
        | (Value::List(_), BinOp::Add, Value::List(_))
        | (Value::Tuple(_), BinOp::Add, Value::Tuple(_))
        | (Value::Dict(_), BinOp::BitOr, Value::Dict(_)))
    {
        bounded(weight(a) + weight(b), "concatenation")?;
    }
    match (a, op, b) {
        (Value::Str(x), BinOp::Add, Value::Str(y)) => Ok(Value::str(format!("{x}{y}"))),
        (Value::Bytes(x), BinOp::Add, Value::Bytes(y)) => {
            Ok(Value::Bytes([x.as_slice(), y.as_slice()].concat()))
        }
        (Value::List(x), BinOp::Add, Value::List(y)) => {
            Ok(Value::List([x.as_slice(), y.as_slice()].concat()))
        }
        (Value::Tuple(x), BinOp::Add, Value::Tuple(y)) => {
            Ok(Value::Tuple([x.as_slice(), y.as_slice()].concat()))
        }
        (Value::Str(_) | Value::Bytes(_), BinOp::Mod, _) => {
            Err(BfclError::not_reproduced("%-formatting inside arithmetic"))
        }
        (Value::Dict(x), BinOp::BitOr, Value::Dict(y)) => {
            let mut out = x.clone();
            for (k, v) in y {
                dict_insert(&mut out, k.clone(), v.clone());
            }
            Ok(Value::Dict(out))
        }
        (
            Value::Set(x),
            BinOp::BitOr | BinOp::BitAnd | BinOp::Sub | BinOp::BitXor,
            Value::Set(y),
        ) => {
            let in_y = |v: &Value| set_contains(y, v);
            let in_x = |v: &Value| set_contains(x, v);
            let out: Vec<Value> = match op {
                BinOp::BitOr => x
                    .iter()
                    .cloned()
                    .chain(y.iter().filter(|v| !in_x(v)).cloned())
                    .collect(),
                BinOp::BitAnd => x.iter().filter(|v| in_y(v)).cloned().collect(),
                BinOp::Sub => x.iter().filter(|v| !in_y(v)).cloned().collect(),
                _ => x
                    .iter()
                    .filter(|v| !in_y(v))
                    .chain(y.iter().filter(|v| !in_x(v)))
                    .cloned()
                    .collect(),
            };
            Ok(Value::Set(out))
        }
        (seq, BinOp::Mult, n) | (n, BinOp::Mult, seq) if repeat_count(n).is_some() => {
            let count = repeat_count(n).unwrap_or(0);
            let unit = |items: &[Value]| items.iter().map(weight).sum::<u64>();
            match seq {
                Value::Str(s) => {
                    let count = count.max(0) as u64;
                    if count > 0 {
                        bounded((s.len() as u64 / 8).max(1).saturating_mul(count), "string")?;
                    }
                    Ok(Value::str(s.repeat(count as usize)))
                }
                Value::Bytes(x) => Ok(Value::Bytes(repeat(x, x.len() as u64 / 8, count)?)),
                Value::List(x) => Ok(Value::List(repeat(x, unit(x), count)?)),
                Value::Tuple(x) => Ok(Value::Tuple(repeat(x, unit(x), count)?)),
                _ => Err(unsupported(a, op, b)),
            }
        }
        _ => Err(unsupported(a, op, b)),
    }
}

enum NumErr {
    Unsupported,
    Other(BfclError),
}

impl From<BfclError> for NumErr {
    fn from(e: BfclError) -> Self {
        NumErr::Other(e)
    }
}

fn numeric(x: Num<'_>, op: BinOp, y: Num<'_>) -> Result<Value<'static>, NumErr> {
    match (x, y) {
        (Num::Int(p), Num::Int(q)) => int_op(&p.to_big(), op, &q.to_big()),
        (x, y) => {
            let to_c = |n: &Num<'_>| -> Result<(f64, f64), BfclError> {
                Ok(match n {
                    Num::Int(i) => (int_to_f64(i)?, 0.0),
                    Num::Float(f) => (*f, 0.0),
                    Num::Complex(re, im) => (*re, *im),
                })
            };
            let complex = matches!(x, Num::Complex(..)) || matches!(y, Num::Complex(..));
            let (a, ai) = to_c(&x)?;
            let (b, bi) = to_c(&y)?;
            if complex {
                complex_op((a, ai), op, (b, bi))
            } else {
                float_op(a, op, b)
            }
        }
    }
}

fn int_op(p: &BigInt, op: BinOp, q: &BigInt) -> Result<Value<'static>, NumErr> {
    let zero_div = || {
        NumErr::Other(raise(
            "ZeroDivisionError",
            "integer division or modulo by zero",
        ))
    };
    let divides = matches!(op, BinOp::Div | BinOp::FloorDiv | BinOp::Mod);
    if divides && (p.bits() / 64 + 1).saturating_mul(q.bits() / 64 + 1) > MAX_DIVISION_WORK {
        return Err(NumErr::Other(too_large("integer division")));
    }
    Ok(Value::Int(Int::from(match op {
        BinOp::Add => p + q,
        BinOp::Sub => p - q,
        BinOp::Mult => {
            if p.bits() + q.bits() > MAX_INT_BITS {
                return Err(NumErr::Other(too_large("integer product")));
            }
            p * q
        }
        BinOp::Div => {
            if q.is_zero() {
                return Err(NumErr::Other(raise(
                    "ZeroDivisionError",
                    "division by zero",
                )));
            }
            return Ok(Value::Float(int_true_div(p, q)?));
        }
        BinOp::FloorDiv => {
            if q.is_zero() {
                return Err(zero_div());
            }
            p.div_floor(q)
        }
        BinOp::Mod => {
            if q.is_zero() {
                return Err(zero_div());
            }
            p.mod_floor(q)
        }
        BinOp::Pow => {
            if q.is_negative() {
                if p.is_zero() {
                    return Err(NumErr::Other(raise(
                        "ZeroDivisionError",
                        "0.0 cannot be raised to a negative power",
                    )));
                }
                return float_op(big_to_f64(p)?, BinOp::Pow, big_to_f64(q)?);
            }
            let bits = p.bits().max(1);
            let exp = q.to_u64().unwrap_or(u64::MAX);
            if p.abs() > BigInt::from(1) && bits.saturating_mul(exp) > MAX_INT_BITS {
                return Err(NumErr::Other(BfclError::not_reproduced(
                    "integer power too large",
                )));
            }
            if p.abs() <= BigInt::from(1) {
                if p.is_zero() {
                    return Ok(Value::int(i64::from(exp == 0)));
                }
                if p.is_negative() && exp % 2 == 1 {
                    return Ok(Value::int(-1));
                }
                return Ok(Value::int(1));
            }
            num_traits::pow::Pow::pow(p, exp)
        }
        BinOp::LShift | BinOp::RShift => {
            if q.is_negative() {
                return Err(NumErr::Other(raise("ValueError", "negative shift count")));
            }
            let n = q.to_u64().unwrap_or(u64::MAX);
            if op == BinOp::RShift {
                if n > p.bits() {
                    BigInt::from(if p.is_negative() { -1 } else { 0 })
                } else {
                    p >> n
                }
            } else {
                if !p.is_zero() && p.bits().saturating_add(n) > MAX_INT_BITS {
                    return Err(NumErr::Other(BfclError::not_reproduced(
                        "shift result too large",
                    )));
                }
                if p.is_zero() { BigInt::zero() } else { p << n }
            }
        }
        BinOp::BitAnd => p & q,
        BinOp::BitOr => p | q,
        BinOp::BitXor => p ^ q,
        BinOp::MatMult => return Err(NumErr::Unsupported),
    })))
}

/// `int / int`, correctly rounded as CPython's `long_true_divide` does.
fn int_true_div(p: &BigInt, q: &BigInt) -> Result<f64, BfclError> {
    const EXACT: i64 = 1 << 53;
    if let (Some(a), Some(b)) = (p.to_i64(), q.to_i64())
        && a.abs() <= EXACT
        && b.abs() <= EXACT
    {
        return Ok(a as f64 / b as f64);
    }
    if p.is_zero() {
        let negative = q.is_negative();
        return Ok(if negative { -0.0 } else { 0.0 });
    }
    let negative = p.is_negative() != q.is_negative();
    let (a, b) = (p.abs(), q.abs());
    // Scale so the integer quotient has 55 or 56 bits, then fold the remainder into a
    // sticky bit: the u64 -> f64 conversion then rounds half-to-even exactly once.
    let shift = 55 - (a.bits() as i64 - b.bits() as i64);
    let (n, d) = if shift >= 0 {
        (a << shift as u64, b)
    } else {
        (a, b << (-shift) as u64)
    };
    let (quotient, remainder) = n.div_rem(&d);
    let mut bits = quotient.to_u64().unwrap_or(u64::MAX);
    if !remainder.is_zero() {
        bits |= 1;
    }
    let exponent = -shift;
    let magnitude = if exponent > 1100 {
        f64::INFINITY
    } else if exponent < -1200 {
        0.0
    } else {
        (bits as f64)
            * 2f64.powi(exponent.clamp(-1000, 1000) as i32)
            * 2f64.powi((exponent - exponent.clamp(-1000, 1000)) as i32)
    };
    if magnitude.is_infinite() {
        return Err(raise(
            "OverflowError",
            "integer division result too large for a float",
        ));
    }
    Ok(if negative { -magnitude } else { magnitude })
}

fn float_op(a: f64, op: BinOp, b: f64) -> Result<Value<'static>, NumErr> {
    Ok(Value::Float(match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mult => a * b,
        BinOp::Div => {
            if b == 0.0 {
                return Err(NumErr::Other(raise(
                    "ZeroDivisionError",
                    "float division by zero",
                )));
            }
            a / b
        }
        BinOp::FloorDiv | BinOp::Mod => {
            if b == 0.0 {
                let what = if op == BinOp::Mod {
                    "float modulo"
                } else {
                    "float floor division by zero"
                };
                return Err(NumErr::Other(raise("ZeroDivisionError", what)));
            }
            let (div, m) = float_divmod(a, b);
            if op == BinOp::Mod { m } else { div }
        }
        BinOp::Pow => return float_pow(a, b),
        _ => return Err(NumErr::Unsupported),
    }))
}

/// CPython's `float_divmod`.
fn float_divmod(vx: f64, wx: f64) -> (f64, f64) {
    let mut m = vx % wx;
    let mut div = (vx - m) / wx;
    if m != 0.0 {
        if (wx < 0.0) != (m < 0.0) {
            m += wx;
            div -= 1.0;
        }
    } else {
        m = 0f64.copysign(wx);
    }
    let floordiv = if div != 0.0 {
        let mut f = div.floor();
        if div - f > 0.5 {
            f += 1.0;
        }
        f
    } else {
        0f64.copysign(vx / wx)
    };
    (floordiv, m)
}

fn float_pow(a: f64, b: f64) -> Result<Value<'static>, NumErr> {
    if b == 0.0 {
        return Ok(Value::Float(1.0));
    }
    if a == 0.0 && b < 0.0 {
        return Err(NumErr::Other(raise(
            "ZeroDivisionError",
            "0.0 cannot be raised to a negative power",
        )));
    }
    if a < 0.0 && b.is_finite() && b != b.floor() {
        return complex_op((a, 0.0), BinOp::Pow, (b, 0.0));
    }
    let r = a.powf(b);
    if r.is_infinite() && a.is_finite() && b.is_finite() {
        return Err(NumErr::Other(raise(
            "OverflowError",
            "(34, 'Numerical result out of range')",
        )));
    }
    Ok(Value::Float(r))
}

fn complex_op(x: (f64, f64), op: BinOp, y: (f64, f64)) -> Result<Value<'static>, NumErr> {
    let (a, b) = x;
    let (c, d) = y;
    let (re, im) = match op {
        BinOp::Add => (a + c, b + d),
        BinOp::Sub => (a - c, b - d),
        BinOp::Mult => (a * c - b * d, a * d + b * c),
        BinOp::Div => {
            if c == 0.0 && d == 0.0 {
                return Err(NumErr::Other(raise(
                    "ZeroDivisionError",
                    "complex division by zero",
                )));
            }
            // CPython's `_Py_c_quot` (Smith's algorithm).
            if c.abs() >= d.abs() {
                let ratio = d / c;
                let denom = c + d * ratio;
                ((a + b * ratio) / denom, (b - a * ratio) / denom)
            } else {
                let ratio = c / d;
                let denom = c * ratio + d;
                ((a * ratio + b) / denom, (b * ratio - a) / denom)
            }
        }
        BinOp::Pow => {
            if d == 0.0 && c == c.floor() && c.abs() <= 100.0 {
                complex_powi((a, b), c as i64)?
            } else if c == 0.0 && d == 0.0 {
                (1.0, 0.0)
            } else if a == 0.0 && b == 0.0 {
                if d != 0.0 || c < 0.0 {
                    return Err(NumErr::Other(raise(
                        "ZeroDivisionError",
                        "0.0 to a negative or complex power",
                    )));
                }
                (0.0, 0.0)
            } else {
                let vabs = a.hypot(b);
                let mut len = vabs.powf(c);
                let at = b.atan2(a);
                let mut phase = at * c;
                if d != 0.0 {
                    len /= (at * d).exp();
                    phase += d * vabs.ln();
                }
                (len * phase.cos(), len * phase.sin())
            }
        }
        _ => return Err(NumErr::Unsupported),
    };
    if op == BinOp::Pow
        && (re.is_infinite() || im.is_infinite())
        && [a, b, c, d].iter().all(|v| v.is_finite())
    {
        return Err(NumErr::Other(raise(
            "OverflowError",
            "complex exponentiation",
        )));
    }
    Ok(Value::Complex(re, im))
}

fn complex_mul(x: (f64, f64), y: (f64, f64)) -> (f64, f64) {
    (x.0 * y.0 - x.1 * y.1, x.0 * y.1 + x.1 * y.0)
}

/// CPython's `c_powi` (binary exponentiation for small integral exponents).
fn complex_powi(x: (f64, f64), n: i64) -> Result<(f64, f64), NumErr> {
    let mut r = (1.0, 0.0);
    let mut p = x;
    let mut mask: i64 = 1;
    let m = n.abs();
    while mask > 0 && m >= mask {
        if m & mask != 0 {
            r = complex_mul(r, p);
        }
        mask <<= 1;
        p = complex_mul(p, p);
    }
    if n > 0 {
        return Ok(r);
    }
    match complex_op((1.0, 0.0), BinOp::Div, r)? {
        Value::Complex(re, im) => Ok((re, im)),
        _ => Ok((f64::NAN, f64::NAN)),
    }
}

fn ordering(a: &Value, b: &Value) -> Result<Option<std::cmp::Ordering>, BfclError> {
    if let (Some(x), Some(y)) = (as_num(a), as_num(b)) {
        let as_f = |n: &Num<'_>| -> Option<f64> {
            match n {
                Num::Int(i) => i.to_f64(),
                Num::Float(f) => Some(*f),
                Num::Complex(..) => None,
            }
        };
        return Ok(match (&x, &y) {
            (Num::Int(p), Num::Int(q)) => Some(p.cmp(q)),
            (Num::Complex(..), _) | (_, Num::Complex(..)) => None,
            _ => as_f(&x).zip(as_f(&y)).and_then(|(p, q)| p.partial_cmp(&q)),
        });
    }
    Ok(match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        (Value::List(x), Value::List(y)) | (Value::Tuple(x), Value::Tuple(y)) => {
            for (p, q) in x.iter().zip(y) {
                if !py_eq(p, q) {
                    return ordering(p, q);
                }
            }
            Some(x.len().cmp(&y.len()))
        }
        _ => None,
    })
}

fn compare(a: &Value, op: CmpOp, b: &Value) -> Result<bool, BfclError> {
    use std::cmp::Ordering::{Greater, Less};
    match op {
        CmpOp::Eq => Ok(py_eq(a, b)),
        CmpOp::NotEq => Ok(!py_eq(a, b)),
        CmpOp::In => Ok(py_contains(b, a)?),
        CmpOp::NotIn => Ok(!py_contains(b, a)?),
        CmpOp::Is | CmpOp::IsNot => {
            let singleton = |v: &Value| matches!(v, Value::None | Value::Bool(_) | Value::Ellipsis);
            if !(singleton(a) || singleton(b)) {
                return Err(BfclError::not_reproduced("identity comparison of objects"));
            }
            let same = a.py_type() == b.py_type() && py_eq(a, b);
            Ok(same == (op == CmpOp::Is))
        }
        _ => {
            if let (Value::Set(x), Value::Set(y)) = (a, b) {
                let subset = |p: &Vec<Value>, q: &Vec<Value>| {
                    p.iter().all(|e| q.iter().any(|f| py_eq(e, f)))
                };
                return Ok(match op {
                    CmpOp::Lt => subset(x, y) && x.len() < y.len(),
                    CmpOp::LtE => subset(x, y),
                    CmpOp::Gt => subset(y, x) && x.len() > y.len(),
                    _ => subset(y, x),
                });
            }
            let Some(ord) = ordering(a, b)? else {
                let nan_involved = matches!((as_num(a), as_num(b)), (Some(_), Some(_)))
                    && !matches!(a, Value::Complex(..))
                    && !matches!(b, Value::Complex(..));
                if nan_involved {
                    return Ok(false);
                }
                return Err(raise(
                    "TypeError",
                    format!(
                        "'{}' not supported between instances of '{}' and '{}'",
                        op.symbol(),
                        a.py_type().name(),
                        b.py_type().name()
                    ),
                ));
            };
            Ok(match op {
                CmpOp::Lt => ord == Less,
                CmpOp::LtE => ord != Greater,
                CmpOp::Gt => ord == Greater,
                _ => ord != Less,
            })
        }
    }
}

fn slice_index(v: &Value) -> Result<Option<i64>, BfclError> {
    match v {
        Value::None => Ok(None),
        Value::Bool(b) => Ok(Some(i64::from(*b))),
        Value::Int(i) => Ok(Some(i.to_i64().unwrap_or(if i.is_negative() {
            i64::MIN / 2
        } else {
            i64::MAX / 2
        }))),
        other => Err(raise(
            "TypeError",
            format!(
                "slice indices must be integers or None or have an __index__ method, not {}",
                other.py_type().name()
            ),
        )),
    }
}

fn slice_value<'a>(
    container: &Value<'a>,
    lower: &Value<'_>,
    upper: &Value<'_>,
    step: &Value<'_>,
) -> Result<Value<'a>, BfclError> {
    let step = slice_index(step)?.unwrap_or(1);
    if step == 0 {
        return Err(raise("ValueError", "slice step cannot be zero"));
    }
    let len = match container {
        Value::List(_) | Value::Tuple(_) | Value::Str(_) | Value::Bytes(_) => {
            py_len(container)? as i64
        }
        Value::Dict(d) => {
            let _ = dict_get(d, &Value::None);
            return Err(raise("TypeError", "unhashable type: 'slice'"));
        }
        other => {
            return Err(raise(
                "TypeError",
                format!("'{}' object is not subscriptable", other.py_type().name()),
            ));
        }
    };
    // CPython's PySlice_AdjustIndices.
    let adjust = |i: Option<i64>, default: i64| -> i64 {
        match i {
            None => default,
            Some(mut i) => {
                if i < 0 {
                    i += len;
                    if i < 0 {
                        i = if step < 0 { -1 } else { 0 };
                    }
                } else if i >= len {
                    i = if step < 0 { len - 1 } else { len };
                }
                i
            }
        }
    };
    let start = adjust(slice_index(lower)?, if step < 0 { len - 1 } else { 0 });
    let stop = adjust(slice_index(upper)?, if step < 0 { -1 } else { len });
    let mut indices = Vec::new();
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        indices.push(i as usize);
        i += step;
    }
    Ok(match container {
        Value::List(items) => Value::List(indices.iter().map(|&i| items[i].clone()).collect()),
        Value::Tuple(items) => Value::Tuple(indices.iter().map(|&i| items[i].clone()).collect()),
        Value::Str(s) => {
            let chars: Vec<char> = s.chars().collect();
            Value::Str(indices.iter().map(|&i| chars[i]).collect())
        }
        Value::Bytes(b) => Value::Bytes(indices.iter().map(|&i| b[i]).collect()),
        _ => Value::None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_eval;

    fn ev(src: &str) -> Result<Value<'static>, BfclError> {
        eval(&parse_eval(src).unwrap())
    }

    #[test]
    fn arithmetic_like_python() {
        assert_eq!(ev("4*5").unwrap().repr(), "20");
        assert_eq!(ev("10**6").unwrap().repr(), "1000000");
        assert_eq!(ev("'a'+'b'").unwrap().repr(), "'ab'");
        assert_eq!(ev("1/2").unwrap().repr(), "0.5");
        assert_eq!(ev("7//2").unwrap().repr(), "3");
        assert_eq!(ev("-7//2").unwrap().repr(), "-4");
        assert_eq!(ev("-7%3").unwrap().repr(), "2");
        assert_eq!(ev("7.5%-2").unwrap().repr(), "-0.5");
        assert_eq!(ev("2**-1").unwrap().repr(), "0.5");
        assert_eq!(ev("True+True").unwrap().repr(), "2");
        assert_eq!(ev("True&False").unwrap().repr(), "False");
        assert_eq!(ev("[1]*2+[3]").unwrap().repr(), "[1, 1, 3]");
        assert_eq!(ev("'ab'*-1").unwrap().repr(), "''");
        assert_eq!(ev("(1,)+(2,)").unwrap().repr(), "(1, 2)");
        assert_eq!(ev("1+2j").unwrap().repr(), "(1+2j)");
        assert_eq!(ev("-5+3").unwrap().repr(), "-2");
        assert_eq!(ev("~5+0").unwrap().repr(), "-6");
        assert_eq!(ev("[1,2,3][1:]+[0]").unwrap().repr(), "[2, 3, 0]");
        assert_eq!(ev("(1 if 2 > 1 else 0)*3").unwrap().repr(), "3");
        assert_eq!(ev("0.1+0.2").unwrap().repr(), "0.30000000000000004");
        assert_eq!(
            ev("2**100").unwrap().repr(),
            "1267650600228229401496703205376"
        );
        assert_eq!(ev("1e308*10").unwrap().repr(), "inf");
    }

    #[test]
    fn errors_like_python() {
        for src in [
            "1/0", "1//0", "x*2", "'a'+1", "[1]+(2,)", "0**-1", "1.5//0", "{[1]: 2}",
        ] {
            assert!(ev(src).is_err(), "{src}");
        }
    }
}
