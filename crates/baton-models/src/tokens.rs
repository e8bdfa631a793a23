//! The token-count heuristic: what baton counts when no tokenizer is at hand.
//!
//! One token per four characters of text (rounded up), plus four per chat message for
//! its framing. The simulated models report this as their usage, the simulated HTTP
//! server bills and caches by it, and [`crate::Model`] reserves a request's prompt
//! by it against a tokens-per-minute limit before the real usage is known. It is an
//! estimate, never a bill: real providers' calls are priced from the usage they report.
//! (The spending cap uses a different, strict upper bound, in `baton-runner`.)

use baton_types::Message;

/// The prompt tokens one message counts for: its text, the name and argument text of
/// each tool call it makes, the id of the call it answers, plus four for the framing.
///
/// ```
/// use baton_models::tokens::message_tokens;
/// use baton_types::Message;
/// assert_eq!(message_tokens(&Message::user("abcde")), 2 + 4);
/// ```
pub fn message_tokens(message: &Message) -> u64 {
    let calls: u64 = message
        .tool_calls
        .iter()
        .map(|c| text_tokens(&c.id) + text_tokens(&c.name) + text_tokens(&c.arguments))
        .sum();
    let answers = message.tool_call_id.as_deref().map_or(0, text_tokens);
    text_tokens(&message.content) + calls + answers + 4
}

/// One token per four characters (Unicode scalar values), rounded up.
pub fn text_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn four_characters_per_token_rounded_up() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abcd"), 1);
        assert_eq!(text_tokens("abcde"), 2);
        // characters, not bytes
        assert_eq!(text_tokens("ééééé"), 2);
        assert_eq!(message_tokens(&Message::assistant("")), 4);
    }
}
