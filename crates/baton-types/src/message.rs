use serde::{Deserialize, Serialize};

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The system prompt.
    System,
    /// A user turn (a shard, or a fixed interface note).
    User,
    /// A model's visible reply.
    Assistant,
    /// The result of one tool call, answering the assistant's call with the same id.
    Tool,
}

/// One tool call a model made: which tool, and its arguments as the JSON text the model
/// wrote (kept as text, so a call whose arguments do not parse is still recorded as
/// written and can be answered with a format error).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call (`call_…`, `toolu_…`); the tool message answering
    /// it carries the same id.
    pub id: String,
    /// The tool's name (`bash`).
    pub name: String,
    /// The arguments as JSON text (`{"command": "ls"}`).
    pub arguments: String,
}

/// One provider-neutral chat message: visible text and tool calls only, never reasoning
/// items (thinking blocks, encrypted reasoning and signatures are valid only for the
/// model that wrote them, so they are never replayed, to it or to another model).
///
/// The tool fields are left out of the serialized form when empty, so a plain text
/// message serializes (and hashes, in the store) exactly as before they existed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text (for a tool message, the observation).
    pub content: String,
    /// The tool calls of an assistant message, in the order the model made them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message, the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    fn text(role: Role, content: String) -> Self {
        Message {
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::text(Role::System, content.into())
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::text(Role::User, content.into())
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::text(Role::Assistant, content.into())
    }

    /// An assistant message with tool calls (its text may be empty).
    pub fn assistant_with_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls: calls,
            ..Message::text(Role::Assistant, content.into())
        }
    }

    /// The same message with another role (for readers of wire formats, which learn the
    /// role and the content separately).
    pub fn with_role(mut self, role: Role) -> Self {
        self.role = role;
        self
    }

    /// The result of the tool call `call_id`.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message {
            tool_call_id: Some(call_id.into()),
            ..Message::text(Role::Tool, content.into())
        }
    }
}

/// A tool a model may call: its name, what it does, and a JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments object.
    pub parameters: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_messages_serialize_without_tool_fields() {
        let m = Message::user("hi");
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"role":"user","content":"hi"}"#
        );
        let back: Message = serde_json::from_str(r#"{"role":"user","content":"hi"}"#).unwrap();
        assert_eq!(back, m);
        let t = Message::tool("call_1", "ok");
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(
            json,
            r#"{"role":"tool","content":"ok","tool_call_id":"call_1"}"#
        );
        assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), t);
    }
}
