//! Model providers: turn a [`MessagesRequest`] into a stream of
//! [`StreamEvent`]s.
//!
//! `anthropic` speaks the Messages API over reqwest with SSE (`sse` decodes
//! the byte stream); `assemble` folds events into the assistant message and
//! reports each `tool_use` the moment its `content_block_stop` arrives.
//! Recovery pieces for the turn loop: `retry` (which errors to retry and how
//! long to wait), `idle` (a stalled body becomes an error), `replay` (a
//! non-streaming answer as stream events) and `hints` (what the user is told).

pub mod anthropic;
pub mod assemble;
pub mod hints;
pub mod idle;
pub mod replay;
pub mod retry;
pub mod sse;

use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use futures::Stream;

use crate::protocol::{MessagesRequest, MessagesResponse, StreamEvent};

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
        /// How long the server asked to wait before retrying, from a
        /// `retry-after-ms` header (milliseconds) or else `retry-after`
        /// (whole or fractional seconds, or an HTTP-date, measured from the
        /// moment the answer arrived; a past date is zero). `None` when
        /// neither header was sent or readable.
        retry_after: Option<Duration>,
    },
    /// An `error` event inside a 200 stream.
    #[error("{kind}: {message}")]
    Stream {
        /// API error type, e.g. `overloaded_error`.
        kind: String,
        /// The API's message.
        message: String,
    },
    /// Connection failed or dropped, or no bytes arrived for the idle
    /// timeout (see [`idle`]). Worth retrying.
    #[error("connection error: {0}")]
    Transport(String),
    /// The request could not be built: the API key has characters an HTTP
    /// header cannot carry, `base_url` is not a URL, the HTTP client could
    /// not start. Retrying cannot help; the text says what to fix.
    #[error("could not send the request: {0}")]
    Request(String),
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

    /// Sends `req` without streaming (`stream: false`) and returns the whole
    /// answer: the turn loop's fallback after a stream failed mid-answer
    /// (`stream_fallback = "non_streaming"`, issue 4 §4). Feed the result
    /// through [`replay::response_events`] and the same
    /// [`assemble::MessageAssembler`] as a stream.
    ///
    /// Errors are those of [`stream`](Self::stream) (same kinds, same
    /// retryability); there are no stream errors.
    ///
    /// The default implementation (for providers that only stream, e.g. test
    /// fakes) calls [`stream`](Self::stream) and assembles the events into
    /// a [`MessagesResponse`]; the first `Err` of the stream is returned.
    async fn complete(&self, req: &MessagesRequest) -> Result<MessagesResponse, ProviderError> {
        use futures::StreamExt;
        let mut events = self.stream(req).await?;
        let mut assembler = assemble::MessageAssembler::new();
        while let Some(event) = events.next().await {
            assembler.push(event?);
        }
        Ok(MessagesResponse {
            id: assembler.id().to_string(),
            role: crate::protocol::Role::Assistant,
            model: assembler.model().to_string(),
            stop_reason: assembler.stop_reason().cloned(),
            usage: assembler.usage().clone(),
            content: assembler.finish().content,
        })
    }
}
