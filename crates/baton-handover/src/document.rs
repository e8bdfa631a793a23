//! A handoff document: its header (in both readings) and its body.

use crate::body::Body;
use crate::header::{self, Header};
use crate::structure::Rubric;

/// A parsed handoff document. Parsing never fails: what cannot be read is reported by the
/// rubric as findings.
#[derive(Debug, Clone)]
pub struct Document {
    /// The text as read.
    pub text: String,
    /// The front matter by baton's reading ([`header::baton`]), when the document opens with
    /// a closed `---` block.
    pub header: Option<Header>,
    /// The front matter as Handover 0.4.1 reads it ([`header::flat`]).
    pub flat: Option<Header>,
    /// The markdown after the header.
    pub body: Body,
}

impl Document {
    /// Parse a document.
    pub fn parse(text: &str) -> Document {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let body_line = header::body_line(text);
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
            header: header::baton(text),
            flat: header::flat(text),
            body: Body::parse(body_text, body_line),
        }
    }

    /// The header as `rubric` reads it.
    pub fn header_for(&self, rubric: Rubric) -> Option<&Header> {
        match rubric {
            Rubric::Baton => self.header.as_ref(),
            Rubric::Handover04 => self.flat.as_ref(),
        }
    }

    /// The trimmed, non-null text of a header key, by baton's reading.
    pub fn field(&self, key: &str) -> Option<&str> {
        self.header.as_ref().and_then(|h| h.text(key))
    }
}
