use std::collections::{BTreeMap, BTreeSet};

use baton_store::Reader;
use baton_types::{Cell, Cost, Message, Phase, Role};

use crate::{run, spec_text};

fn requests(reader: &Reader, episode: i64) -> Vec<(u32, Phase, Vec<Message>)> {
    reader
        .calls(episode)
        .unwrap()
        .into_iter()
        .map(|c| {
            let req: serde_json::Value = serde_json::from_str(&c.call.request_json).unwrap();
            let msgs: Vec<Message> = serde_json::from_value(req["messages"].clone()).unwrap();
            (c.call.turn, c.call.phase, msgs)
        })
        .collect()
}

fn user_turns(msgs: &[Message]) -> Vec<String> {
    msgs.iter()
        .filter(|m| m.role == Role::User)
        .map(|m| m.content.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_turns_are_identical_across_every_cell_of_a_task() {
    let dir = tempfile::tempdir().unwrap();
    let summary = run(dir.path(), &spec_text(1, 1, true)).await;
    assert!(summary.calls_new > 0);
    let reader = Reader::open(&summary.store_path).unwrap();
    let episodes = reader.episodes().unwrap();
    let mut by_task: BTreeMap<String, (BTreeSet<String>, BTreeSet<Vec<String>>)> = BTreeMap::new();
    for e in &episodes {
        let entry = by_task.entry(e.init.task_id.clone()).or_default();
        entry.0.insert(e.init.schedule_sha256.clone());
        // The last call of an episode saw every user turn.
        let last = requests(&reader, e.id)
            .pop()
            .expect("every episode made a call");
        assert_eq!(
            last.0, e.n_turns,
            "{}: last call answers the last turn",
            e.init.cell_key
        );
        entry.1.insert(user_turns(&last.2));
    }
    assert_eq!(by_task.len(), 5, "one task per family");
    for (task, (hashes, turns)) in by_task {
        assert_eq!(hashes.len(), 1, "{task}: one schedule hash across cells");
        assert_eq!(
            turns.len(),
            1,
            "{task}: byte-identical user turns across cells"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forked_prefixes_are_paid_once_and_equal_the_anchor() {
    let dir = tempfile::tempdir().unwrap();
    let summary = run(dir.path(), &spec_text(1, 2, true)).await;
    let reader = Reader::open(&summary.store_path).unwrap();
    let episodes = reader.episodes().unwrap();
    let by_id: BTreeMap<i64, _> = episodes.iter().map(|e| (e.id, e)).collect();
    let mut handoffs = 0;
    for e in &episodes {
        let cell: Cell = serde_json::from_str(&e.init.cell_json).unwrap();
        let Cell::Handoff {
            sender, receiver, ..
        } = &cell
        else {
            continue;
        };
        handoffs += 1;
        let calls = reader.calls(e.id).unwrap();
        assert!(
            calls
                .iter()
                .all(|c| c.call.phase == Phase::Suffix && &c.call.model == receiver),
            "no paid prefix in {}",
            e.init.cell_key
        );
        let k = e.init.k.unwrap();
        assert_eq!(calls.len() as u32, e.n_turns - k);
        let anchor = by_id[&e.init.forked_from.expect("forked")];
        assert_eq!(anchor.init.cell_key, format!("single({sender})"));
        assert_eq!(
            (anchor.init.task_id.as_str(), anchor.init.replicate),
            (e.init.task_id.as_str(), e.init.replicate)
        );
        // The receiver's first request carries the anchor's first K replies verbatim.
        let anchor_calls = reader.calls(anchor.id).unwrap();
        let first = &requests(&reader, e.id)[0].2;
        let replies: Vec<&str> = first
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .map(|m| m.content.as_str())
            .collect();
        let expected: Vec<&str> = anchor_calls[..k as usize]
            .iter()
            .map(|c| c.call.response_text.as_str())
            .collect();
        assert_eq!(replies, expected);
        // Attributed = the anchor's first K calls (sender's rates) + own calls, exactly.
        let prefix: Cost = anchor_calls[..k as usize].iter().map(|c| c.call.cost).sum();
        let own: Cost = calls.iter().map(|c| c.call.cost).sum();
        assert_eq!(e.outcome.cost_paid, own);
        assert_eq!(e.outcome.cost_attributed, prefix + own);
    }
    assert!(handoffs > 0);
    // Every paid prefix call belongs to an anchor: once per (task, replicate, sender).
    let mut prefix_calls = 0;
    for e in &episodes {
        prefix_calls += reader
            .calls(e.id)
            .unwrap()
            .iter()
            .filter(|c| c.call.phase == Phase::Prefix)
            .count();
    }
    let anchors_turns: u32 = episodes
        .iter()
        .filter(|e| e.init.cell_key.starts_with("single("))
        .map(|e| e.n_turns)
        .sum();
    assert_eq!(prefix_calls as u32, anchors_turns);
    assert!(summary.saved_by_forking.0 > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn independent_prefixes_are_paid_by_the_handoff_cell() {
    let dir = tempfile::tempdir().unwrap();
    let summary = run(dir.path(), &spec_text(1, 1, false)).await;
    let reader = Reader::open(&summary.store_path).unwrap();
    for e in reader
        .episodes()
        .unwrap()
        .iter()
        .filter(|e| e.init.k.is_some())
    {
        let calls = reader.calls(e.id).unwrap();
        assert_eq!(calls.len() as u32, e.n_turns);
        assert_eq!(
            calls
                .iter()
                .filter(|c| c.call.phase == Phase::Prefix)
                .count() as u32,
            e.init.k.unwrap()
        );
        assert_eq!(e.init.forked_from, None);
        assert_eq!(e.outcome.cost_attributed, e.outcome.cost_paid);
    }
    assert_eq!(summary.saved_by_forking.0, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_makes_no_call_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let text = spec_text(1, 1, true);
    let first = run(dir.path(), &text).await;
    let before = Reader::open(&first.store_path).unwrap().episodes().unwrap();
    let second = run(dir.path(), &text).await;
    assert_eq!(second.calls_new, 0);
    assert_eq!(second.spent_now.0, 0);
    // every column of every episode, timestamps included
    let after = Reader::open(&second.store_path)
        .unwrap()
        .episodes()
        .unwrap();
    assert_eq!(before, after);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_experiment_lists_its_change_and_reruns_only_when_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let first = run(dir.path(), &spec_text(1, 1, true)).await;
    let stored = Reader::open(&first.store_path).unwrap().episodes().unwrap();
    // a new base seed gives every episode another seed: all of them would run again
    let changed = spec_text(1, 1, true).replace("seed = 11", "seed = 12");
    let prepare = |allow: bool| {
        let spec = baton_runner::ExperimentSpec::parse("it.toml", &changed).unwrap();
        let mut options = baton_runner::RunOptions::new(dir.path(), ".", changed.clone());
        options.allow_changed = allow;
        baton_runner::Runner::prepare(spec, options)
    };
    let err = match prepare(false).await {
        Ok(_) => panic!("re-running stored episodes needs --allow-changed"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("seed: 11 → 12"), "{err}");
    let runner = prepare(true).await.unwrap();
    let c = runner.changes().clone();
    // the seed also samples the tasks: some stay (their episodes' seeds changed), the
    // rest are new or removed
    assert!(c.rerun > 0 && c.reused == 0, "{c}");
    assert!(err.contains(&format!("{} re-run", c.rerun)), "{err}");
    assert_eq!(c.rerun + c.removed, stored.len(), "{c}");
    let second = runner.run().await.unwrap();
    assert!(second.calls_new > 0);
    let reader = Reader::open(&second.store_path).unwrap();
    assert_eq!(reader.episodes().unwrap().len(), c.rerun + c.new);
    // nothing stored is deleted
    assert_eq!(
        reader.all_episodes().unwrap().len(),
        stored.len() + c.rerun + c.new
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spending_cap_leaves_episodes_incomplete_never_zero_and_is_never_passed() {
    use baton_runner::{ExperimentSpec, RunOptions, Runner};
    use baton_types::EpisodeStatus;

    let dir = tempfile::tempdir().unwrap();
    let text = spec_text(2, 1, true);
    let full = run(tempfile::tempdir().unwrap().path(), &text).await;
    let cap = Cost(full.paid_total.0 / 3);

    let spec = ExperimentSpec::parse("it.toml", &text).unwrap();
    let mut options = RunOptions::new(dir.path(), ".", text.clone());
    options.max_cost = Some(cap);
    let capped = Runner::prepare(spec, options)
        .await
        .unwrap()
        .run()
        .await
        .unwrap();
    assert!(
        capped.paid_total <= cap,
        "paid {} with a cap of {cap}",
        capped.paid_total
    );
    let reader = Reader::open(&capped.store_path).unwrap();
    let episodes = reader.episodes().unwrap();
    let incomplete: Vec<_> = episodes
        .iter()
        .filter(|e| e.status() == EpisodeStatus::Incomplete)
        .collect();
    assert!(!incomplete.is_empty());
    assert!(incomplete.iter().any(|e| {
        e.outcome
            .reason
            .as_deref()
            .unwrap_or("")
            .contains("spending cap")
    }));
    for e in &incomplete {
        assert_eq!(e.score(), None, "an incomplete episode has no score");
        let reason = e.outcome.reason.as_deref().unwrap_or("");
        assert!(
            reason.contains("spending cap") || reason.contains("prefix is incomplete"),
            "{reason}"
        );
    }

    // Without the cap, the same command finishes the rest and pays what is left.
    let finished = run(dir.path(), &text).await;
    assert_eq!(finished.count(EpisodeStatus::Incomplete), 0);
    assert_eq!(finished.paid_total, full.paid_total);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_bounds_the_real_cost_and_counts_the_calls() {
    use baton_runner::{ExperimentSpec, RunOptions};

    let text = spec_text(1, 1, true);
    let dir = tempfile::tempdir().unwrap();
    let spec = ExperimentSpec::parse("it.toml", &text).unwrap();
    let estimate =
        baton_runner::dry_run(spec, &RunOptions::new(dir.path(), ".", text.clone())).unwrap();
    assert!(
        !dir.path().join(baton_runner::STORE_FILE).exists(),
        "a dry run opens no store"
    );
    let real = run(dir.path(), &text).await;
    assert_eq!(estimate.calls() as u64, real.calls_new);
    assert!(
        estimate.paid_upper() >= real.paid_total,
        "{} < {}",
        estimate.paid_upper(),
        real.paid_total
    );
    assert!(estimate.to_string().contains("single(lc)"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_a_price_fails_before_any_call_or_store() {
    use baton_runner::{ExperimentSpec, RunOptions, Runner};

    let text = spec_text(1, 1, true).replace(
        "model = \"sim/hc\"",
        "model = \"sim/hc\"\nprice = \"no-such-model\"",
    );
    let dir = tempfile::tempdir().unwrap();
    let spec = ExperimentSpec::parse("it.toml", &text).unwrap();
    let err = match Runner::prepare(spec, RunOptions::new(dir.path(), ".", text.clone())).await {
        Ok(_) => panic!("a model without a price must not run"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.starts_with("experiment experiment: models.hc: no price for \"no-such-model\""),
        "{err}"
    );
    assert!(
        !dir.path().join(baton_runner::STORE_FILE).exists(),
        "nothing was stored"
    );
}
