//! One episode's turn loop: replay what is stored, call for what is missing.
//!
//! The loop asks a [`UserSide`] for each user message. Today that is the task's
//! [`Schedule`] (one shard per turn); an agent episode's next user message will be an
//! environment's observation of the last reply, and will plug in here without the loop
//! knowing the difference.

use std::collections::HashMap;

use baton_data::Schedule;
use baton_eval::Evaluators;
use baton_models::{Accept, Model, defaults};
use baton_store::{AttemptCost, CallRow, OpenEpisode};
use baton_types::{Message, Phase, Role};

use crate::RunError;
use crate::ledger::{CallSite, RunContext};

/// Where an episode's system prompt and user messages come from.
pub(crate) trait UserSide: Sync {
    /// The system prompt.
    fn system(&self) -> &str;
    /// The user message of turn `turn` (1-based), given the conversation so far.
    fn user_message(&self, turn: usize, history: &[Message]) -> String;
}

/// A LiC schedule: the shards, one per turn, whatever the model said.
impl UserSide for Schedule {
    fn system(&self) -> &str {
        &self.system
    }

    fn user_message(&self, turn: usize, _history: &[Message]) -> String {
        self.user_turns[turn - 1].clone()
    }
}

/// A single-turn baseline: the system prompt and one user message holding the whole
/// instruction (LiC's `full` or `concat`).
pub(crate) struct SingleTurn {
    /// The family's system prompt.
    pub system: String,
    /// The one user message.
    pub prompt: String,
}

impl SingleTurn {
    /// The sha256 an episode records as its schedule hash: of the system prompt and
    /// the message, length-prefixed.
    pub fn sha256(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for part in [&self.system, &self.prompt] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        hex::encode(h.finalize())
    }
}

impl UserSide for SingleTurn {
    fn system(&self) -> &str {
        &self.system
    }

    fn user_message(&self, _turn: usize, _history: &[Message]) -> String {
        self.prompt.clone()
    }
}

/// How messages name a call: `turn 3`, or `answer extraction attempt 2`.
fn call_name(turn: u32, phase: Phase) -> String {
    match phase {
        Phase::Extraction => format!("answer extraction attempt {turn}"),
        Phase::Prefix | Phase::Handoff | Phase::Suffix => format!("turn {turn}"),
    }
}

/// What the loop shares with every episode: the run's ledger context and the
/// evaluators.
pub(crate) struct Shared {
    pub ctx: RunContext,
    pub evaluators: Evaluators,
}

/// The transcript an episode builds, with the calls stored for it so far.
pub(crate) struct Transcript<'a> {
    episode_id: i64,
    users: &'a dyn UserSide,
    seed: u64,
    messages: Vec<Message>,
    /// The last reply as the model wrote it (the transcript holds the placeholder when
    /// it was empty).
    last_reply: Option<String>,
    /// Text put before the next user turn (an interface's note or handoff message).
    pending: Option<String>,
    stored: HashMap<(u32, Phase), CallRow>,
    /// The unusable billed attempts earlier runs stored: those of a call made again
    /// count against its model's `unusable_retries`.
    attempts: Vec<AttemptCost>,
}

/// Why an episode stopped before its last turn.
pub(crate) struct Unfinished(pub String);

impl<'a> Transcript<'a> {
    /// The transcript of the episode `opened`, its stored calls to be replayed.
    pub fn new(users: &'a dyn UserSide, seed: u64, opened: OpenEpisode) -> Self {
        Transcript {
            episode_id: opened.row.id,
            users,
            seed,
            messages: vec![Message::system(users.system())],
            last_reply: None,
            pending: None,
            stored: opened
                .calls
                .into_iter()
                .map(|c| ((c.call.turn, c.call.phase), c))
                .collect(),
            attempts: opened.attempts,
        }
    }

    /// Append user turn `t` and an assistant reply taken from another episode's calls
    /// (a forked prefix).
    pub fn replay(&mut self, t: usize, reply: &str) {
        let user = self.user_turn(t);
        self.messages.push(Message::user(user));
        self.push_reply(reply.to_string());
    }

    /// Append a reply: as written, or [`defaults::EMPTY_REPLY_PLACEHOLDER`] when it has
    /// no text (an empty or length-cut reply), since APIs refuse an empty assistant turn
    /// and the next model should see that the turn was answered.
    fn push_reply(&mut self, reply: String) {
        let sent = if reply.trim().is_empty() {
            defaults::EMPTY_REPLY_PLACEHOLDER.to_string()
        } else {
            reply.clone()
        };
        self.messages.push(Message::assistant(sent));
        self.last_reply = Some(reply);
    }

    /// Put `text` and a blank line before the next user turn.
    pub fn prepend_to_next_turn(&mut self, text: String) {
        self.pending = Some(match self.pending.take() {
            Some(p) => format!("{p}\n\n{text}"),
            None => text,
        });
    }

    /// Forget every reply: keep the system prompt, and carry the user turns so far
    /// (joined by blank lines) into the next user turn.
    pub fn drop_replies(&mut self) {
        let users: Vec<String> = self
            .messages
            .drain(1..)
            .filter(|m| m.role == Role::User)
            .map(|m| m.content)
            .collect();
        if !users.is_empty() {
            self.prepend_to_next_turn(users.join("\n\n"));
        }
    }

    /// Start over from the system prompt with `text` before the next user turn.
    pub fn restart_with(&mut self, text: String) {
        self.messages.truncate(1);
        self.pending = None;
        self.prepend_to_next_turn(text);
    }

    /// The user message of turn `t`, after any pending interface text. The only place
    /// the loop asks for a user message.
    fn user_turn(&mut self, t: usize) -> String {
        let message = self.users.user_message(t, &self.messages);
        match self.pending.take() {
            Some(p) => format!("{p}\n\n{message}"),
            None => message,
        }
    }

    /// Answer user turns `turns` with `model`, replaying stored calls and committing new
    /// ones as they complete.
    pub async fn answer(
        &mut self,
        shared: &Shared,
        model: &Model,
        phase: Phase,
        turns: std::ops::RangeInclusive<usize>,
    ) -> Result<Result<(), Unfinished>, RunError> {
        for t in turns {
            let user = self.user_turn(t);
            self.messages.push(Message::user(user));
            let messages = self.messages.clone();
            match self
                .call(shared, model, messages, t as u32, phase, self.seed)
                .await?
            {
                Ok(reply) => self.push_reply(reply),
                Err(u) => return Ok(Err(u)),
            }
        }
        Ok(Ok(()))
    }

    /// One extra call at the switch (a summary request after turn `k`): the history so
    /// far plus `prompt`, billed to the handoff phase. The exchange does not stay in the
    /// transcript.
    pub async fn handoff_call(
        &mut self,
        shared: &Shared,
        model: &Model,
        k: usize,
        prompt: &str,
    ) -> Result<Result<String, Unfinished>, RunError> {
        let mut messages = self.messages.clone();
        messages.push(Message::user(prompt));
        self.call(shared, model, messages, k as u32, Phase::Handoff, self.seed)
            .await
    }

    /// Attempt `attempt` (1-based) of LiC's answer extraction: `prompt` as the one user
    /// message, stored as phase `extraction` with `turn` = the attempt (so a resume
    /// replays every stored attempt instead of paying again). Each attempt draws from its
    /// own seed (the episode's plus the attempt), which only the simulated models read.
    pub async fn extraction_call(
        &mut self,
        shared: &Shared,
        model: &Model,
        prompt: &str,
        attempt: u32,
    ) -> Result<Result<String, Unfinished>, RunError> {
        let messages = vec![Message::user(prompt)];
        let seed = self.seed.wrapping_add(u64::from(attempt));
        self.call(shared, model, messages, attempt, Phase::Extraction, seed)
            .await
    }

    /// The stored reply for (turn, phase), or a new call committed as it completes.
    async fn call(
        &mut self,
        shared: &Shared,
        model: &Model,
        messages: Vec<Message>,
        turn: u32,
        phase: Phase,
        seed: u64,
    ) -> Result<Result<String, Unfinished>, RunError> {
        if let Some(call) = self.stored.get(&(turn, phase)) {
            return Ok(Ok(call.call.response_text.clone()));
        }
        let site = CallSite {
            episode_id: self.episode_id,
            turn,
            phase,
            model,
        };
        let request = model.request(messages, Some(seed));
        let mut reservation = match shared.ctx.reserve(site, &request) {
            Ok(r) => r,
            Err(not_sent) => {
                return Ok(Err(Unfinished(format!(
                    "{} not sent: {not_sent}",
                    call_name(turn, phase)
                ))));
            }
        };
        let prior = self
            .attempts
            .iter()
            .filter(|a| a.turn == turn && a.phase == phase)
            .count();
        let prior = u32::try_from(prior).unwrap_or(u32::MAX);
        // the handoff call asks for a summary, which must be text
        let accept = match phase {
            Phase::Handoff => Accept::SUMMARY,
            _ => Accept::Any,
        };
        let generation = model.generate_accepting(request, prior, accept).await;
        reservation.record_unusable(&generation.unusable).await?;
        let completion = match generation.result {
            Ok(c) => c,
            Err(e) => {
                shared.ctx.block_dead_end(model, &e);
                return Ok(Err(Unfinished(shared.ctx.redact(&format!(
                    "{} ({}): {e}",
                    call_name(turn, phase),
                    phase.as_str()
                )))));
            }
        };
        let row = reservation.call_row(&completion);
        let text = row.response_text.clone();
        shared.ctx.store.record_call(row).await?;
        if let Err(why) = reservation.recorded(&completion) {
            return Ok(Err(Unfinished(format!(
                "{} ({}): {why}",
                call_name(turn, phase),
                phase.as_str()
            ))));
        }
        Ok(Ok(text))
    }

    /// The last assistant reply, as the model wrote it.
    pub fn final_response(&self) -> Option<&str> {
        self.messages
            .last()
            .filter(|m| m.role == Role::Assistant)
            .and(self.last_reply.as_deref())
    }
}
