//! The store → report adapter, injected evaluators and a scripted provider.

use std::path::Path;
use std::sync::Arc;

use baton_eval::Evaluators;
use baton_models::testing::ScriptedProvider;
use baton_models::{Provider, ProviderConfig, ProviderError, ProviderFactory};
use baton_runner::{
    EvaluatorFactory, ExperimentSpec, LicEvaluators, RunError, RunOptions, Runner, report_input,
};
use baton_store::Reader;
use baton_types::{Cell, Cost, EpisodeStatus, Family, Phase};

use crate::{run, spec_text};

/// Every handoff record's prefix cost is what the sender's turns 1..=K cost, whether
/// they were forked from the anchor or paid by the handoff episode itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_input_prices_prefixes_forked_or_not() {
    for fork in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let summary = run(dir.path(), &spec_text(1, 1, fork)).await;
        let input = report_input(&summary.store_path, None).unwrap();
        let reader = Reader::open(&summary.store_path).unwrap();
        let rows = reader.episodes().unwrap();
        assert_eq!(input.episodes.len(), rows.len());
        assert_eq!((input.title.as_str(), input.simulated), ("it", true));
        assert_eq!(input.pairs.len(), 1);
        assert_eq!(
            (input.pairs[0].lc.as_str(), input.pairs[0].hc.as_str()),
            ("lc", "hc")
        );
        let mut handoffs = 0;
        for (record, row) in input.episodes.iter().zip(&rows) {
            assert_eq!(record.task_id, row.init.task_id);
            assert_eq!(record.cost_attributed, row.outcome.cost_attributed);
            assert_eq!(record.cost_paid, row.outcome.cost_paid);
            assert_eq!(record.score, row.score());
            assert_eq!(record.status, row.status());
            let Cell::Handoff { sender, .. } = &record.cell else {
                assert_eq!(record.prefix_cost, None);
                continue;
            };
            handoffs += 1;
            let k = record.k.unwrap() as u32;
            let anchor = rows
                .iter()
                .find(|a| {
                    a.init.task_id == row.init.task_id
                        && a.init.cell_key == format!("single({sender})")
                })
                .unwrap();
            let source = if fork { anchor.id } else { row.id };
            let expected: Cost = reader
                .calls(source)
                .unwrap()
                .iter()
                .filter(|c| c.call.phase == Phase::Prefix && c.call.turn <= k)
                .map(|c| c.call.cost)
                .sum();
            assert_eq!(record.prefix_cost, Some(expected), "{}", row.init.cell_key);
            assert!(expected > Cost::ZERO);
        }
        assert!(handoffs > 0);
    }
}

#[test]
fn a_report_needs_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.sqlite");
    let err = report_input(&path, None).unwrap_err();
    assert!(matches!(err, RunError::NoResults(_)), "{err}");
    assert!(err.to_string().starts_with("no results at "), "{err}");
}

/// LiC's evaluators pointed at a Spider folder that does not exist.
struct NoDatabases;

impl EvaluatorFactory for NoDatabases {
    fn profile(&self) -> String {
        "lic-without-databases".into()
    }
    fn version(&self) -> String {
        "test".into()
    }
    fn make(&self, spider_dir: &Path) -> Evaluators {
        LicEvaluators.make(&spider_dir.join("missing"))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_evaluators_score_the_run_and_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let text = spec_text(1, 1, true);
    let mut options = RunOptions::new(dir.path(), ".", text.clone());
    options.evaluators = Arc::new(NoDatabases);
    let spec = ExperimentSpec::parse("it.toml", &text).unwrap();
    let summary = Runner::prepare(spec, options)
        .await
        .unwrap()
        .run()
        .await
        .unwrap();
    let reader = Reader::open(&summary.store_path).unwrap();
    let meta = reader.experiment().unwrap().meta;
    assert_eq!(
        (meta.eval_profile.as_str(), meta.eval_version.as_str()),
        ("lic-without-databases", "test")
    );
    for e in reader.episodes().unwrap() {
        if e.family == Family::Database {
            assert_eq!(e.status(), EpisodeStatus::Errored, "{}", e.init.cell_key);
            assert_eq!(e.score(), None, "an errored episode is never scored 0");
            assert!(e.outcome.reason.is_some());
        } else {
            assert_eq!(e.status(), EpisodeStatus::Scored, "{}", e.init.cell_key);
        }
    }
    assert!(summary.count(EpisodeStatus::Errored) > 0);
}

/// Serves kind `scripted` with one shared scripted provider.
struct Scripted(Arc<ScriptedProvider>);

impl ProviderFactory for Scripted {
    fn kinds(&self) -> Vec<String> {
        vec!["scripted".into()]
    }
    fn make(&self, _config: &ProviderConfig) -> Result<Arc<dyn Provider>, String> {
        Ok(self.0.clone())
    }
}

/// A model whose calls are refused leaves its episodes incomplete with the reason,
/// stores no call for it, and the rerun after the fault finishes them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_leaves_its_episodes_incomplete_until_a_rerun() {
    let text = spec_text(1, 1, true)
        .replace(
            "model = \"sim/lc\"",
            "model = \"scripted/lc\"\nprice = \"sim/lc\"",
        )
        .replace("limit = 1", "limit = 1\nfamilies = [\"math\"]");
    let dir = tempfile::tempdir().unwrap();
    let refusing = ScriptedProvider::new().then_errs((0..100).map(|_| ProviderError::Status {
        status: 400,
        kind: "invalid_request_error".into(),
        message: "no".into(),
        retry_after: None,
    }));
    let go = |provider: ScriptedProvider| {
        let mut options = RunOptions::new(dir.path(), ".", text.clone());
        options.providers = vec![Arc::new(Scripted(Arc::new(provider)))];
        let spec = ExperimentSpec::parse("it.toml", &text).unwrap();
        async move {
            Runner::prepare(spec, options)
                .await
                .unwrap()
                .run()
                .await
                .unwrap()
        }
    };
    let first = go(refusing).await;
    let reader = Reader::open(&first.store_path).unwrap();
    let mut refused = 0;
    for e in reader.episodes().unwrap() {
        let uses_lc = e.init.cell_key.contains("lc");
        let calls = reader.calls(e.id).unwrap();
        assert!(
            calls.iter().all(|c| c.call.model != "lc"),
            "no refused call stored"
        );
        if uses_lc {
            assert_eq!(e.status(), EpisodeStatus::Incomplete, "{}", e.init.cell_key);
            let reason = e.outcome.reason.clone().unwrap_or_default();
            refused += usize::from(reason.contains("HTTP 400"));
            assert!(
                reason.contains("HTTP 400") || reason.contains("prefix is incomplete"),
                "{reason}"
            );
        } else {
            assert_eq!(e.status(), EpisodeStatus::Scored, "{}", e.init.cell_key);
        }
    }
    assert!(refused > 0, "the provider's refusal is the reason");
    assert!(first.count(EpisodeStatus::Incomplete) > 0);

    let provider = ScriptedProvider::new().with_default(ScriptedProvider::reply("Answer: 0"));
    let second = go(provider).await;
    assert_eq!(second.count(EpisodeStatus::Incomplete), 0);
    assert!(second.calls_new > 0);
}
