//! The simulated HTTP server: OpenAI Chat Completions, OpenAI Responses and Anthropic
//! Messages backed by [`baton_models::SimProvider`], with a prompt cache and
//! deterministic fault injection.
//!
//! Routes: `POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1/messages`,
//! `GET /v1/models`, `GET /stats` (what the server has seen, [`SimServerStats`],
//! including how many HTTP 200 responses it sent), and `GET /received` (the last
//! [`RECEIVED_KEPT`] request bodies, so tests can assert exactly what a client sent). The request's `model` (`lc`, `hc`, or `sim/lc`) selects the
//! simulated model, so answers are the same ones `sim/...` models give and score the
//! same way. Usage is realistic: prompt tokens are counted like the simulated models
//! count them, and a prompt cache turns repeated prefixes into cache reads (and, on the
//! Anthropic route with `cache_control`, cache writes). The cache keeps, per (API,
//! model), every message prefix it has seen; a request's longest seen prefix is read,
//! and on the Anthropic route the rest up to the breakpoint is written. It has no
//! minimum size and no expiry (real providers need 1,024+ tokens and forget after
//! minutes), so short simulated prompts show cache reads from their second turn on. A reasoning
//! effort (`reasoning_effort`, `reasoning.effort`, Anthropic's `output_config.effort`; Anthropic
//! `thinking` of type `enabled` or `adaptive` without an effort counts as `medium`) adds
//! reasoning tokens (4 minimal, 16 low, 64 medium, 256 high, 512 xhigh, 1024 max) and, on the
//! Responses route, an opaque reasoning item the client must not send back, on the Anthropic
//! route a signed `thinking` block.
//!
//! Replies carry every field the official SDKs' types require (`openai` 3.57, `anthropic`
//! 2.14 validate them strictly in the interop tests). The server refuses what the real APIs
//! refuse and what a client must never send: `stream: true` (streaming is not served: a 400
//! that says so, rather than a plain JSON reply a streaming client would misread), replayed
//! reasoning items, thinking blocks, a missing `max_tokens` or `anthropic-version`, an empty
//! Anthropic message other than a final assistant prefill, a thinking budget below 1,024 or
//! not below `max_tokens`, an unknown effort, `temperature`, `top_p` or `top_k` on the
//! Anthropic route for a model whose current API has none
//! ([`baton_models::claude::takes_temperature`]: Claude 4.7 on, and the simulated ids),
//! and `max_tokens` on a Chat request with a reasoning effort (reasoning models take
//! `max_completion_tokens`).
//!
//! Other providers can be served beside the chat sims ([`SimServerConfig::providers`]):
//! the simulated coding agent (`baton-agent`'s `sim/...` agents) answers with tool calls,
//! which every route writes in its API's shape and reads back in the next request
//! (Chat's `tool_calls` and `tool` messages, Responses' `function_call` and
//! `function_call_output` items, Anthropic's `tool_use` and `tool_result` blocks). Their
//! usage is counted by the same rules, tool calls' text included.
//!
//! Batch APIs: [`serve_with`] mounts more routes beside these (the binary mounts
//! `baton-batch`'s in-memory OpenAI Batch API and Anthropic Message Batches), and hands
//! them a [`SimAnswerer`] that answers a batch item exactly as the direct route would
//! (same parsing, refusals, models and prompt cache; no faults or latency, which the
//! batch service draws itself). Such items count in `batch_items`, never in `requests`,
//! so a test can assert that a batched run sent no direct completion request.
//!
//! Faults: each request is fingerprinted (route + body); its `n`-th arrival draws a
//! fault with probability `fault_rate` from `faults`, as a pure function of
//! `(seed, fingerprint, n)`. See [`FaultKind`].
//!
//! Repeats: a client's episode seed stays home (only a configured `seed` is sent), so
//! two replicates of an episode send byte-identical requests. Like a sampling model, the
//! server answers a repeat afresh: the `n`-th arrival of the same body (a batch item
//! counts apart) is answered with its seed (or 0) mixed with `n` ([`repeat_seed`]), the
//! first arrival with the seed as sent. So replicates differ where the simulated model's
//! draws allow, and a run is reproducible up to which of its identical requests arrives
//! first. A request sent with `temperature = 0` asks for no sampling: its repeats are
//! answered as the first was, so a run at temperature 0 (and its resume, which may send
//! again what was in flight when it stopped) is reproducible exactly.

mod api;
mod cache;
mod conn;
mod fault;

pub use fault::{FaultKind, FaultList};

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use baton_models::tokens::text_tokens;
use baton_models::{Provider, Request, SimProvider, SimSettings};
use baton_types::{Task, Usage};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::HttpError;
use api::{Api, Refusal};
use cache::PrefixCache;
use conn::{Conn, CuttableListener};

/// Settings of the simulated server.
#[derive(Debug, Clone)]
pub struct SimServerConfig {
    /// Address to bind; default 127.0.0.1.
    pub host: IpAddr,
    /// Port; 0 picks a free one (default).
    pub port: u16,
    /// The tasks the simulated models recognise (their shards are the user turns).
    pub tasks: Vec<Task>,
    /// Simulated models by the id requests name; default `lc` and `hc` presets.
    pub models: BTreeMap<String, SimSettings>,
    /// Added latency per answered request, in milliseconds (default 0); a model's own
    /// `latency_ms` adds to it.
    pub latency_ms: u64,
    /// Chance that a request gets a fault (0..=1, default 0).
    pub fault_rate: f64,
    /// Faults to draw from (default [`FaultKind::RETRYABLE`]).
    pub faults: Vec<FaultKind>,
    /// Seed of the fault draws (default 0).
    pub seed: u64,
    /// What a `rate-limit` fault asks the client to wait, in milliseconds (default
    /// 1000; sent as `retry-after-ms` on OpenAI routes and as whole seconds in
    /// `retry-after` everywhere).
    pub retry_after_ms: u64,
    /// How long a `stall` fault holds a request, in milliseconds (default 300,000:
    /// past any sensible client timeout).
    pub stall_ms: u64,
    /// Further models by the id requests name, answered by these providers (which get
    /// the request as parsed, model id included); default none. The simulated coding
    /// agent is served this way.
    pub providers: BTreeMap<String, ServedProvider>,
}

/// A provider the simulated server answers some model ids with.
#[derive(Clone)]
pub struct ServedProvider(pub Arc<dyn Provider>);

impl std::fmt::Debug for ServedProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServedProvider({})", self.0.kind())
    }
}

impl SimServerConfig {
    /// Defaults for these tasks: 127.0.0.1, any port, `lc` and `hc`, no faults.
    pub fn new(tasks: Vec<Task>) -> Self {
        SimServerConfig {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            tasks,
            models: ["lc", "hc"]
                .into_iter()
                .map(|m| (m.to_string(), SimSettings::preset(m)))
                .collect(),
            latency_ms: 0,
            fault_rate: 0.0,
            faults: FaultKind::RETRYABLE.to_vec(),
            seed: 0,
            retry_after_ms: 1000,
            stall_ms: 300_000,
            providers: BTreeMap::new(),
        }
    }

    fn check(&self) -> Result<(), HttpError> {
        if !(0.0..=1.0).contains(&self.fault_rate) {
            return Err(HttpError::SimConfig(format!(
                "fault rate {} is outside 0..=1",
                self.fault_rate
            )));
        }
        if self.fault_rate > 0.0 && self.faults.is_empty() {
            return Err(HttpError::SimConfig(
                "a fault rate above 0 needs at least one fault kind".into(),
            ));
        }
        if self.models.is_empty() && self.providers.is_empty() {
            return Err(HttpError::SimConfig("no simulated models".into()));
        }
        Ok(())
    }
}

/// What the server has seen so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimServerStats {
    /// Requests received on the API routes.
    pub requests: u64,
    /// Requests answered with a scorable reply.
    pub answered: u64,
    /// Responses sent with HTTP 200: scorable replies plus the `empty` and `malformed`
    /// faults. A provider bills every one of them, so a client's count of billed
    /// attempts must equal it.
    pub ok_responses: u64,
    /// The usage those replies reported, summed (what a client should have stored).
    pub sent: Usage,
    /// Faults injected, by kind.
    pub faults: BTreeMap<FaultKind, u64>,
    /// Requests refused as invalid (4xx other than injected faults).
    pub refused: u64,
    /// Requests that carried credentials (`authorization` or `x-api-key`).
    pub with_credentials: u64,
    /// Requests answered through [`SimAnswerer::answer`] (batch items, for the batch
    /// routes mounted beside the direct ones): counted here and, when answered, in
    /// `answered`, `ok_responses` and `sent`, never in `requests`.
    pub batch_items: u64,
}

struct Shared {
    config: SimServerConfig,
    sim: SimProvider,
    cache: PrefixCache,
    occurrences: Mutex<HashMap<[u8; 32], u64>>,
    stats: Mutex<SimServerStats>,
    received: Mutex<std::collections::VecDeque<Value>>,
    next_id: AtomicU64,
    shutdown: watch::Receiver<bool>,
}

/// A running simulated server.
#[derive(Debug)]
pub struct SimServerHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    task: JoinHandle<std::io::Result<()>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

impl SimServerHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL for experiment files: `http://ADDR/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Counters so far.
    pub fn stats(&self) -> SimServerStats {
        self.shared.stats.lock().expect("stats lock").clone()
    }

    /// The last [`RECEIVED_KEPT`] JSON request bodies the API routes received, oldest
    /// first, each as `{"route": "/v1/messages", "body": {...}}`: what a client sent,
    /// byte for byte as JSON, for tests that assert it.
    pub fn received(&self) -> Vec<Value> {
        self.shared
            .received
            .lock()
            .expect("received lock")
            .iter()
            .cloned()
            .collect()
    }

    /// Stop accepting, end stalled requests, finish in-flight replies, and wait.
    pub async fn shutdown(self) -> Result<(), HttpError> {
        let _ = self.stop.send(true);
        match self.task.await {
            Ok(r) => r.map_err(HttpError::Serve),
            Err(e) => Err(HttpError::Serve(std::io::Error::other(e.to_string()))),
        }
    }

    /// Serve until Ctrl-C, then shut down.
    pub async fn run_until_ctrl_c(self) -> Result<(), HttpError> {
        tokio::signal::ctrl_c().await.map_err(HttpError::Serve)?;
        self.shutdown().await
    }
}

/// Bind and start the simulated server in the background.
pub async fn serve(config: SimServerConfig) -> Result<SimServerHandle, HttpError> {
    serve_with(config, |_| Router::new()).await
}

/// What the direct routes answer, for routes mounted beside them ([`serve_with`]): the
/// batch APIs answer each item with it, so a batched reply is the reply the direct
/// route would have sent.
#[derive(Debug, Clone)]
pub struct SimAnswerer(Arc<Shared>);

impl SimAnswerer {
    /// Answers `body` as `POST route` (`/v1/chat/completions`, `/v1/responses` or
    /// `/v1/messages`) answers a request with these headers, by the same parsing,
    /// refusals, simulated models and prompt cache, but without faults or latency (a
    /// batch service draws its own): the reply body, or the HTTP status and message of
    /// the refusal. Models served by [`SimServerConfig::providers`] are answered on the
    /// direct routes only.
    pub fn answer(
        &self,
        route: &str,
        headers: &HeaderMap,
        body: &Value,
    ) -> Result<Value, (u16, String)> {
        let s = &self.0;
        let api = match route {
            "/v1/chat/completions" => Api::Chat,
            "/v1/responses" => Api::Responses,
            "/v1/messages" => Api::Messages,
            _ => return Err((404, format!("no route {route}"))),
        };
        s.stats.lock().expect("stats lock").batch_items += 1;
        let refused = |r: Refusal| {
            s.stats.lock().expect("stats lock").refused += 1;
            (r.status.as_u16(), r.message)
        };
        let (parsed, _) = lookup(s, api, headers, body).map_err(refused)?;
        if s.config.providers.contains_key(&parsed.request.model) {
            return Err(refused(Refusal {
                status: StatusCode::BAD_REQUEST,
                kind: "invalid_request_error",
                message: format!(
                    "model `{}` is served on the direct routes only",
                    parsed.request.model
                ),
            }));
        }
        let occurrence = {
            let mut h = Sha256::new();
            h.update(b"batch");
            h.update([api as u8]);
            h.update(body.to_string().as_bytes());
            let mut seen = s.occurrences.lock().expect("occurrences lock");
            let n = seen.entry(h.finalize().into()).or_default();
            *n += 1;
            *n - 1
        };
        let mut request = parsed.request.clone();
        request.seed = repeat_seed(&request, occurrence);
        let answer = s.sim.reply(&request).map_err(|e| (500, e.to_string()))?;
        s.stats.lock().expect("stats lock").ok_responses += 1;
        let (reply, usage) = scored_reply(s, api, &parsed, &answer);
        let mut st = s.stats.lock().expect("stats lock");
        st.answered += 1;
        st.sent += usage;
        Ok(reply)
    }
}

/// [`serve`], with more routes beside the simulated APIs: `extra` gets the
/// [`SimAnswerer`] of this server and returns a router to merge (the binary mounts
/// `baton-batch`'s batch service this way, which this crate cannot name).
pub async fn serve_with(
    config: SimServerConfig,
    extra: impl FnOnce(SimAnswerer) -> Router,
) -> Result<SimServerHandle, HttpError> {
    config.check()?;
    let sim = SimProvider::new(config.tasks.clone(), config.models.clone())
        .map_err(HttpError::SimConfig)?;
    let bind = SocketAddr::new(config.host, config.port);
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|source| HttpError::Bind { addr: bind, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| HttpError::Bind { addr: bind, source })?;
    let (stop, shutdown) = watch::channel(false);
    let shared = Arc::new(Shared {
        config,
        sim,
        cache: PrefixCache::default(),
        occurrences: Mutex::new(HashMap::new()),
        stats: Mutex::new(SimServerStats::default()),
        received: Mutex::new(std::collections::VecDeque::new()),
        next_id: AtomicU64::new(1),
        shutdown: shutdown.clone(),
    });
    let app = Router::new()
        .route(
            "/v1/chat/completions",
            post(|s, c, h, b| handle(Api::Chat, s, c, h, b)),
        )
        .route(
            "/v1/responses",
            post(|s, c, h, b| handle(Api::Responses, s, c, h, b)),
        )
        .route(
            "/v1/messages",
            post(|s, c, h, b| handle(Api::Messages, s, c, h, b)),
        )
        .route("/v1/models", get(models))
        .route("/stats", get(stats))
        .route("/received", get(received))
        .with_state(shared.clone())
        .merge(extra(SimAnswerer(shared.clone())));
    let mut done = shutdown;
    let task = tokio::spawn(async move {
        axum::serve(
            CuttableListener(listener),
            app.into_make_service_with_connect_info::<Conn>(),
        )
        .with_graceful_shutdown(async move {
            let _ = done.wait_for(|stop| *stop).await;
        })
        .await
    });
    tracing::info!(%addr, "simulated server listening");
    Ok(SimServerHandle {
        addr,
        shared,
        stop,
        task,
    })
}

async fn models(State(s): State<Arc<Shared>>) -> Response {
    let data: Vec<Value> = s
        .config
        .models
        .keys()
        .chain(s.config.providers.keys())
        .map(|m| json!({"id": m, "object": "model", "owned_by": "baton-sim"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

/// How many request bodies [`SimServerHandle::received`] and `GET /received` keep.
pub const RECEIVED_KEPT: usize = 256;

/// `GET /received`: [`SimServerHandle::received`] as a JSON array, for tests that run the
/// server as a separate process.
async fn received(State(s): State<Arc<Shared>>) -> Response {
    let list: Vec<Value> = s
        .received
        .lock()
        .expect("received lock")
        .iter()
        .cloned()
        .collect();
    axum::Json(Value::Array(list)).into_response()
}

/// `GET /stats`: [`SimServerStats`] as JSON, for tests and scripts that run the server
/// as a separate process.
async fn stats(State(s): State<Arc<Shared>>) -> Response {
    let st = s.stats.lock().expect("stats lock").clone();
    let faults: serde_json::Map<String, Value> = st
        .faults
        .iter()
        .map(|(k, n)| (k.name().to_string(), json!(n)))
        .collect();
    axum::Json(json!({
        "requests": st.requests,
        "answered": st.answered,
        "ok_responses": st.ok_responses,
        "faults": faults,
        "refused": st.refused,
        "with_credentials": st.with_credentials,
        "batch_items": st.batch_items,
    }))
    .into_response()
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn refusal(api: Api, r: Refusal) -> Response {
    let kind = match (api, r.status) {
        (Api::Messages, StatusCode::NOT_FOUND) => "not_found_error",
        _ => r.kind,
    };
    json_response(r.status, &api::error(api, kind, None, &r.message))
}

async fn handle(
    api: Api,
    State(s): State<Arc<Shared>>,
    ConnectInfo(conn): ConnectInfo<Conn>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let fingerprint: [u8; 32] = {
        let mut h = Sha256::new();
        h.update([api as u8]);
        h.update(&body);
        h.finalize().into()
    };
    let occurrence = {
        let mut seen = s.occurrences.lock().expect("occurrences lock");
        let n = seen.entry(fingerprint).or_default();
        *n += 1;
        *n - 1
    };
    {
        let mut st = s.stats.lock().expect("stats lock");
        st.requests += 1;
        if headers.contains_key(header::AUTHORIZATION) || headers.contains_key("x-api-key") {
            st.with_credentials += 1;
        }
    }
    let c = &s.config;
    let fault = fault::draw(c.seed, &fingerprint, occurrence, c.fault_rate, &c.faults);
    if let Some(kind) = fault {
        *s.stats
            .lock()
            .expect("stats lock")
            .faults
            .entry(kind)
            .or_default() += 1;
        tracing::debug!(peer = %conn.peer, fault = %kind, "injecting fault");
        match kind {
            FaultKind::RateLimit => return rate_limited(api, c.retry_after_ms),
            FaultKind::InsufficientQuota => {
                let body = match api {
                    Api::Messages => api::error(
                        api,
                        "rate_limit_error",
                        Some("enforced_spend_limit_reached"),
                        "This organization has reached its spend limit.",
                    ),
                    _ => api::error(
                        api,
                        "insufficient_quota",
                        Some("insufficient_quota"),
                        "You exceeded your current quota, please check your plan and billing details.",
                    ),
                };
                return json_response(StatusCode::TOO_MANY_REQUESTS, &body);
            }
            FaultKind::ServerError => {
                let kind = if api == Api::Messages {
                    "api_error"
                } else {
                    "server_error"
                };
                return json_response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &api::error(
                        api,
                        kind,
                        None,
                        "The server had an error while processing your request.",
                    ),
                );
            }
            FaultKind::Overloaded => {
                let (status, kind) = match api {
                    Api::Messages => (
                        StatusCode::from_u16(529).expect("529 is a valid status"),
                        "overloaded_error",
                    ),
                    _ => (StatusCode::SERVICE_UNAVAILABLE, "server_is_overloaded"),
                };
                return json_response(status, &api::error(api, kind, None, "Overloaded"));
            }
            FaultKind::Reset => {
                conn.cut();
                return StatusCode::OK.into_response();
            }
            FaultKind::Stall => {
                let mut stop = s.shutdown.clone();
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(c.stall_ms)) => {}
                    _ = stop.wait_for(|v| *v) => {
                        return StatusCode::SERVICE_UNAVAILABLE.into_response();
                    }
                }
            }
            FaultKind::Malformed | FaultKind::Empty => {}
        }
    }
    let value: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            s.stats.lock().expect("stats lock").refused += 1;
            return refusal(
                api,
                Refusal {
                    status: StatusCode::BAD_REQUEST,
                    kind: "invalid_request_error",
                    message: format!("the body is not JSON: {e}"),
                },
            );
        }
    };
    {
        let mut kept = s.received.lock().expect("received lock");
        if kept.len() == RECEIVED_KEPT {
            kept.pop_front();
        }
        let route = match api {
            Api::Chat => "/v1/chat/completions",
            Api::Responses => "/v1/responses",
            Api::Messages => "/v1/messages",
        };
        kept.push_back(json!({"route": route, "body": value}));
    }
    let (parsed, settings) = match lookup(&s, api, &headers, &value) {
        Ok(found) => found,
        Err(r) => {
            s.stats.lock().expect("stats lock").refused += 1;
            return refusal(api, r);
        }
    };
    let served_by = c.providers.get(&parsed.request.model);
    let latency = c.latency_ms + settings.latency_ms;
    if latency > 0 {
        tokio::time::sleep(Duration::from_millis(latency)).await;
    }
    let mut request = parsed.request.clone();
    request.seed = repeat_seed(&request, occurrence);
    let answer = match served_by {
        Some(p) => p.0.generate(&request).await,
        None => s.sim.reply(&request),
    };
    let answer = match answer {
        Ok(r) => r,
        // a served provider's own error status goes out as that status (a 400 for a
        // context that is too long, as a real API sends it)
        Err(baton_models::ProviderError::Status {
            status,
            kind,
            message,
            ..
        }) if (400..600).contains(&status) => {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return json_response(code, &api::error(api, &kind, None, &message));
        }
        Err(e) => {
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &api::error(api, "server_error", None, &e.to_string()),
            );
        }
    };
    s.stats.lock().expect("stats lock").ok_responses += 1;
    if fault == Some(FaultKind::Empty) {
        let id = format!("sim{:08x}", s.next_id.fetch_add(1, Ordering::Relaxed));
        let served = format!("sim/{}", parsed.request.model);
        let reasoning = reasoning_tokens(&parsed.request);
        let usage = Usage {
            uncached_in: parsed
                .request
                .messages
                .iter()
                .map(baton_models::tokens::message_tokens)
                .sum(),
            output: reasoning,
            reasoning,
            ..Usage::default()
        };
        return json_response(
            StatusCode::OK,
            &api::reply(api, &id, &served, "", &[], &usage),
        );
    }
    let (reply, usage) = scored_reply(&s, api, &parsed, &answer);
    if fault == Some(FaultKind::Malformed) {
        let mut bytes = reply.to_string().into_bytes();
        bytes.truncate(bytes.len() / 2);
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            bytes,
        )
            .into_response();
    }
    {
        let mut st = s.stats.lock().expect("stats lock");
        st.answered += 1;
        st.sent += usage;
    }
    json_response(StatusCode::OK, &reply)
}

/// The seed a request's `occurrence`-th identical arrival is answered with: the seed as
/// sent the first time (and every time at temperature 0), then the seed (or 0) mixed
/// with the arrival's number (SplitMix64's finalizer), so each repeat draws apart.
fn repeat_seed(request: &Request, occurrence: u64) -> Option<u64> {
    let seed = request.seed;
    if occurrence == 0 || request.config.temperature == Some(0.0) {
        return seed;
    }
    let mut z = seed
        .unwrap_or(0)
        .wrapping_add(occurrence.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    Some(z ^ (z >> 31))
}

fn rate_limited(api: Api, retry_after_ms: u64) -> Response {
    let body = match api {
        Api::Messages => api::error(
            api,
            "rate_limit_error",
            None,
            "Number of requests has exceeded your rate limit. Please try again later.",
        ),
        _ => api::error(
            api,
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached for requests. Please try again later.",
        ),
    };
    let mut r = json_response(StatusCode::TOO_MANY_REQUESTS, &body);
    let h = r.headers_mut();
    let secs = retry_after_ms.div_ceil(1000);
    h.insert("retry-after", HeaderValue::from(secs));
    if api != Api::Messages {
        h.insert("retry-after-ms", HeaderValue::from(retry_after_ms));
    }
    r
}

/// The request parsed as `api` reads it, and the settings of the simulated model it
/// names (or the refusal the API would send).
fn lookup(
    s: &Shared,
    api: Api,
    headers: &HeaderMap,
    value: &Value,
) -> Result<(api::Parsed, SimSettings), Refusal> {
    let parsed = api::parse(api, headers, value)?;
    let model = &parsed.request.model;
    let settings = s.config.models.get(model).copied().or_else(|| {
        s.config.providers.get(model).map(|_| SimSettings {
            latency_ms: 0,
            ..SimSettings::default()
        })
    });
    match settings {
        Some(settings) => Ok((parsed, settings)),
        None => Err(Refusal {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            message: format!("The model `{model}` does not exist"),
        }),
    }
}

/// The reply body for an answer, with realistic usage (the prompt cache's reads and
/// writes, the answer's tokens and the effort's reasoning tokens).
fn scored_reply(
    s: &Shared,
    api: Api,
    parsed: &api::Parsed,
    answer: &baton_models::Response,
) -> (Value, Usage) {
    let model = &parsed.request.model;
    let id = format!("sim{:08x}", s.next_id.fetch_add(1, Ordering::Relaxed));
    let served = format!("sim/{model}");
    let mut usage = s
        .cache
        .prompt_usage(api, model, &parsed.request.messages, parsed.cache);
    let calls: u64 = answer
        .tool_calls
        .iter()
        .map(|c| text_tokens(&c.name) + text_tokens(&c.arguments))
        .sum();
    let reasoning = reasoning_tokens(&parsed.request);
    usage.output = text_tokens(&answer.text) + calls + reasoning;
    usage.reasoning = reasoning;
    let reply = api::reply(api, &id, &served, &answer.text, &answer.tool_calls, &usage);
    (reply, usage)
}

/// Reasoning tokens a request's effort adds to a reply.
fn reasoning_tokens(request: &baton_models::Request) -> u64 {
    match request.config.reasoning_effort.as_deref() {
        Some("minimal") => 4,
        Some("low") => 16,
        Some("medium") => 64,
        Some("high") => 256,
        Some("xhigh") => 512,
        Some("max") => 1024,
        _ => 0,
    }
}
