//! Handoff documents: parse, score, verify.
#![deny(missing_docs)]

pub mod body;
pub mod check;
pub mod claims;
pub mod cues;
pub mod document;
pub mod header;
pub mod rubric;
pub mod structure;

pub use document::Document;
pub use structure::{Finding, Rubric, Severity, Structure, Subscores};
