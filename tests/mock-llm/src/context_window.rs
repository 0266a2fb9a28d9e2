//! The context window mock-llm enforces when a script sets
//! `context_window` (README, "Context window"), and its own answer to a
//! summary (compaction) request.
//!
//! Tokens are counted as the request body's bytes / 4 (the same count as
//! the default `usage`). A longer request is refused with the real API's
//! error: on `/v1/messages` HTTP 400 `invalid_request_error` `prompt is too
//! long: N tokens > M maximum`; on `/v1/chat/completions` HTTP 400
//! `context_length_exceeded` with OpenAI's wording. Neither consumes a
//! script entry.
//!
//! A summary request — its last user message has a line starting with
//! [`SUMMARY_REQUEST_PREFIX`] — is answered with a summary of mock-llm's
//! own (every user request of the conversation, cut short), again without
//! consuming a script entry, so a script written before a client compacted
//! goes on working when it does.

use serde_json::Value;

use crate::request::{block_type, blocks, messages, role};
use crate::script::{Block, Entry};

/// How a summary request starts a line of its last user message (lathe's
/// compaction prompt begins with it; `lathe_core::agent::compact` has a test
/// that they agree).
pub const SUMMARY_REQUEST_PREFIX: &str = "Write a summary of this conversation";

/// Most chars of one user request quoted in mock-llm's summary.
pub const SUMMARY_QUOTE_CHARS: usize = 200;

/// Most user requests quoted in mock-llm's summary (the newest).
pub const SUMMARY_QUOTES: usize = 20;

/// The token count of a request body of `bytes` bytes: bytes / 4.
pub fn tokens(bytes: usize) -> u64 {
    (bytes / 4) as u64
}

/// The Messages API's 400 message for a prompt over the window (its real
/// wording): `prompt is too long: {tokens} tokens > {window} maximum`.
pub fn prompt_too_long(tokens: u64, window: u64) -> String {
    format!("prompt is too long: {tokens} tokens > {window} maximum")
}

/// OpenAI's 400 message for the same (`code: context_length_exceeded`).
pub fn context_length_exceeded(tokens: u64, window: u64) -> String {
    format!(
        "This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."
    )
}

/// Whether `body` (either API's) is a summary request: a line of its last
/// user message's text starts with [`SUMMARY_REQUEST_PREFIX`].
pub fn is_summary_request(body: &Value) -> bool {
    crate::request::last_user_text(body).is_some_and(|text| {
        text.lines()
            .any(|l| l.trim_start().starts_with(SUMMARY_REQUEST_PREFIX))
    })
}

/// mock-llm's answer to a summary request: one text block
/// `<summary>…</summary>` quoting the user's requests (the last text of
/// each user message that has text, newest [`SUMMARY_QUOTES`], each cut to
/// [`SUMMARY_QUOTE_CHARS`]) and counting the messages summarized.
pub fn summary_entry(body: &Value) -> Entry {
    summary_answer(body, None)
}

/// The answer to a summary request: `scripted` (a script's `summary`)
/// when given, else [`summary_entry`]'s own summary.
pub fn summary_answer(body: &Value, scripted: Option<&str>) -> Entry {
    if let Some(text) = scripted {
        return Entry {
            content: vec![Block::Text {
                text: text.to_string(),
            }],
            ..Entry::default()
        };
    }
    let msgs = messages(body);
    let mut quotes: Vec<String> = msgs
        .iter()
        .filter(|m| role(m) == "user")
        .filter_map(last_text)
        .filter(|t| {
            !t.lines()
                .any(|l| l.trim_start().starts_with(SUMMARY_REQUEST_PREFIX))
        })
        .map(|t| {
            let one_line = t.split_whitespace().collect::<Vec<_>>().join(" ");
            one_line.chars().take(SUMMARY_QUOTE_CHARS).collect()
        })
        .collect();
    let skip = quotes.len().saturating_sub(SUMMARY_QUOTES);
    quotes.drain(..skip);
    let mut text = format!(
        "<summary>\nmock-llm summary of {} messages.\nUser requests:\n",
        msgs.len()
    );
    for q in quotes {
        text.push_str("- ");
        text.push_str(&q);
        text.push('\n');
    }
    text.push_str("</summary>");
    Entry {
        content: vec![Block::Text { text }],
        ..Entry::default()
    }
}

/// The last text of a user message: its string content, or its last
/// `text` block (`None` when it has none, e.g. only tool results).
fn last_text(message: &Value) -> Option<String> {
    match message.get("content") {
        Some(Value::String(s)) => Some(s.clone()),
        _ => blocks(message)
            .iter()
            .rev()
            .find(|b| block_type(b) == "text")
            .and_then(|b| b.get("text").and_then(Value::as_str))
            .map(str::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn texts_are_the_real_apis() {
        assert_eq!(
            prompt_too_long(210287, 200000),
            "prompt is too long: 210287 tokens > 200000 maximum"
        );
        assert_eq!(
            context_length_exceeded(130000, 128000),
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages."
        );
        assert_eq!(tokens(803), 200);
    }

    #[test]
    fn a_summary_request_is_recognised_and_quotes_the_user() {
        let body = json!({"messages":[
            {"role":"user","content":[{"type":"text","text":"ctx"},{"type":"text","text":"fix  the\ntest"}]},
            {"role":"assistant","content":[{"type":"text","text":"ok"}]},
            {"role":"user","content":[{"type":"text","text":"Write a summary of this conversation, please"}]}
        ]});
        assert!(is_summary_request(&body));
        let entry = summary_entry(&body);
        let Block::Text { text } = &entry.content[0] else {
            panic!("text")
        };
        assert_eq!(
            text,
            "<summary>\nmock-llm summary of 3 messages.\nUser requests:\n- fix the test\n</summary>"
        );
        assert!(!is_summary_request(&json!({"messages":[
            {"role":"user","content":"summarize it: Write a summary of this conversation"}
        ]})));
    }
}
