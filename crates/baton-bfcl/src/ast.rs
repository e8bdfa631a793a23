//! The Python expression tree, shaped like CPython's `ast` expression nodes.

use crate::value::Int;

/// A literal constant (`ast.Constant`).
#[derive(Debug, Clone, PartialEq)]
pub enum Constant {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// `...`.
    Ellipsis,
    /// An integer literal.
    Int(Int),
    /// A float literal.
    Float(f64),
    /// An imaginary literal (`2j`); the payload is the imaginary part.
    Imag(f64),
    /// A string literal (after implicit concatenation).
    Str(String),
    /// A bytes literal (after implicit concatenation).
    Bytes(Vec<u8>),
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    /// `~`
    Invert,
    /// `not`
    Not,
    /// `+`
    UAdd,
    /// `-`
    USub,
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mult,
    /// `@`
    MatMult,
    /// `/`
    Div,
    /// `%`
    Mod,
    /// `**`
    Pow,
    /// `<<`
    LShift,
    /// `>>`
    RShift,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `&`
    BitAnd,
    /// `//`
    FloorDiv,
}

impl BinOp {
    /// The operator's source text.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mult => "*",
            BinOp::MatMult => "@",
            BinOp::Div => "/",
            BinOp::Mod => "%",
            BinOp::Pow => "**",
            BinOp::LShift => "<<",
            BinOp::RShift => ">>",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::BitAnd => "&",
            BinOp::FloorDiv => "//",
        }
    }
}

/// Boolean operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoolOp {
    /// `and`
    And,
    /// `or`
    Or,
}

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    /// `==`
    Eq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtE,
    /// `>`
    Gt,
    /// `>=`
    GtE,
    /// `is`
    Is,
    /// `is not`
    IsNot,
    /// `in`
    In,
    /// `not in`
    NotIn,
}

impl CmpOp {
    /// The operator's source text.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtE => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtE => ">=",
            CmpOp::Is => "is",
            CmpOp::IsNot => "is not",
            CmpOp::In => "in",
            CmpOp::NotIn => "not in",
        }
    }
}

/// A keyword argument (`ast.keyword`); `arg` is `None` for `**mapping`.
#[derive(Debug, Clone, PartialEq)]
pub struct Keyword {
    /// The keyword name, `None` for `**`.
    pub arg: Option<String>,
    /// The argument expression.
    pub value: Expr,
}

/// One `for ... in ... if ...` clause.
#[derive(Debug, Clone, PartialEq)]
pub struct Comprehension {
    /// The loop target.
    pub target: Expr,
    /// The iterated expression.
    pub iter: Expr,
    /// The `if` filters.
    pub ifs: Vec<Expr>,
    /// `async for`.
    pub is_async: bool,
}

/// A lambda's parameter list (`ast.arguments`, without annotations: lambdas have none).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Arguments {
    /// Positional-only parameters (before `/`).
    pub posonly: Vec<String>,
    /// Ordinary parameters.
    pub args: Vec<String>,
    /// Defaults of the last `defaults.len()` of `posonly + args`.
    pub defaults: Vec<Expr>,
    /// `*name`.
    pub vararg: Option<String>,
    /// Keyword-only parameters with their optional defaults.
    pub kwonly: Vec<(String, Option<Expr>)>,
    /// `**name`.
    pub kwarg: Option<String>,
}

/// One piece of an f-string.
#[derive(Debug, Clone, PartialEq)]
pub enum FPart {
    /// Literal text (a `Constant` in CPython's tree).
    Literal(String),
    /// A replacement field (`ast.FormattedValue`).
    Field(Box<FormattedValue>),
}

/// A replacement field `{value!conversion:format_spec}`.
#[derive(Debug, Clone, PartialEq)]
pub struct FormattedValue {
    /// The expression.
    pub value: Expr,
    /// `s`, `r` or `a` (implicitly `r` for a `{x=}` field without spec or conversion).
    pub conversion: Option<char>,
    /// The format spec, itself an f-string body.
    pub format_spec: Option<Vec<FPart>>,
}

/// An expression node.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal; `kind_u` is CPython's `kind == "u"` (first string piece had a `u` prefix).
    Constant {
        /// The value.
        value: Constant,
        /// Whether the literal was written with a `u` prefix.
        kind_u: bool,
    },
    /// An f-string (`ast.JoinedStr`): literal pieces and replacement fields.
    JoinedStr(Vec<FPart>),
    /// A name.
    Name(String),
    /// `value.attr`.
    Attribute(Box<Expr>, String),
    /// `value[slice]`.
    Subscript(Box<Expr>, Box<Expr>),
    /// `lower:upper:step`.
    Slice(Option<Box<Expr>>, Option<Box<Expr>>, Option<Box<Expr>>),
    /// `*value`.
    Starred(Box<Expr>),
    /// A call.
    Call {
        /// The callee.
        func: Box<Expr>,
        /// Positional arguments (including `*iterable`).
        args: Vec<Expr>,
        /// Keyword arguments (including `**mapping`).
        keywords: Vec<Keyword>,
    },
    /// A unary operation.
    UnaryOp(UnaryOp, Box<Expr>),
    /// A binary operation.
    BinOp(Box<Expr>, BinOp, Box<Expr>),
    /// `a and b and ...` / `a or b or ...`.
    BoolOp(BoolOp, Vec<Expr>),
    /// A (possibly chained) comparison.
    Compare(Box<Expr>, Vec<(CmpOp, Expr)>),
    /// `body if test else orelse`.
    IfExp {
        /// The condition.
        test: Box<Expr>,
        /// The value when true.
        body: Box<Expr>,
        /// The value when false.
        orelse: Box<Expr>,
    },
    /// `lambda args: body`.
    Lambda(Box<Arguments>, Box<Expr>),
    /// `target := value`.
    NamedExpr(Box<Expr>, Box<Expr>),
    /// A list display.
    List(Vec<Expr>),
    /// A tuple.
    Tuple(Vec<Expr>),
    /// A set display.
    Set(Vec<Expr>),
    /// A dict display; a `None` key is `**mapping`.
    Dict(Vec<(Option<Expr>, Expr)>),
    /// `[elt for ...]`.
    ListComp(Box<Expr>, Vec<Comprehension>),
    /// `{elt for ...}`.
    SetComp(Box<Expr>, Vec<Comprehension>),
    /// `(elt for ...)`.
    GeneratorExp(Box<Expr>, Vec<Comprehension>),
    /// `{key: value for ...}`.
    DictComp(Box<Expr>, Box<Expr>, Vec<Comprehension>),
    /// `await value`.
    Await(Box<Expr>),
    /// `yield [value]`.
    Yield(Option<Box<Expr>>),
    /// `yield from value`.
    YieldFrom(Box<Expr>),
}

impl Expr {
    /// A constant node without a `u` prefix.
    pub fn constant(value: Constant) -> Expr {
        Expr::Constant {
            value,
            kind_u: false,
        }
    }
}
