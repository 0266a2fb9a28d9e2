//! Server-sent events of a streaming Messages API response.
//!
//! Each SSE `data:` line is one of these, tagged by `type`. Unknown event
//! types decode to [`StreamEvent::Unknown`] and are ignored by the consumer,
//! as the API's versioning policy asks.

use serde::{Deserialize, Serialize};

use super::{ContentBlock, MessagesResponse, StopReason, Usage};

/// One decoded SSE event of a streaming response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamEvent {
    /// First event: the message shell with empty `content`.
    MessageStart {
        /// The message so far.
        message: MessagesResponse,
    },
    /// A content block opens at `index`. For `tool_use` its `input` is `{}`
    /// and the real input arrives as `input_json_delta`s.
    ContentBlockStart {
        /// Block index in the message.
        index: usize,
        /// The block's start.
        content_block: ContentBlock,
    },
    /// A piece of the block at `index`.
    ContentBlockDelta {
        /// Block index.
        index: usize,
        /// The piece.
        delta: ContentBlockDelta,
    },
    /// The block at `index` is complete.
    ContentBlockStop {
        /// Block index.
        index: usize,
    },
    /// Top-level changes: `stop_reason` and final usage.
    MessageDelta {
        /// The changed fields.
        delta: MessageDeltaBody,
        /// Cumulative usage.
        #[serde(default)]
        usage: Option<Usage>,
    },
    /// Last event of a successful stream.
    MessageStop,
    /// Keep-alive.
    Ping,
    /// An error inside a 200 stream (e.g. `overloaded_error`).
    Error {
        /// The error.
        error: ApiErrorBody,
    },
    /// Any event type this version does not know; ignored.
    #[serde(other)]
    Unknown,
}

/// The `delta` of a `content_block_delta` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlockDelta {
    /// More text for a `text` block.
    TextDelta {
        /// The text piece.
        text: String,
    },
    /// A piece of a `tool_use` input's JSON; pieces are joined per block and
    /// parsed at `content_block_stop`.
    InputJsonDelta {
        /// The JSON piece (not valid JSON on its own).
        partial_json: String,
    },
    /// More thinking text.
    ThinkingDelta {
        /// The piece.
        thinking: String,
    },
    /// The thinking block's signature.
    SignatureDelta {
        /// The signature.
        signature: String,
    },
    /// One more citation for a `text` block (web search and document
    /// answers): appended to the block's `citations`.
    CitationsDelta {
        /// The citation object, kept as it came.
        citation: serde_json::Value,
    },
    /// A piece of a `compaction` block: `content` is appended to the
    /// block's summary, `encrypted_content` replaces the block's (each
    /// delta carries the latest).
    CompactionDelta {
        /// More summary text.
        #[serde(default)]
        content: Option<String>,
        /// The opaque payload the API checks when the block is sent back.
        #[serde(default)]
        encrypted_content: Option<String>,
    },
    /// Any delta type this version does not know; ignored.
    #[serde(other)]
    Unknown,
}

/// The `delta` of a `message_delta` event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MessageDeltaBody {
    /// Why the model stopped.
    #[serde(default)]
    pub stop_reason: Option<StopReason>,
    /// More about why (e.g. the category of a `refusal`), when the API says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_details: Option<serde_json::Value>,
}

/// The `error` object of an error response or `error` event:
/// `{"type": "overloaded_error", "message": "Overloaded"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiErrorBody {
    /// Error type, e.g. `invalid_request_error`, `overloaded_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Human-readable message from the API.
    pub message: String,
}
