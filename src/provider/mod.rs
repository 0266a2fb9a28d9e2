//! Model providers: turn a [`MessagesRequest`] into a stream of
//! [`StreamEvent`]s.
//!
//! `anthropic` speaks the Messages API over reqwest with SSE (`sse` decodes
//! the byte stream); `assemble` folds events into the assistant message and
//! reports each `tool_use` the moment its `content_block_stop` arrives.

pub mod anthropic;
pub mod assemble;
pub mod sse;

use std::pin::Pin;

use async_trait::async_trait;
use futures::Stream;

use crate::protocol::{MessagesRequest, StreamEvent};

/// A stream of decoded events; ends after `message_stop` or an error.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// Why a model request failed. Shown to the user in the chat (not to the model).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// No API key in the configured environment variable.
    #[error("no API key: set ${env} (or setup{{ api_key_env = \"...\" }}), or point base_url at a local server")]
    MissingKey {
        /// The variable that was read.
        env: String,
    },
    /// A non-2xx HTTP answer, with the API's own error type and message.
    #[error("HTTP {status} {kind}: {message}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// API error type (`invalid_request_error`, …) or `http_error`.
        kind: String,
        /// The API's message, or the body text.
        message: String,
        /// `retry-after` in seconds, when the server sent one.
        retry_after_s: Option<u64>,
    },
    /// An `error` event inside a 200 stream.
    #[error("{kind}: {message}")]
    Stream {
        /// API error type, e.g. `overloaded_error`.
        kind: String,
        /// The API's message.
        message: String,
    },
    /// Connection failed or dropped.
    #[error("connection error: {0}")]
    Transport(String),
    /// A `data:` payload was not a valid event.
    #[error("could not decode a stream event: {0}")]
    Decode(String),
}

/// Sends requests to a model.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Starts a streaming request (`stream: true` is set by the provider).
    /// Returns once the response headers arrived: a non-2xx status is an
    /// `Err(ProviderError::Http)` here; later failures come through the stream.
    async fn stream(&self, req: &MessagesRequest) -> Result<EventStream, ProviderError>;
}
