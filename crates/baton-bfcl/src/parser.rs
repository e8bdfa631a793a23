//! A recursive-descent parser for CPython 3.11's expression grammar (`mode="eval"`).
//!
//! Acceptance follows the PEG grammar in `Grammar/python.gram` (the `expressions` start
//! rule and everything below it) plus the checks CPython runs while building the tree:
//! argument order in calls, unparenthesised generator arguments, lambda defaults,
//! bytes/str concatenation and f-string syntax. Error messages are informative only.
//!
//! # Depth
//!
//! Model output can nest without bound (`-` × 300,000, `not ` × 100,000, `a.b.b.b…`), and a
//! recursive parser, the tree it builds and every later walk over that tree use the host
//! stack. Two bounds keep all of that finite, both taken from CPython 3.11:
//!
//! - **Nesting** ([`MAX_NESTING`]): every recursive cycle of the grammar passes through
//!   `expression`, `inversion` or `factor`, and each counts one level; past the limit the
//!   parse fails as CPython's parser does when its stack overflows (`MemoryError`). Bracket
//!   nesting is further capped at 200 by the tokenizer, as in CPython.
//! - **Tree depth** ([`MAX_AST_DEPTH`]): the parser tracks the depth of every node it
//!   builds (counting `keyword`, `comprehension`, `arguments` and `FormattedValue` levels and
//!   the enclosing `Expression`, as CPython's AST construction does), so a left-deep chain
//!   such as `1+1+…+1` or `a[0][0]…`, parsed by a loop rather than by recursion, is refused
//!   as soon as it gets too deep (`RecursionError`, as upstream) and no deeper tree ever
//!   exists.
//!
//! LiC scores 0 for every input either bound refuses, because CPython refuses it too.

use std::cell::Cell;

use crate::ast::{
    Arguments, BinOp, BoolOp, CmpOp, Comprehension, Constant, Expr, FPart, Keyword, UnaryOp,
};
use crate::error::BfclError;
use crate::fstring::{Pieces, parse_fstring};
use crate::lexer::{StrPiece, Tok, Token, tokenize};
use crate::value::Raise;

/// Deepest tree accepted, counting the enclosing `Expression` node.
///
/// CPython 3.11 raises `RecursionError: maximum recursion depth exceeded during ast
/// construction` when the tree it converts is deeper than `3 × (1000 − frames already on
/// the stack)`: measured with CPython 3.11.7, `ast.parse("-" * n + "1")` four frames deep
/// works up to a depth of 2988 nodes. LiC calls `ast.parse` about ten frames deep, so its
/// limit is close to 2970; the exact figure moves by three per frame of LiC's call stack.
pub const MAX_AST_DEPTH: usize = 2970;

/// Deepest recursion of the parser, in levels weighted like CPython's.
///
/// CPython 3.11's parser gives up at 6000 levels of its own rules (`MemoryError`). Measured
/// with CPython 3.11.7, a unary operator, `not` or a conditional expression costs one of
/// those levels, `lambda` and `**` two, and a bracket (a parenthesis, a display, a call, a
/// subscript) 24 to 30. Here `expression`, `inversion` and `factor` count one level each,
/// `lambda` and `**` one more, and a bracket 25 more, so that the limit
/// falls about where CPython's does.
pub const MAX_NESTING: usize = 6000;

/// The extra levels a bracket counts (see [`MAX_NESTING`]).
const BRACKET_LEVELS: usize = 25;

/// Parse `src` as `ast.parse(src, mode="eval").body`.
pub fn parse_eval(src: &str) -> Result<Expr, BfclError> {
    let tokens = tokenize(src)?;
    let mut p = Parser::new(tokens);
    let body = p.expressions()?;
    while p.peek() == &Tok::Newline {
        p.i += 1;
    }
    if p.peek() != &Tok::End {
        return Err(p.error("invalid syntax"));
    }
    debug_assert_eq!(p.depth, expr_depth(&body), "depth register out of step");
    Ok(body)
}

/// Parse the expression of an f-string replacement field (CPython compiles `(expr)`).
pub(crate) fn parse_fstring_expr(text: &str) -> Result<Expr, BfclError> {
    let wrapped = format!("({text})");
    let tokens = tokenize(&wrapped)?;
    let mut p = Parser::new(tokens);
    let body = p.expression()?;
    while p.peek() == &Tok::Newline {
        p.i += 1;
    }
    if p.peek() != &Tok::End {
        return Err(p.error("f-string: invalid syntax"));
    }
    Ok(body)
}

/// The depth of a tree as CPython's AST construction counts it (without the enclosing
/// `Expression`). Recursive: only for trees this parser built, which are bounded.
pub(crate) fn expr_depth(e: &Expr) -> usize {
    let max = |items: &mut dyn Iterator<Item = usize>| items.max().unwrap_or(0);
    let gens = |g: &[Comprehension]| {
        max(&mut g.iter().map(|c| {
            1 + expr_depth(&c.target)
                .max(expr_depth(&c.iter))
                .max(max(&mut c.ifs.iter().map(expr_depth)))
        }))
    };
    1 + match e {
        Expr::Constant { .. } | Expr::Name(_) => 0,
        Expr::JoinedStr(parts) => fparts_depth(parts),
        Expr::Attribute(v, _) | Expr::Starred(v) | Expr::UnaryOp(_, v) | Expr::Await(v) => {
            expr_depth(v)
        }
        Expr::YieldFrom(v) => expr_depth(v),
        Expr::Yield(v) => v.as_deref().map_or(0, expr_depth),
        Expr::Subscript(a, b) | Expr::BinOp(a, _, b) | Expr::NamedExpr(a, b) => {
            expr_depth(a).max(expr_depth(b))
        }
        Expr::Slice(a, b, c) => max(&mut [a, b, c]
            .into_iter()
            .filter_map(|x| x.as_deref().map(expr_depth))),
        Expr::Call {
            func,
            args,
            keywords,
        } => expr_depth(func)
            .max(max(&mut args.iter().map(expr_depth)))
            .max(max(&mut keywords.iter().map(|k| 1 + expr_depth(&k.value)))),
        Expr::BoolOp(_, v) | Expr::List(v) | Expr::Tuple(v) | Expr::Set(v) => {
            max(&mut v.iter().map(expr_depth))
        }
        Expr::Compare(left, ops) => {
            expr_depth(left).max(max(&mut ops.iter().map(|(_, e)| expr_depth(e))))
        }
        Expr::IfExp { test, body, orelse } => expr_depth(test)
            .max(expr_depth(body))
            .max(expr_depth(orelse)),
        Expr::Lambda(args, body) => arguments_depth(
            !(args.posonly.is_empty()
                && args.args.is_empty()
                && args.kwonly.is_empty()
                && args.vararg.is_none()
                && args.kwarg.is_none()),
            max(&mut args
                .defaults
                .iter()
                .chain(args.kwonly.iter().filter_map(|(_, d)| d.as_ref()))
                .map(expr_depth)),
        )
        .max(expr_depth(body)),
        Expr::Dict(items) => max(&mut items
            .iter()
            .map(|(k, v)| k.as_ref().map_or(0, expr_depth).max(expr_depth(v)))),
        Expr::ListComp(elt, g) | Expr::SetComp(elt, g) | Expr::GeneratorExp(elt, g) => {
            expr_depth(elt).max(gens(g))
        }
        Expr::DictComp(k, v, g) => expr_depth(k).max(expr_depth(v)).max(gens(g)),
    }
}

/// The depth contributed by the pieces of an f-string (its `FormattedValue`s and their
/// format specs, each a level).
pub(crate) fn fparts_depth(parts: &[FPart]) -> usize {
    parts
        .iter()
        .map(|p| match p {
            FPart::Literal(_) => 1,
            FPart::Field(f) => {
                1 + expr_depth(&f.value)
                    .max(f.format_spec.as_deref().map_or(0, |s| 1 + fparts_depth(s)))
            }
        })
        .max()
        .unwrap_or(0)
}

/// An `arguments` node: one level, plus one for its `arg` nodes, plus its defaults.
fn arguments_depth(has_params: bool, defaults: usize) -> usize {
    1 + defaults.max(usize::from(has_params))
}

fn too_deep() -> BfclError {
    BfclError::from(Raise::new(
        "RecursionError",
        format!(
            "maximum recursion depth exceeded during ast construction (more than \
             {MAX_AST_DEPTH} levels)"
        ),
    ))
}

thread_local! {
    /// Open calls of `expression`, `inversion` and `factor` on this thread, shared by the
    /// parsers of nested f-string fields; see [`MAX_NESTING`].
    static NESTING: Cell<usize> = const { Cell::new(0) };
}

/// Levels of [`NESTING`], given back when dropped (also on unwinding).
struct Levels(usize);

impl Levels {
    fn enter(cost: usize) -> Result<Levels, BfclError> {
        NESTING.with(|n| {
            if n.get() + cost > MAX_NESTING {
                return Err(BfclError::from(Raise::new(
                    "MemoryError",
                    format!(
                        "Parser stack overflowed - Python source too complex to parse \
                         (nesting deeper than {MAX_NESTING})"
                    ),
                )));
            }
            n.set(n.get() + cost);
            #[cfg(test)]
            stack_probe::touch();
            Ok(Levels(cost))
        })
    }
}

impl Drop for Levels {
    fn drop(&mut self) {
        NESTING.with(|n| n.set(n.get() - self.0));
    }
}

/// Test-only record of the lowest stack address the parser reached on this thread, to
/// measure how much stack the deepest inputs take.
#[cfg(test)]
pub(crate) mod stack_probe {
    use std::cell::Cell;

    thread_local! {
        static LOWEST: Cell<usize> = const { Cell::new(usize::MAX) };
    }

    /// An address in the current stack frame.
    #[inline(never)]
    pub(crate) fn here() -> usize {
        let marker = 0u8;
        std::hint::black_box(&marker) as *const u8 as usize
    }

    pub(crate) fn touch() {
        let at = here();
        LOWEST.with(|l| l.set(l.get().min(at)));
    }

    pub(crate) fn lowest() -> usize {
        LOWEST.with(Cell::get)
    }
}

struct Parser<'a> {
    toks: Vec<Token<'a>>,
    i: usize,
    /// The depth of the expression (or, for the few helpers that return several, the
    /// deepest of them) returned last; see [`MAX_AST_DEPTH`].
    depth: usize,
}

fn binop_for(op: &str) -> Option<BinOp> {
    Some(match op {
        "+" => BinOp::Add,
        "-" => BinOp::Sub,
        "*" => BinOp::Mult,
        "@" => BinOp::MatMult,
        "/" => BinOp::Div,
        "%" => BinOp::Mod,
        "//" => BinOp::FloorDiv,
        "<<" => BinOp::LShift,
        ">>" => BinOp::RShift,
        "|" => BinOp::BitOr,
        "^" => BinOp::BitXor,
        "&" => BinOp::BitAnd,
        _ => return None,
    })
}

impl<'a> Parser<'a> {
    fn new(toks: Vec<Token<'a>>) -> Self {
        Parser {
            toks,
            i: 0,
            depth: 0,
        }
    }

    /// Run one level of recursion, refusing to go past [`MAX_NESTING`].
    fn nested(
        &mut self,
        rule: impl FnOnce(&mut Self) -> Result<Expr, BfclError>,
    ) -> Result<Expr, BfclError> {
        let _level = Levels::enter(1)?;
        rule(self)
    }

    /// A node without child nodes.
    fn leaf(&mut self, e: Expr) -> Result<Expr, BfclError> {
        self.depth = 1;
        Ok(e)
    }

    /// A node whose deepest child is `children` deep.
    fn node(&mut self, e: Expr, children: usize) -> Result<Expr, BfclError> {
        // The enclosing `Expression` adds one more level.
        if children + 2 > MAX_AST_DEPTH {
            return Err(too_deep());
        }
        self.depth = children + 1;
        Ok(e)
    }

    fn peek(&self) -> &Tok<'a> {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> &Tok<'a> {
        let last = self.toks.len() - 1;
        &self.toks[(self.i + n).min(last)].tok
    }

    /// The current token, moved out of the list as it is consumed, and the parser moved
    /// past it: the parser reads no token again once past it (it never steps back), so
    /// names, numbers and str pieces need not be copied.
    fn take(&mut self) -> Tok<'a> {
        let last = self.toks.len() - 1;
        let at = self.i.min(last);
        self.i += 1;
        if at == last {
            // The end of input, which later peeks still read.
            return self.toks[at].tok.clone();
        }
        std::mem::replace(&mut self.toks[at].tok, Tok::End)
    }

    fn pos(&self) -> usize {
        let last = self.toks.len() - 1;
        self.toks[self.i.min(last)].pos
    }

    fn error(&self, message: &str) -> BfclError {
        BfclError::syntax(self.pos(), message)
    }

    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }

    fn is_op_at(&self, n: usize, op: &str) -> bool {
        matches!(self.peek_at(n), Tok::Op(o) if *o == op)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Kw(k) if *k == kw)
    }

    fn eat_op(&mut self, op: &str) -> bool {
        if self.is_op(op) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect_op(&mut self, op: &str) -> Result<(), BfclError> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(self.error(&format!("expected '{op}'")))
        }
    }

    fn name(&mut self) -> Result<String, BfclError> {
        match self.peek() {
            Tok::Name(_) => match self.take() {
                Tok::Name(n) => Ok(n.into_owned()),
                _ => Err(self.error("expected a name")),
            },
            _ => Err(self.error("expected a name")),
        }
    }

    /// Whether the current token can begin an `expression`.
    fn starts_expression(&self) -> bool {
        match self.peek() {
            Tok::Name(_) | Tok::Num(_) | Tok::Str(_) => true,
            Tok::Kw(k) => matches!(*k, "not" | "lambda" | "await" | "None" | "True" | "False"),
            Tok::Op(o) => matches!(*o, "(" | "[" | "{" | "-" | "+" | "~" | "..."),
            _ => false,
        }
    }

    /// `expressions: expression (',' expression)* [',']`
    fn expressions(&mut self) -> Result<Expr, BfclError> {
        let first = self.expression()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut depth = self.depth;
        let mut elts = vec![first];
        while self.eat_op(",") {
            if !self.starts_expression() {
                break;
            }
            elts.push(self.expression()?);
            depth = depth.max(self.depth);
        }
        self.node(Expr::Tuple(elts), depth)
    }

    /// `expression: disjunction 'if' disjunction 'else' expression | disjunction | lambdef`
    fn expression(&mut self) -> Result<Expr, BfclError> {
        self.nested(Self::expression_rule)
    }

    fn expression_rule(&mut self) -> Result<Expr, BfclError> {
        if self.is_kw("lambda") {
            return self.lambda();
        }
        let body = self.disjunction()?;
        if self.eat_kw("if") {
            let depth = self.depth;
            let test = self.disjunction()?;
            let depth = depth.max(self.depth);
            if !self.eat_kw("else") {
                return Err(self.error("expected 'else' after 'if' expression"));
            }
            let orelse = self.expression()?;
            let depth = depth.max(self.depth);
            return self.node(
                Expr::IfExp {
                    test: Box::new(test),
                    body: Box::new(body),
                    orelse: Box::new(orelse),
                },
                depth,
            );
        }
        Ok(body)
    }

    /// `named_expression: NAME ':=' expression | expression !':='`
    fn named_expression(&mut self) -> Result<Expr, BfclError> {
        if let Tok::Name(n) = self.peek()
            && self.is_op_at(1, ":=")
        {
            let n = n.to_string();
            self.i += 2;
            let value = self.expression()?;
            let depth = self.depth;
            return self.node(
                Expr::NamedExpr(Box::new(Expr::Name(n)), Box::new(value)),
                depth,
            );
        }
        let e = self.expression()?;
        if self.is_op(":=") {
            return Err(self.error("cannot use assignment expressions with this target"));
        }
        Ok(e)
    }

    /// `star_named_expression: '*' bitwise_or | named_expression`
    fn star_named_expression(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("*") {
            let value = self.bitwise_or()?;
            let depth = self.depth;
            return self.node(Expr::Starred(Box::new(value)), depth);
        }
        self.named_expression()
    }

    fn disjunction(&mut self) -> Result<Expr, BfclError> {
        let first = self.conjunction()?;
        if !self.is_kw("or") {
            return Ok(first);
        }
        let mut depth = self.depth;
        let mut values = vec![first];
        while self.eat_kw("or") {
            values.push(self.conjunction()?);
            depth = depth.max(self.depth);
        }
        self.node(Expr::BoolOp(BoolOp::Or, values), depth)
    }

    fn conjunction(&mut self) -> Result<Expr, BfclError> {
        let first = self.inversion()?;
        if !self.is_kw("and") {
            return Ok(first);
        }
        let mut depth = self.depth;
        let mut values = vec![first];
        while self.eat_kw("and") {
            values.push(self.inversion()?);
            depth = depth.max(self.depth);
        }
        self.node(Expr::BoolOp(BoolOp::And, values), depth)
    }

    fn inversion(&mut self) -> Result<Expr, BfclError> {
        self.nested(|p| {
            if p.eat_kw("not") {
                let operand = p.inversion()?;
                let depth = p.depth;
                return p.node(Expr::UnaryOp(UnaryOp::Not, Box::new(operand)), depth);
            }
            p.comparison()
        })
    }

    fn comparison(&mut self) -> Result<Expr, BfclError> {
        let left = self.bitwise_or()?;
        let mut depth = self.depth;
        let mut ops = Vec::new();
        loop {
            let op = match self.peek() {
                Tok::Op("==") => CmpOp::Eq,
                Tok::Op("!=") => CmpOp::NotEq,
                Tok::Op("<") => CmpOp::Lt,
                Tok::Op("<=") => CmpOp::LtE,
                Tok::Op(">") => CmpOp::Gt,
                Tok::Op(">=") => CmpOp::GtE,
                Tok::Kw("in") => CmpOp::In,
                Tok::Kw("is") => {
                    if matches!(self.peek_at(1), Tok::Kw("not")) {
                        self.i += 1;
                        CmpOp::IsNot
                    } else {
                        CmpOp::Is
                    }
                }
                Tok::Kw("not") if matches!(self.peek_at(1), Tok::Kw("in")) => {
                    self.i += 1;
                    CmpOp::NotIn
                }
                _ => break,
            };
            self.i += 1;
            ops.push((op, self.bitwise_or()?));
            depth = depth.max(self.depth);
        }
        if ops.is_empty() {
            Ok(left)
        } else {
            self.node(Expr::Compare(Box::new(left), ops), depth)
        }
    }

    /// Left-associative binary levels from `|` down to `*`.
    fn binary_level(&mut self, level: usize) -> Result<Expr, BfclError> {
        /// The level of a binary operator, `|` (0) down to `*` (5); one `match` per token
        /// instead of comparing it with each operator of each of the six levels per atom.
        fn level_of(op: &str) -> Option<usize> {
            Some(match op {
                "|" => 0,
                "^" => 1,
                "&" => 2,
                "<<" | ">>" => 3,
                "+" | "-" => 4,
                "*" | "/" | "//" | "%" | "@" => 5,
                _ => return None,
            })
        }
        const LEVELS: usize = 6;
        if level == LEVELS {
            return self.factor();
        }
        let mut left = self.binary_level(level + 1)?;
        loop {
            let op = match self.peek() {
                Tok::Op(o) if level_of(o) == Some(level) => *o,
                _ => return Ok(left),
            };
            let left_depth = self.depth;
            self.i += 1;
            let right = self.binary_level(level + 1)?;
            let op = binop_for(op).ok_or_else(|| self.error("invalid operator"))?;
            let depth = left_depth.max(self.depth);
            left = self.node(Expr::BinOp(Box::new(left), op, Box::new(right)), depth)?;
        }
    }

    fn bitwise_or(&mut self) -> Result<Expr, BfclError> {
        self.binary_level(0)
    }

    fn factor(&mut self) -> Result<Expr, BfclError> {
        self.nested(|p| {
            let op = match p.peek() {
                Tok::Op("+") => UnaryOp::UAdd,
                Tok::Op("-") => UnaryOp::USub,
                Tok::Op("~") => UnaryOp::Invert,
                _ => return p.power(),
            };
            p.i += 1;
            let operand = p.factor()?;
            let depth = p.depth;
            p.node(Expr::UnaryOp(op, Box::new(operand)), depth)
        })
    }

    fn power(&mut self) -> Result<Expr, BfclError> {
        let base = if self.eat_kw("await") {
            let value = self.primary()?;
            let depth = self.depth;
            self.node(Expr::Await(Box::new(value)), depth)?
        } else {
            self.primary()?
        };
        if self.eat_op("**") {
            let depth = self.depth;
            let _level = Levels::enter(1)?;
            let exp = self.factor()?;
            let depth = depth.max(self.depth);
            return self.node(
                Expr::BinOp(Box::new(base), BinOp::Pow, Box::new(exp)),
                depth,
            );
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Expr, BfclError> {
        let mut e = self.atom()?;
        loop {
            let depth = self.depth;
            if self.eat_op(".") {
                let attr = self.name()?;
                e = self.node(Expr::Attribute(Box::new(e), attr), depth)?;
            } else if self.eat_op("(") {
                let _levels = Levels::enter(BRACKET_LEVELS)?;
                e = self.call(e, depth)?;
            } else if self.eat_op("[") {
                let _levels = Levels::enter(BRACKET_LEVELS)?;
                let slice = self.slices()?;
                self.expect_op("]")?;
                let depth = depth.max(self.depth);
                e = self.node(Expr::Subscript(Box::new(e), Box::new(slice)), depth)?;
            } else {
                return Ok(e);
            }
        }
    }

    /// Call arguments after `(`; `func_depth` is the callee's depth.
    fn call(&mut self, func: Expr, func_depth: usize) -> Result<Expr, BfclError> {
        let mut depth = func_depth;
        let mut args = Vec::new();
        let mut keywords: Vec<Keyword> = Vec::new();
        let mut seen_dstar = false;
        if !self.eat_op(")") {
            loop {
                if self.eat_op("*") {
                    if seen_dstar {
                        return Err(self.error(
                            "iterable argument unpacking follows keyword argument unpacking",
                        ));
                    }
                    let value = self.expression()?;
                    let d = self.depth;
                    args.push(self.node(Expr::Starred(Box::new(value)), d)?);
                    depth = depth.max(self.depth);
                } else if self.eat_op("**") {
                    let value = self.expression()?;
                    // The `keyword` node is a level of its own.
                    depth = depth.max(self.depth + 1);
                    keywords.push(Keyword { arg: None, value });
                    seen_dstar = true;
                } else if matches!(self.peek(), Tok::Name(_)) && self.is_op_at(1, "=") {
                    let arg = self.name()?;
                    self.i += 1;
                    let value = self.expression()?;
                    depth = depth.max(self.depth + 1);
                    keywords.push(Keyword {
                        arg: Some(arg),
                        value,
                    });
                } else {
                    let mut e = self.named_expression()?;
                    if self.is_kw("for") || self.is_kw("async") {
                        let elt_depth = self.depth;
                        let generators = self.comprehension_clauses()?;
                        if !args.is_empty() || !keywords.is_empty() || !self.is_op(")") {
                            return Err(self.error("Generator expression must be parenthesized"));
                        }
                        let d = elt_depth.max(self.depth);
                        e = self.node(Expr::GeneratorExp(Box::new(e), generators), d)?;
                    }
                    depth = depth.max(self.depth);
                    if self.is_op("=") {
                        return Err(self.error("expression cannot contain assignment"));
                    }
                    if !keywords.is_empty() {
                        return Err(self.error(if seen_dstar {
                            "positional argument follows keyword argument unpacking"
                        } else {
                            "positional argument follows keyword argument"
                        }));
                    }
                    args.push(e);
                }
                if self.eat_op(",") {
                    if self.eat_op(")") {
                        break;
                    }
                    continue;
                }
                self.expect_op(")")?;
                break;
            }
        }
        self.node(
            Expr::Call {
                func: Box::new(func),
                args,
                keywords,
            },
            depth,
        )
    }

    /// `slices` inside `[...]`.
    fn slices(&mut self) -> Result<Expr, BfclError> {
        let first = self.slice_item()?;
        let mut depth = self.depth;
        if !self.is_op(",") {
            return match first {
                starred @ Expr::Starred(_) => self.node(Expr::Tuple(vec![starred]), depth),
                other => Ok(other),
            };
        }
        let mut elts = vec![first];
        while self.eat_op(",") {
            if self.is_op("]") {
                break;
            }
            elts.push(self.slice_item()?);
            depth = depth.max(self.depth);
        }
        self.node(Expr::Tuple(elts), depth)
    }

    fn slice_item(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("*") {
            let value = self.expression()?;
            let depth = self.depth;
            return self.node(Expr::Starred(Box::new(value)), depth);
        }
        if matches!(self.peek(), Tok::Name(_)) && self.is_op_at(1, ":=") {
            return self.named_expression();
        }
        let mut depth = 0;
        let lower = if self.is_op(":") {
            None
        } else {
            let e = self.expression()?;
            if !self.is_op(":") {
                if self.is_op(":=") {
                    return Err(self.error("invalid syntax"));
                }
                return Ok(e);
            }
            depth = self.depth;
            Some(Box::new(e))
        };
        self.expect_op(":")?;
        let upper = if self.is_op(":") || self.is_op(",") || self.is_op("]") {
            None
        } else {
            let e = self.expression()?;
            depth = depth.max(self.depth);
            Some(Box::new(e))
        };
        let mut step = None;
        if self.eat_op(":") && !(self.is_op(",") || self.is_op("]")) {
            step = Some(Box::new(self.expression()?));
            depth = depth.max(self.depth);
        }
        self.node(Expr::Slice(lower, upper, step), depth)
    }

    fn atom(&mut self) -> Result<Expr, BfclError> {
        match self.peek() {
            Tok::Name(_) => match self.take() {
                Tok::Name(n) => self.leaf(Expr::Name(n.into_owned())),
                _ => Err(self.error("invalid syntax")),
            },
            Tok::Kw("True") => {
                self.i += 1;
                self.leaf(Expr::constant(Constant::Bool(true)))
            }
            Tok::Kw("False") => {
                self.i += 1;
                self.leaf(Expr::constant(Constant::Bool(false)))
            }
            Tok::Kw("None") => {
                self.i += 1;
                self.leaf(Expr::constant(Constant::None))
            }
            Tok::Num(_) => match self.take() {
                Tok::Num(c) => self.leaf(Expr::constant(c)),
                _ => Err(self.error("invalid syntax")),
            },
            Tok::Str(_) => self.strings(),
            Tok::Op("...") => {
                self.i += 1;
                self.leaf(Expr::constant(Constant::Ellipsis))
            }
            Tok::Op("(") => {
                self.i += 1;
                let _levels = Levels::enter(BRACKET_LEVELS)?;
                self.paren()
            }
            Tok::Op("[") => {
                self.i += 1;
                let _levels = Levels::enter(BRACKET_LEVELS)?;
                self.list()
            }
            Tok::Op("{") => {
                self.i += 1;
                let _levels = Levels::enter(BRACKET_LEVELS)?;
                self.brace()
            }
            _ => Err(self.error("invalid syntax")),
        }
    }

    /// Adjacent string literals, concatenated as CPython does.
    fn strings(&mut self) -> Result<Expr, BfclError> {
        let start = self.pos();
        let mut pieces = Vec::new();
        while let Tok::Str(_) = self.peek() {
            if let Tok::Str(piece) = self.take() {
                pieces.push(piece);
            }
        }
        let any_bytes = pieces.iter().any(|p| matches!(p, StrPiece::Bytes(_)));
        let all_bytes = pieces.iter().all(|p| matches!(p, StrPiece::Bytes(_)));
        if any_bytes && !all_bytes {
            return Err(BfclError::syntax(
                start,
                "cannot mix bytes and nonbytes literals",
            ));
        }
        if all_bytes {
            let mut value = Vec::new();
            for p in pieces {
                if let StrPiece::Bytes(b) = p {
                    value.extend(b);
                }
            }
            return self.leaf(Expr::constant(Constant::Bytes(value)));
        }
        let kind_u = matches!(pieces.first(), Some(StrPiece::Str { u: true, .. }));
        let is_fstring = pieces.iter().any(|p| matches!(p, StrPiece::FStr { .. }));
        if is_fstring {
            let mut acc = Pieces::default();
            for p in pieces {
                match p {
                    StrPiece::Str { value, .. } => acc.push_literal(&value),
                    StrPiece::FStr { body, raw } => parse_fstring(&body, raw, start, &mut acc)?,
                    StrPiece::Bytes(_) => {}
                }
            }
            let parts = acc.finish();
            let depth = fparts_depth(&parts);
            return self.node(Expr::JoinedStr(parts), depth);
        }
        // One piece (the usual literal) is taken as it is, copied once if borrowed.
        let value = if pieces.len() == 1
            && let Some(StrPiece::Str { value, .. }) = pieces.pop()
        {
            value.into_owned()
        } else {
            let mut value = String::new();
            for p in pieces {
                if let StrPiece::Str { value: v, .. } = p {
                    value.push_str(&v);
                }
            }
            value
        };
        self.leaf(Expr::Constant {
            value: Constant::Str(value),
            kind_u,
        })
    }

    /// After `(`: empty tuple, group, tuple, generator expression or yield.
    fn paren(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op(")") {
            return self.leaf(Expr::Tuple(Vec::new()));
        }
        if self.is_kw("yield") {
            let e = self.yield_expr()?;
            self.expect_op(")")?;
            return Ok(e);
        }
        let first = self.star_named_expression()?;
        let mut depth = self.depth;
        if !matches!(first, Expr::Starred(_)) && (self.is_kw("for") || self.is_kw("async")) {
            let generators = self.comprehension_clauses()?;
            self.expect_op(")")?;
            let depth = depth.max(self.depth);
            return self.node(Expr::GeneratorExp(Box::new(first), generators), depth);
        }
        if self.eat_op(")") {
            if matches!(first, Expr::Starred(_)) {
                return Err(self.error("cannot use starred expression here"));
            }
            return Ok(first);
        }
        if !self.is_op(",") {
            return Err(self.error("invalid syntax"));
        }
        let mut elts = vec![first];
        while self.eat_op(",") {
            if self.is_op(")") {
                break;
            }
            elts.push(self.star_named_expression()?);
            depth = depth.max(self.depth);
        }
        self.expect_op(")")?;
        self.node(Expr::Tuple(elts), depth)
    }

    fn yield_expr(&mut self) -> Result<Expr, BfclError> {
        self.i += 1;
        if self.eat_kw("from") {
            let value = self.expression()?;
            let depth = self.depth;
            return self.node(Expr::YieldFrom(Box::new(value)), depth);
        }
        if !(self.starts_expression() || self.is_op("*")) {
            return self.leaf(Expr::Yield(None));
        }
        // star_expressions
        let first = self.star_expression()?;
        let mut depth = self.depth;
        if !self.is_op(",") {
            return self.node(Expr::Yield(Some(Box::new(first))), depth);
        }
        let mut elts = vec![first];
        while self.eat_op(",") {
            if !(self.starts_expression() || self.is_op("*")) {
                break;
            }
            elts.push(self.star_expression()?);
            depth = depth.max(self.depth);
        }
        let tuple = self.node(Expr::Tuple(elts), depth)?;
        let depth = self.depth;
        self.node(Expr::Yield(Some(Box::new(tuple))), depth)
    }

    fn star_expression(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("*") {
            let value = self.bitwise_or()?;
            let depth = self.depth;
            return self.node(Expr::Starred(Box::new(value)), depth);
        }
        self.expression()
    }

    /// After `[`: list display or list comprehension.
    fn list(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("]") {
            return self.leaf(Expr::List(Vec::new()));
        }
        let first = self.star_named_expression()?;
        let mut depth = self.depth;
        if !matches!(first, Expr::Starred(_)) && (self.is_kw("for") || self.is_kw("async")) {
            let generators = self.comprehension_clauses()?;
            self.expect_op("]")?;
            let depth = depth.max(self.depth);
            return self.node(Expr::ListComp(Box::new(first), generators), depth);
        }
        let mut elts = vec![first];
        while self.eat_op(",") {
            if self.is_op("]") {
                break;
            }
            elts.push(self.star_named_expression()?);
            depth = depth.max(self.depth);
        }
        self.expect_op("]")?;
        self.node(Expr::List(elts), depth)
    }

    /// After `{`: dict, set, or their comprehensions.
    fn brace(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("}") {
            return self.leaf(Expr::Dict(Vec::new()));
        }
        let is_set_start =
            self.is_op("*") || (matches!(self.peek(), Tok::Name(_)) && self.is_op_at(1, ":="));
        if !is_set_start && !self.is_op("**") {
            let key = self.expression()?;
            let key_depth = self.depth;
            if self.eat_op(":") {
                let value = self.expression()?;
                let depth = key_depth.max(self.depth);
                if self.is_kw("for") || self.is_kw("async") {
                    let generators = self.comprehension_clauses()?;
                    self.expect_op("}")?;
                    let depth = depth.max(self.depth);
                    return self.node(
                        Expr::DictComp(Box::new(key), Box::new(value), generators),
                        depth,
                    );
                }
                return self.dict_rest(vec![(Some(key), value)], depth);
            }
            if self.is_op(":=") {
                return Err(self.error("invalid syntax"));
            }
            return self.set_rest(key, key_depth);
        }
        if self.is_op("**") {
            return self.dict_rest(Vec::new(), 0);
        }
        let first = self.star_named_expression()?;
        let depth = self.depth;
        self.set_rest(first, depth)
    }

    /// The rest of a set display or comprehension after its first element.
    fn set_rest(&mut self, first: Expr, first_depth: usize) -> Result<Expr, BfclError> {
        let mut depth = first_depth;
        if !matches!(first, Expr::Starred(_)) && (self.is_kw("for") || self.is_kw("async")) {
            let generators = self.comprehension_clauses()?;
            self.expect_op("}")?;
            let depth = depth.max(self.depth);
            return self.node(Expr::SetComp(Box::new(first), generators), depth);
        }
        let mut elts = vec![first];
        while self.eat_op(",") {
            if self.is_op("}") {
                break;
            }
            elts.push(self.star_named_expression()?);
            depth = depth.max(self.depth);
        }
        self.expect_op("}")?;
        self.node(Expr::Set(elts), depth)
    }

    /// The remaining `double_starred_kvpair`s of a dict display (the first may be pending,
    /// `depth` deep).
    fn dict_rest(
        &mut self,
        mut items: Vec<(Option<Expr>, Expr)>,
        mut depth: usize,
    ) -> Result<Expr, BfclError> {
        if items.is_empty() {
            items.push(self.kvpair()?);
            depth = depth.max(self.depth);
        }
        while self.eat_op(",") {
            if self.is_op("}") {
                break;
            }
            items.push(self.kvpair()?);
            depth = depth.max(self.depth);
        }
        self.expect_op("}")?;
        self.node(Expr::Dict(items), depth)
    }

    /// One `key: value` or `**mapping`; leaves the deeper of the two in `self.depth`.
    fn kvpair(&mut self) -> Result<(Option<Expr>, Expr), BfclError> {
        if self.eat_op("**") {
            return Ok((None, self.bitwise_or()?));
        }
        let key = self.expression()?;
        let depth = self.depth;
        self.expect_op(":")?;
        let value = self.expression()?;
        self.depth = self.depth.max(depth);
        Ok((Some(key), value))
    }

    /// The `for ... in ... if ...` clauses; leaves the deepest `comprehension` node's depth
    /// in `self.depth`.
    fn comprehension_clauses(&mut self) -> Result<Vec<Comprehension>, BfclError> {
        let mut out = Vec::new();
        let mut deepest = 0;
        loop {
            let is_async = self.eat_kw("async");
            if !self.eat_kw("for") {
                if is_async || out.is_empty() {
                    return Err(self.error("invalid syntax"));
                }
                self.depth = deepest;
                return Ok(out);
            }
            let target = self.star_targets()?;
            let mut depth = self.depth;
            if !self.eat_kw("in") {
                return Err(self.error("expected 'in'"));
            }
            let iter = self.disjunction()?;
            depth = depth.max(self.depth);
            let mut ifs = Vec::new();
            while self.eat_kw("if") {
                ifs.push(self.disjunction()?);
                depth = depth.max(self.depth);
            }
            // The `comprehension` node is a level of its own.
            if depth + 3 > MAX_AST_DEPTH {
                return Err(too_deep());
            }
            deepest = deepest.max(depth + 1);
            out.push(Comprehension {
                target,
                iter,
                ifs,
                is_async,
            });
        }
    }

    /// `star_targets` of a comprehension (parsed at primary level, then validated).
    fn star_targets(&mut self) -> Result<Expr, BfclError> {
        let first = self.star_target()?;
        if !self.is_op(",") {
            return Ok(first);
        }
        let mut depth = self.depth;
        let mut elts = vec![first];
        while self.eat_op(",") {
            if self.is_kw("in") {
                break;
            }
            elts.push(self.star_target()?);
            depth = depth.max(self.depth);
        }
        self.node(Expr::Tuple(elts), depth)
    }

    fn star_target(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("*") {
            if self.is_op("*") {
                return Err(self.error("invalid syntax"));
            }
            let target = self.star_target()?;
            let depth = self.depth;
            return self.node(Expr::Starred(Box::new(target)), depth);
        }
        let e = self.primary()?;
        if is_target(&e) {
            Ok(e)
        } else {
            Err(self.error("cannot assign to expression"))
        }
    }

    fn lambda(&mut self) -> Result<Expr, BfclError> {
        let _level = Levels::enter(1)?;
        self.i += 1;
        let args = self.lambda_params()?;
        let depth = self.depth;
        self.expect_op(":")?;
        let body = self.expression()?;
        let depth = depth.max(self.depth);
        self.node(Expr::Lambda(Box::new(args), Box::new(body)), depth)
    }

    /// A lambda's parameters; leaves the `arguments` node's depth in `self.depth`.
    fn lambda_params(&mut self) -> Result<Arguments, BfclError> {
        let mut a = Arguments::default();
        let mut defaults_depth = 0;
        let mut positional: Vec<String> = Vec::new();
        let mut seen_slash = false;
        let mut seen_star = false;
        let mut bare_star = false;
        loop {
            if self.is_op(":") {
                break;
            }
            if self.eat_op("/") {
                if seen_slash || seen_star || positional.is_empty() {
                    return Err(self.error("invalid syntax"));
                }
                seen_slash = true;
                a.posonly = std::mem::take(&mut positional);
            } else if self.eat_op("**") {
                a.kwarg = Some(self.name()?);
                if self.is_op("=") {
                    return Err(self.error("var-keyword argument cannot have default value"));
                }
                self.eat_op(",");
                if !self.is_op(":") {
                    return Err(self.error("arguments cannot follow var-keyword argument"));
                }
                break;
            } else if self.eat_op("*") {
                if seen_star {
                    return Err(self.error("* argument may appear only once"));
                }
                seen_star = true;
                if let Tok::Name(_) = self.peek() {
                    a.vararg = Some(self.name()?);
                    if self.is_op("=") {
                        return Err(self.error("var-positional argument cannot have default value"));
                    }
                } else {
                    bare_star = true;
                }
            } else {
                let name = self.name()?;
                let default = if self.eat_op("=") {
                    let d = self.expression()?;
                    defaults_depth = defaults_depth.max(self.depth);
                    Some(d)
                } else {
                    None
                };
                if seen_star {
                    a.kwonly.push((name, default));
                } else {
                    let have_defaults = !a.defaults.is_empty();
                    match default {
                        Some(d) => a.defaults.push(d),
                        None if have_defaults => {
                            return Err(self.error("non-default argument follows default argument"));
                        }
                        None => {}
                    }
                    positional.push(name);
                }
            }
            if !self.eat_op(",") {
                break;
            }
        }
        if bare_star && a.kwonly.is_empty() {
            return Err(self.error("named arguments must follow bare *"));
        }
        a.args = positional;
        let has_params = !(a.posonly.is_empty()
            && a.args.is_empty()
            && a.kwonly.is_empty()
            && a.vararg.is_none()
            && a.kwarg.is_none());
        self.depth = arguments_depth(has_params, defaults_depth);
        if self.depth + 2 > MAX_AST_DEPTH {
            return Err(too_deep());
        }
        Ok(a)
    }
}

fn is_target(e: &Expr) -> bool {
    match e {
        Expr::Name(_) | Expr::Attribute(..) | Expr::Subscript(..) => true,
        Expr::Starred(inner) => is_target(inner),
        Expr::Tuple(items) | Expr::List(items) => items.iter().all(is_target),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_cpython_accepts() {
        for src in [
            "f(a=1)",
            "f(a=1), g(b=2)",
            "f(a=1),",
            "(f(a=1), g())",
            "a.b.c(x=[1, 2], y={'k': (1,)})",
            "f(a=1, a=2)",
            "f(**k, a=1)",
            "f(a=1, *b)",
            "f(x for x in y)",
            "[x async for x in y if x if not x]",
            "{k: v for k, v in d.items()}",
            "{a, *b}",
            "{**a, 'b': 1}",
            "lambda a, /, b=1, *c, d, e=2, **f: 0",
            "lambda: 0",
            "a[1:2, ::3, *b]",
            "a[x:=1]",
            "(yield)",
            "await x",
            "x if y else z",
            "not a in b is not c",
            "f(a=-1, b=+2, c=~3, d=not x)",
            "'a' 'b' \"c\" '''d'''",
            "f'{x!r:>{w}}' 'y'",
            "1 if 1 else 2",
            "...",
        ] {
            assert!(parse_eval(src).is_ok(), "{src}");
        }
    }

    #[test]
    fn rejects_what_cpython_rejects() {
        for src in [
            "f(a=1, 2)",
            "f(**k, *b)",
            "f(x for x in y, 1)",
            "f(a.b=1)",
            "f(True=1)",
            "*a, b",
            "(*a)",
            "x := 1",
            "lambda a=1, b: 0",
            "lambda *: 0",
            "a if b",
            "'a' b'b'",
            "f(a=1) g(b=2)",
            "f(a=1); g(b=2)",
            "x = f(a=1)",
            "f'{}'",
            "f'{a!x}'",
            "f'{a#}'",
            "f'}'",
            "print f(a=1)",
            "",
            "f(a=1)]",
        ] {
            assert!(parse_eval(src).is_err(), "{src}");
        }
    }

    #[test]
    fn tree_shapes() {
        assert_eq!(
            parse_eval("a[*b]").unwrap(),
            Expr::Subscript(
                Box::new(Expr::Name("a".into())),
                Box::new(Expr::Tuple(vec![Expr::Starred(Box::new(Expr::Name(
                    "b".into()
                )))]))
            )
        );
        assert_eq!(
            parse_eval("u'a' 'b'").unwrap(),
            Expr::Constant {
                value: Constant::Str("ab".into()),
                kind_u: true
            }
        );
        assert!(matches!(
            parse_eval("2 ** -1").unwrap(),
            Expr::BinOp(_, BinOp::Pow, _)
        ));
        assert!(matches!(
            parse_eval("-2 ** 2").unwrap(),
            Expr::UnaryOp(UnaryOp::USub, _)
        ));
    }
}
