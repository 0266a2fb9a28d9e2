//! mock-llm's request rules over real HTTP: for every rule the smallest body
//! that breaks it gets HTTP 400 `invalid_request_error` with the real API's
//! exact message, and the script does not advance; a well-formed body that
//! uses every kind of block passes.

// Test code: a failed unwrap/expect is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use mock_llm::api_error as api;
use mock_llm::{spawn, MockServer, Script};
use serde_json::{json, Value};

async fn start(entries: usize) -> MockServer {
    let responses: Vec<Value> = (0..entries)
        .map(|_| json!({"content": [{"type": "text", "text": "ok"}]}))
        .collect();
    spawn(
        Script::from_json(&json!({ "responses": responses }).to_string()).unwrap(),
        None,
    )
    .await
    .unwrap()
}

/// Posts `body` and returns the status and the parsed answer.
async fn post(server: &MockServer, body: &Value) -> (u16, Value) {
    let response = common::client()
        .post(format!("{}/v1/messages", server.url()))
        .json(body)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// A request body with these messages and the usual fields.
fn body(messages: Value) -> Value {
    json!({"model": "claude-test", "max_tokens": 64, "messages": messages})
}

fn hi() -> Value {
    json!([{"role": "user", "content": "hi"}])
}

/// A user turn, an assistant turn with `calls`, and a user turn with
/// `results`.
fn with_calls(calls: Value, results: Value) -> Value {
    body(json!([
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": calls},
        {"role": "user", "content": results}
    ]))
}

fn result(id: &str) -> Value {
    json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
}

/// A PNG header of `w` × `h`, padded with zeros to `len` bytes, as base64.
fn png_base64(w: u32, h: u32, len: usize) -> String {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    b.extend(w.to_be_bytes());
    b.extend(h.to_be_bytes());
    b.extend([8, 6, 0, 0, 0]);
    b.resize(len.max(b.len()), 0);
    encode(&b)
}

fn encode(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn image(media_type: &str, data: String) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
}

fn user_with(blocks: Value) -> Value {
    body(json!([{"role": "user", "content": blocks}]))
}

/// Every rule: a name, the smallest body that breaks it, the API's message.
fn cases() -> Vec<(&'static str, Value, String)> {
    let with = |extra: Value| {
        let mut b = body(hi());
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    vec![
        (
            "max_tokens 0",
            with(json!({"max_tokens": 0})),
            api::MAX_TOKENS_BELOW_ONE.into(),
        ),
        ("no messages", body(json!([])), api::NO_MESSAGES.into()),
        (
            "assistant first",
            body(json!([
                {"role": "assistant", "content": "Hello."},
                {"role": "user", "content": "hi"}
            ])),
            api::FIRST_MESSAGE_NOT_USER.into(),
        ),
        (
            "system role",
            body(json!([
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"}
            ])),
            api::SYSTEM_ROLE.into(),
        ),
        (
            "tool role",
            body(json!([
                {"role": "user", "content": "hi"},
                {"role": "tool", "content": "ok"}
            ])),
            api::unexpected_role("tool"),
        ),
        (
            "empty content mid-conversation",
            body(json!([
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": []},
                {"role": "user", "content": "b"}
            ])),
            api::empty_content(1),
        ),
        (
            "empty string content",
            body(json!([{"role": "user", "content": ""}])),
            api::EMPTY_TEXT.into(),
        ),
        (
            "empty text block",
            user_with(json!([{"type": "text", "text": ""}, {"type": "text", "text": "hi"}])),
            api::EMPTY_TEXT.into(),
        ),
        (
            "empty text block with cache_control",
            user_with(json!([
                {"type": "text", "text": "hi"},
                {"type": "text", "text": "", "cache_control": {"type": "ephemeral"}}
            ])),
            api::cache_control_on_empty_text("messages.0.content.1"),
        ),
        (
            "whitespace-only assistant answer",
            body(json!([
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [{"type": "text", "text": "\n\n"}]},
                {"role": "user", "content": "b"}
            ])),
            api::WHITESPACE_TEXT.into(),
        ),
        (
            "whitespace-only string content",
            body(json!([{"role": "user", "content": " \t"}])),
            api::WHITESPACE_TEXT.into(),
        ),
        (
            "prefill ending in a space",
            body(json!([
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [{"type": "text", "text": "The answer is "}]}
            ])),
            api::TRAILING_WHITESPACE.into(),
        ),
        (
            "empty tool result",
            with_calls(
                json!([{"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {}}]),
                json!([{"type": "tool_result", "tool_use_id": "toolu_01", "content": ""}]),
            ),
            api::EMPTY_TEXT.into(),
        ),
        (
            "tool call id twice",
            with_calls(
                json!([
                    {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {}},
                    {"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {}}
                ]),
                json!([result("toolu_01"), result("toolu_01")]),
            ),
            api::duplicate_tool_use_id(1, 1),
        ),
        (
            "tool call id with a dot",
            with_calls(
                json!([{"type": "tool_use", "id": "call.1", "name": "Read", "input": {}}]),
                json!([result("call.1")]),
            ),
            api::tool_use_id_pattern(1, 0),
        ),
        (
            "tool call input not an object",
            with_calls(
                json!([{"type": "tool_use", "id": "toolu_01", "name": "Read", "input": "a.txt"}]),
                json!([result("toolu_01")]),
            ),
            api::tool_use_input_not_object(1, 0),
        ),
        (
            "tool name with a space",
            with(json!({"tools": [{"name": "Read file", "input_schema": {"type": "object"}}]})),
            api::tool_name_pattern(0),
        ),
        (
            "tool name of 129 characters",
            with(json!({"tools": [
                {"name": "Read", "input_schema": {"type": "object"}},
                {"name": "a".repeat(129), "input_schema": {"type": "object"}}
            ]})),
            api::tool_name_pattern(1),
        ),
        (
            "tool schema with anyOf at its top level",
            with(json!({"tools": [
                {"name": "Read", "input_schema": {"type": "object"}},
                {"name": "Find", "input_schema": {"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}}
            ]})),
            api::tool_schema_top_level_combinator(1),
        ),
        (
            "tool name twice",
            with(json!({"tools": [
                {"name": "Read", "input_schema": {"type": "object"}},
                {"name": "Read", "input_schema": {"type": "object"}}
            ]})),
            api::DUPLICATE_TOOL_NAMES.into(),
        ),
        (
            "bmp image",
            user_with(json!([image("image/bmp", encode(b"BM")), {"type": "text", "text": "?"}])),
            api::image_media_type("messages.0.content.0"),
        ),
        (
            "bmp image in a tool result",
            with_calls(
                json!([{"type": "tool_use", "id": "toolu_01", "name": "Read", "input": {}}]),
                json!([{"type": "tool_result", "tool_use_id": "toolu_01",
                        "content": [{"type": "text", "text": "a picture"}, image("image/bmp", encode(b"BM"))]}]),
            ),
            api::image_media_type("messages.2.content.0.tool_result.content.1"),
        ),
        (
            "png declared jpeg",
            user_with(json!([image("image/jpeg", png_base64(1, 1, 0))])),
            api::image_media_type_mismatch("messages.0.content.0", "image/jpeg", "image/png"),
        ),
        (
            "image over 5 MB of base64",
            user_with(json!([image("image/png", png_base64(1, 1, 3_932_161))])),
            api::image_too_large("messages.0.content.0", 5_242_884),
        ),
        (
            "image 8001 px high",
            user_with(json!([image("image/png", png_base64(1, 8001, 0))])),
            api::image_too_wide("messages.0.content.0", false),
        ),
        (
            "21 images, one 2001 px",
            user_with(Value::Array(
                (0..21)
                    .map(|i| {
                        image(
                            "image/png",
                            png_base64(if i == 20 { 2001 } else { 8 }, 8, 0),
                        )
                    })
                    .collect(),
            )),
            api::image_too_wide("messages.0.content.20", true),
        ),
        (
            "five cache_control blocks",
            json!({"model": "claude-test", "max_tokens": 64,
                   "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
                   "tools": [{"name": "Read", "input_schema": {"type": "object"},
                              "cache_control": {"type": "ephemeral"}}],
                   "messages": [{"role": "user", "content": [
                       {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
                       {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}},
                       {"type": "text", "text": "c", "cache_control": {"type": "ephemeral"}}]}]}),
            api::too_many_cache_control(5),
        ),
        (
            "thinking without signature field",
            body(json!([
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Hmm."}, {"type": "text", "text": "Done."}]},
                {"role": "user", "content": "b"}
            ])),
            api::thinking_signature_missing(1, 0),
        ),
        (
            "thinking with an empty signature",
            body(json!([
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Hmm.", "signature": ""},
                    {"type": "text", "text": "Done."}]},
                {"role": "user", "content": "b"}
            ])),
            api::thinking_signature_invalid(1, 0),
        ),
    ]
}

#[tokio::test]
async fn every_rule_gets_the_api_400_and_does_not_advance_the_script() {
    let server = start(1).await;
    for (name, bad, message) in cases() {
        let (status, answer) = post(&server, &bad).await;
        assert_eq!(status, 400, "{name}: {answer}");
        assert_eq!(
            answer,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}}),
            "{name}"
        );
    }
    assert_eq!(server.served(), 0, "no rejected request consumed an entry");
    let (status, _) = post(&server, &body(hi())).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_well_formed_request_with_every_kind_of_block_passes() {
    let server = start(1).await;
    let good = json!({
        "model": "claude-test",
        "max_tokens": 1,
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "tools": [
            {"name": "Read", "input_schema": {"type": "object"}},
            {"name": "a".repeat(128), "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search"}
        ],
        "messages": [
            {"role": "user", "content": [
                image("image/png", png_base64(8000, 8000, 3_932_160)),
                {"type": "text", "text": "What is this?", "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "A picture.", "signature": "EqQBCgIYAhIM"},
                {"type": "redacted_thinking", "data": "abc"},
                {"type": "text", "text": "Let me look.\n"},
                {"type": "tool_use", "id": "toolu_01-A_b", "name": "Read", "input": {"file_path": "a.png"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01-A_b", "content": [
                    {"type": "text", "text": "a.png"},
                    image("image/png", png_base64(10, 10, 0))
                ]},
                {"type": "text", "text": "go on"}
            ]},
            {"role": "assistant", "content": "It is"},
            {"role": "assistant", "content": [{"type": "text", "text": " a square"}]}
        ]
    });
    let (status, answer) = post(&server, &good).await;
    assert_eq!(status, 200, "{answer}");
    let empty_prefill = body(json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": []}
    ]));
    let (status, answer) = post(&server, &empty_prefill).await;
    assert_eq!(
        status, 500,
        "passes the rules, then the script is out: {answer}"
    );
}
