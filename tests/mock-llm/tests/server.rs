//! mock-llm over real HTTP on loopback, seen through reqwest as lathe's client
//! sees it: SSE shape and chunking, JSON answers, the pairing rule, `expect`,
//! each fault, the exhausted script and the request log.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use futures::StreamExt;
use mock_llm::{spawn, MockServer, Script};
use serde_json::{json, Value};

async fn start(script: &str) -> MockServer {
    spawn(Script::from_json(script).unwrap(), None)
        .await
        .unwrap()
}

async fn post(server: &MockServer, body: &Value) -> reqwest::Response {
    common::client()
        .post(format!("{}/v1/messages", server.url()))
        .header("x-api-key", "test")
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap()
}

fn ask(text: &str, stream: bool) -> Value {
    json!({"model":"claude-test","max_tokens":100,"stream":stream,
           "messages":[{"role":"user","content":text}]})
}

/// Splits an SSE body into `(event name, data json)` pairs, checking the
/// framing (`event:` line, `data:` line, blank line).
fn parse_sse(body: &str) -> Vec<(String, Value)> {
    assert!(
        body.ends_with("\n\n"),
        "body must end with a blank line: {body:?}"
    );
    body.trim_end_matches("\n\n")
        .split("\n\n")
        .map(|frame| {
            let mut lines = frame.lines();
            let event = lines.next().unwrap().strip_prefix("event: ").unwrap();
            let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
            assert_eq!(
                lines.next(),
                None,
                "one event line and one data line: {frame:?}"
            );
            (event.to_string(), serde_json::from_str(data).unwrap())
        })
        .collect()
}

const TOOL_SCRIPT: &str = r#"{"responses":[{
    "text_chunk_chars": 5, "json_chunk_chars": 7,
    "content": [
      {"type":"text","text":"Let me look — für grüße 🦀 now."},
      {"type":"tool_use","id":"toolu_01","name":"Grep",
       "input":{"pattern":"Helo","path":"src/ünï","-i":true}}
    ]}]}"#;

#[tokio::test]
async fn sse_answer_has_the_api_shape_and_reassembles_to_the_script() {
    let server = start(TOOL_SCRIPT).await;
    let response = post(&server, &ask("find Helo", true)).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let events = parse_sse(&response.text().await.unwrap());

    for (name, data) in &events {
        assert_eq!(
            data["type"],
            name.as_str(),
            "data.type matches the event name"
        );
    }
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        &names[..3],
        ["message_start", "ping", "content_block_start"]
    );
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);

    let message = &events[0].1["message"];
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["model"], "claude-test");
    assert_eq!(message["content"], json!([]));
    assert_eq!(message["stop_reason"], Value::Null);
    assert!(message["id"].as_str().unwrap().starts_with("msg_"));
    assert!(message["usage"]["input_tokens"].as_u64().unwrap() > 0);

    assert_eq!(
        events[2].1["content_block"],
        json!({"type":"text","text":""})
    );
    let tool_start = events
        .iter()
        .find(|(n, d)| n == "content_block_start" && d["index"] == 1)
        .unwrap();
    assert_eq!(
        tool_start.1["content_block"],
        json!({"type":"tool_use","id":"toolu_01","name":"Grep","input":{}})
    );

    let mut text = String::new();
    let mut partial = String::new();
    for (name, data) in &events {
        if name != "content_block_delta" {
            continue;
        }
        let delta = &data["delta"];
        match (
            data["index"].as_u64().unwrap(),
            delta["type"].as_str().unwrap(),
        ) {
            (0, "text_delta") => {
                let piece = delta["text"].as_str().unwrap();
                assert!(
                    piece.chars().count() <= 5,
                    "chunk {piece:?} is over 5 chars"
                );
                text.push_str(piece);
            }
            (1, "input_json_delta") => {
                let piece = delta["partial_json"].as_str().unwrap();
                assert!(
                    piece.chars().count() <= 7,
                    "chunk {piece:?} is over 7 chars"
                );
                partial.push_str(piece);
            }
            other => panic!("unexpected delta {other:?}"),
        }
    }
    assert_eq!(text, "Let me look — für grüße 🦀 now.");
    assert_eq!(
        serde_json::from_str::<Value>(&partial).unwrap(),
        json!({"pattern":"Helo","path":"src/ünï","-i":true})
    );
    let stops = events
        .iter()
        .filter(|(n, _)| n == "content_block_stop")
        .count();
    assert_eq!(stops, 2);

    let delta = &events[events.len() - 2].1;
    assert_eq!(
        delta["delta"],
        json!({"stop_reason":"tool_use","stop_sequence":null})
    );
    assert!(delta["usage"]["output_tokens"].as_u64().unwrap() > 0);
    assert_eq!(server.served(), 1);
}

#[tokio::test]
async fn raw_input_json_is_streamed_verbatim() {
    let server = start(
        r#"{"responses":[{"content":[
            {"type":"tool_use","id":"t_empty","name":"Glob","input_json":""},
            {"type":"tool_use","id":"t_cut","name":"Read","input_json":"{\"file_path\":\"/tm"}
        ]}]}"#,
    )
    .await;
    let body = post(&server, &ask("go", true)).await.text().await.unwrap();
    let partials: Vec<(u64, String)> = parse_sse(&body)
        .into_iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| {
            (
                d["index"].as_u64().unwrap(),
                d["delta"]["partial_json"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(partials[0], (0, String::new()));
    let cut: String = partials
        .iter()
        .filter(|(i, _)| *i == 1)
        .map(|(_, p)| p.as_str())
        .collect();
    assert_eq!(cut, "{\"file_path\":\"/tm");
}

#[tokio::test]
async fn event_delay_paces_the_stream() {
    let server =
        start(r#"{"responses":[{"event_delay_ms":40,"content":[{"type":"text","text":"hi"}]}]}"#)
            .await;
    let started = Instant::now();
    let body = post(&server, &ask("x", true)).await.text().await.unwrap();
    let events = parse_sse(&body);
    // 7 events → 6 gaps of 40 ms.
    assert_eq!(events.len(), 7);
    assert!(
        started.elapsed() >= Duration::from_millis(240),
        "took only {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn non_streaming_request_gets_one_json_message() {
    let server = start(TOOL_SCRIPT).await;
    let response = post(&server, &ask("find Helo", false)).await;
    assert_eq!(response.status(), 200);
    let message: Value = response.json().await.unwrap();
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(message["model"], "claude-test");
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["stop_sequence"], Value::Null);
    assert_eq!(
        message["content"],
        json!([
            {"type":"text","text":"Let me look — für grüße 🦀 now."},
            {"type":"tool_use","id":"toolu_01","name":"Grep",
             "input":{"pattern":"Helo","path":"src/ünï","-i":true}}
        ])
    );
    assert!(message["usage"]["output_tokens"].as_u64().unwrap() > 0);
}

fn after_tool_use(results: Value) -> Value {
    json!({"model":"m","stream":false,"messages":[
        {"role":"user","content":"fix it"},
        {"role":"assistant","content":[
            {"type":"text","text":"Let me look."},
            {"type":"tool_use","id":"toolu_01","name":"Grep","input":{}},
            {"type":"tool_use","id":"toolu_02","name":"Read","input":{}}]},
        {"role":"user","content":results}
    ]})
}

#[tokio::test]
async fn unanswered_tool_use_gets_the_api_400_and_does_not_advance() {
    let server = start(r#"{"responses":[{"content":[{"type":"text","text":"ok"}]}]}"#).await;
    let bad = after_tool_use(json!([
        {"type":"tool_result","tool_use_id":"toolu_02","content":"x"},
        {"type":"text","text":"and"}
    ]));
    let response = post(&server, &bad).await;
    assert_eq!(response.status(), 400);
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"type":"error","error":{"type":"invalid_request_error",
            "message":"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01. Each `tool_use` block must have a corresponding `tool_result` block in the next message."}})
    );
    assert_eq!(server.served(), 0);

    let good = after_tool_use(json!([
        {"type":"tool_result","tool_use_id":"toolu_01","content":"a"},
        {"type":"tool_result","tool_use_id":"toolu_02","content":"b"}
    ]));
    let response = post(&server, &good).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.json::<Value>().await.unwrap()["content"][0]["text"],
        "ok"
    );
    assert_eq!(server.served(), 1);
}

#[tokio::test]
async fn tool_result_for_an_unknown_id_gets_the_api_400() {
    let server = start(r#"{"responses":[{}]}"#).await;
    let bad = after_tool_use(json!([
        {"type":"tool_result","tool_use_id":"toolu_01","content":"a"},
        {"type":"tool_result","tool_use_id":"toolu_02","content":"b"},
        {"type":"tool_result","tool_use_id":"toolu_99","content":"c"}
    ]));
    let response = post(&server, &bad).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "messages.2.content.2: unexpected `tool_use_id` found in `tool_result` blocks: toolu_99. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    );
    assert_eq!(server.served(), 0);
}

#[tokio::test]
async fn failed_expectation_is_a_400_naming_it_and_does_not_advance() {
    let server = start(
        r#"{"responses":[{"content":[{"type":"text","text":"fixed"}],
            "expect":{"tool_result_contains":{"toolu_01":"greeting.py"},
                      "tool_result_is_error":{"toolu_02":true},
                      "last_user_text_contains":"please"}}]}"#,
    )
    .await;
    let wrong = after_tool_use(json!([
        {"type":"tool_result","tool_use_id":"toolu_01",
         "content":[{"type":"text","text":"No files found"}]},
        {"type":"tool_result","tool_use_id":"toolu_02","content":"fine"},
        {"type":"text","text":"please continue"}
    ]));
    let response = post(&server, &wrong).await;
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(
        body["error"]["message"],
        "mock-llm: script expectation failed for responses[0]: \
         tool_result_contains[toolu_01]: wanted text containing \"greeting.py\", got \"No files found\"; \
         tool_result_is_error[toolu_02]: wanted is_error true, got false (content \"fine\")"
    );
    assert_eq!(server.served(), 0);

    let right = after_tool_use(json!([
        {"type":"tool_result","tool_use_id":"toolu_01",
         "content":[{"type":"text","text":"src/greeting.py"}]},
        {"type":"tool_result","tool_use_id":"toolu_02","content":"boom","is_error":true},
        {"type":"text","text":"please continue"}
    ]));
    let response = post(&server, &right).await;
    assert_eq!(response.status(), 200);
    assert_eq!(server.served(), 1);
}

#[tokio::test]
async fn http_fault_sends_the_status_error_type_and_retry_after() {
    let server = start(
        r#"{"responses":[
            {"fault":{"http_status":529,"retry_after_s":3}},
            {"fault":{"http_status":429}},
            {"fault":{"http_status":503,"message":"try later"}},
            {"content":[{"type":"text","text":"recovered"}]}]}"#,
    )
    .await;
    let response = post(&server, &ask("a", true)).await;
    assert_eq!(response.status(), 529);
    assert_eq!(response.headers()["retry-after"], "3");
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})
    );
    let response = post(&server, &ask("a", true)).await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().get("retry-after").is_none());
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"]["type"],
        "rate_limit_error"
    );
    let response = post(&server, &ask("a", false)).await;
    assert_eq!(response.status(), 503);
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"],
        json!({"type":"api_error","message":"try later"})
    );
    assert_eq!(server.served(), 3, "each fault consumes its entry");
    let response = post(&server, &ask("a", false)).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn sse_error_fault_streams_k_events_then_an_error_event() {
    let server = start(
        r#"{"responses":[{"content":[{"type":"text","text":"partial answer"}],
            "text_chunk_chars":4,
            "fault":{"sse_error":"overloaded_error","after_events":4}}]}"#,
    )
    .await;
    let response = post(&server, &ask("a", true)).await;
    assert_eq!(response.status(), 200);
    let events = parse_sse(&response.text().await.unwrap());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "error"
        ]
    );
    assert_eq!(events[3].1["delta"]["text"], "part");
    assert_eq!(
        events[4].1,
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})
    );
    assert_eq!(server.served(), 1);
}

#[tokio::test]
async fn disconnect_fault_cuts_the_body_with_a_transport_error() {
    let server = start(
        r#"{"responses":[{"content":[{"type":"text","text":"never finished"}],
            "fault":{"disconnect_after_events":3}}]}"#,
    )
    .await;
    let response = post(&server, &ask("a", true)).await;
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    let mut received = Vec::new();
    let mut error = None;
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => received.extend_from_slice(&bytes),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let error = error.expect("the client must see a transport error, not a clean end");
    assert!(error.is_body() || error.is_decode(), "{error:?}");
    let events = parse_sse(std::str::from_utf8(&received).unwrap());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["message_start", "ping", "content_block_start"]);
    assert_eq!(server.served(), 1);
}

#[tokio::test]
async fn exhausted_script_answers_500_saying_so() {
    let server = start(r#"{"responses":[{}]}"#).await;
    assert_eq!(post(&server, &ask("a", false)).await.status(), 200);
    let response = post(&server, &ask("b", false)).await;
    assert_eq!(response.status(), 500);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "api_error");
    assert_eq!(
        body["error"]["message"],
        mock_llm::api_error::script_exhausted(1)
    );
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("script is exhausted"));
}

#[tokio::test]
async fn every_request_is_logged_as_one_json_line_and_kept_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let server = spawn(
        Script::from_json(r#"{"responses":[{}]}"#).unwrap(),
        Some(log.clone()),
    )
    .await
    .unwrap();
    let rejected = after_tool_use(json!([]));
    let first = ask("multi\nline ✓", true);
    assert_eq!(post(&server, &rejected).await.status(), 400);
    post(&server, &first).await.text().await.unwrap();
    assert_eq!(post(&server, &ask("third", false)).await.status(), 500);

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        [rejected.clone(), first.clone(), ask("third", false)]
    );
    assert_eq!(server.requests(), lines);
}

#[tokio::test]
async fn other_paths_get_an_api_style_404() {
    let server = start(r#"{"responses":[]}"#).await;
    let response = common::client()
        .get(format!("{}/v1/models", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"]["type"],
        "not_found_error"
    );
}

#[tokio::test]
async fn stream_faults_on_a_non_streaming_request_fail_the_http_way() {
    let server = start(
        r#"{"responses":[
            {"fault":{"sse_error":"overloaded_error","after_events":3}},
            {"content":[{"type":"text","text":"x"}],"fault":{"disconnect_after_events":2}}]}"#,
    )
    .await;
    let response = post(&server, &ask("a", false)).await;
    assert_eq!(response.status(), 529);
    assert_eq!(
        response.json::<Value>().await.unwrap()["error"]["type"],
        "overloaded_error"
    );
    let response = post(&server, &ask("a", false)).await;
    assert_eq!(response.status(), 200);
    let err = response.json::<Value>().await.unwrap_err();
    assert!(!err.is_status(), "a transport error, not a status: {err:?}");
    assert_eq!(server.served(), 2);
}

#[tokio::test]
async fn a_context_window_refuses_longer_requests_and_summaries_consume_nothing() {
    let server = start(
        r#"{"context_window": 100, "responses":[{"content":[{"type":"text","text":"scripted"}]}]}"#,
    )
    .await;
    // Over the window: the API's own 400, the script does not advance.
    let long = ask(&"x".repeat(500), false);
    let tokens = serde_json::to_vec(&long).unwrap().len() / 4;
    let r = post(&server, &long).await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(
        body["error"]["message"],
        format!("prompt is too long: {tokens} tokens > 100 maximum")
    );
    assert_eq!(server.served(), 0);
    // A summary request is answered by mock-llm itself.
    let summary = json!({"model":"m","max_tokens":100,"messages":[
        {"role":"user","content":"fix it"},
        {"role":"assistant","content":"done"},
        {"role":"user","content":"Write a summary of this conversation."}
    ]});
    let r: Value = post(&server, &summary).await.json().await.unwrap();
    assert_eq!(
        r["content"][0]["text"],
        "<summary>\nmock-llm summary of 3 messages.\nUser requests:\n- fix it\n</summary>"
    );
    let bytes = serde_json::to_vec(&summary).unwrap().len() as u64;
    assert_eq!(r["usage"]["input_tokens"], bytes / 4, "usage is the count");
    assert_eq!(server.served(), 0, "no script entry consumed");
    // The script's entry is still the next answer.
    let r: Value = post(&server, &ask("hi", false)).await.json().await.unwrap();
    assert_eq!(r["content"][0]["text"], "scripted");
    // The window is published the way vLLM and llama.cpp do.
    let models: Value = common::client()
        .get(format!("{}/v1/models", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["max_model_len"], 100);
    let props: Value = common::client()
        .get(format!("{}/props", server.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(props["default_generation_settings"]["n_ctx"], 100);
}

#[tokio::test]
async fn the_scripts_models_are_listed_in_both_shapes_and_others_refused() {
    let server = start(
        r#"{"models": ["m-a", "m-b", "m-c"], "responses":[{"content":[{"type":"text","text":"hi"}]}]}"#,
    )
    .await;
    let get = |url: String, anthropic: bool| async move {
        let mut req = common::client().get(url);
        if anthropic {
            req = req.header("anthropic-version", "2023-06-01");
        }
        req.send().await.unwrap().json::<Value>().await.unwrap()
    };
    // The Anthropic API's pages.
    let first = get(format!("{}/v1/models?limit=2", server.url()), true).await;
    assert_eq!(first["data"][0]["id"], "m-a");
    assert_eq!(first["data"][1]["type"], "model");
    assert_eq!(
        (&first["has_more"], &first["first_id"], &first["last_id"]),
        (&json!(true), &json!("m-a"), &json!("m-b"))
    );
    let next = get(
        format!("{}/v1/models?limit=2&after_id=m-b", server.url()),
        true,
    )
    .await;
    assert_eq!(
        next["data"],
        json!([{"type":"model","id":"m-c","display_name":"m-c","created_at":"2025-01-01T00:00:00Z"}])
    );
    assert_eq!(next["has_more"], false);
    // OpenAI's list.
    let openai = get(format!("{}/v1/models", server.url()), false).await;
    assert_eq!(openai["object"], "list");
    assert_eq!(openai["data"][2]["id"], "m-c");
    // A model it does not serve: the real API's 404, the script kept.
    let r = post(&server, &ask("hi", false)).await;
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["type"], "not_found_error");
    assert_eq!(body["error"]["message"], "model: claude-test");
    let mut known = ask("hi", false);
    known["model"] = json!("m-b");
    assert_eq!(post(&server, &known).await.status(), 200);
}
