//! The two ways a model names its commands, and reading a reply into actions, by
//! mini-SWE-agent 2.4.6's rules and in its words (so a run with its templates sends what
//! it sends).
//!
//! * [`Protocol::ToolCalls`]: native tool calls of one `bash` tool whose arguments are
//!   `{"command": "…"}` ([`bash_tool`], mini's schema). A reply may make several calls;
//!   they run in order. A reply with no call, a call of another tool, or arguments that
//!   are not a JSON object with a `command` is a format error (the first bad call's
//!   messages, joined as mini joins them). An empty command is a command: it runs.
//! * [`Protocol::Text`]: exactly one fenced block tagged with the fence word (`bash` by
//!   default) holding the command, as mini-SWE-agent's text mode reads it (a block is
//!   "```tag", optional whitespace, a newline, the command, a newline and "```"; the
//!   command is stripped). None, or more than one, is a format error.

use baton_types::{ToolCall, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How commands travel in replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Native tool calls of the `bash` tool (default).
    #[default]
    ToolCalls,
    /// One fenced command block per reply.
    Text,
}

impl Protocol {
    /// `tool_calls` or `text`, as in experiment files and templates.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::ToolCalls => "tool_calls",
            Protocol::Text => "text",
        }
    }
}

/// The name of the one tool.
pub const BASH_TOOL: &str = "bash";

/// The `bash` tool as sent to the model (mini-SWE-agent's `BASH_TOOL`, word for word).
pub fn bash_tool() -> ToolSpec {
    ToolSpec {
        name: BASH_TOOL.into(),
        description: "Execute a bash command".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The bash command to execute"}
            },
            "required": ["command"]
        }),
    }
}

/// One command to run, and the tool call it answers (none under the text protocol).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Action {
    /// The command, run as `bash -c COMMAND`.
    pub command: String,
    /// The id of the tool call it came from.
    pub call_id: Option<String>,
}

/// Why a reply has no command that can run: the error text the format-error template
/// shows, and the commands that were found (the text protocol's blocks, for `actions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// What is wrong, in mini-SWE-agent's words.
    pub error: String,
    /// The commands found (none under the tool-call protocol, as mini reports it).
    pub actions: Vec<String>,
}

/// Read a reply's actions, or say why it has none that can run.
pub fn parse_actions(
    protocol: Protocol,
    fence: &str,
    text: &str,
    calls: &[ToolCall],
) -> Result<Vec<Action>, FormatError> {
    let error = |error: String, actions: Vec<String>| FormatError { error, actions };
    match protocol {
        Protocol::ToolCalls => {
            if calls.is_empty() {
                return Err(error(
                    "No tool calls found in the response. Every response MUST include at least one tool call.".into(),
                    Vec::new(),
                ));
            }
            calls
                .iter()
                .map(|c| {
                    let mut why = String::new();
                    let args: Option<Value> = match serde_json::from_str(&c.arguments) {
                        Ok(v) => Some(v),
                        Err(e) => {
                            why.push_str(&format!("Error parsing tool call arguments: {e}."));
                            None
                        }
                    };
                    if c.name != BASH_TOOL {
                        why.push_str(&format!("Unknown tool '{}'.", c.name));
                    }
                    let command = args.as_ref().and_then(|a| a.as_object()?.get("command"));
                    if command.is_none() {
                        why.push_str("Missing 'command' argument in bash tool call.");
                    }
                    if !why.is_empty() {
                        return Err(error(why.trim().to_string(), Vec::new()));
                    }
                    let command = match command {
                        Some(Value::String(s)) => s.clone(),
                        // mini passes any JSON value on to the shell; a string is the
                        // only one a shell can run as written
                        _ => {
                            return Err(error(
                                "The 'command' argument of the bash tool call must be a string."
                                    .into(),
                                Vec::new(),
                            ));
                        }
                    };
                    Ok(Action {
                        command,
                        call_id: Some(c.id.clone()),
                    })
                })
                .collect()
        }
        Protocol::Text => {
            let blocks: Vec<String> = fenced_blocks(text, fence)
                .into_iter()
                .map(|b| b.trim().to_string())
                .collect();
            match blocks.as_slice() {
                [one] => Ok(vec![Action {
                    command: one.clone(),
                    call_id: None,
                }]),
                _ => Err(error(
                    format!("Expected exactly 1 action, found {}.", blocks.len()),
                    blocks,
                )),
            }
        }
    }
}

/// Every "```tag" block's body (between the opening line and a line that is "```").
fn fenced_blocks(text: &str, tag: &str) -> Vec<String> {
    let open = format!("```{tag}");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(&open) {
        let after = &rest[i + open.len()..];
        // the tag must end here: whitespace, then a newline (mini's `\s*\n`)
        let ws = after.len() - after.trim_start().len();
        let Some(nl) = after[..ws].rfind('\n') else {
            rest = after;
            continue;
        };
        let body = &after[nl + 1..];
        match body.find("\n```") {
            Some(end) => {
                out.push(body[..end].to_string());
                rest = &body[end + 4..];
            }
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(args: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn tool_calls_need_a_command_string() {
        let ok = parse_actions(
            Protocol::ToolCalls,
            "bash",
            "",
            &[call(r#"{"command":"ls"}"#)],
        )
        .unwrap();
        assert_eq!(ok[0].command, "ls");
        assert_eq!(ok[0].call_id.as_deref(), Some("c1"));
        for bad in [r#"{"cmd":"ls"}"#, "ls", r#"{"command":3}"#] {
            assert!(
                parse_actions(Protocol::ToolCalls, "bash", "", &[call(bad)]).is_err(),
                "{bad}"
            );
        }
        assert_eq!(
            parse_actions(Protocol::ToolCalls, "bash", "", &[call(r#"{"cmd":"ls"}"#)])
                .unwrap_err()
                .error,
            "Missing 'command' argument in bash tool call."
        );
        // an empty command runs, as mini runs it
        let empty = parse_actions(
            Protocol::ToolCalls,
            "bash",
            "",
            &[call(r#"{"command":""}"#)],
        );
        assert_eq!(empty.unwrap()[0].command, "");
        assert!(
            parse_actions(Protocol::ToolCalls, "bash", "text only", &[])
                .unwrap_err()
                .error
                .starts_with("No tool calls found")
        );
    }

    #[test]
    fn text_needs_exactly_one_block() {
        let one = "I will look.\n\n```bash\nls -la\n```\n";
        assert_eq!(
            parse_actions(Protocol::Text, "bash", one, &[]).unwrap()[0].command,
            "ls -la"
        );
        let two = format!("{one}\n```bash\npwd\n```");
        let err = parse_actions(Protocol::Text, "bash", &two, &[]).unwrap_err();
        assert_eq!(err.error, "Expected exactly 1 action, found 2.");
        assert_eq!(err.actions, vec!["ls -la", "pwd"]);
        assert!(parse_actions(Protocol::Text, "bash", "```python\nx\n```", &[]).is_err());
        // a longer tag is a different tag
        assert!(parse_actions(Protocol::Text, "bash", "```bashful\nx\n```", &[]).is_err());
        let multi = "```bash\ncat <<'EOF' > a.py\nx = 1\nEOF\n```";
        assert_eq!(
            parse_actions(Protocol::Text, "bash", multi, &[]).unwrap()[0].command,
            "cat <<'EOF' > a.py\nx = 1\nEOF"
        );
    }
}
