//! Serde types of the Anthropic Messages API (`POST /v1/messages`).
//!
//! Only data lives here, no behaviour: the provider turns HTTP/SSE into these
//! types, the agent keeps a transcript of [`Message`]s, and the execution
//! layer produces [`ContentBlock::ToolResult`]s. Field names follow the API
//! reference exactly so a transcript serialises to a valid request body.

mod stream;

pub use stream::{ApiErrorBody, ContentBlockDelta, MessageDeltaBody, StreamEvent};

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
    /// Base64 of the file's bytes.
    pub data: String,
}

/// One content block of a message (`content_block` in the API).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
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
        #[serde(default)]
        signature: String,
    },
    /// Redacted thinking, sent back untouched.
    RedactedThinking {
        /// Opaque data.
        data: String,
    },
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
    /// Any value this version does not know.
    #[serde(other)]
    Other,
}

/// Token counts reported by the API.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens of the request.
    #[serde(default)]
    pub input_tokens: u64,
    /// Output tokens produced so far / in total.
    #[serde(default)]
    pub output_tokens: u64,
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
    /// The conversation.
    pub messages: Vec<Message>,
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
