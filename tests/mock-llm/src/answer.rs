//! Turns a scripted [`Entry`] into what the real Messages API sends: the list of
//! SSE events of a streamed message, or the one JSON message of a
//! non-streaming request (Anthropic API docs, "Streaming Messages" and
//! "Messages").

use serde_json::{json, Value};

use crate::prompt_cache::CacheCounts;
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
    /// The prompt cache simulation's counts for the request (zero without
    /// `cache_control` breakpoints, and on `/v1/chat/completions`).
    pub cache: CacheCounts,
    /// The request's `max_tokens`: the output an answer stopped by
    /// `max_tokens` reports, as the real API does.
    pub max_tokens: Option<u64>,
}

/// The token counts of an answer (Messages API `usage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tokens {
    /// `input_tokens`: the uncached input.
    pub input: u64,
    /// `output_tokens`.
    pub output: u64,
    /// `cache_creation_input_tokens`.
    pub cache_creation: u64,
    /// `cache_read_input_tokens`.
    pub cache_read: u64,
}

/// Splits `text` into pieces of at most `n` chars (Unicode scalar values,
/// never cutting one); `n` of 0 is taken as 1. Empty text gives no piece.
pub fn chunk_chars(text: &str, n: usize) -> Vec<String> {
    let n = n.max(1);
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(n).map(|c| c.iter().collect()).collect()
}

/// The token counts of an entry's answer: the scripted `usage` as given
/// (cache counts 0 unless scripted), else: input = the request bytes not
/// covered by a cache breakpoint / 4 (at least 1), output = content chars / 4
/// (at least 1; a raw block counts its compact JSON), cache counts from the
/// prompt cache simulation ([`AnswerMeta::cache`]).
pub fn usage(entry: &Entry, meta: &AnswerMeta) -> Tokens {
    if let Some(u) = entry.usage {
        return Tokens {
            input: u.input_tokens,
            output: u.output_tokens,
            cache_creation: u.cache_creation_input_tokens,
            cache_read: u.cache_read_input_tokens,
        };
    }
    let out_chars: usize = entry
        .content
        .iter()
        .map(|b| match b {
            Block::Text { text } => text.chars().count(),
            Block::ToolUse { input, .. } => input.to_string().chars().count(),
            Block::Raw { block, .. } => block.to_string().chars().count(),
        })
        .sum();
    let uncached = meta.request_bytes.saturating_sub(meta.cache.cached_bytes);
    let written = (out_chars / 4).max(1) as u64;
    let output = match meta.max_tokens {
        Some(max) if entry.effective_stop_reason() == "max_tokens" => max,
        _ => written,
    };
    Tokens {
        input: (uncached / 4).max(1) as u64,
        output,
        cache_creation: meta.cache.creation,
        cache_read: meta.cache.read,
    }
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
    let tokens = usage(entry, meta);
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
                        "input_tokens": tokens.input,
                        "cache_creation_input_tokens": tokens.cache_creation,
                        "cache_read_input_tokens": tokens.cache_read,
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
            Block::Raw { block, deltas } => (block.clone(), deltas.clone()),
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
    let mut delta = json!({"stop_reason": entry.effective_stop_reason(), "stop_sequence": null});
    if let Some(details) = &entry.stop_details {
        delta["stop_details"] = details.clone();
    }
    events.push(SseEvent {
        event: "message_delta",
        data: json!({
            "type": "message_delta",
            "delta": delta,
            "usage": {"output_tokens": tokens.output}
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
/// content (tool_use `input` as scripted; `input_json` is ignored here; raw
/// blocks as written), and `stop_details` when scripted.
pub fn json_message(entry: &Entry, meta: &AnswerMeta) -> Value {
    let tokens = usage(entry, meta);
    let content: Vec<Value> = entry
        .content
        .iter()
        .map(|b| match b {
            Block::Text { text } => json!({"type": "text", "text": text}),
            Block::ToolUse {
                id, name, input, ..
            } => json!({"type": "tool_use", "id": id, "name": name, "input": input}),
            Block::Raw { block, .. } => block.clone(),
        })
        .collect();
    let mut message = json!({
        "id": meta.id,
        "type": "message",
        "role": "assistant",
        "model": meta.model,
        "content": content,
        "stop_reason": entry.effective_stop_reason(),
        "stop_sequence": null,
        "usage": {
            "input_tokens": tokens.input,
            "cache_creation_input_tokens": tokens.cache_creation,
            "cache_read_input_tokens": tokens.cache_read,
            "output_tokens": tokens.output
        }
    });
    if let Some(details) = &entry.stop_details {
        message["stop_details"] = details.clone();
    }
    message
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
            cache: CacheCounts::default(),
            max_tokens: Some(4096),
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

    #[test]
    fn a_raw_block_is_started_as_written_and_stopped_without_deltas() {
        let raw = json!({"type":"server_tool_use","id":"srvtoolu_01","name":"web_search",
                         "input":{"query":"x"}});
        let script = Script::from_json(
            &json!({"responses":[{"content":[
                {"type":"raw","block":raw},
                {"type":"text","text":"ok"}]}]})
            .to_string(),
        )
        .unwrap();
        let entry = &script.responses[0];
        let events = sse_events(entry, &meta());
        let names: Vec<&str> = events.iter().map(|e| e.event).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop"
            ]
        );
        assert_eq!(
            events[2].data,
            json!({"type":"content_block_start","index":0,"content_block":raw})
        );
        assert_eq!(
            events[3].data,
            json!({"type":"content_block_stop","index":0})
        );
        assert_eq!(events[4].data["index"], 1);
        // A raw block does not make the default stop reason tool_use.
        assert_eq!(events[7].data["delta"]["stop_reason"], "end_turn");
        // Output tokens: the raw block's compact JSON plus "ok".
        let chars = raw.to_string().chars().count() + 2;
        assert_eq!(events[7].data["usage"]["output_tokens"], (chars / 4) as u64);
        let message = json_message(entry, &meta());
        assert_eq!(
            message["content"],
            json!([raw, {"type":"text","text":"ok"}])
        );
    }

    #[test]
    fn stop_details_is_sent_only_when_scripted() {
        let details = json!({"type":"refusal","category":"cyber","explanation":"no"});
        let script = Script::from_json(
            &json!({"responses":[
                {},
                {"stop_reason":"refusal","stop_details":details},
                {"stop_details":null}]})
            .to_string(),
        )
        .unwrap();
        let delta = |i: usize| {
            sse_events(&script.responses[i], &meta())
                .into_iter()
                .find(|e| e.event == "message_delta")
                .unwrap()
        };
        // Not scripted: today's bytes exactly.
        assert_eq!(
            delta(0).to_wire(),
            "event: message_delta\ndata: {\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"type\":\"message_delta\",\"usage\":{\"output_tokens\":1}}\n\n"
        );
        assert!(json_message(&script.responses[0], &meta())
            .get("stop_details")
            .is_none());
        assert_eq!(
            delta(1).data["delta"],
            json!({"stop_reason":"refusal","stop_sequence":null,"stop_details":details})
        );
        let message = json_message(&script.responses[1], &meta());
        assert_eq!(message["stop_reason"], "refusal");
        assert_eq!(message["stop_details"], details);
        assert_eq!(delta(2).data["delta"]["stop_details"], Value::Null);
        assert_eq!(
            json_message(&script.responses[2], &meta()).get("stop_details"),
            Some(&Value::Null)
        );
    }

    #[test]
    fn an_answer_stopped_by_max_tokens_reports_max_tokens_of_output() {
        let script = Script::from_json(
            r#"{"responses":[{"content":[{"type":"text","text":"Half"}],"stop_reason":"max_tokens"},
                {"content":[{"type":"text","text":"Half"}],"stop_reason":"model_context_window_exceeded"}]}"#,
        )
        .unwrap();
        assert_eq!(usage(&script.responses[0], &meta()).output, 4096);
        assert_eq!(usage(&script.responses[1], &meta()).output, 1);
        let unknown = AnswerMeta {
            max_tokens: None,
            ..meta()
        };
        assert_eq!(usage(&script.responses[0], &unknown).output, 1);
    }

    #[test]
    fn cache_counts_come_from_the_meta_unless_usage_is_scripted() {
        let script = Script::from_json(
            r#"{"responses":[{},
                {"usage":{"input_tokens":5,"output_tokens":6,"cache_read_input_tokens":7}}]}"#,
        )
        .unwrap();
        let mut cached = meta();
        cached.request_bytes = 400;
        cached.cache = CacheCounts {
            cached_bytes: 300,
            creation: 20,
            read: 55,
        };
        let message = json_message(&script.responses[0], &cached);
        assert_eq!(
            message["usage"],
            json!({"input_tokens":25,"cache_creation_input_tokens":20,
                   "cache_read_input_tokens":55,"output_tokens":1})
        );
        let start = &sse_events(&script.responses[0], &cached)[0].data["message"]["usage"];
        assert_eq!(
            start,
            &json!({"input_tokens":25,"cache_creation_input_tokens":20,
                    "cache_read_input_tokens":55,"output_tokens":1})
        );
        let scripted = json_message(&script.responses[1], &cached);
        assert_eq!(
            scripted["usage"],
            json!({"input_tokens":5,"cache_creation_input_tokens":0,
                   "cache_read_input_tokens":7,"output_tokens":6})
        );
        // Without breakpoints, input is the whole body as before.
        assert_eq!(
            json_message(&script.responses[0], &meta())["usage"]["input_tokens"],
            10
        );
    }
}
