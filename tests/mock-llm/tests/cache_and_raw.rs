//! mock-llm over real HTTP: scripted `stop_details`, `raw` content blocks
//! (streamed, in the JSON message, skipped on chat completions, accepted
//! when a client sends them back) and the prompt cache simulation's
//! `cache_creation_input_tokens` / `cache_read_input_tokens`.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use mock_llm::{spawn, MockServer, Script};
use serde_json::{json, Value};

async fn start(script: Value) -> MockServer {
    spawn(Script::from_json(&script.to_string()).unwrap(), None)
        .await
        .unwrap()
}

/// `n` entries answering "ok".
fn oks(n: usize) -> Value {
    let responses: Vec<Value> = (0..n)
        .map(|_| json!({"content": [{"type": "text", "text": "ok"}]}))
        .collect();
    json!({ "responses": responses })
}

async fn post_to(server: &MockServer, path: &str, body: &Value) -> reqwest::Response {
    common::client()
        .post(format!("{}{path}", server.url()))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Posts to `/v1/messages`; returns the status and the body text.
async fn post(server: &MockServer, body: &Value) -> (u16, String) {
    let response = post_to(server, "/v1/messages", body).await;
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// The `(event, data)` pairs of an SSE body.
fn events(body: &str) -> Vec<(String, Value)> {
    body.trim_end_matches("\n\n")
        .split("\n\n")
        .map(|frame| {
            let mut lines = frame.lines();
            let event = lines.next().unwrap().strip_prefix("event: ").unwrap();
            let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
            (event.to_string(), serde_json::from_str(data).unwrap())
        })
        .collect()
}

fn ask(stream: bool) -> Value {
    json!({"model": "claude-test", "max_tokens": 64, "stream": stream,
           "messages": [{"role": "user", "content": "hi"}]})
}

#[tokio::test]
async fn stop_details_is_sent_next_to_stop_reason_only_when_scripted() {
    let details = json!({"type": "refusal", "category": "cyber", "explanation": "Not this."});
    let refusal = json!({"stop_reason": "refusal", "stop_details": details});
    let server = start(json!({"responses": [refusal, refusal, {}, {}]})).await;

    let (status, body) = post(&server, &ask(true)).await;
    assert_eq!(status, 200);
    let events = events(&body);
    let (_, delta) = events.iter().find(|(e, _)| e == "message_delta").unwrap();
    assert_eq!(
        delta["delta"],
        json!({"stop_reason": "refusal", "stop_sequence": null, "stop_details": details})
    );

    let (_, body) = post(&server, &ask(false)).await;
    let message: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(message["stop_reason"], "refusal");
    assert_eq!(message["stop_details"], details);

    let (_, body) = post(&server, &ask(true)).await;
    assert!(
        body.contains(r#""delta":{"stop_reason":"end_turn","stop_sequence":null},"#),
        "{body}"
    );
    assert!(!body.contains("stop_details"), "{body}");
    let (_, body) = post(&server, &ask(false)).await;
    assert!(!body.contains("stop_details"), "{body}");
}

#[tokio::test]
async fn raw_blocks_are_sent_as_written_and_skipped_on_chat_completions() {
    let use_block = json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
                           "input": {"query": "rust 2024 edition"}});
    let result_block = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
                              "content": []});
    let cited = json!({"type": "text", "text": "It shipped.", "citations": [
        {"type": "web_search_result_location", "url": "https://example.com",
         "title": "Rust", "cited_text": "shipped", "encrypted_index": "abc"}]});
    let entry = json!({"stop_reason": "pause_turn", "content": [
        {"type": "raw", "block": use_block},
        {"type": "raw", "block": result_block},
        {"type": "raw", "block": cited},
        {"type": "text", "text": "Done."}]});
    let server = start(json!({"responses": [entry, entry, entry]})).await;

    let (status, body) = post(&server, &ask(true)).await;
    assert_eq!(status, 200);
    let events = events(&body);
    let blocks: Vec<(&str, &Value)> = events
        .iter()
        .filter(|(e, _)| e.starts_with("content_block"))
        .map(|(e, d)| (e.as_str(), d))
        .collect();
    assert_eq!(blocks[0].1["content_block"], use_block);
    assert_eq!(
        blocks[1],
        (
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0})
        )
    );
    assert_eq!(blocks[2].1["content_block"], result_block);
    assert_eq!(blocks[3].0, "content_block_stop");
    assert_eq!(blocks[4].1["content_block"], cited);
    assert_eq!(blocks[5].0, "content_block_stop");
    assert_eq!(
        blocks[6].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    assert_eq!(blocks[6].1["index"], 3);
    let (_, delta) = events.iter().find(|(e, _)| e == "message_delta").unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "pause_turn");

    let (_, body) = post(&server, &ask(false)).await;
    let message: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        message["content"],
        json!([use_block, result_block, cited, {"type": "text", "text": "Done."}])
    );

    let chat = json!({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]});
    let completion: Value = post_to(&server, "/v1/chat/completions", &chat)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        completion["choices"][0],
        json!({"index": 0, "finish_reason": "stop",
               "message": {"role": "assistant", "content": "Done."}})
    );
}

#[tokio::test]
async fn server_tool_blocks_sent_back_are_not_client_tool_uses() {
    let server = start(oks(2)).await;
    let assistant = json!({"role": "assistant", "content": [
        {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
         "input": {"query": "x"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01", "content": []}]});
    // After pause_turn the paused assistant message goes back as the last one.
    let paused = json!({"model": "claude-test", "max_tokens": 64,
                        "messages": [{"role": "user", "content": "search x"}, assistant]});
    let (status, body) = post(&server, &paused).await;
    assert_eq!(status, 200, "{body}");
    let followed = json!({"model": "claude-test", "max_tokens": 64, "messages": [
        {"role": "user", "content": "search x"}, assistant,
        {"role": "user", "content": "thanks"}]});
    let (status, body) = post(&server, &followed).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(server.served(), 2);
}

const EPHEMERAL: &str = "ephemeral";

fn tool() -> Value {
    json!({"name": "Read", "description": "Reads a file.",
           "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}})
}

fn system(text: &str) -> Value {
    json!([{"type": "text", "text": text, "cache_control": {"type": EPHEMERAL}}])
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn cached(mut block: Value) -> Value {
    block["cache_control"] = json!({"type": EPHEMERAL});
    block
}

/// Tokens of compact JSON units: their bytes / 4, at least 1 when non-empty.
fn tokens(units: &[Value]) -> u64 {
    let bytes: usize = units.iter().map(|u| u.to_string().len()).sum();
    if bytes == 0 {
        0
    } else {
        (bytes / 4).max(1) as u64
    }
}

fn usage_of_json(body: &str) -> Value {
    serde_json::from_str::<Value>(body).unwrap()["usage"].clone()
}

fn usage_of_stream(body: &str) -> Value {
    events(body)[0].1["message"]["usage"].clone()
}

#[tokio::test]
async fn a_moved_message_breakpoint_reads_the_first_request_s_prefix() {
    let server = start(oks(2)).await;
    let first = json!({"model": "claude-test", "max_tokens": 64,
        "tools": [tool()], "system": system("You are terse."),
        "messages": [{"role": "user", "content": [cached(text("Where is main?"))]}]});
    let (status, body) = post(&server, &first).await;
    assert_eq!(status, 200, "{body}");
    let prefix = [tool(), text("You are terse."), text("Where is main?")];
    let one = usage_of_json(&body);
    assert_eq!(one["cache_read_input_tokens"], 0);
    assert_eq!(one["cache_creation_input_tokens"], tokens(&prefix));

    // The conversation goes on; the breakpoint moves to the new last block.
    let second = json!({"model": "claude-test", "max_tokens": 64, "stream": true,
        "tools": [tool()], "system": system("You are terse."),
        "messages": [
            {"role": "user", "content": [text("Where is main?")]},
            {"role": "assistant", "content": "In src/main.rs."},
            {"role": "user", "content": [cached(text("Open it."))]}]});
    let (status, body) = post(&server, &second).await;
    assert_eq!(status, 200, "{body}");
    let two = usage_of_stream(&body);
    assert!(two["cache_read_input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(two["cache_read_input_tokens"], tokens(&prefix));
    assert_eq!(
        two["cache_creation_input_tokens"],
        tokens(&[text("In src/main.rs."), text("Open it.")])
    );
    // input_tokens: what comes after the last breakpoint (here only the rest
    // of the body), bytes / 4.
    let all: Vec<Value> = prefix
        .iter()
        .cloned()
        .chain([text("In src/main.rs."), text("Open it.")])
        .collect();
    let unit_bytes: usize = all.iter().map(|u| u.to_string().len()).sum();
    let body_bytes = serde_json::to_vec(&second).unwrap().len();
    assert_eq!(two["input_tokens"], ((body_bytes - unit_bytes) / 4) as u64);
}

#[tokio::test]
async fn no_cache_control_reports_zero_and_a_changed_system_misses() {
    let server = start(oks(4)).await;
    let plain = ask(false);
    let (_, body) = post(&server, &plain).await;
    let usage = usage_of_json(&body);
    assert_eq!(usage["cache_creation_input_tokens"], 0);
    assert_eq!(usage["cache_read_input_tokens"], 0);
    let body_bytes = serde_json::to_vec(&plain).unwrap().len();
    assert_eq!(usage["input_tokens"], (body_bytes / 4) as u64);

    let request = |system_text: &str| {
        json!({"model": "claude-test", "max_tokens": 64, "system": system(system_text),
               "messages": [{"role": "user", "content": "hi"}]})
    };
    let (_, body) = post(&server, &request("Be brief.")).await;
    assert_eq!(usage_of_json(&body)["cache_read_input_tokens"], 0);
    let (_, body) = post(&server, &request("Be brief.")).await;
    assert_eq!(
        usage_of_json(&body)["cache_read_input_tokens"],
        tokens(&[text("Be brief.")])
    );
    let (_, body) = post(&server, &request("Be thorough.")).await;
    let usage = usage_of_json(&body);
    assert_eq!(usage["cache_read_input_tokens"], 0);
    assert_eq!(
        usage["cache_creation_input_tokens"],
        tokens(&[text("Be thorough.")])
    );
}

#[tokio::test]
async fn rejected_requests_and_http_faults_write_nothing() {
    let server = start(json!({"responses": [
        {"fault": {"http_status": 529}},
        {"expect": {"last_user_text_contains": "please"}},
        {}]}))
    .await;
    let request = |user: &str| {
        json!({"model": "claude-test", "max_tokens": 64, "system": system("Cache me."),
               "messages": [{"role": "user", "content": user}]})
    };
    // A rules violation (whitespace-only text): 400, nothing written.
    let (status, _) = post(&server, &request("  ")).await;
    assert_eq!(status, 400);
    // An HTTP fault entry is consumed but refused before processing.
    let (status, _) = post(&server, &request("hi")).await;
    assert_eq!(status, 529);
    // A failed expect: 400, nothing written.
    let (status, _) = post(&server, &request("hi")).await;
    assert_eq!(status, 400);
    let (status, body) = post(&server, &request("hi please")).await;
    assert_eq!(status, 200);
    let usage = usage_of_json(&body);
    assert_eq!(usage["cache_read_input_tokens"], 0);
    assert_eq!(
        usage["cache_creation_input_tokens"],
        tokens(&[text("Cache me.")])
    );
    let (_, body) = post(&server, &request("hi please")).await;
    assert_eq!(
        usage_of_json(&body)["cache_read_input_tokens"],
        tokens(&[text("Cache me.")])
    );
}

#[tokio::test]
async fn scripted_usage_sends_its_cache_counts_as_given() {
    let server = start(json!({"responses": [
        {"usage": {"input_tokens": 3, "output_tokens": 4,
                   "cache_creation_input_tokens": 5, "cache_read_input_tokens": 6}},
        {"usage": {"input_tokens": 3, "output_tokens": 4}}]}))
    .await;
    let request = json!({"model": "claude-test", "max_tokens": 64, "stream": true,
        "system": system("Cache me."), "messages": [{"role": "user", "content": "hi"}]});
    let (_, body) = post(&server, &request).await;
    assert_eq!(
        usage_of_stream(&body),
        json!({"input_tokens": 3, "cache_creation_input_tokens": 5,
               "cache_read_input_tokens": 6, "output_tokens": 1})
    );
    let (_, body) = post(&server, &request).await;
    assert_eq!(
        usage_of_stream(&body),
        json!({"input_tokens": 3, "cache_creation_input_tokens": 0,
               "cache_read_input_tokens": 0, "output_tokens": 1})
    );
}
