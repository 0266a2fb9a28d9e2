//! The Anthropic Messages API provider: `POST {base_url}/v1/messages` with
//! `stream: true`, answered as SSE (<https://docs.anthropic.com/en/api/messages>,
//! <https://docs.anthropic.com/en/api/messages-streaming>,
//! <https://docs.anthropic.com/en/api/errors>).
//!
//! No retries here: a failure is returned once, as a [`ProviderError`]; the
//! turn loop decides with [`super::retry`]. A body that goes silent for the
//! idle timeout fails ([`super::idle`]).
//!
//! [`Provider::complete`] sends the same request with `stream: false` (the
//! fallback after a failed stream).

pub mod cache;
pub mod wire;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use reqwest::header::{HeaderMap, HeaderName, CONTENT_TYPE};
use serde::Deserialize;

use self::wire::WireCache;
use crate::config::Config;
use crate::protocol::{ApiErrorBody, MessagesRequest, MessagesResponse};
use crate::provider::http::{
    self, cut, read_capped, Endpoint, HTTP_ERROR_KIND, MAX_ERROR_BODY_BYTES, NON_STREAMING_TIMEOUT,
    NON_STREAMING_TIMEOUT_MESSAGE,
};
use crate::provider::idle::{idle_timeout_message, with_idle_timeout};
use crate::provider::{sse, EventStream, Provider, ProviderError};
use crate::text::fill;

/// Value of the `anthropic-version` header (the API's only stable version).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Host of the real API. Without a key, requests to it fail early with
/// [`ProviderError::MissingKey`]; other hosts (a local mock, a proxy) are
/// sent to without `x-api-key`.
pub const ANTHROPIC_HOST: &str = "api.anthropic.com";
/// Path of the Messages API under the base URL.
pub const MESSAGES_PATH: &str = "/v1/messages";
/// Path of the Models API's list under the base URL.
pub const MODELS_PATH: &str = "/v1/models";

/// `s` with every byte but unreserved URL characters percent-encoded (a
/// model id as a query value).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
/// Most chars of a non-API error body kept in the message.
const MAX_ERROR_MESSAGE_CHARS: usize = 1000;

/// Talks to the Messages API (or anything that speaks it, e.g. `mock-llm`).
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    /// Where requests go; the key is sent as `x-api-key`.
    endpoint: Endpoint,
    /// The JSON of the messages sent, reused while they are sent again.
    wire: Arc<WireCache>,
}

impl AnthropicProvider {
    /// A provider for `base_url` (e.g. `Config.base_url`,
    /// `https://api.anthropic.com` or `http://127.0.0.1:PORT`; a trailing `/`
    /// is ignored) with `api_key` (the value of the variable named
    /// `api_key_env`, `None` when unset or empty), as [`Endpoint::new`]
    /// builds it. Errors: [`ProviderError::Request`] when the HTTP client
    /// cannot be built.
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
        api_key_env: impl Into<String>,
    ) -> Result<Self, ProviderError> {
        Ok(Self::on(Endpoint::new(base_url, api_key, api_key_env)?))
    }

    /// Like [`new`](Self::new) with a caller-built client (tests, proxies);
    /// idle timeout [`DEFAULT_IDLE_TIMEOUT`](super::idle::DEFAULT_IDLE_TIMEOUT).
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
        Self {
            endpoint,
            wire: Arc::default(),
        }
    }

    /// This provider with `timeout` as the longest silence of a streaming
    /// answer: waiting longer for the response headers, or for the next body
    /// bytes, fails with [`ProviderError::Transport`] carrying
    /// [`idle_timeout_message`] ("no data from the API for 90 s (idle
    /// timeout)"). Zero is treated as 1 ms.
    pub fn with_idle_timeout(mut self, timeout: Duration) -> Self {
        self.endpoint.idle_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The idle timeout in use (see [`with_idle_timeout`](Self::with_idle_timeout)).
    pub fn idle_timeout(&self) -> Duration {
        self.endpoint.idle_timeout
    }

    /// A provider for `cfg` ([`Endpoint::from_config`]: the key is read now
    /// from the variable named `cfg.api_key_env`). A missing key is not an
    /// error here; [`Provider::stream`] reports it. Errors: as
    /// [`new`](Self::new).
    pub fn from_config(cfg: &Config) -> Result<Self, ProviderError> {
        Ok(Self::on(Endpoint::from_config(cfg)?))
    }

    /// `{base_url}/v1/messages`, where requests go.
    pub fn messages_url(&self) -> String {
        format!("{}{MESSAGES_PATH}", self.endpoint.base_url)
    }

    /// `true` when the base URL's host is [`ANTHROPIC_HOST`].
    fn is_anthropic_host(&self) -> bool {
        reqwest::Url::parse(&self.endpoint.base_url)
            .ok()
            .and_then(|u| u.host_str().map(|h| h.eq_ignore_ascii_case(ANTHROPIC_HOST)))
            .unwrap_or(false)
    }

    /// Posts `req` with `stream` set as given and `accept` (`text/event-stream`
    /// or `application/json`), and returns the response once its headers
    /// arrived, whatever its status. Errors: [`ProviderError::MissingKey`]
    /// (nothing sent), [`ProviderError::Request`] (a key that cannot be a
    /// header, a `base_url` that is not a URL), [`ProviderError::Transport`]
    /// (DNS, refused, TLS, reset). No timeout of its own.
    async fn send(
        &self,
        req: &MessagesRequest,
        stream: bool,
        accept: &'static str,
    ) -> Result<reqwest::Response, ProviderError> {
        if self.endpoint.api_key.is_none() && self.is_anthropic_host() {
            return Err(ProviderError::MissingKey {
                env: self.endpoint.api_key_env.clone(),
            });
        }
        let extra: Vec<(&str, serde_json::Value)> = self
            .endpoint
            .temperature
            .map(|t| ("temperature", serde_json::json!(t)))
            .into_iter()
            .collect();
        let body = self.wire.body(req, stream, &extra);
        self.endpoint
            .post_bytes(
                MESSAGES_PATH,
                body,
                accept,
                &[("anthropic-version", ANTHROPIC_VERSION)],
                HeaderName::from_static("x-api-key"),
                "",
            )
            .await
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    /// Counted from the messages' JSON as [`WireCache`] keeps it.
    fn request_bytes(&self, req: &MessagesRequest) -> u64 {
        self.wire.request_bytes(req)
    }

    /// `data[].id` of `GET {base_url}/v1/models` with the headers of a
    /// request (`x-api-key`, `anthropic-version`), page after page while
    /// `has_more` (at most [`MAX_PAGES`](crate::provider::models::MAX_PAGES)),
    /// each asked with [`LIST_TIMEOUT`](crate::provider::models::LIST_TIMEOUT).
    async fn list_models(&self) -> Option<Vec<String>> {
        use crate::provider::models;
        let mut all = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..models::MAX_PAGES {
            let mut url = format!(
                "{}{MODELS_PATH}?limit={}",
                self.endpoint.base_url,
                models::ANTHROPIC_PAGE_LIMIT
            );
            if let Some(id) = &after {
                url.push_str("&after_id=");
                url.push_str(&percent_encode(id));
            }
            let body = self
                .endpoint
                .get_json_with(
                    &url,
                    &[("anthropic-version", ANTHROPIC_VERSION)],
                    HeaderName::from_static("x-api-key"),
                    "",
                    models::LIST_TIMEOUT,
                )
                .await?;
            let (ids, next) = models::anthropic_page(&body)?;
            all.extend(ids);
            match next {
                Some(id) if after.as_ref() != Some(&id) => after = Some(id),
                _ => break,
            }
        }
        Some(all)
    }

    /// Sends `req` with `stream: true` to [`AnthropicProvider::messages_url`]
    /// with headers `x-api-key` (when a key is set), `anthropic-version:
    /// 2023-06-01`, `content-type: application/json`, `accept:
    /// text/event-stream`, and returns the decoded events once the response
    /// headers arrived (see [`sse::decode`] for the stream's own errors,
    /// including the `Transport` error when it ends before `message_stop`).
    /// When no body bytes arrive for the idle timeout, the stream yields
    /// `Err(ProviderError::Transport(`[`idle_timeout_message`]`))` and ends.
    ///
    /// Errors, before any event:
    /// - [`ProviderError::MissingKey`] — no key and the host is
    ///   [`ANTHROPIC_HOST`]; nothing is sent;
    /// - [`ProviderError::Http`] — a non-2xx status: `kind`/`message` from
    ///   the API's `{"type":"error","error":{"type","message"}}` body, else
    ///   [`HTTP_ERROR_KIND`] and the body text (or the status reason when the
    ///   body is empty); `retry_after` from a `retry-after-ms` header, else a
    ///   `retry-after` header in seconds or as an HTTP-date;
    /// - [`ProviderError::Decode`] — a 2xx answer whose `content-type` is
    ///   not `text/event-stream`;
    /// - [`ProviderError::Request`] — the request could not be built (a key
    ///   that cannot be a header, a `base_url` that is not a URL);
    /// - [`ProviderError::Transport`] — the request could not be sent (DNS,
    ///   refused, TLS, connect timeout) with the cause chain, or no response
    ///   headers arrived within the idle timeout ([`idle_timeout_message`]).
    async fn stream(&self, req: &MessagesRequest) -> Result<EventStream, ProviderError> {
        let resp = tokio::time::timeout(
            self.endpoint.idle_timeout,
            self.send(req, true, "text/event-stream"),
        )
        .await
        .map_err(|_| {
            ProviderError::Transport(idle_timeout_message(self.endpoint.idle_timeout))
        })??;
        let status = resp.status();
        let headers = resp.headers().clone();
        if !status.is_success() {
            let text = read_capped(resp, MAX_ERROR_BODY_BYTES).await;
            return Err(http_error(status, &headers, &text));
        }
        let content_type = headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !content_type.is_empty() && !content_type.starts_with("text/event-stream") {
            let text = read_capped(resp, MAX_ERROR_BODY_BYTES).await;
            return Err(ProviderError::Decode(format!(
                "expected an event stream (text/event-stream), got {content_type}: {}",
                cut(&text, 200)
            )));
        }
        Ok(sse::decode(with_idle_timeout(
            resp.bytes_stream(),
            self.endpoint.idle_timeout,
        )))
    }

    /// Sends `req` with `stream: false` and `accept: application/json` and
    /// returns the parsed message (the same headers and key rules as
    /// [`stream`](Provider::stream)).
    ///
    /// Errors: [`ProviderError::MissingKey`], [`ProviderError::Request`],
    /// [`ProviderError::Http`] exactly as for `stream`;
    /// [`ProviderError::Transport`] when sending or reading the body failed,
    /// or the whole answer took longer than [`NON_STREAMING_TIMEOUT`] (or
    /// the idle timeout, when longer) — [`NON_STREAMING_TIMEOUT_MESSAGE`];
    /// [`ProviderError::Decode`] when a 2xx body is not a Messages API
    /// message (serde's error and the first 200 chars of the body).
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
                .map_err(|e| ProviderError::Transport(sse::chain(&e)))?;
            serde_json::from_slice::<MessagesResponse>(&bytes).map_err(|e| {
                ProviderError::Decode(format!(
                    "the answer is not a Messages API message ({e}): {}",
                    cut(&String::from_utf8_lossy(&bytes), 200)
                ))
            })
        };
        tokio::time::timeout(limit, answer).await.map_err(|_| {
            ProviderError::Transport(fill(
                NON_STREAMING_TIMEOUT_MESSAGE,
                &[("secs", &super::idle::ceil_secs(limit).to_string())],
            ))
        })?
    }
}

/// `{"type":"error","error":{"type": …, "message": …}}`.
#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ApiErrorBody,
}

/// Builds [`ProviderError::Http`] from a non-2xx answer.
fn http_error(status: reqwest::StatusCode, headers: &HeaderMap, body: &str) -> ProviderError {
    let retry_after = http::retry_after(headers, SystemTime::now());
    let (kind, message) = match serde_json::from_str::<ErrorEnvelope>(body) {
        Ok(env) => (env.error.kind, env.error.message),
        Err(_) => {
            let text = body.trim();
            let message = if text.is_empty() {
                status
                    .canonical_reason()
                    .unwrap_or("no reason given")
                    .to_string()
            } else {
                cut(text, MAX_ERROR_MESSAGE_CHARS)
            };
            (HTTP_ERROR_KIND.to_string(), message)
        }
    };
    ProviderError::Http {
        status: status.as_u16(),
        kind,
        message,
        retry_after,
        should_retry: http::should_retry(headers),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ContentBlock, Message, StopReason, StreamEvent};
    use crate::provider::assemble::{Assembled, MessageAssembler};
    use crate::provider::sse::STREAM_ENDED_EARLY;
    use futures::StreamExt;
    use pretty_assertions::assert_eq;
    use serde_json::{json, Value};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// What the test server received.
    struct Received {
        head: String,
        body: Value,
    }

    /// Serves one connection on a free loopback port: reads one request,
    /// then writes `writes` one by one (flushing and pausing between them so
    /// each tends to arrive as its own network read) and closes.
    async fn serve_once(writes: Vec<Vec<u8>>) -> (String, tokio::task::JoinHandle<Received>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = Vec::new();
            let mut tmp = [0u8; 4096];
            let head_end = loop {
                let n = sock.read(&mut tmp).await.unwrap();
                assert!(n > 0, "client closed before sending a request");
                buf.extend_from_slice(&tmp[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
            };
            let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
            let len: usize = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap();
            while buf.len() < head_end + len {
                let n = sock.read(&mut tmp).await.unwrap();
                assert!(n > 0);
                buf.extend_from_slice(&tmp[..n]);
            }
            let body = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap();
            for w in writes {
                // The client stops reading after message_stop and may close
                // before the last bytes (the terminating chunk) are written.
                if sock.write_all(&w).await.is_err() || sock.flush().await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            sock.shutdown().await.ok();
            Received { head, body }
        });
        (url, task)
    }

    /// An SSE body as the API sends it (CRLF line ends), with multi-byte text.
    fn sse_body() -> String {
        [
            r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Grüße ✓ "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"日本 🎉"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Grep","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"pattern\": \"gr"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"üße\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}"#,
            r#"{"type":"message_stop"}"#,
        ]
        .iter()
        .map(|d| {
            let name = serde_json::from_str::<Value>(d).unwrap()["type"].as_str().unwrap().to_string();
            format!("event: {name}\r\ndata: {d}\r\n\r\n")
        })
        .collect()
    }

    /// `body` as HTTP/1.1 chunked encoding, cut into chunks of `size` bytes
    /// (so chunk edges fall inside UTF-8 characters and CRLF pairs).
    fn chunked(body: &[u8], size: usize, terminate: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for part in body.chunks(size) {
            out.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
            out.extend_from_slice(part);
            out.extend_from_slice(b"\r\n");
        }
        if terminate {
            out.extend_from_slice(b"0\r\n\r\n");
        }
        out
    }

    /// Splits `bytes` into TCP writes of `size` bytes.
    fn writes(bytes: Vec<u8>, size: usize) -> Vec<Vec<u8>> {
        bytes.chunks(size).map(<[u8]>::to_vec).collect()
    }

    fn sse_head() -> Vec<u8> {
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ntransfer-encoding: chunked\r\n\r\n".to_vec()
    }

    fn request() -> MessagesRequest {
        MessagesRequest {
            model: "claude-sonnet-4-5".into(),
            max_tokens: 1024,
            system: "be brief".into(),
            messages: crate::protocol::shared(vec![Message::user_text("hi")]),
            tools: vec![],
            stream: false,
        }
    }

    fn provider(url: &str, key: Option<&str>) -> AnthropicProvider {
        AnthropicProvider::new(url, key.map(String::from), "LATHE_TEST_KEY").unwrap()
    }

    async fn collect(s: EventStream) -> Vec<Result<StreamEvent, ProviderError>> {
        s.collect().await
    }

    #[tokio::test]
    async fn streams_an_answer_split_at_awkward_points_and_sends_the_right_request() {
        let mut bytes = sse_head();
        bytes.extend(chunked(sse_body().as_bytes(), 7, true));
        let (url, server) = serve_once(writes(bytes, 5)).await;
        let events = collect(
            provider(&format!("{url}/"), Some("sk-test"))
                .stream(&request())
                .await
                .unwrap(),
        )
        .await;

        let mut a = MessageAssembler::new();
        let mut streamed = String::new();
        let mut tools = Vec::new();
        for ev in events {
            match a.push(ev.unwrap()) {
                Some(Assembled::TextDelta { text, .. }) => streamed.push_str(&text),
                Some(Assembled::ToolUseComplete(t)) => tools.push((t.name, t.input.unwrap())),
                _ => {}
            }
        }
        assert_eq!(streamed, "Grüße ✓ 日本 🎉");
        assert_eq!(
            tools,
            vec![("Grep".to_string(), json!({"pattern": "grüße"}))]
        );
        assert!(a.is_complete());
        assert_eq!(a.stop_reason(), Some(&StopReason::ToolUse));
        assert_eq!(
            a.message().content[0],
            ContentBlock::Text {
                text: "Grüße ✓ 日本 🎉".into()
            }
        );

        let got = server.await.unwrap();
        let head = got.head.to_ascii_lowercase();
        assert!(head.starts_with("post /v1/messages http/1.1\r\n"), "{head}");
        assert!(head.contains("\r\nx-api-key: sk-test\r\n"), "{head}");
        assert!(
            head.contains("\r\nanthropic-version: 2023-06-01\r\n"),
            "{head}"
        );
        assert!(
            head.contains("\r\ncontent-type: application/json\r\n"),
            "{head}"
        );
        assert_eq!(got.body["stream"], json!(true));
        assert_eq!(got.body["model"], json!("claude-sonnet-4-5"));
        assert_eq!(
            got.body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
            ]}]),
            "the last block of the conversation carries the prompt-cache breakpoint"
        );
    }

    async fn error_for(response: &str) -> ProviderError {
        let (url, _server) = serve_once(vec![response.as_bytes().to_vec()]).await;
        match provider(&url, Some("sk-test")).stream(&request()).await {
            Err(e) => e,
            Ok(_) => panic!("expected an error for {response:?}"),
        }
    }

    fn response(status: &str, extra_headers: &str, body: &str) -> String {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra_headers}\r\n{body}",
            body.len()
        )
    }

    #[tokio::test]
    async fn http_400_carries_the_api_error_type_and_message() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages.1: tool_use ids were found without tool_result blocks immediately after: toolu_01"}}"#;
        let e = error_for(&response("400 Bad Request", "", body)).await;
        assert_eq!(
            e,
            ProviderError::Http {
                status: 400,
                kind: "invalid_request_error".into(),
                message: "messages.1: tool_use ids were found without tool_result blocks immediately after: toolu_01".into(),
                retry_after: None,
                should_retry: None,
            }
        );
        assert_eq!(
            e.to_string(),
            "HTTP 400 invalid_request_error: messages.1: tool_use ids were found without tool_result blocks immediately after: toolu_01"
        );
    }

    #[tokio::test]
    async fn http_401_is_an_authentication_error() {
        let body = r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(
            error_for(&response("401 Unauthorized", "", body)).await,
            ProviderError::Http {
                status: 401,
                kind: "authentication_error".into(),
                message: "invalid x-api-key".into(),
                retry_after: None,
                should_retry: None,
            }
        );
    }

    #[tokio::test]
    async fn http_529_carries_retry_after() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert_eq!(
            error_for(&response("529 Site Overloaded", "retry-after: 7\r\n", body)).await,
            ProviderError::Http {
                status: 529,
                kind: "overloaded_error".into(),
                message: "Overloaded".into(),
                retry_after: Some(Duration::from_secs(7)),
                should_retry: None,
            }
        );
    }

    #[tokio::test]
    async fn non_api_error_body_falls_back_to_its_text_or_the_reason() {
        assert_eq!(
            error_for(&response(
                "502 Bad Gateway",
                "",
                "<html>upstream timed out</html>\n"
            ))
            .await,
            ProviderError::Http {
                status: 502,
                kind: HTTP_ERROR_KIND.into(),
                message: "<html>upstream timed out</html>".into(),
                retry_after: None,
                should_retry: None,
            }
        );
        let e = error_for(&response(
            "503 Service Unavailable",
            "retry-after: Wed, 21 Oct 2099 07:28:00 GMT\r\n",
            "",
        ))
        .await;
        let ProviderError::Http {
            status,
            kind,
            message,
            retry_after,
            ..
        } = e
        else {
            panic!("{e:?}")
        };
        assert_eq!(
            (status, kind.as_str(), message.as_str()),
            (503, HTTP_ERROR_KIND, "Service Unavailable")
        );
        // An HTTP-date decades ahead: a wait of decades (the policy caps it).
        assert!(
            retry_after.is_some_and(|d| d > Duration::from_secs(60 * 60 * 24 * 365 * 50)),
            "{retry_after:?}"
        );
    }

    #[tokio::test]
    async fn connection_dropped_mid_chunked_stream_is_transport_error() {
        let body = sse_body();
        let cut = body.find("event: content_block_stop").unwrap() + 10;
        let mut bytes = sse_head();
        bytes.extend(chunked(&body.as_bytes()[..cut], 9, false));
        let (url, _server) = serve_once(writes(bytes, 13)).await;
        let events = collect(provider(&url, None).stream(&request()).await.unwrap()).await;
        let (last, ok) = events.split_last().unwrap();
        assert_eq!(ok.len(), 5, "{events:?}");
        assert!(ok.iter().all(Result::is_ok), "{events:?}");
        assert!(matches!(last, Err(ProviderError::Transport(_))), "{last:?}");
    }

    #[tokio::test]
    async fn close_delimited_body_ending_before_message_stop_is_transport_error() {
        let body = sse_body();
        let cut = body.find("event: message_delta").unwrap();
        let mut bytes =
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                .to_vec();
        bytes.extend_from_slice(&body.as_bytes()[..cut]);
        let (url, _server) = serve_once(writes(bytes, 11)).await;
        let events = collect(provider(&url, None).stream(&request()).await.unwrap()).await;
        assert_eq!(
            events.last(),
            Some(&Err(ProviderError::Transport(STREAM_ENDED_EARLY.into())))
        );
        assert_eq!(
            events.iter().filter(|e| e.is_ok()).count(),
            10,
            "{events:?}"
        );
    }

    #[tokio::test]
    async fn error_event_in_a_200_stream_is_stream_error() {
        let body = "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"content\":[],\"model\":\"x\"}}\r\n\r\n\
                    event: error\r\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\r\n\r\n";
        let mut bytes = sse_head();
        bytes.extend(chunked(body.as_bytes(), 16, true));
        let (url, _server) = serve_once(vec![bytes]).await;
        let events = collect(provider(&url, None).stream(&request()).await.unwrap()).await;
        assert_eq!(
            events.last(),
            Some(&Err(ProviderError::Stream {
                kind: "overloaded_error".into(),
                message: "Overloaded".into()
            }))
        );
        assert_eq!(events.len(), 2);
    }

    #[tokio::test]
    async fn json_instead_of_sse_is_decode_error() {
        let e = error_for(&response("200 OK", "", r#"{"id":"msg_1","content":[]}"#)).await;
        assert!(
            matches!(&e, ProviderError::Decode(m) if m.starts_with("expected an event stream (text/event-stream), got application/json: {\"id\"")),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn no_key_for_a_local_server_sends_without_x_api_key() {
        let mut bytes = sse_head();
        bytes.extend(chunked(sse_body().as_bytes(), 4096, true));
        let (url, server) = serve_once(vec![bytes]).await;
        let events = collect(provider(&url, None).stream(&request()).await.unwrap()).await;
        assert_eq!(events.last(), Some(&Ok(StreamEvent::MessageStop)));
        let head = server.await.unwrap().head.to_ascii_lowercase();
        assert!(!head.contains("x-api-key"), "{head}");
    }

    #[tokio::test]
    async fn no_key_for_the_anthropic_host_is_missing_key_before_sending() {
        for url in ["https://api.anthropic.com", "https://API.anthropic.com/"] {
            let p = AnthropicProvider::new(url, Some("  ".into()), "MY_KEY_VAR").unwrap();
            let e = p.stream(&request()).await.err().unwrap();
            assert_eq!(
                e,
                ProviderError::MissingKey {
                    env: "MY_KEY_VAR".into()
                }
            );
        }
    }

    #[tokio::test]
    async fn refused_connection_is_transport_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let e = provider(&url, None).stream(&request()).await.err().unwrap();
        assert!(
            matches!(&e, ProviderError::Transport(m) if m.contains("error sending request")),
            "{e:?}"
        );
    }

    #[test]
    fn from_config_reads_base_url_and_the_named_key_variable() {
        let mut cfg = Config::new(std::path::Path::new("/tmp"));
        cfg.base_url = "http://127.0.0.1:9/".into();
        cfg.api_key_env = "LATHE_PROVIDER_TEST_KEY_UNSET_0xC0FFEE".into();
        cfg.idle_timeout_ms = 1500;
        let p = AnthropicProvider::from_config(&cfg).unwrap();
        assert_eq!(p.messages_url(), "http://127.0.0.1:9/v1/messages");
        assert_eq!(p.idle_timeout(), Duration::from_millis(1500));
        assert_eq!(p.endpoint.api_key, None);
        assert_eq!(
            p.endpoint.api_key_env,
            "LATHE_PROVIDER_TEST_KEY_UNSET_0xC0FFEE"
        );
    }

    /// Serves one connection: reads the request head, writes `first`, then
    /// keeps the socket open without writing until the client goes away.
    async fn serve_then_stall(first: Vec<u8>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut tmp = [0u8; 4096];
            let mut buf = Vec::new();
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = sock.read(&mut tmp).await.unwrap();
                if n == 0 {
                    return;
                }
                buf.extend_from_slice(&tmp[..n]);
            }
            sock.write_all(&first).await.ok();
            sock.flush().await.ok();
            // Stall: wait for the client to close (read returns 0 or fails).
            while matches!(sock.read(&mut tmp).await, Ok(n) if n > 0) {}
        });
        url
    }

    #[tokio::test]
    async fn a_body_that_goes_silent_ends_with_the_idle_error() {
        let body = "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"role\":\"assistant\",\"content\":[],\"model\":\"x\"}}\r\n\r\n";
        let mut bytes = sse_head();
        bytes.extend(chunked(body.as_bytes(), 4096, false));
        let url = serve_then_stall(bytes).await;
        let p = provider(&url, None).with_idle_timeout(Duration::from_millis(300));
        let started = std::time::Instant::now();
        let events = collect(p.stream(&request()).await.unwrap()).await;
        assert_eq!(events.len(), 2, "{events:?}");
        assert!(matches!(events[0], Ok(StreamEvent::MessageStart { .. })));
        assert_eq!(
            events[1],
            Err(ProviderError::Transport(
                "no data from the API for 1 s (idle timeout)".into()
            ))
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn no_response_headers_within_the_idle_timeout_is_the_idle_error() {
        let url = serve_then_stall(Vec::new()).await;
        let p = provider(&url, None).with_idle_timeout(Duration::from_millis(300));
        let e = p.stream(&request()).await.err().unwrap();
        assert_eq!(
            e,
            ProviderError::Transport("no data from the API for 1 s (idle timeout)".into())
        );
        assert!(crate::provider::retry::is_retryable(&e));
    }

    #[tokio::test]
    async fn complete_sends_stream_false_and_parses_the_message() {
        let body = r#"{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Grüße"},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"a.rs"}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":4}}"#;
        let (url, server) = serve_once(vec![response("200 OK", "", body).into_bytes()]).await;
        let got = provider(&url, Some("sk-test"))
            .complete(&request())
            .await
            .unwrap();
        assert_eq!(got.id, "msg_2");
        assert_eq!(got.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(
            got.content,
            vec![
                ContentBlock::Text {
                    text: "Grüße".into()
                },
                ContentBlock::ToolUse(crate::protocol::ToolUse {
                    id: "toolu_1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "a.rs"}),
                    extra: Default::default(),
                }),
            ]
        );
        let sent = server.await.unwrap();
        assert_eq!(sent.body["stream"], json!(false));
        let head = sent.head.to_ascii_lowercase();
        assert!(head.contains("\r\naccept: application/json\r\n"), "{head}");
        assert!(head.contains("\r\nx-api-key: sk-test\r\n"), "{head}");
    }

    #[tokio::test]
    async fn complete_maps_errors_like_stream() {
        let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        let (url, _s) = serve_once(vec![response(
            "429 Too Many Requests",
            "retry-after: 3\r\n",
            body,
        )
        .into_bytes()])
        .await;
        assert_eq!(
            provider(&url, None).complete(&request()).await.unwrap_err(),
            ProviderError::Http {
                status: 429,
                kind: "rate_limit_error".into(),
                message: "slow down".into(),
                retry_after: Some(Duration::from_secs(3)),
                should_retry: None,
            }
        );
        let (url, _s) = serve_once(vec![
            response("200 OK", "", "<html>proxy</html>").into_bytes()
        ])
        .await;
        let e = provider(&url, None).complete(&request()).await.unwrap_err();
        assert!(
            matches!(&e, ProviderError::Decode(m) if m.starts_with("the answer is not a Messages API message (") && m.ends_with("): <html>proxy</html>")),
            "{e:?}"
        );
    }

    #[tokio::test]
    async fn a_key_that_cannot_be_a_header_is_a_request_error_not_retried() {
        let p =
            AnthropicProvider::new("http://127.0.0.1:9", Some("sk\nbad".into()), "MY_KEY").unwrap();
        let e = p.stream(&request()).await.err().unwrap();
        assert_eq!(
            e,
            ProviderError::Request(
                "the API key in $MY_KEY has characters an HTTP header cannot carry".into()
            )
        );
        assert!(!crate::provider::retry::is_retryable(&e));
    }

    #[test]
    fn cut_keeps_char_boundaries() {
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(cut("hé", 2), "hé");
    }
}
