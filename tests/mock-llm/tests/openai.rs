//! `POST /v1/chat/completions` over real HTTP on loopback, seen through
//! reqwest as an OpenAI client sees it: the streamed chunks (exact bytes and
//! reassembly), the `chat.completion` object, each fault in OpenAI form, the
//! pairing rule's 400s with OpenAI's texts, `expect`, and the queue shared
//! with `/v1/messages`.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use mock_llm::openai_error;
use mock_llm::{spawn, MockServer, Script};
use serde_json::{json, Value};

async fn start(script: &str) -> MockServer {
    spawn(Script::from_json(script).unwrap(), None)
        .await
        .unwrap()
}

async fn post(server: &MockServer, body: &Value) -> reqwest::Response {
    common::client()
        .post(format!("{}/v1/chat/completions", server.url()))
        .bearer_auth("test")
        .json(body)
        .send()
        .await
        .unwrap()
}

fn ask(text: &str, stream: bool) -> Value {
    json!({"model":"gpt-test","stream":stream,
           "messages":[{"role":"system","content":"be brief"},{"role":"user","content":text}]})
}

fn ask_usage(text: &str) -> Value {
    let mut body = ask(text, true);
    body["stream_options"] = json!({"include_usage": true});
    body
}

/// Splits a stream body into its `data:` payloads, checking the framing
/// (`data: …\n\n` each) and that it ends with `data: [DONE]`.
fn parse_stream(body: &str) -> Vec<Value> {
    let payloads = frames(body);
    assert_eq!(
        payloads.last().map(String::as_str),
        Some("[DONE]"),
        "{body}"
    );
    payloads[..payloads.len() - 1]
        .iter()
        .map(|p| serde_json::from_str(p).unwrap())
        .collect()
}

/// The `data:` payloads of a body, framing checked.
fn frames(body: &str) -> Vec<String> {
    assert!(
        body.ends_with("\n\n"),
        "must end with a blank line: {body:?}"
    );
    body.trim_end_matches("\n\n")
        .split("\n\n")
        .map(|frame| {
            assert!(!frame.contains('\n'), "one data line per event: {frame:?}");
            frame.strip_prefix("data: ").unwrap().to_string()
        })
        .collect()
}

/// A chunk as the server builds it, for exact-byte comparisons.
fn chunk(first: &Value, delta: Value, finish: Value) -> String {
    let c = json!({
        "id": first["id"], "object": "chat.completion.chunk",
        "created": first["created"], "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {c}\n\n")
}

/// What an OpenAI client reassembles from the chunks.
#[derive(Debug, Default, PartialEq)]
struct Assembled {
    content: String,
    /// index → (id, name, arguments)
    calls: BTreeMap<u64, (String, String, String)>,
    finish: Option<String>,
}

fn assemble(chunks: &[Value]) -> Assembled {
    let mut out = Assembled::default();
    for c in chunks {
        assert_eq!(c["object"], "chat.completion.chunk");
        let Some(choice) = c["choices"].get(0) else {
            continue;
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str() {
            out.content.push_str(text);
        }
        for call in delta["tool_calls"].as_array().into_iter().flatten() {
            let entry = out
                .calls
                .entry(call["index"].as_u64().unwrap())
                .or_default();
            if let Some(id) = call["id"].as_str() {
                entry.0 = id.to_string();
                assert_eq!(call["type"], "function");
            }
            if let Some(name) = call["function"]["name"].as_str() {
                entry.1 = name.to_string();
            }
            entry
                .2
                .push_str(call["function"]["arguments"].as_str().unwrap());
        }
        if let Some(finish) = choice["finish_reason"].as_str() {
            out.finish = Some(finish.to_string());
        }
    }
    out
}

#[tokio::test]
async fn streamed_text_is_exactly_the_openai_chunks() {
    let server = start(
        r#"{"responses":[{"text_chunk_chars":5,
            "content":[{"type":"text","text":"Hello — wörld 🦀!"}]}]}"#,
    )
    .await;
    let response = post(&server, &ask("hi", true)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream; charset=utf-8"
    );
    assert_eq!(response.headers()["x-request-id"], "req_mock_1");
    let body = response.text().await.unwrap();
    let first = &parse_stream(&body)[0];
    assert_eq!(first["id"], "chatcmpl-mock-1");
    assert!(first["created"].as_u64().unwrap() > 1_700_000_000);
    let expected = [
        chunk(first, json!({"role":"assistant","content":""}), Value::Null),
        chunk(first, json!({"content":"Hello"}), Value::Null),
        chunk(first, json!({"content":" — wö"}), Value::Null),
        chunk(first, json!({"content":"rld 🦀"}), Value::Null),
        chunk(first, json!({"content":"!"}), Value::Null),
        chunk(first, json!({}), json!("stop")),
        "data: [DONE]\n\n".to_string(),
    ]
    .concat();
    assert_eq!(body, expected);
    assert_eq!(server.served(), 1);
}

#[tokio::test]
async fn one_tool_call_streams_its_script_id_and_split_arguments() {
    let server = start(
        r#"{"responses":[{"json_chunk_chars":7,"content":[
            {"type":"text","text":"Let me look."},
            {"type":"tool_use","id":"toolu_01","name":"Grep",
             "input":{"pattern":"Helo","path":"src/ünï"}}]}]}"#,
    )
    .await;
    let body = post(&server, &ask("find", true))
        .await
        .text()
        .await
        .unwrap();
    let chunks = parse_stream(&body);
    let deltas: Vec<&Value> = chunks.iter().map(|c| &c["choices"][0]["delta"]).collect();
    assert_eq!(
        deltas[2],
        &json!({"tool_calls":[{"index":0,"id":"toolu_01","type":"function",
                               "function":{"name":"Grep","arguments":""}}]})
    );
    assert_eq!(
        deltas[3],
        &json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"path\""}}]})
    );
    let pieces: Vec<&str> = deltas[3..deltas.len() - 1]
        .iter()
        .map(|d| {
            d["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
        })
        .collect();
    // The compact JSON split every 7 chars (never inside a char): the pieces
    // are not JSON alone.
    assert_eq!(
        pieces,
        [
            "{\"path\"",
            ":\"src/ü",
            "nï\",\"pa",
            "ttern\":",
            "\"Helo\"}"
        ]
    );
    let assembled = assemble(&chunks);
    assert_eq!(assembled.content, "Let me look.");
    assert_eq!(assembled.finish.as_deref(), Some("tool_calls"));
    let (id, name, arguments) = &assembled.calls[&0];
    assert_eq!((id.as_str(), name.as_str()), ("toolu_01", "Grep"));
    assert_eq!(
        serde_json::from_str::<Value>(arguments).unwrap(),
        json!({"pattern":"Helo","path":"src/ünï"})
    );
    assert_eq!(assembled.calls.len(), 1);
}

#[tokio::test]
async fn two_tool_calls_are_parallel_calls_and_empty_input_sends_empty_arguments() {
    let server = start(
        r#"{"responses":[{"json_chunk_chars":4,"content":[
            {"type":"tool_use","id":"call_a","name":"Read","input":{"file_path":"a.py"}},
            {"type":"tool_use","id":"call_b","name":"Glob"},
            {"type":"tool_use","id":"call_c","name":"Edit","input_json":"{\"file_pa"}]}]}"#,
    )
    .await;
    let body = post(&server, &ask("go", true)).await.text().await.unwrap();
    let chunks = parse_stream(&body);
    let assembled = assemble(&chunks);
    assert_eq!(
        assembled,
        Assembled {
            content: String::new(),
            calls: [
                (
                    0,
                    (
                        "call_a".into(),
                        "Read".into(),
                        "{\"file_path\":\"a.py\"}".into()
                    )
                ),
                (1, ("call_b".into(), "Glob".into(), String::new())),
                (2, ("call_c".into(), "Edit".into(), "{\"file_pa".into())),
            ]
            .into(),
            finish: Some("tool_calls".into()),
        }
    );
    // call_b (input {}): one opening delta with "" and no other delta.
    let b_deltas: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["choices"][0]["delta"])
        .filter(|d| d["tool_calls"][0]["index"] == 1)
        .collect();
    assert_eq!(
        b_deltas,
        [
            &json!({"tool_calls":[{"index":1,"id":"call_b","type":"function",
                                "function":{"name":"Glob","arguments":""}}]})
        ]
    );
    // The calls come in order: every delta of call 0 before call 1's.
    let order: Vec<u64> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["tool_calls"][0]["index"].as_u64())
        .collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
}

#[tokio::test]
async fn usage_chunk_comes_only_with_include_usage() {
    let script = r#"{"responses":[
        {"usage":{"input_tokens":12,"output_tokens":3},"content":[{"type":"text","text":"ok"}]},
        {"usage":{"input_tokens":12,"output_tokens":3},"content":[{"type":"text","text":"ok"}]}]}"#;
    let server = start(script).await;
    let plain = post(&server, &ask("a", true)).await.text().await.unwrap();
    let chunks = parse_stream(&plain);
    assert_eq!(chunks.len(), 3);
    assert!(chunks.iter().all(|c| c.get("usage").is_none()), "{plain}");

    let body = post(&server, &ask_usage("a")).await.text().await.unwrap();
    let chunks = parse_stream(&body);
    assert_eq!(chunks.len(), 4);
    for c in &chunks[..3] {
        assert_eq!(c["usage"], Value::Null, "usage: null on every other chunk");
    }
    assert_eq!(chunks[2]["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        chunks[3],
        json!({"id":"chatcmpl-mock-2","object":"chat.completion.chunk",
               "created":chunks[0]["created"],"model":"gpt-test","choices":[],
               "usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}})
    );
    assert!(body.ends_with("}\n\ndata: [DONE]\n\n"));
}

#[tokio::test]
async fn max_tokens_and_refusal_map_to_length_and_content_filter() {
    let server = start(
        r#"{"responses":[
            {"stop_reason":"max_tokens","content":[{"type":"text","text":"cut"}]},
            {"stop_reason":"refusal"}]}"#,
    )
    .await;
    for finish in ["length", "content_filter"] {
        let body = post(&server, &ask("a", true)).await.text().await.unwrap();
        assert_eq!(
            assemble(&parse_stream(&body)).finish.as_deref(),
            Some(finish)
        );
    }
}

#[tokio::test]
async fn non_streaming_request_gets_one_chat_completion() {
    let server = start(
        r#"{"responses":[{"usage":{"input_tokens":20,"output_tokens":5},"content":[
            {"type":"text","text":"Let me look."},
            {"type":"tool_use","id":"toolu_01","name":"Grep","input":{"pattern":"Helo"}},
            {"type":"tool_use","id":"toolu_02","name":"Glob"}]},
            {"content":[{"type":"text","text":"Done."}]}]}"#,
    )
    .await;
    let response = post(&server, &ask("find", false)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let completion: Value = response.json().await.unwrap();
    assert_eq!(
        completion,
        json!({"id":"chatcmpl-mock-1","object":"chat.completion",
            "created":completion["created"],"model":"gpt-test",
            "choices":[{"index":0,"finish_reason":"tool_calls","message":{
                "role":"assistant","content":"Let me look.",
                "tool_calls":[
                    {"id":"toolu_01","type":"function",
                     "function":{"name":"Grep","arguments":"{\"pattern\":\"Helo\"}"}},
                    {"id":"toolu_02","type":"function",
                     "function":{"name":"Glob","arguments":"{}"}}]}}],
            "usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25}})
    );
    assert!(completion["created"].is_u64());
    let done: Value = post(&server, &ask("more", false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        done["choices"][0],
        json!({"index":0,"finish_reason":"stop",
               "message":{"role":"assistant","content":"Done."}})
    );
}

#[tokio::test]
async fn event_delay_paces_the_stream() {
    let server =
        start(r#"{"responses":[{"event_delay_ms":40,"content":[{"type":"text","text":"hi"}]}]}"#)
            .await;
    let started = Instant::now();
    let body = post(&server, &ask("x", true)).await.text().await.unwrap();
    // role, "hi", finish, [DONE]: 4 pieces → 3 gaps of 40 ms.
    assert_eq!(frames(&body).len(), 4);
    assert!(
        started.elapsed() >= Duration::from_millis(120),
        "took only {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn http_faults_send_openai_error_bodies_and_retry_after() {
    let server = start(
        r#"{"responses":[
            {"fault":{"http_status":529,"retry_after_s":3}},
            {"fault":{"http_status":429}},
            {"fault":{"http_status":500,"message":"try later"}},
            {"fault":{"http_status":401}},
            {"content":[{"type":"text","text":"recovered"}]}]}"#,
    )
    .await;
    let response = post(&server, &ask("a", true)).await;
    assert_eq!(response.status(), 529);
    assert_eq!(response.headers()["retry-after"], "3");
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"error":{"message":"The engine is currently overloaded, please try again later.",
                        "type":"server_error","param":null,"code":null}})
    );
    let response = post(&server, &ask("a", true)).await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().get("retry-after").is_none());
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"error":{"message":"Rate limit reached for requests (mock-llm fault)",
                        "type":"requests","param":null,"code":"rate_limit_exceeded"}})
    );
    let response = post(&server, &ask("a", false)).await;
    assert_eq!(response.status(), 500);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"error":{"message":"try later","type":"server_error","param":null,"code":null}})
    );
    let response = post(&server, &ask("a", false)).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"]["code"],
        "invalid_api_key"
    );
    assert_eq!(server.served(), 4, "each fault consumes its entry");
    assert_eq!(post(&server, &ask("a", false)).await.status(), 200);
}

#[tokio::test]
async fn sse_error_fault_streams_k_chunks_then_an_error_chunk() {
    let server = start(
        r#"{"responses":[{"content":[{"type":"text","text":"partial answer"}],
            "text_chunk_chars":4,
            "fault":{"sse_error":"overloaded_error","after_events":2}},
            {"fault":{"sse_error":"insufficient_quota","message":"no credits","after_events":0}}]}"#,
    )
    .await;
    let response = post(&server, &ask("a", true)).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let payloads = frames(&body);
    assert_eq!(payloads.len(), 3);
    let first: Value = serde_json::from_str(&payloads[0]).unwrap();
    let expected = [
        chunk(
            &first,
            json!({"role":"assistant","content":""}),
            Value::Null,
        ),
        chunk(&first, json!({"content":"part"}), Value::Null),
        format!(
            "data: {}\n\n",
            json!({"error":{"message":"The engine is currently overloaded, please try again later.",
                            "type":"server_error","param":null,"code":null}})
        ),
    ]
    .concat();
    assert_eq!(body, expected, "no [DONE] after the error");

    let body = post(&server, &ask("a", true)).await.text().await.unwrap();
    assert_eq!(
        frames(&body),
        [
            json!({"error":{"message":"no credits","type":"insufficient_quota",
                         "param":null,"code":null}})
            .to_string()
        ]
    );
    assert_eq!(server.served(), 2);
}

async fn read_until_error(response: reqwest::Response) -> (Vec<u8>, reqwest::Error) {
    let mut stream = response.bytes_stream();
    let mut received = Vec::new();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => received.extend_from_slice(&bytes),
            Err(e) => return (received, e),
        }
    }
    panic!(
        "the client must see a transport error, not a clean end: {:?}",
        String::from_utf8_lossy(&received)
    );
}

#[tokio::test]
async fn disconnect_fault_cuts_the_stream_after_k_chunks() {
    let server = start(
        r#"{"responses":[{"content":[{"type":"text","text":"never finished"}],
            "text_chunk_chars":5,"fault":{"disconnect_after_events":2}}]}"#,
    )
    .await;
    let response = post(&server, &ask("a", true)).await;
    assert_eq!(response.status(), 200);
    let (received, error) = read_until_error(response).await;
    assert!(error.is_body() || error.is_decode(), "{error:?}");
    let received = String::from_utf8(received).unwrap();
    let first: Value = serde_json::from_str(&frames(&received)[0]).unwrap();
    assert_eq!(
        received,
        [
            chunk(
                &first,
                json!({"role":"assistant","content":""}),
                Value::Null
            ),
            chunk(&first, json!({"content":"never"}), Value::Null),
        ]
        .concat()
    );
    assert_eq!(server.served(), 1);
}

#[tokio::test]
async fn stream_faults_on_a_non_streaming_request_fail_the_http_way() {
    let server = start(
        r#"{"responses":[
            {"fault":{"sse_error":"rate_limit_error","after_events":3}},
            {"content":[{"type":"text","text":"x"}],"fault":{"disconnect_after_events":2}}]}"#,
    )
    .await;
    let response = post(&server, &ask("a", false)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"]["type"],
        "requests"
    );
    let response = post(&server, &ask("a", false)).await;
    assert_eq!(response.status(), 200);
    let err = response.json::<Value>().await.unwrap_err();
    assert!(!err.is_status(), "a transport error, not a status: {err:?}");
    assert_eq!(server.served(), 2);
}

fn after_tool_calls(tail: Vec<Value>) -> Value {
    let mut messages = vec![
        json!({"role":"user","content":"fix it"}),
        json!({"role":"assistant","content":"Let me look.","tool_calls":[
            {"id":"call_1","type":"function","function":{"name":"Grep","arguments":"{}"}},
            {"id":"call_2","type":"function","function":{"name":"Read","arguments":"{}"}}]}),
    ];
    messages.extend(tail);
    json!({"model":"gpt-test","stream":false,"messages":messages})
}

fn tool(id: &str, content: Value) -> Value {
    json!({"role":"tool","tool_call_id":id,"content":content})
}

async fn error_of(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn unanswered_tool_call_gets_openai_s_400_and_does_not_advance() {
    let server = start(r#"{"responses":[{"content":[{"type":"text","text":"ok"}]}]}"#).await;
    let bad = after_tool_calls(vec![
        tool("call_2", json!("x")),
        json!({"role":"user","content":"and"}),
    ]);
    assert_eq!(
        error_of(post(&server, &bad).await).await,
        (
            400,
            json!({"error":{
                "message":"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
                "type":"invalid_request_error","param":"messages.[3].role","code":null}})
        )
    );
    let trailing = after_tool_calls(vec![]);
    let (_, body) = error_of(post(&server, &trailing).await).await;
    assert_eq!(
        body["error"]["message"],
        format!("{}call_1, call_2", openai_error::MISSING_TOOL_MESSAGES)
    );
    assert_eq!(body["error"]["param"], "messages");
    assert_eq!(server.served(), 0);

    let good = after_tool_calls(vec![tool("call_2", json!("b")), tool("call_1", json!("a"))]);
    let response = post(&server, &good).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap()["choices"][0]["message"]["content"],
        "ok"
    );
    assert_eq!(server.served(), 1);
}

#[tokio::test]
async fn stray_tool_messages_and_empty_messages_get_openai_s_400() {
    let server = start(r#"{"responses":[{}]}"#).await;
    let stray = json!({"model":"m","messages":[
        {"role":"user","content":"hi"},
        {"role":"tool","tool_call_id":"call_9","content":"x"}]});
    assert_eq!(
        error_of(post(&server, &stray).await).await,
        (
            400,
            json!({"error":{
                "message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
                "type":"invalid_request_error","param":"messages.[1].role","code":null}})
        )
    );
    let unknown = after_tool_calls(vec![
        tool("call_1", json!("a")),
        tool("call_2", json!("b")),
        tool("call_99", json!("c")),
    ]);
    assert_eq!(
        error_of(post(&server, &unknown).await).await,
        (
            400,
            json!({"error":{
                "message":"Invalid parameter: 'tool_call_id' of 'call_99' not found in 'tool_calls' of previous message.",
                "type":"invalid_request_error","param":"messages.[4].tool_call_id","code":null}})
        )
    );
    let empty = json!({"model":"m","messages":[]});
    assert_eq!(
        error_of(post(&server, &empty).await).await,
        (
            400,
            json!({"error":{"message":"[] is too short - 'messages'",
                            "type":"invalid_request_error","param":null,"code":null}})
        )
    );
    let missing = json!({"model":"m"});
    assert_eq!(
        error_of(post(&server, &missing).await).await,
        (
            400,
            json!({"error":{"message":"Missing required parameter: 'messages'.",
                            "type":"invalid_request_error","param":"messages","code":null}})
        )
    );
    assert_eq!(server.served(), 0);
    assert_eq!(server.requests(), [stray, unknown, empty, missing]);
}

#[tokio::test]
async fn failed_expectation_is_a_400_naming_it_and_does_not_advance() {
    let server = start(
        r#"{"responses":[{"content":[{"type":"text","text":"fixed"}],
            "expect":{"tool_result_contains":{"call_1":"greeting.py","call_2":"def "},
                      "last_user_text_contains":"please"}}]}"#,
    )
    .await;
    let wrong = after_tool_calls(vec![
        tool("call_1", json!([{"type":"text","text":"No files found"}])),
        tool("call_2", json!("def hello():")),
        json!({"role":"user","content":"go on"}),
    ]);
    assert_eq!(
        error_of(post(&server, &wrong).await).await,
        (
            400,
            json!({"error":{"message":
                "mock-llm: script expectation failed for responses[0]: \
                 tool_result_contains[call_1]: wanted text containing \"greeting.py\", got \"No files found\"; \
                 last_user_text_contains: wanted text containing \"please\", got \"go on\"",
                "type":"invalid_request_error","param":null,"code":null}})
        )
    );
    assert_eq!(server.served(), 0);

    let right = after_tool_calls(vec![
        tool(
            "call_1",
            json!([{"type":"text","text":"src/"},{"type":"text","text":"greeting.py"}]),
        ),
        tool("call_2", json!("def hello():")),
        json!({"role":"user","content":[{"type":"text","text":"please go on"}]}),
    ]);
    assert_eq!(post(&server, &right).await.status(), 200);
    assert_eq!(server.served(), 1);
}

#[tokio::test]
async fn tool_result_is_error_is_a_script_error_on_this_endpoint() {
    let server =
        start(r#"{"responses":[{"expect":{"tool_result_is_error":{"call_1":true}}}]}"#).await;
    let request = after_tool_calls(vec![
        tool("call_1", json!("Error: boom")),
        tool("call_2", json!("b")),
    ]);
    assert_eq!(
        error_of(post(&server, &request).await).await,
        (
            400,
            json!({"error":{"message":
                "mock-llm: script error in responses[0]: expect.tool_result_is_error cannot be checked on POST /v1/chat/completions: OpenAI tool messages have no is_error field. Check the tool message's text with expect.tool_result_contains instead.",
                "type":"invalid_request_error","param":null,"code":null}})
        )
    );
    assert_eq!(
        openai_error::is_error_cannot_apply(0),
        "mock-llm: script error in responses[0]: expect.tool_result_is_error cannot be checked on POST /v1/chat/completions: OpenAI tool messages have no is_error field. Check the tool message's text with expect.tool_result_contains instead."
    );
    assert_eq!(server.served(), 0);
}

#[tokio::test]
async fn both_endpoints_share_one_queue_and_the_exhausted_script_is_a_500() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let server = spawn(
        Script::from_json(
            r#"{"responses":[
                {"content":[{"type":"text","text":"first"}]},
                {"content":[{"type":"text","text":"second"}]}]}"#,
        )
        .unwrap(),
        Some(log.clone()),
    )
    .await
    .unwrap();
    let openai = ask("one", false);
    let first: Value = post(&server, &openai).await.json().await.unwrap();
    assert_eq!(first["choices"][0]["message"]["content"], "first");
    let anthropic = json!({"model":"claude-test","max_tokens":10,"stream":false,
                           "messages":[{"role":"user","content":"two"}]});
    let second: Value = common::client()
        .post(format!("{}/v1/messages", server.url()))
        .json(&anthropic)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(second["content"][0]["text"], "second");
    assert_eq!(server.served(), 2);

    let third = ask("three", true);
    assert_eq!(
        error_of(post(&server, &third).await).await,
        (
            500,
            json!({"error":{"message":mock_llm::api_error::script_exhausted(2),
                            "type":"server_error","param":null,"code":null}})
        )
    );
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, [openai, anthropic, third]);
    assert_eq!(server.requests(), lines);
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_400_and_is_recorded() {
    let server = start(r#"{"responses":[{}]}"#).await;
    let response = common::client()
        .post(format!("{}/v1/chat/completions", server.url()))
        .body("{not json")
        .send()
        .await
        .unwrap();
    let (status, body) = error_of(response).await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("mock-llm: the request body is not JSON: "));
    assert_eq!(server.requests(), [json!("{not json")]);
    assert_eq!(server.served(), 0);
}

#[tokio::test]
async fn a_context_window_refuses_with_context_length_exceeded_and_summaries_consume_nothing() {
    let server = start(
        r#"{"context_window": 50, "responses":[{"content":[{"type":"text","text":"scripted"}]}]}"#,
    )
    .await;
    let long = json!({"model":"m","messages":[{"role":"user","content":"y".repeat(400)}]});
    let tokens = serde_json::to_vec(&long).unwrap().len() / 4;
    let r = post(&server, &long).await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "context_length_exceeded");
    assert_eq!(
        body["error"]["message"],
        format!("This model's maximum context length is 50 tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages.")
    );
    let summary = json!({"model":"m","messages":[
        {"role":"user","content":"go"},
        {"role":"user","content":"Write a summary of this conversation."}
    ]});
    let r: Value = post(&server, &summary).await.json().await.unwrap();
    assert!(r["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .starts_with("<summary>"));
    assert_eq!(server.served(), 0);
}

#[tokio::test]
async fn a_model_the_script_does_not_list_is_openais_404_and_the_script_is_kept() {
    let server =
        start(r#"{"models": ["gpt-a"], "responses":[{"content":[{"type":"text","text":"hi"}]}]}"#)
            .await;
    let r = post(&server, &ask("hi", true)).await;
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body,
        json!({"error": {
            "message": "The model `gpt-test` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "param": null,
            "code": "model_not_found"
        }})
    );
    let mut known = ask("hi", false);
    known["model"] = json!("gpt-a");
    let r = post(&server, &known).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "hi");
    // Without `models`, any model is answered.
    let open = start(r#"{"responses":[{"content":[{"type":"text","text":"hi"}]}]}"#).await;
    assert_eq!(post(&open, &ask("hi", false)).await.status(), 200);
}
