//! Turns a scripted [`Entry`] into what the real Messages API sends: the list of
//! SSE events of a streamed message, or the one JSON message of a
//! non-streaming request (Anthropic API docs, "Streaming Messages" and
//! "Messages").

use serde_json::{json, Value};

use crate::script::{Block, Entry};

/// One server-sent event: its `event:` name and its `data:` JSON (whose
/// `type` equals the name, as in the real API).
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// The event name, e.g. `content_block_delta`.
    pub event: &'static str,
    /// The event's JSON payload.
    pub data: Value,
}

impl SseEvent {
    /// The wire form: `event: <name>\ndata: <compact json>\n\n`.
    pub fn to_wire(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.event, self.data)
    }
}

/// Per-answer facts that do not come from the script entry.
#[derive(Debug, Clone)]
pub struct AnswerMeta {
    /// Message id, e.g. `msg_mock_1`.
    pub id: String,
    /// The model name echoed from the request (or `mock-llm`).
    pub model: String,
    /// Size of the request body in bytes, used for the default input_tokens.
    pub request_bytes: usize,
}

/// Splits `text` into pieces of at most `n` chars (Unicode scalar values,
/// never cutting one); `n` of 0 is taken as 1. Empty text gives no piece.
pub fn chunk_chars(text: &str, n: usize) -> Vec<String> {
    let n = n.max(1);
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// `(input_tokens, output_tokens)` for an entry: the scripted `usage`, else
/// request bytes / 4 (at least 1) and content chars / 4 (at least 1).
pub fn usage(entry: &Entry, meta: &AnswerMeta) -> (u64, u64) {
    if let Some(u) = entry.usage {
        return (u.input_tokens, u.output_tokens);
    }
    let out_chars: usize = entry
        .content
        .iter()
        .map(|b| match b {
            Block::Text { text } => text.chars().count(),
            Block::ToolUse { input, .. } => input.to_string().chars().count(),
        })
        .sum();
    (
        (meta.request_bytes / 4).max(1) as u64,
        (out_chars / 4).max(1) as u64,
    )
}

/// The `partial_json` pieces of a tool_use block: the raw `input_json` when
/// scripted (an empty string gives one empty piece), else the compact JSON
/// of `input`, split by `n` chars.
fn partial_json_pieces(input: &Value, input_json: &Option<String>, n: usize) -> Vec<String> {
    match input_json {
        Some(raw) if raw.is_empty() => vec![String::new()],
        Some(raw) => chunk_chars(raw, n),
        None => chunk_chars(&input.to_string(), n),
    }
}

/// The whole event sequence of a streamed answer, in order: `message_start`,
/// `ping`, then per block `content_block_start`, its deltas and
/// `content_block_stop`, then `message_delta` and `message_stop`.
pub fn sse_events(entry: &Entry, meta: &AnswerMeta) -> Vec<SseEvent> {
    let (input_tokens, output_tokens) = usage(entry, meta);
    let mut events = vec![
        SseEvent {
            event: "message_start",
            data: json!({
                "type": "message_start",
                "message": {
                    "id": meta.id,
                    "type": "message",
                    "role": "assistant",
                    "model": meta.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": {
                        "input_tokens": input_tokens,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0,
                        "output_tokens": 1
                    }
                }
            }),
        },
        SseEvent {
            event: "ping",
            data: json!({"type": "ping"}),
        },
    ];
    for (index, block) in entry.content.iter().enumerate() {
        let (start, deltas) = match block {
            Block::Text { text } => (
                json!({"type": "text", "text": ""}),
                chunk_chars(text, entry.text_chunk())
                    .into_iter()
                    .map(|piece| json!({"type": "text_delta", "text": piece}))
                    .collect::<Vec<_>>(),
            ),
            Block::ToolUse {
                id,
                name,
                input,
                input_json,
            } => (
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                partial_json_pieces(input, input_json, entry.json_chunk())
                    .into_iter()
                    .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                    .collect(),
            ),
        };
        events.push(SseEvent {
            event: "content_block_start",
            data: json!({"type": "content_block_start", "index": index, "content_block": start}),
        });
        for delta in deltas {
            events.push(SseEvent {
                event: "content_block_delta",
                data: json!({"type": "content_block_delta", "index": index, "delta": delta}),
            });
        }
        events.push(SseEvent {
            event: "content_block_stop",
            data: json!({"type": "content_block_stop", "index": index}),
        });
    }
    events.push(SseEvent {
        event: "message_delta",
        data: json!({
            "type": "message_delta",
            "delta": {"stop_reason": entry.effective_stop_reason(), "stop_sequence": null},
            "usage": {"output_tokens": output_tokens}
        }),
    });
    events.push(SseEvent {
        event: "message_stop",
        data: json!({"type": "message_stop"}),
    });
    events
}

/// The SSE `error` event the real API sends mid-stream, e.g. for
/// `overloaded_error`.
pub fn sse_error_event(error_type: &str, message: &str) -> SseEvent {
    SseEvent {
        event: "error",
        data: crate::api_error::error_body(error_type, message),
    }
}

/// The non-streaming answer: one Messages API message object with the whole
/// content (tool_use `input` as scripted; `input_json` is ignored here).
pub fn json_message(entry: &Entry, meta: &AnswerMeta) -> Value {
    let (input_tokens, output_tokens) = usage(entry, meta);
    let content: Vec<Value> = entry
        .content
        .iter()
        .map(|b| match b {
            Block::Text { text } => json!({"type": "text", "text": text}),
            Block::ToolUse {
                id, name, input, ..
            } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        })
        .collect();
    json!({
        "id": meta.id,
        "type": "message",
        "role": "assistant",
        "model": meta.model,
        "content": content,
        "stop_reason": entry.effective_stop_reason(),
        "stop_sequence": null,
        "usage": {
            "input_tokens": input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": output_tokens
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Script;

    fn meta() -> AnswerMeta {
        AnswerMeta {
            id: "msg_mock_1".into(),
            model: "m".into(),
            request_bytes: 40,
        }
    }

    #[test]
    fn chunks_on_char_boundaries() {
        assert_eq!(chunk_chars("héllo wörld", 3), ["hél", "lo ", "wör", "ld"]);
        assert_eq!(chunk_chars("🦀🦀🦀", 2), ["🦀🦀", "🦀"]);
        assert!(chunk_chars("", 4).is_empty());
        assert_eq!(chunk_chars("ab", 0), ["a", "b"]);
    }

    #[test]
    fn event_sequence_has_the_api_shape() {
        let script = Script::from_json(
            r#"{"responses":[{"text_chunk_chars":4,"json_chunk_chars":5,"content":[
                {"type":"text","text":"Hi there"},
                {"type":"tool_use","id":"t1","name":"Read","input":{"a":1}}]}]}"#,
        )
        .unwrap();
        let events = sse_events(&script.responses[0], &meta());
        let names: Vec<&str> = events.iter().map(|e| e.event).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(
            events[6].to_wire(),
            "event: content_block_start\ndata: {\"content_block\":{\"id\":\"t1\",\"input\":{},\"name\":\"Read\",\"type\":\"tool_use\"},\"index\":1,\"type\":\"content_block_start\"}\n\n"
        );
        assert_eq!(events[7].data["delta"]["partial_json"], "{\"a\":");
        assert_eq!(events[8].data["delta"]["partial_json"], "1}");
        assert_eq!(events[10].data["delta"]["stop_reason"], "tool_use");
        // "Hi there" (8 chars) + {"a":1} (7 chars) = 15 chars → 15 / 4 = 3 tokens.
        assert_eq!(events[10].data["usage"]["output_tokens"], 3);
    }

    #[test]
    fn raw_input_json_is_sent_verbatim_and_empty_gives_one_empty_delta() {
        let script = Script::from_json(
            r#"{"responses":[{"content":[
                {"type":"tool_use","id":"t1","name":"Read","input_json":""},
                {"type":"tool_use","id":"t2","name":"Read","input_json":"{\"file_pa"}]}]}"#,
        )
        .unwrap();
        let events = sse_events(&script.responses[0], &meta());
        let partials: Vec<&Value> = events
            .iter()
            .filter(|e| e.event == "content_block_delta")
            .map(|e| &e.data["delta"]["partial_json"])
            .collect();
        assert_eq!(partials, [&json!(""), &json!("{\"file_pa")]);
    }
}
