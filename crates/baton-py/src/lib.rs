//! CPython 3.11 compatibility: the few Python string and number rules that baton's evaluators
//! and prompts must reproduce exactly, written once.
//!
//! Lost in Conversation is Python. Its actions system prompt is `str()` of a list of dicts, the
//! BFCL checker compares `repr`s and unparsed source, Spider sorts result rows by
//! `str(v) + str(type(v))`, and every evaluator strips, splits or lowercases with Python's
//! Unicode rules. Where Rust's standard library disagrees with CPython (a float tie, U+001C,
//! an unassigned code point, a case pair added in Unicode 16), a verdict or a prompt would
//! differ by a byte. This crate holds those rules; `baton-data`, `baton-bfcl`, `baton-spider`,
//! `baton-eval` and `baton-sandbox` use it.
//!
//! # What it covers
//!
//! - `repr`: [`str_repr`], [`bytes_repr`], [`float_repr`] (shortest round-trip, ties to even),
//!   [`complex_repr`], the `unicode_escape` codec ([`unicode_escape`]) and, with the `json`
//!   feature, `json_repr` for the object `json.loads` builds from a `serde_json::Value`.
//! - `str.isprintable()` ([`is_printable`]) from CPython 3.11's table (Unicode 14.0.0), and
//!   whether Unicode 14.0 assigns a code point at all ([`is_assigned`]).
//! - `str.isspace()`, `strip()`, `rstrip()`, `split()` ([`is_space`], [`strip`], [`rstrip`],
//!   [`split`]), `lower()` and `upper()` ([`lower`], [`upper`]) with Unicode 14.0's case pairs,
//!   and `bytes.decode("utf-8", "ignore")` ([`decode_utf8_ignore`]).
//!
//! # What it is not
//!
//! Not a Python value model: each evaluator keeps its own (BFCL's literals with big ints and
//! tuples, Spider's SQLite row values, the sandbox's graded records) and builds its container
//! reprs from these pieces. Not `re`: the regular-expression character classes sqlparse relies
//! on stay in `baton-spider`. Not a tokenizer: identifier characters and f-string rules stay in
//! `baton-bfcl`. `baton-bleu` keeps its own copy of the whitespace set (it depends on no other
//! baton crate, and scans bytes); the tests here hold the two equal.
//!
//! # Why a hand port
//!
//! No crate does this: `Debug` for `f64` prints `1e16`, `{:e}` rounds ties up, `char` has no
//! `isprintable`, and Rust's case tables follow Unicode 17 where CPython 3.11 uses 14.0. The
//! printable table is generated from CPython 3.11 (see the `printable` module); everything else
//! is a few lines over `std`. The crate has no dependencies (the optional `json` feature adds
//! `serde_json`, the value type the dataset crates share).
//!
//! # How it was checked
//!
//! The integration test runs CPython 3.11 side by side (it needs `python3` or `python3.11` with
//! Unicode 14.0.0; without one it prints `SKIPPED`, and fails under
//! `BATON_REQUIRE_CONFORMANCE=1`): `repr` of every code point in strings of 128, of generated
//! strings mixing quotes, escapes and categories, of every byte and random byte strings; `repr`
//! of random bit patterns, every power of two, neighbours of powers of ten and generated ties;
//! `isprintable`, `isspace`, assignment, `lower` and `upper` of every code point and of final-sigma
//! contexts; `strip`, `rstrip`, `split`, `unicode_escape` and the UTF-8 decoder on generated
//! inputs; and `json_repr` of nested values. It also checks that [`is_space`] and [`strip`]
//! agree with `baton-bleu`'s on every code point.
//!
//! # Example
//!
//! ```
//! assert_eq!(baton_py::str_repr("naïve 'quote'\u{200b}"), r#""naïve 'quote'\u200b""#);
//! assert_eq!(baton_py::float_repr(0.1 + 0.2), "0.30000000000000004");
//! assert_eq!(baton_py::float_repr(1e-5), "1e-05");
//! assert_eq!(baton_py::strip("\u{1c} SELECT 1\n"), "SELECT 1");
//! assert_eq!(baton_py::lower("ΣΟΦΟΣ"), "σοφος");
//! ```
#![deny(missing_docs)]

mod float;
#[cfg(feature = "json")]
mod json;
mod printable;
mod repr;
mod text;

pub use float::{complex_repr, float_repr};
#[cfg(feature = "json")]
pub use json::json_repr;
pub use printable::{is_assigned, is_printable};
pub use repr::{bytes_repr, str_repr, unicode_escape};
pub use text::{decode_utf8_ignore, is_space, lower, rstrip, split, strip, upper};
