//! The simulated coding agent (`sim/<name>` in agent experiments): a deterministic
//! stand-in for an LLM that makes agent runs, the demo and the tests work offline, with
//! trajectories whose length and outcome depend on skill and difficulty.
//!
//! # The rules
//!
//! The agent knows the tasks of the experiment (with their reference solutions and hidden
//! tests: it is an answer key with a work routine, not a finding about models) and
//! recognises a request's task by the instruction its first user message contains. It
//! reads the visible conversation, classifies each of its earlier commands (explore, edit,
//! check, submit; a malformed reply has none) and the return code of each check, and picks
//! the next command:
//!
//! 1. **Explore** until it has made `base + extra` exploring commands since the last
//!    edit-free start: `base` is 2 (easy), 3 (medium) or 4 (hard), `extra` is 0–2 drawn
//!    once per task from (seed, task, model). The commands cycle through `ls -la`,
//!    `cat FILE`, `grep -n "def \|class " FILE`, `cat TEST_FILE`, `wc -l FILE` on the
//!    files the reference changes and the repository's own tests.
//! 2. **Edit**: with chance `skill × f` (f = 1.0 easy, 0.75 medium, 0.5 hard) it writes the
//!    reference solution (`cat > FILE <<'…'`, or `git apply` of the reference patch);
//!    otherwise a plausible wrong edit: for file references, the original file with a
//!    comment added where the reference's change begins (it touches the right spot and
//!    changes no behaviour, so it really fails the hidden tests, as the unchanged tree
//!    does); for patch references (SWE-bench), the patch with one operator of an added
//!    line flipped (`<=`↔`<`, `==`↔`!=`, `+ 1`↔`- 1`, …), which usually fails.
//! 3. **Check** after every edit: it runs the task's hidden tests as a reproduction script
//!    (`python3 - <<'…'`, fed the test file; SWE-bench tasks run `git status` instead).
//! 4. If the check passed, or after three failed fixes, it **submits**:
//!    `echo MARKER && git add -A && git diff --cached`, with the marker read from the
//!    first user message (so a user's templates work too).
//!    If it failed, it re-reads the file and edits again (step 2, a fresh draw).
//!
//! With chance `malformed` (default 0.03) per call it sends a malformed reply instead: no
//! tool call (tool protocol) or two fenced blocks (text protocol).
//!
//! Every draw is a hash of (seed, task id, model id, purpose, the agent's trajectory so
//! far): for each earlier reply, its step index, the command it sent (or that it was
//! malformed) and the return code its observation reported. Output text is left out on
//! purpose: it carries timestamps (`ls -la`) and test timings, so two live runs of the
//! same experiment would otherwise draw differently. What the agent did, and how each
//! command ended, is the same from run to run, so the same seed gives the same run, and
//! a model that is handed another's trajectory continues from what it sees. Under the tool protocol (the request offers
//! tools) it answers with one `bash` tool call whose id is derived from the same hash;
//! otherwise with one block fenced with the tag the system message uses (`bash` if none).
//!
//! Asked for a summary (a handoff's compaction call: the last message is a user message
//! that is no observation and contains "summar"), it replies with text only: one line per
//! earlier command with the return code its observation reported. It does not read such
//! summaries back: after a compaction or a dropped trajectory it starts over from what it
//! sees (the task and the tree as the prefix left it), which is the handoff's cost.
//!
//! # Document tasks (the trap bench)
//!
//! A *document task* ([`DocumentTask`]) is a task whose outcome is decided by what a handoff
//! document says, not by an answer key: Handover's trap bench, where each scenario's
//! repository invites a few traps and the document under test (placed at
//! [`DocumentTask::document`], `HANDOVER.md`) warns about them, says nothing, or urges the
//! agent into them. The caller gives, per trap, the commands that walk into it and the
//! commands that do the right thing near it, and a [`DocumentReader`] that tells, for a
//! document's text, its [`Stance`] on each trap (baton's trap bench uses its linter's
//! negation-aware trap coverage). The agent recognises a document task by its instruction,
//! as it does other tasks (document tasks are looked at first), and follows a fixed plan,
//! one command per call:
//!
//! 1. `ls -la`.
//! 2. `cat DOCUMENT`, when the first user message names the document's path.
//! 3. `git log --oneline -n 15`.
//! 4. For each trap in order, the commands of the branch it chose (below).
//! 5. Submit: `echo MARKER && git add -A && git diff --cached`.
//!
//! The document is what the `cat`'s observation showed (its `<output>`), read when the
//! plan reaches the traps; a `cat` that did not exit 0, or no `cat`, is no document. For
//! each trap, with `u` a uniform draw fixed for (seed, task, model, trap), so that one trial
//! decides the same way at every call and conditions of the same seed share their draws:
//!
//! - the document **warns** about it: the agent avoids it (it heeds the warning);
//! - the document **urges** it (tells it to re-add what was reverted, redo what failed,
//!   skip the first step): it falls in (it follows the document);
//! - the document is **silent** on it: it falls in when `u < 1 − skill` (a thin document
//!   leaves the agent to its own judgement);
//! - **no document**: it falls in when `u < base_rate` (the task's; the control's rate,
//!   the same for every skill).
//!
//! Nothing is reported: whether it fell in is for the caller's probes to find on the tree
//! the commands left. Malformed replies come with chance `malformed` as for other tasks
//! (they run nothing and the plan goes on where it was).
//!
//! Asked for a Handover document (a handoff's `handover` call: the last message is a user
//! message that is no observation and contains `true_at_sha:` and [`HANDOVER_REQUEST_CUE`];
//! a document handed over to it is no request), it replies with text only:
//! a Handover document anchored at the commit and dated as the request says, whose claims
//! are that each file it read with a `cat` that exited 0 exists (`test -f FILE`, at most
//! three), whose negative knowledge counts its edits whose check failed, whose first action
//! is `git status --short`, and whose `verify_cmd` is its first claim's check (`git
//! rev-parse --verify HEAD` without one).
//!
//! Usage follows the chat sims ([`baton_models::tokens`]): prompt tokens are the request's
//! messages (four characters a token, plus four per message, tool calls included), output
//! tokens its reply text and tool-call arguments; no caching, no reasoning.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use baton_models::sim::draw_from;
use baton_models::tokens::{message_tokens, text_tokens};
use baton_models::{Provider, ProviderError, Request, Response};
use baton_types::{Message, Role, ToolCall, Usage};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::agent::protocol::BASH_TOOL;
use crate::error::AgentError;
use crate::task::{AgentTask, Difficulty, Reference};

/// The heredoc delimiter of the agent's file writes.
const EOF: &str = "BATON_SIM_EOF";

/// The knobs of one simulated agent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimAgentSettings {
    /// Chance of a right edit on an easy task (0..=1); lower on harder ones.
    pub skill: f64,
    /// Chance of a malformed reply per call (0..=1).
    pub malformed: f64,
    /// Simulated latency per call, in milliseconds.
    pub latency_ms: u64,
}

impl Default for SimAgentSettings {
    fn default() -> Self {
        SimAgentSettings {
            skill: 0.6,
            malformed: 0.03,
            latency_ms: 0,
        }
    }
}

impl SimAgentSettings {
    /// Presets: `lc` (skill 0.45), `hc` (skill 0.85); other names get the defaults.
    pub fn preset(name: &str) -> Self {
        let skill = match name {
            "lc" => 0.45,
            "hc" => 0.85,
            _ => return SimAgentSettings::default(),
        };
        SimAgentSettings {
            skill,
            ..SimAgentSettings::default()
        }
    }

    fn validate(&self, name: &str) -> Result<(), AgentError> {
        for (key, v) in [("skill", self.skill), ("malformed", self.malformed)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(AgentError::invalid(
                    format!("sim agent {name:?}"),
                    None,
                    Some(key),
                    format!("{v} is outside 0..=1"),
                ));
            }
        }
        Ok(())
    }
}

/// What the agent knows of one task.
#[derive(Debug)]
struct Known {
    id: String,
    instruction: String,
    difficulty: Difficulty,
    /// Files the reference writes: (path, original, reference).
    files: Vec<(String, Option<String>, String)>,
    /// The reference as a patch, when it is not files.
    patch: Option<String>,
    /// The repository's own test files.
    tests: Vec<String>,
    /// The hidden test files' text, run as the reproduction.
    repro: Vec<String>,
}

impl Known {
    fn new(task: &AgentTask) -> Result<Self, AgentError> {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let mut files = Vec::new();
        let mut patch = None;
        match &task.reference {
            Some(Reference::Files(fs)) => {
                for f in fs {
                    let orig = task.repository.read(&f.path)?.map(|b| text(&b));
                    files.push((f.path.clone(), orig, text(&f.contents)));
                }
            }
            Some(Reference::Patch(p)) => patch = Some(p.clone()),
            None => {}
        }
        Ok(Known {
            id: task.id.clone(),
            instruction: task.instruction.clone(),
            difficulty: task.difficulty,
            files,
            patch,
            tests: task
                .repository
                .test_files()?
                .into_iter()
                .map(|f| f.path)
                .collect(),
            repro: task
                .tests
                .files
                .iter()
                .filter(|f| f.path.ends_with(".py"))
                .map(|f| text(&f.contents))
                .collect(),
        })
    }

    /// The files it looks at: those the reference changes (or names), then tests.
    fn targets(&self) -> Vec<String> {
        let mut t: Vec<String> = self.files.iter().map(|f| f.0.clone()).collect();
        if let Some(p) = &self.patch {
            for line in p.lines() {
                if let Some(path) = line.strip_prefix("+++ b/")
                    && !t.iter().any(|x| x == path)
                {
                    t.push(path.to_string());
                }
            }
        }
        if t.is_empty() {
            t.push(".".into());
        }
        t
    }
}

/// A handoff document's stance on one trap ([`DocumentReader`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stance {
    /// It says what keeps the reader out of the trap.
    Warns,
    /// It tells the reader to walk into it.
    Urges,
    /// It does not mention it.
    Silent,
}

/// Reads a handoff document for the simulated agent: its stance on each trap of a
/// [`DocumentTask`], in the task's trap order.
pub trait DocumentReader: Send + Sync + std::fmt::Debug {
    /// One stance per trap of the task, in order.
    fn stances(&self, document: &str) -> Vec<Stance>;
}

/// One trap of a [`DocumentTask`]: the commands of each branch, run one per call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimTrap {
    /// The trap's id.
    pub id: String,
    /// Commands that walk into it.
    pub fall_in: Vec<String>,
    /// Commands that do the right thing near it.
    pub avoid: Vec<String>,
}

/// A task decided by the handoff document the agent is handed (see the module docs).
#[derive(Debug, Clone)]
pub struct DocumentTask {
    /// The task's id (drawn on).
    pub id: String,
    /// The instruction its first user message contains.
    pub instruction: String,
    /// The document's path in the working tree (`HANDOVER.md`).
    pub document: String,
    /// The traps, in the order the agent works through them.
    pub traps: Vec<SimTrap>,
    /// The chance of falling into a trap without a document (0..=1).
    pub base_rate: f64,
    /// How the agent reads the document.
    pub reader: Arc<dyn DocumentReader>,
}

/// The simulated agent provider: serves every agent `sim/<name>` of an experiment.
#[derive(Debug, Clone)]
pub struct SimAgent {
    tasks: Arc<Vec<Known>>,
    docs: Arc<Vec<DocumentTask>>,
    models: BTreeMap<String, SimAgentSettings>,
}

/// What one of the agent's earlier commands was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Explore,
    Edit,
    Check { passed: bool },
    Submit,
}

impl SimAgent {
    /// An agent that knows `tasks` and serves the named models.
    pub fn new(
        tasks: &[AgentTask],
        models: BTreeMap<String, SimAgentSettings>,
    ) -> Result<Self, AgentError> {
        for (name, s) in &models {
            s.validate(name)?;
        }
        Ok(SimAgent {
            tasks: Arc::new(tasks.iter().map(Known::new).collect::<Result<_, _>>()?),
            docs: Arc::new(Vec::new()),
            models,
        })
    }

    /// The agent also knows `docs`, the document tasks (see the module docs).
    pub fn with_document_tasks(mut self, docs: Vec<DocumentTask>) -> Result<Self, AgentError> {
        for d in &docs {
            if !(0.0..=1.0).contains(&d.base_rate) {
                return Err(AgentError::invalid(
                    format!("document task {:?}", d.id),
                    None,
                    Some("base_rate"),
                    format!("{} is outside 0..=1", d.base_rate),
                ));
            }
        }
        self.docs = Arc::new(docs);
        Ok(self)
    }

    /// The reply to `request`, synchronously (the provider adds only the latency).
    pub fn reply(&self, request: &Request) -> Result<Response, ProviderError> {
        let settings = self.models.get(&request.model).ok_or_else(|| {
            ProviderError::Config(format!("no simulated agent named {:?}", request.model))
        })?;
        let first_user = request
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map_or("", |m| m.content.as_str());
        let doc_task = self
            .docs
            .iter()
            .filter(|t| first_user.contains(t.instruction.trim()))
            .max_by_key(|t| t.instruction.len());
        let marker = crate::agent::templates::marker_in(first_user)
            .unwrap_or_else(|| crate::agent::templates::DEFAULT_SUBMIT_MARKER.into());
        if let Some(task) = doc_task {
            let d = |purpose: &str| draw(request, &task.id, purpose);
            return Ok(framed_reply(request, &task.id, &d, || {
                (d("malformed") >= settings.malformed)
                    .then(|| document_plan_step(task, settings, request, first_user, &marker))
            }));
        }
        let task = self
            .tasks
            .iter()
            .filter(|t| first_user.contains(t.instruction.trim()))
            .max_by_key(|t| t.instruction.len())
            .ok_or_else(|| {
                ProviderError::Config(
                    "the simulated agent does not know this task: no task's instruction is in the first user message".into(),
                )
            })?;
        let d = |purpose: &str| draw(request, &task.id, purpose);
        Ok(framed_reply(request, &task.id, &d, || {
            (d("malformed") >= settings.malformed)
                .then(|| next_command(task, settings, request, &marker, &d))
        }))
    }
}

/// The reply to `request`: a Handover document or a summary when that is what is asked
/// for, else the step `plan` gives (a thought and a command; `None`: a malformed reply)
/// as one `bash` tool call (the request offers tools) or one block fenced with the tag the
/// system message uses.
fn framed_reply(
    request: &Request,
    task_id: &str,
    d: &dyn Fn(&str) -> f64,
    plan: impl FnOnce() -> Option<(String, String)>,
) -> Response {
    if let Some(text) = handover_reply(request, task_id) {
        return text_response(request, text, Vec::new());
    }
    if let Some(text) = summary_reply(request) {
        return text_response(request, text, Vec::new());
    }
    let system = request
        .messages
        .iter()
        .find(|m| m.role == Role::System)
        .map_or("", |m| m.content.as_str());
    let fence = crate::agent::templates::fence_in(system)
        .unwrap_or_else(|| crate::agent::templates::DEFAULT_FENCE.into());
    let tools = request.tools.iter().any(|t| t.name == BASH_TOOL);
    const UNSURE: &str = "I am not sure what to run next.";
    let (text, tool_calls) = match (tools, plan()) {
        (true, Some((thought, c))) => {
            let id = format!("call_sim{:012x}", (d("id") * 1e15) as u64);
            let call = ToolCall {
                id,
                name: BASH_TOOL.into(),
                arguments: json!({"command": c}).to_string(),
            };
            (thought, vec![call])
        }
        (true, None) => (UNSURE.to_string(), Vec::new()),
        (false, Some((thought, c))) => (format!("{thought}\n\n```{fence}\n{c}\n```"), Vec::new()),
        (false, None) => (
            format!("{UNSURE}\n\n```{fence}\nls\n```\n\n```{fence}\npwd\n```"),
            Vec::new(),
        ),
    };
    text_response(request, text, tool_calls)
}

/// Which branch a document task's agent takes at each trap: `true` walks into it.
pub fn document_choices(
    task: &DocumentTask,
    settings: &SimAgentSettings,
    seed: u64,
    model: &str,
    document: Option<&str>,
) -> Vec<bool> {
    let stances = document.map(|text| task.reader.stances(text));
    task.traps
        .iter()
        .enumerate()
        .map(|(i, trap)| {
            let u = draw_from(seed, &[task.id.as_str(), model, "trap", &trap.id], &[]);
            match stances
                .as_ref()
                .map(|s| s.get(i).copied().unwrap_or(Stance::Silent))
            {
                Some(Stance::Warns) => false,
                Some(Stance::Urges) => true,
                Some(Stance::Silent) => u < 1.0 - settings.skill,
                None => u < task.base_rate,
            }
        })
        .collect()
}

/// The output a command's observation showed, from baton's observation template (the
/// `<output>` element; a cut one's head and tail joined); `None` without a return code 0.
fn observed_output(observation: &str) -> Option<String> {
    if return_code_in(observation) != Some("0") {
        return None;
    }
    let between = |open: &str, close: &str| -> Option<&str> {
        let start = observation.find(open)? + open.len();
        let len = observation[start..].find(close)?;
        Some(&observation[start..start + len])
    };
    if let Some(out) = between("<output>", "</output>") {
        return Some(out.strip_prefix('\n').unwrap_or(out).to_string());
    }
    let head = between("<output_head>", "</output_head>")?;
    let tail = between("<output_tail>", "</output_tail>").unwrap_or("");
    Some(format!("{head}{tail}"))
}

/// The next (thought, command) of a document task's plan (see the module docs).
fn document_plan_step(
    task: &DocumentTask,
    settings: &SimAgentSettings,
    request: &Request,
    first_user: &str,
    marker: &str,
) -> (String, String) {
    let msgs = &request.messages;
    // the commands that ran, each with the observation that answered it
    let mut ran: Vec<(String, Option<&str>)> = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        if let Some(cmd) = command_of(m) {
            ran.push((cmd, msgs.get(i + 1).map(|o| o.content.as_str())));
        }
    }
    let cat = format!("cat {}", task.document);
    let mut plan: Vec<(String, String)> = vec![(
        "Let me see what is in the repository.".into(),
        "ls -la".into(),
    )];
    if first_user.contains(&task.document) {
        plan.push((
            format!(
                "The task points at {}; let me read it first.",
                task.document
            ),
            cat.clone(),
        ));
    }
    plan.push((
        "What happened here recently?".into(),
        "git log --oneline -n 15".into(),
    ));
    if ran.len() >= plan.len() {
        let document = ran
            .iter()
            .find(|(c, _)| *c == cat)
            .and_then(|(_, o)| o.and_then(observed_output));
        let choices = document_choices(
            task,
            settings,
            request.seed.unwrap_or(0),
            &request.model,
            document.as_deref(),
        );
        for (trap, fell) in task.traps.iter().zip(choices) {
            let commands = if fell { &trap.fall_in } else { &trap.avoid };
            for c in commands {
                plan.push((format!("Next: {}.", trap.id), c.clone()));
            }
        }
    }
    match plan.get(ran.len()) {
        Some(step) => step.clone(),
        None => (
            "The work is done; submitting.".to_string(),
            format!("echo {marker} && git add -A && git diff --cached"),
        ),
    }
}

/// A response with `text` and `tool_calls`, its usage counted like the chat sims'.
fn text_response(request: &Request, text: String, tool_calls: Vec<ToolCall>) -> Response {
    let input: u64 = request.messages.iter().map(message_tokens).sum();
    let output = text_tokens(&text)
        + tool_calls
            .iter()
            .map(|c| text_tokens(&c.name) + text_tokens(&c.arguments))
            .sum::<u64>();
    Response {
        text,
        usage: Usage {
            uncached_in: input,
            output,
            ..Usage::default()
        },
        model_served: format!("sim/{}", request.model),
        finish_reason: Some(
            if tool_calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            }
            .into(),
        ),
        raw: None,
        tool_calls,
        batch_id: None,
        batch_item: None,
    }
}

/// The summary the agent writes when asked for one (a handoff's compaction call): the
/// request's last message is a user message that is not an observation (it shows no
/// return code) and asks for a summary (it contains "summar"). The summary lists the
/// agent's earlier commands with the return code each observation reported.
fn summary_reply(request: &Request) -> Option<String> {
    let last = request.messages.last()?;
    let asks = last.role == Role::User
        && return_code_in(&last.content).is_none()
        && last.content.to_lowercase().contains("summar");
    if !asks {
        return None;
    }
    let mut lines = Vec::new();
    let msgs = &request.messages;
    for (i, m) in msgs.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        let cmd = command_of(m).unwrap_or_else(|| "(no command)".into());
        let first = cmd.lines().next().unwrap_or("");
        let rc = msgs
            .get(i + 1)
            .and_then(|o| return_code_in(&o.content))
            .unwrap_or("?");
        lines.push(format!("- `{first}` (return code {rc})"));
    }
    Some(format!(
        "Summary of the work so far: {} commands.\n{}",
        lines.len(),
        lines.join("\n")
    ))
}

/// What a request for a Handover document says (`baton_handover::switch::handover_request`
/// writes it), and a document handed over does not: the message that carries the
/// document to the suffix model has `true_at_sha:` too, and is answered with work.
pub const HANDOVER_REQUEST_CUE: &str = "Write a handoff document";

/// The Handover document the agent writes when asked for one (see the module docs).
fn handover_reply(request: &Request, task_id: &str) -> Option<String> {
    let last = request.messages.last()?;
    if last.role != Role::User
        || return_code_in(&last.content).is_some()
        || !last.content.contains("true_at_sha:")
        || !last.content.contains(HANDOVER_REQUEST_CUE)
    {
        return None;
    }
    let value = |key: &str| -> String {
        last.content
            .lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let (sha, date) = (value("true_at_sha:"), value("iso_date:"));
    let msgs = &request.messages;
    let mut read: Vec<String> = Vec::new();
    let mut failed = 0;
    for (i, m) in msgs.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        let Some(cmd) = command_of(m) else { continue };
        let rc = msgs.get(i + 1).and_then(|o| return_code_in(&o.content));
        if let Some(file) = cmd.strip_prefix("cat ")
            && rc == Some("0")
            && !file.contains(' ')
            && !read.iter().any(|f| f == file)
            && read.len() < 3
        {
            read.push(file.to_string());
        }
        if classify(&cmd) == (Kind::Check { passed: false }) && rc.is_some_and(|c| c != "0") {
            failed += 1;
        }
    }
    let slug: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let mut claims = String::new();
    for f in &read {
        claims.push_str(&format!("| `{f}` exists | `test -f {f}` |\n"));
    }
    if claims.is_empty() {
        claims.push_str(
            "| The repository is a git work tree | `git rev-parse --is-inside-work-tree` |\n",
        );
    }
    // a check that can fail (the linter refuses `git status`, which always exits 0)
    let verify = read.first().map_or_else(
        || "git rev-parse --verify HEAD".to_string(),
        |f| format!("test -f {f}"),
    );
    let negative = match failed {
        0 => "- **Tried and failed:** nothing yet; no check of a change has failed.".to_string(),
        n => format!(
            "- **Tried and failed:** {n} change(s) whose check failed; do not repeat them without reading why."
        ),
    };
    Some(format!(
        "---\nhandoff: {slug}\niso_date: {date}\ntrue_at_sha: {sha}\nshape: handoff\n\
         first_action: Run `git status --short` to see the change so far.\n\
         verify_cmd: {verify}\nstatus: in_progress\n---\n\n\
         # Handover: {task_id}\n\n\
         ## Current state as verifiable claims\n| Claim | Verify |\n|---|---|\n{claims}\n\
         ## Negative knowledge\n{negative}\n\n\
         ## Next action\n1. Run `git status --short` to see the change so far.\n"
    ))
}

/// The command of an assistant message (its first tool call's, or its one fenced block).
fn command_of(m: &Message) -> Option<String> {
    if let Some(c) = m.tool_calls.first() {
        let v: serde_json::Value = serde_json::from_str(&c.arguments).ok()?;
        return v.get("command")?.as_str().map(str::to_string);
    }
    let start = m.content.find("```")?;
    let body = &m.content[start + 3..];
    let body = &body[body.find('\n')? + 1..];
    let rest = &body[body.find("\n```")? + 4..];
    // two blocks is a malformed reply, which ran nothing
    if rest.contains("```") {
        return None;
    }
    Some(body[..body.find("\n```")?].to_string())
}

fn classify(command: &str) -> Kind {
    if command.starts_with("echo ") {
        Kind::Submit
    } else if command.starts_with("cat > ")
        || command.starts_with("git checkout -q -- . && git apply")
    {
        Kind::Edit
    } else if command.starts_with("python3 - <<") || command.starts_with("git status") {
        Kind::Check { passed: false }
    } else {
        Kind::Explore
    }
}

/// The agent's earlier commands in order, each check with whether it passed (its
/// observation's return code was 0).
fn history(request: &Request) -> Vec<Kind> {
    let msgs = &request.messages;
    let mut out = Vec::new();
    for (i, m) in msgs.iter().enumerate() {
        if m.role != Role::Assistant {
            continue;
        }
        let Some(cmd) = command_of(m) else { continue };
        let mut kind = classify(&cmd);
        if let Kind::Check { passed } = &mut kind {
            *passed = msgs
                .get(i + 1)
                .is_some_and(|o| o.content.contains("<returncode>0</returncode>"));
        }
        out.push(kind);
    }
    out
}

fn next_command(
    task: &Known,
    s: &SimAgentSettings,
    request: &Request,
    marker: &str,
    d: &dyn Fn(&str) -> f64,
) -> (String, String) {
    let past = history(request);
    let edits = past.iter().filter(|k| **k == Kind::Edit).count();
    let explored = past.iter().filter(|k| **k == Kind::Explore).count();
    let targets = task.targets();
    let submit = || {
        (
            "The change is in place; submitting the diff.".to_string(),
            format!("echo {marker} && git add -A && git diff --cached"),
        )
    };
    match past.last() {
        Some(Kind::Edit) => {
            return (
                "Let me check the change against the behaviour the task describes.".into(),
                check_command(task),
            );
        }
        Some(Kind::Check { passed: true }) => return submit(),
        Some(Kind::Check { passed: false }) if edits > 3 => return submit(),
        Some(Kind::Check { passed: false }) => {
            let file = &targets[0];
            return (
                "That did not work. Let me re-read the code.".into(),
                format!("cat {file}"),
            );
        }
        _ => {}
    }
    let base = match task.difficulty {
        Difficulty::Easy => 2,
        Difficulty::Medium => 3,
        Difficulty::Hard => 4,
    };
    let extra = (task_draw(request, &task.id) * 3.0) as usize;
    if edits == 0 && explored < base + extra {
        return explore(task, &targets, explored);
    }
    let factor = match task.difficulty {
        Difficulty::Easy => 1.0,
        Difficulty::Medium => 0.75,
        Difficulty::Hard => 0.5,
    };
    let right = d("edit") < s.skill * factor;
    edit(task, right, d("variant"))
}

fn explore(task: &Known, targets: &[String], n: usize) -> (String, String) {
    let file = &targets[n % targets.len()];
    let test = task.tests.first().unwrap_or(file);
    match n % 5 {
        0 => (
            "Let me see what is in the repository.".into(),
            "ls -la".into(),
        ),
        1 => (format!("Let me read {file}."), format!("cat {file}")),
        2 => (
            format!("Where are the definitions in {file}?"),
            format!("grep -n \"def \\|class \" {file}"),
        ),
        3 => (
            format!("How is it tested? Let me read {test}."),
            format!("cat {test}"),
        ),
        _ => ("How big is it?".into(), format!("wc -l {file}")),
    }
}

fn check_command(task: &Known) -> String {
    match task.repro.first() {
        Some(code) => format!(
            "python3 - <<'{EOF}'\n{code}\nimport unittest\nunittest.main(argv=['repro'])\n{EOF}"
        ),
        None => "git status --short".into(),
    }
}

/// Operator flips for a wrong edit: each pair is tried in both directions.
const FLIPS: &[(&str, &str)] = &[
    (" <= ", " < "),
    (" >= ", " > "),
    (" == ", " != "),
    (" + 1", " - 1"),
    (" < ", " <= "),
    (" > ", " >= "),
    (" and ", " or "),
];

fn edit(task: &Known, right: bool, variant: f64) -> (String, String) {
    if let Some(p) = &task.patch {
        let patch = if right {
            p.clone()
        } else {
            flip_added_line(p, variant).unwrap_or_else(|| p.clone())
        };
        return (
            "I will apply my fix.".into(),
            format!("git checkout -q -- . && git apply - <<'{EOF}'\n{patch}\n{EOF}"),
        );
    }
    let Some((path, orig, reference)) = task.files.first() else {
        return (
            "Nothing to change that I can see.".into(),
            "git status --short".into(),
        );
    };
    let contents = if right {
        reference.clone()
    } else {
        wrong_file(orig.as_deref(), reference)
    };
    let mut cmd = String::new();
    // a multi-file reference writes every file; only the first can be wrong
    for (i, (p, _, r)) in task.files.iter().enumerate() {
        let c = if i == 0 { &contents } else { r };
        if !cmd.is_empty() {
            cmd.push_str(" && ");
        }
        cmd.push_str(&format!(
            "cat > {p} <<'{EOF}'\n{}\n{EOF}\n",
            c.trim_end_matches('\n')
        ));
    }
    (
        format!("I will rewrite {path} with the fix."),
        cmd.trim_end().to_string(),
    )
}

/// A wrong edit of a file: the original with a comment added where the reference's
/// change begins, an edit that looks like work on the right spot but changes no behaviour,
/// so it fails the hidden tests exactly as the unchanged tree does (which `check-tasks`
/// verifies for every bundled task).
fn wrong_file(orig: Option<&str>, reference: &str) -> String {
    let Some(orig) = orig else {
        // a new file the reference adds: leave it out
        return String::new();
    };
    let lines: Vec<&str> = orig.lines().collect();
    let new: Vec<&str> = reference.lines().collect();
    let at = (0..lines.len())
        .find(|i| new.get(*i) != Some(&lines[*i]))
        .unwrap_or(lines.len());
    let indent: String = lines
        .get(at)
        .map(|l| l.chars().take_while(|c| c.is_whitespace()).collect())
        .unwrap_or_default();
    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    out.insert(at, format!("{indent}# the edge cases are handled here"));
    out.join("\n") + "\n"
}

fn flip(line: &str) -> Option<String> {
    for (a, b) in FLIPS {
        if line.contains(a) {
            return Some(line.replacen(a, b, 1));
        }
        if line.contains(b) {
            return Some(line.replacen(b, a, 1));
        }
    }
    None
}

fn flip_added_line(patch: &str, variant: f64) -> Option<String> {
    let lines: Vec<&str> = patch.lines().collect();
    let added: Vec<usize> = (0..lines.len())
        .filter(|i| lines[*i].starts_with('+') && !lines[*i].starts_with("+++"))
        .collect();
    let start = (variant * added.len().max(1) as f64) as usize;
    for k in 0..added.len() {
        let i = added[(start + k) % added.len()];
        if let Some(f) = flip(lines[i]) {
            let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            out[i] = f;
            return Some(out.join("\n") + "\n");
        }
    }
    None
}

#[async_trait]
impl Provider for SimAgent {
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

/// A uniform draw in [0, 1) from the seed, the task, the model, the purpose and the
/// agent's trajectory ([`trajectory`]), through the chat sims' hash ([`draw_from`]).
fn draw(request: &Request, task_id: &str, purpose: &str) -> f64 {
    let seed = request.seed.unwrap_or(0);
    let done = trajectory(&request.messages);
    draw_from(
        seed,
        &[task_id, request.model.as_str(), purpose, &done],
        &[],
    )
}

/// What the agent did so far, without volatile output: one line per earlier reply with
/// its step index, its command (`-` for a malformed reply) and the return code of each
/// observation that answered it (`?` when the observation shows none).
fn trajectory(messages: &[Message]) -> String {
    let mut out = String::new();
    let mut step = 0usize;
    for (i, m) in messages.iter().enumerate() {
        // the loop keeps no malformed reply, only the answer to it: that answer stands
        // for the reply it answered
        let answers_dropped_reply = m.role == Role::User
            && i >= 2
            && messages[i - 1].role != Role::Assistant
            && return_code_in(&m.content).is_none()
            && is_format_error_answer(&m.content);
        if answers_dropped_reply {
            out.push_str(&format!("\n{step}\t1\t-\t?"));
            step += 1;
            continue;
        }
        match m.role {
            Role::Assistant => {
                let cmd = command_of(m).unwrap_or_else(|| "-".into());
                out.push_str(&format!("\n{step}\t{}\t{cmd}", cmd.len()));
                step += 1;
            }
            Role::Tool | Role::User if step > 0 => {
                let rc = return_code_in(&m.content).unwrap_or("?");
                out.push_str(&format!("\t{rc}"));
            }
            _ => {}
        }
    }
    out
}

/// Whether `text` answers a reply that ran nothing: it carries one of the loop's
/// format-error texts ([`crate::parse_actions`]) or the output-limit note.
fn is_format_error_answer(text: &str) -> bool {
    [
        "No tool calls found in the response",
        "Unknown tool '",
        "Missing 'command' argument",
        "Error parsing tool call arguments",
        "Expected exactly 1 action, found",
        "argument of the bash tool call must be a string",
        "reached the output token limit",
    ]
    .iter()
    .any(|e| text.contains(e))
}

/// The return code an observation reports (`<returncode>N</returncode>`, the format of
/// baton's templates and mini-SWE-agent's).
fn return_code_in(text: &str) -> Option<&str> {
    let start = text.find("<returncode>")? + "<returncode>".len();
    let len = text[start..].find("</returncode>")?;
    Some(text[start..start + len].trim())
}

/// A draw fixed for (seed, task, model): how much extra exploring it does.
fn task_draw(request: &Request, task_id: &str) -> f64 {
    let seed = request.seed.unwrap_or(0);
    draw_from(seed, &[task_id, request.model.as_str(), "explore"], &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_edit_comments_where_the_fix_belongs_and_changes_nothing_else() {
        let orig = "def f(x):\n    return x\n";
        let reference = "def f(x):\n    if x <= 0:\n        raise ValueError\n    return x\n";
        assert_eq!(
            wrong_file(Some(orig), reference),
            "def f(x):\n    # the edge cases are handled here\n    return x\n"
        );
        assert_eq!(flip("    if x <= 0:").as_deref(), Some("    if x < 0:"));
    }

    #[test]
    fn draws_ignore_output_text_but_not_return_codes() {
        let obs = |rc: i32, text: &str| {
            Message::tool(
                "c",
                format!("<returncode>{rc}</returncode>\n<output>\n{text}</output>"),
            )
        };
        let call = Message::assistant_with_calls(
            "",
            vec![ToolCall {
                id: "c".into(),
                name: "bash".into(),
                arguments: r#"{"command":"ls -la"}"#.into(),
            }],
        );
        let run = |o: Message| vec![Message::system("s"), Message::user("task"), call.clone(), o];
        let a = trajectory(&run(obs(0, "Dec  1 17:06 a.py")));
        let b = trajectory(&run(obs(0, "Dec  1 17:07 a.py")));
        let c = trajectory(&run(obs(1, "Dec  1 17:07 a.py")));
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    /// Reads `warn:ID` and `urge:ID` words; anything else is silence.
    #[derive(Debug)]
    struct Words(Vec<&'static str>);

    impl DocumentReader for Words {
        fn stances(&self, document: &str) -> Vec<Stance> {
            self.0
                .iter()
                .map(|id| {
                    if document.contains(&format!("warn:{id}")) {
                        Stance::Warns
                    } else if document.contains(&format!("urge:{id}")) {
                        Stance::Urges
                    } else {
                        Stance::Silent
                    }
                })
                .collect()
        }
    }

    fn doc_agent(skill: f64, base_rate: f64) -> SimAgent {
        let trap = |id: &str| SimTrap {
            id: id.into(),
            fall_in: vec![format!("touch fell-{id}"), format!("git add fell-{id}")],
            avoid: vec![format!("touch avoided-{id}")],
        };
        let models = BTreeMap::from([(
            "m".to_string(),
            SimAgentSettings {
                skill,
                malformed: 0.0,
                latency_ms: 0,
            },
        )]);
        SimAgent::new(&[], models)
            .unwrap()
            .with_document_tasks(vec![DocumentTask {
                id: "t".into(),
                instruction: "Finish the checkout.".into(),
                document: "HANDOVER.md".into(),
                traps: vec![trap("a"), trap("b"), trap("c")],
                base_rate,
                reader: Arc::new(Words(vec!["a", "b", "c"])),
            }])
            .unwrap()
    }

    /// The commands the agent runs when every command exits 0 and `cat` shows `document`.
    fn doc_episode(agent: &SimAgent, prompt: &str, document: &str, seed: u64) -> Vec<String> {
        let mut messages = vec![Message::system("s"), Message::user(prompt)];
        let mut commands = Vec::new();
        for _ in 0..20 {
            let request = Request {
                model: "m".into(),
                messages: messages.clone(),
                config: Default::default(),
                seed: Some(seed),
                tools: vec![crate::agent::protocol::bash_tool()],
                tool_choice: None,
            };
            let r = agent.reply(&request).unwrap();
            let call = r.tool_calls[0].clone();
            let reply = Message::assistant_with_calls(r.text, r.tool_calls);
            let cmd = command_of(&reply).unwrap();
            let out = if cmd.starts_with("cat ") {
                document
            } else {
                ""
            };
            messages.push(reply);
            messages.push(Message::tool(
                call.id,
                format!("<returncode>0</returncode>\n<output>\n{out}</output>"),
            ));
            commands.push(cmd.clone());
            if cmd.starts_with("echo ") {
                break;
            }
        }
        commands
    }

    #[test]
    fn a_document_task_follows_the_document_it_reads() {
        let prompt = "Finish the checkout.\n\nRead `HANDOVER.md` first.";
        let submit = format!(
            "echo {} && git add -A && git diff --cached",
            crate::agent::templates::DEFAULT_SUBMIT_MARKER
        );
        // a warned trap is avoided, an urged one walked into; silence at skill 1 avoids
        let agent = doc_agent(1.0, 1.0);
        assert_eq!(
            doc_episode(&agent, prompt, "warn:a urge:b", 7),
            vec![
                "ls -la".to_string(),
                "cat HANDOVER.md".into(),
                "git log --oneline -n 15".into(),
                "touch avoided-a".into(),
                "touch fell-b".into(),
                "git add fell-b".into(),
                "touch avoided-c".into(),
                submit.clone(),
            ]
        );
        // silence at skill 0 falls in everywhere
        let commands = doc_episode(&doc_agent(0.0, 0.0), prompt, "nothing", 7);
        assert_eq!(
            commands
                .iter()
                .filter(|c| c.starts_with("touch fell-"))
                .count(),
            3
        );
        // no document named: no cat, the base rate decides (1: every trap, 0: none)
        let none = "Finish the checkout.";
        let all = doc_episode(&doc_agent(1.0, 1.0), none, "", 7);
        assert_eq!(
            all[..2],
            ["ls -la".to_string(), "git log --oneline -n 15".into()]
        );
        assert_eq!(
            all.iter().filter(|c| c.starts_with("touch fell-")).count(),
            3
        );
        let zero = doc_episode(&doc_agent(0.0, 0.0), none, "", 7);
        assert_eq!(
            zero.iter().filter(|c| c.starts_with("touch fell-")).count(),
            0
        );
        // a middling rate splits traps by their draws, the same at every call of a trial
        let agent = doc_agent(0.5, 0.5);
        let task = &agent.docs[0];
        let settings = agent.models["m"];
        let mut fell = 0;
        for seed in 0..200 {
            let choices = document_choices(task, &settings, seed, "m", None);
            let commands = doc_episode(&agent, none, "", seed);
            for (trap, f) in ["a", "b", "c"].iter().zip(&choices) {
                assert_eq!(commands.contains(&format!("touch fell-{trap}")), *f);
            }
            fell += choices.iter().filter(|f| **f).count();
        }
        assert!((240..=360).contains(&fell), "{fell} of 600");
        // a silent document uses the same draw against 1 - skill
        let silent = document_choices(task, &settings, 3, "m", Some("x"));
        let without = document_choices(task, &settings, 3, "m", None);
        assert_eq!(silent, without);
        let urged = document_choices(task, &settings, 3, "m", Some("urge:a urge:b urge:c"));
        assert_eq!(urged, vec![true; 3]);
    }

    #[test]
    fn a_handover_request_gets_a_document_of_what_the_agent_did() {
        let call = |id: &str, cmd: &str| {
            Message::assistant_with_calls(
                "",
                vec![ToolCall {
                    id: id.into(),
                    name: "bash".into(),
                    arguments: json!({ "command": cmd }).to_string(),
                }],
            )
        };
        let obs = |id: &str, rc: i32| {
            Message::tool(
                id,
                format!("<returncode>{rc}</returncode>\n<output>\nx\n</output>"),
            )
        };
        let ask = format!(
            "{HANDOVER_REQUEST_CUE}.\n---\niso_date: 2026-02-03\ntrue_at_sha: 0123abc\n---\n"
        );
        let messages = vec![
            Message::system("s"),
            Message::user("task"),
            call("1", "cat src/a.py"),
            obs("1", 0),
            call("2", "cat missing.py"),
            obs("2", 1),
            call("3", "python3 - <<'X'\nimport x\nX"),
            obs("3", 1),
            call("4", "python3 - <<'X'\nimport x\nX"),
            obs("4", 0),
            Message::user(ask.clone()),
        ];
        let request = Request {
            model: "m".into(),
            messages,
            config: Default::default(),
            seed: None,
            tools: Vec::new(),
            tool_choice: None,
        };
        let doc = handover_reply(&request, "Task One").unwrap();
        assert_eq!(
            doc,
            "---\nhandoff: task-one\niso_date: 2026-02-03\ntrue_at_sha: 0123abc\nshape: handoff\n\
             first_action: Run `git status --short` to see the change so far.\n\
             verify_cmd: test -f src/a.py\nstatus: in_progress\n---\n\n# Handover: Task One\n\n\
             ## Current state as verifiable claims\n| Claim | Verify |\n|---|---|\n\
             | `src/a.py` exists | `test -f src/a.py` |\n\n## Negative knowledge\n\
             - **Tried and failed:** 1 change(s) whose check failed; do not repeat them without \
             reading why.\n\n## Next action\n1. Run `git status --short` to see the change so far.\n"
        );
        // an observation is never taken for the request
        let mut not = request.clone();
        not.messages.push(obs("5", 0));
        assert_eq!(handover_reply(&not, "t"), None);
        // nor the document handed over to the suffix model, which names a commit too
        let mut handed = request.clone();
        handed.messages.truncate(2);
        handed.messages.push(Message::user(format!(
            "You are taking over this task. Their summary:\n\n{doc}\nContinue."
        )));
        assert_eq!(handover_reply(&handed, "t"), None);
    }

    #[test]
    fn commands_are_read_back_from_both_protocols() {
        let tool = Message::assistant_with_calls(
            "",
            vec![ToolCall {
                id: "c".into(),
                name: "bash".into(),
                arguments: r#"{"command":"cat > a.py <<'X'\nx\nX"}"#.into(),
            }],
        );
        assert_eq!(classify(&command_of(&tool).unwrap()), Kind::Edit);
        let text = Message::assistant("ok\n\n```bash\necho DONE_DONE && git diff\n```");
        assert_eq!(classify(&command_of(&text).unwrap()), Kind::Submit);
        let two = Message::assistant("```bash\nls\n```\n\n```bash\npwd\n```");
        assert_eq!(command_of(&two), None);
    }
}
