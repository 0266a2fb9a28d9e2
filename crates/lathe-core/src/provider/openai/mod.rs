//! The OpenAI-compatible chat completions provider (`setup{ provider =
//! "openai" }`): `POST {base_url}/chat/completions`, where `base_url`
//! includes the API's version path (`https://api.openai.com/v1`,
//! `http://localhost:11434/v1`), for OpenAI, Ollama, llama.cpp's server,
//! vLLM, LM Studio, OpenRouter, Groq, DeepSeek, Mistral and the like
//! (<https://platform.openai.com/docs/api-reference/chat>).
//!
//! The transcript stays Messages-shaped; this provider converts at the edge
//! and the turn loop does not know which provider it talks to:
//!
//! - [`request`]: a [`MessagesRequest`] as a chat completions body;
//! - [`stream`]: the `chat.completion.chunk` SSE stream as the Messages
//!   API's [`crate::protocol::StreamEvent`]s;
//! - [`response`]: a non-streaming `chat.completion` as a
//!   [`MessagesResponse`], finish reasons and usage;
//! - [`errors`]: error bodies and in-stream errors as [`ProviderError`]s;
//! - `wire`: the serde types of what servers send (private).
//!
//! As with the Anthropic client: no retries here (the turn loop decides
//! with [`crate::provider::retry`]); a body that goes silent for the idle
//! timeout fails ([`crate::provider::idle`]).

pub mod errors;
pub mod request;
pub mod response;
pub mod stream;
mod wire;

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE};

use self::errors::http_error;
use crate::config::Config;
use futures::StreamExt;

use crate::protocol::{MessagesRequest, MessagesResponse, StreamEvent};
use crate::provider::http::{
    read_capped, Endpoint, MAX_ERROR_BODY_BYTES, NON_STREAMING_TIMEOUT,
    NON_STREAMING_TIMEOUT_MESSAGE,
};
use crate::provider::idle::{ceil_secs, idle_timeout_message, with_idle_timeout};
use crate::provider::replay::response_events;
use crate::provider::sse::chain;
use crate::provider::{EventStream, Provider, ProviderError};
use crate::text::fill;

/// Path of chat completions under the base URL (which carries the API's
/// version path, e.g. `/v1`).
pub const CHAT_COMPLETIONS_PATH: &str = "/chat/completions";

/// User-facing: the [`ProviderError::Decode`] text when a 2xx answer to a
/// streaming request is neither an event stream nor JSON; `{content_type}`
/// is what the server said it sent, `{body}` the first 200 chars.
pub const NOT_AN_EVENT_STREAM: &str =
    "expected an event stream (text/event-stream), got {content_type}: {body}";

/// Talks to an OpenAI-compatible chat completions API.
#[derive(Debug, Clone)]
pub struct OpenAiProvider {
    /// Where requests go; the key is sent as `Authorization: Bearer`.
    endpoint: Endpoint,
}

impl OpenAiProvider {
    /// A provider for `base_url` (e.g. `https://api.openai.com/v1` or
    /// `http://127.0.0.1:11434/v1`; a trailing `/` is ignored) with `api_key`
    /// (the value of the variable named `api_key_env`; `None`, empty or
    /// blank means no key: requests are sent without `Authorization`, as
    /// local servers expect), as [`Endpoint::new`] builds it. Errors:
    /// [`ProviderError::Request`] when the HTTP client cannot be built.
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
        api_key_env: impl Into<String>,
    ) -> Result<Self, ProviderError> {
        Ok(Self::on(Endpoint::new(base_url, api_key, api_key_env)?))
    }

    /// Like [`new`](Self::new) with a caller-built client; idle timeout
    /// [`DEFAULT_IDLE_TIMEOUT`](crate::provider::idle::DEFAULT_IDLE_TIMEOUT).
    pub fn with_client(
        base_url: impl Into<String>,
        api_key: Option<String>,
        api_key_env: impl Into<String>,
        http: reqwest::Client,
    ) -> Self {
        Self::on(Endpoint::with_client(base_url, api_key, api_key_env, http))
    }

    /// A provider posting to `endpoint`.
    pub fn on(endpoint: Endpoint) -> Self {
        Self { endpoint }
    }

    /// This provider with `timeout` as the longest silence of a streaming
    /// answer: waiting longer for the response headers or the next body
    /// bytes fails with [`ProviderError::Transport`] carrying
    /// [`idle_timeout_message`]. Zero is treated as 1 ms.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint.idle_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The idle timeout in use.
    pub fn idle_timeout(&self) -> Duration {
        self.endpoint.idle_timeout
    }

    /// `true` when a key will be sent.
    pub fn has_key(&self) -> bool {
        self.endpoint.api_key.is_some()
    }

    /// A provider for `cfg` ([`Endpoint::from_config`]: the key is read now
    /// from the variable named `cfg.api_key_env`). Errors: as
    /// [`new`](Self::new).
    pub fn from_config(cfg: &Config) -> Result<Self, ProviderError> {
        Ok(Self::on(Endpoint::from_config(cfg)?))
    }

    /// `{base_url}/chat/completions`, where requests go.
    pub fn chat_completions_url(&self) -> String {
        format!("{}{CHAT_COMPLETIONS_PATH}", self.endpoint.base_url)
    }

    /// Posts `req` as a chat completions body ([`request::chat_request`]
    /// with `stream`) with `accept` and, when a key is set, `Authorization:
    /// Bearer <key>`; returns the response once its headers arrived, whatever
    /// its status. Errors: [`ProviderError::Request`] (a key that cannot be
    /// a header, a `base_url` that is not a URL), [`ProviderError::Transport`]
    /// (DNS, refused, TLS, reset). No timeout of its own.
    async fn send(
        &self,
        req: &MessagesRequest,
        stream: bool,
        accept: &'static str,
    ) -> Result<reqwest::Response, ProviderError> {
        self.endpoint
            .post(
                CHAT_COMPLETIONS_PATH,
                &self
                    .endpoint
                    .with_temperature(request::chat_request(req, stream)),
                accept,
                &[],
                AUTHORIZATION,
                "Bearer ",
            )
            .await
    }
}

/// How long each request for a server's published context window may take.
pub const WINDOW_PROBE_TIMEOUT: Duration = Duration::from_secs(3);

#[async_trait]
impl Provider for OpenAiProvider {
    /// vLLM's `GET {base_url}/models` `max_model_len` for `model`, else
    /// llama.cpp's `GET {server root}/props` `n_ctx` (the root is
    /// `base_url` without its `/v1`); each asked with
    /// [`WINDOW_PROBE_TIMEOUT`].
    async fn context_window(&self, model: &str) -> Option<u64> {
        let base = &self.endpoint.base_url;
        let get = |url: String| async move {
            self.endpoint
                .get_json(&url, AUTHORIZATION, "Bearer ", WINDOW_PROBE_TIMEOUT)
                .await
        };
        if let Some(n) = get(format!("{base}/models"))
            .await
            .and_then(|b| crate::provider::window::from_models_list(&b, model))
        {
            return Some(n);
        }
        let root = base.strip_suffix("/v1").unwrap_or(base);
        get(format!("{root}/props"))
            .await
            .and_then(|b| crate::provider::window::from_props(&b))
    }

    /// `data[].id` of `GET {base_url}/models`, asked with
    /// [`LIST_TIMEOUT`](crate::provider::models::LIST_TIMEOUT).
    async fn list_models(&self) -> Option<Vec<String>> {
        let url = format!("{}/models", self.endpoint.base_url);
        let body = self
            .endpoint
            .get_json(
                &url,
                AUTHORIZATION,
                "Bearer ",
                crate::provider::models::LIST_TIMEOUT,
            )
            .await?;
        crate::provider::models::openai_list(&body)
    }

    /// Sends `req` with `stream: true` and `stream_options: {include_usage:
    /// true}` to [`OpenAiProvider::chat_completions_url`] (`accept:
    /// text/event-stream`, `Authorization: Bearer` when a key is set) and
    /// returns the decoded events once the response headers arrived (see
    /// [`stream::decode`] for the stream's own errors). When no body bytes
    /// arrive for the idle timeout, the stream yields
    /// `Err(ProviderError::Transport(`[`idle_timeout_message`]`))` and ends.
    /// A server that answers with a whole `chat.completion` (JSON) instead
    /// of a stream is read as one and replayed as events.
    ///
    /// Errors, before any event:
    /// - [`ProviderError::Http`] — a non-2xx status (see
    ///   `errors::http_error`; `retry_after` from `retry-after-ms` or
    ///   `retry-after`);
    /// - [`ProviderError::Decode`] — a 2xx answer that is neither an event
    ///   stream nor a chat completion ([`NOT_AN_EVENT_STREAM`]);
    /// - [`ProviderError::Request`] — the request could not be built;
    /// - [`ProviderError::Transport`] — it could not be sent, or no response
    ///   headers arrived within the idle timeout.
    async fn stream(&self, req: &MessagesRequest) -> Result<EventStream, ProviderError> {
        let idle = self.endpoint.idle_timeout;
        let resp = tokio::time::timeout(idle, self.send(req, true, "text/event-stream"))
            .await
            .map_err(|_| ProviderError::Transport(idle_timeout_message(idle)))??;
        let status = resp.status();
        let headers = resp.headers().clone();
        if !status.is_success() {
            let text = read_capped(resp, MAX_ERROR_BODY_BYTES).await;
            return Err(http_error(status, &headers, &text));
        }
        let content_type = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.is_empty() || content_type.starts_with("text/event-stream") {
            let events = stream::decode(with_idle_timeout(resp.bytes_stream(), idle));
            return Ok(limit_stops(events, req.max_tokens));
        }
        let body = tokio::time::timeout(idle, resp.bytes())
            .await
            .map_err(|_| ProviderError::Transport(idle_timeout_message(idle)))?
            .map_err(|e| ProviderError::Transport(chain(&e)))?;
        if content_type.starts_with("application/json") {
            let answer = limit_stop(response::parse_completion(&body)?, req.max_tokens);
            let events = response_events(&answer).into_iter().map(Ok);
            return Ok(Box::pin(futures::stream::iter(events)));
        }
        Err(ProviderError::Decode(fill(
            NOT_AN_EVENT_STREAM,
            &[
                ("content_type", &content_type),
                (
                    "body",
                    &crate::provider::http::cut(&String::from_utf8_lossy(&body), 200),
                ),
            ],
        )))
    }

    /// Sends `req` with `stream: false` and `accept: application/json` and
    /// returns the answer parsed by [`response::parse_completion`] (the
    /// same URL, headers and key rules as [`stream`](Provider::stream)).
    ///
    /// Errors: [`ProviderError::Request`] and [`ProviderError::Http`] as for
    /// `stream`; [`ProviderError::Transport`] when sending or reading failed
    /// or the whole answer took longer than the Anthropic client's
    /// non-streaming limit (or the idle timeout, when longer) —
    /// `NON_STREAMING_TIMEOUT_MESSAGE`; [`ProviderError::Decode`] /
    /// [`ProviderError::Stream`] as `parse_completion` returns them.
    async fn complete(&self, req: &MessagesRequest) -> Result<MessagesResponse, ProviderError> {
        let limit = NON_STREAMING_TIMEOUT.max(self.endpoint.idle_timeout);
        let answer = async {
            let resp = self.send(req, false, "application/json").await?;
            let status = resp.status();
            let headers = resp.headers().clone();
            if !status.is_success() {
                let text = read_capped(resp, MAX_ERROR_BODY_BYTES).await;
                return Err(http_error(status, &headers, &text));
            }
            let bytes = resp
                .bytes()
                .await
                .map_err(|e| ProviderError::Transport(chain(&e)))?;
            response::parse_completion(&bytes).map(|a| limit_stop(a, req.max_tokens))
        };
        tokio::time::timeout(limit, answer).await.map_err(|_| {
            ProviderError::Transport(fill(
                NON_STREAMING_TIMEOUT_MESSAGE,
                &[("secs", &ceil_secs(limit).to_string())],
            ))
        })?
    }
}

/// `events` with the `message_delta`'s stop reason read by
/// [`response::stop_for_limit`] against the `max_tokens` lathe asked for.
fn limit_stops(events: EventStream, asked: u32) -> EventStream {
    Box::pin(events.map(move |event| match event {
        Ok(StreamEvent::MessageDelta { mut delta, usage }) => {
            delta.stop_reason = delta
                .stop_reason
                .map(|r| response::stop_for_limit(r, usage.as_ref(), asked));
            Ok(StreamEvent::MessageDelta { delta, usage })
        }
        other => other,
    }))
}

/// `answer` with its stop reason read by [`response::stop_for_limit`].
fn limit_stop(mut answer: MessagesResponse, asked: u32) -> MessagesResponse {
    answer.stop_reason = answer
        .stop_reason
        .map(|r| response::stop_for_limit(r, Some(&answer.usage), asked));
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn texts_golden() {
        assert_eq!(
            fill(
                NOT_AN_EVENT_STREAM,
                &[("content_type", "text/html"), ("body", "<html>")]
            ),
            "expected an event stream (text/event-stream), got text/html: <html>"
        );
    }

    #[test]
    fn from_config_reads_base_url_key_variable_and_idle_timeout() {
        let mut cfg = Config::new(std::path::Path::new("/tmp"));
        cfg.provider = crate::config::ProviderKind::OpenAi;
        cfg.base_url = "http://127.0.0.1:9/v1/".into();
        cfg.api_key_env = "LATHE_OPENAI_TEST_KEY_UNSET_0xC0FFEE".into();
        cfg.idle_timeout_ms = 1500;
        let p = OpenAiProvider::from_config(&cfg).unwrap();
        assert_eq!(
            p.chat_completions_url(),
            "http://127.0.0.1:9/v1/chat/completions"
        );
        assert_eq!(p.idle_timeout(), Duration::from_millis(1500));
        assert!(!p.has_key());
        let p = OpenAiProvider::new("http://x/v1", Some("  ".into()), "K").unwrap();
        assert!(!p.has_key());
    }

    #[tokio::test]
    async fn a_key_that_cannot_be_a_header_is_a_request_error() {
        let p =
            OpenAiProvider::new("http://127.0.0.1:9/v1", Some("sk\nbad".into()), "MY_KEY").unwrap();
        let req = MessagesRequest {
            model: "m".into(),
            max_tokens: 1,
            system: String::new(),
            messages: vec![],
            tools: vec![],
            stream: false,
        };
        assert_eq!(
            p.stream(&req).await.err(),
            Some(ProviderError::Request(
                "the API key in $MY_KEY has characters an HTTP header cannot carry".into()
            ))
        );
    }
}
