//! The OpenAI-compatible provider against streams recorded from real
//! servers (`tests/fixtures/openai/*.sse`, each naming its source in its
//! first comment lines): bytes → [`decode`] → [`MessageAssembler`] gives
//! exactly the assistant message, stop reason and usage the server meant,
//! whatever the network split. Then the request conversion of a transcript
//! as exact JSON, and the HTTP client against a one-shot loopback server
//! (path, `Authorization`, errors, the non-streaming fallback).

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use futures::executor::block_on;
use futures::StreamExt;
use lathe_core::config::{Config, ProviderKind};
use lathe_core::protocol::{
    ContentBlock, ImageSource, Message, MessagesRequest, Role, StopReason, StreamEvent,
    ToolDefinition, ToolResult, ToolResultContent, ToolUse, Usage,
};
use lathe_core::provider::assemble::MessageAssembler;
use lathe_core::provider::openai::request::chat_request;
use lathe_core::provider::openai::stream::decode;
use lathe_core::provider::openai::OpenAiProvider;
use lathe_core::provider::{Provider, ProviderError};
use pretty_assertions::assert_eq;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

// ---------------------------------------------------------------------------
// Recorded streams

fn fixture(name: &str) -> Vec<u8> {
    let path = lathe_test_support::workspace_root()
        .join("tests/fixtures/openai")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The decoded events of `bytes` delivered in network reads of `split` bytes.
fn events_split(bytes: &[u8], split: usize) -> Vec<Result<StreamEvent, ProviderError>> {
    let reads: Vec<Result<Vec<u8>, std::io::Error>> =
        bytes.chunks(split).map(|c| Ok(c.to_vec())).collect();
    block_on(decode(futures::stream::iter(reads)).collect())
}

/// The events of fixture `name`, checked to be the same for many splits
/// (a line, a JSON string or a CRLF pair cut between two reads).
fn events(name: &str) -> Vec<Result<StreamEvent, ProviderError>> {
    let bytes = fixture(name);
    let whole = events_split(&bytes, bytes.len());
    for split in [1, 2, 3, 5, 8, 13, 64, 500] {
        assert_eq!(events_split(&bytes, split), whole, "{name}, split {split}");
    }
    whole
}

/// What one answer assembled to, and the error that ended it, if any.
#[derive(Debug, PartialEq)]
struct Answer {
    id: String,
    model: String,
    content: Vec<ContentBlock>,
    stop_reason: Option<StopReason>,
    usage: Usage,
    complete: bool,
    error: Option<ProviderError>,
}

fn assemble(name: &str) -> Answer {
    let mut a = MessageAssembler::new();
    let mut error = None;
    for ev in events(name) {
        match ev {
            Ok(ev) => {
                a.push(ev);
            }
            Err(e) => error = Some(e),
        }
    }
    Answer {
        id: a.id().to_string(),
        model: a.model().to_string(),
        stop_reason: a.stop_reason().cloned(),
        usage: a.usage().clone(),
        complete: a.is_complete(),
        content: a.message().content,
        error,
    }
}

fn text(t: &str) -> ContentBlock {
    ContentBlock::Text { text: t.into() }
}

fn thinking(t: &str) -> ContentBlock {
    ContentBlock::Thinking {
        thinking: t.into(),
        signature: String::new(),
    }
}

fn tool(id: &str, name: &str, input: Value) -> ContentBlock {
    ContentBlock::ToolUse(ToolUse {
        id: id.into(),
        name: name.into(),
        input,
        extra: Default::default(),
    })
}

fn usage(input: Option<u64>, output: Option<u64>, cache_read: Option<u64>) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_creation_input_tokens: None,
        cache_read_input_tokens: cache_read,
        output_estimated: false,
    }
}

fn answer(
    id: &str,
    model: &str,
    content: Vec<ContentBlock>,
    stop: StopReason,
    usage: Usage,
) -> Answer {
    Answer {
        id: id.into(),
        model: model.into(),
        content,
        stop_reason: Some(stop),
        usage,
        complete: true,
        error: None,
    }
}

/// The position of the first event matching `f`.
fn position(
    events: &[Result<StreamEvent, ProviderError>],
    f: impl Fn(&StreamEvent) -> bool,
) -> usize {
    events
        .iter()
        .position(|e| e.as_ref().is_ok_and(&f))
        .expect("event")
}

#[test]
fn openai_plain_text_with_usage_in_a_last_chunk_without_choices() {
    assert_eq!(
        assemble("openai_text.sse"),
        answer(
            "chatcmpl-9tXjg9DdaOfymTPDrSLfxslQEH0C2",
            "gpt-4o-2024-08-06",
            vec![text("I'm unable to provide real-time updates.")],
            StopReason::EndTurn,
            usage(Some(14), Some(47), None),
        )
    );
}

#[test]
fn openai_tool_call_with_id_and_name_once_and_arguments_in_pieces() {
    assert_eq!(
        assemble("openai_tool_call.sse"),
        answer(
            "chatcmpl-9tXjtfxZZh2FYaFVxXKf2jiqNDiSo",
            "gpt-4o-2024-08-06",
            vec![tool(
                "call_5uxEBMFySqqQGu02I5QHA8k6",
                "get_weather",
                json!({"city": "New York City"})
            )],
            StopReason::ToolUse,
            usage(Some(44), Some(16), None),
        )
    );
}

#[test]
fn openai_parallel_tool_calls_and_the_first_runs_before_the_second_is_streamed() {
    assert_eq!(
        assemble("openai_parallel_tool_calls.sse"),
        answer(
            "chatcmpl-9tXjpPLJgivc9nyuBCCWX8HNg9L2J",
            "gpt-4o-2024-08-06",
            vec![
                tool(
                    "call_lQnnsesjFMWMQ5IeWPHzR4th",
                    "GetWeatherArgs",
                    json!({"city": "Edinburgh", "country": "UK", "units": "c"})
                ),
                tool(
                    "call_2xjOUgaCdiwAcl9ZBL9LyMUU",
                    "get_stock_price",
                    json!({"ticker": "AAPL", "exchange": "NASDAQ"})
                ),
            ],
            StopReason::ToolUse,
            usage(Some(149), Some(60), None),
        )
    );
    // Index 0 is complete JSON when index 1 starts: it closes (and the
    // executor may start it) before the second call streams.
    let evs = events("openai_parallel_tool_calls.sse");
    let first_stop = position(&evs, |e| {
        matches!(e, StreamEvent::ContentBlockStop { index: 0 })
    });
    let second_start = position(&evs, |e| {
        matches!(e, StreamEvent::ContentBlockStart { index: 1, .. })
    });
    assert!(first_stop < second_start, "{evs:#?}");
}

#[test]
fn ollama_parallel_tool_calls_each_whole_in_one_chunk() {
    assert_eq!(
        assemble("ollama_parallel_tool_calls.sse"),
        answer(
            "chatcmpl-18",
            "qwen2.5-coder:7b-instruct-q8_0",
            vec![
                tool("call_wteop8bt", "run_command", json!({"command": "ls"})),
                tool("call_rk2xye1l", "run_command", json!({"command": "ls -l"})),
            ],
            StopReason::ToolUse,
            Usage::default(),
        )
    );
}

#[test]
fn openrouter_reasoning_keep_alive_comments_and_usage_after_the_finish() {
    assert_eq!(
        assemble("openrouter_reasoning.sse"),
        answer(
            "gen-1765226419-AGrwjunAftQIAgweibL8",
            "anthropic/claude-sonnet-4.5",
            vec![
                thinking("This is a simple arithmetic question. 2+2 equals 4."),
                text("2 + 2 = 4"),
            ],
            StopReason::EndTurn,
            usage(Some(43), Some(36), Some(0)),
        )
    );
}

#[test]
fn openrouter_error_chunk_ends_the_stream_with_the_servers_message() {
    let evs = events("openrouter_stream_error.sse");
    assert_eq!(
        evs.last(),
        Some(&Err(ProviderError::Stream {
            kind: "invalid_request_error".into(),
            message: "Token limit reached".into(),
        }))
    );
    assert_eq!(evs.iter().filter(|e| e.is_err()).count(), 1);
    let got = assemble("openrouter_stream_error.sse");
    assert_eq!(
        got.content,
        vec![thinking("We need to respond to a greeting. The user")]
    );
    assert!(!got.complete);
    assert_eq!(got.stop_reason, None);
}

#[test]
fn deepseek_reasoning_content_then_a_tool_call_with_cached_input() {
    assert_eq!(
        assemble("deepseek_reasoning_tool_call.sse"),
        answer(
            "6e77be01-935b-42f6-8b05-d6c763528589",
            "deepseek-v4-flash",
            vec![
                thinking("The user asks tool."),
                tool(
                    "call_00_IhCAliIHtM9gKpgfqbBV9873",
                    "weather",
                    json!({"location": "San Francisco"})
                ),
            ],
            StopReason::ToolUse,
            usage(Some(118), Some(61), Some(256)),
        )
    );
}

#[test]
fn groq_whole_tool_call_with_empty_object_and_usage_beside_the_finish() {
    assert_eq!(
        assemble("groq_tool_call.sse"),
        answer(
            "chatcmpl-b610d559-f156-4aca-8827-24b4fe6af54f",
            "llama-3.3-70b-versatile",
            vec![tool("tk85n1k4m", "weather", json!({}))],
            StopReason::ToolUse,
            usage(Some(210), Some(15), None),
        )
    );
}

#[test]
fn mistral_content_arrays_with_thinking_parts() {
    assert_eq!(
        assemble("mistral_thinking_parts.sse"),
        answer(
            "ed56a5f5c9254b8981e89c2ecfdd6a8d",
            "mistral-small-latest",
            vec![thinking("Okay, the user is = 391."), text("391")],
            StopReason::EndTurn,
            usage(Some(28), Some(139), Some(0)),
        )
    );
}

#[test]
fn llamacpp_text_then_a_tool_call_without_id_or_model_fields() {
    assert_eq!(
        assemble("llamacpp_text_then_tool_call.sse"),
        answer(
            "",
            "",
            vec![
                text("Hi there! Let me check the current weather for Washington DC for you.\n<tool_call>\n<function=get_current_weather"),
                tool(
                    "emGvNsMhrq1M2MOwwmEiS9MHA7L1XNrE",
                    "get_current_weather",
                    json!({"location": "Washington DC"})
                ),
            ],
            StopReason::ToolUse,
            Usage::default(),
        )
    );
}

#[test]
fn synthetic_empty_and_missing_arguments_are_empty_objects() {
    assert_eq!(
        assemble("synthetic_empty_arguments.sse"),
        answer(
            "chatcmpl-synthetic-empty",
            "local-model",
            vec![
                tool("call_empty", "list_files", json!({})),
                tool("call_missing", "git_status", json!({})),
            ],
            StopReason::ToolUse,
            usage(Some(20), Some(9), None),
        )
    );
}

#[test]
fn synthetic_interleaved_tool_calls_stay_open_until_whole() {
    assert_eq!(
        assemble("synthetic_interleaved_tool_calls.sse"),
        answer(
            "chatcmpl-synthetic-interleaved",
            "local-model",
            vec![
                text("Reading both."),
                tool("call_a", "Read", json!({"file_path": "a.rs"})),
                tool("call_b", "Read", json!({"file_path": "b.rs"})),
            ],
            StopReason::ToolUse,
            usage(Some(36), Some(30), Some(64)),
        )
    );
    // call_b (block 2) is whole first and closes as soon as the stream
    // moves back to call_a; call_a closes at the finish.
    let evs = events("synthetic_interleaved_tool_calls.sse");
    let b = position(&evs, |e| {
        matches!(e, StreamEvent::ContentBlockStop { index: 2 })
    });
    let a = position(&evs, |e| {
        matches!(e, StreamEvent::ContentBlockStop { index: 1 })
    });
    assert!(b < a, "{evs:#?}");
}

#[test]
fn synthetic_tool_call_under_finish_stop_is_tool_use_and_eof_after_finish_is_clean() {
    assert_eq!(
        assemble("synthetic_tool_call_finish_stop.sse"),
        answer(
            "chatcmpl-synthetic-stop",
            "local-model",
            vec![tool("call_stop", "Bash", json!({"command": "cargo test"}))],
            StopReason::ToolUse,
            Usage::default(),
        )
    );
}

#[test]
fn a_recording_cut_before_the_finish_is_a_dropped_connection() {
    let bytes = fixture("openai_tool_call.sse");
    let text = String::from_utf8(bytes).unwrap();
    let cut = text.find("\"finish_reason\":\"tool_calls\"").unwrap();
    let cut = text[..cut].rfind("data: ").unwrap();
    let evs = events_split(&text.as_bytes()[..cut], 50);
    assert_eq!(
        evs.last(),
        Some(&Err(ProviderError::Transport(
            lathe_core::provider::openai::stream::STREAM_ENDED_EARLY.into()
        )))
    );
}

// ---------------------------------------------------------------------------
// Request conversion

fn png() -> ImageSource {
    ImageSource {
        kind: "base64".into(),
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    }
}

fn transcript_request() -> MessagesRequest {
    MessagesRequest {
        model: "qwen3-coder".into(),
        max_tokens: 8192,
        system: "You are lathe.".into(),
        messages: lathe_core::protocol::shared(vec![
            Message {
                role: Role::User,
                content: vec![
                    text("What is in the screenshot?"),
                    ContentBlock::Image { source: png() },
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    thinking("Read both files."),
                    ContentBlock::RedactedThinking { data: "xyz".into() },
                    text("Reading them."),
                    tool("toolu_1", "Read", json!({"file_path": "a.rs"})),
                    ContentBlock::Opaque(
                        json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}),
                    ),
                    tool("toolu_2", "Read", json!({"file_path": "shot.png"})),
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult(ToolResult {
                        tool_use_id: "toolu_1".into(),
                        content: ToolResultContent::Text("fn main() {}\n".into()),
                        is_error: false,
                    }),
                    ContentBlock::ToolResult(ToolResult {
                        tool_use_id: "toolu_2".into(),
                        content: ToolResultContent::Blocks(vec![
                            text("shot.png (1x1)"),
                            ContentBlock::Image { source: png() },
                        ]),
                        is_error: false,
                    }),
                    text("Also check b.rs."),
                ],
            },
            Message {
                role: Role::Assistant,
                content: vec![text("Done.")],
            },
            Message::user_text("Thanks"),
        ]),
        tools: vec![ToolDefinition {
            name: "Read".into(),
            description: "Reads a file.".into(),
            input_schema: json!({"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}),
        }],
        stream: false,
    }
}

#[test]
fn a_transcript_as_chat_completions_json() {
    assert_eq!(
        chat_request(&transcript_request(), true),
        json!({
            "model": "qwen3-coder",
            "max_tokens": 8192,
            "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [
                {"role": "system", "content": "You are lathe."},
                {"role": "user", "content": [
                    {"type": "text", "text": "What is in the screenshot?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ]},
                {"role": "assistant", "content": "Reading them.", "tool_calls": [
                    {"id": "toolu_1", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"a.rs\"}"}},
                    {"id": "toolu_2", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"shot.png\"}"}},
                ]},
                {"role": "tool", "tool_call_id": "toolu_1", "content": "fn main() {}\n"},
                {"role": "tool", "tool_call_id": "toolu_2", "content": "shot.png (1x1)\n[image/png image not shown: tool results sent through this model API can carry only text, so you cannot see it]"},
                {"role": "user", "content": "Also check b.rs."},
                {"role": "assistant", "content": "Done."},
                {"role": "user", "content": "Thanks"},
            ],
            "tools": [{"type": "function", "function": {
                "name": "Read",
                "description": "Reads a file.",
                "parameters": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
            }}],
        })
    );
}

#[test]
fn an_assistant_turn_of_only_tool_calls_has_empty_content() {
    let req = MessagesRequest {
        messages: lathe_core::protocol::shared(vec![
            Message::user_text("go"),
            Message {
                role: Role::Assistant,
                content: vec![tool("c1", "Glob", json!({"pattern": "*.rs"}))],
            },
        ]),
        system: String::new(),
        tools: vec![],
        ..transcript_request()
    };
    assert_eq!(
        chat_request(&req, false)["messages"],
        json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "Glob", "arguments": "{\"pattern\":\"*.rs\"}"}},
            ]},
        ])
    );
}

// ---------------------------------------------------------------------------
// HTTP against a one-shot loopback server

/// What the server received.
struct Received {
    head: String,
    body: Value,
}

/// Serves one connection on a free loopback port: reads one request (head
/// and `content-length` body), writes `response`, closes. The URL is the
/// server's root.
async fn serve_once(response: Vec<u8>) -> (String, tokio::task::JoinHandle<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut tmp = [0u8; 8192];
        let head_end = loop {
            let n = sock.read(&mut tmp).await.unwrap();
            assert!(n > 0, "client closed before sending a request");
            buf.extend_from_slice(&tmp[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        while buf.len() < head_end + len {
            let n = sock.read(&mut tmp).await.unwrap();
            assert!(n > 0);
            buf.extend_from_slice(&tmp[..n]);
        }
        let body = serde_json::from_slice(&buf[head_end..head_end + len]).unwrap();
        sock.write_all(&response).await.unwrap();
        sock.shutdown().await.ok();
        Received { head, body }
    });
    (url, task)
}

fn http_response(status: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status}\r\n{headers}connection: close\r\n\r\n").into_bytes();
    out.extend_from_slice(body);
    out
}

fn sse_response(body: &[u8]) -> Vec<u8> {
    http_response("200 OK", "content-type: text/event-stream\r\n", body)
}

fn request() -> MessagesRequest {
    MessagesRequest {
        model: "gpt-4o".into(),
        max_tokens: 1024,
        system: String::new(),
        messages: lathe_core::protocol::shared(vec![Message::user_text("weather in NYC?")]),
        tools: vec![],
        stream: false,
    }
}

async fn stream_answer(p: &dyn Provider) -> Result<Answer, ProviderError> {
    let mut events = p.stream(&request()).await?;
    let mut a = MessageAssembler::new();
    let mut error = None;
    while let Some(ev) = events.next().await {
        match ev {
            Ok(ev) => {
                a.push(ev);
            }
            Err(e) => error = Some(e),
        }
    }
    Ok(Answer {
        id: a.id().to_string(),
        model: a.model().to_string(),
        stop_reason: a.stop_reason().cloned(),
        usage: a.usage().clone(),
        complete: a.is_complete(),
        content: a.message().content,
        error,
    })
}

fn expected_tool_call_answer() -> Answer {
    answer(
        "chatcmpl-9tXjtfxZZh2FYaFVxXKf2jiqNDiSo",
        "gpt-4o-2024-08-06",
        vec![tool(
            "call_5uxEBMFySqqQGu02I5QHA8k6",
            "get_weather",
            json!({"city": "New York City"}),
        )],
        StopReason::ToolUse,
        usage(Some(44), Some(16), None),
    )
}

#[tokio::test]
async fn from_config_picks_openai_and_posts_to_chat_completions_without_a_key() {
    let (url, server) = serve_once(sse_response(&fixture("openai_tool_call.sse"))).await;
    let mut cfg = Config::new(std::path::Path::new("/tmp"));
    cfg.provider = ProviderKind::OpenAi;
    cfg.base_url = format!("{url}/v1");
    cfg.api_key_env = "LATHE_OPENAI_PROVIDER_TEST_UNSET_KEY".into();
    let provider = lathe_core::provider::from_config(&cfg).unwrap();
    assert_eq!(
        stream_answer(provider.as_ref()).await.unwrap(),
        expected_tool_call_answer()
    );
    let got = server.await.unwrap();
    assert!(
        got.head
            .starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{}",
        got.head
    );
    let head = got.head.to_ascii_lowercase();
    assert!(!head.contains("\r\nauthorization:"), "{head}");
    assert!(head.contains("\r\naccept: text/event-stream\r\n"), "{head}");
    assert_eq!(
        got.body,
        json!({
            "model": "gpt-4o",
            "max_tokens": 1024,
            "messages": [{"role": "user", "content": "weather in NYC?"}],
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[tokio::test]
async fn a_key_is_sent_as_bearer() {
    let (url, server) = serve_once(sse_response(&fixture("openai_tool_call.sse"))).await;
    let p = OpenAiProvider::new(
        format!("{url}/v1/"),
        Some(" sk-test ".into()),
        "OPENAI_API_KEY",
    )
    .unwrap();
    assert_eq!(
        stream_answer(&p).await.unwrap(),
        expected_tool_call_answer()
    );
    let head = server.await.unwrap().head.to_ascii_lowercase();
    assert!(
        head.contains("\r\nauthorization: bearer sk-test\r\n"),
        "{head}"
    );
}

#[tokio::test]
async fn http_429_carries_the_servers_error_and_retry_after() {
    let body = br#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
    let (url, _server) = serve_once(http_response(
        "429 Too Many Requests",
        "content-type: application/json\r\nretry-after: 7\r\n",
        body,
    ))
    .await;
    let p = OpenAiProvider::new(format!("{url}/v1"), None, "OPENAI_API_KEY").unwrap();
    assert_eq!(
        p.stream(&request()).await.err(),
        Some(ProviderError::Http {
            status: 429,
            kind: "rate_limit_exceeded".into(),
            message: "Rate limit reached for gpt-4o".into(),
            retry_after: Some(Duration::from_secs(7)),
            should_retry: None,
        })
    );
}

const COMPLETION: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"qwen3","choices":[{"index":0,"message":{"role":"assistant","content":"Let me look.","reasoning_content":"Need the file.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"a.rs\"}"}},{"type":"function","function":{"name":"Glob","arguments":""}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42,"prompt_tokens_details":{"cached_tokens":10}}}"#;

#[tokio::test]
async fn complete_sends_stream_false_and_parses_the_completion() {
    let (url, server) = serve_once(http_response(
        "200 OK",
        "content-type: application/json\r\n",
        COMPLETION.as_bytes(),
    ))
    .await;
    let p = OpenAiProvider::new(format!("{url}/v1"), Some("k".into()), "OPENAI_API_KEY").unwrap();
    let got = p.complete(&request()).await.unwrap();
    assert_eq!(got.id, "chatcmpl-1");
    assert_eq!(got.model, "qwen3");
    assert_eq!(got.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(got.usage, usage(Some(20), Some(12), Some(10)));
    assert_eq!(got.content.len(), 4);
    assert_eq!(
        got.content[..3],
        [
            thinking("Need the file."),
            text("Let me look."),
            tool("call_1", "Read", json!({"file_path": "a.rs"})),
        ]
    );
    // The server gave the second call no id: one is made up.
    let ContentBlock::ToolUse(glob) = &got.content[3] else {
        panic!("{:?}", got.content[3])
    };
    assert!(glob.id.starts_with("call_"), "{}", glob.id);
    assert_eq!((glob.name.as_str(), &glob.input), ("Glob", &json!({})));
    let sent = server.await.unwrap();
    assert_eq!(sent.body["stream"], json!(false));
    assert_eq!(sent.body.get("stream_options"), None);
    let head = sent.head.to_ascii_lowercase();
    assert!(head.contains("\r\naccept: application/json\r\n"), "{head}");
}

#[tokio::test]
async fn a_json_answer_to_a_streaming_request_is_replayed_as_events() {
    let (url, _server) = serve_once(http_response(
        "200 OK",
        "content-type: application/json; charset=utf-8\r\n",
        COMPLETION.as_bytes(),
    ))
    .await;
    let p = OpenAiProvider::new(format!("{url}/v1"), None, "OPENAI_API_KEY").unwrap();
    let got = stream_answer(&p).await.unwrap();
    assert!(got.complete);
    assert_eq!(got.stop_reason, Some(StopReason::ToolUse));
    assert_eq!(got.content[1], text("Let me look."));
}

#[tokio::test]
async fn html_instead_of_a_stream_is_a_decode_error() {
    let (url, _server) = serve_once(http_response(
        "200 OK",
        "content-type: text/html\r\n",
        b"<html>login</html>",
    ))
    .await;
    let p = OpenAiProvider::new(format!("{url}/v1"), None, "OPENAI_API_KEY").unwrap();
    assert_eq!(
        p.stream(&request()).await.err(),
        Some(ProviderError::Decode(
            "expected an event stream (text/event-stream), got text/html: <html>login</html>"
                .into()
        ))
    );
}

#[tokio::test]
async fn a_body_that_goes_silent_ends_with_the_idle_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut tmp = [0u8; 8192];
        let mut seen = Vec::new();
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = sock.read(&mut tmp).await.unwrap();
            if n == 0 {
                return;
            }
            seen.extend_from_slice(&tmp[..n]);
        }
        let first =
            b"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n";
        sock.write_all(&sse_response(first)).await.unwrap();
        // Stall until the client goes away.
        while matches!(sock.read(&mut tmp).await, Ok(n) if n > 0) {}
    });
    let p = OpenAiProvider::new(url, None, "OPENAI_API_KEY")
        .unwrap()
        .with_idle_timeout(Duration::from_millis(300));
    let got = stream_answer(&p).await.unwrap();
    assert_eq!(
        got.error,
        Some(ProviderError::Transport(
            "no data from the API for 1 s (idle timeout)".into()
        ))
    );
    assert!(!got.complete);
    assert_eq!(got.id, "c");
}

// ---------------------------------------------------------------------------
// A whole turn through the unchanged turn loop

/// Serves `responses.len()` connections one after the other on a free
/// loopback port, answering the n-th request with `responses[n]`; the task
/// returns the request bodies in order.
async fn serve_each(responses: Vec<Vec<u8>>) -> (String, tokio::task::JoinHandle<Vec<Value>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let mut bodies = Vec::new();
        for response in responses {
            let (mut sock, _) = listener.accept().await.unwrap();
            let mut buf = Vec::new();
            let mut tmp = [0u8; 8192];
            let head_end = loop {
                let n = sock.read(&mut tmp).await.unwrap();
                assert!(n > 0);
                buf.extend_from_slice(&tmp[..n]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break i + 4;
                }
            };
            let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map(|v| v.trim().parse().unwrap())
                .unwrap_or(0);
            while buf.len() < head_end + len {
                let n = sock.read(&mut tmp).await.unwrap();
                assert!(n > 0);
                buf.extend_from_slice(&tmp[..n]);
            }
            bodies.push(serde_json::from_slice(&buf[head_end..head_end + len]).unwrap());
            sock.write_all(&response).await.unwrap();
            sock.shutdown().await.ok();
        }
        bodies
    });
    (url, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_runs_a_tool_and_sends_its_result_back_as_a_tool_message() {
    use lathe_core::agent::{Session, SessionParts, Status};
    use lathe_core::editor::DiskEditor;
    use lathe_core::events::{RecordingSink, TurnOutcome};
    use lathe_core::permissions::ScriptedPrompter;
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("hello.txt"), "hello from disk\n").unwrap();
    let call = b"data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_read\",\"type\":\"function\",\"function\":{\"name\":\"Read\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"file_path\\\":\\\"hello.txt\\\"}\"}}]},\"finish_reason\":null}]}\n\n\
data: {\"id\":\"c1\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n\
data: [DONE]\n\n";
    let done = b"data: {\"id\":\"c2\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"It says hello.\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let (url, server) = serve_each(vec![sse_response(call), sse_response(done)]).await;

    let mut config = Config::new(&root);
    config.provider = ProviderKind::OpenAi;
    config.base_url = format!("{url}/v1");
    config.api_key_env = "LATHE_OPENAI_PROVIDER_TEST_UNSET_KEY".into();
    config.model = "m".into();
    config.claude_settings = false;
    config.state_dir = root.join(".state");
    // This server answers exactly two POSTs: with the window set, lathe
    // does not ask it for its own (GET /v1/models, /props).
    config.context_window = Some(128_000);
    let session = Session::new(SessionParts {
        provider: lathe_core::provider::from_config(&config).unwrap(),
        config,
        editor: Arc::new(DiskEditor),
        prompter: Arc::new(ScriptedPrompter::new(vec![])),
        sink: Arc::new(RecordingSink::default()),
        hooks: Vec::new(),
    })
    .unwrap();
    session
        .ask(
            "What does hello.txt say?",
            &tokio::runtime::Handle::current(),
        )
        .unwrap();
    let mut outcome = None;
    for _ in 0..3000 {
        if let Status::Idle(Some(o)) = session.status() {
            outcome = Some(o);
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(outcome, Some(TurnOutcome::Done));

    let bodies = server.await.unwrap();
    assert_eq!(bodies.len(), 2);
    let second = bodies[1]["messages"].as_array().unwrap();
    let roles: Vec<&str> = second.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(
        second[2]["tool_calls"],
        json!([{"id": "call_read", "type": "function", "function": {"name": "Read", "arguments": "{\"file_path\":\"hello.txt\"}"}}])
    );
    assert_eq!(second[3]["tool_call_id"], "call_read");
    let result = second[3]["content"].as_str().unwrap();
    assert!(result.contains("hello from disk"), "{result}");
    // Both requests carry the tools, as functions.
    assert!(bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["function"]["name"] == "Read" && t["type"] == "function"));
}
