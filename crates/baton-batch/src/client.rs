//! The client side of both batch APIs.

use std::collections::HashSet;
use std::time::Duration;

use baton_http::ApiKey;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Value, json};

use crate::results::{LineReader, ResultsFile};
use crate::{
    BatchApi, BatchError, BatchItem, BatchStatus, ItemResult, ResultSink, ResultsRead,
    check_custom_id,
};

/// Anthropic's API version header, as the direct provider sends it.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Bytes of a control response (a file or batch object) that are read.
const MAX_CONTROL_BYTES: usize = 1 << 20;
/// How long one results download may take in all, by default: a results file is read
/// as it streams, so it may take far longer than one call's timeout (which bounds each
/// read instead).
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(3600);
/// The longest a download waits for room in a full [`ResultSink`] before it reads on.
const MAX_PAUSE: Duration = Duration::from_secs(30);
/// How often a paused download looks for room.
const PAUSE_STEP: Duration = Duration::from_millis(2);
/// The key of OpenAI's batch `metadata` under which a batch carries baton's submission
/// token, so a resume can find it.
pub const SUBMISSION_KEY: &str = "baton_submission";
/// How much earlier than a submission started (by this machine's clock) its batch may
/// say it was created: the allowance for the two clocks disagreeing.
const CLOCK_SKEW_SECS: i64 = 15 * 60;
/// Batches per page of a list request (both APIs take 100).
const LIST_PAGE: &str = "100";
/// Pages of the batch list read when looking for a submission's batch.
const MAX_LIST_PAGES: usize = 100;

/// A client for one provider's batch API at one base URL (`…/v1`).
#[derive(Debug, Clone)]
pub struct BatchClient {
    api: BatchApi,
    base_url: String,
    key: Option<ApiKey>,
    http: reqwest::Client,
    timeout: Duration,
    download_timeout: Duration,
}

impl BatchClient {
    /// A client for `api` at `base_url` (for example `https://api.openai.com/v1`), with
    /// the key if the server needs one. Redirects are never followed; every request has
    /// `timeout`, except a results download: each of its reads has `timeout`, the whole
    /// download [`DOWNLOAD_TIMEOUT`] ([`Self::with_download_timeout`]).
    pub fn new(
        api: BatchApi,
        base_url: &str,
        key: Option<ApiKey>,
        timeout: Duration,
    ) -> Result<Self, BatchError> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeout)
            .read_timeout(timeout)
            .build()
            .map_err(|e| BatchError::Http {
                url: base_url.to_owned(),
                message: e.to_string(),
            })?;
        Ok(BatchClient {
            api,
            base_url: base_url.trim_end_matches('/').to_owned(),
            key,
            http,
            timeout,
            download_timeout: DOWNLOAD_TIMEOUT.max(timeout),
        })
    }

    /// The same client, with results downloads bounded by `limit` in all.
    pub fn with_download_timeout(mut self, limit: Duration) -> Self {
        self.download_timeout = limit;
        self
    }

    /// The API this client speaks.
    pub fn api(&self) -> BatchApi {
        self.api
    }

    /// Submits one batch and gives its id. Ids are checked first; the items must fit the
    /// API's limits (see [`crate::split`]). `token` names the submission: an OpenAI
    /// batch carries it in its `metadata` ([`SUBMISSION_KEY`]), for [`Self::find`].
    pub async fn submit(&self, items: &[BatchItem], token: &str) -> Result<String, BatchError> {
        for item in items {
            check_custom_id(&item.custom_id)?;
        }
        let batch = match self.api {
            BatchApi::Anthropic => {
                let requests: Vec<Value> = items
                    .iter()
                    .map(|item| json!({"custom_id": item.custom_id, "params": item.body}))
                    .collect();
                let url = format!("{}/messages/batches", self.base_url);
                self.send_json(
                    self.http.post(&url).json(&json!({"requests": requests})),
                    &url,
                )
                .await?
            }
            BatchApi::OpenAiChat | BatchApi::OpenAiResponses => {
                let mut jsonl = Vec::new();
                for item in items {
                    let line = json!({
                        "custom_id": item.custom_id,
                        "method": "POST",
                        "url": self.api.endpoint(),
                        "body": item.body,
                    });
                    serde_json::to_writer(&mut jsonl, &line).expect("a JSON value serializes");
                    jsonl.push(b'\n');
                }
                let url = format!("{}/files", self.base_url);
                let part = reqwest::multipart::Part::bytes(jsonl)
                    .file_name("batch.jsonl")
                    .mime_str("application/jsonl")
                    .expect("a valid MIME type");
                let form = reqwest::multipart::Form::new()
                    .text("purpose", "batch")
                    .part("file", part);
                let file = self
                    .send_json(self.http.post(&url).multipart(form), &url)
                    .await?;
                let file_id = string_field(&file, "id", &url)?;
                let url = format!("{}/batches", self.base_url);
                let body = json!({
                    "input_file_id": file_id,
                    "endpoint": self.api.endpoint(),
                    "completion_window": "24h",
                    "metadata": {SUBMISSION_KEY: token},
                });
                self.send_json(self.http.post(&url).json(&body), &url)
                    .await?
            }
        };
        let url = self.batches_url();
        string_field(&batch, "id", &url)
    }

    /// The batch a submission made, if the provider has one, for a process that does
    /// not know whether its create request got through (it was killed, or the request
    /// failed without an answer). `items` is how many requests it held, `since_unix`
    /// when it started (this machine's clock), and `known` the batches already
    /// accounted for, which are never taken.
    ///
    /// OpenAI: the batch whose `metadata` carries `token`. Anthropic's batches carry no
    /// metadata: the oldest batch with `items` requests created since the submission
    /// started, less [`CLOCK_SKEW_SECS`], that is not in `known`. Its results name their
    /// items, so if it was another client's, none of them matches and the items are
    /// retried; nothing is ever delivered to the wrong call.
    ///
    /// Both lists run newest first; the search stops at the first batch older than the
    /// submission, and fails rather than guess after [`MAX_LIST_PAGES`] pages.
    pub async fn find(
        &self,
        token: &str,
        items: u64,
        since_unix: i64,
        known: &HashSet<String>,
    ) -> Result<Option<String>, BatchError> {
        let url = self.batches_url();
        let cutoff = since_unix - CLOCK_SKEW_SECS;
        let cursor = match self.api {
            BatchApi::Anthropic => "after_id",
            BatchApi::OpenAiChat | BatchApi::OpenAiResponses => "after",
        };
        let mut after: Option<String> = None;
        let mut candidate: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let mut query = vec![("limit", LIST_PAGE.to_owned())];
            if let Some(id) = &after {
                query.push((cursor, id.clone()));
            }
            let page = self
                .send_json(self.http.get(&url).query(&query), &url)
                .await?;
            let Some(data) = page.get("data").and_then(Value::as_array) else {
                return Err(protocol(&url, "a batch list without \"data\"".into()));
            };
            let mut older = false;
            for batch in data {
                let id = string_field(batch, "id", &url)?;
                let created = created_unix(self.api, batch, &url)?;
                if created < cutoff {
                    older = true;
                    continue;
                }
                let ours = match self.api {
                    BatchApi::Anthropic => {
                        let total: u64 =
                            ["processing", "succeeded", "errored", "canceled", "expired"]
                                .iter()
                                .map(|k| count(batch, &format!("/request_counts/{k}")))
                                .sum();
                        total == items && !known.contains(&id)
                    }
                    BatchApi::OpenAiChat | BatchApi::OpenAiResponses => {
                        batch.pointer(&format!("/metadata/{SUBMISSION_KEY}"))
                            == Some(&Value::from(token))
                    }
                };
                if !ours {
                    continue;
                }
                if self.api != BatchApi::Anthropic {
                    return Ok(Some(id));
                }
                // Newest first: the last match seen is the oldest.
                candidate = Some(id);
            }
            let more = page.get("has_more").and_then(Value::as_bool) == Some(true);
            let last = page
                .get("last_id")
                .and_then(Value::as_str)
                .map(str::to_owned);
            match last {
                Some(last) if more && !older && after.as_ref() != Some(&last) => {
                    after = Some(last);
                }
                _ => return Ok(candidate),
            }
        }
        Err(protocol(
            &url,
            format!(
                "looked through {MAX_LIST_PAGES} pages of batches without reaching the submission's start; cannot tell whether submission {token} made a batch"
            ),
        ))
    }

    /// Where batch `id` stands.
    pub async fn status(&self, id: &str) -> Result<BatchStatus, BatchError> {
        let url = format!("{}/{}", self.batches_url(), path_segment(id)?);
        let batch = self.send_json(self.http.get(&url), &url).await?;
        parse_status(self.api, &batch, &url)
    }

    /// Asks the provider to cancel batch `id`; items it already finished keep their
    /// results.
    pub async fn cancel(&self, id: &str) -> Result<BatchStatus, BatchError> {
        let url = format!("{}/{}/cancel", self.batches_url(), path_segment(id)?);
        let batch = self.send_json(self.http.post(&url), &url).await?;
        parse_status(self.api, &batch, &url)
    }

    /// The results of an ended batch, in the provider's order. Items with no line at all
    /// are simply absent, as are lines that name no item; the caller compares with what
    /// it submitted. The whole file is held: [`Self::results_each`] streams it.
    pub async fn results(&self, id: &str) -> Result<Vec<ItemResult>, BatchError> {
        struct All(Vec<ItemResult>);
        impl ResultSink for All {
            fn wants(&self, _: &str) -> bool {
                true
            }
            fn take(&mut self, result: ItemResult) {
                self.0.push(result);
            }
        }
        let mut all = All(Vec::new());
        self.results_each(id, &mut all).await?;
        Ok(all.0)
    }

    /// Streams the results of an ended batch into `sink`, one line at a time: only the
    /// line being read is held, lines of items the sink does not want are skipped, and
    /// a line that cannot be read is that item's [`crate::Outcome::Unreadable`] (or,
    /// when it names no item, counted in [`ResultsRead::unreadable`]). An error means
    /// the download broke off: what was handed over stays handed over, and a retry
    /// reads the file again from the start.
    pub async fn results_each<S: ResultSink + ?Sized>(
        &self,
        id: &str,
        sink: &mut S,
    ) -> Result<ResultsRead, BatchError> {
        let segment = path_segment(id)?;
        let mut read = ResultsRead::default();
        match self.api {
            BatchApi::Anthropic => {
                let url = format!("{}/{segment}/results", self.batches_url());
                self.stream_lines(&url, ResultsFile::Anthropic, sink, &mut read)
                    .await?;
            }
            BatchApi::OpenAiChat | BatchApi::OpenAiResponses => {
                let url = format!("{}/{segment}", self.batches_url());
                let batch = self.send_json(self.http.get(&url), &url).await?;
                for (field, file) in [
                    ("output_file_id", ResultsFile::OpenAiOutput),
                    ("error_file_id", ResultsFile::OpenAiErrors),
                ] {
                    let Some(file_id) = batch.get(field).and_then(Value::as_str) else {
                        continue;
                    };
                    let url = format!("{}/files/{}/content", self.base_url, path_segment(file_id)?);
                    self.stream_lines(&url, file, sink, &mut read).await?;
                }
            }
        }
        Ok(read)
    }

    fn batches_url(&self) -> String {
        match self.api {
            BatchApi::Anthropic => format!("{}/messages/batches", self.base_url),
            BatchApi::OpenAiChat | BatchApi::OpenAiResponses => {
                format!("{}/batches", self.base_url)
            }
        }
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let Some(key) = &self.key else {
            if self.api == BatchApi::Anthropic {
                headers.insert(
                    "anthropic-version",
                    HeaderValue::from_static(ANTHROPIC_VERSION),
                );
            }
            return headers;
        };
        let (name, value) = match self.api {
            BatchApi::Anthropic => ("x-api-key", key.expose().to_owned()),
            BatchApi::OpenAiChat | BatchApi::OpenAiResponses => {
                ("authorization", format!("Bearer {}", key.expose()))
            }
        };
        if let Ok(mut value) = HeaderValue::from_str(&value) {
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        if self.api == BatchApi::Anthropic {
            headers.insert(
                "anthropic-version",
                HeaderValue::from_static(ANTHROPIC_VERSION),
            );
        }
        headers
    }

    fn redact(&self, text: String) -> String {
        match &self.key {
            Some(key) => key.redact(&text),
            None => text,
        }
    }

    /// Sends a request and reads a JSON object, at most [`MAX_CONTROL_BYTES`].
    async fn send_json(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<Value, BatchError> {
        let mut response = self.send(request.timeout(self.timeout), url).await?;
        let mut body = Vec::new();
        while let Some(chunk) = self.chunk(&mut response, url).await? {
            body.extend_from_slice(&chunk);
            if body.len() > MAX_CONTROL_BYTES {
                return Err(protocol(
                    url,
                    format!("body over {MAX_CONTROL_BYTES} bytes"),
                ));
            }
        }
        let value: Value =
            serde_json::from_slice(&body).map_err(|e| protocol(url, format!("not JSON ({e})")))?;
        if !value.is_object() {
            return Err(protocol(url, "not a JSON object".into()));
        }
        Ok(value)
    }

    /// Sends a GET and streams its JSONL body, line by line, into `sink`.
    async fn stream_lines<S: ResultSink + ?Sized>(
        &self,
        url: &str,
        file: ResultsFile,
        sink: &mut S,
        read: &mut ResultsRead,
    ) -> Result<(), BatchError> {
        let request = self.http.get(url).timeout(self.download_timeout);
        let mut response = self.send(request, url).await?;
        let mut reader = LineReader::new(file, self.key.as_ref(), sink, read);
        while let Some(chunk) = self.chunk(&mut response, url).await? {
            let mut rest = &chunk[..];
            loop {
                rest = &rest[reader.push(rest)..];
                if rest.is_empty() {
                    break;
                }
                // the sink is full: wait for room, a while at most (a result no one
                // stores must not stall the download for ever)
                let paused = tokio::time::Instant::now();
                while reader.full() && paused.elapsed() < MAX_PAUSE {
                    tokio::time::sleep(PAUSE_STEP).await;
                }
            }
        }
        reader.end();
        Ok(())
    }

    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<reqwest::Response, BatchError> {
        let response =
            request
                .headers(self.headers())
                .send()
                .await
                .map_err(|e| BatchError::Http {
                    url: url.to_owned(),
                    message: self.redact(e.without_url().to_string()),
                })?;
        let status = response.status();
        if status.is_redirection() {
            let to = response
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .and_then(|l| reqwest::Url::parse(l).ok())
                .and_then(|u| u.host_str().map(str::to_owned))
                .unwrap_or_else(|| "elsewhere".into());
            return Err(BatchError::Redirected {
                url: url.to_owned(),
                status: status.as_u16(),
                to,
            });
        }
        if !status.is_success() {
            let mut response = response;
            let mut body = Vec::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                body.extend_from_slice(&chunk);
                if body.len() > 4096 {
                    break;
                }
            }
            let text: String = String::from_utf8_lossy(&body).chars().take(500).collect();
            return Err(BatchError::Status {
                url: url.to_owned(),
                status: status.as_u16(),
                message: self.redact(text),
            });
        }
        Ok(response)
    }

    async fn chunk(
        &self,
        response: &mut reqwest::Response,
        url: &str,
    ) -> Result<Option<bytes::Bytes>, BatchError> {
        response.chunk().await.map_err(|e| BatchError::Http {
            url: url.to_owned(),
            message: self.redact(e.without_url().to_string()),
        })
    }
}

fn protocol(url: &str, message: String) -> BatchError {
    BatchError::Protocol {
        url: url.to_owned(),
        message,
    }
}

/// An id placed in a URL path: the characters providers use, nothing that changes the
/// path.
fn path_segment(id: &str) -> Result<&str, BatchError> {
    let ok = !id.is_empty()
        && id.len() <= 256
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(id)
    } else {
        Err(BatchError::InvalidId {
            custom_id: id.to_owned(),
            message: "not a batch or file id (A-Z a-z 0-9 _ -)".into(),
        })
    }
}

fn string_field(value: &Value, field: &str, url: &str) -> Result<String, BatchError> {
    value
        .get(field)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| protocol(url, format!("no string {field:?}")))
}

/// When a listed batch was created, in Unix seconds (OpenAI: a number; Anthropic: an
/// RFC 3339 time).
fn created_unix(api: BatchApi, batch: &Value, url: &str) -> Result<i64, BatchError> {
    let created = batch.get("created_at");
    let seconds = match api {
        BatchApi::Anthropic => created
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map(|t| t.as_second()),
        BatchApi::OpenAiChat | BatchApi::OpenAiResponses => created.and_then(Value::as_i64),
    };
    seconds.ok_or_else(|| {
        protocol(
            url,
            "a listed batch without a readable \"created_at\"".into(),
        )
    })
}

fn count(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

fn parse_status(api: BatchApi, batch: &Value, url: &str) -> Result<BatchStatus, BatchError> {
    match api {
        BatchApi::Anthropic => {
            let status = string_field(batch, "processing_status", url)?;
            let done = ["succeeded", "errored", "canceled", "expired"]
                .iter()
                .map(|k| count(batch, &format!("/request_counts/{k}")))
                .sum::<u64>();
            Ok(BatchStatus {
                created_unix: created_unix(api, batch, url).ok(),
                ended: status == "ended",
                failed: None,
                done,
                total: done + count(batch, "/request_counts/processing"),
                status,
            })
        }
        BatchApi::OpenAiChat | BatchApi::OpenAiResponses => {
            let status = string_field(batch, "status", url)?;
            let failed = (status == "failed").then(|| {
                batch
                    .pointer("/errors/data/0/message")
                    .and_then(Value::as_str)
                    .unwrap_or("the batch failed validation")
                    .to_owned()
            });
            Ok(BatchStatus {
                created_unix: created_unix(api, batch, url).ok(),
                ended: matches!(
                    status.as_str(),
                    "completed" | "failed" | "expired" | "cancelled"
                ),
                failed,
                done: count(batch, "/request_counts/completed")
                    + count(batch, "/request_counts/failed"),
                total: count(batch, "/request_counts/total"),
                status,
            })
        }
    }
}
