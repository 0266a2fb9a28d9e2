//! Serde types of the Anthropic Messages API (`POST /v1/messages`).
//!
//! Only data lives here, no behaviour: the provider turns HTTP/SSE into these
//! types, the agent keeps a transcript of [`Message`]s, and the execution
//! layer produces [`ContentBlock::ToolResult`]s. Field names follow the API
//! reference exactly so a transcript serialises to a valid request body.

mod stream;

pub use stream::{ApiErrorBody, ContentBlockDelta, MessageDeltaBody, StreamEvent};

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a [`Message`]. The API alternates `user` and `assistant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person, and every `tool_result`.
    User,
    /// The model.
    Assistant,
}

/// One entry of the `messages` array of a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// `user` or `assistant`.
    pub role: Role,
    /// The message's content blocks, in order. Always the array form.
    pub content: Vec<ContentBlock>,
}

impl Message {
    /// A user message holding one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self {
            role: Role::User,
            content: vec![ContentBlock::Text { text: text.into() }],
        }
    }

    /// Every `tool_use` block of this message, in order, as `(id, name, input)`.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse(t) => Some(t),
            _ => None,
        })
    }
}

/// A `tool_use` content block: the model asks lathe to run `name` with `input`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// `toolu_…` id; the matching `tool_result` carries the same id.
    pub id: String,
    /// Tool name as the model wrote it (may be an alias or unknown).
    pub name: String,
    /// The tool input, a JSON object when the model behaves.
    pub input: Value,
    /// Fields of the block besides `type`, `id`, `name` and `input` (such
    /// as `caller`), kept so the block goes back exactly as it came.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

impl ToolUse {
    /// A `tool_use` block with no other fields.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
            extra: serde_json::Map::new(),
        }
    }
}

/// A `tool_result` content block, always in a `user` message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The `id` of the `tool_use` this answers.
    pub tool_use_id: String,
    /// Result text or blocks.
    pub content: ToolResultContent,
    /// `true` when the tool failed, was refused or was interrupted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// The `content` of a `tool_result`: a string, or text/image blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolResultContent {
    /// Plain text (the common case).
    Text(String),
    /// Text and image blocks.
    Blocks(Vec<ContentBlock>),
}

impl ToolResultContent {
    /// All text of the content joined with `\n` (images are skipped).
    pub fn as_text(&self) -> String {
        match self {
            ToolResultContent::Text(s) => s.clone(),
            ToolResultContent::Blocks(bs) => bs
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// Source of an `image` block (base64 only; lathe never sends URLs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageSource {
    /// Always `"base64"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// Base64 of the image's bytes: the file's own, or the scaled or
    /// re-encoded image Read made to fit the API's limits.
    pub data: String,
}

/// One content block of a message (`content_block` in the API).
///
/// Block types lathe does not model (server tool blocks, citations, new
/// types the API adds) are kept as [`ContentBlock::Opaque`] JSON and sent
/// back exactly as they came, as the API asks of an answer passed back
/// "as-is".
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(into = "wire::Block")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, in user messages and tool results.
    Image {
        /// Where the bytes are.
        source: ImageSource,
    },
    /// The model's request to run a tool.
    ToolUse(ToolUse),
    /// lathe's answer to a `tool_use`.
    ToolResult(ToolResult),
    /// Extended-thinking text; kept so the transcript can be sent back as is.
    Thinking {
        /// The thinking text.
        thinking: String,
        /// Opaque signature the API checks when the block is sent back.
        signature: String,
    },
    /// Redacted thinking, sent back untouched.
    RedactedThinking {
        /// Opaque data.
        data: String,
    },
    /// A block of another type (or a known type in a shape lathe does not
    /// read), kept as its JSON object.
    Opaque(Value),
}

impl<'de> Deserialize<'de> for ContentBlock {
    /// A known block when it reads as one and writes back to the very same
    /// JSON; anything else (another type, extra fields such as `citations`)
    /// stays [`ContentBlock::Opaque`], so nothing the API sent is lost.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut value = Value::deserialize(d)?;
        // A `tool_use` without `input` (llama.cpp's `/v1/messages` starts
        // one so) is a call with input `{}`, plus its streamed JSON: kept as
        // a call, it is always run or answered.
        if let Value::Object(map) = &mut value {
            if map.get("type").and_then(Value::as_str) == Some("tool_use")
                && !map.contains_key("input")
            {
                map.insert("input".into(), Value::Object(serde_json::Map::new()));
            }
        }
        Ok(match serde_json::from_value::<wire::Known>(value.clone()) {
            Ok(known) if serde_json::to_value(&known).is_ok_and(|v| v == value) => {
                wire::Block::Known(known).into()
            }
            _ => ContentBlock::Opaque(value),
        })
    }
}

impl ContentBlock {
    /// The block's `type` (`text`, `tool_use`, … or the opaque block's own).
    pub fn kind(&self) -> &str {
        match self {
            ContentBlock::Text { .. } => "text",
            ContentBlock::Image { .. } => "image",
            ContentBlock::ToolUse(_) => "tool_use",
            ContentBlock::ToolResult(_) => "tool_result",
            ContentBlock::Thinking { .. } => "thinking",
            ContentBlock::RedactedThinking { .. } => "redacted_thinking",
            ContentBlock::Opaque(v) => v.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

/// The wire form of [`ContentBlock`]: the known blocks tagged by `type`,
/// anything else kept as JSON.
mod wire {
    use serde::{Deserialize, Serialize};
    use serde_json::Value;

    use super::{ContentBlock, ImageSource, ToolResult, ToolUse};

    #[derive(Serialize)]
    #[serde(untagged)]
    pub(super) enum Block {
        Known(Known),
        Opaque(Value),
    }

    #[derive(Serialize, Deserialize)]
    #[serde(tag = "type", rename_all = "snake_case")]
    pub(super) enum Known {
        Text {
            text: String,
        },
        Image {
            source: ImageSource,
        },
        ToolUse(ToolUse),
        ToolResult(ToolResult),
        Thinking {
            thinking: String,
            #[serde(default)]
            signature: String,
        },
        RedactedThinking {
            data: String,
        },
    }

    impl From<Block> for ContentBlock {
        fn from(b: Block) -> Self {
            match b {
                Block::Known(Known::Text { text }) => ContentBlock::Text { text },
                Block::Known(Known::Image { source }) => ContentBlock::Image { source },
                Block::Known(Known::ToolUse(t)) => ContentBlock::ToolUse(t),
                Block::Known(Known::ToolResult(t)) => ContentBlock::ToolResult(t),
                Block::Known(Known::Thinking {
                    thinking,
                    signature,
                }) => ContentBlock::Thinking {
                    thinking,
                    signature,
                },
                Block::Known(Known::RedactedThinking { data }) => {
                    ContentBlock::RedactedThinking { data }
                }
                Block::Opaque(v) => ContentBlock::Opaque(v),
            }
        }
    }

    impl From<ContentBlock> for Block {
        fn from(b: ContentBlock) -> Self {
            match b {
                ContentBlock::Text { text } => Block::Known(Known::Text { text }),
                ContentBlock::Image { source } => Block::Known(Known::Image { source }),
                ContentBlock::ToolUse(t) => Block::Known(Known::ToolUse(t)),
                ContentBlock::ToolResult(t) => Block::Known(Known::ToolResult(t)),
                ContentBlock::Thinking {
                    thinking,
                    signature,
                } => Block::Known(Known::Thinking {
                    thinking,
                    signature,
                }),
                ContentBlock::RedactedThinking { data } => {
                    Block::Known(Known::RedactedThinking { data })
                }
                ContentBlock::Opaque(v) => Block::Opaque(v),
            }
        }
    }
}

/// Why the model stopped (`stop_reason` of a message).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// `max_tokens` was reached.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The model wants tool results.
    ToolUse,
    /// The server paused a long turn.
    PauseTurn,
    /// The model refused.
    Refusal,
    /// The answer filled the model's context window.
    ModelContextWindowExceeded,
    /// Any value this version does not know.
    #[serde(other)]
    Other,
}

/// Token counts reported by the API. Every field may be missing or `null`
/// (the API's types say `number | null` in `message_delta.usage`); both
/// decode as `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens of the request (not counting cache reads and writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Output tokens produced so far / in total.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Input tokens written to the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// lathe's own: `output_tokens` is (or includes) an estimate, made
    /// for an answer cut before the API's final count (a stopped stream).
    /// Never in the API's JSON; kept in saved sessions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_estimated: bool,
}

impl Usage {
    /// Takes the counts `later` reports over this one's (a `message_delta`'s
    /// cumulative counts over `message_start`'s): a missing or `null` field
    /// keeps the earlier count, and so does a `0` over a count already known
    /// (the delta's input counts are `0` when it does not repeat them).
    pub fn update(&mut self, later: &Usage) {
        let take = |mine: &mut Option<u64>, theirs: Option<u64>| {
            if theirs.is_some_and(|v| v > 0) || (mine.is_none() && theirs.is_some()) {
                *mine = theirs;
            }
        };
        take(&mut self.input_tokens, later.input_tokens);
        take(&mut self.output_tokens, later.output_tokens);
        take(
            &mut self.cache_creation_input_tokens,
            later.cache_creation_input_tokens,
        );
        take(
            &mut self.cache_read_input_tokens,
            later.cache_read_input_tokens,
        );
    }
}

/// A tool definition in the request's `tools` array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// PascalCase tool name (`Read`, `Edit`, …).
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON Schema of the input (the same object that validates input).
    pub input_schema: Value,
}

/// `messages` as a request carries them (each in an `Arc` of its own).
pub fn shared(messages: Vec<Message>) -> Vec<Arc<Message>> {
    messages.into_iter().map(Arc::new).collect()
}

/// The body of `POST /v1/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesRequest {
    /// Model id, e.g. `claude-sonnet-4-5`.
    pub model: String,
    /// Output token cap.
    pub max_tokens: u32,
    /// System prompt.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub system: String,
    /// The conversation. Each message is shared with the transcript it
    /// came from (a request clones pointers, not the conversation), and a
    /// provider may keep a message's serialized form for as long as the
    /// same `Arc` is sent again (`provider::body`).
    pub messages: Vec<Arc<Message>>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolDefinition>,
    /// `true` for SSE streaming.
    #[serde(default)]
    pub stream: bool,
}

/// A complete (non-streaming) response of `POST /v1/messages`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessagesResponse {
    /// `msg_…` id.
    pub id: String,
    /// Always `assistant`.
    pub role: Role,
    /// The answer's content blocks.
    pub content: Vec<ContentBlock>,
    /// Why the model stopped; `None` only mid-stream.
    pub stop_reason: Option<StopReason>,
    /// Model id that answered.
    #[serde(default)]
    pub model: String,
    /// Token counts.
    #[serde(default)]
    pub usage: Usage,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_blocks_round_trip_unchanged() {
        let wire = serde_json::json!([
            {"type": "text", "text": "Searching."},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "lathe"}},
            {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
             "content": [{"type": "web_search_result", "url": "https://x", "title": "x", "encrypted_content": "abc"}]},
            {"type": "text", "text": "Found", "citations": [{"type": "web_search_result_location", "url": "https://x"}]}
        ]);
        let blocks: Vec<ContentBlock> = serde_json::from_value(wire.clone()).expect("decodes");
        assert!(matches!(blocks[0], ContentBlock::Text { .. }));
        assert_eq!(blocks[1].kind(), "server_tool_use");
        assert!(matches!(blocks[1], ContentBlock::Opaque(_)));
        assert_eq!(blocks[2].kind(), "web_search_tool_result");
        assert_eq!(
            serde_json::to_value(&blocks).expect("encodes"),
            wire,
            "sent back exactly as it came"
        );
    }

    #[test]
    fn every_usage_field_may_be_missing_or_null() {
        for body in [
            "{}",
            r#"{"input_tokens":null,"output_tokens":null,"cache_creation_input_tokens":null,"cache_read_input_tokens":null}"#,
        ] {
            let u: Usage = serde_json::from_str(body).expect(body);
            assert_eq!(u, Usage::default());
        }
        let mut u = Usage {
            input_tokens: Some(10),
            ..Usage::default()
        };
        u.update(
            &serde_json::from_str(
                r#"{"input_tokens":0,"output_tokens":7,"cache_read_input_tokens":null}"#,
            )
            .expect("json"),
        );
        assert_eq!((u.input_tokens, u.output_tokens), (Some(10), Some(7)));
    }
}
