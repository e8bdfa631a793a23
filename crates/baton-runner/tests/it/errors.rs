//! Setup errors as the user reads them: each names the file and the key once.

use std::sync::Arc;
use std::time::Duration;

use baton_http::HttpProviders;
use baton_runner::{ExperimentSpec, RunOptions, Runner};

/// An experiment on the sample set whose `hc` model is `model`.
fn spec_with(model: &str) -> String {
    format!(
        r#"
name = "errors"
dataset = "sample"
limit = 1
[models.lc]
model = "sim/lc"
[models.hc]
model = "{model}"
[[pairs]]
low = "lc"
high = "hc"
"#
    )
}

/// The error `baton run` meets preparing `text` (keys not required, as a dry run).
async fn setup_error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let spec = ExperimentSpec::parse("exp.toml", text).expect("valid spec");
    let mut options = RunOptions::new(dir.path().join("out"), dir.path(), text);
    options.source_name = "exp.toml".into();
    options.providers = vec![Arc::new(
        HttpProviders::new(Duration::from_secs(5)).keys_optional(),
    )];
    match Runner::prepare(spec, options).await {
        Ok(_) => panic!("{text} prepared"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_a_model_error_names_the_model_once() {
    assert_eq!(
        setup_error(&spec_with("nope/x")).await,
        r#"experiment exp.toml: models.hc: unknown provider "nope" in "nope/x""#
    );
    assert_eq!(
        setup_error(&spec_with("anthropic/claude-haiku-4.5")).await,
        "experiment exp.toml: models.hc: no price for \"claude-haiku-4.5\" in the price card \
         (embedded price card); the closest card keys: \"claude-haiku-4-5\", \
         \"claude-haiku-5-5\"; if the model id is right, add its entry in LiteLLM's format to \
         a card the experiment's `prices` key names"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_a_missing_key_names_the_model_once() {
    // a variable no environment sets
    let text = spec_with("anthropic/claude-haiku-4-5").replace(
        "[[pairs]]",
        "api_key_env = \"BATON_ISSUE_35_UNSET\"\n[[pairs]]",
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = ExperimentSpec::parse("exp.toml", &text).unwrap();
    let mut options = RunOptions::new(dir.path().join("out"), dir.path(), text.clone());
    options.source_name = "exp.toml".into();
    options.providers = vec![Arc::new(HttpProviders::new(Duration::from_secs(5)))];
    let err = match Runner::prepare(spec, options).await {
        Ok(_) => panic!("prepared without a key"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        err,
        "experiment exp.toml: models.hc: environment variable BATON_ISSUE_35_UNSET is not set \
         (it should hold the API key; name another with api_key_env)"
    );
}

/// The last line of the error reading `text` as a chat experiment.
fn parse_error(text: &str) -> String {
    let err = ExperimentSpec::parse("exp.toml", text)
        .unwrap_err()
        .to_string();
    err.lines().last().unwrap().to_string()
}

#[test]
fn issue_35_a_misspelt_key_or_interface_gets_a_did_you_mean() {
    let text = spec_with("sim/hc");
    assert_eq!(
        parse_error(&text.replace("limit = 1", "limt = 1")),
        "unknown field `limt`, expected one of `name`, `dataset`, `families`, `limit`, \
         `skip_invalid`, `models`, `pairs`, `switch_points`, `directions`, `interfaces`, \
         `baselines`, `replicates`, `seed`, `concurrency`, `retry_budget_secs`, \
         `fork_prefixes`, `templates`, `lic_dir`, `extraction`, `extractor`, `prices`, \
         `batch_gather_ms`, `batch_poll_ms`, `batch_retry`, `batch_deadline`, `spider_dir`; \
         did you mean `limit`?"
    );
    assert_eq!(
        parse_error(&text.replace("model = \"sim/hc\"", "model = \"sim/hc\"\ntemprature = 0")),
        "unknown field `temprature`, expected one of `model`, `price`, `base_url`, \
         `api_key_env`, `temperature`, `top_p`, `max_tokens`, `reasoning_effort`, \
         `thinking_budget`, `extra`, `seed`, `concurrency`, `requests_per_minute`, \
         `tokens_per_minute`, `unusable_retries`, `allow_http_with_key`, `batch`, `sim`; \
         did you mean `temperature`?"
    );
    assert_eq!(
        parse_error(&text.replace("limit = 1", "interfaces = [\"raw\", \"compact-pre\"]")),
        "unknown variant `compact-pre`, expected one of `raw`, `disclosure`, `compact_pre`, \
         `compact_suf`, `traj_drop`, `handover`; did you mean `compact_pre`?"
    );
    // an agent experiment: a model's key, and a key of [agent]
    let agent = "kind = \"agent\"\nname = \"a\"\ndataset = \"agent-sample\"\n\
                 [agent]\nstep_limt = 4\n[models.lc]\nmodel = \"sim/lc\"\n\
                 [models.hc]\nmodel = \"sim/hc\"\n[[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n";
    let err = |text: &str| match baton_runner::agent::AgentSpec::parse("a.toml", text) {
        Ok(_) => panic!("{text} parsed"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        err(agent),
        "experiment a.toml: agent.step_limt is not one of the [agent] settings (tasks, \
         protocol, step_limit, cost_limit_usd, agent_templates, swebench_python); did you \
         mean step_limit?"
    );
    let fixed = agent.replace("step_limt", "step_limit");
    let spec = baton_runner::agent::AgentSpec::parse(
        "a.toml",
        &fixed.replace("model = \"sim/hc\"", "model = \"sim/hc\"\nmax_token = 9"),
    );
    assert_eq!(
        spec.map_err(|e| e.to_string()).err(),
        Some(
            "experiment a.toml: models.hc: unknown field `max_token`, expected one of `model`, `price`, \
             `base_url`, `api_key_env`, `temperature`, `top_p`, `max_tokens`, \
             `reasoning_effort`, `thinking_budget`, `extra`, `seed`, `concurrency`, \
             `requests_per_minute`, `tokens_per_minute`, `unusable_retries`, \
             `allow_http_with_key`, `batch`, `sim`; did you mean `max_tokens`?"
                .to_string()
        )
    );
}

/// Options as `baton run` sets them for `text`, keys optional (both the dry run and
/// the run are asked here with the same providers).
fn options(base: &std::path::Path, out: &str, text: &str) -> RunOptions {
    let mut options = RunOptions::new(base.join(out), base, text);
    options.source_name = "exp.toml".into();
    options.providers = vec![Arc::new(
        HttpProviders::new(Duration::from_secs(5)).keys_optional(),
    )];
    options
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_35_the_dry_run_meets_the_runs_first_error() {
    use baton_runner::agent::{AgentRunner, AgentSpec, dry_run::dry_run};

    // two mistakes in one model: no output cap for Anthropic, and a dot for a dash
    let text = "kind = \"agent\"\nname = \"a\"\ndataset = \"agent-sample\"\n\
                [models.lc]\nmodel = \"sim/lc\"\n\
                [models.hc]\nmodel = \"anthropic/claude-haiku-4.5\"\n\
                [[pairs]]\nlow = \"lc\"\nhigh = \"hc\"\n";
    let dir = tempfile::tempdir().unwrap();
    let spec = AgentSpec::parse("exp.toml", text).unwrap();
    let estimate = dry_run(&spec, &options(dir.path(), "out", text))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    let run = match AgentRunner::prepare(spec, options(dir.path(), "out", text)).await {
        Ok(_) => panic!("prepared"),
        Err(e) => e.to_string(),
    };
    let first = "experiment exp.toml: models.hc: Anthropic's API requires an output cap and an \
                 agent call sends none unless configured; set max_tokens (e.g. 64000)";
    assert_eq!(run, first);
    assert_eq!(estimate, first);

    // a chat experiment: a missing dataset file and a model without a price
    let text = spec_with("anthropic/claude-haiku-4.5")
        .replace("dataset = \"sample\"", "dataset = \"missing.json\"");
    let spec = ExperimentSpec::parse("exp.toml", &text).unwrap();
    let estimate = baton_runner::dry_run(spec.clone(), &options(dir.path(), "chat", &text))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    let run = match Runner::prepare(spec, options(dir.path(), "chat", &text)).await {
        Ok(_) => panic!("prepared"),
        Err(e) => e.to_string(),
    };
    assert_eq!(run, estimate);
    assert!(
        run.starts_with("experiment exp.toml: dataset = \"missing.json\": "),
        "{run}"
    );
}
