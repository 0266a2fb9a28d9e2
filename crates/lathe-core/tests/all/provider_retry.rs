//! The provider's recovery pieces against `mock-llm` over loopback: which
//! faults are retried, what the chat would show, the idle timeout, and the
//! non-streaming fallback. `attempt` below is the small loop the turn loop is
//! meant to run with these pieces (without sleeping: the waits are only
//! recorded in the notices).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use lathe_test_support as common;

use std::time::Duration;

use futures::StreamExt;
use lathe_core::protocol::{ContentBlock, Message, MessagesRequest, Role, StopReason, ToolUse};
use lathe_core::provider::anthropic::AnthropicProvider;
use lathe_core::provider::assemble::MessageAssembler;
use lathe_core::provider::hints::{retrying_message, user_message};
use lathe_core::provider::replay::response_events;
use lathe_core::provider::retry::RetryPolicy;
use lathe_core::provider::{Provider, ProviderError};
use mock_llm::MockServer;
use pretty_assertions::assert_eq;
use serde_json::{json, Value};

const KEY_ENV: &str = "ANTHROPIC_API_KEY";

async fn server(responses: Value) -> MockServer {
    common::spawn_mock(&json!({ "responses": responses })).await
}

fn provider(server: &MockServer) -> AnthropicProvider {
    AnthropicProvider::new(server.url(), None, KEY_ENV).expect("provider")
}

fn request() -> MessagesRequest {
    MessagesRequest {
        model: "claude-sonnet-4-5".into(),
        max_tokens: 1024,
        system: String::new(),
        messages: lathe_core::protocol::shared(vec![Message::user_text("find the typo")]),
        tools: vec![],
        stream: false,
    }
}

/// One streamed answer, assembled; the first error ends it.
async fn stream_once(p: &dyn Provider, req: &MessagesRequest) -> Result<Message, ProviderError> {
    let mut events = p.stream(req).await?;
    let mut a = MessageAssembler::new();
    while let Some(ev) = events.next().await {
        a.push(ev?);
    }
    Ok(a.finish())
}

/// The retry loop: stream, and on failure either note "retrying …" and go
/// again, or give up with the user-facing message.
async fn attempt(p: &dyn Provider, policy: &RetryPolicy) -> (Result<Message, String>, Vec<String>) {
    let req = request();
    let mut notices = Vec::new();
    let mut n = 1;
    loop {
        match stream_once(p, &req).await {
            Ok(m) => return (Ok(m), notices),
            Err(e) => match policy.next_delay(n, &e) {
                Some(wait) => {
                    notices.push(retrying_message(wait, n + 1, policy.max_attempts, &e));
                    n += 1;
                }
                None => return (Err(user_message(&e, KEY_ENV)), notices),
            },
        }
    }
}

fn found_it() -> Value {
    json!({ "content": [{ "type": "text", "text": "Found it." }] })
}

fn text(m: &Message) -> String {
    m.content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn http_529_with_retry_after_then_success() {
    let s = server(json!([
        { "fault": { "http_status": 529, "retry_after_s": 2 } },
        found_it()
    ]))
    .await;
    let (got, notices) = attempt(&provider(&s), &RetryPolicy::default()).await;
    assert_eq!(text(&got.unwrap()), "Found it.");
    assert_eq!(
        notices,
        ["retrying in 2s (attempt 2 of 5): HTTP 529 overloaded_error: Overloaded"]
    );
    assert_eq!(s.served(), 2);
}

#[tokio::test]
async fn http_429_honours_retry_after_up_to_the_cap() {
    let s = server(json!([
        { "fault": { "http_status": 429, "retry_after_s": 3 } },
        { "fault": { "http_status": 429, "retry_after_s": 3600 } },
        found_it()
    ]))
    .await;
    let (got, notices) = attempt(&provider(&s), &RetryPolicy::default()).await;
    assert_eq!(text(&got.unwrap()), "Found it.");
    let msg = "HTTP 429 rate_limit_error: Number of requests has exceeded your rate limit (mock-llm fault)";
    assert_eq!(
        notices,
        [
            format!("retrying in 3s (attempt 2 of 5): {msg}"),
            format!("retrying in 60s (attempt 3 of 5): {msg}"),
        ]
    );
}

#[tokio::test]
async fn overloaded_error_mid_stream_is_retried() {
    let s = server(json!([
        { "content": [{ "type": "text", "text": "Partial answer" }],
          "fault": { "sse_error": "overloaded_error", "after_events": 4 } },
        found_it()
    ]))
    .await;
    let (got, notices) = attempt(&provider(&s), &RetryPolicy::default()).await;
    assert_eq!(text(&got.unwrap()), "Found it.");
    // No retry-after in a stream: a backoff of 250–500 ms, shown as it is.
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_backoff(
        &notices[0],
        "(attempt 2 of 5): overloaded_error: Overloaded",
    );
}

#[tokio::test]
async fn disconnect_after_a_tool_use_block_is_retried() {
    let tool = json!({ "type": "tool_use", "id": "toolu_01", "name": "Grep",
                       "input": { "pattern": "Helo" } });
    // message_start, ping, block start, delta, block stop: the tool_use is
    // complete, message_stop never comes.
    let s = server(json!([
        { "content": [tool.clone()], "fault": { "disconnect_after_events": 5 } },
        { "content": [tool] }
    ]))
    .await;
    let (got, notices) = attempt(&provider(&s), &RetryPolicy::default()).await;
    let m = got.unwrap();
    assert_eq!(
        m.content,
        vec![ContentBlock::ToolUse(ToolUse {
            id: "toolu_01".into(),
            name: "Grep".into(),
            input: json!({ "pattern": "Helo" }),
            extra: Default::default(),
        })]
    );
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_backoff(&notices[0], "(attempt 2 of 5): connection error: ");
}

#[tokio::test]
async fn an_idle_stream_is_cut_and_retried() {
    let s = server(json!([
        { "content": [{ "type": "text", "text": "Slow" }], "event_delay_ms": 5000 },
        found_it()
    ]))
    .await;
    let p = provider(&s).with_idle_timeout(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (got, notices) = attempt(&p, &RetryPolicy::default()).await;
    assert_eq!(text(&got.unwrap()), "Found it.");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_backoff(
        &notices[0],
        "(attempt 2 of 5): connection error: no data from the API for 1 s (idle timeout)",
    );
    // The 5 s pauses were not waited out (generous bound).
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn client_errors_are_not_retried_and_say_what_to_do() {
    let cases = [
        (
            401,
            "HTTP 401 authentication_error: invalid x-api-key (mock-llm fault)\n\
             Check your API key: lathe reads it from $ANTHROPIC_API_KEY (setup{ api_key_env = \"...\" } names another variable).",
        ),
        (
            403,
            "HTTP 403 permission_error: Your API key does not have permission (mock-llm fault)\n\
             Your API key is not allowed to do this: check the permissions of its account and workspace (e.g. access to this model) with your API provider.",
        ),
        (
            404,
            "HTTP 404 not_found_error: Not found (mock-llm fault)\n\
             Check `model` and `base_url` in setup{}: the model id may be misspelled or retired, or base_url may not point at the API (with provider = \"openai\" it ends in the API's version path, e.g. /v1).",
        ),
        (
            413,
            "HTTP 413 request_too_large: Request exceeds the maximum allowed size (mock-llm fault)\n\
             The request is too large: the conversation has grown too long. Start a new session.",
        ),
        (
            400,
            "HTTP 400 invalid_request_error: Invalid request (mock-llm fault)",
        ),
    ];
    for (status, want) in cases {
        let s = server(json!([{ "fault": { "http_status": status } }, found_it()])).await;
        let (got, notices) = attempt(&provider(&s), &RetryPolicy::default()).await;
        assert_eq!(got, Err(want.to_string()), "{status}");
        assert!(notices.is_empty(), "{status}: {notices:?}");
        assert_eq!(s.requests().len(), 1, "{status}: sent again");
    }
}

#[tokio::test]
async fn retries_stop_at_max_attempts() {
    let s = server(json!([
        { "fault": { "http_status": 503, "retry_after_s": 0 } },
        { "fault": { "http_status": 500, "retry_after_s": 0 } },
        { "fault": { "http_status": 529, "retry_after_s": 0 } },
        found_it()
    ]))
    .await;
    let policy = RetryPolicy {
        max_attempts: 3,
        ..RetryPolicy::default()
    };
    let (got, notices) = attempt(&provider(&s), &policy).await;
    assert_eq!(
        got,
        Err("HTTP 529 overloaded_error: Overloaded\n\
             The API is overloaded or failing; this is usually temporary. Ask again in a moment."
            .to_string())
    );
    assert_eq!(
        notices,
        [
            "retrying in 0s (attempt 2 of 3): HTTP 503 api_error: Internal server error (mock-llm fault)",
            "retrying in 0s (attempt 3 of 3): HTTP 500 api_error: Internal server error (mock-llm fault)",
        ]
    );
    assert_eq!(s.served(), 3);
}

fn two_blocks() -> Value {
    json!({ "content": [
        { "type": "text", "text": "Grüße — let me look 🎉" },
        { "type": "tool_use", "id": "toolu_07", "name": "Read",
          "input": { "file_path": "greeting.py", "offset": 2 } } ],
      "text_chunk_chars": 3, "json_chunk_chars": 5 })
}

#[tokio::test]
async fn complete_then_replayed_events_give_the_streamed_message() {
    let s = server(json!([two_blocks(), two_blocks()])).await;
    let p = provider(&s);
    let streamed = stream_once(&p, &request()).await.unwrap();

    let resp = p.complete(&request()).await.unwrap();
    assert_eq!(resp.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(resp.model, "claude-sonnet-4-5");
    let mut a = MessageAssembler::new();
    for ev in response_events(&resp) {
        a.push(ev);
    }
    assert!(a.is_complete());
    assert_eq!(a.stop_reason(), Some(&StopReason::ToolUse));
    assert_eq!(a.message(), streamed);
    assert_eq!(streamed.role, Role::Assistant);
    assert_eq!(streamed.content.len(), 2);

    let bodies = s.requests();
    assert_eq!(bodies[0]["stream"], json!(true));
    assert_eq!(bodies[1]["stream"], json!(false));
}

#[tokio::test]
async fn stream_failure_then_non_streaming_fallback() {
    // stream_fallback = "non_streaming": the stream dies mid-answer, the same
    // request goes again without streaming.
    let s = server(json!([
        { "content": [{ "type": "text", "text": "Cut off mid-sentence" }],
          "fault": { "disconnect_after_events": 4 } },
        two_blocks()
    ]))
    .await;
    let p = provider(&s);
    let e = stream_once(&p, &request()).await.unwrap_err();
    assert!(matches!(e, ProviderError::Transport(_)), "{e:?}");
    assert!(lathe_core::provider::retry::is_retryable(&e));
    let resp = p.complete(&request()).await.unwrap();
    let mut a = MessageAssembler::new();
    for ev in response_events(&resp) {
        a.push(ev);
    }
    assert_eq!(text(&a.message()), "Grüße — let me look 🎉");
    assert_eq!(a.message().tool_uses().count(), 1);
}

#[tokio::test]
async fn complete_reports_faults_like_stream() {
    let s = server(json!([
        { "fault": { "http_status": 529, "retry_after_s": 4 } },
        { "content": [{ "type": "text", "text": "x" }],
          "fault": { "sse_error": "overloaded_error", "after_events": 2 } },
        { "content": [{ "type": "text", "text": "x" }],
          "fault": { "disconnect_after_events": 2 } }
    ]))
    .await;
    let p = provider(&s);
    let policy = RetryPolicy::default();
    assert_eq!(
        p.complete(&request()).await.unwrap_err(),
        ProviderError::Http {
            status: 529,
            kind: "overloaded_error".into(),
            message: "Overloaded".into(),
            retry_after: Some(Duration::from_secs(4)),
            should_retry: None,
        }
    );
    // A non-streaming request for an sse_error entry gets the HTTP form.
    let e = p.complete(&request()).await.unwrap_err();
    assert!(
        matches!(&e, ProviderError::Http { status: 529, .. }),
        "{e:?}"
    );
    assert!(policy.next_delay(1, &e).is_some());
    let e = p.complete(&request()).await.unwrap_err();
    assert!(matches!(&e, ProviderError::Transport(_)), "{e:?}");
    assert!(policy.next_delay(1, &e).is_some());
}

/// Asserts `notice` is "retrying in {w}s {rest}…" with the first backoff of
/// the default policy (250–500 ms), as the chat shows it (tenths).
fn assert_backoff(notice: &str, rest: &str) {
    let after = notice
        .strip_prefix("retrying in ")
        .unwrap_or_else(|| panic!("{notice:?}"));
    let (secs, tail) = after
        .split_once("s ")
        .unwrap_or_else(|| panic!("{notice:?}"));
    let secs: f64 = secs.parse().unwrap_or_else(|_| panic!("{notice:?}"));
    assert!((0.2..=0.5).contains(&secs), "wait {secs} s in {notice:?}");
    assert!(tail.starts_with(rest), "{notice:?}");
}
