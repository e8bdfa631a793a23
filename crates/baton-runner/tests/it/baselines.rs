//! LiC's single-turn baselines: `full(M)` and `concat(M)` cells on the sample set.

use baton_runner::{ExperimentSpec, RunOptions, Runner, dry_run};
use baton_store::Reader;
use baton_types::{Baseline, Cell, EpisodeStatus, Phase};

use crate::{run, spec_text};

/// Top-level keys must come before the first table: put ours right after `name`.
fn with_top_level(text: &str, extra: &str) -> String {
    text.replacen("name = \"it\"\n", &format!("name = \"it\"\n{extra}"), 1)
}

/// See: issue 13, single-turn baselines: one call per (task, replicate, model,
/// baseline), scored like any final answer, resumable without a new call, and in the
/// dry-run bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_baselines_are_one_scored_call_each_and_resume_for_free() {
    let Some(lic) = baton_fixture::shared_dir("lic") else {
        return;
    };
    let extra = format!(
        "templates = \"lic\"\nlic_dir = {:?}\nbaselines = [\"full\", \"concat\"]\n",
        lic.display().to_string()
    );
    let text = with_top_level(&spec_text(1, 2, true), &extra);
    let dir = tempfile::tempdir().unwrap();
    let summary = run(dir.path(), &text).await;
    let reader = Reader::open(&summary.store_path).unwrap();
    let episodes = reader.episodes().unwrap();
    let baselines: Vec<_> = episodes
        .iter()
        .filter(|e| {
            matches!(
                serde_json::from_str::<Cell>(&e.init.cell_json).unwrap(),
                Cell::Baseline { .. }
            )
        })
        .collect();
    // 5 families x 1 task x 2 replicates x 2 models x 2 baselines
    assert_eq!(baselines.len(), 40);
    for e in &baselines {
        assert_eq!(e.status(), EpisodeStatus::Scored, "{}", e.init.cell_key);
        let calls = reader.calls(e.id).unwrap();
        assert_eq!(calls.len(), 1, "{}", e.init.cell_key);
        assert_eq!(
            (calls[0].call.turn, calls[0].call.phase),
            (1, Phase::Prefix)
        );
        let request: serde_json::Value = serde_json::from_str(&calls[0].call.request_json).unwrap();
        let messages = request["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 2, "system and one user message");
        assert!(calls[0].call.cost > baton_types::Cost::ZERO);
    }
    for model in ["lc", "hc"] {
        for b in Baseline::ALL {
            let label = Cell::baseline(model, b).label();
            assert!(
                baselines.iter().any(|e| e.init.cell_key == label),
                "{label}"
            );
        }
    }
    // the sim recognises both prompts: some baseline answers are right
    assert!(baselines.iter().any(|e| e.score() == Some(1.0)));

    // a resume makes no call
    let again = run(dir.path(), &text).await;
    assert_eq!(again.calls_new, 0);

    // the dry run counts one call per baseline episode
    let spec = ExperimentSpec::parse("it.toml", &text).unwrap();
    let fresh = tempfile::tempdir().unwrap();
    let estimate = dry_run(spec, &RunOptions::new(fresh.path(), ".", text.clone())).unwrap();
    let full = &estimate.cells["full(lc)"];
    assert_eq!((full.episodes, full.calls), (10, 10));
    assert!(full.paid_upper > baton_types::Cost::ZERO);
}

/// Baselines are LiC's prompts: with baton's own templates the run stops before any
/// call and says what to set.
#[tokio::test]
async fn baselines_without_lic_templates_are_refused_before_any_call() {
    let text = with_top_level(&spec_text(1, 1, true), "baselines = [\"full\"]\n");
    let spec = ExperimentSpec::parse("it.toml", &text).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let err = match Runner::prepare(spec, RunOptions::new(dir.path(), ".", text.clone())).await {
        Ok(_) => panic!("must fail"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("templates = \"lic\""), "{err}");
    assert!(err.contains("sample-"), "names the task: {err}");
}
