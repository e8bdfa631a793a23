//! The crate's error type.

use crate::value::Raise;

/// Why an answer could not be decoded or checked.
///
/// Every variant corresponds to a place where LiC's Python code raises (and so scores 0),
/// except [`BfclError::NotReproduced`], which marks the few constructs this crate refuses
/// rather than imitate (they also score 0; see the crate docs).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BfclError {
    /// `ast.parse(..., mode="eval")` would raise `SyntaxError` / `IndentationError`.
    #[error("invalid python syntax at offset {offset}: {message}")]
    Syntax {
        /// Character offset in the cleaned input.
        offset: usize,
        /// What is wrong.
        message: String,
    },
    /// A Python exception LiC's evaluator lets escape (`KeyError`, `TypeError`, ...).
    #[error("upstream raises {kind}: {message}")]
    Raise {
        /// The Python exception class.
        kind: &'static str,
        /// The exception message.
        message: String,
    },
    /// A construct whose upstream result this crate does not compute.
    #[error("construct not reproduced: {what}")]
    NotReproduced {
        /// The construct.
        what: String,
    },
    /// The sample lacks a key LiC reads, or holds the wrong JSON type there.
    #[error("malformed sample: key {key:?}: {message}")]
    MalformedSample {
        /// The sample key.
        key: String,
        /// What is wrong with it.
        message: String,
    },
}

impl BfclError {
    /// A syntax error at `offset`.
    pub(crate) fn syntax(offset: usize, message: impl Into<String>) -> Self {
        BfclError::Syntax {
            offset,
            message: message.into(),
        }
    }

    /// A construct this crate does not reproduce.
    pub(crate) fn not_reproduced(what: impl Into<String>) -> Self {
        BfclError::NotReproduced { what: what.into() }
    }
}

impl From<Raise> for BfclError {
    fn from(r: Raise) -> Self {
        BfclError::Raise {
            kind: r.kind,
            message: r.message,
        }
    }
}
