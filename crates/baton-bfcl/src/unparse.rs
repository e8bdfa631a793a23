//! `ast.unparse` for expressions, as CPython 3.11's `_Unparser` writes them.
//!
//! LiC turns a keyword-less nested call (`x=foo(1)`) and a subscript into their unparsed
//! source text, so the text must match byte for byte: precedence-driven parentheses, the
//! `1 .real` space, `repr` of constants, `{*()}` for an empty set, and so on.
//!
//! `_Unparser` is recursive Python: a tree nested deeper than about [`MAX_UNPARSE_DEPTH`]
//! levels raises `RecursionError` upstream, and so it does here, which also keeps this
//! walk's use of the host stack small. An `int` constant of more than 4300 digits raises
//! `ValueError`, as `repr` does in CPython 3.11.

use std::cell::Cell;

use crate::ast::{
    Arguments, BoolOp, Comprehension, Constant, Expr, FPart, FormattedValue, UnaryOp,
};
use crate::error::BfclError;
use baton_py::{bytes_repr, complex_repr, float_repr, is_printable, str_repr, unicode_escape};

use crate::value::{Raise, int_str};

/// Deepest expression `ast.unparse` writes before Python's recursion limit (1000 frames,
/// about three per level) stops it. Measured with CPython 3.11.7: a chain `1+1+…+1` of 330
/// operators unparses and one of 350 raises `RecursionError`; LiC's call stack moves the
/// threshold by a few levels.
pub const MAX_UNPARSE_DEPTH: usize = 330;

// CPython's `_Precedence` values.
const NAMED_EXPR: u8 = 1;
const TUPLE: u8 = 2;
const YIELD: u8 = 3;
const TEST: u8 = 4;
const OR: u8 = 5;
const AND: u8 = 6;
const NOT: u8 = 7;
const CMP: u8 = 8;
const EXPR: u8 = 9;
const BXOR: u8 = 10;
const BAND: u8 = 11;
const SHIFT: u8 = 12;
const ARITH: u8 = 13;
const TERM: u8 = 14;
const FACTOR: u8 = 15;
const POWER: u8 = 16;
const AWAIT: u8 = 17;
const ATOM: u8 = 18;

fn next(p: u8) -> u8 {
    (p + 1).min(ATOM)
}

/// `ast.unparse(expr)`.
pub fn unparse(expr: &Expr) -> Result<String, BfclError> {
    let mut out = String::new();
    Unparser {
        avoid_backslashes: false,
        depth: Cell::new(0),
    }
    .write(expr, TEST, &mut out)?;
    Ok(out)
}

/// `repr` of a float constant as `ast.unparse` writes it (infinities become `1e309`).
fn float_constant(text: String) -> String {
    text.replace("inf", "1e309").replace("nan", "(1e309-1e309)")
}

fn write_constant(c: &Constant, out: &mut String) -> Result<(), BfclError> {
    match c {
        Constant::None => out.push_str("None"),
        Constant::Bool(true) => out.push_str("True"),
        Constant::Bool(false) => out.push_str("False"),
        Constant::Ellipsis => out.push_str("..."),
        Constant::Int(i) => match int_str(i) {
            Some(text) => out.push_str(&text),
            None => {
                return Err(BfclError::from(Raise::new(
                    "ValueError",
                    "Exceeds the limit (4300 digits) for integer string conversion",
                )));
            }
        },
        Constant::Float(f) => out.push_str(&float_constant(float_repr(*f))),
        Constant::Imag(im) => out.push_str(&float_constant(complex_repr(0.0, *im))),
        Constant::Str(s) => out.push_str(&str_repr(s)),
        Constant::Bytes(b) => out.push_str(&bytes_repr(b)),
    }
    Ok(())
}

fn paren_if(
    cond: bool,
    out: &mut String,
    body: impl FnOnce(&mut String) -> Result<(), BfclError>,
) -> Result<(), BfclError> {
    if cond {
        out.push('(');
    }
    body(out)?;
    if cond {
        out.push(')');
    }
    Ok(())
}

/// CPython's `_Unparser` state that matters for expressions.
struct Unparser {
    /// Set inside f-string replacement fields: string constants avoid backslashes.
    avoid_backslashes: bool,
    /// Open calls of `write`, shared with the unparsers of nested f-string fields.
    depth: Cell<usize>,
}

const MULTI_QUOTES: [&str; 2] = ["\"\"\"", "'''"];
const ALL_QUOTES: [&str; 4] = ["'", "\"", "\"\"\"", "'''"];

/// `_Unparser._str_literal_helper`: the escaped body and the usable quote types.
fn str_literal_helper(
    string: &str,
    quote_types: &[&'static str],
    escape_special_whitespace: bool,
) -> (String, Vec<&'static str>) {
    let mut escaped = String::new();
    for c in string.chars() {
        if !escape_special_whitespace && (c == '\n' || c == '\t') {
            escaped.push(c);
        } else if c == '\\' || !is_printable(c) {
            escaped.push_str(&unicode_escape(c.encode_utf8(&mut [0; 4])));
        } else {
            escaped.push(c);
        }
    }
    let mut possible: Vec<&'static str> = quote_types.to_vec();
    if escaped.contains('\n') {
        possible.retain(|q| MULTI_QUOTES.contains(q));
    }
    possible.retain(|q| !escaped.contains(q));
    if possible.is_empty() {
        let repr = str_repr(string);
        let first = repr.chars().next().unwrap_or('\'');
        let quote = quote_types
            .iter()
            .find(|q| q.contains(first))
            .copied()
            .unwrap_or(if first == '"' { "\"" } else { "'" });
        return (repr[1..repr.len() - 1].to_string(), vec![quote]);
    }
    if let Some(last) = escaped.chars().last() {
        possible.sort_by_key(|q| q.starts_with(last));
        if possible[0].starts_with(last) {
            escaped.pop();
            escaped.push('\\');
            escaped.push(last);
        }
    }
    (escaped, possible)
}

impl Unparser {
    /// `visit_JoinedStr`.
    fn joined_str(&self, parts: &[FPart], out: &mut String) -> Result<(), BfclError> {
        out.push('f');
        if self.avoid_backslashes {
            let mut buffer = String::new();
            self.fstring_inner(parts, &mut buffer)?;
            let (body, quotes) = str_literal_helper(&buffer, &ALL_QUOTES, false);
            out.push_str(quotes[0]);
            out.push_str(&body);
            out.push_str(quotes[0]);
            return Ok(());
        }
        let mut pieces: Vec<(String, bool)> = Vec::new();
        for part in parts {
            let mut buffer = String::new();
            self.fstring_inner(std::slice::from_ref(part), &mut buffer)?;
            pieces.push((buffer, matches!(part, FPart::Literal(_))));
        }
        let mut quote_types: Vec<&'static str> = ALL_QUOTES.to_vec();
        let mut written: Vec<String> = Vec::new();
        let mut fallback = false;
        for (value, is_constant) in &pieces {
            let (body, new_quotes) = str_literal_helper(value, &quote_types, *is_constant);
            written.push(body);
            if new_quotes.iter().all(|q| !quote_types.contains(q)) {
                fallback = true;
                break;
            }
            quote_types = new_quotes;
        }
        if fallback {
            quote_types = vec!["'''"];
            written = pieces
                .iter()
                .map(|(value, _)| {
                    let repr = str_repr(&format!("\"{value}"));
                    repr[2..repr.len() - 1].to_string()
                })
                .collect();
        }
        out.push_str(quote_types[0]);
        out.push_str(&written.concat());
        out.push_str(quote_types[0]);
        Ok(())
    }

    /// `_write_fstring_inner` over a list of pieces.
    fn fstring_inner(&self, parts: &[FPart], out: &mut String) -> Result<(), BfclError> {
        for part in parts {
            match part {
                FPart::Literal(text) => out.push_str(&text.replace('{', "{{").replace('}', "}}")),
                FPart::Field(field) => self.formatted_value(field, out)?,
            }
        }
        Ok(())
    }

    /// `visit_FormattedValue`.
    fn formatted_value(&self, field: &FormattedValue, out: &mut String) -> Result<(), BfclError> {
        out.push('{');
        let mut expr = String::new();
        Unparser {
            avoid_backslashes: true,
            depth: Cell::new(self.depth.get()),
        }
        .write(&field.value, next(TEST), &mut expr)?;
        if expr.contains('\\') {
            return Err(Raise::new(
                "ValueError",
                "Unable to avoid backslash in f-string expression part",
            )
            .into());
        }
        if expr.starts_with('{') {
            out.push(' ');
        }
        out.push_str(&expr);
        if let Some(c) = field.conversion {
            out.push('!');
            out.push(c);
        }
        if let Some(spec) = &field.format_spec {
            out.push(':');
            self.fstring_inner(spec, out)?;
        }
        out.push('}');
        Ok(())
    }

    fn join(&self, items: &[Expr], out: &mut String) -> Result<(), BfclError> {
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                out.push_str(", ");
            }
            self.write(item, TEST, out)?;
        }
        Ok(())
    }

    /// `items_view`: a single item gets a trailing comma.
    fn items_view(&self, items: &[Expr], out: &mut String) -> Result<(), BfclError> {
        if items.len() == 1 {
            self.write(&items[0], TEST, out)?;
            out.push(',');
            Ok(())
        } else {
            self.join(items, out)
        }
    }

    fn comprehensions(&self, gens: &[Comprehension], out: &mut String) -> Result<(), BfclError> {
        for g in gens {
            out.push_str(if g.is_async { " async for " } else { " for " });
            self.write(&g.target, TUPLE, out)?;
            out.push_str(" in ");
            self.write(&g.iter, next(TEST), out)?;
            for cond in &g.ifs {
                out.push_str(" if ");
                self.write(cond, next(TEST), out)?;
            }
        }
        Ok(())
    }

    fn arguments(&self, a: &Arguments, out: &mut String) -> Result<(), BfclError> {
        let mut first = true;
        let mut sep = |out: &mut String| {
            if first {
                first = false;
            } else {
                out.push_str(", ");
            }
        };
        let all: Vec<&String> = a.posonly.iter().chain(a.args.iter()).collect();
        let plain = all.len() - a.defaults.len();
        for (index, name) in all.iter().enumerate() {
            sep(out);
            out.push_str(name);
            if index >= plain {
                out.push('=');
                self.write(&a.defaults[index - plain], TEST, out)?;
            }
            if index + 1 == a.posonly.len() {
                out.push_str(", /");
            }
        }
        if a.vararg.is_some() || !a.kwonly.is_empty() {
            sep(out);
            out.push('*');
            if let Some(v) = &a.vararg {
                out.push_str(v);
            }
        }
        for (name, default) in &a.kwonly {
            out.push_str(", ");
            out.push_str(name);
            if let Some(d) = default {
                out.push('=');
                self.write(d, TEST, out)?;
            }
        }
        if let Some(k) = &a.kwarg {
            sep(out);
            out.push_str("**");
            out.push_str(k);
        }
        Ok(())
    }

    fn write(&self, e: &Expr, prec: u8, out: &mut String) -> Result<(), BfclError> {
        let depth = self.depth.get();
        if depth >= MAX_UNPARSE_DEPTH {
            return Err(BfclError::from(Raise::new(
                "RecursionError",
                "maximum recursion depth exceeded while calling a Python object",
            )));
        }
        self.depth.set(depth + 1);
        let result = self.write_node(e, prec, out);
        self.depth.set(depth);
        result
    }

    fn write_node(&self, e: &Expr, prec: u8, out: &mut String) -> Result<(), BfclError> {
        match e {
            Expr::Constant { value, kind_u } => {
                if *kind_u {
                    out.push('u');
                }
                match value {
                    Constant::Str(text) if self.avoid_backslashes => {
                        let (body, quotes) = str_literal_helper(text, &ALL_QUOTES, false);
                        out.push_str(quotes[0]);
                        out.push_str(&body);
                        out.push_str(quotes[0]);
                    }
                    other => write_constant(other, out)?,
                }
            }
            Expr::JoinedStr(parts) => self.joined_str(parts, out)?,
            Expr::Name(n) => out.push_str(n),
            Expr::NamedExpr(target, value) => paren_if(prec > NAMED_EXPR, out, |out| {
                self.write(target, ATOM, out)?;
                out.push_str(" := ");
                self.write(value, ATOM, out)
            })?,
            Expr::Await(value) => paren_if(prec > AWAIT, out, |out| {
                out.push_str("await ");
                self.write(value, ATOM, out)
            })?,
            Expr::Yield(value) => paren_if(prec > YIELD, out, |out| {
                out.push_str("yield");
                if let Some(v) = value {
                    out.push(' ');
                    self.write(v, ATOM, out)?;
                }
                Ok(())
            })?,
            Expr::YieldFrom(value) => paren_if(prec > YIELD, out, |out| {
                out.push_str("yield from ");
                self.write(value, ATOM, out)
            })?,
            Expr::List(elts) => {
                out.push('[');
                self.join(elts, out)?;
                out.push(']');
            }
            Expr::ListComp(elt, gens) => {
                out.push('[');
                self.write(elt, TEST, out)?;
                self.comprehensions(gens, out)?;
                out.push(']');
            }
            Expr::GeneratorExp(elt, gens) => {
                out.push('(');
                self.write(elt, TEST, out)?;
                self.comprehensions(gens, out)?;
                out.push(')');
            }
            Expr::SetComp(elt, gens) => {
                out.push('{');
                self.write(elt, TEST, out)?;
                self.comprehensions(gens, out)?;
                out.push('}');
            }
            Expr::DictComp(key, value, gens) => {
                out.push('{');
                self.write(key, TEST, out)?;
                out.push_str(": ");
                self.write(value, TEST, out)?;
                self.comprehensions(gens, out)?;
                out.push('}');
            }
            Expr::IfExp { test, body, orelse } => paren_if(prec > TEST, out, |out| {
                self.write(body, next(TEST), out)?;
                out.push_str(" if ");
                self.write(test, next(TEST), out)?;
                out.push_str(" else ");
                self.write(orelse, TEST, out)
            })?,
            Expr::Set(elts) => {
                if elts.is_empty() {
                    out.push_str("{*()}");
                } else {
                    out.push('{');
                    self.join(elts, out)?;
                    out.push('}');
                }
            }
            Expr::Dict(items) => {
                out.push('{');
                for (n, (key, value)) in items.iter().enumerate() {
                    if n > 0 {
                        out.push_str(", ");
                    }
                    match key {
                        None => {
                            out.push_str("**");
                            self.write(value, EXPR, out)?;
                        }
                        Some(k) => {
                            self.write(k, TEST, out)?;
                            out.push_str(": ");
                            self.write(value, TEST, out)?;
                        }
                    }
                }
                out.push('}');
            }
            Expr::Tuple(elts) => paren_if(elts.is_empty() || prec > TUPLE, out, |out| {
                self.items_view(elts, out)
            })?,
            Expr::UnaryOp(op, operand) => {
                let (symbol, op_prec) = match op {
                    UnaryOp::Not => ("not", NOT),
                    UnaryOp::Invert => ("~", FACTOR),
                    UnaryOp::UAdd => ("+", FACTOR),
                    UnaryOp::USub => ("-", FACTOR),
                };
                paren_if(prec > op_prec, out, |out| {
                    out.push_str(symbol);
                    if op_prec != FACTOR {
                        out.push(' ');
                    }
                    self.write(operand, op_prec, out)
                })?;
            }
            Expr::BinOp(left, op, right) => {
                let symbol = op.symbol();
                let op_prec = match symbol {
                    "+" | "-" => ARITH,
                    "*" | "@" | "/" | "%" | "//" => TERM,
                    "<<" | ">>" => SHIFT,
                    "|" => EXPR,
                    "^" => BXOR,
                    "&" => BAND,
                    _ => POWER,
                };
                let (lp, rp) = if symbol == "**" {
                    (next(op_prec), op_prec)
                } else {
                    (op_prec, next(op_prec))
                };
                paren_if(prec > op_prec, out, |out| {
                    self.write(left, lp, out)?;
                    out.push(' ');
                    out.push_str(symbol);
                    out.push(' ');
                    self.write(right, rp, out)
                })?;
            }
            Expr::Compare(left, ops) => paren_if(prec > CMP, out, |out| {
                self.write(left, next(CMP), out)?;
                for (op, comparator) in ops {
                    out.push(' ');
                    out.push_str(op.symbol());
                    out.push(' ');
                    self.write(comparator, next(CMP), out)?;
                }
                Ok(())
            })?,
            Expr::BoolOp(op, values) => {
                let (word, mut op_prec) = match op {
                    BoolOp::And => ("and", AND),
                    BoolOp::Or => ("or", OR),
                };
                paren_if(prec > op_prec, out, |out| {
                    for (n, value) in values.iter().enumerate() {
                        if n > 0 {
                            out.push(' ');
                            out.push_str(word);
                            out.push(' ');
                        }
                        op_prec = next(op_prec);
                        self.write(value, op_prec, out)?;
                    }
                    Ok(())
                })?;
            }
            Expr::Attribute(value, attr) => {
                self.write(value, ATOM, out)?;
                if matches!(
                    **value,
                    Expr::Constant {
                        value: Constant::Int(_) | Constant::Bool(_),
                        ..
                    }
                ) {
                    out.push(' ');
                }
                out.push('.');
                out.push_str(attr);
            }
            Expr::Call {
                func,
                args,
                keywords,
            } => {
                self.write(func, ATOM, out)?;
                out.push('(');
                let mut comma = false;
                for a in args {
                    if comma {
                        out.push_str(", ");
                    }
                    comma = true;
                    self.write(a, TEST, out)?;
                }
                for k in keywords {
                    if comma {
                        out.push_str(", ");
                    }
                    comma = true;
                    match &k.arg {
                        None => out.push_str("**"),
                        Some(name) => {
                            out.push_str(name);
                            out.push('=');
                        }
                    }
                    self.write(&k.value, TEST, out)?;
                }
                out.push(')');
            }
            Expr::Subscript(value, slice) => {
                self.write(value, ATOM, out)?;
                out.push('[');
                match &**slice {
                    Expr::Tuple(elts) if !elts.is_empty() => self.items_view(elts, out)?,
                    other => self.write(other, TEST, out)?,
                }
                out.push(']');
            }
            Expr::Starred(value) => {
                out.push('*');
                self.write(value, EXPR, out)?;
            }
            Expr::Slice(lower, upper, step) => {
                if let Some(l) = lower {
                    self.write(l, TEST, out)?;
                }
                out.push(':');
                if let Some(u) = upper {
                    self.write(u, TEST, out)?;
                }
                if let Some(s) = step {
                    out.push(':');
                    self.write(s, TEST, out)?;
                }
            }
            Expr::Lambda(args, body) => paren_if(prec > TEST, out, |out| {
                out.push_str("lambda");
                let mut buffer = String::new();
                self.arguments(args, &mut buffer)?;
                if !buffer.is_empty() {
                    out.push(' ');
                    out.push_str(&buffer);
                }
                out.push_str(": ");
                self.write(body, TEST, out)
            })?,
        }
        Ok(())
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::parse_eval;

    fn round(src: &str) -> String {
        unparse(&parse_eval(src).unwrap()).unwrap()
    }

    #[test]
    fn matches_cpython_unparse() {
        let cases = [
            ("foo(1)", "foo(1)"),
            ("math.sqrt( 16 )", "math.sqrt(16)"),
            ("f(\"a\", 'b', x)", "f('a', 'b', x)"),
            (
                "f(1e5, 0x10, 1_0, 2j, 1e400)",
                "f(100000.0, 16, 10, 2j, 1e309)",
            ),
            (
                "f((1, 2), [3], {4: 5}, {6}, set())",
                "f((1, 2), [3], {4: 5}, {6}, set())",
            ),
            ("f(a=1, *b)", "f(*b, a=1)"),
            ("f(x := 1)", "f((x := 1))"),
            ("(-1) ** 2", "(-1) ** 2"),
            ("-1 ** 2", "-1 ** 2"),
            ("2 ** 3 ** 4", "2 ** 3 ** 4"),
            ("(2 ** 3) ** 4", "(2 ** 3) ** 4"),
            ("a - (b - c)", "a - (b - c)"),
            ("(a or b) and c", "(a or b) and c"),
            ("a or b or c", "a or b or c"),
            ("not (a == b)", "not a == b"),
            ("1 .real", "1 .real"),
            ("a[1:2, 3]", "a[1:2, 3]"),
            ("a[(1,)]", "a[1,]"),
            ("a[()]", "a[()]"),
            (
                "lambda x, y=1, *a, k, **kw: x",
                "lambda x, y=1, *a, k, **kw: x",
            ),
            ("lambda a, /, b: 0", "lambda a, /, b: 0"),
            ("lambda: 0", "lambda: 0"),
            ("[x for x in y if x]", "[x for x in y if x]"),
            ("{**a, 'b': 1}", "{**a, 'b': 1}"),
            ("u'x' 'y'", "u'xy'"),
            ("f(\"it's\")", "f(\"it's\")"),
            ("(a if b else c)(d)", "(a if b else c)(d)"),
            ("f(*a or b)", "f(*(a or b))"),
            ("f(f'{x!r:>{w}}')", "f(f'{x!r:>{w}}')"),
            ("f(f'a{x=}b')", "f(f'ax={x!r}b')"),
            ("f(f'{x:}')", "f(f'{x:}')"),
            ("f(f\"{'q'}\")", "f(f\"{'q'}\")"),
            ("f(f'{ {1: 2} }')", "f(f'{ {1: 2}}')"),
            ("f(f'line\\n{x}')", "f(f'line\\n{x}')"),
        ];
        for (src, want) in cases {
            assert_eq!(round(src), want, "{src}");
        }
    }
}
