//! Turns a scripted [`Entry`] into OpenAI's chat completions answer: the
//! `chat.completion.chunk`s of a streamed answer (each one `data:` line), or
//! the one `chat.completion` object of a non-streaming request.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::answer::{chunk_chars, usage, AnswerMeta};
use crate::prompt_cache::CacheCounts;
use crate::script::{Block, Entry};

/// The last `data:` line of a stream that ended normally.
pub const DONE: &str = "data: [DONE]\n\n";

/// Per-answer facts that do not come from the script entry.
#[derive(Debug, Clone)]
pub struct ChatMeta {
    /// Completion id, e.g. `chatcmpl-mock-1` (the same in every chunk).
    pub id: String,
    /// `created`: Unix seconds when the answer was made (the same in every
    /// chunk).
    pub created: u64,
    /// The model name echoed from the request (or `mock-llm`).
    pub model: String,
    /// Size of the request body in bytes, for the default `prompt_tokens`.
    pub request_bytes: usize,
    /// The request's `stream_options.include_usage`: add the usage chunk
    /// (and `"usage": null` on every other chunk, as OpenAI does).
    pub include_usage: bool,
    /// The request's `max_tokens` (or `max_completion_tokens`).
    pub max_tokens: Option<u64>,
}

impl ChatMeta {
    /// The meta of the answer to request number `number` (1-based, counting
    /// every request) with body `request` of `request_bytes` bytes.
    pub fn new(request: &Value, number: usize, request_bytes: usize) -> ChatMeta {
        ChatMeta {
            id: format!("chatcmpl-mock-{number}"),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            model: request
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or("mock-llm")
                .to_string(),
            request_bytes,
            include_usage: request
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                == Some(true),
            max_tokens: request
                .get("max_completion_tokens")
                .or_else(|| request.get("max_tokens"))
                .and_then(Value::as_u64),
        }
    }

    /// `(prompt_tokens, completion_tokens)`: the script's `usage`
    /// (input_tokens, output_tokens; its cache counts are not sent here),
    /// else the defaults of the Messages path (no prompt cache on this
    /// endpoint).
    fn tokens(&self, entry: &Entry) -> (u64, u64) {
        let meta = AnswerMeta {
            id: self.id.clone(),
            model: self.model.clone(),
            request_bytes: self.request_bytes,
            cache: CacheCounts::default(),
            max_tokens: self.max_tokens,
        };
        let tokens = usage(entry, &meta);
        (tokens.input, tokens.output)
    }

    fn usage_value(&self, entry: &Entry) -> Value {
        let (prompt, completion) = self.tokens(entry);
        json!({
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion
        })
    }
}

/// OpenAI's `finish_reason` for the entry's stop reason: `end_turn`,
/// `stop_sequence` and `pause_turn` → `stop` (OpenAI has no paused turn),
/// `tool_use` → `tool_calls`, `max_tokens` → `length`, `refusal` →
/// `content_filter`, `model_context_window_exceeded` → `length` (as
/// llama.cpp ends an answer that filled its context window: its output is
/// then shorter than `max_tokens`); any other value is sent as written (so
/// a script may give OpenAI's own values).
pub fn finish_reason(entry: &Entry) -> String {
    let reason = entry.effective_stop_reason();
    match reason.as_str() {
        "end_turn" | "stop_sequence" | "pause_turn" => "stop".into(),
        "tool_use" => "tool_calls".into(),
        "max_tokens" | "model_context_window_exceeded" => "length".into(),
        "refusal" => "content_filter".into(),
        _ => reason,
    }
}

/// The `arguments` string of a tool call: `input_json` verbatim when
/// scripted, else the compact JSON of `input`.
fn arguments(input: &Value, input_json: &Option<String>) -> String {
    input_json.clone().unwrap_or_else(|| input.to_string())
}

/// The streamed `arguments` pieces: none for an empty string or an input of
/// `{}` (the first delta's `""` is all, as real servers send), else the
/// arguments split by `n` chars.
fn argument_pieces(input: &Value, input_json: &Option<String>, n: usize) -> Vec<String> {
    if input_json.is_none() && input.as_object().is_some_and(|o| o.is_empty()) {
        return Vec::new();
    }
    chunk_chars(&arguments(input, input_json), n)
}

/// Every `data:` payload of a streamed answer, in order (without `[DONE]`):
/// the role delta, text deltas, per tool call its opening delta and
/// `arguments` deltas, the `finish_reason` chunk, then the usage chunk when
/// asked for.
pub fn chunks(entry: &Entry, meta: &ChatMeta) -> Vec<Value> {
    let chunk = |delta: Value, finish: Option<String>| {
        let mut c = json!({
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
        });
        if meta.include_usage {
            c["usage"] = Value::Null;
        }
        c
    };
    let mut out = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    let mut call_index = 0usize;
    for block in &entry.content {
        match block {
            Block::Text { text } => {
                for piece in chunk_chars(text, entry.text_chunk()) {
                    out.push(chunk(json!({"content": piece}), None));
                }
            }
            Block::ToolUse {
                id,
                name,
                input,
                input_json,
            } => {
                out.push(chunk(
                    json!({"tool_calls": [{
                        "index": call_index, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""}
                    }]}),
                    None,
                ));
                for piece in argument_pieces(input, input_json, entry.json_chunk()) {
                    out.push(chunk(
                        json!({"tool_calls": [{
                            "index": call_index, "function": {"arguments": piece}
                        }]}),
                        None,
                    ));
                }
                call_index += 1;
            }
            Block::Raw { .. } => {}
        }
    }
    out.push(chunk(json!({}), Some(finish_reason(entry))));
    if meta.include_usage {
        out.push(json!({
            "id": meta.id,
            "object": "chat.completion.chunk",
            "created": meta.created,
            "model": meta.model,
            "choices": [],
            "usage": meta.usage_value(entry)
        }));
    }
    out
}

/// The wire form of one chunk: `data: <compact json>\n\n`.
pub fn to_wire(chunk: &Value) -> String {
    format!("data: {chunk}\n\n")
}

/// The whole body of a streamed answer: every chunk of [`chunks`], then
/// [`DONE`].
pub fn stream_wire(entry: &Entry, meta: &ChatMeta) -> Vec<String> {
    let mut wire: Vec<String> = chunks(entry, meta).iter().map(to_wire).collect();
    wire.push(DONE.to_string());
    wire
}

/// The non-streaming answer: one `chat.completion` object. `content` is the
/// text blocks joined (no separator, as a streamed answer reassembles), or
/// `null` without text blocks; `tool_calls` (present only when the entry has
/// tool_use blocks) carry `arguments` as a string (`input_json` verbatim when
/// scripted, else the compact JSON of `input`).
pub fn completion(entry: &Entry, meta: &ChatMeta) -> Value {
    let texts: Vec<&str> = entry
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            Block::ToolUse { .. } | Block::Raw { .. } => None,
        })
        .collect();
    let content = if texts.is_empty() {
        Value::Null
    } else {
        Value::String(texts.concat())
    };
    let calls: Vec<Value> = entry
        .content
        .iter()
        .filter_map(|b| match b {
            Block::ToolUse {
                id,
                name,
                input,
                input_json,
            } => Some(json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": arguments(input, input_json)}
            })),
            Block::Text { .. } | Block::Raw { .. } => None,
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(entry)}],
        "usage": meta.usage_value(entry)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Script;

    fn meta(include_usage: bool) -> ChatMeta {
        ChatMeta {
            id: "chatcmpl-mock-1".into(),
            created: 7,
            model: "m".into(),
            request_bytes: 40,
            include_usage,
            max_tokens: Some(4096),
        }
    }

    fn entry(json: &str) -> Entry {
        Script::from_json(&format!(r#"{{"responses":[{json}]}}"#))
            .unwrap()
            .responses
            .remove(0)
    }

    fn deltas(chunks: &[Value]) -> Vec<&Value> {
        chunks.iter().map(|c| &c["choices"][0]["delta"]).collect()
    }

    #[test]
    fn text_and_a_tool_call_stream_in_openai_chunks() {
        let e = entry(
            r#"{"text_chunk_chars":4,"json_chunk_chars":5,"content":[
                {"type":"text","text":"Hi there"},
                {"type":"tool_use","id":"t1","name":"Read","input":{"a":1}}]}"#,
        );
        let chunks = chunks(&e, &meta(false));
        assert_eq!(
            deltas(&chunks),
            [
                &json!({"role":"assistant","content":""}),
                &json!({"content":"Hi t"}),
                &json!({"content":"here"}),
                &json!({"tool_calls":[{"index":0,"id":"t1","type":"function",
                                       "function":{"name":"Read","arguments":""}}]}),
                &json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]}),
                &json!({"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}),
                &json!({}),
            ]
        );
        assert_eq!(chunks[6]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(
            to_wire(&chunks[1]),
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hi t\"},\"finish_reason\":null,\"index\":0}],\"created\":7,\"id\":\"chatcmpl-mock-1\",\"model\":\"m\",\"object\":\"chat.completion.chunk\"}\n\n"
        );
    }

    #[test]
    fn empty_input_sends_only_the_opening_delta_and_raw_json_is_verbatim() {
        let e = entry(
            r#"{"content":[
                {"type":"tool_use","id":"a","name":"Glob"},
                {"type":"tool_use","id":"b","name":"Read","input_json":"{\"fi"}]}"#,
        );
        let chunks = chunks(&e, &meta(false));
        assert_eq!(chunks.len(), 5);
        assert_eq!(
            chunks[2]["choices"][0]["delta"],
            json!({"tool_calls":[{"index":1,"id":"b","type":"function",
                                  "function":{"name":"Read","arguments":""}}]})
        );
        assert_eq!(
            chunks[3]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"],
            "{\"fi"
        );
    }

    #[test]
    fn usage_chunk_only_when_asked_and_stop_reasons_map() {
        let e =
            entry(r#"{"stop_reason":"max_tokens","usage":{"input_tokens":3,"output_tokens":4}}"#);
        let plain = chunks(&e, &meta(false));
        assert_eq!(plain.len(), 2);
        assert!(plain[1].get("usage").is_none());
        let with = chunks(&e, &meta(true));
        assert_eq!(with.len(), 3);
        assert_eq!(with[1]["usage"], Value::Null);
        assert_eq!(with[1]["choices"][0]["finish_reason"], "length");
        assert_eq!(with[2]["choices"], json!([]));
        assert_eq!(
            with[2]["usage"],
            json!({"prompt_tokens":3,"completion_tokens":4,"total_tokens":7})
        );
        for (reason, finish) in [
            ("end_turn", "stop"),
            ("stop_sequence", "stop"),
            ("pause_turn", "stop"),
            ("max_tokens", "length"),
            ("model_context_window_exceeded", "length"),
            ("refusal", "content_filter"),
            ("tool_use", "tool_calls"),
            ("function_call", "function_call"),
        ] {
            let e = entry(&format!(r#"{{"stop_reason":"{reason}"}}"#));
            assert_eq!(finish_reason(&e), finish);
        }
    }

    #[test]
    fn completion_object_has_the_openai_shape() {
        let e = entry(
            r#"{"usage":{"input_tokens":10,"output_tokens":2},"content":[
                {"type":"text","text":"a"},{"type":"text","text":"b"},
                {"type":"tool_use","id":"t","name":"Glob"}]}"#,
        );
        assert_eq!(
            completion(&e, &meta(false)),
            json!({"id":"chatcmpl-mock-1","object":"chat.completion","created":7,"model":"m",
                "choices":[{"index":0,"finish_reason":"tool_calls","message":{
                    "role":"assistant","content":"ab",
                    "tool_calls":[{"id":"t","type":"function",
                                   "function":{"name":"Glob","arguments":"{}"}}]}}],
                "usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}})
        );
        let message = &completion(&entry("{}"), &meta(false))["choices"][0]["message"];
        assert_eq!(message, &json!({"role":"assistant","content":null}));
    }

    #[test]
    fn raw_blocks_and_stop_details_are_left_out() {
        let e = entry(
            r#"{"stop_reason":"refusal","stop_details":{"type":"refusal"},"content":[
                {"type":"raw","block":{"type":"server_tool_use","id":"s","name":"web_search","input":{}}},
                {"type":"text","text":"no"},
                {"type":"raw","block":{"type":"web_search_tool_result","tool_use_id":"s","content":[]}}]}"#,
        );
        let chunks = chunks(&e, &meta(false));
        assert_eq!(
            deltas(&chunks),
            [
                &json!({"role":"assistant","content":""}),
                &json!({"content":"no"}),
                &json!({})
            ]
        );
        assert_eq!(chunks[2]["choices"][0]["finish_reason"], "content_filter");
        let message = completion(&e, &meta(false));
        assert_eq!(
            message["choices"][0]["message"],
            json!({"role":"assistant","content":"no"})
        );
        assert!(!message.to_string().contains("stop_details"));
        assert_eq!(message["choices"][0]["finish_reason"], "content_filter");
    }
}
