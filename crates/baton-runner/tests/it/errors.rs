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
