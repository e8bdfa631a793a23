//! What an agent handoff shows the model that takes over at call s: the interfaces'
//! rewrites of the visible trajectory, and the texts they use.
//!
//! The environment always persists across the switch; the interfaces differ only in the
//! conversation the suffix model is sent ([`rewrite`]):
//!
//! * `raw`: the full trajectory, unannounced.
//! * `disclosure`: the full trajectory plus one fixed user note ([`HandoffTexts::disclosure_note`]).
//! * `compact_pre` / `compact_suf`: the prefix / suffix model is sent the full trajectory
//!   plus [`HandoffTexts::summary_request`] in one call (the *handoff* call; it is paid
//!   and kept, but it is not a step); the live context is then three messages: the
//!   system message, the task, and [`HandoffTexts::handoff_message`] carrying the summary.
//! * `handover`: like `compact_pre`, with a Handover document for the summary: the prefix
//!   model is sent the full trajectory plus a request for the document (the runner's:
//!   `baton_handover::switch::handover_request`, naming the commit of the tree at the
//!   switch) in the handoff call, and the suffix model starts from the same three
//!   messages with the document in [`HandoffTexts::handoff_message`].
//! * `traj_drop`: the same three messages with [`HandoffTexts::continuation_message`]
//!   instead of a summary; the removed trajectory is kept by the caller as an audit record.
//!
//! The texts are baton's own (`handoff.yaml` beside this file, [`DEFAULT_HANDOFF_TEXTS_VERSION`]),
//! or a user's YAML file with the same keys; their sha256 ([`HandoffTexts::sha256`]) is
//! an input of the run, and the texts themselves are stored with it.

use std::path::Path;

use baton_types::{Interface, Message};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::AgentError;

/// baton's own handoff texts (`handoff.yaml` beside this file).
pub const DEFAULT_HANDOFF_TEXTS: &str = include_str!("handoff.yaml");

/// The version of [`DEFAULT_HANDOFF_TEXTS`]; bump it on any change of their wording.
pub const DEFAULT_HANDOFF_TEXTS_VERSION: &str = "baton-agent-handoff-1";

/// The texts of the handoff interfaces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoffTexts {
    /// `baton-agent-handoff-1`, or what the user's file calls itself (its path if nothing).
    pub version: String,
    /// `disclosure`: the note added after the trajectory.
    pub disclosure_note: String,
    /// `compact_*`: the request sent, after the trajectory, to the summarising model.
    pub summary_request: String,
    /// `compact_*`: the third message of the new context; a template with `summary`.
    pub handoff_message: String,
    /// `traj_drop`: the third message of the new context.
    pub continuation_message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: Option<String>,
    disclosure_note: Option<String>,
    summary_request: Option<String>,
    handoff_message: Option<String>,
    continuation_message: Option<String>,
}

fn parse(text: &str, origin: &str) -> Result<File, AgentError> {
    serde_saphyr::from_str::<File>(text).map_err(|e| {
        AgentError::invalid(origin, None, None, format!("not a handoff texts file: {e}"))
    })
}

impl Default for HandoffTexts {
    fn default() -> Self {
        let f = parse(DEFAULT_HANDOFF_TEXTS, DEFAULT_HANDOFF_TEXTS_VERSION)
            .expect("baton's own handoff texts parse");
        HandoffTexts {
            version: f.version.expect("version"),
            disclosure_note: f.disclosure_note.expect("disclosure_note"),
            summary_request: f.summary_request.expect("summary_request"),
            handoff_message: f.handoff_message.expect("handoff_message"),
            continuation_message: f.continuation_message.expect("continuation_message"),
        }
    }
}

impl HandoffTexts {
    /// Read a user's texts file; keys it leaves out keep baton's own.
    pub fn load(path: &Path) -> Result<Self, AgentError> {
        let text = std::fs::read_to_string(path).map_err(|e| AgentError::io(path, "read", e))?;
        Self::from_yaml(&text, &path.display().to_string())
    }

    /// [`load`](Self::load) from text; `origin` names it in errors (and is the version
    /// when the file names none).
    pub fn from_yaml(text: &str, origin: &str) -> Result<Self, AgentError> {
        let f = parse(text, origin)?;
        let base = HandoffTexts::default();
        let t = HandoffTexts {
            version: f.version.unwrap_or_else(|| origin.to_string()),
            disclosure_note: f.disclosure_note.unwrap_or(base.disclosure_note),
            summary_request: f.summary_request.unwrap_or(base.summary_request),
            handoff_message: f.handoff_message.unwrap_or(base.handoff_message),
            continuation_message: f.continuation_message.unwrap_or(base.continuation_message),
        };
        minijinja::Environment::new()
            .template_from_str(&t.handoff_message)
            .map_err(|e| {
                AgentError::invalid(origin, None, Some("handoff_message"), e.to_string())
            })?;
        Ok(t)
    }

    /// The sha256 of the texts' JSON form (an input of the run).
    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(self.to_json()))
    }

    /// The texts as the JSON stored with a run.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("texts always serialize")
    }

    /// The handoff message carrying `summary`.
    pub fn handoff_message(&self, summary: &str) -> Result<String, AgentError> {
        minijinja::Environment::new()
            .render_str(
                &self.handoff_message,
                minijinja::context! { summary => summary },
            )
            .map_err(|e| {
                AgentError::invalid(&self.version, None, Some("handoff_message"), e.to_string())
            })
    }
}

/// The request of a compaction's handoff call: the full trajectory and the summary request.
pub fn summary_messages(texts: &HandoffTexts, trajectory: &[Message]) -> Vec<Message> {
    handoff_call_messages(trajectory, texts.summary_request.clone())
}

/// The request of a handoff call: the full trajectory and `request` (the summary request,
/// or for `handover` the request for a Handover document) as the last user message.
pub fn handoff_call_messages(trajectory: &[Message], request: String) -> Vec<Message> {
    let mut m = trajectory.to_vec();
    m.push(Message::user(request));
    m
}

/// The conversation the suffix model starts from under `interface`. `trajectory` is the
/// visible conversation before call s (system message and task first); `summary` is the
/// handoff call's reply text, for the compaction interfaces.
pub fn rewrite(
    interface: Interface,
    texts: &HandoffTexts,
    trajectory: &[Message],
    summary: Option<&str>,
) -> Result<Vec<Message>, AgentError> {
    let head = || trajectory.iter().take(2).cloned().collect::<Vec<_>>();
    Ok(match interface {
        Interface::Raw => trajectory.to_vec(),
        Interface::Disclosure => {
            let mut m = trajectory.to_vec();
            m.push(Message::user(texts.disclosure_note.clone()));
            m
        }
        Interface::CompactPre | Interface::CompactSuf | Interface::Handover => {
            let mut m = head();
            m.push(Message::user(texts.handoff_message(summary.unwrap_or(""))?));
            m
        }
        Interface::TrajDrop => {
            let mut m = head();
            m.push(Message::user(texts.continuation_message.clone()));
            m
        }
    })
}

/// Whether `interface` makes a handoff call (a summary, or `handover`'s document).
pub fn summarises(interface: Interface) -> bool {
    matches!(
        interface,
        Interface::CompactPre | Interface::CompactSuf | Interface::Handover
    )
}

/// Whether the sender (the prefix model) makes `interface`'s handoff call (`compact_pre`,
/// `handover`); the receiver makes `compact_suf`'s.
pub fn sender_writes(interface: Interface) -> bool {
    matches!(interface, Interface::CompactPre | Interface::Handover)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trajectory() -> Vec<Message> {
        vec![
            Message::system("sys"),
            Message::user("task"),
            Message::assistant("ls"),
            Message::user("<returncode>0</returncode>"),
        ]
    }

    #[test]
    fn each_interface_rewrites_the_trajectory_its_way() {
        let t = HandoffTexts::default();
        assert_eq!(t.version, DEFAULT_HANDOFF_TEXTS_VERSION);
        let traj = trajectory();
        assert_eq!(rewrite(Interface::Raw, &t, &traj, None).unwrap(), traj);
        let d = rewrite(Interface::Disclosure, &t, &traj, None).unwrap();
        assert_eq!(d.len(), 5);
        assert_eq!(d[4].content, t.disclosure_note);
        let c = rewrite(Interface::CompactPre, &t, &traj, Some("SUMMARY")).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(&c[..2], &traj[..2]);
        assert!(c[2].content.contains("SUMMARY"), "{}", c[2].content);
        let drop = rewrite(Interface::TrajDrop, &t, &traj, None).unwrap();
        assert_eq!(drop[2].content, t.continuation_message);
        assert!(summarises(Interface::CompactSuf) && !summarises(Interface::TrajDrop));
        assert_eq!(summary_messages(&t, &traj).len(), 5);
        // handover: the document takes the summary's place, the structure is compact_pre's
        let h = rewrite(Interface::Handover, &t, &traj, Some("---\nhandoff: x\n")).unwrap();
        let c = rewrite(Interface::CompactPre, &t, &traj, Some("---\nhandoff: x\n")).unwrap();
        assert_eq!(h, c);
        assert!(summarises(Interface::Handover) && sender_writes(Interface::Handover));
        assert!(!sender_writes(Interface::CompactSuf));
        let ask = handoff_call_messages(&traj, "write it".into());
        assert_eq!(ask.len(), 5);
        assert_eq!(ask[4], Message::user("write it"));
    }

    #[test]
    fn a_users_file_replaces_texts_key_for_key() {
        let t = HandoffTexts::from_yaml("disclosure_note: another model did that\n", "mine.yaml")
            .unwrap();
        assert_eq!(t.version, "mine.yaml");
        assert_eq!(t.disclosure_note, "another model did that\n".trim_end());
        assert_eq!(t.summary_request, HandoffTexts::default().summary_request);
        assert_ne!(t.sha256(), HandoffTexts::default().sha256());
        let err = HandoffTexts::from_yaml("disclosure: x\n", "bad.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.yaml") && err.contains("disclosure"),
            "{err}"
        );
        let err = HandoffTexts::from_yaml("handoff_message: '{% if %}'\n", "bad.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("handoff_message"), "{err}");
    }
}
