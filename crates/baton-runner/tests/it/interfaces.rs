use baton_runner::InterfaceTemplates;
use baton_store::Reader;
use baton_types::{Cell, Cost, EpisodeStatus, Interface, Message, Phase, Role};

use crate::run;

fn messages(request_json: &str) -> Vec<Message> {
    let req: serde_json::Value = serde_json::from_str(request_json).unwrap();
    serde_json::from_value(req["messages"].clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_interface_hands_over_what_it_promises() {
    let text = r#"
name = "interfaces"
dataset = "sample"
families = ["math", "actions"]
limit = 2
seed = 3
switch_points = ["middle"]
interfaces = ["raw", "disclosure", "traj_drop", "compact_pre", "compact_suf"]
[models.lc]
model = "sim/lc"
[models.hc]
model = "sim/hc"
[[pairs]]
low = "lc"
high = "hc"
"#;
    let dir = tempfile::tempdir().unwrap();
    let summary = run(dir.path(), text).await;
    let reader = Reader::open(&summary.store_path).unwrap();
    let t = InterfaceTemplates::embedded();
    let (before, after) = t
        .compact_handoff
        .split_once(baton_runner::SUMMARY_PLACEHOLDER)
        .unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for e in reader.episodes().unwrap() {
        assert_eq!(
            e.status(),
            EpisodeStatus::Scored,
            "{} {:?}",
            e.init.cell_key,
            e.outcome.reason
        );
        let Cell::Handoff {
            sender,
            receiver,
            interface,
            ..
        } = serde_json::from_str(&e.init.cell_json).unwrap()
        else {
            continue;
        };
        seen.insert(interface);
        let k = e.init.k.unwrap();
        let calls = reader.calls(e.id).unwrap();
        let handoff: Vec<_> = calls
            .iter()
            .filter(|c| c.call.phase == Phase::Handoff)
            .collect();
        let first_suffix = calls
            .iter()
            .find(|c| c.call.phase == Phase::Suffix && c.call.turn == k + 1)
            .unwrap();
        let first = messages(&first_suffix.call.request_json);
        let users: Vec<&str> = first
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .collect();
        let replies = first.iter().filter(|m| m.role == Role::Assistant).count();
        match interface {
            Interface::Raw => {
                assert!(handoff.is_empty());
                assert_eq!(replies as u32, k);
            }
            Interface::Disclosure => {
                assert!(handoff.is_empty());
                assert_eq!(replies as u32, k);
                assert!(
                    users
                        .last()
                        .unwrap()
                        .starts_with(&format!("{}\n\n", t.disclosure))
                );
            }
            Interface::TrajDrop => {
                assert!(handoff.is_empty());
                assert_eq!(replies, 0, "no reply of the sender crosses");
                assert_eq!(users.len(), 1, "the shards so far arrive as one turn");
            }
            Interface::CompactPre | Interface::CompactSuf => {
                assert_eq!(handoff.len(), 1, "one paid summary call");
                let summarizer = if interface == Interface::CompactPre {
                    &sender
                } else {
                    &receiver
                };
                assert_eq!(&handoff[0].call.model, summarizer);
                let asked = messages(&handoff[0].call.request_json);
                assert_eq!(asked.last().unwrap().content, t.compact_request);
                assert_eq!(first.len(), 2, "system prompt + handoff message");
                assert!(
                    users[0].starts_with(before)
                        && users[0].contains(&handoff[0].call.response_text)
                );
                assert!(users[0].contains(after));
                // The summary is paid by the episode and part of its attributed cost.
                let own: Cost = calls.iter().map(|c| c.call.cost).sum();
                assert_eq!(e.outcome.cost_paid, own);
                assert!(e.outcome.cost_attributed > own);
            }
            Interface::Handover => unreachable!("a chat experiment refuses handover"),
        }
    }
    assert_eq!(seen.len(), 5);
}

/// The simulated models, except that each compaction summary request is first answered
/// with no text and finish reason `length` (a reasoning model that spent its output cap:
/// the wires let such a reply through as legitimately empty).
struct CutSummary {
    sim: baton_models::SimProvider,
    compact_request: String,
    /// Summary requests already cut (model and messages).
    cut: std::sync::Mutex<std::collections::HashSet<String>>,
}

#[async_trait::async_trait]
impl baton_models::Provider for CutSummary {
    fn kind(&self) -> &str {
        "cut"
    }

    async fn generate(
        &self,
        request: &baton_models::Request,
    ) -> Result<baton_models::Response, baton_models::ProviderError> {
        let mut r = self.sim.reply(request)?;
        let asks_summary = request
            .messages
            .last()
            .is_some_and(|m| m.role == Role::User && m.content == self.compact_request);
        let key = format!(
            "{} {}",
            request.model,
            serde_json::to_string(&request.messages).unwrap()
        );
        if asks_summary && self.cut.lock().unwrap().insert(key) {
            r.text = String::new();
            r.finish_reason = Some("length".into());
        }
        Ok(r)
    }
}

/// Models of kind `cut` (`cut/lc`, `cut/hc`), all answered by one [`CutSummary`].
struct CutModels(std::sync::Arc<CutSummary>);

impl baton_models::ProviderFactory for CutModels {
    fn kinds(&self) -> Vec<String> {
        vec!["cut".into()]
    }

    fn make(
        &self,
        _config: &baton_models::ProviderConfig,
    ) -> Result<std::sync::Arc<dyn baton_models::Provider>, String> {
        Ok(self.0.clone())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_summary_cut_at_the_output_limit_is_a_billed_attempt_not_an_empty_summary() {
    let tasks = baton_data::sample_dataset().tasks;
    let presets: std::collections::BTreeMap<String, baton_models::SimSettings> = ["lc", "hc"]
        .into_iter()
        .map(|m| (m.to_string(), baton_models::SimSettings::preset(m)))
        .collect();
    let provider = std::sync::Arc::new(CutSummary {
        sim: baton_models::SimProvider::new(tasks, presets).unwrap(),
        compact_request: InterfaceTemplates::embedded().compact_request,
        cut: std::sync::Mutex::default(),
    });
    let text = r#"
name = "cut-summary"
dataset = "sample"
families = ["math"]
limit = 2
seed = 3
switch_points = ["middle"]
interfaces = ["compact_pre", "compact_suf"]
[models.lc]
model = "cut/lc"
price = "sim/lc"
[models.hc]
model = "cut/hc"
price = "sim/hc"
[[pairs]]
low = "lc"
high = "hc"
"#;
    let dir = tempfile::tempdir().unwrap();
    let spec = baton_runner::ExperimentSpec::parse("cut-summary.toml", text).unwrap();
    let mut options = baton_runner::RunOptions::new(dir.path(), ".", text);
    options.providers = vec![std::sync::Arc::new(CutModels(provider.clone()))];
    let summary = baton_runner::Runner::prepare(spec, options)
        .await
        .unwrap()
        .run()
        .await
        .unwrap();
    let reader = Reader::open(&summary.store_path).unwrap();
    let db = rusqlite::Connection::open(&summary.store_path).unwrap();
    let mut compacted = 0;
    for e in reader.episodes().unwrap() {
        assert_eq!(e.status(), EpisodeStatus::Scored, "{}", e.init.cell_key);
        let calls = reader.calls(e.id).unwrap();
        let handoff: Vec<_> = calls
            .iter()
            .filter(|c| c.call.phase == Phase::Handoff)
            .collect();
        if handoff.is_empty() {
            continue;
        }
        compacted += 1;
        assert_eq!(handoff.len(), 1, "{}", e.init.cell_key);
        // the summary handed on is the retried reply's text, not the cut reply's nothing
        assert!(
            !handoff[0].call.response_text.trim().is_empty(),
            "{}",
            e.init.cell_key
        );
        let attempts: Vec<(String, String, i64, i64)> = db
            .prepare("SELECT phase, reason, attempt, cost FROM attempts WHERE episode_id = ?1")
            .unwrap()
            .query_map([e.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(attempts.len(), 1, "{}: {attempts:?}", e.init.cell_key);
        let (phase, reason, attempt, cost) = &attempts[0];
        assert_eq!(phase, "handoff");
        assert_eq!(reason, "a summary must be text, and the reply has none");
        assert_eq!(*attempt, 1);
        assert!(*cost > 0, "the cut reply is billed");
        // the episode pays the billed cut reply besides its calls
        let own: Cost = calls.iter().map(|c| c.call.cost).sum();
        assert!(e.outcome.cost_paid > own, "{}", e.init.cell_key);
    }
    // 2 tasks x 2 directions x 2 interfaces
    assert_eq!(compacted, 8);
    assert_eq!(provider.cut.lock().unwrap().len(), 8);
}
