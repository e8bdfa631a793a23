//! A scripted provider for tests (behind the `testing` cargo feature).
//!
//! [`ScriptedProvider`] plays back a script of outcomes, one per call, then answers
//! every further call with its default reply. It records when each call came (on
//! tokio's clock, so `start_paused` tests see exact backoff gaps) and what it asked,
//! so tests of [`crate::Model`] and of code above it can check retries, pacing and
//! the requests sent without a network or a simulated model.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use baton_models::testing::ScriptedProvider;
//! use baton_models::{Provider, ProviderError, Request};
//!
//! let p = ScriptedProvider::new().then_err(ProviderError::Connection("reset".into()));
//! let request = Request { model: "m".into(), messages: vec![], config: Default::default(), seed: None, tools: vec![], tool_choice: None };
//! assert!(p.generate(&request).await.is_err());
//! assert_eq!(p.generate(&request).await.unwrap().text, "ok");
//! assert_eq!(p.requests().len(), 2);
//! # }
//! ```

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use baton_types::Usage;
use tokio::time::Instant;

use crate::provider::{Provider, ProviderError, Request, Response};

/// A provider that answers from a script; see the module docs.
#[derive(Debug)]
pub struct ScriptedProvider {
    script: Mutex<VecDeque<Result<Response, ProviderError>>>,
    default: Response,
    calls: Mutex<Vec<(Instant, Request)>>,
}

impl Default for ScriptedProvider {
    fn default() -> Self {
        ScriptedProvider::new()
    }
}

impl ScriptedProvider {
    /// An empty script whose default reply is `ok`, with 10 uncached prompt tokens and
    /// 5 output tokens, served as `scripted-1`, finish reason `stop`.
    pub fn new() -> Self {
        ScriptedProvider {
            script: Mutex::new(VecDeque::new()),
            default: ScriptedProvider::reply("ok"),
            calls: Mutex::new(Vec::new()),
        }
    }

    /// A response with `text` and the default usage (10 prompt, 5 output tokens).
    pub fn reply(text: &str) -> Response {
        Response {
            text: text.to_string(),
            usage: Usage {
                uncached_in: 10,
                output: 5,
                ..Usage::default()
            },
            model_served: "scripted-1".into(),
            finish_reason: Some("stop".into()),
            raw: None,
            tool_calls: Vec::new(),
            batch_id: None,
            batch_item: None,
        }
    }

    /// Append an error to the script.
    pub fn then_err(self, error: ProviderError) -> Self {
        self.push(Err(error));
        self
    }

    /// Append a response to the script.
    pub fn then_ok(self, response: Response) -> Self {
        self.push(Ok(response));
        self
    }

    /// Append errors to the script, in order.
    pub fn then_errs(self, errors: impl IntoIterator<Item = ProviderError>) -> Self {
        for e in errors {
            self.push(Err(e));
        }
        self
    }

    /// Answer every call past the script with `response`.
    pub fn with_default(mut self, response: Response) -> Self {
        self.default = response;
        self
    }

    fn push(&self, outcome: Result<Response, ProviderError>) {
        self.script.lock().expect("script lock").push_back(outcome);
    }

    /// When each call came, as offsets from the first call.
    pub fn call_offsets(&self) -> Vec<Duration> {
        let calls = self.calls.lock().expect("calls lock");
        calls
            .iter()
            .map(|(t, _)| t.duration_since(calls[0].0))
            .collect()
    }

    /// The requests received, in order.
    pub fn requests(&self) -> Vec<Request> {
        let calls = self.calls.lock().expect("calls lock");
        calls.iter().map(|(_, r)| r.clone()).collect()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn kind(&self) -> &str {
        "scripted"
    }

    async fn generate(&self, request: &Request) -> Result<Response, ProviderError> {
        self.calls
            .lock()
            .expect("calls lock")
            .push((Instant::now(), request.clone()));
        let next = self.script.lock().expect("script lock").pop_front();
        next.unwrap_or_else(|| Ok(self.default.clone()))
    }
}
