//! LiC's `ast_parse`: the pre-strip, `ast.parse(mode="eval")`, and `resolve_ast_by_type`.

use std::borrow::Cow;

use crate::ast::{Constant, Expr};
use crate::error::BfclError;
use crate::eval::{constant_value, eval};
use crate::parser::parse_eval;
use crate::unparse::unparse;
use crate::value::{LookupBudget, Raise, Value, budget_error, dict_insert};

/// One decoded call: LiC's `{func_name: {kwarg: value}}`.
///
/// Positional arguments are dropped, as upstream does; `**mapping` becomes the key `None`.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The dotted callee name (`a.b.c`).
    pub name: String,
    /// Keyword arguments in first-seen order (a repeated keyword keeps its first place and
    /// its last value, like a Python dict).
    pub args: Vec<(Option<String>, Value<'static>)>,
}

impl Call {
    /// The Python object LiC builds: `{name: {kwarg: value}}`.
    pub fn to_value(&self) -> Value<'_> {
        Value::Dict(vec![(Value::str(self.name.as_str()), self.params_value())])
    }

    /// [`Call::to_value`] without copying the arguments.
    pub fn into_value(self) -> Value<'static> {
        let params = self
            .args
            .into_iter()
            .map(|(k, v)| (k.map_or(Value::None, Value::str), v))
            .collect();
        Value::Dict(vec![(Value::str(self.name), Value::Dict(params))])
    }

    /// The parameter dict `{kwarg: value}`.
    pub fn params_value(&self) -> Value<'_> {
        Value::Dict(
            self.args
                .iter()
                .map(|(k, v)| {
                    let key = k.as_ref().map_or(Value::None, |s| Value::str(s.as_str()));
                    (key, v.clone())
                })
                .collect(),
        )
    }
}

/// The pre-strip of LiC's `ast_parse` (`strip`, fence prefixes and suffixes, `strip`,
/// newlines to spaces), without the final `strip("[]'")`.
pub fn pre_strip(input: &str) -> String {
    pre_stripped(input).into_owned()
}

/// [`pre_strip`], borrowing the text when it holds no newline.
pub(crate) fn pre_stripped(input: &str) -> Cow<'_, str> {
    const PREFIXES: [&str; 5] = ["```tool_code", "```python", "```json", "```", "`"];
    const SUFFIXES: [&str; 2] = ["```", "`"];
    let mut s = baton_py::strip(input);
    let stripped_len = s.len();
    for prefix in PREFIXES {
        if let Some(rest) = s.strip_prefix(prefix) {
            s = rest;
        }
    }
    for suffix in SUFFIXES {
        if let Some(rest) = s.strip_suffix(suffix) {
            s = rest;
        }
    }
    // `strip` again only where a fence came off: a stripped text strips to itself.
    if s.len() != stripped_len {
        s = baton_py::strip(s);
    }
    if memchr::memchr(b'\n', s.as_bytes()).is_some() {
        Cow::Owned(s.replace('\n', " "))
    } else {
        Cow::Borrowed(s)
    }
}

/// A decoded call as the decoders build it and the checker reads it: LiC's
/// `{name: {kwarg: value}}` held as its name and its parameter dict, since the outer dict
/// always has that one key. The parameters are the items of LiC's parameter dict (a str
/// key, or `None` for `**mapping`). Building the outer dict was an allocation per call (and
/// its drop a level of recursion) for a dict that is looked into once; the checker reads a
/// call through [`crate::checker::ModelOutput`] exactly as it read that dict, and builds
/// the dict only where it must treat it as a Python object. The fast path's names and
/// strings borrow the answer's text; the full decoder's are owned.
#[derive(Debug)]
pub(crate) struct CallParts<'a> {
    pub(crate) name: Cow<'a, str>,
    /// Always a [`Value::Dict`].
    pub(crate) params: Value<'a>,
}

impl<'a> CallParts<'a> {
    /// A call of these keyword arguments.
    pub(crate) fn new(name: Cow<'a, str>, args: Vec<(Value<'a>, Value<'a>)>) -> Self {
        CallParts {
            name,
            params: Value::Dict(args),
        }
    }

    /// The public form: keys as `Option<String>`.
    pub(crate) fn into_call(self) -> Call {
        let args = match self.params {
            Value::Dict(args) => args,
            _ => Vec::new(),
        };
        Call {
            name: self.name.into_owned(),
            args: args
                .into_iter()
                .map(|(k, v)| match k {
                    Value::Str(s) => (Some(s.into_owned()), v.into_owned()),
                    _ => (None, v.into_owned()),
                })
                .collect(),
        }
    }

    /// `{name: {kwarg: value}}`, as [`Call::into_value`] builds it.
    pub(crate) fn into_value(self) -> Value<'a> {
        Value::Dict(vec![(Value::Str(self.name), self.params)])
    }
}

/// `ast_parse(input, "Python")`: decode a response into its calls, on the caller's stack.
pub(crate) fn parse_calls(input: &str) -> Result<Vec<Call>, BfclError> {
    let stripped = pre_stripped(input);
    Ok(parse_parts(&stripped)?
        .into_iter()
        .map(CallParts::into_call)
        .collect())
}

/// [`parse_calls`] of a text [`pre_stripped`] already, each call as the checker reads it,
/// borrowing the text where it can.
pub(crate) fn parse_parts(stripped: &str) -> Result<Vec<CallParts<'_>>, BfclError> {
    let budget = LookupBudget::start();
    let calls = parse_parts_unbudgeted(stripped);
    if budget.exhausted() {
        return Err(budget_error());
    }
    calls
}

fn parse_parts_unbudgeted(stripped: &str) -> Result<Vec<CallParts<'_>>, BfclError> {
    let cleaned = trim_brackets_and_quotes(stripped);
    if let Some(calls) = crate::fast::parse_calls(cleaned) {
        return Ok(calls);
    }
    parse_calls_fully(cleaned)
}

/// `stripped.strip("[]'")`, byte by byte: the three are ASCII, so a cut next to them is a
/// char boundary, and no char is decoded as a char-pattern `trim_matches` decodes each.
fn trim_brackets_and_quotes(stripped: &str) -> &str {
    let trimmed = |b: &u8| matches!(b, b'[' | b']' | b'\'');
    let bytes = stripped.as_bytes();
    let start = bytes
        .iter()
        .position(|b| !trimmed(b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !trimmed(b))
        .map_or(start, |i| i + 1);
    &stripped[start..end]
}

/// `ast.parse(cleaned, mode="eval")` and the resolution of its calls: every answer the
/// fast path ([`crate::fast`]) does not read.
pub(crate) fn parse_calls_fully(cleaned: &str) -> Result<Vec<CallParts<'static>>, BfclError> {
    let body = parse_eval(cleaned)?;
    match &body {
        Expr::Call { .. } => Ok(vec![resolve_call(&body)?]),
        Expr::Tuple(elts) | Expr::List(elts) | Expr::Set(elts) => elts
            .iter()
            .map(|e| match e {
                Expr::Call { .. } => resolve_call(e),
                _ => Err(BfclError::from(Raise::new(
                    "AssertionError",
                    "top-level element is not a call",
                ))),
            })
            .collect(),
        _ => Err(BfclError::from(Raise::new(
            "AttributeError",
            "top-level expression is neither a call nor a sequence of calls",
        ))),
    }
}

/// `resolve_ast_call`.
fn resolve_call(call: &Expr) -> Result<CallParts<'static>, BfclError> {
    let Expr::Call { func, keywords, .. } = call else {
        return Err(BfclError::not_reproduced("resolve_call on a non-call"));
    };
    // The parts borrowed from the tree and joined once: only the name is a new text.
    let mut parts: Vec<&str> = Vec::new();
    let mut part = &**func;
    while let Expr::Attribute(value, attr) = part {
        parts.push(attr);
        part = value;
    }
    if let Expr::Name(n) = part {
        parts.push(n);
    }
    parts.reverse();
    let mut args: Vec<(Value<'static>, Value<'static>)> = Vec::new();
    for k in keywords {
        let value = resolve(&k.value)?;
        let key = k
            .arg
            .as_ref()
            .map_or(Value::None, |s| Value::str(s.clone()));
        dict_insert(&mut args, key, value);
    }
    Ok(CallParts::new(Cow::Owned(parts.join(".")), args))
}

/// `resolve_ast_by_type`.
fn resolve(e: &Expr) -> Result<Value<'static>, BfclError> {
    match e {
        Expr::Constant { value, .. } => Ok(match value {
            Constant::Ellipsis => Value::str("..."),
            other => constant_value(other),
        }),
        // Upstream: `-value.operand.value`, whatever the operator.
        Expr::UnaryOp(_, operand) => match &**operand {
            Expr::Constant { value, .. } => negate_constant(value),
            _ => Err(BfclError::from(Raise::new(
                "AttributeError",
                "unary operand is not a constant",
            ))),
        },
        Expr::List(elts) => Ok(Value::List(
            elts.iter().map(resolve).collect::<Result<_, _>>()?,
        )),
        Expr::Tuple(elts) => Ok(Value::Tuple(
            elts.iter().map(resolve).collect::<Result<_, _>>()?,
        )),
        Expr::Dict(items) => {
            let mut out = Vec::new();
            for (key, value) in items {
                let Some(key) = key else {
                    return Err(BfclError::from(Raise::new(
                        "Exception",
                        "Unsupported AST type: <class 'NoneType'>",
                    )));
                };
                let k = resolve(key)?;
                let v = resolve(value)?;
                if !k.is_hashable() {
                    return Err(BfclError::from(Raise::new(
                        "TypeError",
                        format!("unhashable type: '{}'", k.py_type().name()),
                    )));
                }
                dict_insert(&mut out, k, v);
            }
            Ok(Value::Dict(out))
        }
        Expr::BinOp(..) => eval(e),
        Expr::Name(n) => Ok(Value::str(n.clone())),
        Expr::Call { keywords, .. } => {
            if keywords.is_empty() {
                Ok(Value::str(unparse(e)?))
            } else {
                Ok(resolve_call(e)?.into_value())
            }
        }
        Expr::Subscript(value, slice) => Ok(Value::str(format!(
            "{}[{}]",
            unparse(value)?,
            unparse(slice)?
        ))),
        other => Err(BfclError::from(Raise::new(
            "Exception",
            format!("Unsupported AST type: {}", node_name(other)),
        ))),
    }
}

fn negate_constant(c: &Constant) -> Result<Value<'static>, BfclError> {
    match constant_value(c) {
        Value::Bool(b) => Ok(Value::int(-i64::from(b))),
        Value::Int(i) => Ok(Value::Int(-i)),
        Value::Float(f) => Ok(Value::Float(-f)),
        Value::Complex(re, im) => Ok(Value::Complex(-re, -im)),
        other => Err(BfclError::from(Raise::new(
            "TypeError",
            format!("bad operand type for unary -: '{}'", other.py_type().name()),
        ))),
    }
}

fn node_name(e: &Expr) -> &'static str {
    match e {
        Expr::JoinedStr(_) => "JoinedStr",
        Expr::Attribute(..) => "Attribute",
        Expr::Slice(..) => "Slice",
        Expr::Starred(_) => "Starred",
        Expr::BoolOp(..) => "BoolOp",
        Expr::Compare(..) => "Compare",
        Expr::IfExp { .. } => "IfExp",
        Expr::Lambda(..) => "Lambda",
        Expr::NamedExpr(..) => "NamedExpr",
        Expr::Set(_) => "Set",
        Expr::ListComp(..) => "ListComp",
        Expr::SetComp(..) => "SetComp",
        Expr::GeneratorExp(..) => "GeneratorExp",
        Expr::DictComp(..) => "DictComp",
        Expr::Await(_) => "Await",
        Expr::Yield(_) => "Yield",
        Expr::YieldFrom(_) => "YieldFrom",
        _ => "expr",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(src: &str) -> Vec<(Option<String>, Value<'static>)> {
        let mut calls = parse_calls(src).unwrap();
        assert_eq!(calls.len(), 1, "{src}");
        calls.remove(0).args
    }

    fn arg(src: &str) -> Value<'static> {
        one(src).remove(0).1
    }

    #[test]
    fn pre_strip_is_lics() {
        assert_eq!(pre_strip("```python\n[f(a=1)]\n```"), "[f(a=1)]");
        assert_eq!(pre_strip("````\n[f(a=1)]\n````"), "[f(a=1)]");
        assert_eq!(pre_strip("```py\n[f(a=1)]\n```"), "py [f(a=1)]");
        assert_eq!(pre_strip("`f(a=1)`"), "f(a=1)");
        assert_eq!(pre_strip("  [\n  f(a=1)\n]  "), "[   f(a=1) ]");
    }

    #[test]
    fn resolves_values_like_lic() {
        assert_eq!(arg("f(a=-5)"), Value::int(-5));
        assert_eq!(arg("f(a=+5)").repr(), "-5");
        assert_eq!(arg("f(a=not True)").repr(), "-1");
        assert!(parse_calls("f(a=-(-5))").is_err());
        assert!(parse_calls("f(a=-'x')").is_err());
        assert_eq!(arg("f(a=4*5)").repr(), "20");
        assert_eq!(arg("f(a=1/2)").repr(), "0.5");
        assert_eq!(arg("f(a=meters)").repr(), "'meters'");
        assert_eq!(arg("f(a=foo(1, 'x'))").repr(), "\"foo(1, 'x')\"");
        assert_eq!(arg("f(a=g(b=1))").repr(), "{'g': {'b': 1}}");
        assert_eq!(arg("f(a=x[0])").repr(), "'x[0]'");
        assert_eq!(arg("f(a=x[1, 2])").repr(), "'x[(1, 2)]'");
        assert_eq!(arg("f(a=(1, 2))").repr(), "(1, 2)");
        assert_eq!(arg("f(a=...)").repr(), "'...'");
        assert_eq!(arg("f(a=0x14)").repr(), "20");
        assert_eq!(arg("f(a='a' 'b')").repr(), "'ab'");
        for bad in [
            "f(a=lambda: 1)",
            "f(a=math.pi)",
            "f(a=1 < 2)",
            "f(a=x and y)",
            "f(a={1, 2})",
            "f(a=f'{x}')",
            "f(a=1 if x else 2)",
            "f(a={**b})",
            "f(a={[1]: 2})",
            "x = f(a=1)",
            "[f(a=1), 2]",
        ] {
            assert!(parse_calls(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keyword_and_call_shapes() {
        let args = one("f(a=1, b=2, a=3)");
        assert_eq!(
            args,
            vec![
                (Some("a".into()), Value::int(3)),
                (Some("b".into()), Value::int(2))
            ]
        );
        assert_eq!(one("f(1, 2)"), vec![]);
        assert_eq!(one("f(**{'a': 1})")[0].0, None);
        let calls = parse_calls("{f(a=1), g(b=2)}").unwrap();
        assert_eq!(calls[1].name, "g");
        assert_eq!(parse_calls("a.b.c(x=1)").unwrap()[0].name, "a.b.c");
        assert_eq!(parse_calls("f()(x=1)").unwrap()[0].name, "");
        assert_eq!(parse_calls("()").unwrap(), vec![]);
    }
}
