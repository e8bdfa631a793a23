//! Reading a batch's results: a JSONL body streamed line by line, each line read on its
//! own, so a results file is never held whole and a bad line is one item's problem,
//! never the whole batch's.

use baton_http::{ApiKey, MAX_BODY_BYTES};
use serde::Deserialize;
use serde_json::Value;

use crate::{ItemResult, Outcome, ResultSink, ResultsRead};

/// Bytes of one result line that are read: a direct body's cap plus the wrapper. A
/// longer line is one unreadable item.
pub(crate) const MAX_LINE_BYTES: usize = MAX_BODY_BYTES + (64 << 10);
/// Bytes kept of a line past the cap: enough to find the item it names.
const KEPT_BYTES: usize = 4096;
/// Bytes of an unreadable line quoted in its outcome.
const EXCERPT_BYTES: usize = 512;
/// A line buffer larger than this goes with its line rather than being kept.
const KEPT_CAPACITY: usize = 1 << 20;

/// Which results file a line comes from: it decides whether an unreadable line stood
/// for an answered (billed) item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResultsFile {
    /// OpenAI's output file: answered items only.
    OpenAiOutput,
    /// OpenAI's error file: failed, expired and cancelled items (not billed).
    OpenAiErrors,
    /// Anthropic's results: every item; an unreadable line is counted as answered.
    Anthropic,
}

impl ResultsFile {
    fn billed(self) -> bool {
        self != ResultsFile::OpenAiErrors
    }
}

/// The first field every line of both APIs carries, read without building the rest.
#[derive(Deserialize)]
struct Head {
    custom_id: String,
}

/// Splits a streamed body into lines and hands each line's item to a sink.
pub(crate) struct LineReader<'a, S: ResultSink + ?Sized> {
    file: ResultsFile,
    key: Option<&'a ApiKey>,
    sink: &'a mut S,
    read: &'a mut ResultsRead,
    /// The line so far (only its first [`KEPT_BYTES`] once it is over the cap).
    pending: Vec<u8>,
    /// The line is over [`MAX_LINE_BYTES`].
    overlong: bool,
    /// Lines finished so far.
    line_no: u64,
}

impl<'a, S: ResultSink + ?Sized> LineReader<'a, S> {
    pub(crate) fn new(
        file: ResultsFile,
        key: Option<&'a ApiKey>,
        sink: &'a mut S,
        read: &'a mut ResultsRead,
    ) -> Self {
        LineReader {
            file,
            key,
            sink,
            read,
            pending: Vec::new(),
            overlong: false,
            line_no: 0,
        }
    }

    /// Takes the next bytes of the body, and gives how many it used: all of them, or
    /// fewer when the sink became full after a line ([`ResultSink::full`]); the caller
    /// passes the rest once there is room.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> usize {
        let mut used = 0;
        while let Some(at) = chunk[used..].iter().position(|&b| b == b'\n') {
            self.append(&chunk[used..used + at]);
            self.finish_line();
            used += at + 1;
            if self.sink.full() {
                return used;
            }
        }
        self.append(&chunk[used..]);
        chunk.len()
    }

    /// Whether the sink is full ([`ResultSink::full`]).
    pub(crate) fn full(&self) -> bool {
        self.sink.full()
    }

    /// The body ended: reads its last line.
    pub(crate) fn end(mut self) {
        if !self.pending.is_empty() || self.overlong {
            self.finish_line();
        }
    }

    fn append(&mut self, part: &[u8]) {
        if !self.overlong && self.pending.len() + part.len() > MAX_LINE_BYTES {
            self.overlong = true;
            self.pending.truncate(KEPT_BYTES);
            self.pending.shrink_to(KEPT_BYTES);
        }
        if self.overlong {
            let room = KEPT_BYTES.saturating_sub(self.pending.len());
            self.pending
                .extend_from_slice(&part[..room.min(part.len())]);
        } else {
            self.pending.extend_from_slice(part);
        }
    }

    fn finish_line(&mut self) {
        self.line_no += 1;
        let mut line = std::mem::take(&mut self.pending);
        let overlong = std::mem::replace(&mut self.overlong, false);
        self.read_line(&line, overlong);
        if line.capacity() <= KEPT_CAPACITY {
            line.clear();
            self.pending = line;
        }
    }

    fn redact(&self, text: &str) -> String {
        match self.key {
            Some(key) => key.redact(text),
            None => text.to_owned(),
        }
    }

    fn take(&mut self, result: ItemResult) {
        self.read.taken += 1;
        self.sink.take(result);
    }

    fn read_line(&mut self, line: &[u8], overlong: bool) {
        let n = self.line_no;
        let problem = if overlong {
            format!("result line {n} is over {MAX_LINE_BYTES} bytes")
        } else if line.iter().all(u8::is_ascii_whitespace) {
            return;
        } else {
            match serde_json::from_slice::<Head>(line) {
                Ok(head) => {
                    if !self.sink.wants(&head.custom_id) {
                        self.read.skipped += 1;
                        return;
                    }
                    let outcome = serde_json::from_slice::<Value>(line)
                        .map_err(|e| e.to_string())
                        .and_then(|value| match self.file {
                            ResultsFile::Anthropic => anthropic_outcome(&value),
                            ResultsFile::OpenAiOutput | ResultsFile::OpenAiErrors => {
                                Ok(openai_outcome(&value))
                            }
                        });
                    let outcome = match outcome {
                        Ok(Outcome::Errored { status, message }) => Outcome::Errored {
                            status,
                            message: self.redact(&message),
                        },
                        Ok(outcome) => outcome,
                        Err(why) => self.unreadable(line, &format!("result line {n}: {why}")),
                    };
                    self.take(ItemResult {
                        custom_id: head.custom_id,
                        outcome,
                    });
                    return;
                }
                Err(e) => {
                    format!("result line {n} is not a JSON object with a string custom_id ({e})")
                }
            }
        };
        match recover_id(line) {
            Some(custom_id) if self.sink.wants(&custom_id) => {
                let outcome = self.unreadable(line, &problem);
                self.take(ItemResult { custom_id, outcome });
            }
            Some(_) => self.read.skipped += 1,
            None => {
                self.read.unreadable += 1;
                if self.read.first_unreadable.is_none() {
                    self.read.first_unreadable = Some(self.redact(&problem));
                }
            }
        }
    }

    fn unreadable(&self, line: &[u8], problem: &str) -> Outcome {
        let excerpt = String::from_utf8_lossy(&line[..line.len().min(EXCERPT_BYTES)]);
        Outcome::Unreadable {
            billed: self.file.billed(),
            message: self.redact(problem),
            excerpt: self.redact(&excerpt),
        }
    }
}

/// The item a line that is not readable JSON names, when its start says
/// `"custom_id": "<id>"` with an id of the rule both APIs accept.
fn recover_id(line: &[u8]) -> Option<String> {
    const FIELD: &[u8] = b"\"custom_id\"";
    let at = line.windows(FIELD.len()).position(|w| w == FIELD)?;
    let mut rest = &line[at + FIELD.len()..];
    let skip = |rest: &mut &[u8]| {
        while let Some((first, tail)) = rest.split_first()
            && first.is_ascii_whitespace()
        {
            *rest = tail;
        }
    };
    skip(&mut rest);
    rest = rest.strip_prefix(b":")?;
    skip(&mut rest);
    rest = rest.strip_prefix(b"\"")?;
    let end = rest.iter().position(|&b| b == b'"')?;
    let id = std::str::from_utf8(&rest[..end]).ok()?;
    crate::check_custom_id(id).ok()?;
    Some(id.to_owned())
}

/// What one line of OpenAI's output or error file says of its item.
pub(crate) fn openai_outcome(line: &Value) -> Outcome {
    let status = line
        .pointer("/response/status_code")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let error_code = line.pointer("/error/code").and_then(Value::as_str);
    match (status, error_code) {
        (_, Some("batch_expired")) => Outcome::Expired,
        (_, Some("batch_cancelled")) => Outcome::Canceled,
        (Some(200..=299), None) => match line.pointer("/response/body") {
            Some(body) if body.is_object() => Outcome::Succeeded(body.clone()),
            _ => Outcome::Unreadable {
                billed: true,
                message: "a success line without a response body".into(),
                excerpt: String::new(),
            },
        },
        _ => Outcome::Errored {
            status,
            message: line
                .pointer("/error/message")
                .or_else(|| line.pointer("/response/body/error/message"))
                .and_then(Value::as_str)
                .unwrap_or("no message")
                .to_owned(),
        },
    }
}

/// What one line of Anthropic's results says of its item; an unknown result type is
/// the line's problem.
pub(crate) fn anthropic_outcome(line: &Value) -> Result<Outcome, String> {
    let kind = line.pointer("/result/type").and_then(Value::as_str);
    Ok(match kind {
        Some("succeeded") => match line.pointer("/result/message") {
            Some(message) if message.is_object() => Outcome::Succeeded(message.clone()),
            _ => return Err("a succeeded result without a message".into()),
        },
        Some("expired") => Outcome::Expired,
        Some("canceled") => Outcome::Canceled,
        Some("errored") => {
            let error_type = line
                .pointer("/result/error/error/type")
                .and_then(Value::as_str)
                .unwrap_or("error");
            Outcome::Errored {
                status: anthropic_status(error_type),
                message: line
                    .pointer("/result/error/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or(error_type)
                    .to_owned(),
            }
        }
        other => return Err(format!("result type {other:?}")),
    })
}

/// The HTTP status a direct call would have had for an Anthropic error type.
fn anthropic_status(error_type: &str) -> Option<u16> {
    Some(match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "overloaded_error" => 529,
        _ => return None,
    })
}
