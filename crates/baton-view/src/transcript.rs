//! One episode's transcript: the calls in the order they were made (a forked prefix read
//! from the episode it was forked from), what each call sent that the previous one had
//! not, the reply, the switch, the agent's commands, and the final answer with its verdict.

use baton_store::{CallRow, Reader};
use baton_types::{Cost, Phase, Usage, Verdict};
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::ViewError;

/// The longest text shown whole, in characters; a longer one is cut and says how much
/// was left out.
pub const TEXT_CAP: usize = 100_000;

/// What the list shows of an episode and what its transcript needs to be found.
#[derive(Debug, Clone)]
pub(crate) struct EpisodeHead {
    pub id: i64,
    pub task: String,
    pub group: String,
    pub cell: String,
    pub cell_json: Value,
    pub replicate: u32,
    pub status: String,
    pub reason: Option<String>,
    pub k: Option<u32>,
    pub forked_from: Option<i64>,
    pub final_response: Option<String>,
    pub extracted: Option<String>,
    pub verdict: Option<Verdict>,
    pub cost_paid: Cost,
    pub cost_attributed: Cost,
    /// Agent episodes only: how the agent stopped.
    pub exit: Option<String>,
    /// Agent handoff episodes only: the switch call `s`, and whether the sender was still
    /// working then (else the episode is its anchor's, and no switch happened).
    pub switch: Option<(u32, bool)>,
}

impl EpisodeHead {
    /// The verdict class the list filters on: `correct`, `wrong`, `no answer`, `scored`
    /// (a graded score with no right or wrong, BLEU), or the status when not scored.
    pub fn verdict_class(&self) -> &'static str {
        match (&self.verdict, self.status.as_str()) {
            (Some(v), "scored") if v.no_answer => "no answer",
            (Some(v), "scored") => match v.is_correct {
                Some(true) => "correct",
                Some(false) => "wrong",
                None => "scored",
            },
            (_, "incomplete") => "incomplete",
            (_, "errored") => "errored",
            (_, "unscored") => "unscored",
            _ => "other",
        }
    }

    /// The row the list shows.
    pub fn list_row(&self, chunk: usize) -> Value {
        json!({
            "id": self.id,
            "task": self.task,
            "group": self.group,
            "cell": self.cell,
            "rep": self.replicate,
            "status": self.status,
            "verdict": self.verdict_class(),
            "score": self.verdict.as_ref().map(|v| v.score),
            "cost": self.cost_paid.usd(),
            "chunk": chunk,
        })
    }
}

/// One thing that happened in an episode, in order.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Event {
    /// A paid call.
    Call(CallView),
    /// The switch was due at call `at`, but the sender had finished before it.
    NoSwitch { at: u32, from: String, to: String },
    /// The conversation changed hands.
    Switch {
        after: u32,
        from: String,
        to: String,
        interface: String,
    },
    /// A command the agent ran, with what it saw.
    Step {
        call: u32,
        command: String,
        status: Value,
        return_code: Option<i32>,
        duration_ms: u64,
        observation: Option<String>,
    },
}

#[derive(Debug, Serialize)]
struct CallView {
    phase: &'static str,
    turn: u32,
    model: String,
    served: String,
    /// From the episode this one was forked from: paid once, there.
    forked: bool,
    /// The messages of the request the previous call had not sent or received.
    sent: Vec<Value>,
    /// How many messages of the request came before them.
    kept: usize,
    reply: String,
    tool_calls: Value,
    usage: UsageView,
    cost: f64,
    unpriced: Option<String>,
    latency_ms: u64,
    attempts: u32,
    finish: Option<String>,
}

#[derive(Debug, Serialize)]
struct UsageView {
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
    reasoning: u64,
}

impl From<&Usage> for UsageView {
    fn from(u: &Usage) -> Self {
        UsageView {
            input: u.uncached_in,
            cache_read: u.cache_read,
            cache_write: u.cache_write_5m + u.cache_write_1h,
            output: u.output,
            reasoning: u.reasoning,
        }
    }
}

/// The transcript of `head`, as the viewer's JSON.
pub(crate) fn transcript(
    reader: &Reader,
    head: &EpisodeHead,
    agent: bool,
) -> Result<Value, ViewError> {
    let mut calls: Vec<(CallRow, bool)> = Vec::new();
    if let (Some(parent), Some(k)) = (head.forked_from, head.k) {
        // The forked prefix: the parent's first K turns (chat) or calls (agent).
        let limit = if agent { k } else { k + 1 };
        calls.extend(
            reader
                .calls(parent)?
                .into_iter()
                .filter(|c| c.call.phase == Phase::Prefix && c.call.turn < limit)
                .map(|c| (c, true)),
        );
    }
    calls.extend(reader.calls(head.id)?.into_iter().map(|c| (c, false)));

    let steps = if agent {
        let mut steps = Vec::new();
        if let (Some(parent), Some(k)) = (head.forked_from, head.k) {
            steps.extend(
                reader
                    .agent_progress(parent)?
                    .steps
                    .into_iter()
                    .filter(|s| s.step.call_index < k),
            );
        }
        steps.extend(reader.agent_progress(head.id)?.steps);
        steps
    } else {
        Vec::new()
    };

    let switch = switch_of(&head.cell_json, head.k);
    let mut events = Vec::new();
    let mut system = None;
    let mut previous: Vec<Value> = Vec::new();
    let mut switched = false;
    let mut step = steps.into_iter().peekable();
    for (row, forked) in calls {
        let c = &row.call;
        if let Some((from, to, interface)) = &switch
            && !switched
            && matches!(c.phase, Phase::Handoff | Phase::Suffix)
        {
            switched = true;
            events.push(Event::Switch {
                after: head.k.unwrap_or(0),
                from: from.clone(),
                to: to.clone(),
                interface: interface.clone(),
            });
        }
        let request: Value =
            serde_json::from_str(&c.request_json).map_err(|source| ViewError::Json {
                episode: c.episode_id,
                what: format!("the request of turn {} ({})", c.turn, c.phase.as_str()),
                source,
            })?;
        let mut messages: Vec<Value> = request
            .get("messages")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if system.is_none()
            && messages.first().and_then(|m| m.get("role")) == Some(&json!("system"))
        {
            system = messages.first().and_then(|m| m.get("content")).cloned();
        }
        let mut kept = common_prefix(&previous, &messages);
        // the previous reply, as the request repeats it, is shown once: as the reply
        if kept > 0
            && kept + 1 == previous.len()
            && messages.get(kept).and_then(|m| m.get("role")) == Some(&json!("assistant"))
        {
            kept += 1;
        }
        let sent = messages[kept..]
            .iter()
            .filter(|m| kept > 0 || m.get("role") != Some(&json!("system")))
            // an agent's observations are shown under the command that made them
            .filter(|m| !agent || m.get("role") != Some(&json!("tool")))
            .map(capped_message)
            .collect();
        let raw_tool_calls = tool_calls_of(c.raw_response.as_deref());
        events.push(Event::Call(CallView {
            phase: c.phase.as_str(),
            turn: c.turn,
            model: c.model.clone(),
            served: c.model_served.clone(),
            forked,
            sent,
            kept,
            reply: cap(&c.response_text),
            tool_calls: raw_tool_calls,
            usage: (&c.usage).into(),
            cost: c.cost.usd(),
            unpriced: c.unpriced.clone(),
            latency_ms: c.latency_ms,
            attempts: c.attempts,
            finish: c.finish_reason.clone(),
        }));
        // What the next request would repeat: this one and the reply to it.
        messages.push(json!({"role": "assistant", "content": c.response_text}));
        previous = messages;
        if agent && c.phase != Phase::Handoff {
            while let Some(s) = step.next_if(|s| s.step.call_index <= c.turn) {
                events.push(step_event(s.step));
            }
        }
    }
    events.extend(step.map(|s| step_event(s.step)));
    if let (Some((at, false)), Some((from, to, _))) = (head.switch, &switch) {
        events.push(Event::NoSwitch {
            at,
            from: from.clone(),
            to: to.clone(),
        });
    }

    let v = head.verdict.as_ref();
    Ok(json!({
        "id": head.id,
        "task": head.task,
        "group": head.group,
        "cell": head.cell,
        "replicate": head.replicate,
        "status": head.status,
        "reason": head.reason,
        "exit": head.exit,
        "k": head.k,
        "forked_from": head.forked_from,
        "system": system.map(|s| cap(s.as_str().unwrap_or_default())),
        "events": events,
        "final": {
            "response": head.final_response.as_deref().map(cap),
            "extracted": head.extracted.as_deref().map(cap),
            "rule": v.and_then(|v| v.rule.clone()),
            "no_answer": v.is_some_and(|v| v.no_answer),
            "score": v.map(|v| v.score),
            "is_correct": v.and_then(|v| v.is_correct),
            "error": v.and_then(|v| v.error.clone()),
            "details": v.map(|v| capped_value(&v.details)),
            "verdict": head.verdict_class(),
        },
        "cost_paid": head.cost_paid.usd(),
        "cost_attributed": head.cost_attributed.usd(),
    }))
}

/// `(sender, receiver, interface)` of a handoff cell (chat or agent), from its JSON
/// (`{"kind": "handoff" | "agent_handoff", "sender": …, "receiver": …, "interface": …}`).
fn switch_of(cell: &Value, k: Option<u32>) -> Option<(String, String, String)> {
    k?;
    let field = |name: &str| cell.get(name).and_then(Value::as_str).map(str::to_owned);
    Some((field("sender")?, field("receiver")?, field("interface")?))
}

fn common_prefix(a: &[Value], b: &[Value]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn step_event(s: baton_store::NewAgentStep) -> Event {
    Event::Step {
        call: s.call_index,
        command: cap(&s.command),
        status: serde_json::from_str(&s.status_json).unwrap_or(Value::String(s.status_json)),
        return_code: s.return_code,
        duration_ms: s.duration_ms,
        observation: s.observation.as_deref().map(|o| cap(&observation_text(o))),
    }
}

/// What the agent saw of a command: the stored observation is the message it was sent
/// (a JSON object whose `content` is the text); anything else is shown as it is.
fn observation_text(stored: &str) -> String {
    serde_json::from_str::<Value>(stored)
        .ok()
        .and_then(|v| v.get("content").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| stored.to_owned())
}

/// The tool calls of a raw reply, where its format says them (OpenAI's
/// `choices[0].message.tool_calls`, Anthropic's `tool_use` blocks).
fn tool_calls_of(raw: Option<&str>) -> Value {
    let Some(raw) = raw.and_then(|r| serde_json::from_str::<Value>(r).ok()) else {
        return Value::Null;
    };
    if let Some(calls) = raw.pointer("/choices/0/message/tool_calls") {
        return capped_value(calls);
    }
    if let Some(blocks) = raw.get("content").and_then(Value::as_array) {
        let uses: Vec<Value> = blocks
            .iter()
            .filter(|b| b.get("type") == Some(&json!("tool_use")))
            .map(capped_value)
            .collect();
        if !uses.is_empty() {
            return Value::Array(uses);
        }
    }
    Value::Null
}

fn capped_message(m: &Value) -> Value {
    capped_value(m)
}

/// `v` with every string cut at [`TEXT_CAP`].
fn capped_value(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(cap(s)),
        Value::Array(a) => Value::Array(a.iter().map(capped_value).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), capped_value(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `text`, cut at [`TEXT_CAP`] characters with how much was left out.
pub(crate) fn cap(text: &str) -> String {
    match text.char_indices().nth(TEXT_CAP) {
        None => text.to_owned(),
        Some((at, _)) => {
            let rest = text[at..].chars().count();
            format!(
                "{}\n[… {rest} more characters not shown; the store holds them whole]",
                &text[..at]
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_and_says_how_much_is_left_out() {
        let text = "é".repeat(TEXT_CAP + 7);
        let shown = cap(&text);
        assert!(shown.starts_with(&"é".repeat(TEXT_CAP)));
        assert!(shown.ends_with("[… 7 more characters not shown; the store holds them whole]"));
        assert_eq!(cap("short"), "short");
    }

    #[test]
    fn the_switch_is_read_from_either_studys_cell() {
        let chat = json!({"kind": "handoff", "sender": "lc", "receiver": "hc", "switch": "early", "interface": "raw"});
        assert_eq!(
            switch_of(&chat, Some(1)),
            Some(("lc".into(), "hc".into(), "raw".into()))
        );
        let agent = json!({"kind": "agent_handoff", "sender": "a", "receiver": "b", "p": 25, "interface": "compact_pre", "independent": false});
        assert_eq!(
            switch_of(&agent, Some(3)),
            Some(("a".into(), "b".into(), "compact_pre".into()))
        );
        assert_eq!(
            switch_of(&json!({"kind": "single", "model": "lc"}), None),
            None
        );
    }

    #[test]
    fn an_observation_is_shown_as_the_text_the_agent_saw() {
        let stored =
            r#"{"role":"tool","content":"<returncode>0</returncode>\nok","tool_call_id":"c1"}"#;
        assert_eq!(observation_text(stored), "<returncode>0</returncode>\nok");
        assert_eq!(observation_text("plain text"), "plain text");
    }

    #[test]
    fn tool_calls_are_read_from_both_reply_formats() {
        let openai = r#"{"choices":[{"message":{"tool_calls":[{"id":"c1","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}}]}"#;
        assert_eq!(tool_calls_of(Some(openai))[0]["id"], "c1");
        let anthropic = r#"{"content":[{"type":"text","text":"x"},{"type":"tool_use","id":"t1","name":"bash","input":{"command":"ls"}}]}"#;
        assert_eq!(tool_calls_of(Some(anthropic))[0]["id"], "t1");
        assert_eq!(tool_calls_of(Some("not json")), Value::Null);
    }
}
