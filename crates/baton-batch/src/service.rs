//! An in-memory implementation of both batch APIs, for the simulated server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Multipart, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{BatchApi, Outcome};

/// Answers one item as the direct route would: the response body, or an HTTP status and
/// message.
pub type Answer = Arc<dyn Fn(BatchApi, &Value) -> Result<Value, (u16, String)> + Send + Sync>;

/// How the service behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceConfig {
    /// How long after creation a batch ends.
    pub turnaround: Duration,
    /// Share of items (0–1) that fail with a 500, drawn from `(seed, custom_id)`.
    pub fail_rate: f64,
    /// Share of items (0–1) left unprocessed when the batch ends: the batch then ends as
    /// expired and those items report `expired`.
    pub expire_rate: f64,
    /// Seed for the draws above.
    pub seed: u64,
    /// How long a create request waits for its answer after the batch was made, like a
    /// slow gateway: the window in which a client that dies has a batch it never heard of.
    pub create_latency: Duration,
    /// Faults of a hostile or broken provider.
    pub faults: BatchFaults,
}

/// Faults the service injects, as a hostile or broken provider would (`baton
/// sim-server --batch-faults`). Each applies to every batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchFaults {
    /// The first answered line of the first batch's results is cut in half, so it is
    /// not JSON (`malformed-line`).
    pub malformed_line: bool,
    /// The first this many results downloads of a batch answer 503
    /// (`failed-downloads=N`).
    pub failed_downloads: u32,
    /// The first results download of a batch sends half its body, then nothing for this
    /// long before the rest (`stalled-download-ms=N`): longer than a client's read
    /// timeout, it breaks the download off.
    pub stalled_download: Option<Duration>,
    /// Batches never end, and cancel requests change nothing (`stuck`).
    pub stuck: bool,
    /// A batch, once created, is unknown to every request about it: HTTP 404
    /// (`not-found`).
    pub not_found: bool,
    /// Every request about a created batch is redirected to another host: HTTP 307
    /// (`redirect`).
    pub redirect: bool,
    /// The first batch's results start with this many bytes of lines of items in no
    /// batch (`padding-mb=N`): a results file larger than a client should hold.
    pub padding_bytes: u64,
    /// An errored item's message echoes the key its batch was created with, as some
    /// servers echo a bad key (`echo-key`).
    pub echo_key: bool,
}

impl std::str::FromStr for BatchFaults {
    type Err = String;

    /// Comma-separated names: `malformed-line`, `failed-downloads=N`,
    /// `stalled-download-ms=N`, `stuck`, `not-found`, `redirect`, `padding-mb=N`,
    /// `echo-key`.
    fn from_str(text: &str) -> Result<Self, String> {
        let mut faults = BatchFaults::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = match part.split_once('=') {
                Some((name, value)) => (name, Some(value)),
                None => (part, None),
            };
            let number = || -> Result<u64, String> {
                value
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or_else(|| format!("batch fault {name:?} needs a number, as {name}=N"))
            };
            match name {
                "malformed-line" => faults.malformed_line = true,
                "failed-downloads" => {
                    faults.failed_downloads = u32::try_from(number()?).unwrap_or(u32::MAX);
                }
                "stalled-download-ms" => {
                    faults.stalled_download = Some(Duration::from_millis(number()?));
                }
                "stuck" => faults.stuck = true,
                "not-found" => faults.not_found = true,
                "redirect" => faults.redirect = true,
                "padding-mb" => faults.padding_bytes = number()?.saturating_mul(1_000_000),
                "echo-key" => faults.echo_key = true,
                other => {
                    return Err(format!(
                        "unknown batch fault {other:?} (known: malformed-line, failed-downloads=N, stalled-download-ms=N, stuck, not-found, redirect, padding-mb=N, echo-key)"
                    ));
                }
            }
        }
        Ok(faults)
    }
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            turnaround: Duration::from_millis(200),
            fail_rate: 0.0,
            expire_rate: 0.0,
            seed: 0,
            create_latency: Duration::ZERO,
            faults: BatchFaults::default(),
        }
    }
}

/// What the service has seen, for tests that assert nothing was submitted twice.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceStats {
    /// Batches created.
    pub batches: u64,
    /// Items submitted, over all batches.
    pub items: u64,
    /// Items answered by the answer closure (billed).
    pub answered: u64,
    /// Per `custom_id`, how many times it was submitted.
    pub submitted: HashMap<String, u64>,
    /// Bytes of [`BatchFaults::padding_bytes`] sent so far.
    pub padding_sent: u64,
}

struct Batch {
    api: BatchApi,
    items: Vec<(String, Value)>,
    created: Instant,
    created_at: jiff::Timestamp,
    cancelled: bool,
    /// Filled when the batch ends (on the first look after its turnaround or cancel).
    results: Option<Vec<(String, Outcome)>>,
    input_file_id: Option<String>,
    /// OpenAI's `metadata` (an object of strings), as created.
    metadata: Option<Value>,
    /// The key the batch was created with (for [`BatchFaults::echo_key`]).
    key: Option<String>,
    /// Results downloads so far.
    downloads: u32,
    /// The service's first batch (the one [`BatchFaults::malformed_line`] and
    /// [`BatchFaults::padding_bytes`] apply to).
    first: bool,
}

#[derive(Default)]
struct Inner {
    files: HashMap<String, Vec<u8>>,
    batches: HashMap<String, Batch>,
    stats: ServiceStats,
}

/// Both batch APIs in memory; [`BatchService::router`] mounts them under `/v1`.
pub struct BatchService {
    config: ServiceConfig,
    answer: Answer,
    inner: Mutex<Inner>,
    next_id: AtomicU64,
    padding_sent: Arc<AtomicU64>,
}

impl std::fmt::Debug for BatchService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchService")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Bytes one uploaded file or one Anthropic create body may have (the providers' batch
/// limits).
const MAX_UPLOAD: usize = 256_000_000;

impl BatchService {
    /// A service answering items with `answer`.
    pub fn new(config: ServiceConfig, answer: Answer) -> Arc<Self> {
        Arc::new(BatchService {
            config,
            answer,
            inner: Mutex::new(Inner::default()),
            next_id: AtomicU64::new(1),
            padding_sent: Arc::new(AtomicU64::new(0)),
        })
    }

    /// What the service has seen so far.
    pub fn stats(&self) -> ServiceStats {
        let mut stats = self.lock().stats.clone();
        stats.padding_sent = self.padding_sent.load(Ordering::Relaxed);
        stats
    }

    /// The routes: OpenAI's `POST /v1/files`, `GET /v1/files/{id}/content`,
    /// `POST` and `GET /v1/batches` (create, list), `GET /v1/batches/{id}`,
    /// `POST /v1/batches/{id}/cancel`, and Anthropic's `POST` and
    /// `GET /v1/messages/batches`, `GET /v1/messages/batches/{id}`,
    /// `GET /v1/messages/batches/{id}/results`, `POST /v1/messages/batches/{id}/cancel`;
    /// and `GET /batch-stats`, [`ServiceStats`] as JSON (plus `resubmitted`: the ids
    /// submitted more than once), for tests that run the service in another process.
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route("/batch-stats", get(stats))
            .route("/v1/files", post(upload))
            .route("/v1/files/{id}/content", get(file_content))
            .route("/v1/batches", post(openai_create).get(openai_list))
            .route("/v1/batches/{id}", get(openai_get))
            .route("/v1/batches/{id}/cancel", post(openai_cancel))
            .route(
                "/v1/messages/batches",
                post(anthropic_create).get(anthropic_list),
            )
            .route("/v1/messages/batches/{id}", get(anthropic_get))
            .route("/v1/messages/batches/{id}/results", get(anthropic_results))
            .route("/v1/messages/batches/{id}/cancel", post(anthropic_cancel))
            .layer(axum::extract::DefaultBodyLimit::max(MAX_UPLOAD))
            .with_state(Arc::clone(self))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn id(&self, prefix: &str) -> String {
        format!(
            "{prefix}_{:08}",
            self.next_id.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// A share in [0, 1) drawn from the seed, a salt and the item's id.
    fn draw(&self, salt: &str, custom_id: &str) -> f64 {
        let digest = Sha256::new()
            .chain_update(self.config.seed.to_le_bytes())
            .chain_update(salt.as_bytes())
            .chain_update(custom_id.as_bytes())
            .finalize();
        let bits = u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"));
        (bits >> 11) as f64 / (1u64 << 53) as f64
    }

    fn create(
        &self,
        api: BatchApi,
        items: Vec<(String, Value)>,
        input_file_id: Option<String>,
        metadata: Option<Value>,
        key: Option<String>,
    ) -> String {
        let id = self.id(if api == BatchApi::Anthropic {
            "msgbatch"
        } else {
            "batch"
        });
        let mut inner = self.lock();
        inner.stats.batches += 1;
        inner.stats.items += items.len() as u64;
        for (custom_id, _) in &items {
            *inner.stats.submitted.entry(custom_id.clone()).or_default() += 1;
        }
        let first = inner.stats.batches == 1;
        inner.batches.insert(
            id.clone(),
            Batch {
                api,
                items,
                created: Instant::now(),
                created_at: jiff::Timestamp::now(),
                cancelled: false,
                results: None,
                input_file_id,
                metadata,
                key,
                downloads: 0,
                first,
            },
        );
        id
    }

    /// Ends the batch if its time has come (or it was cancelled), answering its items.
    fn settle(&self, inner: &mut Inner, id: &str) {
        let Some(batch) = inner.batches.get(id) else {
            return;
        };
        if batch.results.is_some()
            || self.config.faults.stuck
            || (!batch.cancelled && batch.created.elapsed() < self.config.turnaround)
        {
            return;
        }
        let echo = match (&batch.key, self.config.faults.echo_key) {
            (Some(key), true) => format!(" (request made with key {key})"),
            _ => String::new(),
        };
        let cancelled = batch.cancelled;
        let api = batch.api;
        let mut answered = 0;
        let results: Vec<(String, Outcome)> = batch
            .items
            .iter()
            .map(|(custom_id, body)| {
                let outcome = if cancelled {
                    Outcome::Canceled
                } else if self.draw("expire", custom_id) < self.config.expire_rate {
                    Outcome::Expired
                } else if self.draw("fail", custom_id) < self.config.fail_rate {
                    Outcome::Errored {
                        status: Some(500),
                        message: format!("simulated batch item failure{echo}"),
                    }
                } else {
                    answered += 1;
                    match (self.answer)(api, body) {
                        Ok(body) => Outcome::Succeeded(body),
                        Err((status, message)) => Outcome::Errored {
                            status: Some(status),
                            message: format!("{message}{echo}"),
                        },
                    }
                };
                (custom_id.clone(), outcome)
            })
            .collect();
        inner.stats.answered += answered;
        if let Some(batch) = inner.batches.get_mut(id) {
            batch.results = Some(results);
        }
    }

    fn openai_object(&self, id: &str) -> Option<Value> {
        let mut inner = self.lock();
        self.settle(&mut inner, id);
        let batch = inner.batches.get(id)?;
        let total = batch.items.len();
        let (status, completed, failed) = match &batch.results {
            None => ("in_progress", 0, 0),
            Some(results) => {
                let ok = results
                    .iter()
                    .filter(|(_, o)| matches!(o, Outcome::Succeeded(_)))
                    .count();
                let expired = results.iter().any(|(_, o)| matches!(o, Outcome::Expired));
                let status = if batch.cancelled {
                    "cancelled"
                } else if expired {
                    "expired"
                } else {
                    "completed"
                };
                (status, ok, total - ok)
            }
        };
        let ended = batch.results.is_some();
        Some(json!({
            "id": id,
            "object": "batch",
            "endpoint": batch.api.endpoint(),
            "input_file_id": batch.input_file_id,
            "completion_window": "24h",
            "created_at": batch.created_at.as_second(),
            "expires_at": batch.created_at.as_second() + 24 * 3600,
            "status": status,
            "output_file_id": ended.then(|| format!("file-out-{id}")),
            "error_file_id": ended.then(|| format!("file-err-{id}")),
            "request_counts": {"total": total, "completed": completed, "failed": failed},
            "metadata": batch.metadata,
            "errors": null,
        }))
    }

    fn anthropic_object(&self, id: &str) -> Option<Value> {
        let mut inner = self.lock();
        self.settle(&mut inner, id);
        let batch = inner.batches.get(id)?;
        let mut counts =
            json!({"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0});
        match &batch.results {
            None => counts["processing"] = json!(batch.items.len()),
            Some(results) => {
                for (_, outcome) in results {
                    let key = match outcome {
                        Outcome::Succeeded(_) => "succeeded",
                        Outcome::Errored { .. } | Outcome::Unreadable { .. } => "errored",
                        Outcome::Canceled => "canceled",
                        Outcome::Expired => "expired",
                    };
                    counts[key] = json!(counts[key].as_u64().unwrap_or(0) + 1);
                }
            }
        }
        let ended = batch.results.is_some();
        Some(json!({
            "id": id,
            "type": "message_batch",
            "created_at": batch.created_at.to_string(),
            "expires_at": (batch.created_at + jiff::SignedDuration::from_hours(24)).to_string(),
            "ended_at": ended.then(|| jiff::Timestamp::now().to_string()),
            "archived_at": null,
            "cancel_initiated_at": null,
            "processing_status": if ended { "ended" } else if batch.cancelled { "canceling" } else { "in_progress" },
            "request_counts": counts,
            "results_url": ended.then(|| format!("/v1/messages/batches/{id}/results")),
        }))
    }

    /// One page of a batch list, newest first, as both APIs page it: up to `limit`
    /// batches of `api` created before the batch `after` (from the newest when `None`).
    fn list(&self, api: BatchApi, limit: usize, after: Option<&str>) -> Value {
        let mut ids: Vec<String> = {
            let inner = self.lock();
            inner
                .batches
                .iter()
                .filter(|(_, b)| (b.api == BatchApi::Anthropic) == (api == BatchApi::Anthropic))
                .map(|(id, _)| id.clone())
                .collect()
        };
        // Ids count up, so the largest is the newest.
        ids.sort_unstable_by(|a, b| b.cmp(a));
        let start = after.map_or(0, |after| {
            ids.iter()
                .position(|id| id.as_str() == after)
                .map_or(ids.len(), |i| i + 1)
        });
        let page: Vec<&String> = ids.iter().skip(start).take(limit).collect();
        let data: Vec<Value> = page
            .iter()
            .filter_map(|id| match api {
                BatchApi::Anthropic => self.anthropic_object(id),
                BatchApi::OpenAiChat | BatchApi::OpenAiResponses => self.openai_object(id),
            })
            .collect();
        let mut list = json!({
            "data": data,
            "first_id": page.first(),
            "last_id": page.last(),
            "has_more": start + page.len() < ids.len(),
        });
        if api != BatchApi::Anthropic {
            list["object"] = json!("list");
        }
        list
    }

    /// OpenAI's output (`errors = false`) or error file of an ended batch.
    fn openai_file(&self, batch_id: &str, errors: bool) -> Option<Vec<u8>> {
        let mut inner = self.lock();
        self.settle(&mut inner, batch_id);
        let results = inner.batches.get(batch_id)?.results.as_ref()?;
        let mut out = Vec::new();
        for (n, (custom_id, outcome)) in results.iter().enumerate() {
            let line = match (outcome, errors) {
                (Outcome::Succeeded(body), false) => json!({
                    "id": format!("batch_req_{n}"), "custom_id": custom_id,
                    "response": {"status_code": 200, "request_id": format!("req_{n}"), "body": body},
                    "error": null,
                }),
                (Outcome::Errored { status, message }, true) => json!({
                    "id": format!("batch_req_{n}"), "custom_id": custom_id,
                    "response": {"status_code": status.unwrap_or(500), "request_id": format!("req_{n}"),
                                 "body": {"error": {"message": message, "type": "server_error"}}},
                    "error": null,
                }),
                (Outcome::Expired, true) => json!({
                    "id": format!("batch_req_{n}"), "custom_id": custom_id, "response": null,
                    "error": {"code": "batch_expired", "message": "This request could not be executed before the completion window expired."},
                }),
                (Outcome::Canceled, true) => json!({
                    "id": format!("batch_req_{n}"), "custom_id": custom_id, "response": null,
                    "error": {"code": "batch_cancelled", "message": "This request was not executed because the batch was cancelled."},
                }),
                _ => continue,
            };
            serde_json::to_writer(&mut out, &line).expect("a JSON value serializes");
            out.push(b'\n');
        }
        Some(out)
    }

    fn anthropic_results(&self, id: &str) -> Option<Vec<u8>> {
        let mut inner = self.lock();
        self.settle(&mut inner, id);
        let results = inner.batches.get(id)?.results.as_ref()?;
        let mut out = Vec::new();
        for (custom_id, outcome) in results {
            let result = match outcome {
                Outcome::Succeeded(message) => json!({"type": "succeeded", "message": message}),
                Outcome::Errored { status, message } => json!({"type": "errored", "error": {
                    "type": "error",
                    "error": {"type": if *status == Some(400) { "invalid_request_error" } else { "api_error" }, "message": message},
                }}),
                Outcome::Expired => json!({"type": "expired"}),
                Outcome::Canceled => json!({"type": "canceled"}),
                Outcome::Unreadable { message, .. } => json!({"type": "errored", "error": {
                    "type": "error", "error": {"type": "api_error", "message": message},
                }}),
            };
            serde_json::to_writer(&mut out, &json!({"custom_id": custom_id, "result": result}))
                .expect("a JSON value serializes");
            out.push(b'\n');
        }
        Some(out)
    }

    /// The answer a request about batch `id` gets instead of the batch, under
    /// [`BatchFaults::not_found`] or [`BatchFaults::redirect`].
    fn refusal(&self, id: &str) -> Option<Response> {
        let faults = &self.config.faults;
        if !(faults.not_found || faults.redirect) || !self.lock().batches.contains_key(id) {
            return None;
        }
        Some(if faults.redirect {
            (
                StatusCode::TEMPORARY_REDIRECT,
                [(
                    "location",
                    format!("http://elsewhere.example/v1/batches/{id}"),
                )],
            )
                .into_response()
        } else {
            not_found(id)
        })
    }

    /// A results body of batch `id` (its answered lines: OpenAI's output file or
    /// Anthropic's results, which take the faults; OpenAI's error file does not).
    fn results_response(&self, id: &str, mut body: Vec<u8>, answered: bool) -> Response {
        let faults = &self.config.faults;
        if !answered {
            return jsonl(body);
        }
        let (download, first) = {
            let mut inner = self.lock();
            match inner.batches.get_mut(id) {
                Some(batch) => {
                    batch.downloads += 1;
                    (batch.downloads, batch.first)
                }
                None => return not_found(id),
            }
        };
        if download <= faults.failed_downloads {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("results download {download} of {id} failed (simulated)"),
            );
        }
        if faults.malformed_line
            && first
            && let Some(end) = body.iter().position(|&b| b == b'\n')
        {
            body.drain(end / 2..end);
        }
        let stall = faults
            .stalled_download
            .filter(|_| download == faults.failed_downloads + 1);
        let sent = Arc::clone(&self.padding_sent);
        let padding = padding(if first { faults.padding_bytes } else { 0 }).map(|chunks| {
            chunks.inspect(move |chunk| {
                sent.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            })
        });
        if stall.is_none() && padding.is_none() {
            return jsonl(body);
        }
        let body = bytes::Bytes::from(body);
        let half = body.slice(..body.len() / 2);
        let rest = body.slice(body.len() / 2..);
        let head = futures::stream::iter(padding.into_iter().flatten().chain([half]));
        let tail = futures::stream::once(async move {
            if let Some(stall) = stall {
                tokio::time::sleep(stall).await;
            }
            rest
        });
        let stream = futures::StreamExt::map(
            futures::StreamExt::chain(head, tail),
            Ok::<_, std::io::Error>,
        );
        (
            [("content-type", "application/jsonl")],
            axum::body::Body::from_stream(stream),
        )
            .into_response()
    }

    fn cancel(&self, id: &str) -> bool {
        let mut inner = self.lock();
        match inner.batches.get_mut(id) {
            Some(batch) => {
                if batch.results.is_none() && !self.config.faults.stuck {
                    batch.cancelled = true;
                }
                true
            }
            None => false,
        }
    }
}

/// Chunks of `bytes` bytes (rounded up to whole lines) of result lines of items in no
/// batch, made as they are sent.
fn padding(bytes: u64) -> Option<impl Iterator<Item = bytes::Bytes> + Send> {
    if bytes == 0 {
        return None;
    }
    let line = format!(
        "{}\n",
        json!({"custom_id": "padding-0", "result": {"type": "succeeded", "message": {
            "id": "msg_pad", "type": "message", "role": "assistant", "model": "pad",
            "content": [{"type": "text", "text": "x".repeat(900)}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}}})
    );
    let chunk = bytes::Bytes::from(line.repeat((64 << 10) / line.len() + 1));
    let chunks = bytes.div_ceil(chunk.len() as u64);
    Some((0..chunks).map(move |_| chunk.clone()))
}

type Shared = State<Arc<BatchService>>;

async fn stats(State(service): Shared) -> Response {
    let st = service.stats();
    let mut resubmitted: Vec<&String> = st
        .submitted
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| id)
        .collect();
    resubmitted.sort();
    axum::Json(json!({
        "batches": st.batches,
        "items": st.items,
        "answered": st.answered,
        "distinct_ids": st.submitted.len(),
        "padding_sent": st.padding_sent,
        "resubmitted": resubmitted,
    }))
    .into_response()
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let message = message.into();
    (
        status,
        axum::Json(json!({"error": {"message": message, "type": "invalid_request_error"}})),
    )
        .into_response()
}

fn not_found(id: &str) -> Response {
    error(StatusCode::NOT_FOUND, format!("no batch or file {id:?}"))
}

fn jsonl(body: Vec<u8>) -> Response {
    ([("content-type", "application/jsonl")], body).into_response()
}

async fn upload(State(service): Shared, mut form: Multipart) -> Response {
    let mut purpose = None;
    let mut file = None;
    loop {
        match form.next_field().await {
            Ok(Some(field)) => {
                let name = field.name().unwrap_or("").to_owned();
                match field.bytes().await {
                    Ok(bytes) if name == "purpose" => {
                        purpose = Some(String::from_utf8_lossy(&bytes).into_owned());
                    }
                    Ok(bytes) if name == "file" => file = Some(bytes.to_vec()),
                    Ok(_) => {}
                    Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
                }
            }
            Ok(None) => break,
            Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
        }
    }
    if purpose.as_deref() != Some("batch") {
        return error(StatusCode::BAD_REQUEST, "purpose must be \"batch\"");
    }
    let Some(file) = file else {
        return error(StatusCode::BAD_REQUEST, "no file part");
    };
    let id = service.id("file");
    let bytes = file.len();
    service.lock().files.insert(id.clone(), file);
    axum::Json(json!({
        "id": id, "object": "file", "bytes": bytes, "purpose": "batch",
        "filename": "batch.jsonl", "created_at": jiff::Timestamp::now().as_second(),
        "status": "processed",
    }))
    .into_response()
}

async fn file_content(State(service): Shared, Path(id): Path<String>) -> Response {
    for (prefix, errors) in [("file-out-", false), ("file-err-", true)] {
        if let Some(batch) = id.strip_prefix(prefix) {
            return match service.openai_file(batch, errors) {
                Some(body) => service.results_response(batch, body, !errors),
                None => not_found(&id),
            };
        }
    }
    let file = service.lock().files.get(&id).cloned();
    file.map_or_else(|| not_found(&id), jsonl)
}

/// The key a request was made with (`authorization: Bearer …` or `x-api-key`).
fn request_key(headers: &axum::http::HeaderMap) -> Option<String> {
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let anthropic = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    bearer.or(anthropic).map(str::to_owned)
}

async fn openai_create(
    State(service): Shared,
    headers: axum::http::HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let api = match body.get("endpoint").and_then(Value::as_str) {
        Some("/v1/chat/completions") => BatchApi::OpenAiChat,
        Some("/v1/responses") => BatchApi::OpenAiResponses,
        other => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("unsupported endpoint {other:?}"),
            );
        }
    };
    if body.get("completion_window").and_then(Value::as_str) != Some("24h") {
        return error(StatusCode::BAD_REQUEST, "completion_window must be \"24h\"");
    }
    let Some(file_id) = body.get("input_file_id").and_then(Value::as_str) else {
        return error(StatusCode::BAD_REQUEST, "input_file_id is required");
    };
    let metadata = match body.get("metadata") {
        None | Some(Value::Null) => None,
        Some(Value::Object(m))
            if m.len() <= 16
                && m.iter()
                    .all(|(k, v)| k.len() <= 64 && v.as_str().is_some_and(|v| v.len() <= 512)) =>
        {
            Some(Value::Object(m.clone()))
        }
        Some(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "metadata: up to 16 keys of at most 64 characters, with string values of at most 512",
            );
        }
    };
    let Some(file) = service.lock().files.get(file_id).cloned() else {
        return not_found(file_id);
    };
    let mut items = Vec::new();
    for (n, line) in file.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Ok(line) = serde_json::from_slice::<Value>(line) else {
            return error(
                StatusCode::BAD_REQUEST,
                format!("line {} is not JSON", n + 1),
            );
        };
        let url = line.get("url").and_then(Value::as_str);
        if url != Some(api.endpoint()) || line.get("method").and_then(Value::as_str) != Some("POST")
        {
            return error(
                StatusCode::BAD_REQUEST,
                format!("line {}: method/url must be POST {}", n + 1, api.endpoint()),
            );
        }
        let (Some(custom_id), Some(body)) = (
            line.get("custom_id").and_then(Value::as_str),
            line.get("body"),
        ) else {
            return error(
                StatusCode::BAD_REQUEST,
                format!("line {}: custom_id and body are required", n + 1),
            );
        };
        if items
            .iter()
            .any(|(id, _): &(String, Value)| id == custom_id)
        {
            return error(
                StatusCode::BAD_REQUEST,
                format!("duplicate custom_id {custom_id:?}"),
            );
        }
        items.push((custom_id.to_owned(), body.clone()));
    }
    if items.is_empty() {
        return error(StatusCode::BAD_REQUEST, "the input file has no requests");
    }
    let id = service.create(
        api,
        items,
        Some(file_id.to_owned()),
        metadata,
        request_key(&headers),
    );
    tokio::time::sleep(service.config.create_latency).await;
    service
        .openai_object(&id)
        .map_or_else(|| not_found(&id), |v| axum::Json(v).into_response())
}

/// A list request's `limit` (1 to `max`, 20 when absent) and cursor.
fn page_query(
    query: &HashMap<String, String>,
    cursor: &str,
    max: usize,
) -> Result<(usize, Option<String>), String> {
    let limit = match query.get("limit") {
        // both APIs' default page
        None => 20,
        Some(n) => match n.parse::<usize>() {
            Ok(n) if (1..=max).contains(&n) => n,
            _ => return Err(format!("limit must be 1 to {max}")),
        },
    };
    Ok((limit, query.get(cursor).cloned()))
}

/// One page of the batch list of `api`, paged by the query's `cursor`; `max` batches
/// at most per page.
async fn list_page(
    service: Arc<BatchService>,
    query: HashMap<String, String>,
    api: BatchApi,
    cursor: &str,
    max: usize,
) -> Response {
    match page_query(&query, cursor, max) {
        Ok((limit, after)) => {
            axum::Json(service.list(api, limit, after.as_deref())).into_response()
        }
        Err(message) => error(StatusCode::BAD_REQUEST, message),
    }
}

async fn openai_list(
    State(service): Shared,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    list_page(service, query, BatchApi::OpenAiChat, "after", 100).await
}

async fn anthropic_list(
    State(service): Shared,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    list_page(service, query, BatchApi::Anthropic, "after_id", 1000).await
}

async fn openai_get(State(service): Shared, Path(id): Path<String>) -> Response {
    if let Some(refusal) = service.refusal(&id) {
        return refusal;
    }
    service
        .openai_object(&id)
        .map_or_else(|| not_found(&id), |v| axum::Json(v).into_response())
}

async fn openai_cancel(State(service): Shared, Path(id): Path<String>) -> Response {
    if let Some(refusal) = service.refusal(&id) {
        return refusal;
    }
    if !service.cancel(&id) {
        return not_found(&id);
    }
    openai_get(State(service), Path(id)).await
}

async fn anthropic_create(
    State(service): Shared,
    headers: axum::http::HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let Some(requests) = body.get("requests").and_then(Value::as_array) else {
        return error(StatusCode::BAD_REQUEST, "requests: an array is required");
    };
    let mut items: Vec<(String, Value)> = Vec::with_capacity(requests.len());
    for (n, request) in requests.iter().enumerate() {
        let (Some(custom_id), Some(params)) = (
            request.get("custom_id").and_then(Value::as_str),
            request.get("params"),
        ) else {
            return error(
                StatusCode::BAD_REQUEST,
                format!("requests.{n}: custom_id and params are required"),
            );
        };
        if crate::check_custom_id(custom_id).is_err() {
            return error(
                StatusCode::BAD_REQUEST,
                format!("requests.{n}.custom_id: invalid"),
            );
        }
        if items.iter().any(|(id, _)| id == custom_id) {
            return error(
                StatusCode::BAD_REQUEST,
                format!("duplicate custom_id {custom_id:?}"),
            );
        }
        items.push((custom_id.to_owned(), params.clone()));
    }
    if items.is_empty() {
        return error(
            StatusCode::BAD_REQUEST,
            "requests: at least one is required",
        );
    }
    let id = service.create(
        BatchApi::Anthropic,
        items,
        None,
        None,
        request_key(&headers),
    );
    tokio::time::sleep(service.config.create_latency).await;
    service
        .anthropic_object(&id)
        .map_or_else(|| not_found(&id), |v| axum::Json(v).into_response())
}

async fn anthropic_get(State(service): Shared, Path(id): Path<String>) -> Response {
    if let Some(refusal) = service.refusal(&id) {
        return refusal;
    }
    service
        .anthropic_object(&id)
        .map_or_else(|| not_found(&id), |v| axum::Json(v).into_response())
}

async fn anthropic_results(State(service): Shared, Path(id): Path<String>) -> Response {
    if let Some(refusal) = service.refusal(&id) {
        return refusal;
    }
    match service.anthropic_results(&id) {
        Some(body) => service.results_response(&id, body, true),
        None => not_found(&id),
    }
}

async fn anthropic_cancel(State(service): Shared, Path(id): Path<String>) -> Response {
    if let Some(refusal) = service.refusal(&id) {
        return refusal;
    }
    if !service.cancel(&id) {
        return not_found(&id);
    }
    anthropic_get(State(service), Path(id)).await
}
