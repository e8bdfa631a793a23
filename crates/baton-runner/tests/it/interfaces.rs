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
