//! Folds the [`StreamEvent`]s of one streaming answer into the assistant
//! [`Message`], reporting what each event changed.
//!
//! Rules (Messages API streaming,
//! <https://docs.anthropic.com/en/api/messages-streaming>):
//! - blocks are keyed by their `index`; deltas of different blocks may
//!   interleave;
//! - `partial_json` pieces are joined per block and parsed once, at the
//!   block's `content_block_stop`; no pieces (or only empty ones) means the
//!   `input` of `content_block_start` (the API sends `{}` there);
//! - a block enters the message only when its `content_block_stop` arrived,
//!   so [`MessageAssembler::message`] is a valid request message at any
//!   moment — at the normal end and after an interruption.
//!
//! Events that do not fit (a delta or stop for an index that never started
//! or already stopped, a second start for an open index, a delta of the wrong
//! kind for its block, `ping`, unknown events) are ignored: `push` returns
//! `None`. Such events mean a server bug or a block type lathe does not model
//! (`sse.rs` decodes those starts as [`StreamEvent::Unknown`]), and dropping
//! them keeps the transcript valid.

use std::collections::BTreeMap;

use serde_json::Value;

use super::limits::{
    cut_at_char, json_deeper_than, MAX_TOOL_CALLS_PER_ANSWER, MAX_TOOL_INPUT_BYTES,
    MAX_TOOL_INPUT_DEPTH, MAX_TOOL_NAME_BYTES, TOOL_INPUT_TOO_DEEP, TOOL_INPUT_TOO_LARGE,
    TOOL_NAME_TOO_LONG, TOO_MANY_TOOL_CALLS,
};
use crate::protocol::{
    ContentBlock, ContentBlockDelta, Message, Role, StopReason, StreamEvent, ToolUse, Usage,
};
use crate::text::fill;

/// What one event changed, for the chat and the tool executor.
#[derive(Debug, Clone, PartialEq)]
pub enum Assembled {
    /// `message_start`: the answer's `msg_…` id and model id.
    MessageStarted {
        /// `msg_…` id.
        id: String,
        /// Model that answers.
        model: String,
    },
    /// A piece of text for the block at `index`, to stream into the chat.
    TextDelta {
        /// Block index.
        index: usize,
        /// The new text (not the whole block).
        text: String,
    },
    /// A piece of extended-thinking text for the block at `index`.
    ThinkingDelta {
        /// Block index.
        index: usize,
        /// The new thinking text.
        text: String,
    },
    /// A `tool_use` block opened; its input is still streaming.
    ToolUseStarted {
        /// Block index.
        index: usize,
        /// `toolu_…` id.
        id: String,
        /// Tool name as the model wrote it.
        name: String,
    },
    /// A `tool_use` block is complete (its `content_block_stop` arrived):
    /// start running it.
    ToolUseComplete(CompletedToolUse),
    /// `message_delta` carried a `stop_reason`.
    StopReason(StopReason),
    /// `message_stop`: the answer is complete.
    MessageStop,
}

/// A `tool_use` block whose `content_block_stop` arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletedToolUse {
    /// Block index in the message.
    pub index: usize,
    /// `toolu_…` id; the `tool_result` must carry it.
    pub id: String,
    /// Tool name as the model wrote it (may be unknown or an alias).
    pub name: String,
    /// The parsed input object, or why it could not be parsed.
    pub input: Result<Value, InvalidToolInput>,
    /// The call is over one of the answer's caps ([`super::limits`]): the
    /// whole model-facing result, given without running it. `input` is then
    /// `Ok({})` and the oversized input was never kept.
    pub refusal: Option<String>,
    /// The start's fields besides `type`, `id`, `name` and `input` (such as
    /// `caller`), sent back with the block.
    pub extra: serde_json::Map<String, Value>,
}

impl CompletedToolUse {
    /// The block as it is stored in the transcript: the parsed input, or
    /// `{}` when it failed to parse (the API requires an object there),
    /// with the start's other fields (such as `caller`) as they came.
    pub fn to_tool_use(&self) -> ToolUse {
        ToolUse {
            id: self.id.clone(),
            name: self.name.clone(),
            input: self.input.clone().unwrap_or_else(|_| empty_object()),
            extra: self.extra.clone(),
        }
    }
}

/// A `tool_use` input that is not a JSON object: truncated or invalid JSON
/// (e.g. the answer hit `max_tokens` mid-input), or valid JSON of another type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidToolInput {
    /// serde_json's error text, or `"expected a JSON object, got <type>"`.
    pub error: String,
    /// The joined `partial_json` pieces, exactly as received.
    pub raw: String,
}

/// How much of an input that is not JSON the model is shown again
/// ([`InvalidToolInput::detail`]), in characters.
pub const SENT_INPUT_SHOWN_CHARS: usize = 200;

/// [`InvalidToolInput::detail`]: the parser's error, then what the model
/// sent (cut to [`SENT_INPUT_SHOWN_CHARS`]). `{error}`, `{sent}`.
pub const INVALID_INPUT_DETAIL: &str = "{error}; the input as it arrived: {sent}";

impl InvalidToolInput {
    /// The parser's error and what the model sent, cut: the `{error}` of
    /// the model-facing result (`execution::messages::INPUT_NOT_JSON`).
    pub fn detail(&self) -> String {
        let mut sent: String = self.raw.chars().take(SENT_INPUT_SHOWN_CHARS).collect();
        if sent.len() < self.raw.len() {
            sent.push('…');
        }
        fill(
            INVALID_INPUT_DETAIL,
            &[("error", &self.error), ("sent", &sent)],
        )
    }
}

/// A block between its `content_block_start` and `content_block_stop`.
#[derive(Debug)]
enum Open {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking(String),
    ToolUse {
        id: String,
        name: String,
        start_input: Value,
        json: String,
        /// Over a cap: the refusal; further `partial_json` is dropped.
        refusal: Option<String>,
        extra: serde_json::Map<String, Value>,
    },
    /// A block lathe keeps as JSON (`server_tool_use`, `compaction`, text
    /// with `citations`, …): its start object, changed by each delta as
    /// the API's SDKs accumulate it (see [`apply_to_opaque`]), and its
    /// `input_json_delta` pieces, parsed into `input` at its stop.
    Opaque {
        block: Value,
        json: String,
    },
}

/// Builds one assistant message from its stream events. One per request.
#[derive(Debug, Default)]
pub struct MessageAssembler {
    id: String,
    model: String,
    open: BTreeMap<usize, Open>,
    done: BTreeMap<usize, ContentBlock>,
    stop_reason: Option<StopReason>,
    stop_details: Option<Value>,
    usage: Usage,
    stopped: bool,
    /// `tool_use` blocks started so far ([`MAX_TOOL_CALLS_PER_ANSWER`]).
    tool_calls: usize,
    /// Bytes of text, thinking and tool input streamed so far.
    streamed: usize,
    /// A `message_delta` brought the answer's own output count.
    delta_usage: bool,
}

/// Bytes of streamed output per estimated token (an answer cut before the
/// API's final count: [`MessageAssembler::usage_or_estimate`]).
pub const BYTES_PER_OUTPUT_TOKEN: usize = 4;

impl MessageAssembler {
    /// An assembler before `message_start`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Consumes the next event of the stream, in order, and says what it
    /// changed; `None` for events with nothing to report (`ping`, block
    /// starts of text/thinking, their stops, usage-only deltas, unknown or
    /// ignored events — see the module doc).
    ///
    /// An `error` event returns `None` too: [`super::sse::decode`] already
    /// turns it into `Err(ProviderError::Stream)` and the caller ends the turn.
    pub fn push(&mut self, event: StreamEvent) -> Option<Assembled> {
        if let StreamEvent::ContentBlockDelta { delta, .. } = &event {
            self.streamed += match delta {
                ContentBlockDelta::TextDelta { text } => text.len(),
                ContentBlockDelta::InputJsonDelta { partial_json } => partial_json.len(),
                ContentBlockDelta::ThinkingDelta { thinking } => thinking.len(),
                _ => 0,
            };
        }
        match event {
            StreamEvent::MessageStart { message } => {
                self.id = message.id.clone();
                self.model = message.model.clone();
                self.usage = message.usage;
                Some(Assembled::MessageStarted {
                    id: message.id,
                    model: message.model,
                })
            }
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => self.start(index, content_block),
            StreamEvent::ContentBlockDelta { index, delta } => self.delta(index, delta),
            StreamEvent::ContentBlockStop { index } => self.stop(index),
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(u) = usage {
                    self.delta_usage |= u.output_tokens.is_some();
                    self.usage.update(&u);
                }
                if delta.stop_details.is_some() {
                    self.stop_details = delta.stop_details;
                }
                let reason = delta.stop_reason?;
                self.stop_reason = Some(reason.clone());
                Some(Assembled::StopReason(reason))
            }
            StreamEvent::MessageStop => {
                self.stopped = true;
                Some(Assembled::MessageStop)
            }
            StreamEvent::Ping | StreamEvent::Error { .. } | StreamEvent::Unknown => None,
        }
    }

    fn start(&mut self, index: usize, block: ContentBlock) -> Option<Assembled> {
        if self.open.contains_key(&index) || self.done.contains_key(&index) {
            return None;
        }
        let (open, report) = match block {
            ContentBlock::Text { text } => (Open::Text(text), None),
            ContentBlock::Thinking {
                thinking,
                signature,
            } => (
                Open::Thinking {
                    thinking,
                    signature,
                },
                None,
            ),
            ContentBlock::RedactedThinking { data } => (Open::RedactedThinking(data), None),
            ContentBlock::ToolUse(t) => {
                self.tool_calls += 1;
                let (name, refusal) = self.check_call(t.name);
                let report = Assembled::ToolUseStarted {
                    index,
                    id: t.id.clone(),
                    name: name.clone(),
                };
                let start_input = if refusal.is_some() {
                    empty_object()
                } else {
                    t.input
                };
                (
                    Open::ToolUse {
                        id: t.id,
                        name,
                        start_input,
                        json: String::new(),
                        refusal,
                        extra: t.extra,
                    },
                    Some(report),
                )
            }
            // A client tool block lathe could not read (no string `id` or
            // `name`): it can be neither run nor answered, and kept it
            // would make every later request one the API refuses.
            ContentBlock::Opaque(_) if matches!(block.kind(), "tool_use" | "tool_result") => {
                return None
            }
            ContentBlock::Opaque(block) => (
                Open::Opaque {
                    block,
                    json: String::new(),
                },
                None,
            ),
            // Not blocks of an assistant message; nothing to build.
            ContentBlock::Image { .. } | ContentBlock::ToolResult(_) => return None,
        };
        self.open.insert(index, open);
        report
    }

    fn delta(&mut self, index: usize, delta: ContentBlockDelta) -> Option<Assembled> {
        let open = self.open.get_mut(&index)?;
        match (&mut *open, delta) {
            (Open::Text(buf), ContentBlockDelta::TextDelta { text }) => {
                buf.push_str(&text);
                Some(Assembled::TextDelta { index, text })
            }
            (
                Open::Thinking { thinking, .. },
                ContentBlockDelta::ThinkingDelta { thinking: piece },
            ) => {
                thinking.push_str(&piece);
                Some(Assembled::ThinkingDelta { index, text: piece })
            }
            (
                Open::Thinking { signature, .. },
                ContentBlockDelta::SignatureDelta { signature: s },
            ) => {
                signature.push_str(&s);
                None
            }
            (
                Open::ToolUse {
                    json,
                    refusal,
                    name,
                    ..
                },
                ContentBlockDelta::InputJsonDelta { partial_json },
            ) => {
                if refusal.is_none() {
                    if json.len() + partial_json.len() > MAX_TOOL_INPUT_BYTES {
                        *refusal = Some(fill(
                            TOOL_INPUT_TOO_LARGE,
                            &[("tool", name), ("max", &MAX_TOOL_INPUT_BYTES.to_string())],
                        ));
                        *json = String::new();
                    } else {
                        json.push_str(&partial_json);
                    }
                }
                None
            }
            (Open::Opaque { json, .. }, ContentBlockDelta::InputJsonDelta { partial_json }) => {
                if json.len() + partial_json.len() <= MAX_TOOL_INPUT_BYTES {
                    json.push_str(&partial_json);
                }
                None
            }
            (Open::Opaque { block, .. }, delta) => apply_to_opaque(block, index, delta),
            (Open::Text(text), ContentBlockDelta::CitationsDelta { citation }) => {
                // A cited text block: kept as JSON from here on, with the
                // API's `citations` list.
                let block = serde_json::json!({
                    "type": "text",
                    "text": std::mem::take(text),
                    "citations": [citation],
                });
                *open = Open::Opaque {
                    block,
                    json: String::new(),
                };
                None
            }
            _ => None,
        }
    }

    fn stop(&mut self, index: usize) -> Option<Assembled> {
        let (block, report) = match self.open.remove(&index)? {
            Open::Text(text) => (ContentBlock::Text { text }, None),
            Open::Thinking {
                thinking,
                signature,
            } => (
                ContentBlock::Thinking {
                    thinking,
                    signature,
                },
                None,
            ),
            Open::RedactedThinking(data) => (ContentBlock::RedactedThinking { data }, None),
            Open::Opaque { mut block, json } => {
                if let Value::Object(map) = &mut block {
                    // The streamed input replaces the start's; input that
                    // is not a JSON object cannot go back (the API wants
                    // an object), so the start's stays.
                    let is_call = map
                        .get("type")
                        .and_then(Value::as_str)
                        .is_some_and(|t| t.ends_with("tool_use"));
                    if let Ok(input @ Value::Object(_)) = serde_json::from_str::<Value>(&json) {
                        map.insert("input".into(), input);
                    } else if is_call && !map.get("input").is_some_and(Value::is_object) {
                        map.insert("input".into(), empty_object());
                    }
                }
                (ContentBlock::Opaque(block), None)
            }
            Open::ToolUse {
                id,
                name,
                start_input,
                json,
                mut refusal,
                extra,
            } => {
                if refusal.is_none() && json_deeper_than(&json, MAX_TOOL_INPUT_DEPTH) {
                    refusal = Some(fill(
                        TOOL_INPUT_TOO_DEEP,
                        &[("tool", &name), ("max", &MAX_TOOL_INPUT_DEPTH.to_string())],
                    ));
                }
                let input = match refusal {
                    Some(_) => Ok(empty_object()),
                    None => parse_input(start_input, json),
                };
                let done = CompletedToolUse {
                    index,
                    id,
                    name,
                    input,
                    refusal,
                    extra,
                };
                (
                    ContentBlock::ToolUse(done.to_tool_use()),
                    Some(Assembled::ToolUseComplete(done)),
                )
            }
        };
        self.done.insert(index, block);
        report
    }

    /// The name to keep for a `tool_use` that just started (cut to
    /// [`MAX_TOOL_NAME_BYTES`]) and its refusal when it is over a cap: the
    /// name's length, or the answer's number of calls.
    fn check_call(&self, name: String) -> (String, Option<String>) {
        let n = self.tool_calls;
        if name.len() > MAX_TOOL_NAME_BYTES {
            let start: String = name.chars().take(40).collect();
            let refusal = fill(
                TOOL_NAME_TOO_LONG,
                &[
                    ("bytes", &name.len().to_string()),
                    ("start", &start),
                    ("max", &MAX_TOOL_NAME_BYTES.to_string()),
                ],
            );
            return (
                cut_at_char(&name, MAX_TOOL_NAME_BYTES).to_string(),
                Some(refusal),
            );
        }
        if n > MAX_TOOL_CALLS_PER_ANSWER {
            let refusal = fill(
                TOO_MANY_TOOL_CALLS,
                &[
                    ("n", &n.to_string()),
                    ("max", &MAX_TOOL_CALLS_PER_ANSWER.to_string()),
                ],
            );
            return (name, Some(refusal));
        }
        (name, None)
    }

    /// The assistant message built so far: every block whose
    /// `content_block_stop` arrived, in index order. Text blocks with empty
    /// text are left out (the API rejects empty text blocks); a `tool_use`
    /// whose input failed to parse has input `{}`. Blocks still open (an
    /// interrupted answer) are not included. `content` may be empty.
    pub fn message(&self) -> Message {
        let content = self
            .done
            .values()
            .filter(|b| !matches!(b, ContentBlock::Text { text } if text.is_empty()))
            .cloned()
            .collect();
        Message {
            role: Role::Assistant,
            content,
        }
    }

    /// Like [`message`](Self::message), consuming the assembler.
    pub fn finish(self) -> Message {
        self.message()
    }

    /// `stop_reason` from the last `message_delta` that carried one.
    pub fn stop_reason(&self) -> Option<&StopReason> {
        self.stop_reason.as_ref()
    }

    /// `true` once `message_stop` arrived.
    pub fn is_complete(&self) -> bool {
        self.stopped
    }

    /// The `stop_details` of the answer's `message_delta`, when it had any.
    pub fn stop_details(&self) -> Option<&Value> {
        self.stop_details.as_ref()
    }

    /// The highest block index that started, if any (the block a
    /// `max_tokens` stop cut).
    pub fn last_index(&self) -> Option<usize> {
        let open = self.open.keys().next_back().copied();
        let done = self.done.keys().next_back().copied();
        open.max(done)
    }

    /// Token counts: input from `message_start`, output from the last
    /// `message_delta` (cumulative, as the API reports it; see
    /// [`Usage::update`]).
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// Like [`usage`](Self::usage), for an answer that may have been cut
    /// (stopped, or broken off) before a `message_delta` brought its output
    /// count: then the output is estimated from the bytes streamed
    /// ([`BYTES_PER_OUTPUT_TOKEN`]) when that is more than `message_start`
    /// said, and marked as an estimate.
    pub fn usage_or_estimate(&self) -> Usage {
        let mut u = self.usage.clone();
        if !self.delta_usage {
            let estimate = self.streamed.div_ceil(BYTES_PER_OUTPUT_TOKEN) as u64;
            if estimate > u.output_tokens.unwrap_or(0) {
                u.output_tokens = Some(estimate);
                u.output_estimated = true;
            }
        }
        u
    }

    /// `msg_…` id from `message_start` (empty before it).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Model id from `message_start` (empty before it).
    pub fn model(&self) -> &str {
        &self.model
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Applies a delta to a block kept as JSON, as the API's SDKs accumulate
/// it: `text_delta` appends to a text block's `text` (and is shown),
/// `citations_delta` appends to its `citations`; `thinking_delta` appends
/// to a thinking block's `thinking` (shown), `signature_delta` sets its
/// `signature`; `compaction_delta` appends `content` to a compaction
/// block's summary and sets its `encrypted_content`. A delta of another
/// kind for the block's type is dropped.
fn apply_to_opaque(block: &mut Value, index: usize, delta: ContentBlockDelta) -> Option<Assembled> {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    let kind = kind.to_string();
    let Value::Object(map) = block else {
        return None;
    };
    let append = |map: &mut serde_json::Map<String, Value>, key: &str, piece: &str| {
        let mut full = map
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        full.push_str(piece);
        map.insert(key.into(), Value::String(full));
    };
    match (kind.as_str(), delta) {
        ("text", ContentBlockDelta::TextDelta { text }) => {
            append(map, "text", &text);
            Some(Assembled::TextDelta { index, text })
        }
        ("text", ContentBlockDelta::CitationsDelta { citation }) => {
            match map.get_mut("citations") {
                Some(Value::Array(list)) => list.push(citation),
                _ => {
                    map.insert("citations".into(), Value::Array(vec![citation]));
                }
            }
            None
        }
        ("thinking", ContentBlockDelta::ThinkingDelta { thinking }) => {
            append(map, "thinking", &thinking);
            Some(Assembled::ThinkingDelta {
                index,
                text: thinking,
            })
        }
        ("thinking", ContentBlockDelta::SignatureDelta { signature }) => {
            map.insert("signature".into(), Value::String(signature));
            None
        }
        (
            "compaction",
            ContentBlockDelta::CompactionDelta {
                content,
                encrypted_content,
            },
        ) => {
            if let Some(piece) = content {
                append(map, "content", &piece);
            }
            if let Some(e) = encrypted_content {
                map.insert("encrypted_content".into(), Value::String(e));
            }
            None
        }
        _ => None,
    }
}

/// Parses the joined `partial_json` of a tool_use block.
fn parse_input(start_input: Value, json: String) -> Result<Value, InvalidToolInput> {
    if json.trim().is_empty() {
        return Ok(if start_input.is_object() {
            start_input
        } else {
            empty_object()
        });
    }
    match serde_json::from_str::<Value>(&json) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(other) => Err(InvalidToolInput {
            error: format!("expected a JSON object, got {}", json_type(&other)),
            raw: json,
        }),
        Err(e) => Err(InvalidToolInput {
            error: e.to_string(),
            raw: json,
        }),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{MessageDeltaBody, MessagesResponse};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn start_msg() -> StreamEvent {
        StreamEvent::MessageStart {
            message: MessagesResponse {
                id: "msg_1".into(),
                role: Role::Assistant,
                content: vec![],
                stop_reason: None,
                model: "claude-x".into(),
                usage: Usage {
                    input_tokens: Some(10),
                    output_tokens: Some(1),
                    ..Default::default()
                },
            },
        }
    }
    fn start_text(index: usize) -> StreamEvent {
        StreamEvent::ContentBlockStart {
            index,
            content_block: ContentBlock::Text {
                text: String::new(),
            },
        }
    }
    fn start_tool(index: usize, id: &str, name: &str) -> StreamEvent {
        StreamEvent::ContentBlockStart {
            index,
            content_block: ContentBlock::ToolUse(ToolUse {
                id: id.into(),
                name: name.into(),
                input: json!({}),
                extra: Default::default(),
            }),
        }
    }
    fn text(index: usize, t: &str) -> StreamEvent {
        StreamEvent::ContentBlockDelta {
            index,
            delta: ContentBlockDelta::TextDelta { text: t.into() },
        }
    }
    fn json_piece(index: usize, t: &str) -> StreamEvent {
        StreamEvent::ContentBlockDelta {
            index,
            delta: ContentBlockDelta::InputJsonDelta {
                partial_json: t.into(),
            },
        }
    }
    fn stop(index: usize) -> StreamEvent {
        StreamEvent::ContentBlockStop { index }
    }
    fn reason(r: StopReason) -> StreamEvent {
        StreamEvent::MessageDelta {
            delta: MessageDeltaBody {
                stop_reason: Some(r),
                ..MessageDeltaBody::default()
            },
            usage: Some(Usage {
                input_tokens: Some(0),
                output_tokens: Some(42),
                ..Default::default()
            }),
        }
    }
    fn tool_msg(id: &str, name: &str, input: Value) -> ContentBlock {
        ContentBlock::ToolUse(ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            extra: Default::default(),
        })
    }

    #[test]
    fn a_cut_answer_estimates_its_output_and_says_so() {
        let mut a = MessageAssembler::new();
        for e in [start_msg(), start_text(0), text(0, &"x".repeat(400))] {
            a.push(e);
        }
        // Stopped before any `message_delta`: `message_start`'s 1 is not
        // the answer's output.
        assert_eq!(a.usage().output_tokens, Some(1));
        let u = a.usage_or_estimate();
        assert_eq!(u.output_tokens, Some(100));
        assert!(u.output_estimated);
        // The API's own count, once it came, is taken as it is.
        a.push(reason(StopReason::EndTurn));
        let u = a.usage_or_estimate();
        assert_eq!(u.output_tokens, Some(42));
        assert!(!u.output_estimated);
    }

    #[test]
    fn text_then_tool_use_full_answer() {
        let mut a = MessageAssembler::new();
        let got: Vec<_> = [
            start_msg(),
            start_text(0),
            StreamEvent::Ping,
            text(0, "Let me "),
            text(0, "look."),
            stop(0),
            start_tool(1, "toolu_1", "Grep"),
            json_piece(1, "{\"pattern\""),
            json_piece(1, ": \"Grü"),
            json_piece(1, "ße\"}"),
            stop(1),
            reason(StopReason::ToolUse),
            StreamEvent::MessageStop,
        ]
        .into_iter()
        .map(|e| a.push(e))
        .collect();
        assert_eq!(
            got,
            vec![
                Some(Assembled::MessageStarted {
                    id: "msg_1".into(),
                    model: "claude-x".into()
                }),
                None,
                None,
                Some(Assembled::TextDelta {
                    index: 0,
                    text: "Let me ".into()
                }),
                Some(Assembled::TextDelta {
                    index: 0,
                    text: "look.".into()
                }),
                None,
                Some(Assembled::ToolUseStarted {
                    index: 1,
                    id: "toolu_1".into(),
                    name: "Grep".into()
                }),
                None,
                None,
                None,
                Some(Assembled::ToolUseComplete(CompletedToolUse {
                    index: 1,
                    id: "toolu_1".into(),
                    name: "Grep".into(),
                    input: Ok(json!({"pattern": "Grüße"})),
                    refusal: None,
                    extra: Default::default(),
                })),
                Some(Assembled::StopReason(StopReason::ToolUse)),
                Some(Assembled::MessageStop),
            ]
        );
        assert!(a.is_complete());
        assert_eq!(a.stop_reason(), Some(&StopReason::ToolUse));
        assert_eq!(
            a.usage(),
            &Usage {
                input_tokens: Some(10),
                output_tokens: Some(42),
                ..Default::default()
            }
        );
        assert_eq!((a.id(), a.model()), ("msg_1", "claude-x"));
        assert_eq!(
            a.finish(),
            Message {
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Text {
                        text: "Let me look.".into()
                    },
                    tool_msg("toolu_1", "Grep", json!({"pattern": "Grüße"})),
                ],
            }
        );
    }

    /// The refusal and input of the call completed by `events`' last stop.
    fn completed(a: &mut MessageAssembler, events: Vec<StreamEvent>) -> CompletedToolUse {
        let mut last = None;
        for e in events {
            if let Some(Assembled::ToolUseComplete(done)) = a.push(e) {
                last = Some(done);
            }
        }
        last.expect("a completed tool_use")
    }

    #[test]
    fn calls_past_the_cap_are_refused_and_keep_no_input() {
        use crate::provider::limits::{MAX_TOOL_CALLS_PER_ANSWER, TOO_MANY_TOOL_CALLS};
        let mut a = MessageAssembler::new();
        let mut refused = 0;
        for i in 0..10_000 {
            let done = completed(
                &mut a,
                vec![
                    start_tool(i, &format!("toolu_{i}"), "Read"),
                    json_piece(i, "{\"file_path\":\"/x\"}"),
                    stop(i),
                ],
            );
            if i < MAX_TOOL_CALLS_PER_ANSWER {
                assert_eq!(done.refusal, None);
                assert_eq!(done.input, Ok(json!({"file_path": "/x"})));
            } else {
                refused += 1;
                assert_eq!(done.input, Ok(json!({})));
                let want = fill(
                    TOO_MANY_TOOL_CALLS,
                    &[("n", &(i + 1).to_string()), ("max", "100")],
                );
                assert_eq!(done.refusal.as_deref(), Some(want.as_str()));
            }
        }
        assert_eq!(refused, 10_000 - MAX_TOOL_CALLS_PER_ANSWER);
        assert_eq!(a.message().tool_uses().count(), 10_000);
    }

    #[test]
    fn an_input_over_the_cap_is_dropped_as_it_arrives() {
        use crate::provider::limits::{MAX_TOOL_INPUT_BYTES, TOOL_INPUT_TOO_LARGE};
        let mut a = MessageAssembler::new();
        a.push(start_tool(0, "toolu_big", "Edit"));
        a.push(json_piece(0, "{\"new_string\": \""));
        let chunk = "x".repeat(1024 * 1024);
        for _ in 0..50 {
            a.push(json_piece(0, &chunk));
            if let Some(Open::ToolUse { json, .. }) = a.open.get(&0) {
                assert!(
                    json.len() <= MAX_TOOL_INPUT_BYTES,
                    "bounded while streaming"
                );
            }
        }
        a.push(json_piece(0, "\"}"));
        let done = completed(&mut a, vec![stop(0)]);
        assert_eq!(done.input, Ok(json!({})));
        assert_eq!(
            done.refusal,
            Some(fill(
                TOOL_INPUT_TOO_LARGE,
                &[("tool", "Edit"), ("max", &MAX_TOOL_INPUT_BYTES.to_string())]
            ))
        );
        assert_eq!(
            a.message().content,
            vec![tool_msg("toolu_big", "Edit", json!({}))]
        );
    }

    #[test]
    fn deeply_nested_input_is_refused_before_parsing() {
        use crate::provider::limits::{MAX_TOOL_INPUT_DEPTH, TOOL_INPUT_TOO_DEEP};
        let mut a = MessageAssembler::new();
        let deep = format!(
            "{{\"pattern\": {}1{}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let done = completed(
            &mut a,
            vec![
                start_tool(0, "toolu_d", "Grep"),
                json_piece(0, &deep),
                stop(0),
            ],
        );
        assert_eq!(
            done.refusal,
            Some(fill(
                TOOL_INPUT_TOO_DEEP,
                &[("tool", "Grep"), ("max", &MAX_TOOL_INPUT_DEPTH.to_string())]
            ))
        );
        // Just under the cap still parses.
        let ok = format!(
            "{{\"a\": {}1{}}}",
            "[".repeat(MAX_TOOL_INPUT_DEPTH - 1),
            "]".repeat(MAX_TOOL_INPUT_DEPTH - 1)
        );
        let done = completed(
            &mut a,
            vec![
                start_tool(1, "toolu_e", "Grep"),
                json_piece(1, &ok),
                stop(1),
            ],
        );
        assert_eq!(done.refusal, None);
        assert!(done.input.is_ok());
    }

    #[test]
    fn a_megabyte_tool_name_is_cut_and_refused() {
        use crate::provider::limits::{MAX_TOOL_NAME_BYTES, TOOL_NAME_TOO_LONG};
        let mut a = MessageAssembler::new();
        let name = "é".repeat(512 * 1024);
        let started = a.push(start_tool(0, "toolu_n", &name));
        let cut = "é".repeat(MAX_TOOL_NAME_BYTES / 2);
        assert_eq!(
            started,
            Some(Assembled::ToolUseStarted {
                index: 0,
                id: "toolu_n".into(),
                name: cut.clone()
            })
        );
        let done = completed(&mut a, vec![json_piece(0, "{}"), stop(0)]);
        assert_eq!(done.name, cut);
        assert_eq!(
            done.refusal,
            Some(fill(
                TOOL_NAME_TOO_LONG,
                &[
                    ("bytes", &(1024 * 1024).to_string()),
                    ("start", &"é".repeat(40)),
                    ("max", "128"),
                ]
            ))
        );
    }

    #[test]
    fn tool_use_is_reported_at_its_stop_not_at_message_end() {
        let mut a = MessageAssembler::new();
        a.push(start_tool(0, "toolu_a", "Read"));
        a.push(json_piece(0, "{\"file_path\":\"/x\"}"));
        let done = a.push(stop(0));
        assert!(
            matches!(done, Some(Assembled::ToolUseComplete(ref t)) if t.input == Ok(json!({"file_path": "/x"})))
        );
        assert!(!a.is_complete());
    }

    #[test]
    fn no_deltas_or_empty_deltas_mean_empty_object() {
        let mut a = MessageAssembler::new();
        a.push(start_tool(0, "toolu_a", "Glob"));
        let first = a.push(stop(0));
        a.push(start_tool(1, "toolu_b", "Glob"));
        a.push(json_piece(1, ""));
        let second = a.push(stop(1));
        for (got, id, index) in [(first, "toolu_a", 0), (second, "toolu_b", 1)] {
            assert_eq!(
                got,
                Some(Assembled::ToolUseComplete(CompletedToolUse {
                    index,
                    id: id.into(),
                    name: "Glob".into(),
                    input: Ok(json!({})),
                    refusal: None,
                    extra: Default::default(),
                }))
            );
        }
    }

    #[test]
    fn truncated_json_is_a_completed_tool_use_with_a_parse_error() {
        let mut a = MessageAssembler::new();
        a.push(start_tool(0, "toolu_a", "Edit"));
        a.push(json_piece(0, "{\"file_path\": \"/a\", \"old_str"));
        let Some(Assembled::ToolUseComplete(done)) = a.push(stop(0)) else {
            panic!("expected ToolUseComplete");
        };
        let err = done.input.clone().unwrap_err();
        assert_eq!(err.raw, "{\"file_path\": \"/a\", \"old_str");
        assert!(err.error.contains("EOF while parsing"), "{}", err.error);
        // The transcript keeps a valid request shape.
        assert_eq!(
            a.message().content,
            vec![tool_msg("toolu_a", "Edit", json!({}))]
        );
    }

    #[test]
    fn non_object_json_is_invalid_input() {
        let mut a = MessageAssembler::new();
        a.push(start_tool(0, "toolu_a", "Read"));
        a.push(json_piece(0, "[1, 2]"));
        let Some(Assembled::ToolUseComplete(done)) = a.push(stop(0)) else {
            panic!("expected ToolUseComplete");
        };
        assert_eq!(
            done.input,
            Err(InvalidToolInput {
                error: "expected a JSON object, got an array".into(),
                raw: "[1, 2]".into()
            })
        );
    }

    #[test]
    fn interleaved_deltas_of_two_blocks_stay_apart() {
        let mut a = MessageAssembler::new();
        a.push(start_text(0));
        a.push(start_tool(1, "toolu_1", "Grep"));
        a.push(start_tool(2, "toolu_2", "Glob"));
        a.push(json_piece(2, "{\"pattern\":"));
        a.push(text(0, "Searching "));
        a.push(json_piece(1, "{\"pattern\":"));
        a.push(json_piece(2, "\"*.rs\"}"));
        a.push(text(0, "both."));
        let two = a.push(stop(2));
        a.push(json_piece(1, "\"fn\"}"));
        let one = a.push(stop(1));
        a.push(stop(0));
        let input = |r: Option<Assembled>| match r {
            Some(Assembled::ToolUseComplete(t)) => (t.id, t.input),
            other => panic!("expected ToolUseComplete, got {other:?}"),
        };
        assert_eq!(
            input(two),
            ("toolu_2".into(), Ok(json!({"pattern": "*.rs"})))
        );
        assert_eq!(input(one), ("toolu_1".into(), Ok(json!({"pattern": "fn"}))));
        assert_eq!(
            a.message().content,
            vec![
                ContentBlock::Text {
                    text: "Searching both.".into()
                },
                tool_msg("toolu_1", "Grep", json!({"pattern": "fn"})),
                tool_msg("toolu_2", "Glob", json!({"pattern": "*.rs"})),
            ]
        );
    }

    #[test]
    fn delta_or_stop_for_a_block_never_started_is_ignored() {
        let mut a = MessageAssembler::new();
        assert_eq!(a.push(text(3, "ghost")), None);
        assert_eq!(a.push(json_piece(4, "{}")), None);
        assert_eq!(a.push(stop(3)), None);
        a.push(start_text(0));
        a.push(text(0, "real"));
        a.push(stop(0));
        // After its stop a block takes no more deltas, stops or starts.
        assert_eq!(a.push(text(0, " late")), None);
        assert_eq!(a.push(stop(0)), None);
        assert_eq!(a.push(start_tool(0, "toolu_x", "Read")), None);
        assert_eq!(
            a.message().content,
            vec![ContentBlock::Text {
                text: "real".into()
            }]
        );
    }

    #[test]
    fn delta_of_the_wrong_kind_is_ignored() {
        let mut a = MessageAssembler::new();
        a.push(start_text(0));
        assert_eq!(a.push(json_piece(0, "{\"a\":1}")), None);
        a.push(start_tool(1, "toolu_1", "Read"));
        assert_eq!(a.push(text(1, "nope")), None);
        a.push(stop(0));
        a.push(stop(1));
        assert_eq!(
            a.message().content,
            vec![tool_msg("toolu_1", "Read", json!({}))]
        );
    }

    #[test]
    fn interrupted_answer_keeps_only_completed_blocks() {
        let mut a = MessageAssembler::new();
        a.push(start_msg());
        a.push(start_text(0));
        a.push(text(0, "Done with this."));
        a.push(stop(0));
        a.push(start_tool(1, "toolu_1", "Edit"));
        a.push(json_piece(1, "{\"file_path\":"));
        a.push(start_text(2));
        a.push(text(2, "half a sent"));
        assert!(!a.is_complete());
        assert_eq!(a.stop_reason(), None);
        assert_eq!(
            a.message(),
            Message {
                role: Role::Assistant,
                content: vec![ContentBlock::Text {
                    text: "Done with this.".into()
                }]
            }
        );
    }

    #[test]
    fn empty_text_blocks_are_left_out() {
        let mut a = MessageAssembler::new();
        a.push(start_text(0));
        a.push(stop(0));
        a.push(start_tool(1, "toolu_1", "Read"));
        a.push(stop(1));
        assert_eq!(
            a.message().content,
            vec![tool_msg("toolu_1", "Read", json!({}))]
        );
    }

    #[test]
    fn thinking_blocks_keep_text_and_signature() {
        let mut a = MessageAssembler::new();
        a.push(StreamEvent::ContentBlockStart {
            index: 0,
            content_block: ContentBlock::Thinking {
                thinking: String::new(),
                signature: String::new(),
            },
        });
        let d = a.push(StreamEvent::ContentBlockDelta {
            index: 0,
            delta: ContentBlockDelta::ThinkingDelta {
                thinking: "Hmm, ".into(),
            },
        });
        assert_eq!(
            d,
            Some(Assembled::ThinkingDelta {
                index: 0,
                text: "Hmm, ".into()
            })
        );
        a.push(StreamEvent::ContentBlockDelta {
            index: 0,
            delta: ContentBlockDelta::ThinkingDelta {
                thinking: "grep first.".into(),
            },
        });
        a.push(StreamEvent::ContentBlockDelta {
            index: 0,
            delta: ContentBlockDelta::SignatureDelta {
                signature: "EqQBCgIYAhIM".into(),
            },
        });
        a.push(stop(0));
        a.push(StreamEvent::ContentBlockStart {
            index: 1,
            content_block: ContentBlock::RedactedThinking {
                data: "opaque".into(),
            },
        });
        a.push(stop(1));
        a.push(start_text(2));
        a.push(text(2, "Answer."));
        a.push(stop(2));
        assert_eq!(
            a.message().content,
            vec![
                ContentBlock::Thinking {
                    thinking: "Hmm, grep first.".into(),
                    signature: "EqQBCgIYAhIM".into()
                },
                ContentBlock::RedactedThinking {
                    data: "opaque".into()
                },
                ContentBlock::Text {
                    text: "Answer.".into()
                },
            ]
        );
    }

    #[test]
    fn unknown_delta_ping_error_and_usage_only_delta_report_nothing() {
        let mut a = MessageAssembler::new();
        a.push(start_text(0));
        assert_eq!(
            a.push(StreamEvent::ContentBlockDelta {
                index: 0,
                delta: ContentBlockDelta::Unknown
            }),
            None
        );
        assert_eq!(a.push(StreamEvent::Ping), None);
        assert_eq!(a.push(StreamEvent::Unknown), None);
        assert_eq!(
            a.push(StreamEvent::Error {
                error: crate::protocol::ApiErrorBody {
                    kind: "overloaded_error".into(),
                    message: "x".into()
                }
            }),
            None
        );
        assert_eq!(
            a.push(StreamEvent::MessageDelta {
                delta: MessageDeltaBody::default(),
                usage: None
            }),
            None
        );
    }
}

#[cfg(test)]
mod opaque_blocks {
    use super::*;

    #[test]
    fn a_server_tool_block_keeps_its_streamed_input() {
        let mut a = MessageAssembler::new();
        let start: Value = serde_json::json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}});
        a.push(StreamEvent::ContentBlockStart {
            index: 0,
            content_block: ContentBlock::Opaque(start),
        });
        for piece in ["{\"query\": ", "\"lathe\"}"] {
            a.push(StreamEvent::ContentBlockDelta {
                index: 0,
                delta: ContentBlockDelta::InputJsonDelta {
                    partial_json: piece.into(),
                },
            });
        }
        assert_eq!(a.push(StreamEvent::ContentBlockStop { index: 0 }), None);
        assert_eq!(
            a.message().content,
            vec![ContentBlock::Opaque(serde_json::json!({
                "type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search",
                "input": {"query": "lathe"}
            }))]
        );
    }
}

/// Blocks the API sends that lathe keeps as JSON, and `tool_use` starts in
/// the shapes other servers send: each comes back exactly as
/// received, and a call is always a call.
#[cfg(test)]
mod sent_back_as_received {
    use super::*;
    use crate::provider::sse::parse_data;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// Feeds `data:` JSON lines through the decoder's parser and the
    /// assembler; returns what was reported.
    fn feed(a: &mut MessageAssembler, lines: &[Value]) -> Vec<Assembled> {
        lines
            .iter()
            .map(|l| parse_data(&l.to_string()).expect("decodes"))
            .filter_map(|e| a.push(e))
            .collect()
    }

    fn start(index: usize, block: Value) -> Value {
        json!({"type": "content_block_start", "index": index, "content_block": block})
    }
    fn delta(index: usize, delta: Value) -> Value {
        json!({"type": "content_block_delta", "index": index, "delta": delta})
    }
    fn stop(index: usize) -> Value {
        json!({"type": "content_block_stop", "index": index})
    }
    fn json_piece(index: usize, piece: &str) -> Value {
        delta(
            index,
            json!({"type": "input_json_delta", "partial_json": piece}),
        )
    }

    fn completed(reported: &[Assembled]) -> Vec<CompletedToolUse> {
        reported
            .iter()
            .filter_map(|r| match r {
                Assembled::ToolUseComplete(c) => Some(c.clone()),
                _ => None,
            })
            .collect()
    }

    /// The Anthropic SDKs' `tool_use_invalid_json_response` shape: a
    /// `tool_use` start with `caller`, and input that is not JSON.
    #[test]
    fn a_call_with_caller_and_input_that_is_not_json_is_a_call_with_an_error() {
        let mut a = MessageAssembler::new();
        let reported = feed(
            &mut a,
            &[
                start(
                    0,
                    json!({"type": "tool_use", "id": "toolu_01", "name": "Glob",
                                "caller": {"type": "direct"}, "input": {}}),
                ),
                json_piece(0, ""),
                json_piece(0, "{\"pattern\": \"*.md\", \"path\": "),
                json_piece(0, "docs}"),
                stop(0),
            ],
        );
        let calls = completed(&reported);
        assert_eq!(calls.len(), 1, "{reported:?}");
        let err = calls[0].input.clone().unwrap_err();
        assert_eq!(err.raw, "{\"pattern\": \"*.md\", \"path\": docs}");
        assert_eq!(
            err.detail(),
            format!(
                "{}; the input as it arrived: {{\"pattern\": \"*.md\", \"path\": docs}}",
                err.error
            )
        );
        assert_eq!(
            serde_json::to_value(a.message().content).expect("encodes"),
            json!([{"type": "tool_use", "id": "toolu_01", "name": "Glob",
                    "caller": {"type": "direct"}, "input": {}}]),
            "kept with {{}} as input and its caller"
        );
    }

    #[test]
    fn what_the_model_sent_is_shown_cut() {
        let raw = "x".repeat(5000);
        let e = InvalidToolInput {
            error: "expected value at line 1 column 1".into(),
            raw,
        };
        let d = e.detail();
        assert!(
            d.ends_with(&format!("{}…", "x".repeat(SENT_INPUT_SHOWN_CHARS))),
            "{d}"
        );
        assert!(d.len() < 400);
    }

    /// llama.cpp's `/v1/messages`: a `tool_use` start without `input`.
    #[test]
    fn a_call_whose_start_has_no_input_is_a_call() {
        let mut a = MessageAssembler::new();
        let reported = feed(
            &mut a,
            &[
                start(
                    0,
                    json!({"type": "tool_use", "id": "toolu_02", "name": "Glob"}),
                ),
                json_piece(0, "{\"pattern\": \"*.md\"}"),
                stop(0),
                start(
                    1,
                    json!({"type": "tool_use", "id": "toolu_03", "name": "Glob"}),
                ),
                stop(1),
            ],
        );
        let calls = completed(&reported);
        assert_eq!(
            calls
                .iter()
                .map(|c| (c.id.as_str(), c.input.clone()))
                .collect::<Vec<_>>(),
            vec![
                ("toolu_02", Ok(json!({"pattern": "*.md"}))),
                ("toolu_03", Ok(json!({})))
            ]
        );
        assert_eq!(a.message().tool_uses().count(), 2);
    }

    /// A `tool_use` lathe cannot read as one (no id) can be neither run nor
    /// answered: it is not kept.
    #[test]
    fn a_call_without_an_id_is_not_kept() {
        let mut a = MessageAssembler::new();
        let reported = feed(
            &mut a,
            &[
                start(0, json!({"type": "tool_use", "name": "Glob", "input": {}})),
                json_piece(0, "{}"),
                stop(0),
            ],
        );
        assert_eq!(reported, vec![]);
        assert_eq!(a.message().content, vec![]);
    }

    /// Web search answers: cited text streams into the chat, and the block
    /// keeps its citations, whether the start carries `citations` or not.
    #[test]
    fn cited_text_is_shown_and_keeps_its_citations() {
        let cite = json!({"type": "web_search_result_location", "url": "https://example.com",
                          "title": "Forecast", "encrypted_index": "Eo8B", "cited_text": "Sunny."});
        for start_block in [
            json!({"type": "text", "text": "", "citations": []}),
            json!({"type": "text", "text": ""}),
        ] {
            let mut a = MessageAssembler::new();
            let reported = feed(
                &mut a,
                &[
                    start(0, json!({"type": "text", "text": ""})),
                    delta(
                        0,
                        json!({"type": "text_delta", "text": "According to the forecast, "}),
                    ),
                    stop(0),
                    start(1, start_block),
                    delta(1, json!({"type": "citations_delta", "citation": cite})),
                    delta(1, json!({"type": "text_delta", "text": "it will be sunny"})),
                    stop(1),
                    start(2, json!({"type": "text", "text": ""})),
                    delta(
                        2,
                        json!({"type": "text_delta", "text": " in San Francisco."}),
                    ),
                    stop(2),
                ],
            );
            let shown: String = reported
                .iter()
                .filter_map(|r| match r {
                    Assembled::TextDelta { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(
                shown,
                "According to the forecast, it will be sunny in San Francisco."
            );
            assert_eq!(
                serde_json::to_value(&a.message().content[1]).expect("encodes"),
                json!({"type": "text", "text": "it will be sunny", "citations": [cite]})
            );
        }
    }

    /// `compaction_delta`s: the summary is joined, the latest
    /// `encrypted_content` kept.
    #[test]
    fn a_compaction_block_is_accumulated() {
        let mut a = MessageAssembler::new();
        feed(
            &mut a,
            &[
                start(
                    0,
                    json!({"type": "compaction", "content": null, "encrypted_content": null}),
                ),
                delta(
                    0,
                    json!({"type": "compaction_delta", "content": "Earlier work ",
                                "encrypted_content": "Ep1"}),
                ),
                delta(
                    0,
                    json!({"type": "compaction_delta", "content": "in short.",
                                "encrypted_content": "Ep2"}),
                ),
                stop(0),
                start(
                    1,
                    json!({"type": "compaction", "content": null, "encrypted_content": null}),
                ),
                stop(1),
            ],
        );
        assert_eq!(
            serde_json::to_value(a.message().content).expect("encodes"),
            json!([
                {"type": "compaction", "content": "Earlier work in short.", "encrypted_content": "Ep2"},
                {"type": "compaction", "content": null, "encrypted_content": null}
            ])
        );
    }

    /// A server tool's streamed input that is not a JSON object cannot be
    /// sent back (the API wants an object): the start's input stays.
    #[test]
    fn a_server_tool_input_that_is_not_an_object_keeps_the_start_input() {
        let mut a = MessageAssembler::new();
        feed(
            &mut a,
            &[
                start(
                    0,
                    json!({"type": "server_tool_use", "id": "srvtoolu_1",
                                "name": "web_search", "input": {}}),
                ),
                json_piece(0, "{\"query\": lathe"),
                stop(0),
            ],
        );
        assert_eq!(
            serde_json::to_value(a.message().content).expect("encodes"),
            json!([{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}])
        );
    }
}
