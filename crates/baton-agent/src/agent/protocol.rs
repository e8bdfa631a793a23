//! The two ways a model names its commands, and reading a reply into actions.
//!
//! * [`Protocol::ToolCalls`]: native tool calls of one `bash` tool whose arguments are
//!   `{"command": "…"}` ([`bash_tool`]). A reply may make several calls; they run in order.
//!   A reply with no call, a call of another tool, or arguments that are not an object
//!   with a string `command` is a format error.
//! * [`Protocol::Text`]: exactly one fenced block tagged with the fence word (`bash` by
//!   default) holding the command, as mini-SWE-agent's text mode reads it (a block is
//!   "```tag", optional spaces, a newline, the command, a newline and "```"). None, or
//!   more than one, is a format error.

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

/// The `bash` tool as sent to the model.
pub fn bash_tool() -> ToolSpec {
    ToolSpec {
        name: BASH_TOOL.into(),
        description: "Run one shell command with bash in the repository and return its \
                      return code and output. Each call starts a fresh shell in the \
                      repository's folder."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {"command": {"type": "string", "description": "The command to run."}},
            "required": ["command"],
            "additionalProperties": false
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

/// Read a reply's actions, or say why it has none that can run.
pub fn parse_actions(
    protocol: Protocol,
    fence: &str,
    text: &str,
    calls: &[ToolCall],
) -> Result<Vec<Action>, String> {
    match protocol {
        Protocol::ToolCalls => {
            if calls.is_empty() {
                return Err("the reply made no tool call".into());
            }
            calls
                .iter()
                .map(|c| {
                    if c.name != BASH_TOOL {
                        return Err(format!("unknown tool {:?}; the only tool is bash", c.name));
                    }
                    let args: Value = serde_json::from_str(&c.arguments).map_err(|e| {
                        format!("the arguments of tool call {:?} are not JSON: {e}", c.id)
                    })?;
                    let command = args
                        .get("command")
                        .and_then(Value::as_str)
                        .filter(|c| !c.trim().is_empty())
                        .ok_or_else(|| {
                            format!(
                                "tool call {:?} has no non-empty string argument \"command\"",
                                c.id
                            )
                        })?;
                    Ok(Action {
                        command: command.to_string(),
                        call_id: Some(c.id.clone()),
                    })
                })
                .collect()
        }
        Protocol::Text => {
            let blocks = fenced_blocks(text, fence);
            match blocks.as_slice() {
                [one] if !one.trim().is_empty() => Ok(vec![Action {
                    command: one.clone(),
                    call_id: None,
                }]),
                [_] => Err(format!("the ```{fence} block is empty")),
                [] => Err(format!("the reply has no ```{fence} block")),
                many => Err(format!(
                    "the reply has {} ```{fence} blocks; send exactly one",
                    many.len()
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
        // the tag must end here: spaces, then a newline
        let trimmed = after.trim_start_matches([' ', '\t']);
        let Some(body) = trimmed.strip_prefix('\n') else {
            rest = after;
            continue;
        };
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
        for bad in [
            r#"{"cmd":"ls"}"#,
            "ls",
            r#"{"command":""}"#,
            r#"{"command":3}"#,
        ] {
            assert!(
                parse_actions(Protocol::ToolCalls, "bash", "", &[call(bad)]).is_err(),
                "{bad}"
            );
        }
        assert!(parse_actions(Protocol::ToolCalls, "bash", "text only", &[]).is_err());
    }

    #[test]
    fn text_needs_exactly_one_block() {
        let one = "I will look.\n\n```bash\nls -la\n```\n";
        assert_eq!(
            parse_actions(Protocol::Text, "bash", one, &[]).unwrap()[0].command,
            "ls -la"
        );
        let two = format!("{one}\n```bash\npwd\n```");
        assert!(
            parse_actions(Protocol::Text, "bash", &two, &[])
                .unwrap_err()
                .contains("2 ")
        );
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
