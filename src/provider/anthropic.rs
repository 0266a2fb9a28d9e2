//! The Anthropic Messages API provider: `POST {base_url}/v1/messages` with
//! `stream: true`, answered as SSE (<https://docs.anthropic.com/en/api/messages>,
//! <https://docs.anthropic.com/en/api/messages-streaming>,
//! <https://docs.anthropic.com/en/api/errors>).
//!
//! No retries here: a failure is returned once, as a [`ProviderError`]
//! (retry/backoff wraps a provider in a later issue).

use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE, RETRY_AFTER};
use serde::Deserialize;

use super::{sse, EventStream, Provider, ProviderError};
use crate::config::Config;
use crate::protocol::{ApiErrorBody, MessagesRequest};

/// Value of the `anthropic-version` header (the API's only stable version).
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Host of the real API. Without a key, requests to it fail early with
/// [`ProviderError::MissingKey`]; other hosts (a local mock, a proxy) are
/// sent to without `x-api-key`.
pub const ANTHROPIC_HOST: &str = "api.anthropic.com";
/// TCP + TLS connect timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest silence between two network reads (response headers or body
/// bytes) before the request fails with [`ProviderError::Transport`]. The API
/// sends `ping` events while a long answer is being produced.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(600);
/// `kind` of [`ProviderError::Http`] when the error body is not the API's
/// `{"type":"error","error":{…}}` shape.
pub const HTTP_ERROR_KIND: &str = "http_error";
/// Most bytes of an error body that are read and shown (64 KiB).
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;
/// Most chars of a non-API error body kept in the message.
const MAX_ERROR_MESSAGE_CHARS: usize = 1000;

/// Talks to the Messages API (or anything that speaks it, e.g. `mock-llm`).
#[derive(Debug, Clone)]
pub struct AnthropicProvider {
    /// `scheme://host[:port][/prefix]` without a trailing `/`.
    base_url: String,
    /// Sent as `x-api-key` when present.
    api_key: Option<String>,
    /// Variable the key came from; named in [`ProviderError::MissingKey`].
    api_key_env: String,
    http: reqwest::Client,
}

impl AnthropicProvider {
    /// A provider for `base_url` (e.g. `Config.base_url`,
    /// `https://api.anthropic.com` or `http://127.0.0.1:PORT`; a trailing `/`
    /// is ignored) with `api_key` (the value of the variable named
    /// `api_key_env`, `None` when unset or empty).
    ///
    /// Builds its own rustls `reqwest::Client` with [`CONNECT_TIMEOUT`] and
    /// [`IDLE_TIMEOUT`]. Errors: [`ProviderError::Transport`] when the client
    /// cannot be built (TLS backend initialisation failed).
    pub fn new(
        base_url: impl Into<String>,
        api_key: Option<String>,
        api_key_env: impl Into<String>,
    ) -> Result<Self, ProviderError> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(IDLE_TIMEOUT)
            .user_agent(concat!("lathe/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Transport(sse::chain(&e)))?;
        Ok(Self::with_client(base_url, api_key, api_key_env, http))
    }

    /// Like [`new`](Self::new) with a caller-built client (tests, proxies).
    pub fn with_client(
        base_url: impl Into<String>,
        api_key: Option<String>,
        api_key_env: impl Into<String>,
        http: reqwest::Client,
    ) -> Self {
        let base_url = base_url.into().trim_end_matches('/').to_string();
        let api_key = api_key
            .map(|k| k.trim().to_string())
            .filter(|k| !k.is_empty());
        Self {
            base_url,
            api_key,
            api_key_env: api_key_env.into(),
            http,
        }
    }

    /// A provider for `cfg.base_url`, with the key read now from the
    /// environment variable named `cfg.api_key_env` (surrounding whitespace
    /// trimmed; unset, empty or not UTF-8 means no key). A missing key is
    /// not an error here; [`Provider::stream`] reports it.
    /// Errors: as [`new`](Self::new).
    pub fn from_config(cfg: &Config) -> Result<Self, ProviderError> {
        let key = std::env::var(&cfg.api_key_env).ok();
        Self::new(cfg.base_url.clone(), key, cfg.api_key_env.clone())
    }

    /// `{base_url}/v1/messages`, where requests go.
    pub fn messages_url(&self) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    /// `true` when the base URL's host is [`ANTHROPIC_HOST`].
    fn is_anthropic_host(&self) -> bool {
        reqwest::Url::parse(&self.base_url)
            .ok()
            .and_then(|u| u.host_str().map(|h| h.eq_ignore_ascii_case(ANTHROPIC_HOST)))
            .unwrap_or(false)
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    /// Sends `req` with `stream: true` to [`AnthropicProvider::messages_url`]
    /// with headers `x-api-key` (when a key is set), `anthropic-version:
    /// 2023-06-01`, `content-type: application/json`, `accept:
    /// text/event-stream`, and returns the decoded events once the response
    /// headers arrived (see [`sse::decode`] for the stream's own errors,
    /// including the `Transport` error when it ends before `message_stop`).
    ///
    /// Errors, before any event:
    /// - [`ProviderError::MissingKey`] — no key and the host is
    ///   [`ANTHROPIC_HOST`]; nothing is sent;
    /// - [`ProviderError::Http`] — a non-2xx status: `kind`/`message` from
    ///   the API's `{"type":"error","error":{"type","message"}}` body, else
    ///   [`HTTP_ERROR_KIND`] and the body text (or the status reason when the
    ///   body is empty); `retry_after_s` from a `retry-after` header in
    ///   seconds (an HTTP-date value gives `None`);
    /// - [`ProviderError::Decode`] — a 2xx answer whose `content-type` is
    ///   not `text/event-stream`;
    /// - [`ProviderError::Transport`] — the request could not be built or
    ///   sent (bad URL, DNS, refused, TLS, timeout), with the cause chain.
    async fn stream(&self, req: &MessagesRequest) -> Result<EventStream, ProviderError> {
        if self.api_key.is_none() && self.is_anthropic_host() {
            return Err(ProviderError::MissingKey {
                env: self.api_key_env.clone(),
            });
        }
        let mut body = req.clone();
        body.stream = true;
        let mut builder = self
            .http
            .post(self.messages_url())
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .json(&body);
        if let Some(key) = &self.api_key {
            let mut value = HeaderValue::from_str(key).map_err(|_| {
                ProviderError::Transport(format!(
                    "the API key in ${} has characters an HTTP header cannot carry",
                    self.api_key_env
                ))
            })?;
            value.set_sensitive(true);
            builder = builder.header("x-api-key", value);
        }
        let resp = builder
            .send()
            .await
            .map_err(|e| ProviderError::Transport(sse::chain(&e)))?;
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
        Ok(sse::decode(resp.bytes_stream()))
    }
}

/// `{"type":"error","error":{"type": …, "message": …}}`.
#[derive(Deserialize)]
struct ErrorEnvelope {
    error: ApiErrorBody,
}

/// Builds [`ProviderError::Http`] from a non-2xx answer.
fn http_error(status: reqwest::StatusCode, headers: &HeaderMap, body: &str) -> ProviderError {
    let retry_after_s = headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
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
        retry_after_s,
    }
}

/// `retry-after` as whole seconds: `"7"` → 7, `"1.5"` → 2; an HTTP-date or
/// garbage → `None`.
fn parse_retry_after(v: &str) -> Option<u64> {
    let v = v.trim();
    if let Ok(n) = v.parse::<u64>() {
        return Some(n);
    }
    let f = v
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite() && *f >= 0.0)?;
    // Bounded above by u64::MAX as f64; the cast saturates.
    Some(f.ceil() as u64)
}

/// Reads at most `cap` bytes of the body as lossy UTF-8; a read error ends
/// the text early (the status already tells what went wrong).
async fn read_capped(resp: reqwest::Response, cap: usize) -> String {
    let mut bytes = Vec::new();
    let mut body = resp.bytes_stream();
    while let Some(Ok(chunk)) = body.next().await {
        let room = cap.saturating_sub(bytes.len());
        bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if bytes.len() >= cap {
            break;
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The first `max` chars of `s`, with `…` when cut.
fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ContentBlock, Message, StopReason, StreamEvent};
    use crate::provider::assemble::{Assembled, MessageAssembler};
    use crate::provider::sse::STREAM_ENDED_EARLY;
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
            messages: vec![Message::user_text("hi")],
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
            json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
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
                retry_after_s: None,
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
                retry_after_s: None,
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
                retry_after_s: Some(7),
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
                retry_after_s: None,
            }
        );
        assert_eq!(
            error_for(&response(
                "503 Service Unavailable",
                "retry-after: Wed, 21 Oct 2099 07:28:00 GMT\r\n",
                ""
            ))
            .await,
            ProviderError::Http {
                status: 503,
                kind: HTTP_ERROR_KIND.into(),
                message: "Service Unavailable".into(),
                retry_after_s: None,
            }
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
        let p = AnthropicProvider::from_config(&cfg).unwrap();
        assert_eq!(p.messages_url(), "http://127.0.0.1:9/v1/messages");
        assert_eq!(p.api_key, None);
        assert_eq!(p.api_key_env, "LATHE_PROVIDER_TEST_KEY_UNSET_0xC0FFEE");
    }

    #[test]
    fn retry_after_parsing() {
        assert_eq!(parse_retry_after("7"), Some(7));
        assert_eq!(parse_retry_after(" 30 "), Some(30));
        assert_eq!(parse_retry_after("1.5"), Some(2));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2099 07:28:00 GMT"), None);
    }

    #[test]
    fn cut_keeps_char_boundaries() {
        assert_eq!(cut("héllo", 2), "hé…");
        assert_eq!(cut("hé", 2), "hé");
    }
}
