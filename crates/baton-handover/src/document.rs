//! A handoff document: its header and its body.

use crate::body::Body;
use crate::header::{self, Header};

/// A parsed handoff document. Parsing never fails: what cannot be read is reported by the
/// rubric as findings.
#[derive(Debug, Clone)]
pub struct Document {
    /// The text as read.
    pub text: String,
    /// The front matter, when the document opens with a closed `---` block.
    pub header: Option<Header>,
    /// The markdown after the header.
    pub body: Body,
}

impl Document {
    /// Parse a document.
    pub fn parse(text: &str) -> Document {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let (header, body_line) = header::split(text);
        let body_text = if body_line == 1 {
            text
        } else {
            let mut rest = text;
            for _ in 1..body_line {
                rest = rest.split_once('\n').map_or("", |(_, r)| r);
            }
            rest
        };
        Document {
            text: text.to_string(),
            header,
            body: Body::parse(body_text, body_line),
        }
    }

    /// The trimmed, non-null text of a header key.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.header.as_ref().and_then(|h| h.text(key))
    }
}
