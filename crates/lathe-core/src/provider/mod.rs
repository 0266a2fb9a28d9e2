//! Model providers: turn a [`MessagesRequest`] into a stream of
//! [`StreamEvent`]s.
//!
//! `anthropic` speaks the Messages API over reqwest with SSE (`sse` decodes
//! the byte stream); `openai` speaks OpenAI-compatible chat completions and
//! converts at the edge to the same events; `assemble` folds events into the
//! assistant message and
//! reports each `tool_use` the moment its `content_block_stop` arrives.
//! Recovery pieces for the turn loop: `retry` (which errors to retry and how
//! long to wait), `idle` (a stalled body becomes an error), `replay` (a
//! non-streaming answer as stream events) and `hints` (what the user is told).

pub mod anthropic;
pub mod assemble;
pub mod hints;
pub mod http;
pub mod idle;
pub mod limits;
pub mod models;
pub mod openai;
pub mod replay;
pub mod retry;
pub mod sse;
pub mod validate;
pub mod window;

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::Stream;

use crate::config::{Config, ProviderKind};
use crate::protocol::{MessagesRequest, MessagesResponse, StreamEvent};

/// The model provider `config` asks for: the one place that picks and builds
/// it, by `config.provider`: [`ProviderKind::Anthropic`] gets the Messages
/// API client ([`anthropic::AnthropicProvider::from_config`]),
/// [`ProviderKind::OpenAi`] the chat completions client
/// ([`openai::OpenAiProvider::from_config`]). Errors: as those constructors
/// ([`ProviderError::Request`] when the HTTP client cannot start).
pub fn from_config(config: &Config) -> Result<Arc<dyn Provider>, ProviderError> {
    Ok(match config.provider {
        ProviderKind::Anthropic => Arc::new(anthropic::AnthropicProvider::from_config(config)?),
        ProviderKind::OpenAi => Arc::new(openai::OpenAiProvider::from_config(config)?),
    })
}

/// Bytes of `value` serialized, counted without a copy.
pub fn json_bytes<T: serde::Serialize + ?Sized>(value: &T) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Serializing plain data into a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

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
        /// The server's `x-should-retry` verdict (`Some(false)`: do not
        /// retry, whatever the status; `Some(true)`: retry even a status
        /// that is not retried otherwise); `None` when not sent.
        should_retry: Option<bool>,
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

impl ProviderError {
    /// The server's requested wait of an [`ProviderError::Http`] answer
    /// (its `retry_after` field); `None` for every other kind.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Sends requests to a model.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The context window the server publishes for `model`, in tokens
    /// ([`window`]); `None` (the default) when it publishes none. Asked
    /// once per session, before its first request.
    async fn context_window(&self, model: &str) -> Option<u64> {
        let _ = model;
        None
    }

    /// The ids of the models the server serves ([`models`]: the Anthropic
    /// `GET /v1/models`, every page; an OpenAI-compatible `GET
    /// {base_url}/models`); `None` (the default) when it does not say or
    /// the request failed.
    async fn list_models(&self) -> Option<Vec<String>> {
        None
    }

    /// Bytes of `req` as this provider sends it, about (what the context
    /// meter and the window check count). The default serializes it into
    /// a counter; a provider that keeps its messages' JSON
    /// ([`anthropic::wire::WireCache`]) counts from that.
    fn request_bytes(&self, req: &MessagesRequest) -> u64 {
        json_bytes(req)
    }

    /// Starts a streaming request (`stream: true` is set by the provider).
    /// Returns once the response headers arrived: a non-2xx status is an
    /// `Err(ProviderError::Http)` here; later failures come through the stream.
    async fn stream(&self, req: &MessagesRequest) -> Result<EventStream, ProviderError>;

    /// Sends `req` without streaming (`stream: false`) and returns the whole
    /// answer: the turn loop's fallback after a stream failed mid-answer
    /// (`stream_fallback = "non_streaming"`). Feed the result
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ContentBlock, Message, Role, StopReason, Usage};
    use pretty_assertions::assert_eq;

    /// A provider that only streams: the replayed events of one answer, or
    /// those events cut by an error.
    struct Replaying {
        answer: MessagesResponse,
        fail_after: Option<usize>,
    }

    #[async_trait]
    impl Provider for Replaying {
        async fn stream(&self, _req: &MessagesRequest) -> Result<EventStream, ProviderError> {
            let mut items: Vec<Result<StreamEvent, ProviderError>> =
                replay::response_events(&self.answer)
                    .into_iter()
                    .map(Ok)
                    .collect();
            if let Some(n) = self.fail_after {
                items.truncate(n);
                items.push(Err(ProviderError::Transport("reset".into())));
            }
            Ok(Box::pin(futures::stream::iter(items)))
        }
    }

    fn answer() -> MessagesResponse {
        MessagesResponse {
            id: "msg_5".into(),
            role: Role::Assistant,
            content: vec![ContentBlock::Text {
                text: "done".into(),
            }],
            stop_reason: Some(StopReason::EndTurn),
            model: "m".into(),
            usage: Usage {
                input_tokens: Some(3),
                output_tokens: Some(2),
                ..Default::default()
            },
        }
    }

    fn req() -> MessagesRequest {
        MessagesRequest {
            model: "m".into(),
            max_tokens: 10,
            system: String::new(),
            messages: crate::protocol::shared(vec![Message::user_text("hi")]),
            tools: vec![],
            stream: false,
        }
    }

    #[tokio::test]
    async fn default_complete_assembles_the_stream() {
        let p = Replaying {
            answer: answer(),
            fail_after: None,
        };
        assert_eq!(p.complete(&req()).await.unwrap(), answer());
        let cut = Replaying {
            answer: answer(),
            fail_after: Some(3),
        };
        assert_eq!(
            cut.complete(&req()).await.unwrap_err(),
            ProviderError::Transport("reset".into())
        );
    }
}
