//! A streamed chat completion (`chat.completion.chunk` SSE,
//! <https://platform.openai.com/docs/api-reference/chat/streaming>) as the
//! same [`StreamEvent`] sequence the Messages API streams, so
//! [`crate::provider::assemble::MessageAssembler`] and the turn loop take
//! it unchanged.
//!
//! Framing is lathe's own [`SseDecoder`] (BOM, CR/LF, comments such as
//! OpenRouter's `: OPENROUTER PROCESSING` keep-alives). Each `data:` is one
//! chunk; `data: [DONE]` ends the stream. [`ChunkTranslator`] turns chunks
//! into events:
//!
//! - `message_start` (id and model: the first non-empty ones seen) comes
//!   before the first block, or at the end of an answer without any, so a
//!   placeholder first chunk (Azure: empty `id` and `choices`) names nothing;
//! - reasoning (`reasoning_content`, `reasoning`, Mistral's `thinking`
//!   parts) → a `thinking` block without signature (request conversion
//!   never sends it back);
//! - `content` (and `refusal`) → a `text` block;
//! - each tool call, keyed by its `index` → a `tool_use` block, opened when
//!   its name is known (id and name usually come only in the first piece;
//!   a missing id is generated), its `arguments` pieces as
//!   `input_json_delta`s (an empty or missing `arguments` means `{}`, which
//!   the assembler already does for no pieces);
//! - a block closes when the stream moves on: text and reasoning when
//!   something else starts; a tool call when another call or text starts
//!   and its arguments already parse as JSON (so calls streamed one after
//!   the other start running early, and interleaved calls stay open until
//!   they are whole); everything still open closes at `finish_reason`;
//! - `finish_reason` and `usage` are kept (usage often comes in a later
//!   chunk with empty `choices`) and sent as one `message_delta` at
//!   `[DONE]`, then `message_stop`. The stop reason follows
//!   [`super::response::stop_reason`] (tool calls under a `stop` mean
//!   `tool_use`).
//!
//! [`decode`] runs this over a response body. A stream whose bytes end after
//! a `finish_reason` but without `[DONE]` ends cleanly; one that ends before
//! any `finish_reason` is a dropped connection ([`STREAM_ENDED_EARLY`]).

use std::collections::VecDeque;

use futures::{Stream, StreamExt};
use serde_json::{Map, Value};

use super::response::{generated_tool_id, stop_reason, usage};
use super::wire::{Chunk, Piece, WireToolCall};
use crate::protocol::{
    ContentBlock, ContentBlockDelta, MessageDeltaBody, MessagesResponse, Role, StreamEvent,
    ToolUse, Usage,
};
use crate::provider::sse::{chain, SseDecoder, SseEvent};
use crate::provider::{EventStream, ProviderError};

/// The `data:` payload that ends a chat completions stream.
pub const DONE: &str = "[DONE]";

/// [`ProviderError::Transport`] text when the body ends before any
/// `finish_reason` and without `data: [DONE]`: the connection closed in the
/// middle of the answer. User-facing (the chat).
pub const STREAM_ENDED_EARLY: &str =
    "stream ended before the answer finished (no finish_reason, no [DONE])";

/// A tool call being streamed.
#[derive(Debug)]
struct ToolSlot {
    /// The server's `index` for it (or one lathe gave it).
    wire_index: u64,
    id: String,
    name: String,
    /// Every `arguments` piece so far, joined.
    args: String,
    /// Its block index once its `content_block_start` was sent.
    block: Option<usize>,
    closed: bool,
}

impl ToolSlot {
    fn new(wire_index: u64) -> Self {
        Self {
            wire_index,
            id: String::new(),
            name: String::new(),
            args: String::new(),
            block: None,
            closed: false,
        }
    }
}

/// Turns the chunks of one streamed answer into [`StreamEvent`]s (rules in
/// the module doc). One per request; feed chunks in order.
#[derive(Debug, Default)]
pub struct ChunkTranslator {
    started: bool,
    id: String,
    model: String,
    next_block: usize,
    text: Option<usize>,
    thinking: Option<usize>,
    tools: Vec<ToolSlot>,
    /// The slot the last tool call piece went to.
    current_tool: Option<usize>,
    finish: Option<String>,
    saw_finish: bool,
    usage: Option<Usage>,
    ended: bool,
}

impl ChunkTranslator {
    /// A translator before the first chunk.
    pub fn new() -> Self {
        Self::default()
    }

    /// Consumes one chunk's `data:` text (not `[DONE]`) and returns the
    /// events it completes, in order (often none).
    ///
    /// Errors: [`ProviderError::Decode`] when `data` is not a JSON object
    /// of the chunk's shape (serde's error and the first 200 chars);
    /// [`ProviderError::Stream`] when the chunk carries an `error` (see
    /// [`super::errors`] for its `kind`). Feed nothing after an error.
    pub fn push_data(&mut self, data: &str) -> Result<Vec<StreamEvent>, ProviderError> {
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            let shown = crate::provider::http::cut(data, 200);
            ProviderError::Decode(format!("{e} in data: {shown}"))
        })?;
        self.push(&chunk)
    }

    /// Like [`push_data`](Self::push_data) for a parsed chunk.
    fn push(&mut self, chunk: &Chunk) -> Result<Vec<StreamEvent>, ProviderError> {
        if let Some(err) = chunk.error.as_ref().filter(|e| !e.is_null()) {
            return Err(super::errors::stream_error(err));
        }
        if self.id.is_empty() {
            self.id = chunk.id.clone().unwrap_or_default();
        }
        if self.model.is_empty() {
            self.model = chunk.model.clone().unwrap_or_default();
        }
        if let Some(u) = chunk.reported_usage() {
            self.usage = Some(usage(u));
        }
        let mut out = Vec::new();
        let Some(choice) = chunk.first_choice() else {
            return Ok(out);
        };
        if let Some(delta) = choice.delta.as_ref().or(choice.message.as_ref()) {
            for piece in delta.pieces() {
                match piece {
                    Piece::Thinking(t) => self.thinking_piece(t, &mut out),
                    Piece::Text(t) => self.text_piece(t, &mut out),
                }
            }
            for (pos, call) in delta.tool_calls.iter().flatten().enumerate() {
                self.tool_piece(call, pos, &mut out);
            }
        }
        if let Some(reason) = choice.finish_reason.as_deref().filter(|r| !r.is_empty()) {
            self.finish = Some(reason.to_string());
            self.saw_finish = true;
            self.close_all(&mut out);
        }
        Ok(out)
    }

    /// `true` once a chunk carried a `finish_reason`.
    pub fn saw_finish(&self) -> bool {
        self.saw_finish
    }

    /// `true` once [`finish`](Self::finish) ran.
    pub fn is_finished(&self) -> bool {
        self.ended
    }

    /// Ends the answer (at `[DONE]`, or at the end of the bytes after a
    /// `finish_reason`): `message_start` if not sent yet, a stop for every
    /// open block, one `message_delta` with the stop reason and usage (when
    /// reported), then `message_stop`. Later calls return nothing.
    pub fn finish(&mut self) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        self.ended = true;
        self.start(&mut out);
        self.close_all(&mut out);
        let reason = stop_reason(self.finish.as_deref(), self.has_tool_calls());
        out.push(StreamEvent::MessageDelta {
            delta: MessageDeltaBody {
                stop_reason: Some(reason),
                ..MessageDeltaBody::default()
            },
            usage: self.usage.clone(),
        });
        out.push(StreamEvent::MessageStop);
        out
    }

    fn has_tool_calls(&self) -> bool {
        self.tools.iter().any(|t| t.block.is_some())
    }

    /// `message_start`, once.
    fn start(&mut self, out: &mut Vec<StreamEvent>) {
        if self.started {
            return;
        }
        self.started = true;
        out.push(StreamEvent::MessageStart {
            message: MessagesResponse {
                id: self.id.clone(),
                role: Role::Assistant,
                content: Vec::new(),
                stop_reason: None,
                model: self.model.clone(),
                usage: Usage::default(),
            },
        });
    }

    /// The next block index, after `message_start`.
    fn open_block(&mut self, block: ContentBlock, out: &mut Vec<StreamEvent>) -> usize {
        self.start(out);
        let index = self.next_block;
        self.next_block += 1;
        out.push(StreamEvent::ContentBlockStart {
            index,
            content_block: block,
        });
        index
    }

    fn thinking_piece(&mut self, text: String, out: &mut Vec<StreamEvent>) {
        if let Some(i) = self.text.take() {
            out.push(StreamEvent::ContentBlockStop { index: i });
        }
        self.settle_tools(None, out);
        let index = match self.thinking {
            Some(i) => i,
            None => {
                let i = self.open_block(
                    ContentBlock::Thinking {
                        thinking: String::new(),
                        signature: String::new(),
                    },
                    out,
                );
                self.thinking = Some(i);
                i
            }
        };
        out.push(StreamEvent::ContentBlockDelta {
            index,
            delta: ContentBlockDelta::ThinkingDelta { thinking: text },
        });
    }

    fn text_piece(&mut self, text: String, out: &mut Vec<StreamEvent>) {
        if let Some(i) = self.thinking.take() {
            out.push(StreamEvent::ContentBlockStop { index: i });
        }
        self.settle_tools(None, out);
        let index = match self.text {
            Some(i) => i,
            None => {
                let i = self.open_block(
                    ContentBlock::Text {
                        text: String::new(),
                    },
                    out,
                );
                self.text = Some(i);
                i
            }
        };
        out.push(StreamEvent::ContentBlockDelta {
            index,
            delta: ContentBlockDelta::TextDelta { text },
        });
    }

    /// The slot a tool call piece belongs to: by `index` (the latest call
    /// with it, unless the piece names another id: some servers give every
    /// call index 0); without an index, by `id` (a new id is a new call),
    /// else the last call.
    fn slot_for(&mut self, call: &WireToolCall, pos: usize) -> usize {
        let id = call.id.as_deref().filter(|s| !s.is_empty());
        let wire_index = match (call.index, id) {
            (Some(i), _) => Some(i),
            (None, Some(id)) => self.tools.iter().find(|t| t.id == id).map(|t| t.wire_index),
            (None, None) => self
                .current_tool
                .map(|s| self.tools[s].wire_index)
                .or(Some(pos as u64)),
        };
        if let Some(w) = wire_index {
            if let Some(s) = self.tools.iter().rposition(|t| t.wire_index == w) {
                let other_id =
                    id.is_some_and(|id| !self.tools[s].id.is_empty() && self.tools[s].id != id);
                if !other_id {
                    return s;
                }
                self.tools.push(ToolSlot::new(w));
                return self.tools.len() - 1;
            }
        }
        let wire_index = wire_index.unwrap_or_else(|| {
            self.tools
                .iter()
                .map(|t| t.wire_index + 1)
                .max()
                .unwrap_or(0)
                .max(pos as u64)
        });
        self.tools.push(ToolSlot::new(wire_index));
        self.tools.len() - 1
    }

    fn tool_piece(&mut self, call: &WireToolCall, pos: usize, out: &mut Vec<StreamEvent>) {
        let s = self.slot_for(call, pos);
        let piece = match call.function.as_ref().map(|f| &f.arguments) {
            Some(Value::String(p)) => p.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        if self.tools[s].closed {
            // A complete call's arguments cannot grow; whitespace or a
            // server bug. Dropped.
            return;
        }
        for i in [self.text.take(), self.thinking.take()]
            .into_iter()
            .flatten()
        {
            out.push(StreamEvent::ContentBlockStop { index: i });
        }
        if self.current_tool != Some(s) {
            self.settle_tools(Some(s), out);
            self.current_tool = Some(s);
        }
        let slot = &mut self.tools[s];
        if slot.id.is_empty() {
            slot.id = call.id.clone().unwrap_or_default();
        }
        if slot.name.is_empty() {
            slot.name = call
                .function
                .as_ref()
                .and_then(|f| f.name.clone())
                .unwrap_or_default();
        }
        // Past the cap the assembler refuses the call and drops its input
        // (`provider::limits`); keep no more here either.
        if slot.args.len() <= crate::provider::limits::MAX_TOOL_INPUT_BYTES {
            slot.args.push_str(&piece);
        }
        match slot.block {
            Some(index) if !piece.is_empty() => out.push(StreamEvent::ContentBlockDelta {
                index,
                delta: ContentBlockDelta::InputJsonDelta {
                    partial_json: piece,
                },
            }),
            Some(_) => {}
            None if !slot.name.is_empty() => self.open_tool(s, out),
            None => {}
        }
    }

    /// Sends the start of the tool call in slot `s`, with the arguments
    /// buffered before its name was known.
    fn open_tool(&mut self, s: usize, out: &mut Vec<StreamEvent>) {
        if self.tools[s].id.is_empty() {
            self.tools[s].id = generated_tool_id();
        }
        let (id, name) = (self.tools[s].id.clone(), self.tools[s].name.clone());
        let index = self.open_block(
            ContentBlock::ToolUse(ToolUse {
                id,
                name,
                input: Value::Object(Map::new()),
                extra: Default::default(),
            }),
            out,
        );
        let slot = &mut self.tools[s];
        slot.block = Some(index);
        if !slot.args.is_empty() {
            out.push(StreamEvent::ContentBlockDelta {
                index,
                delta: ContentBlockDelta::InputJsonDelta {
                    partial_json: slot.args.clone(),
                },
            });
        }
    }

    /// The stream moved on: closes every open tool call other than `except`
    /// whose arguments already parse as JSON.
    fn settle_tools(&mut self, except: Option<usize>, out: &mut Vec<StreamEvent>) {
        for (s, slot) in self.tools.iter_mut().enumerate() {
            if Some(s) == except || slot.closed {
                continue;
            }
            if let Some(index) = slot.block {
                let args = slot.args.trim();
                if !args.is_empty() && serde_json::from_str::<Value>(args).is_ok() {
                    slot.closed = true;
                    out.push(StreamEvent::ContentBlockStop { index });
                }
            }
        }
    }

    /// Closes every open block, in block order. A tool call whose name
    /// never came but that has an id or arguments is sent with an empty
    /// name (it is then refused as an unknown tool, and answered).
    fn close_all(&mut self, out: &mut Vec<StreamEvent>) {
        for s in 0..self.tools.len() {
            let slot = &self.tools[s];
            if slot.block.is_none()
                && !slot.closed
                && (!slot.id.is_empty() || !slot.args.trim().is_empty())
            {
                self.open_tool(s, out);
            }
        }
        let mut open: Vec<usize> = self.text.take().into_iter().collect();
        open.extend(self.thinking.take());
        for slot in &mut self.tools {
            if !slot.closed {
                slot.closed = true;
                open.extend(slot.block);
            }
        }
        open.sort_unstable();
        out.extend(
            open.into_iter()
                .map(|index| StreamEvent::ContentBlockStop { index }),
        );
        self.current_tool = None;
    }
}

/// Turns a response body (byte chunks as they come off the network, in any
/// split) into the event stream of one answer, by the rules of the module
/// doc.
///
/// Yields `Ok(event)` up to and including `message_stop`, then ends. Ends
/// after the first `Err`:
/// - [`ProviderError::Stream`] for a chunk with an `error`;
/// - [`ProviderError::Decode`] for a `data:` that is not a chunk, or bytes
///   that are not UTF-8;
/// - [`ProviderError::Transport`] for an error of `bytes` (its text with its
///   `source()` chain), or [`STREAM_ENDED_EARLY`] when `bytes` ends before
///   any `finish_reason` and `[DONE]`.
///
/// Empty `data:` lines are skipped. Bytes after `[DONE]` are never read.
pub fn decode<S, B, E>(bytes: S) -> EventStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    let state = Some(State {
        bytes: Box::pin(bytes),
        decoder: SseDecoder::new(),
        translator: ChunkTranslator::new(),
        frames: VecDeque::new(),
        ready: VecDeque::new(),
    });
    Box::pin(futures::stream::unfold(state, |state| async move {
        let mut st = state?;
        let item = loop {
            if let Some(ev) = st.ready.pop_front() {
                break Ok(ev);
            }
            if st.translator.is_finished() {
                return None;
            }
            if let Some(frame) = st.frames.pop_front() {
                match frame_events(&mut st.translator, &frame) {
                    Ok(events) => st.ready.extend(events),
                    Err(e) => break Err(e),
                }
                continue;
            }
            if let Some(e) = st.decoder.take_error() {
                break Err(e);
            }
            match st.bytes.next().await {
                None if st.translator.saw_finish() => st.ready.extend(st.translator.finish()),
                None => break Err(ProviderError::Transport(STREAM_ENDED_EARLY.into())),
                Some(Err(e)) => break Err(ProviderError::Transport(chain(&e))),
                Some(Ok(chunk)) => match st.decoder.feed(chunk.as_ref()) {
                    Ok(frames) => st.frames.extend(frames),
                    Err(e) => break Err(e),
                },
            }
        };
        let next = match &item {
            Ok(StreamEvent::MessageStop) | Err(_) => None,
            Ok(_) => Some(st),
        };
        Some((item, next))
    }))
}

/// The events of one SSE frame: `[DONE]` finishes the answer; an empty
/// `data:` is a keep-alive; an `event: error` frame whose data is no chunk
/// is a stream error with its text; anything else is a chunk.
fn frame_events(
    translator: &mut ChunkTranslator,
    frame: &SseEvent,
) -> Result<Vec<StreamEvent>, ProviderError> {
    let data = frame.data.trim();
    if data.is_empty() {
        return Ok(Vec::new());
    }
    if data == DONE {
        return Ok(translator.finish());
    }
    match translator.push_data(data) {
        Err(ProviderError::Decode(_)) if frame.event == "error" => Err(
            super::errors::stream_error(&Value::String(data.to_string())),
        ),
        other => other,
    }
}

/// What [`decode`] carries between events.
struct State<S> {
    bytes: std::pin::Pin<Box<S>>,
    decoder: SseDecoder,
    translator: ChunkTranslator,
    frames: VecDeque<SseEvent>,
    ready: VecDeque<StreamEvent>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::StopReason;
    use crate::provider::assemble::MessageAssembler;
    use futures::executor::block_on;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn events(body: &str, split: usize) -> Vec<Result<StreamEvent, ProviderError>> {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body
            .as_bytes()
            .chunks(split.max(1))
            .map(|c| Ok(c.to_vec()))
            .collect();
        block_on(decode(futures::stream::iter(chunks)).collect())
    }

    fn sse(chunks: &[Value]) -> String {
        let mut s: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        s.push_str("data: [DONE]\n\n");
        s
    }

    #[test]
    fn message_golden() {
        assert_eq!(
            STREAM_ENDED_EARLY,
            "stream ended before the answer finished (no finish_reason, no [DONE])"
        );
    }

    #[test]
    fn every_split_gives_the_same_events() {
        let body = sse(&[
            json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "Grüße 🎉"}}]}),
            json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "Read", "arguments": "{\"file_path\":"}}]}}]}),
            json!({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"ü\"}"}}]}, "finish_reason": "tool_calls"}]}),
        ]);
        let whole = events(&body, body.len());
        assert!(whole.iter().all(Result::is_ok), "{whole:?}");
        assert_eq!(whole.last(), Some(&Ok(StreamEvent::MessageStop)));
        for split in 1..40 {
            assert_eq!(events(&body, split), whole, "split {split}");
        }
    }

    #[test]
    fn eof_after_finish_is_clean_and_before_it_is_a_drop() {
        let finished = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\n";
        let got = events(finished, 7);
        assert_eq!(got.last(), Some(&Ok(StreamEvent::MessageStop)));
        let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n";
        let got = events(cut, 7);
        assert_eq!(
            got.last(),
            Some(&Err(ProviderError::Transport(STREAM_ENDED_EARLY.into())))
        );
    }

    #[test]
    fn not_json_is_a_decode_error_and_an_error_event_a_stream_error() {
        let got = events("data: {nope\n\n", 100);
        assert!(
            matches!(got.as_slice(), [Err(ProviderError::Decode(m))] if m.ends_with("in data: {nope")),
            "{got:?}"
        );
        let got = events("event: error\ndata: upstream went away\n\n", 100);
        assert_eq!(
            got,
            vec![Err(ProviderError::Stream {
                kind: crate::provider::openai::errors::STREAM_ERROR_KIND.into(),
                message: "upstream went away".into()
            })]
        );
    }

    #[test]
    fn a_call_without_index_or_id_and_one_whose_name_comes_late() {
        // No `index`: ids tell the calls apart; the second call's name comes
        // after its first argument piece.
        let body = sse(&[
            json!({"choices": [{"delta": {"tool_calls": [{"id": "a", "function": {"name": "Glob", "arguments": "{\"pattern\":\"*\"}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"id": "b", "function": {"arguments": "{\"pattern\":"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"name": "Grep", "arguments": "\"x\"}"}}]}}]}),
            json!({"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}),
        ]);
        let mut a = MessageAssembler::new();
        for e in events(&body, 5) {
            a.push(e.unwrap());
        }
        assert_eq!(a.stop_reason(), Some(&StopReason::ToolUse));
        let uses: Vec<_> = a.message().tool_uses().cloned().collect();
        assert_eq!(
            uses,
            vec![
                ToolUse {
                    id: "a".into(),
                    name: "Glob".into(),
                    input: json!({"pattern": "*"}),
                    extra: Default::default(),
                },
                ToolUse {
                    id: "b".into(),
                    name: "Grep".into(),
                    input: json!({"pattern": "x"}),
                    extra: Default::default(),
                },
            ]
        );
    }

    #[test]
    fn a_new_id_under_a_used_index_is_a_new_call() {
        let body = sse(&[
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "Read", "arguments": "{\"file_path\":"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"a.rs\"}"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "b", "function": {"name": "Read", "arguments": ""}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"file_path\":\"b.rs\"}"}}]}, "finish_reason": "tool_calls"}]}),
        ]);
        let mut a = MessageAssembler::new();
        for e in events(&body, 9) {
            a.push(e.unwrap());
        }
        let inputs: Vec<_> = a
            .message()
            .tool_uses()
            .map(|t| (t.id.clone(), t.input.clone()))
            .collect();
        assert_eq!(
            inputs,
            vec![
                ("a".to_string(), json!({"file_path": "a.rs"})),
                ("b".to_string(), json!({"file_path": "b.rs"})),
            ]
        );
    }

    #[test]
    fn a_finished_call_closes_when_the_next_one_starts() {
        let mut t = ChunkTranslator::new();
        let first = t
            .push_data(r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"Read","arguments":"{}"}}]}}]}"#)
            .unwrap();
        assert!(!first.contains(&StreamEvent::ContentBlockStop { index: 0 }));
        let second = t
            .push_data(r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"Read","arguments":""}}]}}]}"#)
            .unwrap();
        assert_eq!(second[0], StreamEvent::ContentBlockStop { index: 0 });
    }
}
