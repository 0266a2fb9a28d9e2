//! Server-sent events of a streaming Messages API response → [`StreamEvent`]s.
//!
//! Two layers:
//!
//! - [`SseDecoder`] frames the byte stream into SSE events by the WHATWG
//!   rules (<https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation>):
//!   lines end with `\r\n`, `\n` or `\r`; a blank line ends an event; one
//!   leading BOM is skipped. It buffers bytes, not text, so an event, a line,
//!   a `\r\n` pair or a UTF-8 character split between two network reads
//!   decodes exactly once and exactly right (the tests try every split point).
//!   It replaces the `eventsource-stream` crate, which panics on a leading
//!   BOM (it slices `&str[1..]` inside the 3-byte U+FEFF) and never ends an
//!   event whose last line ends with a lone `\r` at end of stream.
//! - [`decode`] applies the Messages API rules
//!   (<https://docs.anthropic.com/en/api/messages-streaming>): each event's
//!   `data:` is one JSON object tagged by `type`; unknown types become
//!   [`StreamEvent::Unknown`], as the API's versioning policy asks; an
//!   `error` event ends the stream with [`ProviderError::Stream`];
//!   `message_stop` ends it cleanly; a byte stream that ends before
//!   `message_stop` ends with [`ProviderError::Transport`]
//!   ([`STREAM_ENDED_EARLY`]), so a dropped connection is never mistaken for a
//!   finished answer.

use std::collections::VecDeque;

use futures::{Stream, StreamExt};
use serde_json::Value;

use super::{EventStream, ProviderError};
use crate::protocol::StreamEvent;

/// Longest SSE line [`SseDecoder`] buffers, in bytes (16 MiB). The API's
/// lines are a few KiB at most; a longer one means the body is not SSE.
/// It also bounds one event's `data:` lines together.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One SSE event: the `event:` field (`"message"` when absent) and the
/// `data:` lines joined with `\n`. `id:` and `retry:` are ignored (the
/// Messages API does not use them and lathe never reconnects a stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// Event type from the `event:` field, `"message"` by default.
    pub event: String,
    /// Data lines joined with `\n`, without the final `\n`.
    pub data: String,
}

/// Incremental SSE framer: feed it network reads of any size, in order.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The leading BOM check is done.
    started: bool,
    /// The previous line ended with `\r`: an `\n` right after belongs to it.
    skip_lf: bool,
    /// `event:` of the event being built.
    event: String,
    /// `data:` lines of the event being built, each followed by `\n`.
    data: String,
    /// An error met after some events of the same read completed: those
    /// were returned first; this comes next ([`Self::take_error`]).
    failed: Option<ProviderError>,
}

impl SseDecoder {
    /// An empty decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Consumes one network read (`chunk`, any length, may split lines and
    /// UTF-8 characters anywhere) and returns the events it completed, in
    /// order. Bytes of an unfinished line or event stay buffered for the next
    /// call; at end of stream they are dropped, as the SSE spec says.
    ///
    /// Errors: [`ProviderError::Decode`] when a complete line is not UTF-8,
    /// or a line grows past [`MAX_LINE_BYTES`]. The events completed before
    /// the bad line always come first, whatever the split of the reads (the
    /// `sse_splits` fuzz target found them lost when they shared a read
    /// with it): such an error is kept for [`Self::take_error`], or the next
    /// `feed`. The decoder should not be fed after an error.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, ProviderError> {
        if let Some(e) = self.failed.take() {
            return Err(e);
        }
        let mut out = Vec::new();
        match self.feed_chunk(chunk, &mut out) {
            Ok(()) => Ok(out),
            Err(e) if out.is_empty() => Err(e),
            Err(e) => {
                self.failed = Some(e);
                Ok(out)
            }
        }
    }

    /// The error met after the events the last [`Self::feed`] returned, if
    /// any; the stream ends with it.
    pub fn take_error(&mut self) -> Option<ProviderError> {
        self.failed.take()
    }

    fn feed_chunk(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        if !self.started {
            // Hold back a possible partial BOM until it is decided.
            self.line.extend_from_slice(chunk);
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return Ok(());
            }
            self.started = true;
            let skip = if self.line.starts_with(BOM) {
                BOM.len()
            } else {
                0
            };
            let buffered = std::mem::take(&mut self.line);
            return self.feed_started(&buffered[skip..], out);
        }
        self.feed_started(chunk, out)
    }

    fn feed_started(
        &mut self,
        mut rest: &[u8],
        out: &mut Vec<SseEvent>,
    ) -> Result<(), ProviderError> {
        if self.skip_lf && !rest.is_empty() {
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
            self.skip_lf = false;
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            if self.line.len() + end > MAX_LINE_BYTES {
                return Err(too_long());
            }
            self.line.extend_from_slice(&rest[..end]);
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, out)?;
            if rest[end] == b'\r' {
                match rest.get(end + 1) {
                    Some(b'\n') => rest = &rest[end + 2..],
                    Some(_) => rest = &rest[end + 1..],
                    None => {
                        self.skip_lf = true;
                        rest = &[];
                    }
                }
            } else {
                rest = &rest[end + 1..];
            }
        }
        if self.line.len() + rest.len() > MAX_LINE_BYTES {
            return Err(too_long());
        }
        self.line.extend_from_slice(rest);
        Ok(())
    }

    /// Interprets one complete line (without its line ending).
    fn take_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), ProviderError> {
        let line = std::str::from_utf8(line)
            .map_err(|e| ProviderError::Decode(format!("an SSE line is not UTF-8: {e}")))?;
        if line.is_empty() {
            let mut data = std::mem::take(&mut self.data);
            let event = std::mem::take(&mut self.event);
            if !data.is_empty() {
                data.pop(); // the `\n` after the last data line
                let event = if event.is_empty() {
                    "message".to_string()
                } else {
                    event
                };
                out.push(SseEvent { event, data });
            }
            return Ok(());
        }
        if line.starts_with(':') {
            return Ok(()); // comment
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.data.len() + value.len() > MAX_LINE_BYTES {
                    return Err(ProviderError::Decode(format!(
                        "an SSE event's data is longer than {MAX_LINE_BYTES} bytes; the body is not an event stream"
                    )));
                }
                self.data.push_str(value);
                self.data.push('\n');
            }
            _ => {} // id, retry, unknown fields
        }
        Ok(())
    }
}

/// The decoder's error for a line over [`MAX_LINE_BYTES`].
fn too_long() -> ProviderError {
    ProviderError::Decode(format!(
        "an SSE line is longer than {MAX_LINE_BYTES} bytes; the body is not an event stream"
    ))
}

/// [`ProviderError::Transport`] text when the byte stream ends (EOF) before a
/// `message_stop` event: the connection closed in the middle of the answer.
pub const STREAM_ENDED_EARLY: &str = "stream ended before message_stop";

/// Decodes one SSE event's `data:` payload (the JSON text, without `data: `).
///
/// Returns the event ([`StreamEvent::Unknown`] for an unknown event `type`;
/// a block type lathe does not model arrives as
/// [`crate::protocol::ContentBlock::Opaque`]), or
/// `Err(ProviderError::Decode)` when `data` is not JSON or a known event type
/// has the wrong shape. The error text names the serde error and the payload
/// (cut to 200 chars). An `error` event is returned as
/// [`StreamEvent::Error`]; [`decode`] turns it into an `Err`.
pub fn parse_data(data: &str) -> Result<StreamEvent, ProviderError> {
    let value: Value = serde_json::from_str(data).map_err(|e| decode_error(&e, data))?;
    serde_json::from_value(value).map_err(|e| decode_error(&e, data))
}

fn decode_error(e: &serde_json::Error, data: &str) -> ProviderError {
    let shown: String = data.chars().take(200).collect();
    let more = if shown.len() < data.len() { "…" } else { "" };
    ProviderError::Decode(format!("{e} in data: {shown}{more}"))
}

/// Turns a response body (a stream of byte chunks as they come off the
/// network, in any split) into the event stream of one Messages API answer.
///
/// Yields `Ok(event)` for every event up to and including `message_stop`
/// (`ping` and [`StreamEvent::Unknown`] included, for the consumer to
/// ignore), then ends. Ends after the first `Err`:
/// - [`ProviderError::Stream`] for an `error` event (`kind` = its
///   `error.type`, `message` = its `error.message`);
/// - [`ProviderError::Decode`] for a `data:` payload that [`parse_data`]
///   rejects, or bytes that are not UTF-8;
/// - [`ProviderError::Transport`] for an error of `bytes` (its `Display`
///   text with its `source()` chain), or [`STREAM_ENDED_EARLY`] when
///   `bytes` ends before `message_stop`.
///
/// Bytes after `message_stop` are never read.
pub fn decode<S, B, E>(bytes: S) -> EventStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: std::error::Error + Send + 'static,
{
    let state = Some(State {
        bytes: Box::pin(bytes),
        decoder: SseDecoder::new(),
        ready: VecDeque::new(),
    });
    Box::pin(futures::stream::unfold(state, |state| async move {
        // `None` state: the stream already ended (message_stop or an error).
        let mut st = state?;
        let item = loop {
            if let Some(ev) = st.ready.pop_front() {
                break match parse_data(&ev.data) {
                    Ok(StreamEvent::Error { error }) => Err(ProviderError::Stream {
                        kind: error.kind,
                        message: error.message,
                    }),
                    other => other,
                };
            }
            if let Some(e) = st.decoder.take_error() {
                break Err(e);
            }
            match st.bytes.next().await {
                None => break Err(ProviderError::Transport(STREAM_ENDED_EARLY.into())),
                Some(Err(e)) => break Err(ProviderError::Transport(chain(&e))),
                Some(Ok(chunk)) => match st.decoder.feed(chunk.as_ref()) {
                    Ok(events) => st.ready.extend(events),
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

/// What [`decode`] carries between events.
struct State<S> {
    bytes: std::pin::Pin<Box<S>>,
    decoder: SseDecoder,
    ready: VecDeque<SseEvent>,
}

/// `err` and each of its `source()`s, joined with `": "` (reqwest's own
/// `Display` omits the cause, e.g. "error decoding response body" without
/// "connection closed before message completed").
pub(crate) fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = e.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ContentBlock, ContentBlockDelta, MessageDeltaBody, StopReason};
    use futures::executor::block_on;
    use futures::stream;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use std::fmt::Display;

    /// A realistic stream as the API sends it, with non-ASCII text (2-, 3- and
    /// 4-byte UTF-8) in text and in `partial_json`, a ping, and an event type
    /// this version does not know.
    fn realistic(eol: &str) -> String {
        let events = [
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type": "ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Grüße — ✓ 日本"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" 🎉!"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"Grep","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pattern\": \"Grü"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ße 🎉\"}"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            ("future_event", r#"{"type":"future_event","what":"ever"}"#),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ];
        events
            .iter()
            .map(|(name, data)| format!("event: {name}{eol}data: {data}{eol}{eol}"))
            .collect()
    }

    fn expected() -> Vec<StreamEvent> {
        let start: StreamEvent = serde_json::from_str(
            r#"{"type":"message_start","message":{"id":"msg_01","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}"#,
        )
        .unwrap();
        let text = |t: &str| StreamEvent::ContentBlockDelta {
            index: 0,
            delta: ContentBlockDelta::TextDelta { text: t.into() },
        };
        let json = |t: &str| StreamEvent::ContentBlockDelta {
            index: 1,
            delta: ContentBlockDelta::InputJsonDelta {
                partial_json: t.into(),
            },
        };
        vec![
            start,
            StreamEvent::ContentBlockStart {
                index: 0,
                content_block: ContentBlock::Text {
                    text: String::new(),
                },
            },
            StreamEvent::Ping,
            text("Grüße — ✓ 日本"),
            text(" 🎉!"),
            StreamEvent::ContentBlockStop { index: 0 },
            StreamEvent::ContentBlockStart {
                index: 1,
                content_block: ContentBlock::ToolUse(crate::protocol::ToolUse {
                    id: "toolu_01".into(),
                    name: "Grep".into(),
                    input: serde_json::json!({}),
                    extra: Default::default(),
                }),
            },
            json("{\"pattern\": \"Grü"),
            json("ße 🎉\"}"),
            StreamEvent::ContentBlockStop { index: 1 },
            StreamEvent::Unknown,
            StreamEvent::MessageDelta {
                delta: MessageDeltaBody {
                    stop_reason: Some(StopReason::ToolUse),
                    ..MessageDeltaBody::default()
                },
                usage: Some(crate::protocol::Usage {
                    output_tokens: Some(89),
                    ..Default::default()
                }),
            },
            StreamEvent::MessageStop,
        ]
    }

    #[derive(Debug)]
    struct Broken(&'static str);
    impl Display for Broken {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Broken {}

    /// Decodes `chunks` (each one network read) to completion.
    fn run(chunks: Vec<Vec<u8>>) -> Vec<Result<StreamEvent, ProviderError>> {
        let s = stream::iter(chunks.into_iter().map(Ok::<_, Broken>));
        block_on(decode(s).collect())
    }

    fn oks(events: Vec<StreamEvent>) -> Vec<Result<StreamEvent, ProviderError>> {
        events.into_iter().map(Ok).collect()
    }

    /// Found by the `sse_splits` fuzz target: events that completed in the
    /// same read as a bad line were lost, so the events depended on how the
    /// network split the bytes.
    #[test]
    fn events_before_a_bad_line_come_first_in_every_split() {
        let stream: &[u8] = b"data: {\"type\":\"ping\"}\n\ndata: \xff\n\n";
        let whole = run(vec![stream.to_vec()]);
        assert_eq!(whole.len(), 2, "{whole:?}");
        assert_eq!(whole[0].as_ref().ok(), Some(&StreamEvent::Ping));
        assert!(
            matches!(&whole[1], Err(ProviderError::Decode(m)) if m.contains("not UTF-8")),
            "{whole:?}"
        );
        for cut in 0..=stream.len() {
            let split = run(vec![stream[..cut].to_vec(), stream[cut..].to_vec()]);
            assert_eq!(split, whole, "cut at {cut}");
        }
    }

    #[test]
    fn whole_stream_decodes() {
        assert_eq!(run(vec![realistic("\n").into_bytes()]), oks(expected()));
    }

    #[test]
    fn every_two_way_split_decodes_exactly_once() {
        for eol in ["\n", "\r\n", "\r"] {
            let bytes = realistic(eol).into_bytes();
            for i in 0..=bytes.len() {
                let got = run(vec![bytes[..i].to_vec(), bytes[i..].to_vec()]);
                assert_eq!(got, oks(expected()), "eol {eol:?}, split at byte {i}");
            }
        }
    }

    #[test]
    fn one_byte_per_read_decodes() {
        for eol in ["\n", "\r\n"] {
            let chunks = realistic(eol)
                .into_bytes()
                .into_iter()
                .map(|b| vec![b])
                .collect();
            assert_eq!(run(chunks), oks(expected()), "eol {eol:?}");
        }
    }

    proptest! {
        #[test]
        fn arbitrary_splits_decode(cuts in proptest::collection::vec(0usize..4000, 0..12), crlf: bool) {
            let bytes = realistic(if crlf { "\r\n" } else { "\n" }).into_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for c in cuts.into_iter().chain([bytes.len()]) {
                chunks.push(bytes[from..c].to_vec());
                from = c;
            }
            prop_assert_eq!(run(chunks), oks(expected()));
        }
    }

    #[test]
    fn utf8_bom_and_comments_are_skipped() {
        let body = format!("\u{feff}: keep-alive comment\n\n{}", realistic("\r\n"));
        assert_eq!(run(vec![body.into_bytes()]), oks(expected()));
    }

    #[test]
    fn bom_split_across_reads_is_skipped_once() {
        let body = format!("\u{feff}{}", realistic("\n")).into_bytes();
        for i in 0..=4 {
            assert_eq!(
                run(vec![body[..i].to_vec(), body[i..].to_vec()]),
                oks(expected()),
                "split {i}"
            );
        }
        // A U+FEFF that is not the first character is data, not a BOM.
        let mut d = SseDecoder::new();
        let got = d.feed("data: x\n\n\u{feff}data: y\n\n".as_bytes()).unwrap();
        assert_eq!(got.len(), 1, "{got:?}");
    }

    #[test]
    fn framing_follows_the_sse_spec() {
        let mut d = SseDecoder::new();
        let got = d
            .feed(b"event: a\ndata: one\ndata:two\ndata\nid: 7\nretry: 10\n\nevent: only-a-name\n\n: c\ndata:  sp\r\r")
            .unwrap();
        assert_eq!(
            got,
            vec![
                SseEvent {
                    event: "a".into(),
                    data: "one\ntwo\n".into()
                },
                SseEvent {
                    event: "message".into(),
                    data: " sp".into()
                },
            ]
        );
        // An unterminated event at end of stream is never dispatched.
        assert_eq!(d.feed(b"data: half").unwrap(), vec![]);
    }

    #[test]
    fn invalid_utf8_line_is_decode_error() {
        let mut d = SseDecoder::new();
        match d.feed(b"data: \xFF\xFE\n\n") {
            Err(ProviderError::Decode(m)) => {
                assert!(m.starts_with("an SSE line is not UTF-8"), "{m}")
            }
            other => panic!("expected Decode, got {other:?}"),
        }
    }

    #[test]
    fn endless_line_is_decode_error() {
        let mut d = SseDecoder::new();
        assert_eq!(d.feed(&vec![b'a'; MAX_LINE_BYTES]).unwrap(), vec![]);
        assert!(matches!(d.feed(b"a"), Err(ProviderError::Decode(_))));
    }

    #[test]
    fn unknown_event_type_is_unknown_and_stream_continues() {
        let body = "event: brand_new\ndata: {\"type\":\"brand_new\",\"x\":[1]}\n\n\
                    event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
        assert_eq!(
            run(vec![body.into()]),
            oks(vec![StreamEvent::Unknown, StreamEvent::MessageStop])
        );
    }

    #[test]
    fn unknown_content_block_type_is_kept_opaque() {
        let block = "{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}";
        let body = format!(
            "data: {{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{block}}}\n\n\
             data: {{\"type\":\"message_stop\"}}\n\n"
        );
        assert_eq!(
            run(vec![body.into_bytes()]),
            oks(vec![
                StreamEvent::ContentBlockStart {
                    index: 0,
                    content_block: crate::protocol::ContentBlock::Opaque(
                        serde_json::from_str(block).expect("json")
                    ),
                },
                StreamEvent::MessageStop
            ])
        );
    }

    #[test]
    fn unknown_blocks_inside_message_start_and_null_usage_decode() {
        let data = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":null,"output_tokens":null,"cache_creation_input_tokens":null,"cache_read_input_tokens":null,"server_tool_use":null,"service_tier":null}}}"#;
        let StreamEvent::MessageStart { message } = parse_data(data).expect("decodes") else {
            panic!("not a message_start");
        };
        assert_eq!(message.content[0].kind(), "web_search_tool_result");
        assert_eq!(message.usage, crate::protocol::Usage::default());
        let delta = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":null,"output_tokens":12,"cache_creation_input_tokens":null,"cache_read_input_tokens":null}}"#;
        let StreamEvent::MessageDelta { usage, .. } = parse_data(delta).expect("decodes") else {
            panic!("not a message_delta");
        };
        assert_eq!(usage.and_then(|u| u.output_tokens), Some(12));
    }

    #[test]
    fn unknown_delta_type_is_kept_as_unknown_delta() {
        let body = "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"future_delta\",\"x\":{}}}\n\n\
                    data: {\"type\":\"message_stop\"}\n\n";
        assert_eq!(
            run(vec![body.into()]),
            oks(vec![
                StreamEvent::ContentBlockDelta {
                    index: 0,
                    delta: ContentBlockDelta::Unknown
                },
                StreamEvent::MessageStop
            ])
        );
    }

    #[test]
    fn bad_json_is_decode_error_and_ends_the_stream() {
        let body = "data: {\"type\":\"ping\"}\n\ndata: {\"type\":\"content_blo\n\ndata: {\"type\":\"message_stop\"}\n\n";
        let got = run(vec![body.into()]);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], Ok(StreamEvent::Ping));
        match &got[1] {
            Err(ProviderError::Decode(m)) => assert!(m.contains("{\"type\":\"content_blo"), "{m}"),
            other => panic!("expected Decode, got {other:?}"),
        }
    }

    #[test]
    fn known_event_with_wrong_shape_is_decode_error() {
        let got = run(vec![
            b"data: {\"type\":\"content_block_stop\",\"index\":\"zero\"}\n\n".to_vec(),
        ]);
        assert!(
            matches!(got.as_slice(), [Err(ProviderError::Decode(_))]),
            "{got:?}"
        );
    }

    #[test]
    fn error_event_is_stream_error_and_ends_the_stream() {
        let body = "event: ping\ndata: {\"type\":\"ping\"}\n\n\
                    event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n\
                    event: ping\ndata: {\"type\":\"ping\"}\n\n";
        assert_eq!(
            run(vec![body.into()]),
            vec![
                Ok(StreamEvent::Ping),
                Err(ProviderError::Stream {
                    kind: "overloaded_error".into(),
                    message: "Overloaded".into()
                })
            ]
        );
    }

    #[test]
    fn eof_before_message_stop_is_transport_error() {
        let full = realistic("\n");
        // Cut inside the message_delta event: everything complete before it
        // decodes, then the early end is reported, once.
        let cut = full.find("event: message_delta").unwrap() + 30;
        let got = run(vec![full.as_bytes()[..cut].to_vec()]);
        let mut want = oks(expected()[..11].to_vec());
        want.push(Err(ProviderError::Transport(STREAM_ENDED_EARLY.into())));
        assert_eq!(got, want);
        assert_eq!(
            run(vec![]),
            vec![Err(ProviderError::Transport(STREAM_ENDED_EARLY.into()))]
        );
    }

    #[test]
    fn byte_stream_error_is_transport_error_and_ends_the_stream() {
        let s = stream::iter(vec![
            Ok(b"data: {\"type\":\"ping\"}\n\n".to_vec()),
            Err(Broken("connection reset")),
            Ok(b"data: {\"type\":\"message_stop\"}\n\n".to_vec()),
        ]);
        let got: Vec<_> = block_on(decode(s).collect());
        assert_eq!(
            got,
            vec![
                Ok(StreamEvent::Ping),
                Err(ProviderError::Transport("connection reset".into()))
            ]
        );
    }

    #[test]
    fn nothing_after_message_stop_is_read() {
        let body =
            "data: {\"type\":\"message_stop\"}\n\ndata: {\"type\":\"ping\"}\n\ndata: not json\n\n";
        assert_eq!(run(vec![body.into()]), oks(vec![StreamEvent::MessageStop]));
    }

    #[test]
    fn stream_ended_early_text_is_pinned() {
        assert_eq!(STREAM_ENDED_EARLY, "stream ended before message_stop");
        assert_eq!(
            ProviderError::Transport(STREAM_ENDED_EARLY.into()).to_string(),
            "connection error: stream ended before message_stop"
        );
    }
}
