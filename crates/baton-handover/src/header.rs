//! The front matter: a YAML mapping between a first line `---` and the next `---`.
//!
//! The header is read with `saphyr-parser`'s event stream rather than a typed tree, because a
//! handoff header must keep the exact text of every scalar: `true_at_sha: 0012345` is a SHA, not
//! the integer 12345, and `verify_cmd: true` is the command `true`, not a boolean. Comments,
//! quoting and block scalars (`|`, `>`) follow YAML 1.2; a plain `null`, `~` or empty value is
//! null. Anything that is not a flat mapping of scalars is reported per key, with its line.

use saphyr_parser::{Event, Parser, ScalarStyle};

/// The parsed header of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Line of the opening `---` (always 1).
    pub open_line: usize,
    /// Line of the closing `---`.
    pub close_line: usize,
    /// The keys in document order, duplicates included.
    pub fields: Vec<Field>,
    /// The first YAML syntax error, with its line in the file; fields read before it are kept
    /// but must not be trusted.
    pub syntax_error: Option<(usize, String)>,
}

/// One `key: value` entry of the header.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The key.
    pub key: String,
    /// The value.
    pub value: Value,
    /// Line of the key in the file.
    pub line: usize,
}

/// A header value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A scalar: its text after YAML unquoting, and whether YAML reads it as null (a plain
    /// `null`, `~` or nothing).
    Scalar {
        /// The text (for a null, what was written: `null`, `~` or empty).
        text: String,
        /// Whether the scalar is a YAML null.
        null: bool,
    },
    /// A list or a mapping, which no header key accepts.
    Nested,
    /// An alias (`*name`), which no header key accepts.
    Alias,
}

impl Value {
    /// The text of a non-null scalar, trimmed.
    pub fn text(&self) -> Option<&str> {
        match self {
            Value::Scalar { text, null: false } => Some(text.trim()),
            _ => None,
        }
    }

    /// The text as a flat line-based reader (Handover 0.4.1) would see it: nulls keep their
    /// spelling, lists and mappings read as empty.
    pub fn raw(&self) -> &str {
        match self {
            Value::Scalar { text, .. } => text.trim(),
            _ => "",
        }
    }
}

impl Header {
    /// The last field with this key (YAML forbids duplicates; the rubric reports them).
    pub fn get(&self, key: &str) -> Option<&Field> {
        self.fields.iter().rev().find(|f| f.key == key)
    }

    /// The trimmed, non-null text of a key.
    pub fn text(&self, key: &str) -> Option<&str> {
        self.get(key)
            .and_then(|f| f.value.text())
            .filter(|t| !t.is_empty())
    }

    /// Line of a key, or of the opening fence when the key is absent.
    pub fn line_of(&self, key: &str) -> usize {
        self.get(key).map_or(self.open_line, |f| f.line)
    }
}

/// Split `text` into its front matter and body. Returns the header (when the document opens
/// with a closed `---` block) and the 1-based file line at which the body starts.
pub fn split(text: &str) -> (Option<Header>, usize) {
    let mut lines = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    if lines.next().map(str::trim) != Some("---") {
        return (None, 1);
    }
    let Some(close_index) = lines.position(|l| l.trim() == "---").map(|i| i + 1) else {
        // Never closed: no header; the whole text is body.
        return (None, 1);
    };
    let yaml: Vec<&str> = text
        .split('\n')
        .skip(1)
        .take(close_index - 1)
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let yaml = yaml.join("\n");
    let mut header = parse_yaml(&yaml, 1);
    header.close_line = close_index + 1;
    (Some(header), close_index + 2)
}

/// Parse the text between the fences; `offset` is the file line just before the first YAML line.
fn parse_yaml(yaml: &str, offset: usize) -> Header {
    let mut header = Header {
        open_line: 1,
        close_line: 0,
        fields: Vec::new(),
        syntax_error: None,
    };
    let mut reader = Reader {
        parser: Parser::new_from_str(yaml),
        offset,
    };
    if let Err((line, msg)) = reader.read_mapping(&mut header.fields) {
        header.syntax_error = Some((line, msg));
    }
    header
}

struct Reader<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    offset: usize,
}

type ReadResult<T> = Result<T, (usize, String)>;

impl<'a> Reader<'a> {
    fn next(&mut self) -> ReadResult<(Event<'a>, usize)> {
        match self.parser.next_event() {
            Some(Ok((event, span))) => Ok((event, span.start.line() + self.offset)),
            Some(Err(e)) => Err((e.marker().line() + self.offset, e.info().to_string())),
            None => Ok((Event::StreamEnd, self.offset)),
        }
    }

    fn read_mapping(&mut self, fields: &mut Vec<Field>) -> ReadResult<()> {
        loop {
            let (event, line) = self.next()?;
            match event {
                Event::StreamStart | Event::DocumentStart(_) | Event::Nothing => continue,
                Event::MappingStart(..) => break,
                Event::StreamEnd | Event::DocumentEnd => return Ok(()),
                Event::Scalar(text, ScalarStyle::Plain, ..) if text.trim().is_empty() => {
                    return Ok(());
                }
                _ => {
                    return Err((
                        line,
                        "the header is not a mapping of `key: value` lines".into(),
                    ));
                }
            }
        }
        loop {
            let (event, line) = self.next()?;
            let key = match event {
                Event::MappingEnd => return Ok(()),
                Event::Scalar(text, ..) => text.into_owned(),
                Event::SequenceStart(..) | Event::MappingStart(..) => {
                    self.skip_nested()?;
                    self.skip_value()?;
                    return Err((line, "a header key must be a plain word".into()));
                }
                _ => return Err((line, "a header key must be a plain word".into())),
            };
            let (event, _) = self.next()?;
            let value = match event {
                Event::Scalar(text, style, ..) => {
                    let null = style == ScalarStyle::Plain
                        && matches!(text.trim(), "" | "~" | "null" | "Null" | "NULL");
                    Value::Scalar {
                        text: text.into_owned(),
                        null,
                    }
                }
                Event::SequenceStart(..) | Event::MappingStart(..) => {
                    self.skip_nested()?;
                    Value::Nested
                }
                Event::Alias(_) => Value::Alias,
                other => return Err((line, format!("unexpected YAML event {other:?}"))),
            };
            fields.push(Field { key, value, line });
        }
    }

    /// Skip to the end of a list or mapping whose start was just read.
    fn skip_nested(&mut self) -> ReadResult<()> {
        let mut depth = 1usize;
        while depth > 0 {
            match self.next()?.0 {
                Event::SequenceStart(..) | Event::MappingStart(..) => depth += 1,
                Event::SequenceEnd | Event::MappingEnd => depth -= 1,
                Event::StreamEnd => return Ok(()),
                _ => {}
            }
        }
        Ok(())
    }

    fn skip_value(&mut self) -> ReadResult<()> {
        match self.next()?.0 {
            Event::SequenceStart(..) | Event::MappingStart(..) => self.skip_nested(),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(text: &str) -> Header {
        split(text).0.expect("a header")
    }

    #[test]
    fn trailing_comments_quotes_and_block_scalars() {
        let h = header(
            "---\nhandoff: guest-checkout   # the workstream\ntrue_at_sha: 0012345\n\
             verify_cmd: true\nsupersedes: null\nfirst_action: |\n  run the migration\n  then wire\n\
             author: \"Dana # not a comment\"\n---\nbody\n",
        );
        assert_eq!(h.syntax_error, None);
        assert_eq!(h.text("handoff"), Some("guest-checkout"));
        assert_eq!(h.text("true_at_sha"), Some("0012345"));
        assert_eq!(h.text("verify_cmd"), Some("true"));
        assert_eq!(h.text("supersedes"), None);
        assert_eq!(h.get("supersedes").unwrap().value.raw(), "null");
        assert_eq!(h.text("first_action"), Some("run the migration\nthen wire"));
        assert_eq!(h.text("author"), Some("Dana # not a comment"));
        assert_eq!(h.line_of("verify_cmd"), 4);
        assert_eq!(h.close_line, 10);
        assert_eq!(split("---\na: b\n---\nbody").1, 4);
    }

    #[test]
    fn nested_values_and_syntax_errors_are_reported_not_fatal() {
        let h = header("---\nhandoff: [a, b]\nstatus: done\n---\n");
        assert_eq!(h.get("handoff").unwrap().value, Value::Nested);
        assert_eq!(h.text("status"), Some("done"));
        let h = header("---\nhandoff: x\nfirst_action: fix it: now\n---\n");
        let (line, msg) = h.syntax_error.clone().unwrap();
        assert_eq!(line, 3, "{msg}");
        let h = header(&format!("---\na: {}\n---\n", "[".repeat(100_000)));
        assert!(h.syntax_error.is_some());
    }

    #[test]
    fn no_header_or_unclosed_header_is_all_body() {
        assert_eq!(split("# Title\n").0, None);
        assert_eq!(split("---\nhandoff: x\n").0, None);
        assert_eq!(split("---\nhandoff: x\n").1, 1);
    }
}
