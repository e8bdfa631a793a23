//! LiC's actions evaluator: the BFCL v3 `ast_parse` + `ast_checker` pair that *Lost in
//! Conversation* uses to score function-calling answers, reproduced bit for bit.
//!
//! What it is for: turning a final assistant response such as
//! `[spotify.play(artist='Taylor Swift', duration=20), ...]` and a LiC actions sample
//! (`function`, `reference_answer`, `language`, `test_category`) into a
//! [`baton_types::Verdict`] that agrees with LiC's `TaskActions.evaluator_function`:
//! same score, same `is_correct`, including the quirks (greedy parallel matching, strict
//! `type(x) == T` checks, any unary operator negating its operand, newlines turned into
//! spaces before parsing, `strip("[]'")`, ...). What it is not for: executing calls, BFCL's
//! executable or multi-turn categories, or the Java/JavaScript branches LiC never reaches.
//!
//! Main items: [`evaluate_response`] (the evaluator), [`parse_calls`] (LiC's `ast_parse`),
//! [`Call`] and [`Value`] (the decoded calls and the Python value model), [`BfclError`].
//!
//! ```
//! use serde_json::json;
//! let sample = json!({
//!     "function": [{"name": "calc_area", "parameters": {"type": "dict",
//!         "properties": {"base": {"type": "float"}, "unit": {"type": "string"}},
//!         "required": ["base"]}}],
//!     "reference_answer": [{"calc_area": {"base": [10.0], "unit": ["cm", ""]}}],
//!     "language": "Python",
//!     "test_category": "parallel",
//! });
//! let verdict = baton_bfcl::evaluate_response("[calc_area(base=10, unit='CM')]", &sample);
//! assert_eq!((verdict.score, verdict.is_correct), (1.0, Some(true)));
//! ```
//!
//! # Why a hand-written Python parser
//!
//! Upstream decodes the answer with CPython's `ast.parse(..., mode="eval")`, converts
//! argument nodes with its own `resolve_ast_by_type` (which `eval`s arithmetic and turns
//! keyword-less calls and subscripts back into `ast.unparse` text), then compares Python
//! objects with Python `==` and `type()`. Embedding an interpreter would bring a heavy
//! dependency into every build for one evaluator, and no Rust crate reproduces
//! `ast.unparse`, CPython's acceptance rules and LiC's resolution quirks together. The
//! grammar involved is only the expression subset of Python, so this crate carries a small
//! tokenizer (`lexer`), a PEG-faithful expression parser (`parser`), `ast.unparse`
//! (`unparse`), an evaluator for arithmetic (`eval`) and a value model with Python
//! semantics ([`value`]). These were checked differentially against CPython 3.11 running
//! LiC's code (parse acceptance, `ast.unparse` text, resolved values and final verdicts on
//! some 150,000 generated inputs) besides the conformance vectors.
//!
//! # Known limits (all score 0, reported as `not_reproduced`)
//!
//! Arithmetic that upstream could only evaluate through builtins, methods, f-string
//! formatting or `%`-formatting (`len(x) + 1`, `'a'.upper() + 'b'`, `f'{1}' + 'x'`) is
//! refused rather than imitated; with no user variables in scope, such a value upstream
//! is almost always an error as well. `repr`, `isprintable`, whitespace and case follow
//! CPython 3.11 exactly (`baton-py`), but identifier characters and character names
//! (`\N{...}`) come from current Unicode data rather than CPython 3.11's 14.0, and a lone
//! surrogate escape decodes to U+FFFD.
//!
//! # Bounds on hostile answers
//!
//! Every answer ends in a verdict in bounded time and memory, on any caller's thread:
//!
//! - Nesting and depth follow CPython 3.11, so what they refuse scores 0 upstream too:
//!   the parser's recursion ([`MAX_NESTING`], weighted like CPython's parser levels), the
//!   depth of the tree ([`MAX_AST_DEPTH`], CPython's AST construction limit, tracked node
//!   by node so that a left-deep chain `1+1+…` never grows past it), `ast.unparse` and
//!   `eval` ([`MAX_UNPARSE_DEPTH`], Python's recursion limit), bracket nesting (200) and
//!   decimal literals and reprs of more than 4300 digits.
//! - The public entry points run on their own thread with a [`STACK_SIZE`] stack, eight
//!   times what the deepest accepted input was measured to need in a release build
//!   (five times, in a debug build).
//! - Sizes CPython does not bound are bounded here and score 0 as not reproduced: `int`
//!   results ([`MAX_INT_BITS`], for `*` as for `**` and `<<`), big divisions
//!   ([`MAX_DIVISION_WORK`]), sequences and strings built by operators ([`MAX_WEIGHT`]),
//!   dict and set lookups ([`MAX_LOOKUP_STEPS`]) and answers of more than [`MAX_TOKENS`]
//!   tokens. A BFCL reference is a few dozen tokens of JSON, so no answer past these
//!   bounds could match one upstream.
//!
//! # Errors in verdicts
//!
//! A failing [`Verdict`] carries BFCL's `error_type` of the check that failed
//! (`parallel_function_checker_no_order:cannot_find_match`, `type_error:simple`,
//! `value_error:string`, `simple_function_checker:missing_required`, ...) with the
//! checker's messages in `details`, or one of [`DECODER_FAILED`], [`CHECKER_RAISED`],
//! [`NOT_REPRODUCED`] and [`MALFORMED_SAMPLE`]`:<key>`.

#![deny(missing_docs)]

pub mod ast;
mod checker;
mod decode;
mod error;
mod eval;
mod fast;
mod fstring;
mod lexer;
mod object;
mod parser;
mod unparse;
pub mod value;

use baton_types::Verdict;

pub use checker::{CheckResult, ast_checker};
pub use decode::{Call, pre_strip};
pub use error::BfclError;
pub use eval::{MAX_DIVISION_WORK, MAX_INT_BITS, MAX_WEIGHT};
pub use lexer::MAX_TOKENS;
pub use parser::{MAX_AST_DEPTH, MAX_NESTING};
pub use unparse::{MAX_UNPARSE_DEPTH, unparse};
pub use value::{MAX_LOOKUP_STEPS, PyType, Value};

/// Stack of the thread every entry point that reads model text runs on.
///
/// The parser recurses at most [`MAX_NESTING`] levels, the tree it builds is at most
/// [`MAX_AST_DEPTH`] deep, and evaluation, `unparse` and the checker recurse at most
/// [`MAX_UNPARSE_DEPTH`] levels. The deepest inputs these limits let through (a chain of
/// 6000 conditional expressions, 3000 `lambda`s, 199 brackets around 300 unary operators,
/// …) were measured to need at most 12 MiB of stack in a debug build and 3 MiB in a
/// release build; the `deepest_inputs_fit_in_a_quarter_of_the_stack` test runs them all on
/// 16 MiB.
pub const STACK_SIZE: usize = 64 << 20;

thread_local! {
    /// Set on threads started by [`spawn_big_stack_thread`], whose stack is [`STACK_SIZE`].
    static BIG_STACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Start a thread with a [`STACK_SIZE`] stack on which every entry point of this crate
/// (and `baton-eval`'s scoring) runs inline, without starting a thread of its own.
///
/// Starting a thread per answer costs a `clone`, an `mmap` and `munmap` of the whole
/// stack (glibc caches no stack this large) and the page faults of a fresh stack: some
/// tens of microseconds, more than scoring most answers. A caller that scores many
/// answers (`baton score`, a run's scoring pool) starts its workers here once.
pub fn spawn_big_stack_thread<F, T>(
    name: String,
    f: F,
) -> std::io::Result<std::thread::JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    std::thread::Builder::new()
        .name(name)
        .stack_size(STACK_SIZE)
        .spawn(move || {
            BIG_STACK.set(true);
            f()
        })
}

/// Whether the current thread was started by [`spawn_big_stack_thread`].
pub fn on_big_stack_thread() -> bool {
    BIG_STACK.get()
}

/// Run `f` with a [`STACK_SIZE`] stack: inline on a thread started by
/// [`spawn_big_stack_thread`], otherwise on a fresh thread, so that no caller's stack (a
/// 2 MiB tokio or rayon worker) limits how deep the bounded recursion may go. If no thread
/// can be started, `f` runs on the caller's thread.
fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if on_big_stack_thread() {
        return f();
    }
    let mut job = Some(f);
    let spawned = std::thread::scope(|scope| {
        let slot = &mut job;
        let handle = std::thread::Builder::new()
            .name("baton-bfcl".into())
            .stack_size(STACK_SIZE)
            .spawn_scoped(scope, move || slot.take().map(|f| f()));
        match handle {
            Ok(handle) => Some(
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            ),
            Err(_) => None,
        }
    });
    match (spawned.flatten(), job) {
        (Some(out), _) => out,
        (None, Some(f)) => f(),
        (None, None) => unreachable!("the job ran but returned nothing"),
    }
}

/// `ast_parse(input, "Python")`: decode a response into its calls (LiC's `ast_parse`).
///
/// ```
/// let calls = baton_bfcl::parse_calls("[f(a=1, b='x'), g.h(c=[2])]").unwrap();
/// assert_eq!(calls.len(), 2);
/// assert_eq!(calls[1].name, "g.h");
/// ```
pub fn parse_calls(input: &str) -> Result<Vec<Call>, BfclError> {
    on_big_stack(|| decode::parse_calls(input))
}

/// Parse `src` as `ast.parse(src, mode="eval").body`.
pub fn parse_eval(src: &str) -> Result<ast::Expr, BfclError> {
    on_big_stack(|| parser::parse_eval(src))
}

/// The `error` of a verdict whose answer failed to decode (LiC returns no score then).
pub const DECODER_FAILED: &str = "ast_decoder:decoder_failed";
/// The `error` of a verdict where LiC's checker raises (an upstream crash, scored 0).
pub const CHECKER_RAISED: &str = "ast_checker:raised";
/// The `error` of a verdict where this crate declines to imitate upstream.
pub const NOT_REPRODUCED: &str = "not_reproduced";
/// The `error` prefix of a verdict for a sample missing a key LiC reads.
pub const MALFORMED_SAMPLE: &str = "malformed_sample";

/// The `details` of a verdict whose answer raised upstream.
static RAISED: object::Object<2> = object::Object::new(["exception", "message"]);
/// The `details` of a verdict refused for any other reason.
static REFUSED: object::Object<1> = object::Object::new(["message"]);
/// The `details` of a verdict the checker failed.
static CHECKED: object::Object<2> = object::Object::new(["error_type", "errors"]);

fn error_details(e: &BfclError) -> serde_json::Value {
    match e {
        BfclError::Raise { kind, message } => RAISED.with([(*kind).into(), message.clone().into()]),
        other => REFUSED.with([other.to_string().into()]),
    }
}

/// The four keys LiC reads of a sample, in the order they are checked.
const SAMPLE_KEYS: [&str; 4] = ["function", "reference_answer", "language", "test_category"];

/// The sample's values of [`SAMPLE_KEYS`] (each `None` where missing), found in one pass
/// over a sample of a few keys (comparing them takes less time than hashing each key), and
/// by hash in a sample of more than 16 keys.
fn sample_values(sample: &serde_json::Value) -> [Option<&serde_json::Value>; 4] {
    let mut found = [None; 4];
    match sample {
        serde_json::Value::Object(map) if map.len() <= 16 => {
            for (k, v) in map {
                let slot = match k.as_str() {
                    "function" => 0,
                    "reference_answer" => 1,
                    "language" => 2,
                    "test_category" => 3,
                    _ => continue,
                };
                found[slot] = Some(v);
            }
        }
        other => {
            for (slot, key) in found.iter_mut().zip(SAMPLE_KEYS) {
                *slot = other.get(key);
            }
        }
    }
    found
}

/// One of the sample's values, checked to be an array (or else a string).
fn sample_field<'a>(
    found: Option<&'a serde_json::Value>,
    key: &str,
    want_array: bool,
) -> Result<&'a serde_json::Value, BfclError> {
    let value = found.ok_or_else(|| BfclError::MalformedSample {
        key: key.into(),
        message: "missing".into(),
    })?;
    let type_ok = if want_array {
        value.is_array()
    } else {
        value.is_string()
    };
    if !type_ok {
        return Err(BfclError::MalformedSample {
            key: key.into(),
            message: format!(
                "expected a JSON {}",
                if want_array { "array" } else { "string" }
            ),
        });
    }
    Ok(value)
}

/// Score one response against one LiC actions sample, as `TaskActions.evaluator_function`
/// does after the `full_response` (identity) extraction.
///
/// `score` is 1.0 or 0.0 and `is_correct` is always `Some`. On failure `error` holds a
/// BFCL-style reason (`parallel_function_checker_no_order:cannot_find_match`,
/// `type_error:simple`, [`DECODER_FAILED`], [`CHECKER_RAISED`], ...) and `details` the
/// checker's messages.
pub fn evaluate_response(response: &str, sample: &serde_json::Value) -> Verdict {
    on_big_stack(|| evaluate(response, sample))
}

fn evaluate(response: &str, sample: &serde_json::Value) -> Verdict {
    let budget = value::LookupBudget::start();
    let [function, reference, language, category] = sample_values(sample);
    let fields = (|| {
        Ok::<_, BfclError>((
            sample_field(function, SAMPLE_KEYS[0], true)?,
            sample_field(reference, SAMPLE_KEYS[1], true)?,
            sample_field(language, SAMPLE_KEYS[2], false)?,
            sample_field(category, SAMPLE_KEYS[3], false)?,
        ))
    })();
    let (function, reference, language, category) = match fields {
        Ok(f) => f,
        Err(e) => {
            let key = match &e {
                BfclError::MalformedSample { key, .. } => key.clone(),
                _ => String::new(),
            };
            return Verdict::fail(Some(false), format!("{MALFORMED_SAMPLE}:{key}"))
                .with_details(error_details(&e));
        }
    };

    // The decoded calls borrow their names and strings from the pre-stripped answer.
    let stripped;
    let decoded = if language.as_str() == Some("Python") {
        // `pre_stripped` strips first, as LiC's `strip()` before `ast_parse` does.
        stripped = decode::pre_stripped(response);
        decode::parse_parts(&stripped)
    } else {
        Err(BfclError::from(value::Raise::new(
            "NotImplementedError",
            format!("Unsupported language: {language}"),
        )))
    };
    let outputs = match decoded {
        Ok(outputs) => outputs,
        Err(e) => {
            let error = match e {
                BfclError::NotReproduced { .. } => NOT_REPRODUCED,
                _ => DECODER_FAILED,
            };
            return Verdict::fail(Some(false), error).with_details(error_details(&e));
        }
    };

    // `category` was checked to be a JSON string.
    let category = category.as_str().unwrap_or_default();
    let checked = checker::ast_checker_for(function, &outputs, reference, category);
    let checked = if budget.exhausted() {
        Err(value::budget_error())
    } else {
        checked
    };
    match checked {
        Ok(result) if result.valid => Verdict::new(1.0, Some(true)),
        Ok(result) => {
            // Built in place: json! would serialize the errors to copy them.
            let details = CHECKED.with([result.error_type.into(), result.errors.into()]);
            Verdict::fail(Some(false), result.error_type).with_details(details)
        }
        Err(e) => {
            let error = match e {
                BfclError::NotReproduced { .. } => NOT_REPRODUCED,
                _ => CHECKER_RAISED,
            };
            Verdict::fail(Some(false), error).with_details(error_details(&e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The deepest inputs the limits let through, and the shallowest they refuse.
    fn deepest_inputs() -> Vec<(String, f64)> {
        let n = MAX_NESTING - 2;
        vec![
            (format!("f(x={}1)", "-".repeat(n)), 0.0),
            (format!("f(x={}1)", "not ".repeat(n)), 0.0),
            (format!("f(x={}1)", "~".repeat(n)), 0.0),
            (format!("f(x={}1)", "lambda: ".repeat(n / 2)), 0.0),
            (format!("f(x={}1)", "1 if 1 else ".repeat(n)), 0.0),
            (format!("f(x={}1)", "2**".repeat(n / 2)), 0.0),
            (
                format!(
                    "f({}{}1{}, x=1)",
                    "[".repeat(199),
                    "-".repeat(300),
                    "]".repeat(199)
                ),
                1.0,
            ),
            (
                format!(
                    "f({}{}1{}, x=1)",
                    "(".repeat(199),
                    "-".repeat(300),
                    ")".repeat(199)
                ),
                1.0,
            ),
            (
                format!(
                    "f({}{}1{}, x=1)",
                    "(".repeat(199),
                    "-".repeat(600),
                    ")".repeat(199)
                ),
                0.0,
            ),
            // Expression, Call, n UnaryOps, Constant: n + 3 levels.
            (format!("f({}1, x=1)", "-".repeat(MAX_AST_DEPTH - 3)), 1.0),
            (format!("f({}1, x=1)", "-".repeat(MAX_AST_DEPTH - 2)), 0.0),
            (
                format!("f({}, x=1)", vec!["1"; MAX_AST_DEPTH - 2].join("+")),
                1.0,
            ),
            (
                format!("f({}, x=1)", vec!["1"; MAX_AST_DEPTH - 1].join("+")),
                0.0,
            ),
            (format!("f(a{}, x=1)", ".b".repeat(MAX_AST_DEPTH - 3)), 1.0),
            (format!("f(a{}, x=1)", "[0]".repeat(MAX_AST_DEPTH)), 0.0),
            (format!("f(x={}1)", "1+".repeat(MAX_UNPARSE_DEPTH - 2)), 0.0),
            (
                format!(
                    "f(x=1, y=f'''{{f\"\"\"{{f'{{f\"{{{}1}}\"}}'}}\"\"\"}}''')",
                    "-".repeat(n - 10)
                ),
                0.0,
            ),
            (
                format!(
                    "f(x=1, y=f'''{{f\"\"\"{{f'{{f\"{{{}1}}\"}}'}}\"\"\"}}''')",
                    "-".repeat(100)
                ),
                0.0,
            ),
        ]
    }

    #[test]
    #[ignore]
    fn stack_per_case() {
        let sample = json!({"function": [], "reference_answer": [], "language": "Python", "test_category": "simple"});
        for (input, _) in deepest_inputs() {
            let sample = sample.clone();
            let used = std::thread::Builder::new()
                .stack_size(STACK_SIZE)
                .spawn(move || {
                    let top = parser::stack_probe::here();
                    let _ = evaluate(&input, &sample);
                    (
                        input[..30].to_string(),
                        top.saturating_sub(parser::stack_probe::lowest()),
                    )
                })
                .unwrap()
                .join()
                .unwrap();
            let _ =
                std::io::Write::write_all(&mut std::io::stderr(), format!("{used:?}\n").as_bytes());
        }
    }

    #[test]
    fn deepest_inputs_fit_in_a_quarter_of_the_stack() {
        let sample = json!({
            "function": [{"name": "f", "parameters": {"type": "dict",
                "properties": {"x": {"type": "integer"}}, "required": ["x"]}}],
            "reference_answer": [{"f": {"x": [1]}}],
            "language": "Python",
            "test_category": "simple",
        });
        let cases = deepest_inputs();
        let used = std::thread::Builder::new()
            .stack_size(STACK_SIZE / 4)
            .spawn(move || {
                let top = parser::stack_probe::here();
                for (input, want) in &cases {
                    let v = evaluate(input, &sample);
                    assert_eq!(v.score, *want, "{}…: {:?}", &input[..40], v.error);
                }
                top.saturating_sub(parser::stack_probe::lowest())
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(used < STACK_SIZE / 4, "{used} bytes");
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("deepest inputs used {} KiB of stack\n", used >> 10).as_bytes(),
        );
    }

    fn spotify(category: &str) -> serde_json::Value {
        json!({
            "function": [{"name": "spotify.play", "description": "Play songs.",
                "parameters": {"type": "dict", "properties": {
                    "artist": {"type": "string"}, "duration": {"type": "integer"}},
                    "required": ["artist", "duration"]}}],
            "reference_answer": [
                {"spotify.play": {"artist": ["Taylor Swift"], "duration": [20]}},
                {"spotify.play": {"artist": ["Maroon 5"], "duration": [15]}}],
            "language": "Python",
            "test_category": category,
        })
    }

    fn score(response: &str, sample: &serde_json::Value) -> f64 {
        let v = evaluate_response(response, sample);
        assert_eq!(v.is_correct, Some(v.score == 1.0));
        v.score
    }

    #[test]
    fn spec_vectors_for_spotify() {
        let s = spotify("parallel");
        let cases = [
            (
                "[spotify.play(artist='Maroon 5', duration=15), spotify.play(artist='taylor swift', duration=20)]",
                1.0,
            ),
            (
                "```python\n[spotify.play(artist=\"Taylor Swift\", duration=20), spotify.play(artist=\"Maroon 5\", duration=15)]\n```",
                1.0,
            ),
            (
                "[spotify.play(artist='Taylor Swift', duration=20.0), spotify.play(artist='Maroon 5', duration=15)]",
                0.0,
            ),
            (
                "[spotify.play(artist='Taylor Swift', duration=True), spotify.play(artist='Maroon 5', duration=15)]",
                0.0,
            ),
            (
                "[spotify.play(artist='Taylor Swift', duration=4*5), spotify.play(artist='Maroon 5', duration=15)]",
                1.0,
            ),
            ("[spotify.play(artist='Taylor Swift', duration=20)]", 0.0),
            (
                "[spotify.play('Taylor Swift', 20), spotify.play('Maroon 5', 15)]",
                0.0,
            ),
            (
                "Sure! [spotify.play(artist='Taylor Swift', duration=20), spotify.play(artist='Maroon 5', duration=15)]",
                0.0,
            ),
            (
                "[spotify_play(artist='Taylor Swift', duration=20), spotify_play(artist='Maroon 5', duration=15)]",
                0.0,
            ),
            (
                "spotify.play(artist='Taylor-Swift', duration=20), spotify.play(artist='Maroon5', duration=15)",
                1.0,
            ),
            (
                "[\n  spotify.play(artist='Taylor Swift', duration=20),\n  spotify.play(artist='Maroon 5', duration=15)\n]",
                0.0,
            ),
            (
                "{spotify.play(artist='Taylor Swift', duration=20), spotify.play(artist='Maroon 5', duration=15)}",
                1.0,
            ),
        ];
        for (response, want) in cases {
            assert_eq!(score(response, &s), want, "{response}");
        }
    }

    #[test]
    fn float_promotion_and_optional_markers() {
        let sample = json!({
            "function": [{"name": "calc_area", "parameters": {"type": "dict", "properties": {
                "base": {"type": "float"}, "height": {"type": "float"},
                "unit": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["base", "height"]}}],
            "reference_answer": [{"calc_area": {"base": [10.0], "height": [5.0],
                "unit": ["cm", ""], "tags": [["a", "b"], ""]}}],
            "language": "Python",
            "test_category": "parallel",
        });
        assert_eq!(
            score("calc_area(base=10, height=5, unit='CM')", &sample),
            1.0
        );
        assert_eq!(score("calc_area(base=-10, height=5)", &sample), 0.0);
        assert_eq!(
            score("calc_area(base=10, height=5, tags=['A','b'])", &sample),
            1.0
        );
        assert_eq!(
            score("calc_area(base=10, height=5, tags=['b','a'])", &sample),
            0.0
        );
        assert_eq!(score("calc_area(base=10, height=5, tags=[])", &sample), 1.0);
        assert_eq!(
            score("calc_area(base=10, height=5, unit=...)", &sample),
            1.0
        );
    }

    #[test]
    fn greedy_matching_and_dispatch() {
        let sample = json!({
            "function": [{"name": "f", "parameters": {"type": "dict",
                "properties": {"x": {"type": "integer"}}, "required": []}}],
            "reference_answer": [{"f": {"x": [1, 2]}}, {"f": {"x": [1]}}],
            "language": "Python",
            "test_category": "parallel",
        });
        assert_eq!(score("[f(x=1), f(x=2)]", &sample), 0.0);
        assert_eq!(score("[f(x=2), f(x=1)]", &sample), 1.0);
        let mut multiple = sample.clone();
        multiple["test_category"] = json!("multiple");
        assert_eq!(score("[f(x=2), f(x=99)]", &multiple), 1.0);
        let mut simple = sample.clone();
        simple["test_category"] = json!("simple");
        assert_eq!(score("[f(x=2), f(x=1)]", &simple), 0.0);
        let mut java = sample;
        java["language"] = json!("python");
        assert_eq!(
            evaluate_response("[f(x=2), f(x=1)]", &java)
                .error
                .as_deref(),
            Some(DECODER_FAILED)
        );
    }

    #[test]
    fn upstream_raises_and_malformed_samples() {
        let sample = json!({
            "function": [{"name": "f", "parameters": {"type": "dict",
                "properties": {"x": {"type": "number"}}, "required": []}}],
            "reference_answer": [{"f": {"x": [1]}}],
            "language": "Python",
            "test_category": "parallel",
        });
        let v = evaluate_response("f(x=1)", &sample);
        assert_eq!((v.score, v.is_correct), (0.0, Some(false)));
        assert_eq!(v.error.as_deref(), Some(CHECKER_RAISED));
        let mut undocumented = sample.clone();
        undocumented["reference_answer"] = json!([{"g": {"x": [1]}}]);
        assert_eq!(
            evaluate_response("f(x=1)", &undocumented).error.as_deref(),
            Some(CHECKER_RAISED)
        );
        let mut missing = sample;
        missing
            .as_object_mut()
            .map(|m| m.remove("reference_answer"));
        let v = evaluate_response("f(x=1)", &missing);
        assert_eq!(
            v.error.as_deref(),
            Some("malformed_sample:reference_answer")
        );
        assert_eq!(v.score, 0.0);
    }
}
