//! The Messages-shaped request lathe builds, as a chat completions request
//! body (<https://platform.openai.com/docs/api-reference/chat/create>).
//!
//! The transcript stays Messages-shaped (docs/provider.md, "The model
//! protocol"); this is the one place that turns it into chat messages:
//!
//! - `system` → a first `{"role":"system"}` message (left out when empty);
//! - a user message → one `{"role":"tool","tool_call_id","content"}` message
//!   per `tool_result`, in order, then one `{"role":"user"}` message with the
//!   rest: a string when it is one text block, else content parts (`text`,
//!   and `image_url` with a `data:` URL for each image);
//! - an assistant message → one `{"role":"assistant"}` message: its text
//!   blocks joined with a blank line as `content` (`""` when there is none)
//!   and its `tool_use` blocks as `tool_calls` (`arguments` is the input's
//!   JSON text);
//! - `thinking`, `redacted_thinking` and opaque blocks are dropped: they are
//!   the Messages API's own, and no chat completions server takes them
//!   back; a message left with nothing is dropped too;
//! - tools → `{"type":"function","function":{name, description,
//!   parameters}}`, `parameters` being the tool's `input_schema`;
//! - `max_tokens` as `max_tokens` (the newer `max_completion_tokens` is not
//!   accepted by every server); with `stream`, also `stream_options:
//!   {"include_usage": true}` (OpenAI sends usage only when asked).
//!
//! Every `tool_use` is answered by a `tool_result` in the next user message
//! (`Transcript` keeps that pairing), so every `tool_calls` entry is
//! answered by a `tool` message right after its assistant message, as the
//! API requires.

use serde_json::{json, Map, Value};

use crate::protocol::{
    ContentBlock, ImageSource, Message, MessagesRequest, Role, ToolDefinition, ToolResult,
    ToolResultContent,
};
use crate::text::fill;

/// Model-facing: stands in a `tool` message for an image of a tool result
/// (tool messages carry text only). `{media_type}` is the image's type,
/// e.g. `image/png`.
pub const TOOL_RESULT_IMAGE_NOTE: &str = "[{media_type} image not shown: tool results sent through this model API can carry only text, so you cannot see it]";

/// Separator between the text blocks of one assistant message.
const TEXT_JOIN: &str = "\n\n";

/// The chat completions body for `req`: `model`, `max_tokens`, `messages`
/// (see [`chat_messages`]), `tools` (see [`chat_tools`]; left out when there
/// are none) and `stream` as given; when `stream` is `true` also
/// `stream_options: {"include_usage": true}`. `req.stream` is ignored. Pure.
pub fn chat_request(req: &MessagesRequest, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(req.model));
    body.insert("max_tokens".into(), json!(req.max_tokens));
    body.insert(
        "messages".into(),
        Value::Array(chat_messages(&req.system, &req.messages)),
    );
    if !req.tools.is_empty() {
        body.insert("tools".into(), Value::Array(chat_tools(&req.tools)));
    }
    body.insert("stream".into(), json!(stream));
    if stream {
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

/// The chat messages for `system` and `messages`, by the rules of the module
/// doc. Pure.
pub fn chat_messages(system: &str, messages: &[std::sync::Arc<Message>]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        match message.role {
            Role::User => user_messages(&message.content, &mut out),
            Role::Assistant => out.extend(assistant_message(&message.content)),
        }
    }
    out
}

/// The `tools` array for `tools`: each as a function whose `parameters` is
/// its `input_schema`. Pure.
pub fn chat_tools(tools: &[ToolDefinition]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| {
            json!({
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                }
            })
        })
        .collect()
}

/// A user message's blocks: its tool results as `tool` messages, then its
/// text and images as one `user` message (none when there are none).
fn user_messages(blocks: &[ContentBlock], out: &mut Vec<Value>) {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::ToolResult(r) => out.push(tool_message(r)),
            ContentBlock::Text { text } => parts.push(json!({"type": "text", "text": text})),
            ContentBlock::Image { source } => parts.push(json!({
                "type": "image_url",
                "image_url": {"url": data_url(source)},
            })),
            ContentBlock::ToolUse(_)
            | ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::Opaque(_) => {}
        }
    }
    let content = match parts.as_slice() {
        [] => return,
        [only] if only["type"] == "text" => only["text"].clone(),
        _ => Value::Array(parts),
    };
    out.push(json!({"role": "user", "content": content}));
}

/// An assistant message's text and tool calls as one message; `None` when it
/// has neither.
fn assistant_message(blocks: &[ContentBlock]) -> Option<Value> {
    let mut texts = Vec::new();
    let mut calls = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text { text } if !text.is_empty() => texts.push(text.as_str()),
            ContentBlock::ToolUse(t) => calls.push(json!({
                "id": t.id,
                "type": "function",
                "function": {"name": t.name, "arguments": t.input.to_string()},
            })),
            _ => {}
        }
    }
    if texts.is_empty() && calls.is_empty() {
        return None;
    }
    let mut msg = Map::new();
    msg.insert("role".into(), json!("assistant"));
    msg.insert("content".into(), json!(texts.join(TEXT_JOIN)));
    if !calls.is_empty() {
        msg.insert("tool_calls".into(), Value::Array(calls));
    }
    Some(Value::Object(msg))
}

/// A `tool_result` as a `tool` message: its text, each image replaced by
/// [`TOOL_RESULT_IMAGE_NOTE`], blocks joined with `\n`.
fn tool_message(result: &ToolResult) -> Value {
    let content = match &result.content {
        ToolResultContent::Text(s) => s.clone(),
        ToolResultContent::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.clone()),
                ContentBlock::Image { source } => Some(fill(
                    TOOL_RESULT_IMAGE_NOTE,
                    &[("media_type", &source.media_type)],
                )),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    json!({"role": "tool", "tool_call_id": result.tool_use_id, "content": content})
}

/// `data:<media type>;base64,<data>`.
fn data_url(source: &ImageSource) -> String {
    format!("data:{};base64,{}", source.media_type, source.data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn image_note_golden() {
        assert_eq!(
            fill(TOOL_RESULT_IMAGE_NOTE, &[("media_type", "image/png")]),
            "[image/png image not shown: tool results sent through this model API can carry only text, so you cannot see it]"
        );
    }

    #[test]
    fn non_streaming_body_has_no_stream_options_and_no_empty_tools() {
        let req = MessagesRequest {
            model: "m".into(),
            max_tokens: 5,
            system: String::new(),
            messages: crate::protocol::shared(vec![Message::user_text("hi")]),
            tools: vec![],
            stream: true,
        };
        assert_eq!(
            chat_request(&req, false),
            json!({
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "hi"}],
                "stream": false,
            })
        );
    }

    #[test]
    fn a_message_of_only_dropped_blocks_is_dropped() {
        let msgs = vec![
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::Thinking {
                    thinking: "t".into(),
                    signature: String::new(),
                }],
            },
            Message {
                role: Role::User,
                content: vec![ContentBlock::Opaque(json!({"type": "x"}))],
            },
        ];
        assert_eq!(
            chat_messages("", &crate::protocol::shared(msgs)),
            Vec::<Value>::new()
        );
    }
}
