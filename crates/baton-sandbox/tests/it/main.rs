//! Integration tests: the sandbox runtime, hostile programs, and LiC conformance.
//!
//! They need the runtime; when it is not built yet, the first test builds it (python3 with
//! venv and access to PyPI), which takes about a minute.
#![allow(clippy::print_stderr)]

mod build;
mod common;
mod conformance;
mod hostile;
mod kept;
mod limits;
mod sandbox;
mod semantics;
