//! A recursive-descent parser for CPython 3.11's expression grammar (`mode="eval"`).
//!
//! Acceptance follows the PEG grammar in `Grammar/python.gram` (the `expressions` start
//! rule and everything below it) plus the checks CPython runs while building the tree:
//! argument order in calls, unparenthesised generator arguments, lambda defaults,
//! bytes/str concatenation and f-string syntax. Error messages are informative only.

use crate::ast::{
    Arguments, BinOp, BoolOp, CmpOp, Comprehension, Constant, Expr, Keyword, UnaryOp,
};
use crate::error::BfclError;
use crate::fstring::{Pieces, parse_fstring};
use crate::lexer::{StrPiece, Tok, Token, tokenize};

/// Parse `src` as `ast.parse(src, mode="eval").body`.
pub fn parse_eval(src: &str) -> Result<Expr, BfclError> {
    let tokens = tokenize(src)?;
    let mut p = Parser { toks: tokens, i: 0 };
    let body = p.expressions()?;
    while p.peek() == &Tok::Newline {
        p.i += 1;
    }
    if p.peek() != &Tok::End {
        return Err(p.error("invalid syntax"));
    }
    Ok(body)
}

/// Parse the expression of an f-string replacement field (CPython compiles `(expr)`).
pub(crate) fn parse_fstring_expr(text: &str) -> Result<Expr, BfclError> {
    let wrapped = format!("({text})");
    let tokens = tokenize(&wrapped)?;
    let mut p = Parser { toks: tokens, i: 0 };
    let body = p.expression()?;
    while p.peek() == &Tok::Newline {
        p.i += 1;
    }
    if p.peek() != &Tok::End {
        return Err(p.error("f-string: invalid syntax"));
    }
    Ok(body)
}

struct Parser {
    toks: Vec<Token>,
    i: usize,
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

impl Parser {
    fn peek(&self) -> &Tok {
        self.peek_at(0)
    }

    fn peek_at(&self, n: usize) -> &Tok {
        let last = self.toks.len() - 1;
        &self.toks[(self.i + n).min(last)].tok
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
        match self.peek().clone() {
            Tok::Name(n) => {
                self.i += 1;
                Ok(n)
            }
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
        let mut elts = vec![first];
        while self.eat_op(",") {
            if !self.starts_expression() {
                break;
            }
            elts.push(self.expression()?);
        }
        Ok(Expr::Tuple(elts))
    }

    /// `expression: disjunction 'if' disjunction 'else' expression | disjunction | lambdef`
    fn expression(&mut self) -> Result<Expr, BfclError> {
        if self.is_kw("lambda") {
            return self.lambda();
        }
        let body = self.disjunction()?;
        if self.eat_kw("if") {
            let test = self.disjunction()?;
            if !self.eat_kw("else") {
                return Err(self.error("expected 'else' after 'if' expression"));
            }
            let orelse = self.expression()?;
            return Ok(Expr::IfExp {
                test: Box::new(test),
                body: Box::new(body),
                orelse: Box::new(orelse),
            });
        }
        Ok(body)
    }

    /// `named_expression: NAME ':=' expression | expression !':='`
    fn named_expression(&mut self) -> Result<Expr, BfclError> {
        if let Tok::Name(n) = self.peek().clone()
            && self.is_op_at(1, ":=")
        {
            self.i += 2;
            let value = self.expression()?;
            return Ok(Expr::NamedExpr(Box::new(Expr::Name(n)), Box::new(value)));
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
            return Ok(Expr::Starred(Box::new(self.bitwise_or()?)));
        }
        self.named_expression()
    }

    fn disjunction(&mut self) -> Result<Expr, BfclError> {
        let first = self.conjunction()?;
        if !self.is_kw("or") {
            return Ok(first);
        }
        let mut values = vec![first];
        while self.eat_kw("or") {
            values.push(self.conjunction()?);
        }
        Ok(Expr::BoolOp(BoolOp::Or, values))
    }

    fn conjunction(&mut self) -> Result<Expr, BfclError> {
        let first = self.inversion()?;
        if !self.is_kw("and") {
            return Ok(first);
        }
        let mut values = vec![first];
        while self.eat_kw("and") {
            values.push(self.inversion()?);
        }
        Ok(Expr::BoolOp(BoolOp::And, values))
    }

    fn inversion(&mut self) -> Result<Expr, BfclError> {
        if self.eat_kw("not") {
            return Ok(Expr::UnaryOp(UnaryOp::Not, Box::new(self.inversion()?)));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> Result<Expr, BfclError> {
        let left = self.bitwise_or()?;
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
        }
        if ops.is_empty() {
            Ok(left)
        } else {
            Ok(Expr::Compare(Box::new(left), ops))
        }
    }

    /// Left-associative binary levels from `|` down to `*`.
    fn binary_level(&mut self, level: usize) -> Result<Expr, BfclError> {
        const LEVELS: [&[&str]; 6] = [
            &["|"],
            &["^"],
            &["&"],
            &["<<", ">>"],
            &["+", "-"],
            &["*", "/", "//", "%", "@"],
        ];
        if level == LEVELS.len() {
            return self.factor();
        }
        let mut left = self.binary_level(level + 1)?;
        loop {
            let op = match self.peek() {
                Tok::Op(o) if LEVELS[level].contains(o) => *o,
                _ => return Ok(left),
            };
            self.i += 1;
            let right = self.binary_level(level + 1)?;
            let op = binop_for(op).ok_or_else(|| self.error("invalid operator"))?;
            left = Expr::BinOp(Box::new(left), op, Box::new(right));
        }
    }

    fn bitwise_or(&mut self) -> Result<Expr, BfclError> {
        self.binary_level(0)
    }

    fn factor(&mut self) -> Result<Expr, BfclError> {
        let op = match self.peek() {
            Tok::Op("+") => UnaryOp::UAdd,
            Tok::Op("-") => UnaryOp::USub,
            Tok::Op("~") => UnaryOp::Invert,
            _ => return self.power(),
        };
        self.i += 1;
        Ok(Expr::UnaryOp(op, Box::new(self.factor()?)))
    }

    fn power(&mut self) -> Result<Expr, BfclError> {
        let base = if self.eat_kw("await") {
            Expr::Await(Box::new(self.primary()?))
        } else {
            self.primary()?
        };
        if self.eat_op("**") {
            let exp = self.factor()?;
            return Ok(Expr::BinOp(Box::new(base), BinOp::Pow, Box::new(exp)));
        }
        Ok(base)
    }

    fn primary(&mut self) -> Result<Expr, BfclError> {
        let mut e = self.atom()?;
        loop {
            if self.eat_op(".") {
                let attr = self.name()?;
                e = Expr::Attribute(Box::new(e), attr);
            } else if self.eat_op("(") {
                e = self.call(e)?;
            } else if self.eat_op("[") {
                let slice = self.slices()?;
                self.expect_op("]")?;
                e = Expr::Subscript(Box::new(e), Box::new(slice));
            } else {
                return Ok(e);
            }
        }
    }

    /// Call arguments after `(`.
    fn call(&mut self, func: Expr) -> Result<Expr, BfclError> {
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
                    args.push(Expr::Starred(Box::new(self.expression()?)));
                } else if self.eat_op("**") {
                    let value = self.expression()?;
                    keywords.push(Keyword { arg: None, value });
                    seen_dstar = true;
                } else if matches!(self.peek(), Tok::Name(_)) && self.is_op_at(1, "=") {
                    let arg = self.name()?;
                    self.i += 1;
                    let value = self.expression()?;
                    keywords.push(Keyword {
                        arg: Some(arg),
                        value,
                    });
                } else {
                    let mut e = self.named_expression()?;
                    if self.is_kw("for") || self.is_kw("async") {
                        let generators = self.comprehension_clauses()?;
                        if !args.is_empty() || !keywords.is_empty() || !self.is_op(")") {
                            return Err(self.error("Generator expression must be parenthesized"));
                        }
                        e = Expr::GeneratorExp(Box::new(e), generators);
                    }
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
        Ok(Expr::Call {
            func: Box::new(func),
            args,
            keywords,
        })
    }

    /// `slices` inside `[...]`.
    fn slices(&mut self) -> Result<Expr, BfclError> {
        let first = self.slice_item()?;
        if !self.is_op(",") {
            return Ok(match first {
                starred @ Expr::Starred(_) => Expr::Tuple(vec![starred]),
                other => other,
            });
        }
        let mut elts = vec![first];
        while self.eat_op(",") {
            if self.is_op("]") {
                break;
            }
            elts.push(self.slice_item()?);
        }
        Ok(Expr::Tuple(elts))
    }

    fn slice_item(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("*") {
            return Ok(Expr::Starred(Box::new(self.expression()?)));
        }
        if matches!(self.peek(), Tok::Name(_)) && self.is_op_at(1, ":=") {
            return self.named_expression();
        }
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
            Some(Box::new(e))
        };
        self.expect_op(":")?;
        let upper = if self.is_op(":") || self.is_op(",") || self.is_op("]") {
            None
        } else {
            Some(Box::new(self.expression()?))
        };
        let mut step = None;
        if self.eat_op(":") && !(self.is_op(",") || self.is_op("]")) {
            step = Some(Box::new(self.expression()?));
        }
        Ok(Expr::Slice(lower, upper, step))
    }

    fn atom(&mut self) -> Result<Expr, BfclError> {
        let tok = self.peek().clone();
        match tok {
            Tok::Name(n) => {
                self.i += 1;
                Ok(Expr::Name(n))
            }
            Tok::Kw("True") => {
                self.i += 1;
                Ok(Expr::constant(Constant::Bool(true)))
            }
            Tok::Kw("False") => {
                self.i += 1;
                Ok(Expr::constant(Constant::Bool(false)))
            }
            Tok::Kw("None") => {
                self.i += 1;
                Ok(Expr::constant(Constant::None))
            }
            Tok::Num(c) => {
                self.i += 1;
                Ok(Expr::constant(c))
            }
            Tok::Str(_) => self.strings(),
            Tok::Op("...") => {
                self.i += 1;
                Ok(Expr::constant(Constant::Ellipsis))
            }
            Tok::Op("(") => {
                self.i += 1;
                self.paren()
            }
            Tok::Op("[") => {
                self.i += 1;
                self.list()
            }
            Tok::Op("{") => {
                self.i += 1;
                self.brace()
            }
            _ => Err(self.error("invalid syntax")),
        }
    }

    /// Adjacent string literals, concatenated as CPython does.
    fn strings(&mut self) -> Result<Expr, BfclError> {
        let start = self.pos();
        let mut pieces = Vec::new();
        while let Tok::Str(piece) = self.peek().clone() {
            pieces.push(piece);
            self.i += 1;
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
            return Ok(Expr::constant(Constant::Bytes(value)));
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
            return Ok(Expr::JoinedStr(acc.finish()));
        }
        let mut value = String::new();
        for p in pieces {
            if let StrPiece::Str { value: v, .. } = p {
                value.push_str(&v);
            }
        }
        Ok(Expr::Constant {
            value: Constant::Str(value),
            kind_u,
        })
    }

    /// After `(`: empty tuple, group, tuple, generator expression or yield.
    fn paren(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op(")") {
            return Ok(Expr::Tuple(Vec::new()));
        }
        if self.is_kw("yield") {
            let e = self.yield_expr()?;
            self.expect_op(")")?;
            return Ok(e);
        }
        let first = self.star_named_expression()?;
        if !matches!(first, Expr::Starred(_)) && (self.is_kw("for") || self.is_kw("async")) {
            let generators = self.comprehension_clauses()?;
            self.expect_op(")")?;
            return Ok(Expr::GeneratorExp(Box::new(first), generators));
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
        }
        self.expect_op(")")?;
        Ok(Expr::Tuple(elts))
    }

    fn yield_expr(&mut self) -> Result<Expr, BfclError> {
        self.i += 1;
        if self.eat_kw("from") {
            return Ok(Expr::YieldFrom(Box::new(self.expression()?)));
        }
        if !(self.starts_expression() || self.is_op("*")) {
            return Ok(Expr::Yield(None));
        }
        // star_expressions
        let first = self.star_expression()?;
        if !self.is_op(",") {
            return Ok(Expr::Yield(Some(Box::new(first))));
        }
        let mut elts = vec![first];
        while self.eat_op(",") {
            if !(self.starts_expression() || self.is_op("*")) {
                break;
            }
            elts.push(self.star_expression()?);
        }
        Ok(Expr::Yield(Some(Box::new(Expr::Tuple(elts)))))
    }

    fn star_expression(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("*") {
            return Ok(Expr::Starred(Box::new(self.bitwise_or()?)));
        }
        self.expression()
    }

    /// After `[`: list display or list comprehension.
    fn list(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("]") {
            return Ok(Expr::List(Vec::new()));
        }
        let first = self.star_named_expression()?;
        if !matches!(first, Expr::Starred(_)) && (self.is_kw("for") || self.is_kw("async")) {
            let generators = self.comprehension_clauses()?;
            self.expect_op("]")?;
            return Ok(Expr::ListComp(Box::new(first), generators));
        }
        let mut elts = vec![first];
        while self.eat_op(",") {
            if self.is_op("]") {
                break;
            }
            elts.push(self.star_named_expression()?);
        }
        self.expect_op("]")?;
        Ok(Expr::List(elts))
    }

    /// After `{`: dict, set, or their comprehensions.
    fn brace(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("}") {
            return Ok(Expr::Dict(Vec::new()));
        }
        let is_set_start =
            self.is_op("*") || (matches!(self.peek(), Tok::Name(_)) && self.is_op_at(1, ":="));
        if !is_set_start && !self.is_op("**") {
            let key = self.expression()?;
            if self.eat_op(":") {
                let value = self.expression()?;
                if self.is_kw("for") || self.is_kw("async") {
                    let generators = self.comprehension_clauses()?;
                    self.expect_op("}")?;
                    return Ok(Expr::DictComp(Box::new(key), Box::new(value), generators));
                }
                return self.dict_rest(vec![(Some(key), value)]);
            }
            if self.is_op(":=") {
                return Err(self.error("invalid syntax"));
            }
            return self.set_rest(key);
        }
        if self.is_op("**") {
            return self.dict_rest(Vec::new());
        }
        let first = self.star_named_expression()?;
        self.set_rest(first)
    }

    fn set_rest(&mut self, first: Expr) -> Result<Expr, BfclError> {
        if !matches!(first, Expr::Starred(_)) && (self.is_kw("for") || self.is_kw("async")) {
            let generators = self.comprehension_clauses()?;
            self.expect_op("}")?;
            return Ok(Expr::SetComp(Box::new(first), generators));
        }
        let mut elts = vec![first];
        while self.eat_op(",") {
            if self.is_op("}") {
                break;
            }
            elts.push(self.star_named_expression()?);
        }
        self.expect_op("}")?;
        Ok(Expr::Set(elts))
    }

    /// The remaining `double_starred_kvpair`s of a dict display (the first may be pending).
    fn dict_rest(&mut self, mut items: Vec<(Option<Expr>, Expr)>) -> Result<Expr, BfclError> {
        if items.is_empty() {
            items.push(self.kvpair()?);
        }
        while self.eat_op(",") {
            if self.is_op("}") {
                break;
            }
            items.push(self.kvpair()?);
        }
        self.expect_op("}")?;
        Ok(Expr::Dict(items))
    }

    fn kvpair(&mut self) -> Result<(Option<Expr>, Expr), BfclError> {
        if self.eat_op("**") {
            return Ok((None, self.bitwise_or()?));
        }
        let key = self.expression()?;
        self.expect_op(":")?;
        let value = self.expression()?;
        Ok((Some(key), value))
    }

    fn comprehension_clauses(&mut self) -> Result<Vec<Comprehension>, BfclError> {
        let mut out = Vec::new();
        loop {
            let is_async = self.eat_kw("async");
            if !self.eat_kw("for") {
                if is_async || out.is_empty() {
                    return Err(self.error("invalid syntax"));
                }
                return Ok(out);
            }
            let target = self.star_targets()?;
            if !self.eat_kw("in") {
                return Err(self.error("expected 'in'"));
            }
            let iter = self.disjunction()?;
            let mut ifs = Vec::new();
            while self.eat_kw("if") {
                ifs.push(self.disjunction()?);
            }
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
        let mut elts = vec![first];
        while self.eat_op(",") {
            if self.is_kw("in") {
                break;
            }
            elts.push(self.star_target()?);
        }
        Ok(Expr::Tuple(elts))
    }

    fn star_target(&mut self) -> Result<Expr, BfclError> {
        if self.eat_op("*") {
            if self.is_op("*") {
                return Err(self.error("invalid syntax"));
            }
            return Ok(Expr::Starred(Box::new(self.star_target()?)));
        }
        let e = self.primary()?;
        if is_target(&e) {
            Ok(e)
        } else {
            Err(self.error("cannot assign to expression"))
        }
    }

    fn lambda(&mut self) -> Result<Expr, BfclError> {
        self.i += 1;
        let args = self.lambda_params()?;
        self.expect_op(":")?;
        let body = self.expression()?;
        Ok(Expr::Lambda(Box::new(args), Box::new(body)))
    }

    fn lambda_params(&mut self) -> Result<Arguments, BfclError> {
        let mut a = Arguments::default();
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
                    Some(self.expression()?)
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
