//! End to end: a small experiment whose models are HTTP providers pointed at the
//! simulated server, with 20 % injected retryable faults. Every episode ends with a
//! status (and a reason when incomplete), stored costs equal usage x card, no key is
//! stored, and a second run repeats no request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use baton_http::{FaultKind, HttpProviders};
use baton_runner::{ExperimentSpec, RunOptions, Runner};
use baton_store::Reader;
use baton_types::EpisodeStatus;

use crate::{fake_key, hand_cost, server};

const OPENAI_VAR: &str = "BATON_IT_E2E_OPENAI_KEY";
const ANTHROPIC_VAR: &str = "BATON_IT_E2E_ANTHROPIC_KEY";
const SECRET: &str = "sk-e2e-STOREDCHECK-feedface";

fn spec(base_url: &str) -> String {
    format!(
        r#"
name = "http-e2e"
dataset = "sample"
limit = 1
seed = 11
concurrency = 4
switch_points = ["early", "late"]

[models.oa_lc]
model = "openai/lc"
base_url = "{base_url}"
api_key_env = "{OPENAI_VAR}"
price = "sim/lc"

[models.resp_hc]
model = "openai-responses/hc"
base_url = "{base_url}"
api_key_env = "{OPENAI_VAR}"
price = "sim/hc"

[models.an_lc]
model = "anthropic/lc"
base_url = "{base_url}"
api_key_env = "{ANTHROPIC_VAR}"
price = "sim/lc"

[models.compat_hc]
model = "openai-compatible/hc"
base_url = "{base_url}"
price = "sim/hc"

[[pairs]]
low = "oa_lc"
high = "resp_hc"

[[pairs]]
low = "an_lc"
high = "compat_hc"
"#
    )
}

fn options(out: &std::path::Path, text: &str, resume: bool) -> RunOptions {
    let mut o = RunOptions::new(out, out, text);
    o.resume = resume;
    o.providers = vec![Arc::new(HttpProviders::new(Duration::from_secs(2)))];
    o
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::print_stderr)]
async fn a_faulty_http_experiment_completes_prices_exactly_and_resumes_without_calls() {
    fake_key(OPENAI_VAR, SECRET);
    fake_key(ANTHROPIC_VAR, SECRET);
    let srv = server(|c| {
        c.fault_rate = 0.2;
        c.faults = FaultKind::RETRYABLE.to_vec();
        c.seed = 5;
        c.retry_after_ms = 100;
        c.stall_ms = 20_000;
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let text = spec(&srv.base_url());

    let started = Instant::now();
    let spec = ExperimentSpec::parse("e2e.toml", &text).unwrap();
    let runner = Runner::prepare(spec, options(dir.path(), &text, false))
        .await
        .unwrap();
    let summary = runner.run().await.unwrap();
    let first_run = started.elapsed();
    let after_first = srv.stats();

    let reader = Reader::open(&summary.store_path).unwrap();
    let episodes = reader.episodes().unwrap();
    assert!(!episodes.is_empty());
    let mut sum = 0i64;
    let mut calls = 0usize;
    let mut cache_reads = 0u64;
    let mut anthropic_writes = 0u64;
    for e in &episodes {
        match e.status() {
            EpisodeStatus::Scored | EpisodeStatus::Unscored => {}
            EpisodeStatus::Incomplete => assert!(
                e.outcome.reason.as_deref().is_some_and(|r| !r.is_empty()),
                "incomplete episode {} has no reason",
                e.id
            ),
            other => panic!("episode {} ended {other}: {:?}", e.id, e.outcome.reason),
        }
        for c in reader.calls(e.id).unwrap() {
            let key = match c.call.model.as_str() {
                "oa_lc" | "an_lc" => "sim/lc",
                _ => "sim/hc",
            };
            assert_eq!(
                c.call.cost.0,
                hand_cost(key, &c.call.usage),
                "call {} of {}",
                c.id,
                c.call.model
            );
            assert!(!c.call.request_json.contains(SECRET));
            assert!(
                c.call.model_served.starts_with("sim/"),
                "{}",
                c.call.model_served
            );
            cache_reads += c.call.usage.cache_read;
            if c.call.model == "an_lc" {
                anthropic_writes += c.call.usage.cache_write_5m;
            }
            sum += c.call.cost.0;
            calls += 1;
        }
    }
    // the paid total adds the billed-but-unusable attempts (empty and malformed 200s)
    let spend = reader.spend().unwrap();
    assert_eq!(spend.paid, reader.total_paid().unwrap());
    assert_eq!(spend.paid, summary.paid_total);
    assert!(spend.paid.0 >= sum);
    assert_eq!(
        spend.billed_attempts - spend.unusable_attempts,
        calls as u64
    );
    // every 200 the server sent was counted, but for a stalled request the client gave
    // up on before the server answered it
    let stalled = after_first
        .faults
        .get(&FaultKind::Stall)
        .copied()
        .unwrap_or(0);
    assert!(
        spend.billed_attempts <= after_first.ok_responses
            && spend.billed_attempts + stalled >= after_first.ok_responses,
        "{spend:?} vs {after_first:?}"
    );
    assert!(cache_reads > 0, "later turns read the prompt cache");
    assert!(anthropic_writes > 0, "anthropic turns write the cache");
    assert!(
        !ExperimentSpec::parse("e2e.toml", &text)
            .unwrap()
            .simulated(),
        "no model of the experiment is a sim/... model"
    );
    let report = baton_runner::report_input(&summary.store_path, None).unwrap();
    assert!(
        report.simulated,
        "replies served by sim-server make the report a simulated one"
    );
    let injected: u64 = after_first.faults.values().sum();
    assert!(
        injected > 0 && after_first.faults.len() >= 4,
        "faults were injected: {:?}",
        after_first.faults
    );
    let store_bytes = std::fs::read(&summary.store_path).unwrap();
    assert!(
        !store_bytes
            .windows(SECRET.len())
            .any(|w| w == SECRET.as_bytes()),
        "the key is in the store"
    );
    let incomplete = episodes
        .iter()
        .filter(|e| e.status() == EpisodeStatus::Incomplete)
        .count();
    eprintln!(
        "e2e: {} episodes ({incomplete} incomplete), {calls} stored calls, {} requests \
         ({} answered, faults {:?}), cost {} pUSD, {first_run:.1?}",
        episodes.len(),
        after_first.requests,
        after_first.answered,
        after_first.faults,
        sum
    );
    drop(reader);

    // The same experiment again: everything is stored, so nothing is requested.
    let spec = ExperimentSpec::parse("e2e.toml", &text).unwrap();
    let again = Runner::prepare(spec, options(dir.path(), &text, true))
        .await
        .unwrap()
        .run()
        .await
        .unwrap();
    // Fault draws are a function of (seed, request, arrival), so this is stable.
    assert_eq!(incomplete, 0, "retries carried every episode through");
    assert_eq!(srv.stats().requests, after_first.requests, "no new request");
    assert_eq!(again.calls_new, 0);
    assert_eq!(again.paid_total, summary.paid_total);
    assert_eq!(again.episodes, summary.episodes);
    srv.shutdown().await.unwrap();
}
