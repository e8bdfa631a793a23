//! Simulated models (`sim/<name>`): deterministic stand-ins that make the whole pipeline,
//! the demo and the tests run offline, and make handoff effects visible.
//!
//! # The rules
//!
//! A sim model knows the tasks of the experiment and recognises the task of a request by
//! the shards its user turns contain. When the user turns have revealed `t` of `N` shards:
//!
//! * Its *base chance* of being right is its `skill`.
//! * It reads the visible history. If the most recent answer in view (the last
//!   assistant reply, or the current answer in a summary handed over in a user turn)
//!   holds the correct draft, the chance rises to `skill + carry · (1 − skill)`; if it
//!   holds a wrong draft, it falls to `skill · (1 − anchoring)` (an earlier wrong answer
//!   pulls it off course, as in Lost in Conversation). With no answer in view (the first
//!   turn, or a `traj_drop` handoff) it stays at `skill`. Notes it does not recognise
//!   (such as a `disclosure` note) change nothing but the draw.
//! * A single user turn that quotes the task's original instruction (LiC's `full`
//!   baseline) reveals every shard at once: it is answered as a last turn, with no
//!   answer in view. All shards in one turn (LiC's `concat`) are the same.
//! * A request whose last user turn reveals no new shard asks for a summary: the reply
//!   lists the shards revealed so far and, with chance `skill`, copies the current
//!   answer in view (a weaker summariser loses it more often).
//! * Before the last turn it has seen only `t` of `N` shards, so an intermediate draft is
//!   right with chance `chance · t / N`; at the last turn with the full `chance`.
//! * The draw is a hash of (seed, task id, model id, every visible message), so the same
//!   visible history always gives the same reply, and a receiver's chance depends on
//!   exactly what it was handed.
//! * A right final answer is the task's reference in the family's answer format (it
//!   passes the real evaluator); a wrong one is a plausible wrong answer (it fails).
//! * A code item without a `baton_reference_solution` (every code item of LiC's own file)
//!   has no right answer a sim could give: it is always answered with a wrong attempt
//!   (one of the item's `baton_wrong_solutions`, else `def <func_name>(*args): return
//!   None`), so simulated code scores on such a file are uninformative, and the report
//!   says so. No call fails for it.
//! * Usage comes from text length ([`crate::tokens`]): one token per four characters
//!   (rounded up) plus four per message; no prompt caching.
//!
//! * An answer-extraction request (`extraction = "lic"`) is answered as
//!   `sim_extraction.rs` says: the sim's own answer, in LiC's JSON shape, with
//!   chance `skill` per attempt of copying it verbatim.
//!
//! Any report built from sim models says that its numbers come from simulated models:
//! they show the pipeline, not a finding about real LLMs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use baton_types::{Family, Message, Role, Task, Usage};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::answer_key::{REFERENCE_SOLUTION_KEY, reference_response, wrong_response};
use crate::provider::{Provider, ProviderError, Request, Response};
use crate::tokens::{message_tokens, text_tokens};

/// The knobs of one simulated model. Every rule is in the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimSettings {
    /// Chance of a right final answer with no earlier reply in view (0..=1).
    pub skill: f64,
    /// How much a wrong earlier draft lowers the chance (0..=1).
    pub anchoring: f64,
    /// How much of the remaining gap a right earlier draft closes (0..=1).
    pub carry: f64,
    /// Simulated latency per call, in milliseconds.
    pub latency_ms: u64,
}

impl Default for SimSettings {
    fn default() -> Self {
        SimSettings {
            skill: 0.6,
            anchoring: 0.35,
            carry: 0.5,
            latency_ms: 0,
        }
    }
}

impl SimSettings {
    /// Built-in presets: `lc` (a low-cost model, skill 0.45) and `hc` (a
    /// high-capability model, skill 0.85). Other names get the defaults.
    pub fn preset(name: &str) -> SimSettings {
        match name {
            "lc" => SimSettings {
                skill: 0.45,
                ..SimSettings::default()
            },
            "hc" => SimSettings {
                skill: 0.85,
                ..SimSettings::default()
            },
            _ => SimSettings::default(),
        }
    }

    fn validate(&self, name: &str) -> Result<(), String> {
        self.check().map_err(|e| format!("sim model {name:?}: {e}"))
    }

    /// The settings' ranges: skill, anchoring and carry are chances in 0..=1.
    pub fn check(&self) -> Result<(), String> {
        for (field, v) in [
            ("skill", self.skill),
            ("anchoring", self.anchoring),
            ("carry", self.carry),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("{field} = {v} is outside 0..=1"));
            }
        }
        Ok(())
    }
}

/// The simulated provider: serves every `sim/<name>` model of an experiment.
#[derive(Debug, Clone)]
pub struct SimProvider {
    tasks: Arc<Vec<Task>>,
    models: BTreeMap<String, SimSettings>,
}

impl SimProvider {
    /// A provider that knows `tasks` and serves the named models with their settings.
    pub fn new(tasks: Vec<Task>, models: BTreeMap<String, SimSettings>) -> Result<Self, String> {
        for (name, s) in &models {
            s.validate(name)?;
        }
        Ok(SimProvider {
            tasks: Arc::new(tasks),
            models,
        })
    }

    /// Find the task whose shards the user turns reveal, and how many of its shards
    /// (in order) they have revealed. Notes and summaries around the shards, or shards
    /// joined into one turn (LiC's `concat`), do not matter. A single user turn that
    /// quotes a task's original instruction (LiC's `full`) reveals everything at once.
    fn find_task(&self, users: &[&str]) -> Option<(&Task, Reveal)> {
        let first = users.first()?;
        let by_shards = self
            .tasks
            .iter()
            .filter(|task| {
                task.shards
                    .first()
                    .is_some_and(|s| first.contains(s.shard.as_str()))
            })
            .map(|task| {
                let revealed = task
                    .shards
                    .iter()
                    .take_while(|s| users.iter().any(|u| u.contains(s.shard.as_str())))
                    .count();
                (task, revealed)
            })
            .max_by_key(|(task, revealed)| (*revealed, std::cmp::Reverse(task.shards.len())));
        if let Some((task, revealed)) = by_shards
            && revealed == task.shards.len()
        {
            return Some((task, Reveal::Shards(revealed)));
        }
        // LiC's `full` baseline states the original instruction instead of the shards (a
        // shard may be quoted in it, so it is looked for before a partial match counts)
        let full = (users.len() == 1)
            .then(|| {
                self.tasks
                    .iter()
                    .find(|task| full_instruction(task).is_some_and(|q| first.contains(q)))
            })
            .flatten();
        match (full, by_shards) {
            (Some(task), _) => Some((task, Reveal::Full)),
            (None, Some((task, revealed))) => Some((task, Reveal::Shards(revealed))),
            (None, None) => None,
        }
    }

    /// Produce the reply for a request (no latency).
    pub fn reply(&self, request: &Request) -> Result<Response, ProviderError> {
        let settings = self.models.get(&request.model).ok_or_else(|| {
            ProviderError::Config(format!("unknown simulated model {:?}", request.model))
        })?;
        let users: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .collect();
        let extraction = users
            .last()
            .and_then(|u| crate::sim_extraction::recognise(u));
        let text = if let Some((family, reviewed)) = extraction {
            crate::sim_extraction::reply(family, reviewed, request, settings)
        } else {
            self.chat_reply(&users, request, settings)?
        };
        let input: u64 = request.messages.iter().map(message_tokens).sum();
        Ok(Response {
            usage: Usage {
                uncached_in: input,
                output: text_tokens(&text),
                ..Usage::default()
            },
            model_served: format!("sim/{}", request.model),
            finish_reason: Some("stop".into()),
            raw: None,
            tool_calls: Vec::new(),
            batch_id: None,
            batch_item: None,
            text,
        })
    }

    /// The reply to a chat turn: an answer, or a summary when no new shard is revealed.
    fn chat_reply(
        &self,
        users: &[&str],
        request: &Request,
        settings: &SimSettings,
    ) -> Result<String, ProviderError> {
        Ok(match self.find_task(users) {
            Some((task, Reveal::Full)) => {
                self.answer(task, settings, request, task.shards.len())?
            }
            Some((task, Reveal::Shards(turn))) => {
                let newest = task.shards[turn - 1].shard.as_str();
                if users.last().is_some_and(|u| u.contains(newest)) {
                    self.answer(task, settings, request, turn)?
                } else {
                    summary(task, turn, request, settings)
                }
            }
            None => "I am not sure what you are asking; could you tell me more?".to_string(),
        })
    }

    fn answer(
        &self,
        task: &Task,
        s: &SimSettings,
        request: &Request,
        turn: usize,
    ) -> Result<String, ProviderError> {
        let key_err = |e: crate::ModelError| ProviderError::Config(e.to_string());
        // LiC's own code items carry no reference solution: the sim cannot be right on
        // them, and answers with a wrong attempt (see the module docs)
        let reference = match reference_response(task) {
            Ok(r) => Some(r),
            Err(_)
                if task.family == Family::Code
                    && task.sample.get(REFERENCE_SOLUTION_KEY).is_none() =>
            {
                None
            }
            Err(e) => return Err(key_err(e)),
        };
        let chance = match (latest_draft(request), &reference) {
            (_, None) => 0.0,
            (None, _) => s.skill,
            (Some(draft), Some(reference)) if draft.contains(reference.as_str()) => {
                s.skill + s.carry * (1.0 - s.skill)
            }
            (Some(_), Some(_)) => s.skill * (1.0 - s.anchoring),
        };
        let n = task.shards.len();
        let chance = chance * turn as f64 / n as f64;
        let draw = draw(request, &task.task_id, "answer");
        let answer = if let Some(reference) = reference.filter(|_| draw < chance) {
            reference
        } else {
            let variant = (draw * 1e6) as u64;
            wrong_response(task, variant).map_err(key_err)?
        };
        Ok(if turn < n {
            format!("{DRAFT_LEAD}{answer}{DRAFT_TAIL}")
        } else {
            answer
        })
    }
}

/// How a request's user turns reveal its task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reveal {
    /// The first `n` shards, in order (all of them in one turn under `concat`).
    Shards(usize),
    /// LiC's `full` prompt: the original instruction in one turn, so everything.
    Full,
}

/// The text of a task's original, fully specified instruction, as LiC's `full`
/// baseline quotes it: `question` (math), `fully_specified_question` (database; for
/// actions its first message), `prompt` or `question_content` (code),
/// `table_highlighted_html` (data2text).
fn full_instruction(task: &Task) -> Option<&str> {
    let s = &task.sample;
    let text = match task.family {
        Family::Math => s.get("question"),
        Family::Database => s.get("fully_specified_question"),
        Family::Actions => s
            .get("fully_specified_question")
            .and_then(|v| v.get(0))
            .and_then(|v| v.get(0))
            .and_then(|v| v.get("content")),
        Family::Code => s.get("prompt").or_else(|| s.get("question_content")),
        Family::Data2Text => s.get("table_highlighted_html"),
    };
    text.and_then(serde_json::Value::as_str)
        .filter(|t| !t.trim().is_empty())
}

/// How a reply before the last turn opens: the draft answer follows.
pub const DRAFT_LEAD: &str = "Thanks, noted. From what I know so far, my current answer is:\n\n";
/// How a reply before the last turn ends, after the draft answer.
pub const DRAFT_TAIL: &str = "\n\nTell me if there is more to consider.";
const SUMMARY_DRAFT: &str = "\nCurrent answer:\n";

/// The text of the most recent answer in view: the last assistant reply, or a summary
/// handed over in a user turn, whichever is later. `None` when nothing was answered.
fn latest_draft(request: &Request) -> Option<&str> {
    request
        .messages
        .iter()
        .skip(1)
        .rev()
        .find_map(|m| match m.role {
            Role::Assistant => Some(m.content.as_str()),
            Role::User => m
                .content
                .find(SUMMARY_DRAFT)
                .map(|i| &m.content[i + SUMMARY_DRAFT.len()..]),
            Role::System | Role::Tool => None,
        })
}

/// A request that reveals no new shard asks for a summary: the requirements so far and,
/// with chance `skill`, the current answer copied from the latest draft in view (a
/// weaker summariser drops it more often).
fn summary(task: &Task, revealed: usize, request: &Request, s: &SimSettings) -> String {
    let requirements: Vec<&str> = task.shards[..revealed]
        .iter()
        .map(|s| s.shard.as_str())
        .collect();
    let mut text = format!(
        "Summary of the conversation so far.\nRequirements: {}",
        requirements.join(" | ")
    );
    let keeps_answer = draw(request, &task.task_id, "summary") < s.skill;
    if let Some(d) = latest_draft(request).filter(|_| keeps_answer) {
        let d = d.strip_prefix(DRAFT_LEAD).unwrap_or(d);
        text.push_str(SUMMARY_DRAFT);
        text.push_str(d.strip_suffix(DRAFT_TAIL).unwrap_or(d));
    }
    text
}

#[async_trait]
impl Provider for SimProvider {
    fn kind(&self) -> &str {
        "sim"
    }

    async fn generate(&self, request: &Request) -> Result<Response, ProviderError> {
        let latency = self.models.get(&request.model).map_or(0, |s| s.latency_ms);
        if latency > 0 {
            tokio::time::sleep(Duration::from_millis(latency)).await;
        }
        self.reply(request)
    }
}

/// A uniform draw in [0, 1) from the seed, the task, the model and the visible history.
fn draw(request: &Request, task_id: &str, purpose: &str) -> f64 {
    draw_from(
        request.seed.unwrap_or(0),
        &[task_id, request.model.as_str(), purpose],
        &request.messages,
    )
}

/// The draw every simulated model (chat and coding agent) makes: a uniform number in
/// [0, 1) from a sha256 over the seed, the length-prefixed `parts` (task, model, purpose)
/// and the visible `messages` (role, length-prefixed content, tool-call arguments), so a
/// reply is a pure function of what the model has seen.
pub fn draw_from(seed: u64, parts: &[&str], messages: &[Message]) -> f64 {
    let mut h = Sha256::new();
    h.update(seed.to_le_bytes());
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    for m in messages {
        h.update([m.role as u8]);
        h.update((m.content.len() as u64).to_le_bytes());
        h.update(m.content.as_bytes());
        for c in &m.tool_calls {
            h.update(c.arguments.as_bytes());
        }
    }
    let digest = h.finalize();
    let x = u64::from_le_bytes(digest[..8].try_into().expect("8 bytes"));
    (x >> 11) as f64 / (1u64 << 53) as f64
}
