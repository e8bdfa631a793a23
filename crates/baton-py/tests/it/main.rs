//! Integration tests for baton-py: CPython 3.11 side by side, and agreement with baton-bleu's
//! own copy of the whitespace rules.

mod bleu;
mod cpython;
