//! The agent loop and the simulated agent.
//!
//! * [`templates`]: the system, instance, observation and format-error templates (baton's
//!   own, or a user's mini-SWE-agent YAML).
//! * [`protocol`]: native `bash` tool calls or one fenced command per reply.
//! * [`pyjson`]: tool-call arguments read as CPython's `json` reads them.
//! * [`run`]: the loop itself ([`AgentLoop`](run::AgentLoop)), its limits and exit statuses,
//!   its resumable state, and the sink every call and command is reported to.
//! * [`workspace`]: a task's environment with its git baseline.
//! * [`handoff`]: what a handoff at call s shows the model that takes over (the
//!   interfaces' rewrites of the trajectory and their texts).
//! * [`sim`]: the deterministic simulated agent that makes all of it run offline.

pub mod handoff;
pub mod protocol;
pub mod pyjson;
pub mod run;
pub mod sim;
pub mod templates;
pub mod workspace;
