//! The front matter: flat `key: value` lines between a first line `---` and the next `---`.
//!
//! A header is read two ways, because the two rubrics must agree with different readers:
//!
//! - [`flat`]: exactly as Handover 0.4.1 reads it. A line `key: value` (the key a letter or
//!   `_` then letters, digits or `_`; spaces allowed around the colon) sets the key to the
//!   rest of the line, trimmed, with one pair of matching outer quotes removed; every other
//!   line is ignored; a later key replaces an earlier one. A trailing `# comment` is part of
//!   the value, `! grep …` is the command `! grep …`, and `first_action: run: now` is the
//!   text `run: now`.
//! - [`baton`] (the baton rubric): the same flat lines, with what a YAML reader would expect
//!   of them added, without YAML's surprises: a plain value ends before a ` #` comment;
//!   `"…"` and `'…'` are YAML quotes (escapes, `''`), so a value may hold ` #`; `|` and `>`
//!   start block scalars; a key with nothing after it and indented or `- ` lines below holds a
//!   list or mapping, which no header key accepts; `null`, `~` or nothing is null. A value is
//!   never a YAML tag, alias or flow collection: `!`, `*`, `&`, `@`, `` ` ``, `[` and `{` are
//!   text, so `verify_cmd: ! grep -q x file` is the negated check it says. Lines that are
//!   neither keys, comments nor part of a block are reported with their line.
//!
//! Both readers find the same fences, so the body starts at the same line.

/// The parsed header of a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Line of the opening `---` (always 1).
    pub open_line: usize,
    /// Line of the closing `---`.
    pub close_line: usize,
    /// The keys in document order, duplicates included.
    pub fields: Vec<Field>,
    /// Lines the reader could not read, with why (never for [`flat`], which ignores them).
    pub syntax: Vec<(usize, String)>,
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
    /// A scalar: its text after unquoting, and whether it is a null (a plain `null`, `~` or
    /// nothing).
    Scalar {
        /// The text (for a null, what was written: `null`, `~` or empty).
        text: String,
        /// Whether the scalar is a null.
        null: bool,
    },
    /// A list or a mapping (indented or `- ` lines under a key), which no header key accepts.
    Nested,
}

impl Value {
    /// The text of a non-null scalar, trimmed.
    pub fn text(&self) -> Option<&str> {
        match self {
            Value::Scalar { text, null: false } => Some(text.trim()),
            _ => None,
        }
    }

    /// The text whatever it is: nulls keep their spelling, lists and mappings read as empty.
    pub fn raw(&self) -> &str {
        match self {
            Value::Scalar { text, .. } => text.trim(),
            Value::Nested => "",
        }
    }
}

impl Header {
    /// The last field with this key (a later key replaces an earlier one, as in Handover; the
    /// baton rubric reports duplicates).
    pub fn get(&self, key: &str) -> Option<&Field> {
        self.fields.iter().rev().find(|f| f.key == key)
    }

    /// The trimmed, non-null, non-empty text of a key.
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

/// JavaScript's `trim()`: Unicode white space, line terminators and the byte-order mark.
fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// The source lines as `split(/\r?\n/)` gives them.
fn lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// The header's lines (between the fences) and the index of the closing fence, when the
/// first line is `---` and a later line closes it.
fn fenced(text: &str) -> Option<(Vec<&str>, usize)> {
    let all = lines(text);
    if js_trim(all.first()?) != "---" {
        return None;
    }
    let close = all.iter().skip(1).position(|l| js_trim(l) == "---")? + 1;
    Some((all[1..close].to_vec(), close))
}

/// The 1-based file line at which the body starts: after the closing fence, or 1 when there
/// is no closed header.
pub fn body_line(text: &str) -> usize {
    fenced(text).map_or(1, |(_, close)| close + 2)
}

/// `key` and the rest of the line, by Handover's pattern `^([a-z_][a-z0-9_]*)\s*:\s*(.*)$`
/// (case-insensitive). JavaScript's `.` stops at `\r`, U+2028 and U+2029, so a line holding
/// one does not match.
fn key_line(line: &str) -> Option<(&str, &str)> {
    let first = line.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    let end = line
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(line.len());
    let (key, rest) = line.split_at(end);
    let rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    let rest = rest.strip_prefix(':')?;
    if rest.contains(['\r', '\u{2028}', '\u{2029}']) {
        return None;
    }
    Some((key, rest))
}

/// Read the header as Handover 0.4.1 does; `None` when there is no closed header.
pub fn flat(text: &str) -> Option<Header> {
    let (yaml, close) = fenced(text)?;
    let mut fields = Vec::new();
    for (i, line) in yaml.iter().enumerate() {
        let Some((key, rest)) = key_line(line) else {
            continue;
        };
        let mut v = js_trim(rest);
        if (v.starts_with('"') && v.ends_with('"')) || (v.starts_with('\'') && v.ends_with('\'')) {
            v = v.get(1..v.len().saturating_sub(1)).unwrap_or("");
        }
        fields.push(Field {
            key: key.to_string(),
            value: Value::Scalar {
                text: v.to_string(),
                null: false,
            },
            line: i + 2,
        });
    }
    Some(Header {
        open_line: 1,
        close_line: close + 1,
        fields,
        syntax: Vec::new(),
    })
}

/// Read the header by baton's rules (see the module docs); `None` when there is no closed
/// header.
pub fn baton(text: &str) -> Option<Header> {
    let (yaml, close) = fenced(text)?;
    let mut header = Header {
        open_line: 1,
        close_line: close + 1,
        fields: Vec::new(),
        syntax: Vec::new(),
    };
    let indented = |l: &str| l.starts_with([' ', '\t']);
    let mut i = 0;
    while i < yaml.len() {
        let line = yaml[i];
        let number = i + 2;
        i += 1;
        let trimmed = line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some((key, rest)) = key_line(line).filter(|_| !indented(line)) else {
            let why = if indented(line) {
                "an indented line outside a block value (a header is flat `key: value` lines)"
            } else {
                "not a `key: value` line"
            };
            header.syntax.push((number, why.to_string()));
            continue;
        };
        let rest = rest.trim();
        let value = if let Some(q) = rest.chars().next().filter(|c| *c == '"' || *c == '\'') {
            match quoted(rest, q) {
                Ok(text) => Value::Scalar { text, null: false },
                Err(why) => {
                    header.syntax.push((number, format!("{key}: {why}")));
                    continue;
                }
            }
        } else if let Some(folded) = block_indicator(rest) {
            let start = i;
            while i < yaml.len() && (yaml[i].trim().is_empty() || indented(yaml[i])) {
                i += 1;
            }
            Value::Scalar {
                text: block(&yaml[start..i], folded),
                null: false,
            }
        } else {
            let plain = strip_comment(rest).trim();
            let nested_below = plain.is_empty()
                && yaml[i..]
                    .iter()
                    .find(|l| !l.trim().is_empty())
                    .is_some_and(|l| indented(l) || l.starts_with("- ") || l.trim() == "-");
            if nested_below {
                while i < yaml.len()
                    && (yaml[i].trim().is_empty()
                        || indented(yaml[i])
                        || yaml[i].starts_with("- ")
                        || yaml[i].trim() == "-")
                {
                    i += 1;
                }
                Value::Nested
            } else {
                Value::Scalar {
                    text: plain.to_string(),
                    null: matches!(plain, "" | "~" | "null" | "Null" | "NULL"),
                }
            }
        };
        header.fields.push(Field {
            key: key.to_string(),
            value,
            line: number,
        });
    }
    Some(header)
}

/// A plain value without its trailing comment (a `#` after white space, or at the start).
fn strip_comment(v: &str) -> &str {
    if v.starts_with('#') {
        return "";
    }
    let bytes = v.as_bytes();
    for (i, b) in bytes.iter().enumerate().skip(1) {
        if *b == b'#' && matches!(bytes[i - 1], b' ' | b'\t') {
            return &v[..i];
        }
    }
    v
}

/// A quoted value: `"…"` with backslash escapes or `'…'` with `''`, then nothing but a
/// comment.
fn quoted(v: &str, q: char) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = v[1..].char_indices();
    let mut end = None;
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' if q == '"' => match chars.next().map(|(_, e)| e) {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('"') => out.push('"'),
                Some('\\') => out.push('\\'),
                Some('/') => out.push('/'),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => break,
            },
            '\'' if q == '\'' && v[1 + i + 1..].starts_with('\'') => {
                out.push('\'');
                chars.next();
            }
            c if c == q => {
                end = Some(1 + i + 1);
                break;
            }
            c => out.push(c),
        }
    }
    let Some(end) = end else {
        return Err(format!(
            "the {q}-quoted value is not closed on its line (quotes do not span lines)"
        ));
    };
    let after = v[end..].trim();
    if !after.is_empty() && !after.starts_with('#') {
        return Err(format!(
            "text after the closing {q}: `{}`",
            after.chars().take(40).collect::<String>()
        ));
    }
    Ok(out)
}

/// Whether `v` starts a block scalar (`|` or `>`, with optional chomping and indentation
/// indicators and a comment); `Some(true)` when folded.
fn block_indicator(v: &str) -> Option<bool> {
    let folded = match v.chars().next()? {
        '|' => false,
        '>' => true,
        _ => return None,
    };
    let rest = strip_comment(&v[1..]).trim();
    rest.chars()
        .all(|c| matches!(c, '-' | '+' | '1'..='9'))
        .then_some(folded)
}

/// The text of a block scalar's lines: dedented; literal keeps line breaks, folded joins
/// lines with spaces and keeps blank lines as breaks.
fn block(lines: &[&str], folded: bool) -> String {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let body: Vec<&str> = lines
        .iter()
        .map(|l| l.get(indent..).unwrap_or("").trim_end())
        .collect();
    if !folded {
        return body.join("\n").trim().to_string();
    }
    let mut out = String::new();
    for l in body {
        if l.is_empty() {
            out.push('\n');
        } else {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(l);
        }
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baton_reads_comments_quotes_and_block_scalars() {
        let h = baton(
            "---\nhandoff: guest-checkout   # the workstream\ntrue_at_sha: 0012345\n\
             verify_cmd: true\nsupersedes: null\nfirst_action: |\n  run the migration\n  then wire\n\
             author: \"Dana # not a comment\"\n---\nbody\n",
        )
        .expect("a header");
        assert_eq!(h.syntax, []);
        assert_eq!(h.text("handoff"), Some("guest-checkout"));
        assert_eq!(h.text("true_at_sha"), Some("0012345"));
        assert_eq!(h.text("verify_cmd"), Some("true"));
        assert_eq!(h.text("supersedes"), None);
        assert_eq!(h.get("supersedes").unwrap().value.raw(), "null");
        assert_eq!(h.text("first_action"), Some("run the migration\nthen wire"));
        assert_eq!(h.text("author"), Some("Dana # not a comment"));
        assert_eq!(h.line_of("verify_cmd"), 4);
        assert_eq!(h.close_line, 10);
        assert_eq!(body_line("---\na: b\n---\nbody"), 4);
    }

    #[test]
    fn tags_aliases_and_colons_are_text_in_both_readings() {
        let text = "---\nverify_cmd: ! grep -q x file\nfirst_action: run: now\n\
                    a: *star\nb: @at\nc: `tick`\nd: [x, y]\ne: 'it''s'\n---\n";
        for h in [baton(text).unwrap(), flat(text).unwrap()] {
            assert_eq!(h.text("verify_cmd"), Some("! grep -q x file"));
            assert_eq!(h.text("first_action"), Some("run: now"));
            assert_eq!(h.text("a"), Some("*star"));
            assert_eq!(h.text("b"), Some("@at"));
            assert_eq!(h.text("c"), Some("`tick`"));
            assert_eq!(h.text("d"), Some("[x, y]"));
        }
        assert_eq!(baton(text).unwrap().text("e"), Some("it's"));
        assert_eq!(flat(text).unwrap().text("e"), Some("it''s"));
    }

    #[test]
    fn flat_keeps_comments_and_ignores_other_lines() {
        let h = flat("---\nshape: handoff   # or delegation\n  indented: x\n# k: v\nK : v\n---\n")
            .unwrap();
        assert_eq!(h.text("shape"), Some("handoff   # or delegation"));
        assert_eq!(h.get("indented"), None);
        assert_eq!(h.get("k"), None);
        assert_eq!(h.text("K"), Some("v"));
        assert_eq!(flat("---\na: \"\n---\n").unwrap().text("a"), None);
    }

    #[test]
    fn nested_values_and_bad_lines_are_reported_not_fatal() {
        let h =
            baton("---\nhandoff:\n  - a\n  - b\nstatus: done\njunk\n  stray: 1\nq: \"open\n---\n")
                .unwrap();
        assert_eq!(h.get("handoff").unwrap().value, Value::Nested);
        assert_eq!(h.text("status"), Some("done"));
        let lines: Vec<usize> = h.syntax.iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, [6, 7, 8], "{:?}", h.syntax);
        let h = baton(&format!("---\na: {}\n---\n", "[".repeat(100_000))).unwrap();
        assert_eq!(h.text("a").map(str::len), Some(100_000));
    }

    #[test]
    fn no_header_or_unclosed_header_is_all_body() {
        assert_eq!(baton("# Title\n"), None);
        assert_eq!(flat("---\nhandoff: x\n"), None);
        assert_eq!(body_line("---\nhandoff: x\n"), 1);
        assert_eq!(baton("---   # structured header\na: b\n---\n"), None);
    }
}
