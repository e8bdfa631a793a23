//! The two ways a model names its commands, and reading a reply into actions, by
//! mini-SWE-agent 2.4.6's rules and in its words (so a run with its templates sends what
//! it sends).
//!
//! * [`Protocol::ToolCalls`]: native tool calls of one `bash` tool whose arguments are
//!   `{"command": "…"}` ([`bash_tool`], mini's schema). A reply may make several calls;
//!   they run in order. A reply with no call, a call of another tool, or arguments that
//!   are not a JSON object with a `command` is a format error (the first bad call's
//!   messages, joined as mini joins them; arguments that are not JSON get CPython's
//!   `json` message, see [`pyjson`](super::pyjson)). An empty command is a command: it
//!   runs. A `command` that is not a string is not a format error either: mini hands it to
//!   `subprocess.Popen(command, shell=True)`, and so does baton, by Python's rules
//!   ([`Action::exception`]): a list (or a dict's keys) of strings runs its first item, any
//!   other value fails without running and is answered with return code -1 and Python's
//!   `TypeError` (`'int' object is not iterable`), as mini's local environment answers.
//! * [`Protocol::Text`]: exactly one fenced block tagged with the fence word (`bash` by
//!   default) holding the command, read as mini's regex ```` ```tag\s*\n(.*?)\n``` ````
//!   (dot matches newline) reads it, the command stripped; an empty block is an empty
//!   command, which runs. None, or more than one, is a format error.

use baton_types::{ToolCall, ToolSpec};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::pyjson::{self, PyValue};

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
    /// Why the command cannot run at all, in Python's words (a `command` that is neither
    /// a string nor a list of strings: `'int' object is not iterable`): it is answered as
    /// mini answers it, return code -1 and this as the exception, without running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
}

impl Action {
    /// A command to run.
    pub fn command(command: impl Into<String>, call_id: Option<String>) -> Self {
        Action {
            command: command.into(),
            call_id,
            exception: None,
        }
    }
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
                    let args = match pyjson::loads(&c.arguments) {
                        Ok(v) => Some(v),
                        Err(e) => {
                            why.push_str(&format!("Error parsing tool call arguments: {e}."));
                            None
                        }
                    };
                    if c.name != BASH_TOOL {
                        why.push_str(&format!("Unknown tool '{}'.", c.name));
                    }
                    let command = args.as_ref().and_then(|a| a.get("command"));
                    if command.is_none() {
                        why.push_str("Missing 'command' argument in bash tool call.");
                    }
                    match command {
                        Some(command) if why.is_empty() => Ok(popen(command, &c.id)),
                        _ => Err(error(why.trim().to_string(), Vec::new())),
                    }
                })
                .collect()
        }
        Protocol::Text => {
            let blocks: Vec<String> = fenced_blocks(text, fence)
                .into_iter()
                .map(|b| b.trim().to_string())
                .collect();
            match blocks.as_slice() {
                [one] => Ok(vec![Action::command(one.clone(), None)]),
                _ => Err(error(
                    format!("Expected exactly 1 action, found {}.", blocks.len()),
                    blocks,
                )),
            }
        }
    }
}

/// What `subprocess.Popen(command, shell=True)` does with a `command` that JSON gave:
/// a string runs; anything else becomes `["/bin/sh", "-c", *list(command)]`, so a list
/// (or a dict's keys) of strings runs its first item (the rest would be `$0`, `$1`, …,
/// which baton does not pass; an empty one runs the empty command), and any other value
/// is a `TypeError` before anything runs.
fn popen(command: &PyValue, call_id: &str) -> Action {
    let id = Some(call_id.to_string());
    let items: Vec<&str> = match command {
        PyValue::Str(s) => return Action::command(s.clone(), id),
        PyValue::List(items) => match items.iter().find(|v| !matches!(v, PyValue::Str(_))) {
            Some(bad) => {
                return Action {
                    exception: Some(format!(
                        "expected str, bytes or os.PathLike object, not {}",
                        bad.type_name()
                    )),
                    ..Action::command("", id)
                };
            }
            None => items
                .iter()
                .map(|v| match v {
                    PyValue::Str(s) => s.as_str(),
                    _ => "",
                })
                .collect(),
        },
        PyValue::Dict(items) => items.iter().map(|(k, _)| k.as_str()).collect(),
        other => {
            return Action {
                exception: Some(format!("'{}' object is not iterable", other.type_name())),
                ..Action::command("", id)
            };
        }
    };
    Action::command(items.first().copied().unwrap_or_default(), id)
}

/// Every body mini's `re.findall(r"```TAG\s*\n(.*?)\n```", text, re.DOTALL)` finds, by
/// the same leftmost-first search: at each "```TAG", the longest run of whitespace that
/// ends in a newline is tried first, then shorter ones, each with the shortest body that
/// is followed by "\n```".
fn fenced_blocks(text: &str, tag: &str) -> Vec<String> {
    let open = format!("```{tag}");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(&open).map(|i| from + i) {
        let after = i + open.len();
        let ws = text[after..].len() - text[after..].trim_start().len();
        // the newlines of the whitespace run, last first: where `\s*` may stop
        let newlines = text[after..after + ws]
            .char_indices()
            .filter(|(_, c)| *c == '\n')
            .map(|(k, _)| after + k)
            .rev();
        let found = newlines.into_iter().find_map(|nl| {
            let body = nl + 1;
            text[body..].find("\n```").map(|end| (body, body + end))
        });
        match found {
            Some((body, end)) => {
                out.push(text[body..end].to_string());
                from = end + 4;
            }
            None => from = i + 1,
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
        for bad in [r#"{"cmd":"ls"}"#, "ls", "[]"] {
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
        assert_eq!(
            parse_actions(Protocol::ToolCalls, "bash", "", &[call("ls")])
                .unwrap_err()
                .error,
            "Error parsing tool call arguments: Expecting value: line 1 column 1 (char 0).\
             Missing 'command' argument in bash tool call."
        );
        // a command that is not a string goes to Popen as mini's does
        let popen = |args: &str| {
            let a = parse_actions(Protocol::ToolCalls, "bash", "", &[call(args)]).unwrap();
            (a[0].command.clone(), a[0].exception.clone())
        };
        assert_eq!(
            popen(r#"{"command":3}"#),
            (String::new(), Some("'int' object is not iterable".into()))
        );
        assert_eq!(
            popen(r#"{"command":null}"#),
            (
                String::new(),
                Some("'NoneType' object is not iterable".into())
            )
        );
        assert_eq!(popen(r#"{"command":["ls", "x"]}"#), ("ls".into(), None));
        assert_eq!(popen(r#"{"command":{"pwd": 1}}"#), ("pwd".into(), None));
        assert_eq!(
            popen(r#"{"command":["ls", 1]}"#),
            (
                String::new(),
                Some("expected str, bytes or os.PathLike object, not int".into())
            )
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
        // an empty or blank block is an empty command (mini's regex finds it)
        for empty in [
            "```bash\n\n```",
            "```bash\n   \n```\n",
            "```bash  \n\n\n```",
        ] {
            let a = parse_actions(Protocol::Text, "bash", empty, &[]).unwrap();
            assert_eq!(a[0].command, "", "{empty:?}");
        }
        // the shortest body after the longest whitespace run that ends in a newline
        let two_newlines = "```bash\n\nls\n```";
        assert_eq!(
            parse_actions(Protocol::Text, "bash", two_newlines, &[]).unwrap()[0].command,
            "ls"
        );
        let multi = "```bash\ncat <<'EOF' > a.py\nx = 1\nEOF\n```";
        assert_eq!(
            parse_actions(Protocol::Text, "bash", multi, &[]).unwrap()[0].command,
            "cat <<'EOF' > a.py\nx = 1\nEOF"
        );
    }
}
