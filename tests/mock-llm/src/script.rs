//! The script: the JSON file that says what the mock model answers, request by
//! request. Parsing is strict (`deny_unknown_fields`), so a typo in a
//! script is an error at load time instead of a silently ignored option.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// Default number of chars per `text_delta` when an entry sets no
/// `text_chunk_chars`.
pub const DEFAULT_TEXT_CHUNK_CHARS: usize = 16;
/// Default number of chars per `input_json_delta.partial_json` when an entry
/// sets no `json_chunk_chars`.
pub const DEFAULT_JSON_CHUNK_CHARS: usize = 24;

/// A whole script: `{"responses": [Entry, ...]}`. Request number N (0-based,
/// counting only requests that passed the pairing rule and the entry's
/// `expect`) is answered by `responses[N]`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The scripted answers, in the order they are served.
    pub responses: Vec<Entry>,
    /// The context window to enforce, in tokens (bytes / 4 of the request
    /// body): a longer request is refused with the API's own 400 (README,
    /// "Context window"). Absent: no limit.
    #[serde(default)]
    pub context_window: Option<u64>,
    /// The text mock-llm answers a summary request with, in place of its
    /// own summary (README, "Context window"): a client's handling of a
    /// summary it cannot use (e.g. `<summary></summary>`).
    #[serde(default)]
    pub summary: Option<String>,
    /// The models mock-llm serves (README, "Models"): `GET /v1/models`
    /// lists them, and a `POST /v1/messages` for another model is refused
    /// with the real API's 404. Absent: any model is answered.
    #[serde(default)]
    pub models: Option<Vec<String>>,
}

/// Why a script could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The file could not be read (path, io error).
    #[error("cannot read script {path}: {source}")]
    Read {
        /// The script path as given.
        path: String,
        /// The io error from the file system.
        source: std::io::Error,
    },
    /// The text is not a valid script (serde's message, with line and column).
    #[error("invalid script: {0}")]
    Parse(#[from] serde_json::Error),
    /// The JSON parsed but an entry breaks a rule (entry index is 0-based).
    #[error("invalid script: responses[{index}]: {reason}")]
    Invalid {
        /// 0-based index into `responses`.
        index: usize,
        /// What is wrong and how to fix it.
        reason: String,
    },
}

impl Script {
    /// Parses a script from JSON text.
    ///
    /// Takes the script text (see the crate docs / README for the format);
    /// returns the script, or [`ScriptError::Parse`] for bad JSON or unknown
    /// fields and [`ScriptError::Invalid`] for a chunk size of 0, a fault with
    /// zero or several kinds, or an `http_status` outside 400..=599.
    pub fn from_json(text: &str) -> Result<Script, ScriptError> {
        let script: Script = serde_json::from_str(text)?;
        script.validate()?;
        Ok(script)
    }

    /// Reads and parses a script file (UTF-8 JSON).
    ///
    /// Returns [`ScriptError::Read`] when the file cannot be read, else what
    /// [`Script::from_json`] returns.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Script, ScriptError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Script::from_json(&text)
    }

    fn validate(&self) -> Result<(), ScriptError> {
        for (index, entry) in self.responses.iter().enumerate() {
            entry
                .validate()
                .map_err(|reason| ScriptError::Invalid { index, reason })?;
        }
        Ok(())
    }
}

/// One scripted answer: the content the model "says", how it is streamed, what
/// the incoming request must look like, and an optional fault.
#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The assistant content blocks, in order. May be empty.
    #[serde(default)]
    pub content: Vec<Block>,
    /// `stop_reason` of the message. Default: `"tool_use"` when `content` has a
    /// tool_use block, else `"end_turn"`.
    #[serde(default)]
    pub stop_reason: Option<String>,
    /// `stop_details` sent next to `stop_reason` (`message_delta.delta` /
    /// the JSON message), as scripted; any JSON value, `null` included.
    /// Absent: the field is not sent. The API sends it with
    /// `stop_reason: "refusal"`, e.g.
    /// `{"type":"refusal","category":"cyber","explanation":"..."}`.
    #[serde(default, deserialize_with = "present")]
    pub stop_details: Option<Value>,
    /// Chars (Unicode scalar values, not bytes) per `text_delta`; default
    /// [`DEFAULT_TEXT_CHUNK_CHARS`]; must be ≥ 1.
    #[serde(default)]
    pub text_chunk_chars: Option<usize>,
    /// Chars per `input_json_delta.partial_json`; default
    /// [`DEFAULT_JSON_CHUNK_CHARS`]; must be ≥ 1.
    #[serde(default)]
    pub json_chunk_chars: Option<usize>,
    /// Milliseconds slept between two SSE events; default 0.
    #[serde(default)]
    pub event_delay_ms: Option<u64>,
    /// Token counts to report, cache counts included (they replace the
    /// prompt cache simulation's); default: input ≈ request bytes not in a
    /// cached prefix / 4, output ≈ content chars / 4 (at least 1), cache
    /// counts from the simulation (README, "Prompt cache").
    #[serde(default)]
    pub usage: Option<Usage>,
    /// Checks on the incoming request; a failed check answers HTTP 400 and the
    /// script does not advance.
    #[serde(default)]
    pub expect: Option<Expect>,
    /// Makes this entry fail instead of (or after part of) answering.
    #[serde(default)]
    pub fault: Option<Fault>,
}

impl Entry {
    /// `text_chunk_chars` or its default.
    pub fn text_chunk(&self) -> usize {
        self.text_chunk_chars.unwrap_or(DEFAULT_TEXT_CHUNK_CHARS)
    }

    /// `json_chunk_chars` or its default.
    pub fn json_chunk(&self) -> usize {
        self.json_chunk_chars.unwrap_or(DEFAULT_JSON_CHUNK_CHARS)
    }

    /// The `stop_reason` to send: the scripted one, else `"tool_use"` when a
    /// tool_use block is present (raw blocks do not count, whatever their
    /// type), else `"end_turn"`.
    pub fn effective_stop_reason(&self) -> String {
        match &self.stop_reason {
            Some(reason) => reason.clone(),
            None if self
                .content
                .iter()
                .any(|b| matches!(b, Block::ToolUse { .. })) =>
            {
                "tool_use".to_string()
            }
            None => "end_turn".to_string(),
        }
    }

    fn validate(&self) -> Result<(), String> {
        if self.text_chunk_chars == Some(0) {
            return Err("text_chunk_chars must be at least 1".into());
        }
        if self.json_chunk_chars == Some(0) {
            return Err("json_chunk_chars must be at least 1".into());
        }
        if let Some(fault) = &self.fault {
            fault.kind()?;
        }
        for (i, block) in self.content.iter().enumerate() {
            if let Block::Raw { block, .. } = block {
                if !block.is_object() {
                    return Err(format!(
                        "content[{i}]: a raw block's `block` must be a JSON object (a content block), got {block}"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Deserializes a present field as `Some`, so a scripted `null` is kept
/// (`Some(Value::Null)`) instead of read as absent.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A content block of a scripted answer (Messages API content block shapes).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Block {
    /// `{"type":"text","text":"..."}`: streamed as `text_delta`s.
    Text {
        /// The whole text of the block.
        text: String,
    },
    /// `{"type":"tool_use","id","name","input"}`: streamed as
    /// `input_json_delta`s of the compact JSON of `input`.
    ToolUse {
        /// The tool_use id (e.g. `toolu_01`); the client must answer it with a
        /// tool_result of the same id.
        id: String,
        /// Tool name, e.g. `Grep`.
        name: String,
        /// The tool input; default `{}`.
        #[serde(default = "empty_object")]
        input: Value,
        /// When set, streamed verbatim as `partial_json` (split by
        /// `json_chunk_chars`; an empty string gives one delta with `""`)
        /// instead of the JSON of `input`, so a test can send empty or cut
        /// JSON. Non-streaming answers ignore it and use `input`.
        #[serde(default)]
        input_json: Option<String>,
    },
    /// `{"type":"raw","block":{...}}`: a content block of a type the script
    /// format does not model (`server_tool_use`, `web_search_tool_result`, a
    /// text block with `citations`, …), sent exactly as written: streamed as
    /// a `content_block_start` carrying it, then one `content_block_delta`
    /// per `deltas` entry, then `content_block_stop`; in the JSON message
    /// as-is (`deltas` are not applied there). `POST /v1/chat/completions`
    /// skips it. Must be a JSON object.
    Raw {
        /// The whole content block, `type` included.
        block: Value,
        /// The `delta` objects to stream for it, sent exactly as written
        /// (`citations_delta`, `compaction_delta`, `input_json_delta`, …).
        #[serde(default)]
        deltas: Vec<Value>,
    },
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Token counts reported in `message_start` / `message_delta` / the JSON
/// message (Messages API `usage`). A scripted usage replaces the prompt
/// cache simulation's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Usage {
    /// `usage.input_tokens`.
    pub input_tokens: u64,
    /// `usage.output_tokens` (final count, sent in `message_delta`).
    pub output_tokens: u64,
    /// `usage.cache_creation_input_tokens`; default 0.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// `usage.cache_read_input_tokens`; default 0.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
}

/// Checks on the incoming request (all must hold).
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// tool_use id → substring that the text of that tool_result must contain.
    /// The text is the `content` string, or its `text` blocks joined by `\n`.
    #[serde(default)]
    pub tool_result_contains: BTreeMap<String, String>,
    /// tool_use id → the expected `is_error` of that tool_result (absent counts
    /// as `false`, as in the Messages API).
    #[serde(default)]
    pub tool_result_is_error: BTreeMap<String, bool>,
    /// Substring that the text of the last user message must contain (its
    /// `content` string, or its `text` blocks joined by `\n`).
    #[serde(default)]
    pub last_user_text_contains: Option<String>,
}

/// A fault as written in the script. Exactly one of `http_status`,
/// `sse_error`, `disconnect_after_events` must be set; see [`FaultKind`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    /// Answer with this HTTP status (400..=599) and an API-style error body.
    #[serde(default)]
    pub http_status: Option<u16>,
    /// With `http_status`: value of the `retry-after` header, in seconds.
    #[serde(default)]
    pub retry_after_s: Option<u64>,
    /// Stream `after_events` events, then an `event: error` of this error type
    /// (e.g. `overloaded_error`).
    #[serde(default)]
    pub sse_error: Option<String>,
    /// With `sse_error`: how many events of the answer come before the error
    /// (default 0).
    #[serde(default)]
    pub after_events: Option<usize>,
    /// Stream this many events, then cut the connection mid-body.
    #[serde(default)]
    pub disconnect_after_events: Option<usize>,
    /// Error message to send instead of the default one for the error type.
    #[serde(default)]
    pub message: Option<String>,
    /// Sends the `x-should-retry: true|false` header with this answer
    /// (`POST /v1/messages` only), as the API does to overrule a client's
    /// own retry rules.
    #[serde(default)]
    pub should_retry: Option<bool>,
}

/// The validated kind of a [`Fault`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// HTTP error answer: status, optional `retry-after` seconds.
    Http {
        /// HTTP status code, 400..=599.
        status: u16,
        /// `retry-after` header value in seconds, when set.
        retry_after_s: Option<u64>,
    },
    /// An SSE `error` event after `after_events` events of the answer.
    SseError {
        /// Messages API error type, e.g. `overloaded_error`.
        error_type: String,
        /// Number of answer events sent before the error event.
        after_events: usize,
    },
    /// Connection aborted after `after_events` events.
    Disconnect {
        /// Number of answer events sent before the cut.
        after_events: usize,
    },
}

impl Fault {
    /// The one kind this fault has; `Err` (a message for [`ScriptError::Invalid`])
    /// when none or several kinds are set or `http_status` is outside 400..=599.
    pub fn kind(&self) -> Result<FaultKind, String> {
        let set = [
            self.http_status.is_some(),
            self.sse_error.is_some(),
            self.disconnect_after_events.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if set != 1 {
            return Err(
                "fault must set exactly one of http_status, sse_error, disconnect_after_events"
                    .into(),
            );
        }
        if let Some(status) = self.http_status {
            if !(400..=599).contains(&status) {
                return Err(format!(
                    "fault.http_status must be in 400..=599, got {status}"
                ));
            }
            return Ok(FaultKind::Http {
                status,
                retry_after_s: self.retry_after_s,
            });
        }
        if let Some(error_type) = &self.sse_error {
            return Ok(FaultKind::SseError {
                error_type: error_type.clone(),
                after_events: self.after_events.unwrap_or(0),
            });
        }
        Ok(FaultKind::Disconnect {
            after_events: self.disconnect_after_events.unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_issue_example() {
        let script = Script::from_json(
            r#"{ "responses": [
              { "content": [
                  { "type": "text", "text": "Let me look." },
                  { "type": "tool_use", "id": "toolu_01", "name": "Grep",
                    "input": { "pattern": "Helo" } } ],
                "stop_reason": "tool_use",
                "text_chunk_chars": 8,
                "json_chunk_chars": 12,
                "event_delay_ms": 0,
                "expect": { "tool_result_contains": { "toolu_00": "greeting.py" } } },
              { "fault": { "http_status": 529 } }
            ] }"#,
        )
        .unwrap();
        assert_eq!(script.responses.len(), 2);
        assert_eq!(script.responses[0].text_chunk(), 8);
        assert_eq!(
            script.responses[0]
                .expect
                .as_ref()
                .unwrap()
                .tool_result_contains["toolu_00"],
            "greeting.py"
        );
        assert_eq!(
            script.responses[1].fault.as_ref().unwrap().kind().unwrap(),
            FaultKind::Http {
                status: 529,
                retry_after_s: None
            }
        );
    }

    #[test]
    fn unknown_fields_are_errors() {
        let err = Script::from_json(r#"{"responses":[{"contnt":[]}]}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field `contnt`"), "{err}");
        let err = Script::from_json(
            r#"{"responses":[{"content":[{"type":"text","text":"a","txt":1}]}]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown field `txt`"), "{err}");
    }

    #[test]
    fn bad_entries_are_rejected_with_their_index() {
        let err = Script::from_json(r#"{"responses":[{},{"text_chunk_chars":0}]}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid script: responses[1]: text_chunk_chars must be at least 1"
        );
        let err = Script::from_json(
            r#"{"responses":[{"fault":{"http_status":529,"disconnect_after_events":1}}]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("exactly one of"), "{err}");
        let err =
            Script::from_json(r#"{"responses":[{"fault":{"http_status":200}}]}"#).unwrap_err();
        assert!(err.to_string().contains("400..=599"), "{err}");
    }

    #[test]
    fn stop_reason_defaults_follow_content() {
        let script = Script::from_json(
            r#"{"responses":[
                {"content":[{"type":"text","text":"hi"}]},
                {"content":[{"type":"tool_use","id":"t","name":"Read"}]},
                {"stop_reason":"max_tokens"}]}"#,
        )
        .unwrap();
        let reasons: Vec<String> = script
            .responses
            .iter()
            .map(Entry::effective_stop_reason)
            .collect();
        assert_eq!(reasons, ["end_turn", "tool_use", "max_tokens"]);
        match &script.responses[1].content[0] {
            Block::ToolUse { input, .. } => assert_eq!(input, &serde_json::json!({})),
            other => panic!("not a tool_use: {other:?}"),
        }
    }

    #[test]
    fn stop_details_is_kept_as_written_null_included() {
        let script = Script::from_json(
            r#"{"responses":[
                {},
                {"stop_reason":"refusal","stop_details":{"type":"refusal","category":"cyber"}},
                {"stop_details":null}]}"#,
        )
        .unwrap();
        assert_eq!(script.responses[0].stop_details, None);
        assert_eq!(
            script.responses[1].stop_details,
            Some(serde_json::json!({"type":"refusal","category":"cyber"}))
        );
        assert_eq!(script.responses[2].stop_details, Some(Value::Null));
    }

    #[test]
    fn raw_blocks_parse_must_be_objects_and_do_not_make_a_tool_use_stop() {
        let script = Script::from_json(
            r#"{"responses":[{"content":[
                {"type":"raw","block":{"type":"server_tool_use","id":"srvtoolu_01",
                                       "name":"web_search","input":{"query":"x"}}},
                {"type":"raw","block":{"type":"web_search_tool_result",
                                       "tool_use_id":"srvtoolu_01","content":[]}}]}]}"#,
        )
        .unwrap();
        let entry = &script.responses[0];
        assert_eq!(
            entry.content[0],
            Block::Raw {
                block: serde_json::json!({"type":"server_tool_use","id":"srvtoolu_01",
                                          "name":"web_search","input":{"query":"x"}}),
                deltas: Vec::new(),
            }
        );
        assert_eq!(entry.effective_stop_reason(), "end_turn");

        let err =
            Script::from_json(r#"{"responses":[{},{"content":[{"type":"raw","block":"text"}]}]}"#)
                .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid script: responses[1]: content[0]: a raw block's `block` must be a JSON object (a content block), got \"text\""
        );
        let err = Script::from_json(r#"{"responses":[{"content":[{"type":"raw","blok":{}}]}]}"#)
            .unwrap_err();
        assert!(err.to_string().contains("unknown field `blok`"), "{err}");
    }

    #[test]
    fn usage_cache_counts_default_to_zero() {
        let script = Script::from_json(
            r#"{"responses":[
                {"usage":{"input_tokens":1,"output_tokens":2}},
                {"usage":{"input_tokens":1,"output_tokens":2,
                          "cache_creation_input_tokens":3,"cache_read_input_tokens":4}}]}"#,
        )
        .unwrap();
        let plain = script.responses[0].usage.unwrap();
        assert_eq!(
            (
                plain.cache_creation_input_tokens,
                plain.cache_read_input_tokens
            ),
            (0, 0)
        );
        let cached = script.responses[1].usage.unwrap();
        assert_eq!(
            (
                cached.cache_creation_input_tokens,
                cached.cache_read_input_tokens
            ),
            (3, 4)
        );
    }
}
