use baton_store::{CallCost, Outcome, Reader};
use baton_types::{Cost, EpisodeStatus, Phase, Verdict};
use rusqlite::Connection;

use crate::{TestContext, call, conversation, init, meta, request_json, task};

#[tokio::test]
async fn every_column_round_trips() {
    let cx = TestContext::new();
    let store = cx.store().await;
    store.upsert_task(task("t2")).await.unwrap();
    let (fresh, none) = store.episode(init("t1", "single(lc)")).await.unwrap();
    assert!(none.is_empty());
    assert_eq!(fresh.init, init("t1", "single(lc)"));
    assert_eq!(fresh.outcome, Outcome::unfinished());
    assert_eq!((fresh.family, fresh.n_turns), (task("t1").family, 3));

    let mut handoff = init("t2", "handoff(lc -> hc, early, raw)");
    handoff.k = Some(1);
    handoff.forked_from = Some(fresh.id);
    let (h, _) = store.episode(handoff.clone()).await.unwrap();

    // One request that splits, one that is kept whole (not compact JSON).
    let a = call(
        fresh.id,
        1,
        Phase::Prefix,
        request_json(&conversation(1), 9),
    );
    let b = call(
        fresh.id,
        1,
        Phase::Handoff,
        "{ \"model\": \"lc\", \"messages\": [ ] }".into(),
    );
    let mut c = call(h.id, 2, Phase::Suffix, request_json(&conversation(2), 9));
    c.raw_response = None;
    c.finish_reason = None;
    let mut ids = Vec::new();
    for x in [&a, &b, &c] {
        ids.push(store.record_call(x.clone()).await.unwrap());
    }

    let scored = Outcome {
        status: EpisodeStatus::Scored,
        final_response: Some("Answer: 6".into()),
        extracted: Some("6".into()),
        verdict: Some(Verdict {
            score: 0.625,
            is_correct: Some(true),
            error: Some("partial".into()),
            details: serde_json::json!({"bleu": [1, 2.5, "x"]}),
            rule: Some("math.boxed".into()),
            no_answer: true,
        }),
        reason: Some("why".into()),
        cost_attributed: Cost(99),
        cost_paid: Cost(42),
    };
    store.finish(fresh.id, scored.clone()).await.unwrap();
    let mut errored = Outcome::unfinished();
    errored.status = EpisodeStatus::Errored;
    errored.final_response = Some("final".into());
    errored.reason = Some("no database".into());
    store.finish(h.id, errored.clone()).await.unwrap();

    let reader = Reader::open(&cx.path()).unwrap();
    let exp = reader.experiment().unwrap();
    assert_eq!(exp.meta, meta());
    assert!(exp.created_at.ends_with('Z'), "{}", exp.created_at);
    assert_eq!(reader.tasks().unwrap(), vec![task("t1"), task("t2")]);

    let episodes = reader.episodes().unwrap();
    assert_eq!(episodes.len(), 2);
    assert_eq!(episodes[0].outcome, scored);
    assert_eq!(episodes[0].init, init("t1", "single(lc)"));
    assert_eq!(episodes[0].score(), Some(0.625));
    assert_eq!(episodes[1].init, handoff);
    assert_eq!(episodes[1].outcome, errored);
    assert_eq!(episodes[1].status(), EpisodeStatus::Errored);

    let calls = reader.calls(fresh.id).unwrap();
    assert_eq!(
        calls.iter().map(|r| (r.id, &r.call)).collect::<Vec<_>>(),
        vec![(ids[0], &a), (ids[1], &b)],
        "prefix before handoff within a turn, every field as written"
    );
    assert!(calls.iter().all(|r| r.created_at.ends_with('Z')));
    assert_eq!(reader.calls(h.id).unwrap()[0].call, c);
    // the async handle reads the same rows
    assert_eq!(store.calls(fresh.id).await.unwrap(), calls);

    assert_eq!(reader.call_count().unwrap(), 3);
    assert_eq!(reader.total_paid().unwrap(), a.cost + b.cost + c.cost);
    let by_phase = reader.paid_by_phase().unwrap();
    assert_eq!(by_phase[&(fresh.id, Phase::Prefix)], a.cost);
    assert_eq!(by_phase[&(fresh.id, Phase::Handoff)], b.cost);
    assert_eq!(by_phase[&(h.id, Phase::Suffix)], c.cost);
    assert_eq!(by_phase.len(), 3);
}

#[tokio::test]
async fn a_reopened_episode_comes_back_with_its_calls() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let (e, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    let first = call(e.id, 1, Phase::Prefix, request_json(&conversation(1), 1));
    store.record_call(first.clone()).await.unwrap();
    drop(store);
    let store = baton_store::Store::open(&cx.path()).unwrap();
    let (again, calls) = store.episode(init("t1", "single(lc)")).await.unwrap();
    assert_eq!(again.id, e.id);
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].call, first);
}

/// Each message is stored once and each call adds a node per new message, so a long
/// conversation grows linearly; requests still come back byte for byte.
#[tokio::test]
async fn a_conversation_stores_each_message_once() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let turns = 150;
    let (e, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    let (e2, _) = store.episode(init("t1", "single(hc)")).await.unwrap();
    let mut written = Vec::new();
    for t in 1..=turns {
        let c = call(
            e.id,
            t as u32,
            Phase::Prefix,
            request_json(&conversation(t), 3),
        );
        store.record_call(c.clone()).await.unwrap();
        written.push(c);
    }
    // a second episode that shares the first ten turns' messages
    let c = call(e2.id, 10, Phase::Prefix, request_json(&conversation(10), 3));
    store.record_call(c).await.unwrap();

    let reader = Reader::open(&cx.path()).unwrap();
    let back: Vec<_> = reader
        .calls(e.id)
        .unwrap()
        .into_iter()
        .map(|r| r.call)
        .collect();
    assert_eq!(back, written);

    let db = Connection::open(cx.path()).unwrap();
    let count = |table: &str| -> i64 {
        db.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap()
    };
    // system prompt + 150 user turns + 149 replies
    assert_eq!(count("messages"), 1 + 150 + 149);
    assert_eq!(
        count("message_lists"),
        1 + 150 + 149,
        "one node per message"
    );
    let whole: i64 = db
        .query_row(
            "SELECT count(*) FROM calls WHERE request_json IS NOT NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(whole, 0, "every request stored by reference");
    let params: i64 = db
        .query_row("SELECT max(length(request_params)) FROM calls", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(params < 200, "parameters only: {params} bytes");
}

#[tokio::test]
async fn unusable_attempts_are_stored_and_counted_in_the_spend() {
    use baton_store::NewAttempt;
    use baton_types::{Spend, Usage};
    let cx = TestContext::new();
    let store = cx.store().await;
    let (e, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    let attempt = |n: u32, usage: Option<Usage>, cost: Result<Cost, String>| NewAttempt {
        episode_id: e.id,
        turn: 1,
        phase: Phase::Prefix,
        model: "lc".into(),
        attempt: n,
        reason: "empty content".into(),
        raw_response: Some("{\"choices\":[]}".into()),
        usage,
        cost,
        latency_ms: 5,
        batch_id: None,
        batch_item: None,
        cost_direct: None,
    };
    let used = Usage {
        uncached_in: 3,
        ..Usage::default()
    };
    store
        .record_attempt(attempt(1, Some(used), Ok(Cost(600))))
        .await
        .unwrap();
    store
        .record_attempt(attempt(2, None, Err("no usage".into())))
        .await
        .unwrap();
    store
        .record_attempt(attempt(3, Some(used), Err("no rate".into())))
        .await
        .unwrap();
    let mut unpriced = call(e.id, 1, Phase::Prefix, request_json(&conversation(1), 9));
    unpriced.cost = Cost::ZERO;
    unpriced.unpriced = Some("no cache_read_input_token_cost".into());
    store.record_call(unpriced.clone()).await.unwrap();
    // the attempts read back in order, an unknown cost as zero; the call's own cost is
    // apart (unpriced: zero)
    let costs = costs_of(&store, e.id).await;
    let attempts: Vec<_> = costs
        .attempts
        .iter()
        .map(|a| (a.turn, a.phase, a.cost))
        .collect();
    assert_eq!(
        attempts,
        [
            (1, Phase::Prefix, Cost(600)),
            (1, Phase::Prefix, Cost::ZERO),
            (1, Phase::Prefix, Cost::ZERO)
        ]
    );
    assert_eq!(costs.calls.len(), 1);
    assert_eq!(
        costs.calls[0].unpriced.as_deref(),
        Some("no cache_read_input_token_cost")
    );
    drop(store);
    let r = Reader::open(&cx.path()).unwrap();
    assert_eq!(
        r.spend().unwrap(),
        Spend {
            paid: Cost(600),
            billed_attempts: 4,
            unusable_attempts: 3,
            unknown_usage_attempts: 1,
            unpriced_attempts: 2,
            ..Spend::default()
        }
    );
    assert_eq!(r.calls(e.id).unwrap()[0].call, unpriced);
}

#[tokio::test]
async fn changed_inputs_are_refused_by_name_unless_allowed_and_then_recorded() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let inputs = |card: &str| {
        vec![
            ("spec".to_string(), "a".repeat(64)),
            ("price card".to_string(), card.repeat(64)),
        ]
    };
    assert!(
        store
            .check_inputs(inputs("b"), false)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .check_inputs(inputs("b"), false)
            .await
            .unwrap()
            .is_empty()
    );
    let err = store
        .check_inputs(inputs("c"), false)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("price card (bbbbbbbbbbbb -> cccccccccccc)"),
        "{err}"
    );
    assert!(
        err.contains("--allow-changed") && !err.contains("spec ("),
        "{err}"
    );
    let changed = store.check_inputs(inputs("c"), true).await.unwrap();
    assert_eq!(changed.len(), 1);
    assert!(
        store
            .check_inputs(inputs("c"), false)
            .await
            .unwrap()
            .is_empty()
    );
    drop(store);
    let conn = Connection::open(cx.path()).unwrap();
    let n: i64 = conn
        .query_row(
            "SELECT count(*) FROM input_changes WHERE name = 'price card'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 1);
}

/// Many writes in flight at once are committed in groups: every one is answered with its
/// own result once it is on disk, and a failing one (a duplicate call) undoes only
/// itself.
#[tokio::test]
async fn writes_in_flight_together_commit_together_and_fail_alone() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let mut episodes = Vec::new();
    for i in 0..20 {
        let (e, _) = store
            .episode(init("t1", &format!("single(m{i})")))
            .await
            .unwrap();
        episodes.push(e.id);
    }
    let mut pending = Vec::new();
    for (n, &episode) in episodes.iter().enumerate() {
        for turn in 1..=10u32 {
            let s = store.clone();
            let c = call(
                episode,
                turn,
                Phase::Prefix,
                request_json(&conversation(turn as usize), n as u64),
            );
            pending.push(tokio::spawn(async move { s.record_call(c).await }));
        }
        // the same call again, in the middle of the burst: refused by the UNIQUE key
        let s = store.clone();
        let again = call(
            episode,
            5,
            Phase::Prefix,
            request_json(&conversation(5), n as u64),
        );
        pending.push(tokio::spawn(async move { s.record_call(again).await }));
    }
    let mut ok = 0;
    let mut refused = 0;
    for p in pending {
        match p.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => {
                assert!(e.to_string().contains("UNIQUE"), "{e}");
                refused += 1;
            }
        }
    }
    assert_eq!((ok, refused), (200, 20));
    let reader = Reader::open(&cx.path()).unwrap();
    assert_eq!(reader.call_count().unwrap(), 200);
    for (n, &episode) in episodes.iter().enumerate() {
        let calls = reader.calls(episode).unwrap();
        let turns: Vec<u32> = calls.iter().map(|c| c.call.turn).collect();
        assert_eq!(turns, (1..=10).collect::<Vec<_>>());
        assert_eq!(
            calls[4].call.request_json,
            request_json(&conversation(5), n as u64)
        );
    }
}

#[tokio::test]
async fn a_raw_body_is_stored_without_the_reply_text_it_repeats_and_read_back_whole() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let (episode, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    let text = "Thanks, noted.\nAnswer: \"22\" \\ é 😀 \u{1}";
    let quoted = serde_json::to_string(text).unwrap();
    let chat = |turn: u32, raw: String| {
        let mut c = call(
            episode.id,
            turn,
            Phase::Prefix,
            request_json(&conversation(turn as usize), 5),
        );
        c.response_text = text.into();
        c.raw_response = Some(raw);
        c
    };
    let calls = [
        // as serde_json writes it: cut out
        chat(
            1,
            format!(
                r#"{{"id":"c1","choices":[{{"message":{{"content":{quoted}}}}}],"usage":{{}}}}"#
            ),
        ),
        // escaped otherwise (\u00e9 for é): kept whole
        chat(
            2,
            format!(
                r#"{{"choices":[{{"message":{{"content":{}}}}}]}}"#,
                quoted.replace('é', "\\u00e9")
            ),
        ),
        // the text twice: the first is cut, the second kept
        chat(3, format!("[{quoted},{quoted}]")),
        // no raw body
        baton_store::NewCall {
            raw_response: None,
            ..chat(4, String::new())
        },
    ];
    for c in &calls {
        store.record_call(c.clone()).await.unwrap();
    }
    let back: Vec<_> = store
        .calls(episode.id)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.call)
        .collect();
    assert_eq!(back, calls);
    let db = Connection::open(cx.path()).unwrap();
    let stored: Vec<(u32, Option<i64>, Option<usize>)> = db
        .prepare("SELECT turn, raw_response_text_at, length(raw_response) FROM calls ORDER BY turn")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let len = |i: usize| calls[i].raw_response.as_ref().unwrap().chars().count();
    let at = calls[0]
        .raw_response
        .as_ref()
        .unwrap()
        .find(&quoted)
        .unwrap() as i64;
    assert_eq!(
        stored,
        [
            (1, Some(at), Some(len(0) - quoted.chars().count())),
            (2, None, Some(len(1))),
            (3, Some(1), Some(len(2) - quoted.chars().count())),
            (4, None, None),
        ]
    );
    drop(db);
    // a reader sees the same bytes
    let reader = Reader::open(&cx.path()).unwrap();
    assert_eq!(
        reader
            .calls(episode.id)
            .unwrap()
            .into_iter()
            .map(|r| r.call)
            .collect::<Vec<_>>(),
        calls
    );
}

/// What [`baton_store::Store::finish_counted`] counts for episode `id`, storing it as
/// unfinished at no cost.
async fn costs_of(store: &baton_store::Store, id: i64) -> baton_store::EpisodeCosts {
    store
        .finish_counted(id, Outcome::unfinished(), Cost::ZERO, |_| Cost::ZERO)
        .await
        .unwrap()
}

#[tokio::test]
async fn counted_costs_are_the_money_fields_of_calls_in_the_same_order() {
    let cx = TestContext::new();
    let store = cx.store().await;
    store
        .episode(init("t1", "handoff(hc->lc)@1"))
        .await
        .unwrap();
    store.episode(init("t1", "single(lc)")).await.unwrap();
    let made = |episode: i64, turn: u32, phase: Phase, n: u64| {
        let mut c = call(
            episode,
            turn,
            phase,
            request_json(&conversation(turn as usize), n),
        );
        c.cost = Cost(100 * n as i64);
        c.usage.uncached_in = 10 + n;
        c.usage.cache_read = 20 + n;
        c.usage.cache_write_5m = n;
        c.usage.cache_write_1h = 2 * n;
        c.usage.output = 30 + n;
        c.usage.reasoning = 3 * n;
        c.attempts = 1 + (n % 3) as u32;
        if n == 4 {
            c.cost = Cost(0);
            c.unpriced = Some("no rate for reasoning".into());
        }
        c
    };
    // stored out of order: both queries give turn order, prefix before handoff before suffix
    for c in [
        made(1, 2, Phase::Suffix, 1),
        made(1, 1, Phase::Prefix, 2),
        made(2, 1, Phase::Prefix, 3),
        made(1, 1, Phase::Handoff, 4),
        made(1, 2, Phase::Extraction, 5),
        made(1, 1, Phase::Suffix, 6),
    ] {
        store.record_call(c).await.unwrap();
    }
    let costs = costs_of(&store, 1).await.calls;
    let from_calls: Vec<CallCost> = store
        .calls(1)
        .await
        .unwrap()
        .into_iter()
        .map(|r| CallCost {
            turn: r.call.turn,
            phase: r.call.phase,
            cost: r.call.cost,
            unpriced: r.call.unpriced,
            usage: r.call.usage,
            attempts: r.call.attempts,
        })
        .collect();
    assert_eq!(costs, from_calls);
    let order: Vec<_> = costs.iter().map(|c| (c.turn, c.phase)).collect();
    assert_eq!(
        order,
        [
            (1, Phase::Prefix),
            (1, Phase::Handoff),
            (1, Phase::Suffix),
            (2, Phase::Suffix),
            (2, Phase::Extraction),
        ]
    );
    assert_eq!(costs[1].unpriced.as_deref(), Some("no rate for reasoning"));
    assert_eq!(costs[1].cost, Cost(0));
    assert_eq!(costs[0].cost, Cost(200));
    assert_eq!(costs[0].usage.cache_write_1h, 4);
    assert_eq!(costs[3].attempts, 2);
    assert_eq!(costs_of(&store, 2).await.calls.len(), 1);
}

#[tokio::test]
async fn an_outcome_stored_counted_pays_what_the_calls_it_stored_cost() {
    let cx = TestContext::new();
    let store = cx.store().await;
    store.episode(init("t1", "single(lc)")).await.unwrap();
    store.episode(init("t1", "single(hc)")).await.unwrap();
    for (episode, turn, cost) in [(1, 1, 300), (2, 1, 9_000), (1, 2, 40)] {
        let mut c = call(
            episode,
            turn,
            Phase::Prefix,
            request_json(&conversation(turn as usize), cost as u64),
        );
        c.cost = Cost(cost);
        store.record_call(c).await.unwrap();
    }
    // the outcome's own costs are replaced by what the store counts
    let outcome = Outcome {
        reason: Some("stopped".into()),
        cost_paid: Cost(1),
        cost_attributed: Cost(1),
        ..Outcome::unfinished()
    };
    let costs = store
        .finish_counted(1, outcome, Cost(5), |c| {
            c.calls.iter().map(|c| c.cost).sum()
        })
        .await
        .unwrap();
    let counted: Vec<_> = costs.calls.iter().map(|c| (c.turn, c.cost)).collect();
    assert_eq!(counted, [(1, Cost(300)), (2, Cost(40))]);
    assert!(costs.attempts.is_empty());
    let rows = Reader::open(&cx.path()).unwrap().all_episodes().unwrap();
    let row = rows.iter().find(|r| r.id == 1).unwrap();
    assert_eq!(row.outcome.cost_paid, Cost(340));
    assert_eq!(row.outcome.cost_attributed, Cost(345));
    assert_eq!(row.outcome.reason.as_deref(), Some("stopped"));
    assert_eq!(row.status(), EpisodeStatus::Incomplete);
    // the other episode is untouched
    let other = rows.iter().find(|r| r.id == 2).unwrap();
    assert_eq!(other.outcome.cost_paid, Cost(0));
}

#[tokio::test]
async fn a_refused_call_leaves_no_message_behind_for_the_next_to_point_at() {
    let cx = TestContext::new();
    let store = cx.store().await;
    let (e, _) = store.episode(init("t1", "single(lc)")).await.unwrap();
    store
        .record_call(call(
            e.id,
            1,
            Phase::Prefix,
            request_json(&conversation(1), 1),
        ))
        .await
        .unwrap();
    // turn 1 again is refused after its messages went in; they are undone with it, and
    // the next calls carrying the same messages store them anew: alone, then two at once
    // (one group commit)
    let again =
        |turn: u32, n: usize| call(e.id, turn, Phase::Prefix, request_json(&conversation(n), 2));
    store.record_call(again(1, 2)).await.unwrap_err();
    store.record_call(again(2, 2)).await.unwrap();
    let (refused, stored) = tokio::join!(
        store.record_call(again(1, 3)),
        store.record_call(again(3, 3))
    );
    refused.unwrap_err();
    stored.unwrap();
    let calls = store.calls(e.id).await.unwrap();
    let requests: Vec<(u32, String)> = calls
        .iter()
        .map(|c| (c.call.turn, c.call.request_json.clone()))
        .collect();
    assert_eq!(
        requests,
        [
            (1, request_json(&conversation(1), 1)),
            (2, request_json(&conversation(2), 2)),
            (3, request_json(&conversation(3), 2)),
        ]
    );
    drop(store);
    let db = Connection::open(cx.path()).unwrap();
    let dangling: i64 = db
        .query_row(
            "SELECT count(*) FROM message_lists l LEFT JOIN messages m ON m.id = l.message
             WHERE m.id IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(dangling, 0);
}
